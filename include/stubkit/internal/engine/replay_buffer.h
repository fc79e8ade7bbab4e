// Copyright 2026 The stubkit Authors.
//
// `ReplayBuffer`: what a client or bidi stream writes again when it reopens,
// shared by the sync (`ResumableStream`, stream_retry.h) and async
// (`AsyncWriteStreamOperation`, async_stream_operation.h) drivers.
//
// An attempt is being opened until its first response. Meanwhile the
// caller's writes are kept, up to kMaxReplayBytes, so that a retryable
// failure reopens the stream and writes them again, as gRPC's own retries
// replay an uncommitted call. The first response establishes the stream
// and drops them: from then on (or once the writes outgrew the buffer) the
// stream is not replayable, and only the resume hook may reopen it; the
// messages the hook writes become the next attempt's replay. Not API; not
// thread-safe (the async driver guards it with its mutex).

#ifndef STUBKIT_INTERNAL_REPLAY_BUFFER_H_
#define STUBKIT_INTERNAL_REPLAY_BUFFER_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace stubkit {
namespace internal {

// The most a client or bidi stream keeps of its writes for a replay, until
// its first response: gRPC's own retry buffer (grpc.per_rpc_retry_buffer_size,
// 256 KiB). Past it, only the resume hook can reopen the stream.
inline constexpr std::size_t kMaxReplayBytes = 256 * 1024;

// A message's size on the wire (its own size for a type that is not a
// protobuf message), as the replay and the async write queue count it.
template <typename Request>
std::size_t ReplaySize(const Request& request) {
  if constexpr (std::is_base_of_v<google::protobuf::MessageLite, Request>) {
    return request.ByteSizeLong();
  } else {
    return sizeof(request);
  }
}

template <typename Request>
class ReplayBuffer {
 public:
  // A new attempt starts: it is being opened until its first response.
  void StartAttempt() { established_ = false; }

  // A response arrived. True for the attempt's first: the stream is
  // established now and the kept writes are dropped.
  bool Establish() {
    if (established_) return false;
    established_ = true;
    messages_.clear();
    bytes_ = 0;
    overflow_ = false;
    return true;
  }

  // Keeps a write (of ReplaySize `size`) while the attempt is being opened;
  // the one that would pass kMaxReplayBytes drops them all. The caller
  // keeps only the writes of a stream that may be retried at all.
  void Keep(const Request& request, std::size_t size) {
    if (established_ || overflow_) return;
    if (bytes_ + size > kMaxReplayBytes) {
      overflow_ = true;
      std::vector<Request>().swap(messages_);
      bytes_ = 0;
      return;
    }
    messages_.push_back(request);
    bytes_ += size;
  }
  void Keep(const Request& request) { Keep(request, ReplaySize(request)); }

  // Whether a reopen may write the kept messages again; false once the
  // attempt received a response or the writes outgrew the buffer: then
  // only the resume hook may reopen.
  bool replayable() const { return !established_ && !overflow_; }

  // The resume hook's messages: the next attempt's replay, whatever their
  // size.
  void Restore(std::vector<Request> messages) {
    messages_ = std::move(messages);
    bytes_ = 0;
    for (const Request& request : messages_) bytes_ += ReplaySize(request);
    overflow_ = false;
  }

  // Written first on every new attempt, in order.
  const std::vector<Request>& messages() const { return messages_; }

 private:
  std::vector<Request> messages_;
  std::size_t bytes_ = 0;     // ReplaySize of messages_, in all
  bool overflow_ = false;     // a write passed kMaxReplayBytes: none are kept
  bool established_ = false;  // the attempt received a response
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_REPLAY_BUFFER_H_

// Copyright 2026 The stubkit Authors.
//
// The interfaces behind the stream handles of stubkit/streaming.h and
// stubkit/async_streaming.h (each handle owns one), and a reader over canned
// responses. Not API: a test fakes a stream with `stubkit::MakeStreamReader`
// or a generated mock.

#ifndef STUBKIT_INTERNAL_STREAM_HANDLES_H_
#define STUBKIT_INTERNAL_STREAM_HANDLES_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace stubkit {
namespace internal {

// The moving parts behind the stream handles; implement them to fake a
// stream in a test.
template <typename Response>
class StreamReaderImpl {
 public:
  virtual ~StreamReaderImpl() = default;
  virtual bool Read(Response* response) = 0;
  virtual absl::Status Finish() = 0;
  virtual void Cancel() {}
  virtual int attempts() const { return 1; }
};

template <typename Request, typename Response>
class StreamWriterImpl {
 public:
  virtual ~StreamWriterImpl() = default;
  virtual bool Write(const Request& request) = 0;
  virtual bool WritesDone() = 0;
  virtual absl::StatusOr<Response> Finish() = 0;
  virtual void Cancel() {}
  virtual int attempts() const { return 1; }
};

template <typename Request, typename Response>
class StreamReaderWriterImpl {
 public:
  virtual ~StreamReaderWriterImpl() = default;
  virtual bool Read(Response* response) = 0;
  virtual bool Write(const Request& request) = 0;
  virtual bool WritesDone() = 0;
  virtual absl::Status Finish() = 0;
  virtual void Cancel() {}
  virtual int attempts() const { return 1; }
};

template <typename Response>
class FinishedStreamReader : public StreamReaderImpl<Response> {
 public:
  FinishedStreamReader(std::vector<Response> responses, absl::Status status)
      : responses_(std::move(responses)), status_(std::move(status)) {}
  bool Read(Response* response) override {
    if (next_ >= responses_.size()) return false;
    *response = responses_[next_++];
    return true;
  }
  absl::Status Finish() override { return status_; }

 private:
  std::vector<Response> responses_;
  std::size_t next_ = 0;
  absl::Status status_;
};

// Behind `AsyncStreamReader`: an async server stream's cancel.
class AsyncStreamReaderImpl {
 public:
  virtual ~AsyncStreamReaderImpl() = default;
  virtual void Cancel() = 0;
};

template <typename Request>
class AsyncStreamWriterImpl {
 public:
  virtual ~AsyncStreamWriterImpl() = default;
  virtual bool Write(Request request) = 0;
  virtual bool WritesDone() = 0;
  virtual void Cancel() = 0;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_STREAM_HANDLES_H_

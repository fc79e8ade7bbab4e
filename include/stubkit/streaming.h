// Copyright 2026 The stubkit Authors.
//
// Streams of generated clients: `StreamReader<Resp>` (server streaming),
// `StreamWriter<Req, Resp>` (client) and `StreamReaderWriter<Req, Resp>`
// (bidi). Each is opened under the call's retry rules until its first
// response; a later break is resumed only through the method's generated
// resume hook, and only where a retry would be allowed:
//
// ```cpp
// #include "stubkit/testing/streams.stubkit.h"  // protos/stubkit/testing/
//
// namespace st = stubkit::testing;
// int64_t Sum(st::StreamServiceClient& client, const st::RangeRequest& req) {
//   auto resume = [](const st::Item& last, st::RangeRequest& resumed) {
//     const int next = last.value() + 1;  // continue after `last`
//     resumed.set_count(resumed.start() + resumed.count() - next);
//     resumed.set_start(next);
//     return true;  // false: do not resume, report the error
//   };
//   auto reader = client.Range(req, stubkit::Options{}.set<
//       st::StreamServiceClient::RangeResumeOption>(resume));
//   int64_t sum = 0;
//   for (st::Item item; reader.Read(&item);) sum += item.value();
//   return reader.Finish().ok() ? sum : -1;
// }
// ```
//
// A stream owns its `grpc::ClientContext` and is used by one thread at a
// time (unlike gRPC's bidi stream, not a `Read` and a `Write` at once);
// `Cancel()` is safe from any thread at any time, and sticks. The rest
// (replays, hooks, limits, fakes for tests): docs/streaming.md.

#ifndef STUBKIT_STREAMING_H_
#define STUBKIT_STREAMING_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/internal/api/stream_handles.h"

namespace stubkit {

// The type of a server-streaming method's resume hook: given the last
// response the reader saw, rewrite `request` so that the server continues
// after it. Return false to give up and report the break.
template <typename Request, typename Response>
using ResumeHook = std::function<bool(const Response& last, Request& request)>;

// Where the resume hook of a client or bidi stream puts the messages that
// restore the server's view on the new stream (for etcd's Watch: a create
// request from the next revision). stubkit makes one per resume.
template <typename Request>
class ResumeWriter {
 public:
  explicit ResumeWriter(std::vector<Request>* messages) : messages_(messages) {}
  // Queues `request`: the new stream is sent the queued messages, in order,
  // before anything written after the break.
  void Write(Request request) {
    if (before_first_) {
      std::function<void()> before_first = std::move(before_first_);
      before_first_ = nullptr;
      before_first();
    }
    messages_->push_back(std::move(request));
  }

 protected:
  // `before_first` runs once, just before the first message is queued: an
  // async stream drops there the writes queued while the hook read what it
  // restores (docs/streaming.md).
  ResumeWriter(std::vector<Request>* messages,
               std::function<void()> before_first)
      : messages_(messages), before_first_(std::move(before_first)) {}

 private:
  std::vector<Request>* messages_;
  std::function<void()> before_first_;
};

// The type of a client- or bidi-streaming method's resume hook: given the
// last response `Read` returned (null when none was), write through
// `writer` what restores the server's view on a new stream. Return false
// to give up and report the break. It runs on the thread whose `Read`,
// `Write`, `WritesDone` or `Finish` met the break, with no stubkit lock
// held.
template <typename Request, typename Response>
using StreamResumeHook =
    std::function<bool(const Response* last, ResumeWriter<Request>& writer)>;

// The read side of a server-streaming call. Movable, not copyable.
template <typename Response>
class StreamReader {
 public:
  // A reader that yields nothing and finishes with `status`.
  explicit StreamReader(absl::Status status = absl::OkStatus());
  explicit StreamReader(
      std::unique_ptr<internal::StreamReaderImpl<Response>> impl)
      : impl_(std::move(impl)) {}

  // Blocks for the next response; false at the end of the stream (then
  // call `Finish()`).
  bool Read(Response* response) { return impl_->Read(response); }
  // The stream's final status. Before `Read` returned false it cancels the
  // call and returns CANCELLED.
  absl::Status Finish() { return impl_->Finish(); }
  // Cancels the call, from any thread, at any time: before the first
  // `Read`, during a blocked `Read` or during a backoff wait between
  // attempts. No further attempt is opened; `Read` returns false and
  // `Finish()` CANCELLED.
  void Cancel() { impl_->Cancel(); }
  // Streams opened so far: 1 + retries + resumes.
  int attempts() const { return impl_->attempts(); }

 private:
  std::unique_ptr<internal::StreamReaderImpl<Response>> impl_;
};

// The write side of a client-streaming call.
template <typename Request, typename Response>
class StreamWriter {
 public:
  explicit StreamWriter(
      std::unique_ptr<internal::StreamWriterImpl<Request, Response>> impl)
      : impl_(std::move(impl)) {}

  // False when the stream is broken; `Finish()` says why.
  bool Write(const Request& request) { return impl_->Write(request); }
  // Half-closes the stream. `Finish()` does it when you did not.
  bool WritesDone() { return impl_->WritesDone(); }
  // The server's response, or the stream's error.
  absl::StatusOr<Response> Finish() { return impl_->Finish(); }
  // Cancels the call, from any thread, at any time; `Finish()` then
  // returns CANCELLED.
  void Cancel() { impl_->Cancel(); }
  // Streams opened so far: 1 + retries + resumes.
  int attempts() const { return impl_->attempts(); }

 private:
  std::unique_ptr<internal::StreamWriterImpl<Request, Response>> impl_;
};

// Both sides of a bidi-streaming call.
template <typename Request, typename Response>
class StreamReaderWriter {
 public:
  explicit StreamReaderWriter(
      std::unique_ptr<internal::StreamReaderWriterImpl<Request, Response>> impl)
      : impl_(std::move(impl)) {}

  bool Read(Response* response) { return impl_->Read(response); }
  bool Write(const Request& request) { return impl_->Write(request); }
  bool WritesDone() { return impl_->WritesDone(); }
  // The call's status. Half-closes first if needed. Call it once every
  // response was read (`Read` returned false, or you know the last one
  // came): it then returns the server's status. Called while responses are
  // still unread, or while the server keeps streaming, it cancels the call
  // and returns CANCELLED rather than block (gRPC's own `Finish()` would
  // wait for them to be read). It may still wait for a server that neither
  // sends nor ends after the half-close, up to the call's deadline or a
  // `Cancel()`.
  absl::Status Finish() { return impl_->Finish(); }
  // Cancels the call, from any thread, at any time: a blocked `Read`
  // returns false and `Finish()` CANCELLED.
  void Cancel() { impl_->Cancel(); }
  // Streams opened so far: 1 + retries + resumes.
  int attempts() const { return impl_->attempts(); }

 private:
  std::unique_ptr<internal::StreamReaderWriterImpl<Request, Response>> impl_;
};

template <typename Response>
StreamReader<Response>::StreamReader(absl::Status status)
    : impl_(std::make_unique<internal::FinishedStreamReader<Response>>(
          std::vector<Response>{}, std::move(status))) {}

// A reader over canned responses that then finishes with `status`; for
// tests of code that consumes a stream (e.g. with a generated mock).
template <typename Response>
StreamReader<Response> MakeStreamReader(
    std::vector<Response> responses, absl::Status status = absl::OkStatus()) {
  return StreamReader<Response>(
      std::make_unique<internal::FinishedStreamReader<Response>>(
          std::move(responses), std::move(status)));
}

// What code under test did to a fake stream (`MakeStreamWriter`,
// `MakeStreamReaderWriter`, `MakeAsyncStreamWriter`). The test owns it and
// reads it once the code is done with the stream.
template <typename Request>
struct FakeStreamLog {
  std::vector<Request> writes;  // the accepted writes, in order
  bool writes_done = false;     // `WritesDone` was accepted
  bool cancelled = false;       // `Cancel` was called
};

// No limit on a fake stream's writes.
inline constexpr std::size_t kAllWrites = static_cast<std::size_t>(-1);

// A client stream for tests of code that writes one (e.g. returned by a
// generated mock connection): `Finish()` returns `result`. Each write is
// kept in `*log` (when not null). Only the first `accepted` writes succeed:
// the next `Write` returns false, as on a broken stream, and so does every
// later `Write` or `WritesDone`. After `Cancel()`, `Write` and
// `WritesDone` return false and `Finish()` CANCELLED, as on a real stream.
template <typename Request, typename Response>
StreamWriter<Request, Response> MakeStreamWriter(
    absl::StatusOr<Response> result, FakeStreamLog<Request>* log = nullptr,
    std::size_t accepted = kAllWrites) {
  return StreamWriter<Request, Response>(
      std::make_unique<internal::FakeStreamWriter<Request, Response,
                                                  FakeStreamLog<Request>>>(
          std::move(result), log, accepted));
}

// A bidi stream for tests: `Read` yields `responses`, whatever was
// written, then `Finish()` returns `status`. Writes as `MakeStreamWriter`'s.
// After `Cancel()`, `Read` returns false too.
template <typename Request, typename Response>
StreamReaderWriter<Request, Response> MakeStreamReaderWriter(
    std::vector<Response> responses, absl::Status status = absl::OkStatus(),
    FakeStreamLog<Request>* log = nullptr, std::size_t accepted = kAllWrites) {
  return StreamReaderWriter<Request, Response>(
      std::make_unique<internal::FakeStreamReaderWriter<
          Request, Response, FakeStreamLog<Request>>>(
          std::move(responses), std::move(status), log, accepted));
}

}  // namespace stubkit

#endif  // STUBKIT_STREAMING_H_

// Copyright 2026 The stubkit Authors.
//
// Streams returned by generated clients.
//
// Server streaming returns a `StreamReader<Response>`. The stream is opened
// under the call's retry rules (retry policy, backoff, idempotency; see
// `stubkit/retry_loop.h`) until the first response arrives. A break after
// that is resumed only through a per-method resume hook, which rewrites the
// request from the last response the reader saw:
//
// ```cpp
// #include "stubkit/testing/streams.stubkit.h"  // protos/stubkit/testing/
//
// using stubkit::testing::Item;
// using stubkit::testing::RangeRequest;
// using stubkit::testing::StreamServiceClient;
//
// int64_t Sum(StreamServiceClient& client, const RangeRequest& request) {
//   auto options =
//   stubkit::Options{}.set<StreamServiceClient::RangeResumeOption>(
//       [](const Item& last, RangeRequest& resumed) {
//         const int next = last.value() + 1;  // continue after `last`
//         resumed.set_count(resumed.start() + resumed.count() - next);
//         resumed.set_start(next);
//         return true;  // false: do not resume, report the error
//       });
//   stubkit::StreamReader<Item> reader = client.Range(request, options);
//   int64_t sum = 0;
//   Item item;
//   while (reader.Read(&item)) sum += item.value();
//   return reader.Finish().ok() ? sum : -1;
// }
// ```
//
// A resume is a retry: it happens only for a retryable code, on an
// idempotent call, while the retry policy allows. The hook decides what the
// server sends next, so it is the hook's job that no message is repeated.
//
// A stream may stay open far longer than the retry policy's time limit. The
// policy bounds how long stubkit keeps trying to (re)open it, not how long
// it is read: after a break that followed at least one message, the policy
// (its time limit and error count) and the backoff start again, as in
// google-cloud-cpp's resumable streams. So under the default 30-minute
// policy a stream that breaks after hours still resumes. The separate way
// to bound a stream's whole life, resumes included, is `TotalTimeoutOption`
// or `DeadlineOption`: both count from the stream's open, become the
// deadline of every attempt, and no resume starts after them.
//
// Client streaming returns a `StreamWriter<Request, Response>` and bidi
// streaming a `StreamReaderWriter<Request, Response>`. Both open one gRPC
// stream per attempt, under the same retry rules, and resume through a
// per-method hook of type `StreamResumeHook`:
//
// - Until an attempt receives its first response, the stream is being
//   opened: stubkit keeps a copy of each write (up to 256 KiB, gRPC's own
//   retry buffer) and a retryable failure reopens the stream and writes
//   them again, in order. A client stream, which gets its response only at
//   the end, is in this phase all its life.
// - After a response (or once the writes outgrew the buffer), a break is
//   resumed only through the hook, which is given the last response `Read`
//   returned (null when none) and writes, through a `ResumeWriter`, what
//   restores the server's view on the new stream: for etcd's Watch, a
//   create request from the next revision. stubkit never re-sends a write
//   made after the last response; the hook restores what the server should
//   know as of that response. Its messages are then replayed like writes
//   until the new stream answers. As for server streams, a resume after a
//   response restarts the retry policy and the backoff.
// - Idempotency: a stream of any kind is reopened only for a retryable
//   code on an idempotent call. Setting the resume hook declares the call
//   idempotent (the hook says how to re-establish the stream), unless
//   `IdempotencyOption` or `IdempotencyMapOption` says otherwise.
//
// ```cpp fragment
// // A Watch that sees every event once across restarts of etcd (the
// // whole program, with etcdserverpb's types: docs/streaming.md).
// int64_t next = 1;  // the revision after the last event handled
// auto hook = [&next](const WatchResponse* /*last*/,
//                     stubkit::ResumeWriter<WatchRequest>& writer) {
//   WatchRequest create;
//   create.mutable_create_request()->set_key("k");
//   create.mutable_create_request()->set_start_revision(next);
//   writer.Write(create);
//   return true;
// };
// ```
//
// The call that meets a break (`Read`, `Write`, `WritesDone` or `Finish`)
// runs the hook, waits the backoff and reopens the stream before it
// returns: a `Write` during a reopen is the one that waits for it, and
// returns true once the stream is open again (its message, like every
// write after the last response, is the hook's to restore). A failed
// stream's status carries the retry summary (`GetRetrySummary`), and every
// attempt reaches the `RetryObserverOption` and the metrics.
//
// Each stream owns its `grpc::ClientContext`. A stream is used by one
// thread at a time (unlike gRPC's own bidi stream, a `Read` and a `Write`
// may not run at the same time on two threads), except `Cancel()`, which
// any thread may call at any time. A cancel is sticky: a blocked `Read` returns
// false, a backoff wait ends at once (an injected `SleeperOption` sleep,
// which stubkit cannot interrupt, ends first), no further attempt is
// opened, and `Finish()` returns CANCELLED. A `CancellationOption` token
// cancels a stream the same way. For tests, `MakeStreamReader` builds a
// reader over canned responses, and `MakeStreamWriter` and
// `MakeStreamReaderWriter` fake the other kinds, recording the writes.

#ifndef STUBKIT_STREAMING_H_
#define STUBKIT_STREAMING_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/internal/stream_handles.h"

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
  void Write(Request request) { messages_->push_back(std::move(request)); }

 private:
  std::vector<Request>* messages_;
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

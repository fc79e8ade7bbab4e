// Copyright 2026 The stubkit Authors.
//
// Async server streaming with retried opening and hook-driven resume.
//
// The async counterpart of `StreamReader`: messages are pushed to a callback
// as they arrive (the next read starts when it returns), and the end of the
// stream to another. Opening is retried like a unary call until the first
// message; after that, a retryable break is resumed only through the
// method's resume hook (`SClient::MResumeOption`), which rewrites the request
// from the last message. Each resumption is a retry (retryable code,
// idempotent call, backoff waited on the timer), and the callback sees every
// message once. As for `StreamReader`, a break that followed at least one
// message restarts the retry policy (time limit and error count) and the
// backoff, so a stream read for hours can still resume; the whole life of
// the stream, resumes included, is bounded only by `TotalTimeoutOption` or
// `DeadlineOption`, counted from the stream's open.
//
//   stubkit::AsyncStreamReader<Item> stream = client.AsyncRange(request,
//       [](const Item& item) { Use(item); },           // each message
//       [](absl::Status status) { Done(status); },     // once, at the end
//       stubkit::Options{}.set<ItemsClient::RangeResumeOption>(hook));
//   stream.Cancel();         // any thread, any time; or drop the handle
//
// Built on gRPC's callback API (`grpc::ClientReadReactor`); no thread waits.
//
// Bidi streaming has the same form, with a handle to write through:
//
//   stubkit::AsyncStreamWriter<Item> stream = client.AsyncDouble(
//       [](const Item& item) { Use(item); },           // each message
//       [](absl::Status status) { Done(status); },     // once, at the end
//       stubkit::Options{}.set<ItemsClient::DoubleResumeOption>(hook));
//   stream.Write(item);      // queued, sent in order; any thread
//   stream.WritesDone();     // half-closes after the queued writes
//   stream.Cancel();         // any thread, any time
//
// Opening, replay and resume follow the sync `StreamReaderWriter`'s rules
// (stubkit/streaming.h), with one difference: writes never block. A write
// is queued and sent when the stream can take it; during a reopen it waits
// in the queue and goes on the new stream after the hook's messages. When
// the hook runs, the writes still queued from before the break are dropped
// with the broken stream's unanswered ones: the hook restores them. The
// hook and a `Write` may run at the same time on two threads; a hook that
// reads what the writer wrote shares a lock with it.
//
// A live stream's queue has no bound: gRPC sends it at its own pace, and
// pacing the writes is the writer's, as with grpc-java's `StreamObserver`
// (the server's answers, or the application's own acknowledgements, say
// how far it got). While the stream cannot send (waiting to reopen, or
// reopening until the new stream's replay is sent), at most 4 MiB of
// queued writes (their serialized size) wait: the `Write` that would pass
// that returns false and ends the call, as gRPC's own retries commit a call
// whose writes outgrow their buffer (gRFC A6). No further attempt opens,
// the wait ends, and `on_done` gets the failure the stream waited after,
// with "gave up retrying: more than 4 MiB of writes queued while the
// stream was waiting to reopen" and the stop reason `kNotResumable`; every
// later `Write` or `WritesDone` returns false. Writes queued while the
// stream was live count too.
//
// Client streaming has the same handle, and one callback for the response:
//
//   stubkit::AsyncStreamWriter<Item> sum = client.AsyncSum(
//       [](absl::StatusOr<SumResponse> response) { Done(response); });
//   sum.Write(item);
//   sum.WritesDone();        // the response follows
//
// A client stream reads nothing until its response, which ends it, so until
// then a retryable break replays the writes (up to 256 KiB, else the hook,
// whose `last` is null). gRPC tells a client stream of a break, of its
// deadline or of the server's early answer only through a write: one that is
// idle learns of it at its next `Write` or `WritesDone`, as the sync
// `StreamWriter` does. `Cancel()` ends it at once.
//
// Threads: `on_message` runs on gRPC's threads, one message at a time (the
// next read starts when it returns); the resume hook and `on_done` (a client
// stream's `done`) on gRPC's threads or the timer thread, possibly on the
// thread that calls `Cancel()` (or a `Write` refused by the bound above);
// none with a stubkit lock held. `Write`, `WritesDone` and `Cancel` may be
// called from any thread, also from the callbacks.

#ifndef STUBKIT_ASYNC_STREAMING_H_
#define STUBKIT_ASYNC_STREAMING_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "stubkit/internal/stream_handles.h"
#include "stubkit/streaming.h"

namespace stubkit {

// Receives each message of an async server or bidi stream.
template <typename Response>
using MessageCallback = std::function<void(const Response&)>;
// Receives the final status of an async server or bidi stream, once.
using StreamDoneCallback = std::function<void(absl::Status)>;
using DoneCallback ABSL_DEPRECATED(
    "2026-11-27, removed before 1.0: use StreamDoneCallback") =
    StreamDoneCallback;

// The handle of an async server stream: what the server sends goes to the
// callbacks; the handle cancels the call. Copyable: copies cancel the same
// stream. The stream lives until `on_done` ran, whether or not a handle is
// kept: a caller that never cancels may drop it.
template <typename Response>
class AsyncStreamReader {
 public:
  // A handle of no stream: `Cancel` does nothing.
  AsyncStreamReader() = default;
  explicit AsyncStreamReader(
      std::shared_ptr<internal::AsyncStreamReaderImpl> impl)
      : impl_(std::move(impl)) {}

  // Cancels the call, from any thread, at any time, also from the
  // callbacks: the attempt in flight or the backoff wait ends, no further
  // attempt opens, and `on_done` gets CANCELLED, once. Once `on_done` ran,
  // it does nothing.
  void Cancel() {
    if (impl_ != nullptr) impl_->Cancel();
  }

 private:
  std::shared_ptr<internal::AsyncStreamReaderImpl> impl_;
};

// The write side of an async bidi or client stream; what the server sends
// goes to the callbacks.
// Copyable: copies drive the same stream. The stream lives until `on_done`
// ran, whether or not a handle is kept.
template <typename Request>
class AsyncStreamWriter {
 public:
  // A handle of no stream: `Write` and `WritesDone` return false.
  AsyncStreamWriter() = default;
  explicit AsyncStreamWriter(
      std::shared_ptr<internal::AsyncStreamWriterImpl<Request>> impl)
      : impl_(std::move(impl)) {}

  // Queues `request`, sent in order when the stream can take it. False once
  // the stream has ended or `WritesDone` was called, and when it would queue
  // more than 4 MiB while the stream waits to reopen, which ends the call
  // (see the top of this file).
  bool Write(Request request) {
    return impl_ != nullptr && impl_->Write(std::move(request));
  }
  // Half-closes the stream after the queued writes.
  bool WritesDone() { return impl_ != nullptr && impl_->WritesDone(); }
  // Cancels the call: `on_done` gets CANCELLED, no further attempt opens.
  void Cancel() {
    if (impl_ != nullptr) impl_->Cancel();
  }

 private:
  std::shared_ptr<internal::AsyncStreamWriterImpl<Request>> impl_;
};

// An async bidi or client stream's handle for tests (e.g. returned by a
// generated mock connection, whose action keeps the callbacks and calls
// them as the server would). Writes as `MakeStreamWriter`'s
// (stubkit/streaming.h), from any thread. The first `Cancel()` runs
// `on_cancel` (when set) on its thread: give it what a real stream would
// do, call `done` with CANCELLED.
template <typename Request>
AsyncStreamWriter<Request> MakeAsyncStreamWriter(
    FakeStreamLog<Request>* log = nullptr, std::size_t accepted = kAllWrites,
    std::function<void()> on_cancel = nullptr) {
  return AsyncStreamWriter<Request>(
      std::make_shared<
          internal::FakeAsyncStreamWriter<Request, FakeStreamLog<Request>>>(
          log, accepted, std::move(on_cancel)));
}

}  // namespace stubkit

#endif  // STUBKIT_ASYNC_STREAMING_H_

// Copyright 2026 The stubkit Authors.
//
// Async streams with retried opening and hook-driven resume, built on
// gRPC's callback API (`grpc::ClientReadReactor` and its kin); no thread
// waits. The counterparts of `StreamReader`, `StreamWriter` and
// `StreamReaderWriter` (stubkit/streaming.h), under the same rules for
// opening, replay, resume and what bounds a stream's life, except that
// writes never block: a `Write` is queued and sent in order.
//
//   stubkit::AsyncStreamReader<Item> stream = client.AsyncRange(request,
//       [](const Item& item) { Use(item); },           // each message
//       [](absl::Status status) { Done(status); },     // once, at the end
//       stubkit::Options{}.set<ItemsClient::RangeResumeOption>(hook));
//   stream.Cancel();         // any thread, any time
//
//   stubkit::AsyncStreamWriter<Item> bidi = client.AsyncDouble(
//       [](const Item& item) { Use(item); }, [](absl::Status) {});
//   bidi.Write(item);        // queued, sent in order; any thread
//   bidi.WritesDone();       // half-closes after the queued writes
//
// Threads: `on_message` runs on gRPC's threads, one message at a time (the
// next read starts when it returns); the resume hook and `on_done` (a client
// stream's `done`) on gRPC's threads or the timer thread, possibly on the
// thread that calls `Cancel()` (or a `Write` refused by the queue's bound);
// none with a stubkit lock held. `Write`, `WritesDone` and `Cancel` may be
// called from any thread, also from the callbacks; the hook may overlap a
// `Write` (record and `Write` each item under the lock the hook reads and
// writes under: docs/streaming.md). The queue's 4 MiB bound while a stream cannot send, and what a
// client stream learns only at its next write: docs/streaming.md.

#ifndef STUBKIT_ASYNC_STREAMING_H_
#define STUBKIT_ASYNC_STREAMING_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "stubkit/internal/api/stream_handles.h"
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

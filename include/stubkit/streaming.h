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
//   auto options = stubkit::Options{}.set<demo::LogClient::TailResumeOption>(
//       [](const demo::Entry& last, demo::TailRequest& request) {
//         request.set_start_after(last.sequence());
//         return true;  // false: do not resume, report the error
//       });
//   stubkit::StreamReader<demo::Entry> reader = client.Tail(request, options);
//   demo::Entry entry;
//   while (reader.Read(&entry)) Use(entry);
//   absl::Status status = reader.Finish();
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
// streaming a `StreamReaderWriter<Request, Response>`. Both apply the call's
// options once (deadline from `DeadlineOption`, `TotalTimeoutOption` and
// `AttemptTimeoutOption`; `MetadataOption`) and are never replayed: a
// stream that breaks reports its error from `Finish()`.
//
// Each stream owns its `grpc::ClientContext`; like gRPC's own sync streams,
// a stream is used by one thread at a time, except `Cancel()`, which any
// thread may call at any time. A cancel is sticky: a blocked `Read` returns
// false, a backoff wait ends at once (an injected `SleeperOption` sleep,
// which stubkit cannot interrupt, ends first), no further attempt is
// opened, and `Finish()` returns CANCELLED. A `CancellationOption` token
// cancels a stream the same way. For tests, `MakeStreamReader` builds a
// reader over canned responses.

#ifndef STUBKIT_STREAMING_H_
#define STUBKIT_STREAMING_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/cancellation.h"
#include "stubkit/client_support.h"
#include "stubkit/clock.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/retry_loop.h"
#include "stubkit/status.h"

namespace stubkit {

// The type of a server-streaming method's resume hook: given the last
// response the reader saw, rewrite `request` so that the server continues
// after it. Return false to give up and report the break.
template <typename Request, typename Response>
using ResumeHook = std::function<bool(const Response& last, Request& request)>;

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
};

}  // namespace internal

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

 private:
  std::unique_ptr<internal::StreamReaderWriterImpl<Request, Response>> impl_;
};

namespace internal {

// Why a server stream that broke after delivering messages was not resumed
// (`RetryLoopState::ForbidRepeat`), for the retry summary.
inline constexpr char kNoResumeHook[] =
    "already delivered messages and has no resume hook";
inline constexpr char kResumeDeclined[] =
    "already delivered messages and its resume hook declined";

// Applies the call's options to a stream's context: metadata, the
// deadline min(DeadlineOption, now + TotalTimeoutOption, now +
// AttemptTimeoutOption), the settings of stubkit/call_options.h, and last
// the setup hook. Returns InvalidArgument for invalid options.
absl::Status ApplyStreamOptions(grpc::ClientContext& context,
                                const OptionsView& options,
                                const MethodInfo& method);

// The absolute end of a stream call (DeadlineOption, TotalTimeoutOption), or
// time_point::max().
std::chrono::system_clock::time_point StreamCallDeadline(
    const OptionsView& options);

// Sets a stream attempt's deadline: min(call_deadline, now + attempt
// timeout). A stream lives as long as it is read, so unlike a unary attempt
// it is not bounded by the retry policy's time limit: that limit bounds how
// long stubkit keeps reopening it.
void SetStreamAttemptDeadline(grpc::ClientContext& context,
                              std::chrono::system_clock::time_point call_end,
                              const OptionsView& options);

absl::Status NullStreamError(const MethodInfo& method);
absl::Status EarlyFinishError(const MethodInfo& method);
absl::Status UnreadFinishError(const MethodInfo& method);

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

// What a reader's `Cancel()` (and its CancellationOption token) shares with
// the reading thread: a sticky flag, the context of the attempt in flight,
// and the backoff wait that a cancel interrupts. Shared, because a token's
// callback may run after the reader is gone. Thread-safe.
class StreamCancelState {
 public:
  // Sets the flag, cancels the installed context, ends a wait. Idempotent.
  void Cancel();
  bool cancelled() const;
  // Makes `context` the one `Cancel()` cancels; false (and nothing
  // installed) when already cancelled.
  bool Install(grpc::ClientContext* context);
  // Forgets the installed context; call before destroying it. Waits for a
  // `Cancel()` that is cancelling it right now.
  void Release();
  // Waits `duration` on the steady clock; false when cancelled first (or
  // already).
  bool WaitFor(std::chrono::nanoseconds duration);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  bool cancelling_ = false;  // a Cancel() uses context_ without the lock
  grpc::ClientContext* context_ = nullptr;
};

// Server streaming with retried opening and hook-driven resume. Owns copies
// of the call's options (cheap: the values are shared) because the reader
// outlives the client call that made it.
//
// Threads: one thread reads (Read, Finish, the destructor); `Cancel()` may
// come from any thread at any time, and so may the CancellationOption
// token's `Cancel()`. Both go through `cancel_`, never through `context_`,
// which the reading thread replaces on each attempt.
template <typename ResumeTag, typename Request, typename Response,
          typename Open>
class RetryingStreamReader : public StreamReaderImpl<Response> {
 public:
  RetryingStreamReader(const MethodInfo& method, const OptionsView& options,
                       const Request& request, Open open)
      : method_(method),
        call_options_(options.call()),
        client_options_(CopyLowerLayers(options)),
        view_(call_options_, client_options_),
        state_(method_, view_),
        request_(request),
        open_(std::move(open)),
        call_end_(StreamCallDeadline(view_)),
        has_sleeper_(view_.get<SleeperOption>() != nullptr),
        cancel_(std::make_shared<StreamCancelState>()) {
    final_status_ = state_.setup_status();
    done_ = !final_status_.ok();
    if (CancellationToken* token = state_.cancellation()) {
      // Wakes a backoff wait; the token cancels attempts itself.
      token_callback_ =
          token->AddCallback([cancel = cancel_] { cancel->Cancel(); });
    }
  }

  ~RetryingStreamReader() override {
    Abandon();
    if (token_callback_ != 0)
      state_.cancellation()->RemoveCallback(token_callback_);
  }

  bool Read(Response* response) override {
    while (!done_) {
      if (stream_ == nullptr && !OpenStream()) return false;
      if (stream_->Read(response)) {
        received_in_attempt_ = true;
        if (hook() != nullptr) last_ = *response;
        return true;
      }
      absl::Status status = FromGrpcStatus(stream_->Finish());
      stream_.reset();
      EndAttempt();
      if (status.ok()) {
        state_.OnSuccess();
        return Stop(absl::OkStatus());
      }
      // Whatever the attempt's status says, a cancel is final (even when
      // CANCELLED is a retryable code).
      if (Cancelled()) return Stop(state_.Cancelled());
      if (!DecideRetry(status)) return false;
    }
    return false;
  }

  absl::Status Finish() override {
    if (!done_) {
      Abandon();
      Stop(Cancelled() ? state_.Cancelled() : EarlyFinishError(method_));
    }
    return final_status_;
  }

  void Cancel() override { cancel_->Cancel(); }

  int attempts() const override { return state_.attempts(); }

 private:
  const ResumeHook<Request, Response>* hook() const {
    const auto* hook = view_.template find<ResumeTag>();
    return hook != nullptr && *hook ? hook : nullptr;
  }

  bool Cancelled() const {
    if (cancel_->cancelled()) return true;
    // The token cancels attempts before it runs its callbacks.
    CancellationToken* token = state_.cancellation();
    return token != nullptr && token->cancelled();
  }

  bool Stop(absl::Status status) {
    final_status_ = std::move(status);
    done_ = true;
    return false;
  }

  bool OpenStream() {
    // The previous attempt's context was released; it may go now.
    context_ = std::make_unique<grpc::ClientContext>();
    // Installed before the attempt starts, so a cancel from now on reaches
    // it (gRPC cancels a call whose context was cancelled before it began).
    if (!cancel_->Install(context_.get())) return Stop(state_.Cancelled());
    if (!state_.PrepareAttempt(*context_)) {
      cancel_->Release();
      return Stop(state_.Cancelled());
    }
    state_.UseStreamAttemptDeadline();
    SetStreamAttemptDeadline(*context_, call_end_, view_);
    state_.RunContextSetup(*context_);  // last: it may override the deadline
    received_in_attempt_ = false;
    stream_ = open_(*context_, static_cast<const OptionsView&>(view_),
                    static_cast<const Request&>(request_));
    if (stream_ == nullptr) {
      EndAttempt();
      return Stop(NullStreamError(method_));
    }
    return true;
  }

  // After an attempt's stream is finished; the context stays readable (its
  // trailers hold server hints) until the next attempt replaces it.
  void EndAttempt() {
    state_.FinishAttempt(*context_);
    cancel_->Release();
  }

  // After a failed attempt: true to go on with a fresh stream.
  bool DecideRetry(const absl::Status& status) {
    if (received_in_attempt_) {
      // Data already reached the reader: reopening the same request would
      // repeat it, so only the hook may resume.
      // Not resumed still goes through OnFailure, for the retry summary,
      // the observer and the metrics.
      const ResumeHook<Request, Response>* resume = hook();
      if (resume == nullptr) {
        state_.ForbidRepeat(kNoResumeHook);
      } else if (!(*resume)(last_, request_)) {
        state_.ForbidRepeat(kResumeDeclined);
      } else {
        // The stream made progress: the policy and backoff start again.
        state_.RestartPolicy();
      }
    }
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    if (!state_.OnFailure(status, *context_, &final_status, &wait)) {
      return Stop(std::move(final_status));
    }
    if (!WaitBackoff(wait)) return Stop(state_.Cancelled());
    return true;
  }

  // False when cancelled before or during the wait.
  bool WaitBackoff(std::chrono::nanoseconds wait) {
    if (Cancelled()) return false;
    // An injected sleeper (a test's) cannot be interrupted: the cancel is
    // seen when it returns.
    if (has_sleeper_) return state_.Sleep(wait) && !Cancelled();
    return cancel_->WaitFor(wait) && !Cancelled();
  }

  // Ends an open stream the reader no longer wants.
  void Abandon() {
    if (stream_ == nullptr) return;
    context_->TryCancel();
    Response discard;
    while (stream_->Read(&discard)) {
    }
    stream_->Finish();
    stream_.reset();
    EndAttempt();
  }

  // A copy: the caller's description need not outlive the reader.
  const MethodInfo method_;
  const Options call_options_;
  const Options client_options_;
  const OptionsView view_;
  RetryLoopState state_;
  Request request_;
  Open open_;
  const std::chrono::system_clock::time_point call_end_;
  const bool has_sleeper_;
  const std::shared_ptr<StreamCancelState> cancel_;
  uint64_t token_callback_ = 0;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderInterface<Response>> stream_;
  Response last_;
  bool received_in_attempt_ = false;
  bool done_ = false;
  absl::Status final_status_;
};

template <typename Request, typename Response>
class GrpcStreamWriter : public StreamWriterImpl<Request, Response> {
 public:
  GrpcStreamWriter() : context_(std::make_unique<grpc::ClientContext>()) {}
  ~GrpcStreamWriter() override {
    if (stream_ != nullptr) {
      context_->TryCancel();
      stream_->Finish();
    }
  }

  grpc::ClientContext& context() { return *context_; }
  Response* response() { return &response_; }
  // Filled at `Finish` (see `ResponseMetadataOption`); null: not asked for.
  void set_response_metadata(std::shared_ptr<ResponseMetadata> metadata) {
    response_metadata_ = std::move(metadata);
  }
  void Start(std::unique_ptr<grpc::ClientWriterInterface<Request>> stream,
             absl::Status status) {
    stream_ = std::move(stream);
    if (status.ok() && stream_ == nullptr) {
      status = absl::InternalError("the stub returned no stream");
    }
    if (!status.ok()) result_ = std::move(status);
  }

  bool Write(const Request& request) override {
    return stream_ != nullptr && !writes_done_ && stream_->Write(request);
  }
  bool WritesDone() override {
    if (stream_ == nullptr || writes_done_) return false;
    writes_done_ = true;
    return stream_->WritesDone();
  }
  absl::StatusOr<Response> Finish() override {
    if (stream_ != nullptr) {
      if (!writes_done_) WritesDone();
      grpc::Status status = stream_->Finish();
      stream_.reset();
      if (response_metadata_ != nullptr) {
        CopyResponseMetadata(*context_, response_metadata_.get());
      }
      result_ = ToStatusOr(status, std::move(response_));
    }
    return result_;
  }
  void Cancel() override { context_->TryCancel(); }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  std::shared_ptr<ResponseMetadata> response_metadata_;
  Response response_;
  std::unique_ptr<grpc::ClientWriterInterface<Request>> stream_;
  bool writes_done_ = false;
  absl::StatusOr<Response> result_ =
      absl::FailedPreconditionError("Finish() was already called");
};

template <typename Request, typename Response>
class GrpcStreamReaderWriter
    : public StreamReaderWriterImpl<Request, Response> {
 public:
  explicit GrpcStreamReaderWriter(const MethodInfo& method)
      : method_(method), context_(std::make_unique<grpc::ClientContext>()) {}
  ~GrpcStreamReaderWriter() override {
    if (stream_ != nullptr) {
      context_->TryCancel();
      Response discard;
      while (stream_->Read(&discard)) {
      }
      stream_->Finish();
    }
  }

  grpc::ClientContext& context() { return *context_; }
  // Filled at `Finish` (see `ResponseMetadataOption`); null: not asked for.
  void set_response_metadata(std::shared_ptr<ResponseMetadata> metadata) {
    response_metadata_ = std::move(metadata);
  }
  void Start(
      std::unique_ptr<grpc::ClientReaderWriterInterface<Request, Response>>
          stream,
      absl::Status status) {
    stream_ = std::move(stream);
    if (status.ok() && stream_ == nullptr) {
      status = absl::InternalError("the stub returned no stream");
    }
    result_ = std::move(status);
  }

  bool Read(Response* response) override {
    if (stream_ == nullptr || reads_done_) return false;
    if (stream_->Read(response)) return true;
    reads_done_ = true;
    return false;
  }
  bool Write(const Request& request) override {
    return stream_ != nullptr && !writes_done_ && stream_->Write(request);
  }
  bool WritesDone() override {
    if (stream_ == nullptr || writes_done_) return false;
    writes_done_ = true;
    return stream_->WritesDone();
  }
  absl::Status Finish() override {
    if (stream_ == nullptr) return result_;
    if (!writes_done_) WritesDone();
    // gRPC's Finish() waits until every response was read: with responses
    // unread, or a server that keeps streaming, it would block. So look
    // for one more: if the stream has ended, the server's status follows;
    // if a response comes, the caller left it unread and the call is
    // cancelled instead.
    Response unread;
    if (!reads_done_ && stream_->Read(&unread)) {
      context_->TryCancel();
      while (stream_->Read(&unread)) {
      }
      stream_->Finish();
      result_ = UnreadFinishError(method_);
    } else {
      result_ = FromGrpcStatus(stream_->Finish());
    }
    reads_done_ = true;
    stream_.reset();
    if (response_metadata_ != nullptr) {
      CopyResponseMetadata(*context_, response_metadata_.get());
    }
    return result_;
  }
  void Cancel() override { context_->TryCancel(); }

 private:
  const MethodInfo method_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::shared_ptr<ResponseMetadata> response_metadata_;
  std::unique_ptr<grpc::ClientReaderWriterInterface<Request, Response>> stream_;
  bool writes_done_ = false;
  bool reads_done_ = false;
  absl::Status result_;
};

// Entry points for generated connections. `open` is called at once (client
// and bidi) or once per attempt (server streaming).
template <typename ResumeTag, typename Request, typename Response,
          typename Open>
StreamReader<Response> OpenServerStream(const MethodInfo& method,
                                        const OptionsView& options,
                                        const Request& request, Open open) {
  return StreamReader<Response>(
      std::make_unique<
          RetryingStreamReader<ResumeTag, Request, Response, Open>>(
          method, options, request, std::move(open)));
}

template <typename Request, typename Response, typename Open>
StreamWriter<Request, Response> OpenClientStream(const MethodInfo& method,
                                                 const OptionsView& options,
                                                 Open&& open) {
  auto impl = std::make_unique<GrpcStreamWriter<Request, Response>>();
  absl::Status status = ApplyStreamOptions(impl->context(), options, method);
  std::unique_ptr<grpc::ClientWriterInterface<Request>> stream;
  if (status.ok()) {
    impl->set_response_metadata(options.get<ResponseMetadataOption>());
    stream = open(impl->context(), impl->response());
  }
  impl->Start(std::move(stream), std::move(status));
  return StreamWriter<Request, Response>(std::move(impl));
}

template <typename Request, typename Response, typename Open>
StreamReaderWriter<Request, Response> OpenBidiStream(const MethodInfo& method,
                                                     const OptionsView& options,
                                                     Open&& open) {
  auto impl =
      std::make_unique<GrpcStreamReaderWriter<Request, Response>>(method);
  absl::Status status = ApplyStreamOptions(impl->context(), options, method);
  std::unique_ptr<grpc::ClientReaderWriterInterface<Request, Response>> stream;
  if (status.ok()) {
    impl->set_response_metadata(options.get<ResponseMetadataOption>());
    stream = open(impl->context());
  }
  impl->Start(std::move(stream), std::move(status));
  return StreamReaderWriter<Request, Response>(std::move(impl));
}

}  // namespace internal

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

}  // namespace stubkit

#endif  // STUBKIT_STREAMING_H_

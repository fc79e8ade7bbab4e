// Copyright 2026 The stubkit Authors.
//
// The machinery behind the stream handles of stubkit/streaming.h:
// `RetryingStreamReader` (server streaming: retried opening, resume),
// `ResumableStream` (client and bidi: replayed opening, resume hook), the
// gRPC-backed writer and reader-writer of a refused call, and the
// `Open*Stream` entry points of generated connections. Not API.

#ifndef STUBKIT_INTERNAL_STREAM_RETRY_H_
#define STUBKIT_INTERNAL_STREAM_RETRY_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/api/options_layers.h"
#include "stubkit/internal/api/stub_support.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/internal/engine/replay_buffer.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/status.h"
#include "stubkit/streaming.h"

namespace stubkit {
namespace internal {

// Why a server stream that broke after delivering messages was not resumed
// (`RetryLoopState::ForbidRepeat`), for the retry summary.
inline constexpr char kNoResumeHook[] =
    "already delivered messages and has no resume hook";
inline constexpr char kResumeDeclined[] =
    "already delivered messages and its resume hook declined";

// The decision after a failed attempt, for every stream driver (sync and
// async; server, client and bidi streams), in one order. A stream that can
// be reopened as it was (`needs_hook` false: nothing delivered, its writes
// replayable) is decided as any call. One that can go on only through its
// resume hook stops without one (kNotResumable, `no_hook`; after the rules
// before it: a cancel, a code that is not retryable, a call that is not
// idempotent). With one, the decision comes first and `resume` runs the
// hook only when the decision is to retry; a hook that declines stops the
// call (kNotResumable, `declined`). A resume through the hook is progress,
// whatever the stream kind (a client stream makes no other before its one
// response): the decision is the resumed stream's, whose retry policy and
// backoff start again (RetryLoopState::RestartPolicy). Returns true to
// retry after `*wait`, false to stop with `*final_status`.
bool DecideStreamFailure(RetryLoopState& state, const absl::Status& status,
                         const grpc::ClientContext& context, bool needs_hook,
                         bool has_hook, absl::FunctionRef<bool()> resume,
                         absl::string_view no_hook, absl::string_view declined,
                         absl::Status* final_status,
                         std::chrono::nanoseconds* wait);

absl::Status NullStreamError(const MethodInfo& method);
absl::Status EarlyFinishError(const MethodInfo& method);
absl::Status UnreadFinishError(const MethodInfo& method);

// What a reader's `Cancel()` (and its CancellationOption token) shares with
// the reading thread: a sticky flag, the context of the attempt in flight,
// and the backoff wait that a cancel interrupts. Shared, because a token's
// callback may run after the reader is gone. Thread-safe.
class StreamCancelState
    : public std::enable_shared_from_this<StreamCancelState> {
 public:
  // Sets the flag, cancels the installed context, ends a wait. Idempotent.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool cancelled() const;
  // Makes `context` the one `Cancel()` cancels; false (and nothing
  // installed) when already cancelled.
  bool Install(grpc::ClientContext* context);
  // Forgets the installed context; call before destroying it. Waits for a
  // `Cancel()` that is cancelling it right now.
  void Release();
  // Waits `duration` on the steady clock; false when cancelled first (or
  // already). With `follow` (a channel to follow back, FollowReconnectOption)
  // the wait also ends, returning true with `*woken` set, as soon as that
  // channel is ready again, as a unary call's does (RetryLoopState::Sleep).
  bool WaitFor(std::chrono::nanoseconds duration,
               ChannelFollow* follow = nullptr, bool* woken = nullptr);

 private:
  // The channel is ready again: ends wait `generation` if still running.
  void Wake(uint64_t generation) ABSL_LOCKS_EXCLUDED(mu_);

  mutable Mutex mu_;
  CondVar cv_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The wait running (or the last one), and whether its channel woke it.
  uint64_t wait_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  // A Cancel() uses context_ without the lock.
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// A sync stream's wait before it reopens, every kind: the backoff (with
// the default sleepers it ends early when cancelled or, after a connection
// failure, when the channel is ready again, as a unary call's,
// RetryLoopState::Sleep; `has_sleeper`: a test's sleeper, which cannot be
// interrupted, so a cancel is seen when it returns), then, in the retry
// throttle's waiting mode, its polls until it releases the call. Returns
// true to open the next attempt, false to stop with `*final_status`.
bool WaitBeforeReopen(RetryLoopState& state, StreamCancelState& cancel,
                      bool has_sleeper, std::chrono::nanoseconds wait,
                      absl::Status* final_status);

// The call layer of a stream's options, of every kind: a resume hook set
// (`has_hook`) declares the call idempotent, unless the call's options or
// the client's idempotency map say otherwise.
Options StreamCallOptions(const MethodInfo& method, const OptionsView& options,
                          bool has_hook);

// The timer `EstablishTimer` runs on. Unset (null): the process-wide timer
// thread, in real time, like the gRPC deadline the timer stands for (so a
// test's FakeClock, which completes every wait at once, does not cut each
// attempt as it starts). A seam for tests whose transport runs on a fake
// clock (tests/simulation), not user API.
struct EstablishTimerOption {
  using Type = std::shared_ptr<AsyncSleeper>;
  static Type Default() { return nullptr; }
};

// Ends an attempt of a server or bidi stream that is not established (has
// received no response) within its attempt timeout
// (RetryLoopState::BoundEstablishment): a timer on the process-wide timer
// queue, in real time like the gRPC deadline it stands for, that calls
// TryCancel on the attempt's context unless `Stop` came first. One attempt
// at a time; the callback holds only a shared block, so it may fire after
// the stream is gone. Start and Stop from the attempt's threads, one at a
// time (gRPC orders its reactions).
class EstablishTimer {
 public:
  // `sleeper`: the timer (EstablishTimerOption's); null: the process-wide
  // one. It must outlive this object.
  explicit EstablishTimer(AsyncSleeper* sleeper);
  ~EstablishTimer() { Stop(); }
  EstablishTimer(const EstablishTimer&) = delete;
  EstablishTimer& operator=(const EstablishTimer&) = delete;

  // Arms the timer for `context`, which must outlive the next `Stop`: after
  // `timeout`, cancels it. Nothing for a timeout of zero (none).
  void Start(grpc::ClientContext* context, std::chrono::nanoseconds timeout);
  // The attempt is established or over: from now on the timer cancels
  // nothing. Waits for a cancel in progress (not on the timer's own thread,
  // where gRPC may end the attempt inside TryCancel). Idempotent.
  void Stop();
  // The timer cancelled the attempt (until the next `Start`).
  bool fired() const;

 private:
  struct Shared;
  AsyncSleeper* const sleeper_;
  std::shared_ptr<Shared> shared_;
  uint64_t id_ = 0;
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
  // `channel`: the one to follow back after a connection failure (null:
  // none, as for a client built over a stub); the reader keeps it alive.
  RetryingStreamReader(const MethodInfo& method, const OptionsView& options,
                       const Request& request, Open open,
                       std::shared_ptr<ConnectionChannel> channel = nullptr)
      : method_(method),
        call_options_(StreamCallOptions(method, options, HasHook(options))),
        client_options_(CopyLowerLayers(options)),
        view_(call_options_, client_options_),
        state_(method_, view_),
        request_(request),
        open_(std::move(open)),
        has_sleeper_(view_.get<SleeperOption>() != nullptr),
        channel_(std::move(channel)),
        cancel_(std::make_shared<StreamCancelState>()) {
    state_.UseStreamDeadlines();
    // A reopen is a retry: it may wait out an outage in the throttle's
    // waiting mode, as a unary call does (WaitBeforeReopen polls).
    state_.EnableThrottleWait();
    state_.BoundEstablishment();
    state_.channel_follow().set_channel(channel_.get());
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
        if (!received_in_attempt_) {
          received_in_attempt_ = true;
          establish_timer_.Stop();
          state_.OnEstablished();
        }
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
      // The CANCELLED of our own timer: the attempt timed out.
      if (establish_timer_.fired() &&
          status.code() == absl::StatusCode::kCancelled) {
        status = state_.EstablishTimedOut();
      }
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
  static bool HasHook(const OptionsView& options) {
    const auto* hook = options.template find<ResumeTag>();
    return hook != nullptr && *hook;
  }
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
    state_.RunContextSetup(*context_);  // last: it may override the deadline
    received_in_attempt_ = false;
    if (resume_pending_) state_.CountResume();  // for the summary
    resume_pending_ = false;
    stream_ = open_(*context_, static_cast<const OptionsView&>(view_),
                    static_cast<const Request&>(request_));
    if (stream_ == nullptr) {
      EndAttempt();
      return Stop(NullStreamError(method_));
    }
    establish_timer_.Start(context_.get(), state_.establish_timeout());
    return true;
  }

  // After an attempt's stream is finished; the context stays readable (its
  // trailers hold server hints) until the next attempt replaces it.
  void EndAttempt() {
    establish_timer_.Stop();
    state_.FinishAttempt(*context_);
    cancel_->Release();
  }

  // After a failed attempt: true to go on with a fresh stream.
  bool DecideRetry(const absl::Status& status) {
    // Data already reached the reader: reopening the same request would
    // repeat it, so only the hook may resume.
    const ResumeHook<Request, Response>* resume = hook();
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    if (!DecideStreamFailure(
            state_, status, *context_, received_in_attempt_, resume != nullptr,
            [&] { return (*resume)(last_, request_); }, kNoResumeHook,
            kResumeDeclined, &final_status, &wait)) {
      return Stop(std::move(final_status));
    }
    if (received_in_attempt_) resume_pending_ = true;
    if (!WaitBeforeReopen(state_, *cancel_, has_sleeper_, wait,
                          &final_status)) {
      return Stop(std::move(final_status));
    }
    return true;
  }

  // Ends an open stream the reader no longer wants.
  void Abandon() {
    if (stream_ == nullptr) return;
    CancelAttempt(*context_);
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
  const bool has_sleeper_;
  const std::shared_ptr<ConnectionChannel> channel_;
  const std::shared_ptr<StreamCancelState> cancel_;
  uint64_t token_callback_ = 0;
  std::unique_ptr<grpc::ClientContext> context_;
  // Ends an attempt with no response within its attempt timeout.
  EstablishTimer establish_timer_{view_.get<EstablishTimerOption>().get()};
  std::unique_ptr<grpc::ClientReaderInterface<Response>> stream_;
  Response last_;
  bool received_in_attempt_ = false;
  bool resume_pending_ = false;  // the next attempt is the hook's
  bool done_ = false;
  absl::Status final_status_;
};

template <typename Request, typename Response>
class GrpcStreamWriter : public StreamWriterImpl<Request, Response> {
 public:
  GrpcStreamWriter() : context_(std::make_unique<grpc::ClientContext>()) {}
  ~GrpcStreamWriter() override {
    if (stream_ != nullptr) {
      CancelAttempt(*context_);
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
  void Cancel() override { CancelAttempt(*context_); }

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
      CancelAttempt(*context_);
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
      CancelAttempt(*context_);
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
  void Cancel() override { CancelAttempt(*context_); }

 private:
  const MethodInfo method_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::shared_ptr<ResponseMetadata> response_metadata_;
  std::unique_ptr<grpc::ClientReaderWriterInterface<Request, Response>> stream_;
  bool writes_done_ = false;
  bool reads_done_ = false;
  absl::Status result_;
};

// Why a client or bidi stream that cannot be replayed was not resumed
// (`RetryLoopState::ForbidRepeat`), for the retry summary.
inline constexpr char kNoStreamResumeHook[] =
    "cannot be replayed and has no resume hook";
inline constexpr char kStreamResumeDeclined[] =
    "cannot be replayed and its resume hook declined";

// The most an async client or bidi stream queues of its writes (not yet
// sent on any attempt) while no attempt can send them: waiting to reopen,
// or reopening until the new attempt's replay is sent. The write that would
// pass it ends the call with the failure it waited after (gRFC A6: past the
// retry buffer the call is committed, and one waiting to retry fails;
// kNotResumable, `kQueuedWritesOverflow`). A live stream's queue is not
// bounded: gRPC sends it at its own pace (stubkit/async_streaming.h).
inline constexpr std::size_t kMaxQueuedWriteBytes = 4 * 1024 * 1024;
static_assert(kMaxQueuedWriteBytes == 4 * 1024 * 1024,
              "kQueuedWritesOverflow says 4 MiB");
inline constexpr char kQueuedWritesOverflow[] =
    "gave up retrying: more than 4 MiB of writes queued while the stream was "
    "waiting to reopen";

// Client and bidi streaming with retried opening and hook-driven resume;
// `Stream` is gRPC's `ClientWriterInterface<Request>` (client streaming,
// `open(context, options, Response*)`) or
// `ClientReaderWriterInterface<Request, Response>` (bidi,
// `open(context, options)`), opened once per attempt.
//
// Until an attempt receives its first response, the stream is being opened:
// the caller's writes are kept (up to kMaxReplayBytes) and a failure that
// the retry rules allow reopens the stream and writes them again, in order,
// as gRPC's own retries replay an uncommitted call. Once a response arrived
// (or the writes outgrew the buffer), reopening needs the resume hook: given
// the last response `Read` returned, it writes what restores the server's
// view; those messages are then kept as the replay of the new stream.
// Writes after a response are never re-sent by stubkit: the hook restores
// what the server should know as of the last response read.
//
// Threads: as for RetryingStreamReader, one thread at a time uses the stream
// (Read, Write, WritesDone, Finish, the destructor) and the reopen runs in
// the call that met the break, which blocks meanwhile: a Write during a
// reopen is the Write that waits for it. `Cancel()` may come from any
// thread at any time; it goes through `cancel_`.
template <typename ResumeTag, typename Request, typename Response,
          typename Stream, typename Open>
class ResumableStream {
 public:
  static constexpr bool kBidi =
      !std::is_same_v<Stream, grpc::ClientWriterInterface<Request>>;

  // `channel`: as for RetryingStreamReader.
  ResumableStream(const MethodInfo& method, const OptionsView& options,
                  Open open,
                  std::shared_ptr<ConnectionChannel> channel = nullptr)
      : method_(method),
        call_options_(StreamCallOptions(method_, options, HasHook(options))),
        client_options_(CopyLowerLayers(options)),
        view_(call_options_, client_options_),
        state_(method_, view_),
        open_(std::move(open)),
        has_sleeper_(view_.get<SleeperOption>() != nullptr),
        channel_(std::move(channel)),
        cancel_(std::make_shared<StreamCancelState>()) {
    state_.UseStreamDeadlines();
    // A reopen is a retry: it may wait out an outage in the throttle's
    // waiting mode, as a unary call does (WaitBeforeReopen polls).
    state_.EnableThrottleWait();
    state_.channel_follow().set_channel(channel_.get());
    // A client stream's one response ends the call: its attempt timeout
    // bounds the whole attempt. A bidi stream's, the wait for the first.
    if constexpr (kBidi) state_.BoundEstablishment();
    final_status_ = state_.setup_status();
    done_ = !final_status_.ok();
    if (CancellationToken* token = state_.cancellation()) {
      token_callback_ =
          token->AddCallback([cancel = cancel_] { cancel->Cancel(); });
    }
  }

  ~ResumableStream() {
    Abandon();
    if (token_callback_ != 0)
      state_.cancellation()->RemoveCallback(token_callback_);
  }

  bool Read(Response* response) {
    for (;;) {
      if (!pending_.empty()) {
        *response = std::move(pending_.front());
        pending_.pop_front();
        Delivered(*response);
        return true;
      }
      if (done_) return false;
      if (stream_ == nullptr) {
        Reopen();
        continue;
      }
      if (stream_->Read(response)) {
        Received();
        Delivered(*response);
        return true;
      }
      AfterBreak();
    }
  }

  // A Write that meets a break waits for the reopen and returns true: its
  // message, like every other, is replayed if the stream was still being
  // opened, and otherwise left to the resume hook (whether it reached the
  // old stream cannot be known).
  bool Write(const Request& request) {
    if (writes_done_ || done_) return false;
    if (stream_ == nullptr && !Reopen()) return false;
    Keep(request);
    if (stream_->Write(request)) return true;
    AfterBreak();
    return !done_ && Reopen();
  }

  bool WritesDone() {
    if (writes_done_) return false;
    writes_done_ = true;  // a reopened stream is half-closed after the replay
    for (;;) {
      if (done_) return false;
      if (stream_ == nullptr) {
        if (Reopen()) return true;
        continue;
      }
      if (stream_->WritesDone()) return true;
      AfterBreak();
    }
  }

  // Bidi: the call's status, half-closing first. A response the caller
  // left unread cancels the call instead of blocking on it.
  absl::Status FinishBidi() {
    if (!done_ && !writes_done_) WritesDone();
    while (!done_) {
      if (stream_ == nullptr) {
        Reopen();
        continue;
      }
      Response unread;
      if (stream_->Read(&unread)) {
        Abandon();
        Stop(state_.GiveUp(UnreadFinishError(method_), StopReason::kCancelled,
                           "Finish() was called with responses unread"));
        break;
      }
      AfterBreak();
    }
    return final_status_;
  }

  // Client streaming: half-closes and waits for the response; a failure
  // the retry rules allow reopens and replays.
  absl::StatusOr<Response> FinishClient() {
    if (!done_ && !writes_done_) WritesDone();
    while (!done_) {
      if (stream_ == nullptr) {
        Reopen();
        continue;
      }
      AfterBreak();  // gRPC's Finish: the response and the status
    }
    if (!final_status_.ok()) return final_status_;
    return response_;
  }

  void Cancel() { cancel_->Cancel(); }
  int attempts() const { return state_.attempts(); }

 private:
  static bool HasHook(const OptionsView& options) {
    const auto* hook = options.template find<ResumeTag>();
    return hook != nullptr && *hook;
  }
  const StreamResumeHook<Request, Response>* hook() const {
    const auto* hook = view_.template find<ResumeTag>();
    return hook != nullptr && *hook ? hook : nullptr;
  }

  bool Cancelled() const {
    if (cancel_->cancelled()) return true;
    CancellationToken* token = state_.cancellation();
    return token != nullptr && token->cancelled();
  }

  bool Stop(absl::Status status) {
    final_status_ = std::move(status);
    done_ = true;
    return false;
  }

  // A response arrived in this attempt: the stream is established, and
  // only the hook may reopen it from now on.
  void Received() {
    if (!replay_.Establish()) return;
    establish_timer_.Stop();
    state_.OnEstablished();
  }
  void Delivered(const Response& response) {
    if (hook() == nullptr) return;
    last_ = response;
    has_last_ = true;
  }

  // Keeps a write for a replay, while the stream is being opened and could
  // be retried at all.
  void Keep(const Request& request) {
    if (state_.facts().idempotent) replay_.Keep(request);
  }

  // Opens attempts until one took the replay (and the half-close); false
  // when the stream is over.
  bool Reopen() {
    while (!done_) {
      if (!StartAttempt()) return false;
      if (Replay()) return true;
      AfterBreak();
    }
    return false;
  }

  bool StartAttempt() {
    context_ = std::make_unique<grpc::ClientContext>();
    if (!cancel_->Install(context_.get())) return Stop(state_.Cancelled());
    if (!state_.PrepareAttempt(*context_)) {
      cancel_->Release();
      return Stop(state_.Cancelled());
    }
    state_.RunContextSetup(*context_);  // last: it may override the deadline
    replay_.StartAttempt();
    if (resume_pending_) state_.CountResume();  // for the summary
    resume_pending_ = false;
    if constexpr (kBidi) {
      stream_ = open_(*context_, static_cast<const OptionsView&>(view_));
    } else {
      stream_ =
          open_(*context_, static_cast<const OptionsView&>(view_), &response_);
    }
    if (stream_ == nullptr) {
      EndAttempt();
      return Stop(NullStreamError(method_));
    }
    establish_timer_.Start(context_.get(), state_.establish_timeout());
    return true;
  }

  bool Replay() {
    for (const Request& request : replay_.messages()) {
      if (!stream_->Write(request)) return false;
    }
    return !writes_done_ || stream_->WritesDone();
  }

  void EndAttempt() {
    establish_timer_.Stop();
    state_.FinishAttempt(*context_);
    cancel_->Release();
  }

  // The attempt's stream is over (a Read, Write or WritesDone returned
  // false, or a client stream's Finish): collects its status and decides.
  // Then either the stream is done or `stream_` is null, the backoff was
  // waited, and the next `Reopen` starts a new attempt.
  void AfterBreak() {
    if constexpr (kBidi) {
      // Responses the caller has not read yet: theirs if the stream ends
      // here, sent again after a resume.
      Response unread;
      while (stream_->Read(&unread)) {
        Received();
        pending_.push_back(std::move(unread));
      }
    }
    absl::Status status = FromGrpcStatus(stream_->Finish());
    stream_.reset();
    EndAttempt();
    if (status.ok()) {
      state_.OnSuccess();
      Stop(absl::OkStatus());
      return;
    }
    // Whatever the attempt's status says, a cancel is final.
    if (Cancelled()) {
      pending_.clear();
      Stop(state_.Cancelled());
      return;
    }
    // The CANCELLED of our own timer: the attempt timed out.
    if (establish_timer_.fired() &&
        status.code() == absl::StatusCode::kCancelled) {
      status = state_.EstablishTimedOut();
    }
    DecideRetry(status);
  }

  void DecideRetry(const absl::Status& status) {
    // Not replayable: only the hook may reopen.
    const bool resumes = !replay_.replayable();
    const StreamResumeHook<Request, Response>* resume = hook();
    std::vector<Request> restore;
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    if (!DecideStreamFailure(
            state_, status, *context_, resumes, resume != nullptr,
            [&] {
              ResumeWriter<Request> writer(&restore);
              return (*resume)(has_last_ ? &last_ : nullptr, writer);
            },
            kNoStreamResumeHook, kStreamResumeDeclined, &final_status, &wait)) {
      Stop(std::move(final_status));
      return;
    }
    // Reopening: what the broken stream sent and the caller did not read
    // comes again, from where the hook resumes.
    pending_.clear();
    if (resumes) {
      replay_.Restore(std::move(restore));
      resume_pending_ = true;
    }
    if (!WaitBeforeReopen(state_, *cancel_, has_sleeper_, wait,
                          &final_status)) {
      Stop(std::move(final_status));
    }
  }

  // Ends an open stream the caller no longer wants.
  void Abandon() {
    if (stream_ == nullptr) return;
    CancelAttempt(*context_);
    if constexpr (kBidi) {
      Response discard;
      while (stream_->Read(&discard)) {
      }
    }
    stream_->Finish();
    stream_.reset();
    EndAttempt();
  }

  const MethodInfo method_;
  const Options call_options_;
  const Options client_options_;
  const OptionsView view_;
  RetryLoopState state_;
  Open open_;
  const bool has_sleeper_;
  const std::shared_ptr<ConnectionChannel> channel_;
  const std::shared_ptr<StreamCancelState> cancel_;
  uint64_t token_callback_ = 0;
  std::unique_ptr<grpc::ClientContext> context_;
  // Bidi: ends an attempt with no response within its attempt timeout.
  EstablishTimer establish_timer_{view_.get<EstablishTimerOption>().get()};
  std::unique_ptr<Stream> stream_;
  Response response_;  // client streaming: filled by gRPC's Finish
  // Written at the start of every new attempt: the caller's writes while
  // opening, or the resume hook's; whether the attempt received a response.
  ReplayBuffer<Request> replay_;
  // Received from a stream that then broke, not yet read by the caller.
  std::deque<Response> pending_;
  Response last_;  // the last response Read returned (with a hook only)
  bool has_last_ = false;
  bool resume_pending_ = false;  // the next attempt is the hook's
  bool writes_done_ = false;
  bool done_ = false;
  absl::Status final_status_;
};

template <typename ResumeTag, typename Request, typename Response,
          typename Open>
class ResumableStreamWriter : public StreamWriterImpl<Request, Response> {
 public:
  ResumableStreamWriter(const MethodInfo& method, const OptionsView& options,
                        Open open, std::shared_ptr<ConnectionChannel> channel)
      : stream_(method, options, std::move(open), std::move(channel)) {}
  bool Write(const Request& request) override { return stream_.Write(request); }
  bool WritesDone() override { return stream_.WritesDone(); }
  absl::StatusOr<Response> Finish() override { return stream_.FinishClient(); }
  void Cancel() override { stream_.Cancel(); }
  int attempts() const override { return stream_.attempts(); }

 private:
  ResumableStream<ResumeTag, Request, Response,
                  grpc::ClientWriterInterface<Request>, Open>
      stream_;
};

template <typename ResumeTag, typename Request, typename Response,
          typename Open>
class ResumableStreamReaderWriter
    : public StreamReaderWriterImpl<Request, Response> {
 public:
  ResumableStreamReaderWriter(const MethodInfo& method,
                              const OptionsView& options, Open open,
                              std::shared_ptr<ConnectionChannel> channel)
      : stream_(method, options, std::move(open), std::move(channel)) {}
  bool Read(Response* response) override { return stream_.Read(response); }
  bool Write(const Request& request) override { return stream_.Write(request); }
  bool WritesDone() override { return stream_.WritesDone(); }
  absl::Status Finish() override { return stream_.FinishBidi(); }
  void Cancel() override { stream_.Cancel(); }
  int attempts() const override { return stream_.attempts(); }

 private:
  ResumableStream<ResumeTag, Request, Response,
                  grpc::ClientReaderWriterInterface<Request, Response>, Open>
      stream_;
};

// Entry points for generated connections. `open` is called once per
// attempt. `channel`: the connection's, to follow back after a connection
// failure (null: none, as for a client built over a stub).
template <typename ResumeTag, typename Request, typename Response,
          typename Open>
StreamReader<Response> OpenServerStream(
    const MethodInfo& method, const OptionsView& options,
    const Request& request, Open open,
    std::shared_ptr<ConnectionChannel> channel = nullptr) {
  return StreamReader<Response>(
      std::make_unique<
          RetryingStreamReader<ResumeTag, Request, Response, Open>>(
          method, options, request, std::move(open), std::move(channel)));
}

template <typename ResumeTag, typename Request, typename Response,
          typename Open>
StreamWriter<Request, Response> OpenClientStream(
    const MethodInfo& method, const OptionsView& options, Open open,
    std::shared_ptr<ConnectionChannel> channel = nullptr) {
  return StreamWriter<Request, Response>(
      std::make_unique<
          ResumableStreamWriter<ResumeTag, Request, Response, Open>>(
          method, options, std::move(open), std::move(channel)));
}

template <typename ResumeTag, typename Request, typename Response,
          typename Open>
StreamReaderWriter<Request, Response> OpenBidiStream(
    const MethodInfo& method, const OptionsView& options, Open open,
    std::shared_ptr<ConnectionChannel> channel = nullptr) {
  return StreamReaderWriter<Request, Response>(
      std::make_unique<
          ResumableStreamReaderWriter<ResumeTag, Request, Response, Open>>(
          method, options, std::move(open), std::move(channel)));
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_STREAM_RETRY_H_

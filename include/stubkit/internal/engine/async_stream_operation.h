// Copyright 2026 The stubkit Authors.
//
// The operations behind async streams: server streaming
// (`AsyncServerStreamOperation`), bidi and client streaming
// (`AsyncWriteStreamOperation`).
// Not API: see stubkit/async_streaming.h.

#ifndef STUBKIT_INTERNAL_ASYNC_STREAM_OPERATION_H_
#define STUBKIT_INTERNAL_ASYNC_STREAM_OPERATION_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

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
#include "absl/status/status.h"
#include "stubkit/async_callback.h"
#include "stubkit/async_streaming.h"
#include "stubkit/cancellation.h"
#include "stubkit/internal/api/options_layers.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/internal/engine/async_retry_operation.h"
#include "stubkit/internal/engine/async_stream_cancel.h"
#include "stubkit/internal/engine/replay_buffer.h"
#include "stubkit/internal/engine/stream_retry.h"
#include "stubkit/streaming.h"

namespace stubkit {
namespace internal {

// Opens one attempt: hands `reactor` to the grpc_cpp_plugin
// `async()->M(&context, &request, reactor)` and returns OK, or returns why
// it could not (the reactor is then untouched). The operation starts it.
template <typename Request, typename Response>
using AsyncStreamOpener = std::function<absl::Status(
    grpc::ClientContext&, const OptionsView&, const Request&,
    grpc::ClientReadReactor<Response>*)>;

template <typename ResumeTag, typename Request, typename Response>
class AsyncServerStreamOperation final : public AsyncRetryOperationBase {
 public:
  AsyncServerStreamOperation(const MethodInfo& method, Options call,
                             Options client, const Request& request,
                             AsyncStreamOpener<Request, Response> open,
                             MessageCallback<Response> on_message,
                             StreamDoneCallback on_done)
      : AsyncRetryOperationBase(method, std::move(call), std::move(client)),
        request_(request),
        open_(std::move(open)),
        on_message_(std::move(on_message)),
        on_done_(std::move(on_done)) {
    state().UseStreamDeadlines();
    // A reopen is a retry: it may wait out an outage in the throttle's
    // waiting mode, as a unary call does (the base's OnWaitDone polls).
    state().EnableThrottleWait();
    state().BoundEstablishment();
  }

 private:
  // One attempt's reactor. gRPC calls OnDone last; it deletes itself then.
  class Reactor final : public grpc::ClientReadReactor<Response> {
   public:
    explicit Reactor(std::shared_ptr<AsyncServerStreamOperation> operation)
        : operation_(std::move(operation)) {}

    void Begin() {
      this->StartRead(&message_);
      this->StartCall();
    }
    void OnReadDone(bool ok) override {
      if (!ok) return;  // the stream ended; OnDone follows
      operation_->OnMessage(message_);
      this->StartRead(&message_);
    }
    void OnDone(const grpc::Status& status) override {
      operation_->OnStreamDone(FromGrpcStatus(status));
      delete this;
    }

   private:
    std::shared_ptr<AsyncServerStreamOperation> operation_;
    Response message_;
  };

  void ConfigureAttempt(grpc::ClientContext& /*context*/) override {
    received_in_attempt_ = false;
    if (resume_pending_) state().CountResume();  // for the summary
    resume_pending_ = false;
  }

  void StartAttempt(grpc::ClientContext& context,
                    const OptionsView& options) override {
    auto* reactor =
        new Reactor(std::static_pointer_cast<AsyncServerStreamOperation>(
            shared_from_this()));
    absl::Status opened = open_(context, options, request_, reactor);
    if (!opened.ok()) {
      delete reactor;
      OnAttemptDone(opened);
      return;
    }
    establish_timer_.Start(&context, state().establish_timeout());
    reactor->Begin();
  }

  void OnMessage(const Response& message) {
    if (!received_in_attempt_) {
      received_in_attempt_ = true;
      establish_timer_.Stop();
      state().OnEstablished();
    }
    if (hook() != nullptr) last_ = message;
    on_message_(message);
  }

  void OnStreamDone(absl::Status status) {
    establish_timer_.Stop();
    // The CANCELLED of our own timer: the attempt timed out (a caller's
    // cancel still wins, in the decision).
    if (establish_timer_.fired() &&
        status.code() == absl::StatusCode::kCancelled) {
      status = state().EstablishTimedOut();
    }
    OnAttemptDone(status);
  }

  bool DecideFailure(const absl::Status& status,
                     const grpc::ClientContext& context,
                     absl::Status* final_status,
                     std::chrono::nanoseconds* wait) override {
    // Data reached the caller: only the hook may resume, from `last_`.
    const ResumeHook<Request, Response>* resume = hook();
    if (!DecideStreamFailure(
            state(), status, context, received_in_attempt_, resume != nullptr,
            [&] { return (*resume)(last_, request_); }, kNoResumeHook,
            kResumeDeclined, final_status, wait)) {
      return false;
    }
    if (received_in_attempt_) resume_pending_ = true;
    return true;
  }

  void Deliver(absl::Status status) override {
    StreamDoneCallback done = std::move(on_done_);
    done(std::move(status));
  }

  const ResumeHook<Request, Response>* hook() const {
    const auto* hook = options().template find<ResumeTag>();
    return hook != nullptr && *hook ? hook : nullptr;
  }

  Request request_;
  AsyncStreamOpener<Request, Response> open_;
  MessageCallback<Response> on_message_;
  StreamDoneCallback on_done_;
  Response last_;
  bool received_in_attempt_ = false;
  bool resume_pending_ = false;  // the next attempt is the hook's
  // Ends an attempt with no message within its attempt timeout.
  EstablishTimer establish_timer_{
      options().template get<EstablishTimerOption>().get()};
};

// The entry point of a generated AsyncM for server streaming. The handle's
// Cancel() goes through a token of the stream's own (AsyncStreamCancel).
// `channel`: the connection's, whose return ends a wait after a connection
// failure (null: none).
template <typename ResumeTag, typename Request, typename Response>
AsyncStreamReader<Response> StartAsyncServerStream(
    const MethodInfo& method, const OptionsView& options,
    const Request& request, AsyncStreamOpener<Request, Response> open,
    MessageCallback<Response> on_message, StreamDoneCallback on_done,
    std::shared_ptr<ConnectionChannel> channel = nullptr) {
  auto cancel =
      std::make_shared<AsyncStreamCancel>(options.get<CancellationOption>());
  const auto* hook = options.template find<ResumeTag>();
  Options call = StreamCallOptions(method, options, hook != nullptr && *hook);
  call.set<CancellationOption>(cancel->token());
  cancel->Link();
  auto operation = std::make_shared<
      AsyncServerStreamOperation<ResumeTag, Request, Response>>(
      method, std::move(call), CopyLowerLayers(options), request,
      std::move(open), std::move(on_message),
      [cancel, on_done = std::move(on_done)](absl::Status status) {
        cancel->Unlink();
        on_done(std::move(status));
      });
  if (channel != nullptr) operation->set_channel(std::move(channel));
  operation->Start();
  return AsyncStreamReader<Response>(std::move(cancel));
}

// Opens one attempt of an async bidi stream: hands `reactor` to the
// grpc_cpp_plugin `async()->M(&context, reactor)` and returns OK, or returns
// why it could not (the reactor is then untouched). The operation starts it.
template <typename Request, typename Response>
using AsyncBidiOpener =
    std::function<absl::Status(grpc::ClientContext&, const OptionsView&,
                               grpc::ClientBidiReactor<Request, Response>*)>;

// Opens one attempt of an async client stream: hands `response` and
// `reactor` to the grpc_cpp_plugin `async()->M(&context, response,
// reactor)` and returns OK, or returns why it could not (the reactor is
// then untouched).
template <typename Request, typename Response>
using AsyncClientStreamOpener =
    std::function<absl::Status(grpc::ClientContext&, const OptionsView&,
                               Response*, grpc::ClientWriteReactor<Request>*)>;

// The streams the user writes to, bidi (`kClientStream` false) and client
// streaming: retried opening (replayed writes) and hook-driven resume, under
// the rules of `ResumableStream` (stubkit/internal/engine/stream_retry.h). The
// user's writes wait in `outbox_` and are sent one at a time by the live
// attempt's reactor, after the replay. A bidi stream hands each message to
// `on_message` and its status to `on_done`; a client stream's one response
// comes with its OK status, so it is "established" only when it is over:
// until then a retryable break replays the writes (or, past the replay
// buffer, goes to the hook, whose `last` is null).
//
// Threads: the handle's Write, WritesDone and Cancel come from any thread;
// the reactor's reactions from gRPC's; the retry decision (DecideFailure,
// the hook) and attempt starts from gRPC's or the timer thread, one at a time.
// `mu_` guards what they share; no user code runs under it.
template <typename ResumeTag, typename Request, typename Response,
          bool kClientStream>
class AsyncWriteStreamOperation final : public AsyncRetryOperationBase,
                                        public AsyncStreamWriterImpl<Request> {
 public:
  using Opener = std::conditional_t<kClientStream,
                                    AsyncClientStreamOpener<Request, Response>,
                                    AsyncBidiOpener<Request, Response>>;
  using Done = std::conditional_t<kClientStream, AsyncCallback<Response>,
                                  StreamDoneCallback>;

  AsyncWriteStreamOperation(const MethodInfo& method, Options call,
                            Options client, Opener open,
                            MessageCallback<Response> on_message, Done on_done,
                            std::shared_ptr<CancellationToken> own_token,
                            std::shared_ptr<CancellationToken> user_token)
      : AsyncRetryOperationBase(method, std::move(call), std::move(client)),
        open_(std::move(open)),
        on_message_(std::move(on_message)),
        on_done_(std::move(on_done)),
        own_token_(std::move(own_token)),
        user_token_(std::move(user_token)) {
    state().UseStreamDeadlines();
    // A reopen is a retry: it may wait out an outage in the throttle's
    // waiting mode, as a unary call does (the base's OnWaitDone polls).
    state().EnableThrottleWait();
    // A client stream's one response ends the call: its attempt timeout
    // bounds the whole attempt. A bidi stream's, the wait for the first.
    if constexpr (!kClientStream) state().BoundEstablishment();
  }

  // Chains the user's CancellationOption token, if any, to the stream's
  // own; then starts the first attempt.
  void Begin() {
    if (user_token_ != nullptr) {
      user_callback_ =
          user_token_->AddCallback([token = own_token_] { token->Cancel(); });
    }
    // A cancel fails the attempt's pending operations, but a client stream
    // that is not writing has none, and its hold would keep gRPC from
    // finishing it: a cancel ends its writes (and releases the hold) too.
    own_callback_ = own_token_->AddCallback([operation =
                                                 std::weak_ptr<AsyncCallBase>(
                                                     shared_from_this())] {
      if (std::shared_ptr<AsyncCallBase> live = operation.lock()) {
        static_cast<AsyncWriteStreamOperation*>(live.get())->EndLiveWrites();
      }
    });
    Start();
  }

  bool Write(Request request) override {
    Reactor* reactor = nullptr;
    bool refused = false;
    bool end_now = false;
    {
      MutexLock lock(&mu_);
      if (over_ || writes_done_ || queue_overflow_) return false;
      const std::size_t size = ReplaySize(request);
      if (!CanSend() && outbox_bytes_ + size > kMaxQueuedWriteBytes) {
        // Past the bound while no attempt can send: the call is over (see
        // kMaxQueuedWriteBytes), unless a cancel is ending it already.
        refused = true;
        if (!cancelled_ && !own_token_->cancelled()) {
          queue_overflow_ = true;
          // A decision in progress would report the cancel: DecideFailure
          // ends the wait that follows it instead.
          end_now = !deciding_;
          overflow_cancelled_ = end_now;
        }
      } else {
        outbox_.push_back(std::move(request));
        outbox_bytes_ += size;
        reactor = reactor_;
      }
    }
    if (refused) {
      // The cancel's path ends the wait, or the attempt that cannot send
      // yet; on_done gets the failure waited after (CancelledStatus,
      // DecideFailure).
      if (end_now) own_token_->Cancel();
      return false;
    }
    if (reactor != nullptr) Pump(reactor);
    return true;
  }

  bool WritesDone() override {
    Reactor* reactor;
    {
      MutexLock lock(&mu_);
      if (over_ || writes_done_ || queue_overflow_) return false;
      writes_done_ = true;
      reactor = reactor_;
    }
    if (reactor != nullptr) Pump(reactor);
    return true;
  }

  void Cancel() override { own_token_->Cancel(); }

 private:
  // What a reactor of either kind holds: the operation, and the attempt's
  // writing side (guarded by the operation's `mu_`).
  struct AttemptWrites {
    AttemptWrites(std::shared_ptr<AsyncWriteStreamOperation> operation,
                  std::deque<Request> replay)
        : operation_(std::move(operation)), replay_(std::move(replay)) {}
    std::shared_ptr<AsyncWriteStreamOperation> operation_;
    std::deque<Request> replay_;  // sent first
    Request writing_message_;     // in flight
    bool writing_ = false;
    bool half_closed_ = false;
    int pumping_ = 0;  // threads using it unlocked (starting it, or a write)
    bool ending_ = false;  // the stream is over: no more writes
    bool hold_released_ = false;
  };

  // One attempt's reactor. It holds the call open (AddHold) until it is
  // over for us, so that a Write from another thread never starts on a
  // reactor gRPC already finished; gRPC calls OnDone last, and it deletes
  // itself then.
  class BidiReactor final : public grpc::ClientBidiReactor<Request, Response>,
                            public AttemptWrites {
   public:
    using AttemptWrites::AttemptWrites;
    using AttemptWrites::operation_;

    void OnReadDone(bool ok) override {
      if (!ok) {  // the stream ended; OnDone follows once the hold goes
        operation_->EndWrites(this);
        return;
      }
      operation_->OnMessage(message_);
      this->StartRead(&message_);
    }
    void OnWriteDone(bool ok) override { operation_->OnWriteDone(this, ok); }
    void OnDone(const grpc::Status& status) override {
      ReactorDone(this, status);
    }

   private:
    friend class AsyncWriteStreamOperation;
    Response message_;
  };

  // A client stream's: nothing to read, one response at the end. gRPC
  // tells of a break through a failed write or half-close, so a stream
  // that is idle, neither writing nor half-closed, learns of it at its next
  // Write or WritesDone (as the sync StreamWriter does).
  class ClientReactor final : public grpc::ClientWriteReactor<Request>,
                              public AttemptWrites {
   public:
    using AttemptWrites::AttemptWrites;
    using AttemptWrites::operation_;

    void OnWriteDone(bool ok) override { operation_->OnWriteDone(this, ok); }
    // Half-closed (or broken): nothing more to write; the status follows.
    void OnWritesDoneDone(bool /*ok*/) override { operation_->EndWrites(this); }
    void OnDone(const grpc::Status& status) override {
      ReactorDone(this, status);
    }

   private:
    friend class AsyncWriteStreamOperation;
    Response response_;  // gRPC's to fill; valid in OnDone with OK
  };

  using Reactor = std::conditional_t<kClientStream, ClientReactor, BidiReactor>;

  // Either reactor's OnDone, gRPC's last reaction: the reactor goes with it.
  static void ReactorDone(Reactor* reactor, const grpc::Status& status) {
    std::shared_ptr<AsyncWriteStreamOperation> operation =
        std::move(reactor->operation_);
    operation->OnReactorDone(reactor, FromGrpcStatus(status));
    delete reactor;
  }

  void ConfigureAttempt(grpc::ClientContext& /*context*/) override {
    MutexLock lock(&mu_);
    replay_.StartAttempt();
    if (resume_pending_) state().CountResume();  // for the summary
    resume_pending_ = false;
  }

  void StartAttempt(grpc::ClientContext& context,
                    const OptionsView& options) override {
    std::deque<Request> replay;
    {
      MutexLock lock(&mu_);
      replay.assign(replay_.messages().begin(), replay_.messages().end());
    }
    auto* reactor = new Reactor(
        std::static_pointer_cast<AsyncWriteStreamOperation>(shared_from_this()),
        std::move(replay));
    absl::Status opened;
    if constexpr (kClientStream) {
      opened = open_(context, options, &reactor->response_, reactor);
    } else {
      opened = open_(context, options, reactor);
    }
    if (!opened.ok()) {
      delete reactor;
      OnAttemptDone(opened);
      return;
    }
    reactor->AddHold();
    establish_timer_.Start(&context, state().establish_timeout());
    if constexpr (!kClientStream) reactor->StartRead(&reactor->message_);
    bool cancelled;
    {
      MutexLock lock(&mu_);
      reactor_ = reactor;
      cancelled = cancelled_;
      // This thread uses the reactor until the end of this function: no
      // end (a read that fails at once on gRPC's thread, say) may release
      // the hold, and let OnDone delete it, before then.
      ++reactor->pumping_;
    }
    reactor->StartCall();
    if (!cancelled) Pump(reactor);
    bool release;
    {
      MutexLock lock(&mu_);
      --reactor->pumping_;
      // Cancelled since PrepareAttempt attached the context (from the setup
      // hook, say): EndLiveWrites found no reactor then, so the writes end
      // here, or a client stream would never finish.
      if (cancelled) reactor->ending_ = true;
      release = TakeRelease(reactor);
    }
    if (release) reactor->RemoveHold();  // the last touch: OnDone may follow
  }

  // Starts the reactor's next write (or its half-close), if it is free.
  void Pump(Reactor* reactor) {
    bool close = false;
    {
      MutexLock lock(&mu_);
      if (reactor_ != reactor || reactor->writing_ || reactor->half_closed_ ||
          reactor->ending_) {
        return;
      }
      if (!reactor->replay_.empty()) {
        reactor->writing_message_ = std::move(reactor->replay_.front());
        reactor->replay_.pop_front();
      } else if (!outbox_.empty()) {
        reactor->writing_message_ = std::move(outbox_.front());
        outbox_.pop_front();
        const std::size_t size = ReplaySize(reactor->writing_message_);
        outbox_bytes_ -= size;
        // Kept for a replay while the stream is being opened.
        if (state().facts().idempotent) {
          replay_.Keep(reactor->writing_message_, size);
        }
      } else if (writes_done_) {
        close = true;
      } else {
        return;
      }
      if (close) {
        reactor->half_closed_ = true;
      } else {
        reactor->writing_ = true;
      }
      ++reactor->pumping_;
    }
    if (close) {
      reactor->StartWritesDone();
    } else {
      reactor->StartWrite(&reactor->writing_message_);
    }
    bool release = false;
    {
      MutexLock lock(&mu_);
      --reactor->pumping_;
      release = TakeRelease(reactor);
    }
    if (release) reactor->RemoveHold();  // the last touch: OnDone may follow
  }

  void OnWriteDone(Reactor* reactor, bool ok) {
    {
      MutexLock lock(&mu_);
      reactor->writing_ = false;
    }
    if (!ok) {
      EndWrites(reactor);  // broken: OnDone brings the status
      return;
    }
    Pump(reactor);
  }

  // The stream is over for writing: lets gRPC finish it once no write is
  // being started.
  void EndWrites(Reactor* reactor) {
    bool release;
    {
      MutexLock lock(&mu_);
      reactor->ending_ = true;
      release = TakeRelease(reactor);
    }
    if (release) reactor->RemoveHold();
  }

  // The stream was cancelled: EndWrites for the live attempt, if there is
  // one, and for any attempt that starts later (StartAttempt reads
  // `cancelled_`).
  void EndLiveWrites() {
    Reactor* reactor;
    bool release;
    {
      // While it is reactor_, OnDone has not run: the reactor is alive.
      MutexLock lock(&mu_);
      cancelled_ = true;
      reactor = reactor_;
      if (reactor == nullptr) return;
      reactor->ending_ = true;
      release = TakeRelease(reactor);
    }
    if (release) reactor->RemoveHold();
  }

  // Under mu_: whether a live attempt sends the queue now (its replay was
  // handed to gRPC), so that the queue may grow past kMaxQueuedWriteBytes.
  bool CanSend() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return reactor_ != nullptr && reactor_->replay_.empty();
  }

  // Under mu_: whether this thread removes the hold now.
  static bool TakeRelease(Reactor* reactor) {
    if (!reactor->ending_ || reactor->pumping_ > 0 || reactor->hold_released_) {
      return false;
    }
    reactor->hold_released_ = true;
    return true;
  }

  void OnMessage(const Response& message) {
    const bool keep_last = hook() != nullptr;
    bool first = false;
    {
      MutexLock lock(&mu_);
      // The first establishes the stream: only the hook may reopen it from
      // now on.
      first = replay_.Establish();
    }
    if (first) {
      // Not under mu_: Stop may wait for the timer's TryCancel.
      establish_timer_.Stop();
      state().OnEstablished();
    }
    if (keep_last) {
      last_ = message;  // read by DecideFailure, after this attempt's OnDone
      has_last_ = true;
    }
    on_message_(message);
  }

  void OnReactorDone(Reactor* reactor, const absl::Status& status) {
    {
      MutexLock lock(&mu_);
      if (reactor_ == reactor) reactor_ = nullptr;
      deciding_ = true;  // until DecideFailure returns, if it runs
    }
    if constexpr (kClientStream) {
      // Read only by Deliver, after the retry loop saw this attempt's end.
      if (status.ok()) response_ = std::move(reactor->response_);
    }
    establish_timer_.Stop();
    // The CANCELLED of our own timer: the attempt timed out (a caller's
    // cancel still wins, in the decision).
    if (establish_timer_.fired() &&
        status.code() == absl::StatusCode::kCancelled) {
      OnAttemptDone(state().EstablishTimedOut());
      return;
    }
    OnAttemptDone(status);
  }

  bool DecideFailure(const absl::Status& status,
                     const grpc::ClientContext& context,
                     absl::Status* final_status,
                     std::chrono::nanoseconds* wait) override {
    bool overflow;
    absl::Status failure;
    {
      MutexLock lock(&mu_);
      deciding_ = true;
      overflow = queue_overflow_;
      if (!overflow) {
        failure_ = status;
      } else if (overflow_cancelled_) {
        // This attempt (a reopen still replaying, or starting) ended by
        // the overflow's cancel: the stream waited after the one before.
        failure = failure_;
      } else {
        failure = status;  // the overflow came as this attempt ended
      }
    }
    if (overflow) {
      *final_status = GiveUpOnQueue(failure);
      return false;
    }
    const bool retry = DecideBreak(status, context, final_status, wait);
    {
      MutexLock lock(&mu_);
      deciding_ = false;
      overflow = queue_overflow_;
    }
    // The queue outgrew its bound during the decision: the cancel's path
    // ends the wait that follows (ScheduleWait finds the token cancelled).
    if (retry && overflow) own_token_->Cancel();
    return retry;
  }

  // A token cancelled by Write's overflow ends the call with the failure
  // the stream waited after.
  absl::Status CancelledStatus() override {
    absl::Status failure;
    {
      MutexLock lock(&mu_);
      if (queue_overflow_) failure = failure_;
    }
    if (failure.ok()) return AsyncRetryOperationBase::CancelledStatus();
    return GiveUpOnQueue(failure);
  }

  absl::Status GiveUpOnQueue(const absl::Status& failure) {
    return state().GiveUpWaiting(failure, StopReason::kNotResumable,
                                 kQueuedWritesOverflow);
  }

  // The resume hook's writer: drops the queued writes before the hook's
  // first message.
  class HookWriter : public ResumeWriter<Request> {
   public:
    HookWriter(std::vector<Request>* messages,
               std::function<void()> before_first)
        : ResumeWriter<Request>(messages, std::move(before_first)) {}
  };

  void DropQueuedWrites() {
    MutexLock lock(&mu_);
    outbox_.clear();
    outbox_bytes_ = 0;
  }

  bool DecideBreak(const absl::Status& status,
                   const grpc::ClientContext& context,
                   absl::Status* final_status, std::chrono::nanoseconds* wait) {
    bool resumes;
    {
      MutexLock lock(&mu_);
      // Not replayable: only the hook may reopen (else the writes replay).
      resumes = !replay_.replayable();
    }
    const StreamResumeHook<Request, Response>* resume = hook();
    std::vector<Request> restore;
    if (!DecideStreamFailure(
            state(), status, context, resumes, resume != nullptr,
            [&] {
              // Written before the hook runs and not sent: the hook's to
              // restore. So are the writes queued until its first message:
              // a hook that reads what was written and writes its messages
              // under the lock its application's writer holds around each
              // `Write` restores them (else they would go twice).
              DropQueuedWrites();
              HookWriter writer(&restore, [this] { DropQueuedWrites(); });
              return (*resume)(has_last_ ? &last_ : nullptr, writer);
            },
            kNoStreamResumeHook, kStreamResumeDeclined, final_status, wait)) {
      return false;
    }
    if (!resumes) return true;
    MutexLock lock(&mu_);
    replay_.Restore(std::move(restore));
    resume_pending_ = true;
    return true;
  }

  void Deliver(absl::Status status) override {
    {
      MutexLock lock(&mu_);
      over_ = true;
      outbox_.clear();
      outbox_bytes_ = 0;
    }
    if (user_callback_ != 0) user_token_->RemoveCallback(user_callback_);
    own_token_->RemoveCallback(own_callback_);
    // No reaction follows: release what the callbacks hold (a handle of
    // this stream, say, which would keep it alive).
    MessageCallback<Response> on_message = std::move(on_message_);
    Done done = std::move(on_done_);
    if constexpr (kClientStream) {
      if (status.ok()) {
        done(std::move(response_));
        return;
      }
    }
    done(std::move(status));
  }

  const StreamResumeHook<Request, Response>* hook() const {
    const auto* hook = options().template find<ResumeTag>();
    return hook != nullptr && *hook ? hook : nullptr;
  }

  Opener open_;
  MessageCallback<Response> on_message_;  // bidi only
  Done on_done_;
  const std::shared_ptr<CancellationToken> own_token_;
  const std::shared_ptr<CancellationToken> user_token_;
  uint64_t user_callback_ = 0;
  uint64_t own_callback_ = 0;
  Response response_;  // a client stream's, from the attempt that succeeded
  // Bidi: ends an attempt with no response within its attempt timeout.
  // Started before StartCall, then used by that attempt's reactions.
  EstablishTimer establish_timer_{
      options().template get<EstablishTimerOption>().get()};
  // Touched by one attempt's reactions, then by DecideFailure: never at
  // once.
  Response last_;
  bool has_last_ = false;
  // The next attempt is the hook's.
  bool resume_pending_ ABSL_GUARDED_BY(mu_) = false;

  Mutex mu_;
  // The live attempt's, once it started.
  Reactor* reactor_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Written, not yet handed to a stream, and its ReplaySize in all.
  std::deque<Request> outbox_ ABSL_GUARDED_BY(mu_);
  std::size_t outbox_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // A write found the outbox past kMaxQueuedWriteBytes while no attempt
  // could send it: the call is over; Write and WritesDone return false.
  bool queue_overflow_ ABSL_GUARDED_BY(mu_) = false;
  // ... and that write cancelled the stream's token to end it.
  bool overflow_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // From an attempt's end until DecideFailure returns.
  bool deciding_ ABSL_GUARDED_BY(mu_) = false;
  // The failure the stream waits after (the last one decided).
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool over_ ABSL_GUARDED_BY(mu_) = false;
  // The stream's token was cancelled.
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // Sent first on every new attempt; whether the attempt received a
  // response.
  ReplayBuffer<Request> replay_ ABSL_GUARDED_BY(mu_);
};

// Starts an async bidi or client stream. The handle's Cancel() goes
// through a token of the stream's own, which the user's token (if any)
// cancels too.
template <typename ResumeTag, typename Request, typename Response,
          bool kClientStream>
AsyncStreamWriter<Request> StartAsyncWriteStream(
    const MethodInfo& method, const OptionsView& options,
    typename AsyncWriteStreamOperation<ResumeTag, Request, Response,
                                       kClientStream>::Opener open,
    MessageCallback<Response> on_message,
    typename AsyncWriteStreamOperation<ResumeTag, Request, Response,
                                       kClientStream>::Done on_done,
    std::shared_ptr<ConnectionChannel> channel) {
  const auto* hook = options.template find<ResumeTag>();
  Options call = StreamCallOptions(method, options, hook != nullptr && *hook);
  auto own_token = std::make_shared<CancellationToken>();
  std::shared_ptr<CancellationToken> user_token =
      options.get<CancellationOption>();
  call.set<CancellationOption>(own_token);
  auto operation = std::make_shared<
      AsyncWriteStreamOperation<ResumeTag, Request, Response, kClientStream>>(
      method, std::move(call), CopyLowerLayers(options), std::move(open),
      std::move(on_message), std::move(on_done), std::move(own_token),
      std::move(user_token));
  if (channel != nullptr) operation->set_channel(std::move(channel));
  operation->Begin();
  return AsyncStreamWriter<Request>(operation);
}

// The entry point of a generated AsyncM for bidi streaming.
template <typename ResumeTag, typename Request, typename Response>
AsyncStreamWriter<Request> StartAsyncBidiStream(
    const MethodInfo& method, const OptionsView& options,
    AsyncBidiOpener<Request, Response> open,
    MessageCallback<Response> on_message, StreamDoneCallback on_done,
    std::shared_ptr<ConnectionChannel> channel = nullptr) {
  return StartAsyncWriteStream<ResumeTag, Request, Response, false>(
      method, options, std::move(open), std::move(on_message),
      std::move(on_done), std::move(channel));
}

// The entry point of a generated AsyncM for client streaming.
template <typename ResumeTag, typename Request, typename Response>
AsyncStreamWriter<Request> StartAsyncClientStream(
    const MethodInfo& method, const OptionsView& options,
    AsyncClientStreamOpener<Request, Response> open,
    AsyncCallback<Response> done,
    std::shared_ptr<ConnectionChannel> channel = nullptr) {
  return StartAsyncWriteStream<ResumeTag, Request, Response, true>(
      method, options, std::move(open), nullptr, std::move(done),
      std::move(channel));
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ASYNC_STREAM_OPERATION_H_

// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/stream_retry.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/internal/api/timer_queue.h"
#include "stubkit/internal/base/method_name.h"
#include "stubkit/internal/engine/connection_channel.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {

using std::chrono::nanoseconds;

Options StreamCallOptions(const MethodInfo& method, const OptionsView& options,
                          bool has_hook) {
  Options call = options.call();
  if (!has_hook || options.find<IdempotencyOption>() != nullptr) return call;
  if (const auto* by_name = options.find<IdempotencyMapOption>();
      by_name != nullptr &&
      FindByMethodName(*by_name, method.full_name) != nullptr) {
    return call;
  }
  // A hook is the user saying how to re-establish the stream: reopening it
  // is safe, whatever the proto's default.
  call.set<IdempotencyOption>(Idempotency::kIdempotent);
  return call;
}

void StreamCancelState::Cancel() {
  grpc::ClientContext* context;
  {
    MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    context = context_;
    cancelling_ = context != nullptr;
  }
  cv_.NotifyAll();  // ends a backoff wait
  if (context == nullptr) return;
  // Without the lock: TryCancel runs the channel's interceptors. `Release`
  // waits for `cancelling_`, so the context outlives this call.
  CancelAttempt(*context);
  {
    MutexLock lock(&mu_);
    cancelling_ = false;
  }
  cv_.NotifyAll();
}

bool StreamCancelState::cancelled() const {
  MutexLock lock(&mu_);
  return cancelled_;
}

bool StreamCancelState::Install(grpc::ClientContext* context) {
  MutexLock lock(&mu_);
  if (cancelled_) return false;
  context_ = context;
  return true;
}

void StreamCancelState::Release() {
  MutexLock lock(&mu_);
  cv_.Wait(lock,
           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !cancelling_; });
  context_ = nullptr;
}

bool StreamCancelState::WaitFor(nanoseconds duration, ChannelFollow* follow,
                                bool* woken) {
  // The steady clock: a wall-clock change must not stretch or cut the wait.
  using Steady = std::chrono::steady_clock;
  const Steady::time_point now = Steady::now();
  const auto step = std::chrono::duration_cast<Steady::duration>(duration);
  const Steady::time_point until = step >= Steady::time_point::max() - now
                                       ? Steady::time_point::max()
                                       : now + step;
  uint64_t generation;
  {
    MutexLock lock(&mu_);
    generation = ++wait_generation_;
    woken_ = false;
  }
  // The channel's watcher thread polls it meanwhile (connection_channel.h);
  // its wake may come after this wait is over, hence the generation, and
  // the weak reference (the stream may be gone by then).
  uint64_t watch = 0;
  if (follow != nullptr && follow->channel() != nullptr) {
    watch = follow->channel()->Join(
        [weak = weak_from_this(), generation] {
          if (auto self = weak.lock()) self->Wake(generation);
        },
        follow->down_at_attempt_start());
  }
  bool cancelled;
  {
    MutexLock lock(&mu_);
    cv_.WaitUntil(lock, until, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return cancelled_ || woken_;
    });
    cancelled = cancelled_;
    if (woken != nullptr) *woken = woken_ && !cancelled_;
  }
  if (watch != 0) follow->channel()->Leave(watch);
  return !cancelled;
}

void StreamCancelState::Wake(uint64_t generation) {
  {
    MutexLock lock(&mu_);
    if (generation != wait_generation_) return;
    woken_ = true;
  }
  cv_.NotifyAll();
}

namespace {

// The stream's own Cancel() or its CancellationOption token (which cancels
// attempts before it runs its callbacks).
bool StreamCancelled(RetryLoopState& state, const StreamCancelState& cancel) {
  if (cancel.cancelled()) return true;
  CancellationToken* token = state.cancellation();
  return token != nullptr && token->cancelled();
}

// One wait; false when cancelled before, during or by the end of it.
bool WaitOnce(RetryLoopState& state, StreamCancelState& cancel,
              bool has_sleeper, nanoseconds wait) {
  if (StreamCancelled(state, cancel)) return false;
  if (has_sleeper) return state.Sleep(wait) && !StreamCancelled(state, cancel);
  ChannelFollow& follow = state.channel_follow();
  bool woken = false;
  if (!cancel.WaitFor(wait, follow.active() ? &follow : nullptr, &woken)) {
    return false;
  }
  if (woken) state.OnChannelReady();
  return !StreamCancelled(state, cancel);
}

}  // namespace

bool WaitBeforeReopen(RetryLoopState& state, StreamCancelState& cancel,
                      bool has_sleeper, nanoseconds wait,
                      absl::Status* final_status) {
  for (;;) {
    if (!WaitOnce(state, cancel, has_sleeper, wait)) {
      *final_status = state.Cancelled();
      return false;
    }
    if (!state.waiting_for_throttle()) return true;
    switch (state.AfterThrottleWait(final_status, &wait)) {
      case RetryLoopState::ThrottleStep::kAttempt:
        return true;
      case RetryLoopState::ThrottleStep::kStop:
        return false;
      case RetryLoopState::ThrottleStep::kWait:
        break;
    }
  }
}

struct EstablishTimer::Shared {
  Mutex mu;
  CondVar cv;
  grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;
  bool fired ABSL_GUARDED_BY(mu) = false;
  // The thread calling TryCancel, without the lock; none: not cancelling.
  std::thread::id cancelling ABSL_GUARDED_BY(mu);
};

EstablishTimer::EstablishTimer(AsyncSleeper* sleeper)
    : sleeper_(sleeper != nullptr ? sleeper : &DefaultAsyncSleeper()) {}

void EstablishTimer::Start(grpc::ClientContext* context, nanoseconds timeout) {
  Stop();
  shared_ = nullptr;
  id_ = 0;
  if (timeout <= nanoseconds::zero()) return;
  auto shared = std::make_shared<Shared>();
  {
    MutexLock lock(&shared->mu);
    shared->context = context;
  }
  shared_ = shared;
  id_ = sleeper_->Schedule(timeout, [shared](bool fired) {
    if (!fired) return;
    grpc::ClientContext* context;
    {
      MutexLock lock(&shared->mu);
      context = shared->context;
      if (context == nullptr) return;  // established or over first
      shared->fired = true;
      shared->cancelling = std::this_thread::get_id();
    }
    // Without the lock: TryCancel runs the channel's interceptors. `Stop`
    // waits for this, so the context outlives it.
    CancelAttempt(*context);
    {
      MutexLock lock(&shared->mu);
      shared->cancelling = std::thread::id();
    }
    shared->cv.NotifyAll();
  });
}

void EstablishTimer::Stop() {
  if (shared_ == nullptr) return;
  bool pending;
  {
    MutexLock lock(&shared_->mu);
    pending = shared_->context != nullptr && !shared_->fired;
    shared_->context = nullptr;
    const std::thread::id self = std::this_thread::get_id();
    shared_->cv.Wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
      return shared_->cancelling == std::thread::id() ||
             shared_->cancelling == self;
    });
  }
  // Releases the queue's entry and callback now rather than at the timeout.
  if (pending && id_ != 0) sleeper_->Cancel(id_);
  id_ = 0;
}

bool EstablishTimer::fired() const {
  if (shared_ == nullptr) return false;
  MutexLock lock(&shared_->mu);
  return shared_->fired;
}

bool DecideStreamFailure(RetryLoopState& state, const absl::Status& status,
                         const grpc::ClientContext& context, bool needs_hook,
                         bool has_hook, absl::FunctionRef<bool()> resume,
                         absl::string_view no_hook, absl::string_view declined,
                         absl::Status* final_status, nanoseconds* wait) {
  if (!needs_hook) return state.OnFailure(status, context, final_status, wait);
  if (!has_hook) {
    // Not resumed still goes through OnFailure, for the retry summary, the
    // observer and the metrics.
    state.ForbidRepeat(no_hook);
    return state.OnFailure(status, context, final_status, wait);
  }
  // Decided as the resumed stream would be; if the decision is to stop,
  // the call is over and the restart is moot.
  state.RestartPolicy();
  return state.OnFailure(status, context, resume, declined, final_status, wait);
}

absl::Status NullStreamError(const MethodInfo& method) {
  return absl::InternalError(
      absl::StrCat(method.full_name, ": the stub returned no stream"));
}

absl::Status EarlyFinishError(const MethodInfo& method) {
  return absl::CancelledError(absl::StrCat(
      method.full_name, ": Finish() was called before the stream ended"));
}

absl::Status UnreadFinishError(const MethodInfo& method) {
  return absl::CancelledError(absl::StrCat(
      method.full_name,
      ": Finish() was called with responses still unread; the call was "
      "cancelled"));
}

}  // namespace internal
}  // namespace stubkit

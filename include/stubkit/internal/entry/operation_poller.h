// Copyright 2026 The stubkit Authors.
//
// The polling loops behind generated `AwaitFoo` / `AsyncAwaitFoo` (see
// stubkit/long_running_operation.h). Templates over the generated
// `google::longrunning::OperationsClient`, so the runtime library itself
// links no google/longrunning code: the user's generated library does.
//
// Not public API: called by generated code only.
#ifndef STUBKIT_INTERNAL_OPERATION_POLLER_H_
#define STUBKIT_INTERNAL_OPERATION_POLLER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/internal/api/timer_queue.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/internal/engine/call_wait.h"
#include "stubkit/long_running_operation.h"
#include "stubkit/options.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {

// The request type of a client member `R (C::*)(const A&, const Options&)`.
template <typename F>
struct UnaryMemberTraits;
template <typename C, typename R, typename A>
struct UnaryMemberTraits<R (C::*)(const A&, const Options&)> {
  using Request = A;
  using Result = R;
};

template <typename Client>
struct OperationsTraits {
  using Get = UnaryMemberTraits<decltype(&Client::GetOperation)>;
  using GetRequest = typename Get::Request;
  using Operation = typename Get::Result::value_type;
  using CancelRequest =
      typename UnaryMemberTraits<decltype(&Client::CancelOperation)>::Request;
};

// Non-template pieces (src/operation.cc).
absl::Status NoOperationsClient(absl::string_view method);
absl::Status OperationFailed(absl::string_view method, const std::string& name,
                             int code, const std::string& message,
                             std::string serialized_status);
absl::Status ResponseTypeMismatch(absl::string_view method,
                                  const std::string& name,
                                  absl::string_view type_url,
                                  absl::string_view expected);
absl::Status NoResult(absl::string_view method, const std::string& name);
absl::Status PollingTimedOut(absl::string_view method, const std::string& name,
                             int polls, std::chrono::nanoseconds elapsed,
                             const PollingPolicy& policy);
absl::Status PollingCancelled(absl::string_view method, const std::string& name,
                              bool cancel_requested,
                              const absl::Status& cancel_result);
absl::Status InvalidPollingPolicy(absl::string_view method,
                                  const PollingPolicy& policy);
// `status` (of a failed poll) with the operation's name attached.
absl::Status WithOperationName(absl::Status status, const std::string& name);
// The per-call options of each poll: the call's, without the
// `IdempotencyOption` meant for the starting call.
Options PollCallOptions(const Options& call);
// ... and of CancelOperation: also without the cancelled token.
Options CancelCallOptions(const Options& call);
// The options of a poll made with `remaining` of the polling policy's time
// limit left, so that the limit bounds the polls' retries too: the poll's
// total timeout is `remaining` (or `total_timeout`, the call's effective
// one from any layer, when set and shorter), set in the poll's own options
// since the Operations client resolves the others with its own layers. At
// the limit (`remaining` not positive), the last poll is one attempt, not
// retried.
Options PollWithinLimit(const Options& poll_call,
                        std::chrono::nanoseconds total_timeout,
                        std::chrono::nanoseconds remaining);
// The wait before the next poll, after `polls` polls: the policy's backoff,
// cut to `remaining` (positive), so that the last poll comes at the limit.
// No overflow, whatever the backoff (up to nanoseconds::max()).
std::chrono::nanoseconds PollWait(const PollingPolicy& policy, int polls,
                                  std::chrono::nanoseconds remaining);

// The result of a done operation.
template <typename Response, typename Operation>
absl::StatusOr<Response> OperationResult(absl::string_view method,
                                         const Operation& op) {
  if (op.has_error()) {
    return OperationFailed(method, op.name(), op.error().code(),
                           op.error().message(),
                           op.error().SerializeAsString());
  }
  Response response;
  if (!op.has_response()) {
    // An operation whose result is google.protobuf.Empty may leave it out.
    if (Response::descriptor()->full_name() == "google.protobuf.Empty") {
      return response;
    }
    return NoResult(method, op.name());
  }
  if (!op.response().template Is<Response>() ||
      !op.response().UnpackTo(&response)) {
    return ResponseTypeMismatch(method, op.name(), op.response().type_url(),
                                Response::descriptor()->full_name());
  }
  return response;
}

inline Clock::time_point PollNow(const Clock* clock) {
  return clock != nullptr ? clock->Now() : std::chrono::steady_clock::now();
}

// The operation `start` (a callable returning the starting call's result,
// or that result itself) started, named in any error; an invalid `policy`
// is refused before a callable `start` runs.
template <typename Operation, typename Start>
absl::StatusOr<Operation> StartOperation(const PollingPolicy& policy,
                                         absl::string_view method,
                                         Start&& start) {
  absl::StatusOr<Operation> started;
  if constexpr (std::is_invocable_v<Start>) {
    if (!policy.status().ok()) return InvalidPollingPolicy(method, policy);
    started = std::forward<Start>(start)();
    if (!started.ok()) return std::move(started).status();
  } else {
    started = std::forward<Start>(start);
    if (!started.ok()) return std::move(started).status();
    if (!policy.status().ok()) {
      return WithOperationName(InvalidPollingPolicy(method, policy),
                               started->name());
    }
  }
  return started;
}

// A cancelled poll's end: the operation left running, or also cancelled
// with CancelOperationOnCancelOption.
template <typename Client>
absl::Status EndCancelled(Client& client, const OptionsView& options,
                          const Options& call, absl::string_view method,
                          const std::string& name) {
  if (!options.get<CancelOperationOnCancelOption>()) {
    return PollingCancelled(method, name, false, absl::OkStatus());
  }
  typename OperationsTraits<Client>::CancelRequest request;
  request.set_name(name);
  auto result = client.CancelOperation(request, CancelCallOptions(call));
  return PollingCancelled(method, name, true, result.status());
}

// AwaitFoo: starts the operation (`start`, a callable returning the
// starting call's result, or that result itself) and polls it until done,
// the policy runs out or the call is cancelled. `options` are the starting
// call's effective options, `call` its per-call options. An invalid polling
// policy is refused before `start` runs, so that no operation is created
// only to be abandoned.
template <typename Response, typename Client, typename Start>
absl::StatusOr<Response> PollOperation(Client& client,
                                       const OptionsView& options,
                                       const Options& call,
                                       absl::string_view method,
                                       Start&& start) {
  using Traits = OperationsTraits<Client>;
  const PollingPolicy& policy = options.get<PollingPolicyOption>();
  absl::StatusOr<typename Traits::Operation> started =
      StartOperation<typename Traits::Operation>(policy, method,
                                                 std::forward<Start>(start));
  if (!started.ok()) return std::move(started).status();
  typename Traits::Operation op = *std::move(started);
  const Clock* clock = options.get<ClockOption>().get();
  Sleeper* sleeper = options.get<SleeperOption>().get();
  CancellationToken* token = options.get<CancellationOption>().get();
  const std::chrono::nanoseconds total_timeout =
      options.get<TotalTimeoutOption>();
  const Options poll_call = PollCallOptions(call);
  const Clock::time_point start_time = PollNow(clock);
  for (int polls = 0;; ++polls) {
    if (op.done()) return OperationResult<Response>(method, op);
    bool cancelled = token != nullptr && token->cancelled();
    if (!cancelled) {
      const std::chrono::nanoseconds elapsed = PollNow(clock) - start_time;
      if (elapsed >= policy.time_limit()) {
        return PollingTimedOut(method, op.name(), polls, elapsed, policy);
      }
      const std::chrono::nanoseconds wait =
          PollWait(policy, polls, policy.time_limit() - elapsed);
      cancelled = !SleepThrough(wait, sleeper, token);
    }
    if (cancelled)
      return EndCancelled(client, options, call, method, op.name());
    typename Traits::GetRequest request;
    request.set_name(op.name());
    auto next = client.GetOperation(
        request,
        PollWithinLimit(poll_call, total_timeout,
                        policy.time_limit() - (PollNow(clock) - start_time)));
    // A poll cancelled by the token ends as a cancelled wait does (above).
    if (!next.ok() && token != nullptr && token->cancelled()) continue;
    if (!next.ok()) return WithOperationName(next.status(), op.name());
    if (next->name().empty()) next->set_name(op.name());
    op = *std::move(next);
  }
}

// AwaitFooByName: the first GetOperation at once, then as above.
template <typename Response, typename Client>
absl::StatusOr<Response> AwaitOperationByName(Client* client,
                                              const OptionsView& options,
                                              const Options& call,
                                              absl::string_view method,
                                              const std::string& name) {
  if (client == nullptr) return NoOperationsClient(method);
  typename OperationsTraits<Client>::GetRequest request;
  request.set_name(name);
  auto op = client->GetOperation(request, PollCallOptions(call));
  if (!op.ok()) return WithOperationName(std::move(op).status(), name);
  if (op->name().empty()) op->set_name(name);
  return PollOperation<Response>(*client, options, call, method, std::move(op));
}

// The async loop: one object per awaited operation, alive while a start,
// poll, wait or cancel is in flight. Completes `done` exactly once; never
// calls it, nor the client, with `mu_` held.
template <typename Response, typename Client>
class AsyncOperationPoller : public std::enable_shared_from_this<
                                 AsyncOperationPoller<Response, Client>> {
 public:
  using Traits = OperationsTraits<Client>;
  using Operation = typename Traits::Operation;
  using Done = std::function<void(absl::StatusOr<Response>)>;

  AsyncOperationPoller(std::shared_ptr<Client> client,
                       const OptionsView& options, const Options& call,
                       absl::string_view method, Done done)
      : client_(std::move(client)),
        policy_(options.get<PollingPolicyOption>()),
        clock_(options.get<ClockOption>()),
        sleeper_owner_(options.get<AsyncSleeperOption>()),
        sleeper_(sleeper_owner_ != nullptr ? sleeper_owner_.get()
                                           : &DefaultAsyncSleeper()),
        token_(options.get<CancellationOption>()),
        cancel_operation_(options.get<CancelOperationOnCancelOption>()),
        total_timeout_(options.get<TotalTimeoutOption>()),
        call_(call),
        poll_call_(PollCallOptions(call)),
        method_(method),
        done_(std::move(done)) {}

  // The callback for the starting call (or the first GetOperation).
  AsyncCallback<Operation> Started() {
    auto self = this->shared_from_this();
    return [self](absl::StatusOr<Operation> op) {
      self->OnStarted(std::move(op));
    };
  }

 private:
  void OnStarted(absl::StatusOr<Operation> op) {
    if (!op.ok()) return Finish(std::move(op).status());
    if (!policy_.status().ok()) {
      return Finish(WithOperationName(InvalidPollingPolicy(method_, policy_),
                                      op->name()));
    }
    name_ = op->name();
    start_ = PollNow(clock_.get());
    if (token_ != nullptr) {
      std::weak_ptr<AsyncOperationPoller> weak = this->shared_from_this();
      // Runs inline when the token is already cancelled.
      const uint64_t id = token_->AddCallback([weak] {
        if (auto self = weak.lock()) self->OnCancel();
      });
      MutexLock lock(&mu_);
      cancel_callback_ = id;
    }
    OnOperation(*std::move(op));
  }

  void OnPolled(absl::StatusOr<Operation> op) {
    // A poll cancelled by the token ends as a cancelled wait does.
    if (!op.ok() && token_ != nullptr && token_->cancelled()) {
      return Cancelled();
    }
    if (!op.ok()) {
      return Finish(WithOperationName(std::move(op).status(), name_));
    }
    if (op->name().empty()) op->set_name(name_);
    OnOperation(*std::move(op));
  }

  void OnOperation(Operation op) {
    if (op.done()) return Finish(OperationResult<Response>(method_, op));
    if (token_ != nullptr && token_->cancelled()) return Cancelled();
    const std::chrono::nanoseconds elapsed = PollNow(clock_.get()) - start_;
    if (elapsed >= policy_.time_limit()) {
      return Finish(PollingTimedOut(method_, name_, polls_, elapsed, policy_));
    }
    const std::chrono::nanoseconds wait =
        PollWait(policy_, polls_, policy_.time_limit() - elapsed);
    ++polls_;
    uint64_t round;
    {
      MutexLock lock(&mu_);
      round = ++round_;
      timer_state_ = TimerState::kScheduling;
    }
    auto self = this->shared_from_this();
    const uint64_t id =
        sleeper_->Schedule(wait, [self](bool fired) { self->OnTimer(fired); });
    bool cancel_now = false;
    {
      MutexLock lock(&mu_);
      // Unless the wait already ended (a sleeper may run it inline) and a
      // later round began.
      if (round_ == round && timer_state_ == TimerState::kScheduling) {
        timer_state_ = TimerState::kPending;
        timer_id_ = id;
        cancel_now = cancelled_;
      }
    }
    if (cancel_now) sleeper_->Cancel(id);
  }

  void OnTimer(bool fired) {
    {
      MutexLock lock(&mu_);
      timer_state_ = TimerState::kIdle;
    }
    if (!fired || (token_ != nullptr && token_->cancelled()))
      return Cancelled();
    typename Traits::GetRequest request;
    request.set_name(name_);
    auto self = this->shared_from_this();
    client_->AsyncGetOperation(
        request,
        [self](absl::StatusOr<Operation> op) { self->OnPolled(std::move(op)); },
        PollWithinLimit(
            poll_call_, total_timeout_,
            policy_.time_limit() - (PollNow(clock_.get()) - start_)));
  }

  // On the thread cancelling the token.
  void OnCancel() {
    uint64_t id = 0;
    {
      MutexLock lock(&mu_);
      cancelled_ = true;
      if (timer_state_ != TimerState::kPending) return;
      id = timer_id_;
    }
    sleeper_->Cancel(id);  // runs OnTimer(false) unless it already ran
  }

  void Cancelled() {
    if (!cancel_operation_) {
      return Finish(PollingCancelled(method_, name_, false, absl::OkStatus()));
    }
    typename Traits::CancelRequest request;
    request.set_name(name_);
    auto self = this->shared_from_this();
    client_->AsyncCancelOperation(
        request,
        [self](auto result) {
          self->Finish(PollingCancelled(self->method_, self->name_, true,
                                        result.status()));
        },
        CancelCallOptions(call_));
  }

  void Finish(absl::StatusOr<Response> result) {
    uint64_t callback = 0;
    {
      MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
      callback = cancel_callback_;
      cancel_callback_ = 0;
    }
    if (token_ != nullptr && callback != 0) token_->RemoveCallback(callback);
    Done done = std::move(done_);
    done(std::move(result));
  }

  enum class TimerState { kIdle, kScheduling, kPending };

  std::shared_ptr<Client> client_;
  const PollingPolicy policy_;
  const std::shared_ptr<Clock> clock_;
  const std::shared_ptr<AsyncSleeper> sleeper_owner_;
  AsyncSleeper* const sleeper_;
  const std::shared_ptr<CancellationToken> token_;
  const bool cancel_operation_;
  const std::chrono::nanoseconds total_timeout_;
  const Options call_;
  const Options poll_call_;
  const std::string method_;
  Done done_;
  // Touched by one step of the loop at a time (start, poll, timer).
  std::string name_;
  Clock::time_point start_;
  int polls_ = 0;

  Mutex mu_;
  TimerState timer_state_ ABSL_GUARDED_BY(mu_) = TimerState::kIdle;
  uint64_t timer_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t cancel_callback_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// AsyncAwaitFoo: the future of the result and the callback to start the
// call with; no callback (and a ready future) without an Operations client.
template <typename Response, typename Client>
std::pair<std::future<absl::StatusOr<Response>>,
          AsyncCallback<typename OperationsTraits<Client>::Operation>>
AsyncAwaitOperation(std::shared_ptr<Client> client, const OptionsView& options,
                    const Options& call, absl::string_view method) {
  auto [future, fulfil] = FulfilPromise<Response>::Make();
  if (client == nullptr) {
    fulfil(NoOperationsClient(method));
    return {std::move(future), nullptr};
  }
  // Refused before the starting call (no callback: nothing is started).
  const PollingPolicy& policy = options.get<PollingPolicyOption>();
  if (!policy.status().ok()) {
    fulfil(InvalidPollingPolicy(method, policy));
    return {std::move(future), nullptr};
  }
  auto poller = std::make_shared<AsyncOperationPoller<Response, Client>>(
      std::move(client), options, call, method, std::move(fulfil));
  return {std::move(future), poller->Started()};
}

// AsyncAwaitFooByName: the first GetOperation, then as above.
template <typename Response, typename Client>
std::future<absl::StatusOr<Response>> AsyncAwaitOperationByName(
    std::shared_ptr<Client> client, const OptionsView& options,
    const Options& call, absl::string_view method, const std::string& name) {
  Client* raw = client.get();
  auto [future, started] =
      AsyncAwaitOperation<Response>(std::move(client), options, call, method);
  if (started == nullptr) return std::move(future);
  typename OperationsTraits<Client>::GetRequest request;
  request.set_name(name);
  raw->AsyncGetOperation(
      request,
      [name, started = std::move(started)](auto op) mutable {
        if (!op.ok()) {
          return started(WithOperationName(std::move(op).status(), name));
        }
        if (op->name().empty()) op->set_name(name);
        started(std::move(op));
      },
      PollCallOptions(call));
  return std::move(future);
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_OPERATION_POLLER_H_

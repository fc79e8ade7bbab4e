// Copyright 2026 The stubkit Authors.
//
// The base of every async operation (the async retry loop, hedging, the
// async server stream): what they share from construction to the end.
// Not API.

#ifndef STUBKIT_INTERNAL_ASYNC_CALL_H_
#define STUBKIT_INTERNAL_ASYNC_CALL_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "stubkit/clock.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/method.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {

// Async calls keep gRPC initialised for the life of the process: a callback
// may still be inside gRPC when the application drops its last channel and
// server, and gRPC 1.51 must not shut down under it. It also keeps gRPC's
// shared callback queue referenced, so that an operation may drop the last
// reference to a channel from inside that channel's callback (see
// src/internal/engine/async_call.cc for the evidence): operations are released
// inline, on whatever thread they finish.
void KeepGrpcInitialised();

// One async call: its own copies of the option layers (the caller's need not
// outlive it; values are shared, so copies are cheap), the view over them,
// the call's `RetryLoopState`, and the sleeper its waits go to. Owned by
// shared_ptr: gRPC and timer callbacks keep it alive.
class AsyncCallBase : public std::enable_shared_from_this<AsyncCallBase> {
 public:
  AsyncCallBase(const AsyncCallBase&) = delete;
  AsyncCallBase& operator=(const AsyncCallBase&) = delete;
  virtual ~AsyncCallBase();

 protected:
  AsyncCallBase(const MethodInfo& method, Options call, Options client);

  const OptionsView& options() const { return view_; }
  RetryLoopState& state() { return state_; }
  AsyncSleeper& sleeper() const { return *sleeper_; }

  // Registers `OnCancel` with the call's `CancellationOption` token, if any
  // (inline when it is already cancelled; a callback after the operation is
  // gone does nothing). Returns the registration to pass to
  // `UnwatchCancellation` when the call ends, 0 for none.
  // Inline checks: most calls have no token, and pay nothing more.
  uint64_t WatchCancellation() {
    return state_.cancellation() == nullptr ? 0 : AddCancelCallback();
  }
  void UnwatchCancellation(uint64_t registration) {
    if (registration != 0) RemoveCancelCallback(registration);
  }

  // The user's token was cancelled.
  virtual void OnCancel() = 0;
  // Hands the call's result over: `status` is the error, or OK for the
  // stored response. Called once.
  virtual void Deliver(absl::Status status) = 0;

 private:
  uint64_t AddCancelCallback();
  void RemoveCancelCallback(uint64_t registration);

  Options call_;
  Options client_;
  OptionsView view_;
  RetryLoopState state_;
  std::shared_ptr<AsyncSleeper> sleeper_owner_;
  AsyncSleeper* sleeper_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ASYNC_CALL_H_

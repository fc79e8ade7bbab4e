// Copyright 2026 The stubkit Authors.
//
// CancellationToken: cancels calls, sync or async, from any thread.
//
// Pass a token in a call's options; `Cancel()` cancels the attempt in flight
// (`grpc::ClientContext::TryCancel`) and ends any backoff wait at once. The
// call then returns `CANCELLED`. One token may serve several calls.
// Latency, async callbacks and their threads: docs/cancellation.md.
//
//   auto token = std::make_shared<stubkit::CancellationToken>();
//   std::thread caller([&] {
//     auto r = client.Echo(request, stubkit::Options{}
//         .set<stubkit::CancellationOption>(token));
//     // r.status().code() == absl::StatusCode::kCancelled
//   });
//   token->Cancel();

#ifndef STUBKIT_CANCELLATION_H_
#define STUBKIT_CANCELLATION_H_

#include <grpcpp/client_context.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "stubkit/internal/base/mutex.h"

namespace stubkit {

class CancellationToken {
 public:
  CancellationToken() = default;
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  // Cancels every call using this token, now and later. Idempotent.
  // No lock of the token is held while gRPC cancels the attempts in flight
  // (which runs client interceptors on this thread), nor while the
  // callbacks below run. They run on this thread, before `Cancel` returns, and
  // through them an async call waiting in backoff usually completes here
  // too: its completion callback runs on this thread. Don't call `Cancel`
  // holding a lock such a callback takes. A call with an attempt in flight
  // completes later, on gRPC's thread.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool cancelled() const;

  // The rest is for the retry loops.

  // Tracks the context of an attempt in flight; false if already cancelled.
  bool Attach(grpc::ClientContext* context);
  void Detach(grpc::ClientContext* context);
  // Waits for `duration` on the steady clock; returns false if cancelled
  // first (or already).
  bool WaitFor(std::chrono::nanoseconds duration);
  // Runs `callback` once on `Cancel()`, on the thread calling it (at once,
  // on this thread, if already cancelled), unless removed first. Callbacks
  // run without the token's lock held.
  uint64_t AddCallback(std::function<void()> callback) ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveCallback(uint64_t id);

 private:
  // Not absl::Mutex: abseil 20220623's timed waits follow the wall clock
  // (see stubkit/internal/api/timer_queue.h); internal::CondVar waits on the
  // steady clock.
  mutable internal::Mutex mu_;
  internal::CondVar cancelled_cv_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The thread running `Cancel`'s TryCancel loop, if any.
  std::thread::id cancelling_ ABSL_GUARDED_BY(mu_);
  std::vector<grpc::ClientContext*> contexts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, std::function<void()>>> callbacks_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_callback_id_ ABSL_GUARDED_BY(mu_) = 1;
};

struct CancellationOption {
  using Type = std::shared_ptr<CancellationToken>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_CANCELLATION_H_

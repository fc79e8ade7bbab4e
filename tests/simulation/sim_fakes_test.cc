// Copyright 2026 The stubkit Authors.
//
// The fake transport's two seams into the code under test (sim_fakes.h,
// stubkit/internal/attempt_context.h), one directed case each, so that a
// seam that drops what it carries fails here by name rather than as a
// model violation somewhere in the random scenarios: a scripted pushback
// reaches the retry decision and the hedging decision, and a cancel by the
// call's token ends an attempt that would otherwise hang.

#include "tests/simulation/sim_fakes.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "stubkit/cancellation.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/entry/unary_call.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace sim {
namespace {

constexpr MethodInfo kGet{"sim.Fakes.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent, 0};

int64_t Ms(nanoseconds d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

AttemptScript FailsWithPushback(int64_t pushback_ms) {
  AttemptScript s;
  s.kind = AttemptScript::Kind::kFail;
  s.code = grpc::StatusCode::UNAVAILABLE;
  s.latency = milliseconds(10);
  s.pushback = Hint::kValid;
  s.pushback_ms = pushback_ms;
  return s;
}

struct World {
  std::shared_ptr<SimScheduler> sched =
      std::make_shared<SimScheduler>(SimScheduler::Options{});
  SimTransport transport{sched.get()};
  std::vector<AttemptEvent> events;
  Options call;  // empty
  Options options;

  World() {
    options.set<ClockOption>(sched)
        .set<SleeperOption>(sched)
        .set<AsyncSleeperOption>(sched)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
        .set<RetryObserverOption>(
            [this](const AttemptEvent& e) { events.push_back(e); });
  }
  absl::StatusOr<Msg> RunSync() {
    SimTransport* t = &transport;
    return RetryLoop<Msg>(
        kGet, OptionsView(call, options),
        [t](grpc::ClientContext& context) { return t->RunSync(0, context); });
  }
  const std::vector<std::unique_ptr<AttemptRecord>>& attempts() {
    return transport.attempts(0);
  }
};

TEST(SimFakes, ScriptedPushbackReachesTheRetryDecision) {
  World w;
  w.transport.SetScripts(0, {FailsWithPushback(700)});
  ASSERT_TRUE(w.RunSync().ok());
  ASSERT_EQ(w.attempts().size(), 2u);
  // The backoff alone would wait at most its first delay (100 ms).
  EXPECT_EQ(Ms(w.attempts()[1]->start - w.attempts()[0]->end), 700);
  ASSERT_FALSE(w.events.empty());
  EXPECT_EQ(w.events[0].wait_reason, WaitReason::kPushback);
  EXPECT_EQ(Ms(w.events[0].wait), 700);
}

TEST(SimFakes, ScriptedPushbackReachesTheHedgingDecision) {
  World w;
  w.options.set<HedgingPolicyOption>(
      HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
          std::chrono::seconds(5)));  // UNAVAILABLE: non-fatal
  w.transport.SetScripts(0, {FailsWithPushback(300)});
  bool done = false;
  absl::Status result;
  SimTransport* t = &w.transport;
  internal::RunAsyncUnary<Msg>(
      kGet, OptionsView(w.call, w.options),
      [t](grpc::ClientContext& context, const OptionsView&,
          AsyncCallback<Msg> d) { t->StartAsync(0, context, std::move(d)); },
      [&](absl::StatusOr<Msg> r) {
        result = r.status();
        done = true;
      });
  w.sched->RunUntil(TimePoint::max(), [&] { return done; });
  ASSERT_TRUE(done);
  EXPECT_TRUE(result.ok()) << result;
  ASSERT_EQ(w.attempts().size(), 2u);
  // A non-fatal failure sends the next hedge at once, unless the server
  // pushed back: then after its pushback.
  EXPECT_EQ(Ms(w.attempts()[1]->start - w.attempts()[0]->end), 300);
}

TEST(SimFakes, TokenCancelEndsAHangingAttempt) {
  World w;
  AttemptScript hang;
  hang.kind = AttemptScript::Kind::kHang;
  w.transport.SetScripts(0, {hang});
  auto token = std::make_shared<CancellationToken>();
  w.options.set<CancellationOption>(token);
  const TimePoint cancel_at = w.sched->Now() + milliseconds(50);
  w.sched->PostAt(cancel_at, 0, [token] { token->Cancel(); });
  absl::StatusOr<Msg> result = w.RunSync();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(w.transport.sync_hang());
  ASSERT_EQ(w.attempts().size(), 1u);
  EXPECT_TRUE(w.attempts()[0]->by_cancel);
  EXPECT_EQ(Ms(w.attempts()[0]->end - cancel_at), 0);
}

}  // namespace
}  // namespace sim
}  // namespace stubkit

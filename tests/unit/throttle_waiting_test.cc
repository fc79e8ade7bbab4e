// Copyright 2026 The stubkit Authors.
//
// The retry throttle's waiting mode (stubkit/retry_throttle.h): each rule on
// its own, then through the sync and async loops, on a fake clock.

#include <atomic>
#include <chrono>
#include <future>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using time_point = RetryThrottle::time_point;

constexpr MethodInfo kGet{"test.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};
constexpr MethodInfo kCreate{"test.Service.Create", RpcKind::kUnary,
                             Idempotency::kNonIdempotent};

RetryThrottle::WaitForRecovery Waiting(nanoseconds interval, int probes) {
  RetryThrottle::WaitForRecovery w;
  w.probe_interval = interval;
  w.probes = probes;
  return w;
}

// A throttle already down: its bucket refuses retries.
using Release = RetryThrottle::WaitForRecovery::Release;

std::shared_ptr<RetryThrottle> DownThrottle(
    nanoseconds interval, int probes, double max_tokens = 4,
    double release_ratio = 0.5, Release release = Release::kAdaptive) {
  RetryThrottle::WaitForRecovery waiting = Waiting(interval, probes);
  waiting.release_ratio = release_ratio;
  waiting.release = release;
  auto throttle =
      std::make_shared<RetryThrottle>(RetryThrottle::Config()
                                          .WithMaxTokens(max_tokens)
                                          .WithTokenRatio(0.5)
                                          .WithWaitForRecovery(waiting));
  while (throttle->OnRetryableFailure()) {
  }
  return throttle;
}

TEST(ThrottleWaitingRules, InvalidParametersAreReported) {
  EXPECT_THAT(
      RetryThrottle(RetryThrottle::Config()
                        .WithMaxTokens(10)
                        .WithTokenRatio(0.1)
                        .WithWaitForRecovery(Waiting(nanoseconds(0), 1)))
          .status()
          .message(),
      HasSubstr("probe_interval"));
  EXPECT_THAT(RetryThrottle(RetryThrottle::Config()
                                .WithMaxTokens(10)
                                .WithTokenRatio(0.1)
                                .WithWaitForRecovery(Waiting(seconds(-1), 1)))
                  .status()
                  .message(),
              HasSubstr("probe_interval"));
  EXPECT_THAT(RetryThrottle(RetryThrottle::Config()
                                .WithMaxTokens(10)
                                .WithTokenRatio(0.1)
                                .WithWaitForRecovery(Waiting(minutes(61), 1)))
                  .status()
                  .message(),
              HasSubstr("probe_interval"));
  EXPECT_THAT(RetryThrottle(RetryThrottle::Config()
                                .WithMaxTokens(10)
                                .WithTokenRatio(0.1)
                                .WithWaitForRecovery(Waiting(seconds(1), 0)))
                  .status()
                  .message(),
              HasSubstr("probes"));
  EXPECT_THAT(RetryThrottle(RetryThrottle::Config()
                                .WithMaxTokens(10)
                                .WithTokenRatio(0.1)
                                .WithWaitForRecovery(Waiting(seconds(1), 1001)))
                  .status()
                  .message(),
              HasSubstr("probes"));
  for (double ratio :
       {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    RetryThrottle::WaitForRecovery w = Waiting(seconds(1), 1);
    w.release_ratio = ratio;
    EXPECT_THAT(RetryThrottle(RetryThrottle::Config()
                                  .WithMaxTokens(10)
                                  .WithTokenRatio(0.1)
                                  .WithWaitForRecovery(w))
                    .status()
                    .message(),
                HasSubstr("release_ratio must be in (0, 1]"))
        << ratio;
  }
  {
    RetryThrottle::WaitForRecovery w = Waiting(seconds(1), 1);
    w.release = static_cast<Release>(7);
    EXPECT_EQ(RetryThrottle(RetryThrottle::Config()
                                .WithMaxTokens(10)
                                .WithTokenRatio(0.1)
                                .WithWaitForRecovery(w))
                  .status()
                  .message(),
              "RetryThrottle::WaitForRecovery: release must be kAdaptive or "
              "kProportional, got 7");
  }
  // The bucket's own checks come first.
  EXPECT_THAT(RetryThrottle(RetryThrottle::Config()
                                .WithMaxTokens(0)
                                .WithTokenRatio(0.1)
                                .WithWaitForRecovery(Waiting(seconds(1), 1)))
                  .status()
                  .message(),
              HasSubstr("max_tokens"));
  RetryThrottle ok(RetryThrottle::Config()
                       .WithMaxTokens(10)
                       .WithTokenRatio(0.1)
                       .WithWaitForRecovery(RetryThrottle::WaitForRecovery{}));
  EXPECT_TRUE(ok.status().ok());
  EXPECT_TRUE(ok.waiting_mode());
  EXPECT_FALSE(
      RetryThrottle(
          RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1))
          .waiting_mode());
}

// The bad-input rows of docs/reliability.md: a call with such a throttle
// fails before sending anything, sync and async alike.
TEST(ThrottleWaitingRules, InvalidParametersFailCallsBeforeSending) {
  for (const auto& [throttle, message] :
       std::vector<std::pair<std::shared_ptr<RetryThrottle>, std::string>>{
           {std::make_shared<RetryThrottle>(
                RetryThrottle::Config()
                    .WithMaxTokens(10)
                    .WithTokenRatio(0.1)
                    .WithWaitForRecovery(Waiting(nanoseconds(0), 1))),
            "INVALID_ARGUMENT: RetryThrottle::WaitForRecovery: probe_interval "
            "must be in (0, 1h], got 0"},
           {std::make_shared<RetryThrottle>(
                RetryThrottle::Config()
                    .WithMaxTokens(10)
                    .WithTokenRatio(0.1)
                    .WithWaitForRecovery(Waiting(minutes(61), 1))),
            "INVALID_ARGUMENT: RetryThrottle::WaitForRecovery: probe_interval "
            "must be in (0, 1h], got 1h1m"},
           {std::make_shared<RetryThrottle>(
                RetryThrottle::Config()
                    .WithMaxTokens(10)
                    .WithTokenRatio(0.1)
                    .WithWaitForRecovery(Waiting(seconds(1), 0))),
            "INVALID_ARGUMENT: RetryThrottle::WaitForRecovery: probes must be "
            "in [1, 1000], got 0"}}) {
    const Options options = Options{}.set<RetryThrottleOption>(throttle);
    const Options none;
    int attempts = 0;
    absl::StatusOr<int> r =
        RetryLoop<int>(kGet, OptionsView(none, options),
                       [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                         ++attempts;
                         return 1;
                       });
    EXPECT_THAT(r.status().ToString(), ::testing::StartsWith(message));
    EXPECT_EQ(GetRetrySummary(r.status())->stop_reason,
              StopReason::kInvalidArgument);
    std::future<absl::StatusOr<int>> f = AsyncRetryLoop<int>(
        kGet, Options{}, options,
        [&](grpc::ClientContext&, const OptionsView&, AsyncCallback<int> done) {
          ++attempts;
          done(1);
        });
    EXPECT_THAT(f.get().status().ToString(), ::testing::StartsWith(message));
    EXPECT_EQ(attempts, 0);
  }
}

TEST(ThrottleWaitingRules, AtMostProbesPerIntervalWhileDown) {
  auto throttle = DownThrottle(seconds(1), 3);
  ASSERT_TRUE(throttle->down());
  for (int i = 0; i < 50; ++i) throttle->BeginWait();
  // Every waiter polls every 10 ms for 10 s: 3 admissions per second, each
  // at least 1/3 s after the one before.
  const time_point t0 = FakeClock().Now();
  std::vector<time_point> admitted;
  for (int tick = 0; tick < 1000; ++tick) {
    const time_point now = t0 + milliseconds(10) * tick;
    for (int w = 0; w < throttle->waiters(); ++w) {
      if (throttle->TryAdmit(now)) admitted.push_back(now);
    }
  }
  ASSERT_EQ(admitted.size(), 30u);
  for (size_t i = 1; i < admitted.size(); ++i) {
    EXPECT_GE(admitted[i] - admitted[i - 1], nanoseconds(seconds(1)) / 3);
  }
  for (size_t i = 3; i < admitted.size(); ++i) {  // any window of 1 s
    EXPECT_GE(admitted[i] - admitted[i - 3],
              nanoseconds(seconds(1)) - milliseconds(10));
  }
  EXPECT_EQ(throttle->waiters(), 20);
}

// Issue 39, item 10: the all-or-nothing admission. When the second
// admission refuses, the throttle is left as it was.
TEST(ThrottleWaitingRules, AnAdmissionItsPartnerRefusesTakesNothing) {
  auto throttle = DownThrottle(seconds(1), 1);
  const time_point t0 = FakeClock().Now();
  throttle->BeginWait();
  int asked = 0;
  EXPECT_FALSE(throttle->TryAdmit(t0, [&] {
    ++asked;
    return false;
  }));
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(throttle->waiters(), 1);
  EXPECT_TRUE(throttle->TryAdmit(t0));  // the slot is still free
  EXPECT_EQ(throttle->waiters(), 0);
  // Not asked when the throttle itself refuses (its slot was just used).
  throttle->BeginWait();
  EXPECT_FALSE(throttle->TryAdmit(t0 + milliseconds(10), [&] {
    ++asked;
    return true;
  }));
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(throttle->TryAdmit(t0 + seconds(1), [&] {
    ++asked;
    return true;
  }));
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(throttle->waiters(), 0);
}

// Issue 40: the loop asks for the release through the call's admission
// source. With a budget too, both release or neither, and the refusal names
// the budget and its window.
TEST(ThrottleWaitingRules, TheCallsAdmissionReleasesThrottleAndBudgetTogether) {
  auto throttle = DownThrottle(seconds(1), 1);
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(seconds(2))
                         .WithMinRetriesPerSecond(1)
                         .WithPercentCanRetry(0));
  const time_point t0 = FakeClock().Now();
  while (budget.TryWithdraw(t0)) {
  }
  throttle->BeginWait();
  internal::CallAdmission both(throttle.get(), true, &budget, nullptr);
  EXPECT_FALSE(both.get()->TryRelease(t0, [] { return true; }));
  ASSERT_NE(both.get()->Refuser(), nullptr);
  EXPECT_EQ(both.get()->Refuser()->RefillWindow(), seconds(2));
  EXPECT_EQ(throttle->waiters(), 1);  // the throttle's slot is left
  internal::CallAdmission throttle_only(throttle.get(), true, nullptr, nullptr);
  EXPECT_TRUE(throttle_only.get()->TryRelease(t0, [] { return true; }));
  EXPECT_EQ(throttle->waiters(), 0);
  // The throttle refuses (its slot was just used): the budget is not asked,
  // and the refusal is the throttle's, with no window.
  throttle->BeginWait();
  EXPECT_FALSE(both.get()->TryRelease(t0 + milliseconds(10), [] {
    ADD_FAILURE() << "asked past a refusal";
    return true;
  }));
  EXPECT_EQ(both.get()->Refuser()->RefillWindow(), nanoseconds::zero());
  // A second later, with the budget refilled: both let the call go.
  EXPECT_TRUE(both.get()->TryRelease(t0 + seconds(3), [] { return true; }));
  EXPECT_EQ(throttle->waiters(), 0);
}

// Polls `polls` times every 10 ms over [from, to) and counts admissions;
// `success_every` > 0: a call that did not wait succeeds every that many
// ticks (before the polls of its tick).
int PollFor(RetryThrottle& throttle, time_point from, time_point to, int polls,
            int success_every = 0,
            std::vector<time_point>* admitted = nullptr) {
  int released = 0;
  int tick = 0;
  for (time_point now = from; now < to; now += milliseconds(10), ++tick) {
    if (success_every > 0 && tick % success_every == success_every / 2) {
      throttle.OnSuccess();
    }
    for (int w = 0; w < polls; ++w) {
      if (throttle.TryAdmit(now)) {
        ++released;
        if (admitted != nullptr) admitted->push_back(now);
      }
    }
  }
  return released;
}

TEST(ThrottleWaitingRules, ProportionalReleasePacedByTheRateOfNewSuccesses) {
  auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/8,
                               /*release_ratio=*/0.5, Release::kProportional);
  for (int i = 0; i < 1000; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  // The probe pace first: one admission, then none until 1 s later.
  EXPECT_TRUE(throttle->TryAdmit(t0));
  EXPECT_FALSE(throttle->TryAdmit(t0 + milliseconds(500)));
  // A success: recovered. A waited call's success does not count in R.
  throttle->OnWaitedSuccess();
  EXPECT_FALSE(throttle->down());
  // New calls succeed 10 times a second: R ramps up over the first
  // second, then waiting calls go at release_ratio (0.5) * 10/s, one every
  // 200 ms, never two at once.
  const int ramp = PollFor(*throttle, t0 + seconds(1), t0 + seconds(3), 20, 10);
  EXPECT_GE(ramp, 5);
  EXPECT_LE(ramp, 10);
  EXPECT_EQ(throttle->release_pace(), 0) << "the adaptive pace only";
  std::vector<time_point> admitted;
  EXPECT_EQ(
      PollFor(*throttle, t0 + seconds(3), t0 + seconds(13), 20, 10, &admitted),
      50);
  for (size_t i = 1; i < admitted.size(); ++i) {
    EXPECT_GE(admitted[i] - admitted[i - 1], milliseconds(200));
  }
  // R is the highest rate since the recovery: when the new load stops, the
  // backlog drains on at the same pace.
  EXPECT_EQ(PollFor(*throttle, t0 + seconds(13), t0 + seconds(23), 20), 50);
  // A refused retry makes it down again and drops R (the successes refilled
  // the bucket: it takes a few failures to refuse).
  while (throttle->OnRetryableFailure()) {
  }
  EXPECT_TRUE(throttle->down());
  EXPECT_EQ(PollFor(*throttle, t0 + seconds(23), t0 + seconds(33), 20), 10);
  // Recovered by a waited call alone: the probe pace is the floor.
  throttle->OnWaitedSuccess();
  EXPECT_EQ(PollFor(*throttle, t0 + seconds(33), t0 + seconds(43), 20), 10);
  EXPECT_EQ(throttle->waiters(), 1000 - 1 - ramp - 50 - 50 - 10 - 10);
}

TEST(ThrottleWaitingRules, ProportionalNoBurstAfterABurstOfNewSuccesses) {
  auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/10,
                               /*release_ratio=*/0.5, Release::kProportional);
  for (int i = 0; i < 1000; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  throttle->OnSuccess();                // recovered
  EXPECT_TRUE(throttle->TryAdmit(t0));  // opens the measuring window
  // 100 new calls succeed at once: R counts them over a whole interval
  // (100/s), so waiting calls go at 0.5 * 100/s, one every 20 ms, not at
  // once.
  for (int i = 0; i < 100; ++i) throttle->OnSuccess();
  int released = 0;
  for (int i = 0; i < 1000; ++i) {
    released += throttle->TryAdmit(t0 + milliseconds(1));
  }
  EXPECT_EQ(released, 0);  // 1 ms after the last admission
  std::vector<time_point> admitted;
  released = PollFor(*throttle, t0 + milliseconds(20), t0 + seconds(2), 100, 0,
                     &admitted);
  EXPECT_GE(released, 95);
  EXPECT_LE(released, 100);
  for (size_t i = 1; i < admitted.size(); ++i) {
    EXPECT_GE(admitted[i] - admitted[i - 1], milliseconds(20));
  }
}

// kAdaptive: each release that succeeds adds 1/interval to the pace while
// calls wait, so the releases double every interval: 1, 2, 4, 8, ...
TEST(ThrottleWaitingRules, AdaptiveSlowStartDoublesEveryInterval) {
  auto throttle = DownThrottle(seconds(1), 1);
  for (int i = 0; i < 10000; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  throttle->OnSuccess();  // recovered
  std::vector<int> per_second(6);
  // Every waiter polls every 10 ms; a release succeeds 10 ms later.
  std::vector<time_point> in_flight;
  for (time_point now = t0; now < t0 + seconds(6); now += milliseconds(10)) {
    for (time_point started : in_flight) {
      if (now - started >= milliseconds(10)) throttle->OnWaitedSuccess();
    }
    in_flight.clear();
    for (int w = 0; w < 200; ++w) {
      if (throttle->TryAdmit(now)) {
        ++per_second[(now - t0) / seconds(1)];
        in_flight.push_back(now);
      }
    }
  }
  // Paced, not in bursts: each second's releases are about twice the last.
  for (size_t i = 1; i < per_second.size(); ++i) {
    EXPECT_GE(per_second[i], per_second[i - 1] * 3 / 2) << i;
    EXPECT_LE(per_second[i], per_second[i - 1] * 3 + 1) << i;
  }
  EXPECT_GE(per_second[5], 16);
  EXPECT_GE(throttle->release_pace(), 32);
}

// An overload answer cuts the pace to 0.7 of itself once per round: failures
// of attempts sent before the cut do not cut again, and the pace never
// falls below the probe pace. After the first cut it grows by one probe
// pace per interval.
TEST(ThrottleWaitingRules, AdaptiveOverloadCutsOncePerRound) {
  auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/1000);
  for (int i = 0; i < 10000; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  throttle->OnSuccess();
  ASSERT_TRUE(throttle->TryAdmit(t0));
  EXPECT_DOUBLE_EQ(throttle->release_pace(), 1);
  for (int i = 0; i < 99; ++i) throttle->OnWaitedSuccess();
  EXPECT_NEAR(throttle->release_pace(), 100, 1e-6);
  // A new call sent after the first release fails: cut.
  EXPECT_TRUE(throttle->OnRetryableFailure(t0 + milliseconds(5),
                                           t0 + milliseconds(20)));
  EXPECT_NEAR(throttle->release_pace(), 70, 1e-6);
  // Sent before that cut: the same overload, already acted on.
  throttle->OnRetryableFailure(t0 + milliseconds(10), t0 + milliseconds(30));
  EXPECT_NEAR(throttle->release_pace(), 70, 1e-6);
  // Sent after it: a new round.
  throttle->OnRetryableFailure(t0 + milliseconds(25), t0 + milliseconds(40));
  EXPECT_NEAR(throttle->release_pace(), 49, 1e-6);
  // A failure whose attempt time is unknown (a hedge's) does not cut.
  throttle->OnRetryableFailure();
  EXPECT_NEAR(throttle->release_pace(), 49, 1e-6);
  // Additive increase: 49 successes (a second's releases) add about 1/s.
  for (int i = 0; i < 49; ++i) throttle->OnWaitedSuccess();
  EXPECT_NEAR(throttle->release_pace(), 50, 0.02);
  // The floor is the probe pace.
  for (int i = 0; i < 50; ++i) {
    const time_point at = t0 + seconds(1) + milliseconds(10) * i;
    throttle->OnRetryableFailure(at, at);
  }
  EXPECT_DOUBLE_EQ(throttle->release_pace(), 1);
  // The admissions follow the pace: 1/s now.
  EXPECT_EQ(PollFor(*throttle, t0 + seconds(2), t0 + seconds(12), 20), 10);
}

// The pace grows only while calls wait, and a refused retry (down again)
// restarts the search at the probe pace, slow start ending at 0.7 of the
// pace before.
TEST(ThrottleWaitingRules, AdaptivePaceIsNotBankedAndRestartsWhenDown) {
  auto throttle = DownThrottle(seconds(1), 2, /*max_tokens=*/4);
  throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  throttle->OnSuccess();
  ASSERT_TRUE(throttle->TryAdmit(t0));  // the last waiter
  EXPECT_DOUBLE_EQ(throttle->release_pace(), 2);
  for (int i = 0; i < 10; ++i) throttle->OnWaitedSuccess();
  EXPECT_DOUBLE_EQ(throttle->release_pace(), 2) << "no one waits";
  for (int i = 0; i < 100; ++i) throttle->BeginWait();
  for (int i = 0; i < 18; ++i) throttle->OnWaitedSuccess();
  EXPECT_NEAR(throttle->release_pace(), 20, 1e-6);
  while (throttle->OnRetryableFailure()) {
  }
  EXPECT_TRUE(throttle->down());
  EXPECT_DOUBLE_EQ(throttle->release_pace(), 0);
  // While down: the probe pace (2 per second).
  EXPECT_EQ(PollFor(*throttle, t0 + seconds(1), t0 + seconds(2), 20), 2);
  throttle->OnSuccess();
  EXPECT_TRUE(throttle->TryAdmit(t0 + seconds(3)));
  EXPECT_DOUBLE_EQ(throttle->release_pace(), 2);
  // Slow start up to 14/s (0.7 * 20), then one probe pace per interval.
  for (int i = 0; i < 12; ++i) throttle->OnWaitedSuccess();
  EXPECT_NEAR(throttle->release_pace(), 14, 1e-6);
  throttle->OnWaitedSuccess();
  EXPECT_NEAR(throttle->release_pace(), 14 + 2.0 / 14, 1e-6);
}

// Against a model server with 20/s of spare capacity and a small queue:
// the adaptive pace drains a backlog of 400 calls within 1.25 times the
// physical limit (400 / 20 = 20 s) with few failed releases; a
// proportional guess above the spare capacity (release_ratio 1 of 40/s of
// new successes) keeps failing.
TEST(ThrottleWaitingRules, AdaptiveReleaseFindsTheSpareCapacity) {
  struct Outcome {
    double drained_after = -1;  // seconds; -1: not within the run
    int failures = 0;
  };
  auto run = [](Release release, double release_ratio) {
    auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/1000,
                                 release_ratio, release);
    constexpr int kBacklog = 400;
    for (int i = 0; i < kBacklog; ++i) throttle->BeginWait();
    const time_point t0 = FakeClock().Now();
    // The server: 20 released calls per second fit beside the new load
    // (whose 40/s succeed); a queue of 5 absorbs a burst; a release beyond
    // it fails, and that call waits again.
    double queue = 0;
    int left = kBacklog;
    Outcome outcome;
    std::vector<std::pair<time_point, bool>> answers;  // sent, succeeds
    time_point now = t0;
    for (; now < t0 + seconds(60) && left > 0; now += milliseconds(5)) {
      queue = std::max(0.0, queue - 20 * 0.005);
      if ((now - t0) % milliseconds(25) == nanoseconds(0)) {
        throttle->OnSuccess();  // the new load: 40/s
      }
      for (const auto& [sent, ok] : answers) {
        if (ok) {
          throttle->OnWaitedSuccess();
          --left;
        } else {
          ++outcome.failures;
          throttle->OnRetryableFailure(sent, now);
          throttle->BeginWait();
        }
      }
      answers.clear();
      for (int w = 0; w < 50; ++w) {
        if (!throttle->TryAdmit(now)) continue;
        const bool fits = queue + 1 <= 5;
        if (fits) queue += 1;
        answers.emplace_back(now, fits);
      }
    }
    if (left == 0) {
      outcome.drained_after = std::chrono::duration<double>(now - t0).count();
    }
    return outcome;
  };
  const Outcome adaptive = run(Release::kAdaptive, 0.5);
  EXPECT_GT(adaptive.drained_after, 0);
  EXPECT_LE(adaptive.drained_after, 1.25 * 20);
  EXPECT_LE(adaptive.failures, 40);
  const Outcome too_high = run(Release::kProportional, 1);
  EXPECT_GT(too_high.failures, adaptive.failures);
  std::printf(
      "adaptive: drained after %.1f s, %d failed releases; "
      "proportional 1.0: %.1f s, %d\n",
      adaptive.drained_after, adaptive.failures, too_high.drained_after,
      too_high.failures);
}

// While down, new calls' failures tell what a probe would: no probe goes
// within one probe spacing of a failure; once they stop coming, the probes
// resume.
TEST(ThrottleWaitingRules, NoProbeWhileNewCallsShowTheBackendDown) {
  auto throttle = DownThrottle(seconds(1), 2);
  for (int i = 0; i < 20; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  int admitted = 0;
  // 10 s of new calls failing at once, 20 per second; every waiter polls
  // every 10 ms.
  for (int tick = 0; tick < 1000; ++tick) {
    const time_point now = t0 + milliseconds(10) * tick;
    if (tick % 5 == 0) throttle->OnRetryableFailure(now, now);
    for (int w = 0; w < throttle->waiters(); ++w) {
      if (throttle->TryAdmit(now)) ++admitted;
    }
  }
  EXPECT_EQ(admitted, 0);
  // A failure known only by its end (a hedge's) is no such evidence.
  const time_point quiet = t0 + seconds(11);
  throttle->OnRetryableFailure();
  EXPECT_EQ(PollFor(*throttle, quiet, quiet + seconds(5), 20), 10);
  // A timeout counts when it arrives: the backend had not answered by then.
  const time_point late = quiet + seconds(6);
  throttle->OnRetryableFailure(late - seconds(1), late);
  EXPECT_FALSE(throttle->TryAdmit(late + milliseconds(499)));
  EXPECT_TRUE(throttle->TryAdmit(late + milliseconds(500)));
}

// kAdaptive reads a queue building from the released calls' latency: when
// the fastest of the last k answers took over twice the typical latency (a
// queue delays them all; k from how often the backend is that slow
// anyway: 2 here, 1 in slow start), the pace is cut once per round, as
// failures do; in slow start to
// half the pace (it may have doubled past the spare capacity), after it to 4/k
// of itself within [0.5, 0.9], k the fastest answer over the typical. A single
// slow answer holds the pace.
TEST(ThrottleWaitingRules, AdaptiveSlowAnswersCutThePace) {
  auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/1000);
  for (int i = 0; i < 10000; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  throttle->OnSuccess();
  ASSERT_TRUE(throttle->TryAdmit(t0));
  // No attempt deadline.
  auto answer = [&](milliseconds sent, milliseconds took) {
    throttle->OnWaitedSuccess(t0 + sent, t0 + sent + took, time_point::max());
  };
  // 49 answers in 20 ms: slow start to 50/s.
  for (int i = 0; i < 49; ++i) answer(milliseconds(i), milliseconds(20));
  EXPECT_NEAR(throttle->release_pace(), 50, 1e-6);
  // The first 15 answers had no tail (k = 2): in slow start one answer
  // over twice the typical says a queue, and halves the pace.
  answer(milliseconds(60), milliseconds(100));
  EXPECT_NEAR(throttle->release_pace(), 25, 1e-6);
  // After slow start slow answers among fast ones are a tail, not a queue:
  // the pace holds for them and grows by one probe pace per interval for
  // the others.
  for (int i = 0; i < 12; ++i) {
    answer(milliseconds(300 + i), milliseconds(i % 3 == 0 ? 100 : 20));
  }
  EXPECT_GT(throttle->release_pace(), 25);
  const double before = throttle->release_pace();
  // Two in a row (and more), five times the typical 20 ms: cut to 4/5,
  // once.
  for (int i = 0; i < 4; ++i) answer(milliseconds(330 + i), milliseconds(100));
  EXPECT_NEAR(throttle->release_pace(), 0.8 * before, 1e-6);
  const double cut = throttle->release_pace();
  // Sent before that cut: the same queue, already acted on.
  for (int i = 0; i < 4; ++i) answer(milliseconds(340 + i), milliseconds(100));
  EXPECT_DOUBLE_EQ(throttle->release_pace(), cut);
  // Sent after it and still slow (4.5 times): a new round.
  answer(milliseconds(1000), milliseconds(90));
  EXPECT_NEAR(throttle->release_pace(), 4 / 4.5 * cut, 1e-6);
  // Past half its attempt's time is slow too, whatever the typical
  // latency: a queue may stand where the typical was never seen. Two in a
  // row cut to 0.9.
  const double again = throttle->release_pace();
  const time_point sent = t0 + seconds(2);
  throttle->OnWaitedSuccess(sent, sent + milliseconds(30),
                            sent + milliseconds(50));
  EXPECT_DOUBLE_EQ(throttle->release_pace(), again);
  throttle->OnWaitedSuccess(sent, sent + milliseconds(30),
                            sent + milliseconds(50));
  EXPECT_NEAR(throttle->release_pace(), 0.9 * again, 1e-6);
}

// Against a model server whose spare capacity (20/s) sits behind a queue
// deeper than the attempt timeout: overload shows first as latency, and a
// release that waits in the queue past 1 s times out (the server still
// serves it: wasted work). The adaptive pace drains a backlog of 400 calls
// within 1.25 times the physical limit (20 s) with few timeouts.
TEST(ThrottleWaitingRules, AdaptiveReleaseDrainsBehindADeepQueue) {
  auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/1000);
  constexpr int kBacklog = 400;
  for (int i = 0; i < kBacklog; ++i) throttle->BeginWait();
  const time_point t0 = FakeClock().Now();
  throttle->OnSuccess();
  // The server: FIFO, 20 releases per second beside the new load, 50 ms of
  // service; `busy_until` is when the last request queued is served.
  time_point busy_until = t0;
  struct Answer {
    time_point sent, at;
    bool ok;
  };
  std::vector<Answer> answers;
  int left = kBacklog, timeouts = 0;
  time_point now = t0;
  for (; now < t0 + seconds(60) && left > 0; now += milliseconds(5)) {
    if ((now - t0) % milliseconds(25) == nanoseconds(0)) throttle->OnSuccess();
    for (auto it = answers.begin(); it != answers.end();) {
      if (it->at > now) {
        ++it;
        continue;
      }
      if (it->ok) {
        throttle->OnWaitedSuccess(it->sent, it->at, it->sent + seconds(1));
        --left;
      } else {
        ++timeouts;
        throttle->OnRetryableFailure(it->sent, it->at);
        throttle->BeginWait();
      }
      it = answers.erase(it);
    }
    for (int w = 0; w < 50; ++w) {
      if (!throttle->TryAdmit(now)) continue;
      busy_until = std::max(busy_until, now) + milliseconds(50);
      const time_point done = busy_until;
      const bool ok = done - now <= seconds(1);
      answers.push_back({now, ok ? done : now + seconds(1), ok});
    }
  }
  const double drained = std::chrono::duration<double>(now - t0).count();
  EXPECT_EQ(left, 0);
  EXPECT_LE(drained, 1.25 * 20);
  EXPECT_LE(timeouts, 40);
  std::printf("deep queue: drained after %.1f s, %d timeouts\n", drained,
              timeouts);
}

TEST(ThrottleWaitingRules, PollDelaysAreJitteredWithinTheInterval) {
  RetryThrottle throttle(RetryThrottle::Config()
                             .WithMaxTokens(10)
                             .WithTokenRatio(0.1)
                             .WithWaitForRecovery(Waiting(seconds(2), 1)));
  nanoseconds lo = nanoseconds::max(), hi = nanoseconds::min();
  for (int i = 0; i < 1000; ++i) {
    const nanoseconds d = throttle.PollDelay();
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_GE(lo, seconds(1));
  EXPECT_LE(hi, seconds(2));
  EXPECT_GT(hi - lo, milliseconds(500));  // spread, not one value
}

class ThrottleWaitingLoopTest : public ::testing::Test {
 protected:
  ThrottleWaitingLoopTest()
      : clock_(std::make_shared<FakeClock>()),
        client_(Options{}.set<ClockOption>(clock_).set<SleeperOption>(clock_)) {
  }

  // A sync call against a backend that is down until `recovery` (fake
  // time); each attempt takes 10 ms.
  absl::StatusOr<int> RunSync(const MethodInfo& method, time_point recovery,
                              const Options& call = {}) {
    return RetryLoop<int>(method, OptionsView(call, client_),
                          [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                            attempt_times_.push_back(clock_->Now());
                            clock_->Advance(milliseconds(10));
                            if (clock_->Now() >= recovery) return 7;
                            return absl::UnavailableError("down");
                          });
  }

  std::shared_ptr<FakeClock> clock_;
  Options client_;
  std::vector<time_point> attempt_times_;
};

TEST_F(ThrottleWaitingLoopTest, SyncCallWaitsForRecoveryWithFewProbes) {
  auto throttle = DownThrottle(seconds(5), 1);
  client_.set<RetryThrottleOption>(throttle);
  const time_point start = clock_->Now();
  absl::StatusOr<int> r = RunSync(kGet, start + minutes(2));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(clock_->Now(), start + minutes(2));
  // One probe per 5 s at most, polled every 2.5 to 5 s: probes 5 to 10 s
  // apart, 12 to 24 in 2 minutes, plus the first attempt.
  EXPECT_GE(attempt_times_.size(), 12u);
  EXPECT_LE(attempt_times_.size(), 26u);
  for (size_t i = 2; i < attempt_times_.size(); ++i) {
    EXPECT_GE(attempt_times_[i] - attempt_times_[i - 1], seconds(5));
  }
  EXPECT_EQ(throttle->waiters(), 0);
  EXPECT_FALSE(throttle->down());  // the success was seen
}

TEST_F(ThrottleWaitingLoopTest, SyncCallStopsAtItsPolicyEndNeverLater) {
  auto throttle = DownThrottle(seconds(1), 1);
  client_.set<RetryThrottleOption>(throttle).set<RetryPolicyOption>(
      RetryPolicy::LimitedTime(seconds(30)));
  const time_point start = clock_->Now();
  absl::StatusOr<int> r = RunSync(kGet, time_point::max());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  // The wait stops at the end; a probe admitted just before it may end its
  // 10 ms attempt just after (a real attempt's deadline is the end).
  EXPECT_GE(clock_->Now(), start + seconds(30));
  EXPECT_LE(clock_->Now(), start + seconds(30) + milliseconds(10));
  auto summary = GetRetrySummary(r.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_THAT(summary->stop_reason,
              ::testing::AnyOf(StopReason::kThrottled, StopReason::kExhausted));
  EXPECT_THAT(r.status().message(), HasSubstr("waited"));
  EXPECT_THAT(r.status().message(), HasSubstr("retry policy's time limit"));
  EXPECT_EQ(throttle->waiters(), 0);
}

// With a retry budget as well, both must admit: a probe the throttle lets go
// is sent only if the budget has a retry left; if not, the call waits on
// (the budget has no wait of its own, and new calls refill it).
TEST_F(ThrottleWaitingLoopTest, WithABudgetAProbeNeedsARetryOfTheBudget) {
  auto throttle = DownThrottle(seconds(1), 1);
  // One retry per 10 s window, whatever the requests.
  auto budget = std::make_shared<RetryBudget>(RetryBudget::Config()
                                                  .WithTtl(seconds(10))
                                                  .WithMinRetriesPerSecond(0.1)
                                                  .WithPercentCanRetry(0));
  client_.set<RetryThrottleOption>(throttle)
      .set<RetryBudgetOption>(budget)
      .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(35)));
  absl::StatusOr<int> r = RunSync(kGet, time_point::max());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kThrottled);
  EXPECT_THAT(r.status().message(),
              HasSubstr("the retry budget had no retry left when the "
                        "throttle let one go"));
  // The probes: one per budget window (less a bucket), not one per second.
  ASSERT_GE(attempt_times_.size(), 3u);
  EXPECT_LE(attempt_times_.size(), 5u);
  for (size_t i = 2; i < attempt_times_.size(); ++i) {
    EXPECT_GE(attempt_times_[i] - attempt_times_[i - 1], seconds(9));
  }
  EXPECT_EQ(throttle->waiters(), 0);
}

// Issue 39, item 10: admission after a throttle wait is all or nothing. A
// probe the throttle would let go but the budget refuses takes nothing: the
// throttle's release slot stays free for another waiting call at the same
// instant. Here the budget is spent for the whole call, and another waiting
// call (played by the sleeper) polls right after each of the call's polls.
TEST_F(ThrottleWaitingLoopTest, ABudgetRefusalLeavesTheReleaseSlotToOthers) {
  auto throttle = DownThrottle(seconds(1), 1);
  // One retry per hour, already taken.
  auto budget =
      std::make_shared<RetryBudget>(RetryBudget::Config()
                                        .WithTtl(std::chrono::hours(1))
                                        .WithMinRetriesPerSecond(1.0 / 3600)
                                        .WithPercentCanRetry(0));
  ASSERT_TRUE(budget->TryWithdraw(clock_->Now()));
  ASSERT_FALSE(budget->CanWithdraw(clock_->Now()));
  class OtherCaller final : public Sleeper {
   public:
    OtherCaller(FakeClock& clock, RetryThrottle& throttle)
        : clock_(clock), throttle_(throttle) {}
    void SleepFor(nanoseconds duration) override {
      // The call polled at this instant, then went back to waiting.
      throttle_.BeginWait();
      if (throttle_.TryAdmit(clock_.Now())) {
        ++admitted;
      } else {
        throttle_.EndWait();
      }
      clock_.Advance(duration);
    }
    int admitted = 0;

   private:
    FakeClock& clock_;
    RetryThrottle& throttle_;
  };
  auto other = std::make_shared<OtherCaller>(*clock_, *throttle);
  client_.set<RetryThrottleOption>(throttle)
      .set<RetryBudgetOption>(budget)
      .set<SleeperOption>(other)
      .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(30)));
  absl::StatusOr<int> r = RunSync(kGet, time_point::max());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(attempt_times_.size(), 1u);  // the budget never had a retry
  // One release a second at most while down: the other call got them.
  EXPECT_GE(other->admitted, 10) << "the budget's refusals used the slots";
  EXPECT_EQ(throttle->waiters(), 0);
}

TEST_F(ThrottleWaitingLoopTest, TotalTimeoutAndCountPolicyEndTheWaitToo) {
  auto throttle = DownThrottle(seconds(1), 1);
  client_.set<RetryThrottleOption>(throttle);
  const time_point start = clock_->Now();
  absl::StatusOr<int> r = RunSync(
      kGet, time_point::max(), Options{}.set<TotalTimeoutOption>(seconds(12)));
  EXPECT_THAT(GetRetrySummary(r.status())->stop_reason,
              ::testing::AnyOf(StopReason::kThrottled, StopReason::kDeadline));
  EXPECT_GE(clock_->Now(), start + seconds(12));
  EXPECT_LE(clock_->Now(), start + seconds(12) + milliseconds(10));
  EXPECT_THAT(r.status().message(), HasSubstr("the call's deadline"));
  EXPECT_THAT(r.status().message(), HasSubstr("waited"));
  // A count policy ends it when the admitted probes used up its retries.
  attempt_times_.clear();
  r = RunSync(
      kGet, time_point::max(),
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3)));
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(attempt_times_.size(), 4u);
  EXPECT_EQ(throttle->waiters(), 0);
}

TEST_F(ThrottleWaitingLoopTest, NonIdempotentCallsNeverWait) {
  auto throttle = DownThrottle(seconds(1), 1);
  client_.set<RetryThrottleOption>(throttle);
  const time_point start = clock_->Now();
  absl::StatusOr<int> r = RunSync(kCreate, time_point::max());
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason,
            StopReason::kNonIdempotent);
  EXPECT_EQ(clock_->Now(), start + milliseconds(10));
  EXPECT_EQ(attempt_times_.size(), 1u);
}

TEST_F(ThrottleWaitingLoopTest, ObserverSeesTheThrottleWait) {
  auto throttle = DownThrottle(seconds(1), 1);
  std::vector<WaitReason> reasons;
  client_.set<RetryThrottleOption>(throttle).set<RetryObserverOption>(
      [&](const AttemptEvent& e) {
        if (!e.final) reasons.push_back(e.wait_reason);
      });
  ASSERT_TRUE(RunSync(kGet, clock_->Now() + seconds(3)).ok());
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons[0], WaitReason::kThrottle);
}

// Cancelling a sync call in the throttle's wait, on the real steady clock:
// it returns far sooner than the 10-minute poll it cancelled.
TEST(ThrottleWaitingCancel, SyncCancelEndsTheWaitAtOnce) {
  auto throttle = DownThrottle(minutes(10), 1);
  auto token = std::make_shared<CancellationToken>();
  Options options =
      Options{}.set<RetryThrottleOption>(throttle).set<CancellationOption>(
          token);
  std::atomic<int> attempts{0};
  const auto start = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    while (throttle->waiters() == 0) std::this_thread::yield();
    token->Cancel();
  });
  const Options none;
  absl::StatusOr<int> r =
      RetryLoop<int>(kGet, OptionsView(none, options),
                     [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                       ++attempts;
                       return absl::UnavailableError("down");
                     });
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(60));
  EXPECT_EQ(attempts.load(), 1);
  EXPECT_EQ(throttle->waiters(), 0);
}

// The same for an async call, waiting in the process-wide timer: no thread
// of its own; the cancel completes it on the cancelling thread.
TEST(ThrottleWaitingCancel, AsyncCancelEndsTheWaitAtOnce) {
  auto throttle = DownThrottle(minutes(10), 1);
  auto token = std::make_shared<CancellationToken>();
  Options options =
      Options{}.set<RetryThrottleOption>(throttle).set<CancellationOption>(
          token);
  const auto start = std::chrono::steady_clock::now();
  std::future<absl::StatusOr<int>> f = AsyncRetryLoop<int>(
      kGet, options, Options{},
      [](grpc::ClientContext&, const OptionsView&, AsyncCallback<int> done) {
        done(absl::UnavailableError("down"));
      });
  while (throttle->waiters() == 0) std::this_thread::yield();
  token->Cancel();
  ASSERT_EQ(f.wait_for(seconds(60)), std::future_status::ready);
  absl::StatusOr<int> r = f.get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(60));
  EXPECT_EQ(throttle->waiters(), 0);
}

TEST(ThrottleWaitingAsync, AsyncCallsWaitOnTheTimerAndAreReleasedGradually) {
  auto clock = std::make_shared<FakeClock>();
  auto throttle = DownThrottle(seconds(1), 1, /*max_tokens=*/4);
  Options client =
      Options{}
          .set<ClockOption>(clock)
          .set<AsyncSleeperOption>(clock)
          .set<RetryThrottleOption>(throttle)
          .set<RetryPolicyOption>(RetryPolicy::LimitedTime(minutes(5)));
  const time_point recovery = clock->Now() + seconds(20);
  int attempts = 0, attempts_after_recovery = 0;
  auto attempt = [&](grpc::ClientContext&, const OptionsView&,
                     AsyncCallback<int> done) {
    ++attempts;
    if (clock->Now() >= recovery) {
      ++attempts_after_recovery;
      return done(1);
    }
    done(absl::UnavailableError("down"));
  };
  // FakeClock runs each wait inline: a call waits (polls) until admitted.
  std::vector<absl::StatusOr<int>> results;
  auto collect = [&](absl::StatusOr<int> r) {
    results.push_back(std::move(r));
  };
  AsyncRetryLoop<int>(kGet, Options{}, client, attempt, collect);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_GE(clock->Now(), recovery);
  // At most one probe per second while down (polls at 0.5-1 s), plus the
  // first attempt.
  EXPECT_LE(attempts, 1 + 21 + 1);
  EXPECT_EQ(attempts_after_recovery, 1);
  EXPECT_EQ(throttle->waiters(), 0);
}

}  // namespace
}  // namespace stubkit

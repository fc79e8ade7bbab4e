// Copyright 2026 The stubkit Authors.
//
// MetricsCollector through the retry loops, on a fake clock: every call's
// latency is exact, so the latency sum and the bucket of each call are
// asserted exactly, as is every stop-reason counter, for sync, async and
// hedged calls.

#include "stubkit/metrics.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/cancellation.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/engine/hedged_operation.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// The bucket a latency of `ms` falls in: the first bound >= ms (bounds are
// inclusive upper bounds), or the overflow bucket.
size_t BucketOf(double ms) {
  for (size_t i = 0; i < kLatencyBucketBoundsMs.size(); ++i) {
    if (ms <= kLatencyBucketBoundsMs[i]) return i;
  }
  return kLatencyBucketBoundsMs.size();
}

// What one method's figures must be after exactly one call.
struct Expected {
  int attempts;
  StopReason reason;
  double latency_ms;
  // The total of the waits between attempts (observed only with retries).
  double retry_delay_ms = 0;
  int hedges = 0;  // of `attempts`; the others after the first are retries
};

void ExpectOneCall(const MethodMetrics& m, const Expected& e) {
  SCOPED_TRACE(m.method);
  EXPECT_EQ(m.calls, 1);
  EXPECT_EQ(m.attempts, e.attempts);
  const int retries = std::max(0, e.attempts - 1 - e.hedges);
  EXPECT_EQ(m.retries, retries);
  EXPECT_EQ(m.hedges, e.hedges);
  for (int r = 0; r < kStopReasonCount; ++r) {
    EXPECT_EQ(m.stops[r], r == static_cast<int>(e.reason) ? 1 : 0)
        << "stop reason " << ToString(static_cast<StopReason>(r));
  }
  EXPECT_DOUBLE_EQ(m.latency_sum_ms, e.latency_ms);
  const size_t bucket = BucketOf(e.latency_ms);
  for (size_t b = 0; b < m.latency_buckets.size(); ++b) {
    EXPECT_EQ(m.latency_buckets[b], b == bucket ? 1 : 0) << "bucket " << b;
  }
  // A call without retries observes no retry delay at all.
  EXPECT_DOUBLE_EQ(m.retry_delay_sum_ms, e.retry_delay_ms);
  const size_t delay_bucket = BucketOf(e.retry_delay_ms);
  for (size_t b = 0; b < m.retry_delay_buckets.size(); ++b) {
    EXPECT_EQ(m.retry_delay_buckets[b],
              retries > 0 && b == delay_bucket ? 1 : 0)
        << "retry delay bucket " << b;
  }
}

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest()
      : clock_(std::make_shared<FakeClock>()),
        metrics_(std::make_shared<MetricsCollector>()) {
    client_.set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<AsyncSleeperOption>(clock_)
        .set<MetricsOption>(metrics_);
  }

  // A sync call of `name` whose n-th attempt (from 1) is `attempt(n)`.
  void RunSync(absl::string_view name, Idempotency idempotency,
               const Options& call, std::function<absl::Status(int)> attempt) {
    const MethodInfo method{name, RpcKind::kUnary, idempotency};
    int n = 0;
    (void)RetryLoop<int>(method, OptionsView(call, client_),
                         [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                           absl::Status status = attempt(++n);
                           if (status.ok()) return 1;
                           return status;
                         });
  }

  // The same, async: each attempt completes on another thread.
  void RunAsync(absl::string_view name, const Options& call,
                std::function<absl::Status(int)> attempt) {
    const MethodInfo method{name, RpcKind::kUnary, Idempotency::kIdempotent};
    auto n = std::make_shared<std::atomic<int>>(0);
    (void)AsyncRetryLoop<int>(
        method, call, client_,
        [attempt, n](grpc::ClientContext&, const OptionsView&,
                     AsyncCallback<int> done) {
          absl::Status status = attempt(++*n);
          std::thread([status, done = std::move(done)] {
            if (status.ok()) {
              done(1);
            } else {
              done(status);
            }
          }).detach();
        })
        .get();
  }

  // Advances the fake clock by `ms` and returns `status`: an attempt that
  // took that long.
  absl::Status Took(int ms, absl::Status status) {
    clock_->Advance(milliseconds(ms));
    return status;
  }

  std::vector<MethodMetrics> Snapshot() { return metrics_->Snapshot(); }

  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<MetricsCollector> metrics_;
  Options client_;
};

Options FixedBackoff(int initial_ms, int maximum_ms) {
  return Options{}.set<BackoffPolicyOption>(
      ExponentialBackoffPolicy()
          .WithInitialDelay(milliseconds(initial_ms))
          .WithMaximumDelay(milliseconds(maximum_ms))
          .WithMultiplier(2.0)
          .WithJitter(Jitter::None()));
}

TEST_F(MetricsTest, EveryStopReasonLatencyAndBucketOfSyncCalls) {
  const absl::Status unavailable = absl::UnavailableError("down");
  RunSync("m.1.Success", Idempotency::kIdempotent, {},
          [&](int) { return Took(3, absl::OkStatus()); });
  RunSync("m.2.Permanent", Idempotency::kIdempotent, {},
          [&](int) { return Took(7, absl::InternalError("bug")); });
  // Exactly on a bound: 1 ms is in the "<= 1 ms" bucket.
  RunSync("m.3.NonIdempotent", Idempotency::kNonIdempotent, {},
          [&](int) { return Took(1, unavailable); });
  // 10 + 100 + 10 + 200 + 10 ms.
  RunSync("m.4.Exhausted", Idempotency::kIdempotent,
          FixedBackoff(100, 1000).set<RetryPolicyOption>(
              RetryPolicy::LimitedErrorCount(2)),
          [&](int) { return Took(10, unavailable); });
  // 10 + 400 + 10 + 400 + 10 ms; the next 400 ms wait would pass 1 s.
  RunSync(
      "m.5.Deadline", Idempotency::kIdempotent,
      FixedBackoff(400, 400).set<TotalTimeoutOption>(std::chrono::seconds(1)),
      [&](int) { return Took(10, unavailable); });
  // A bucket of 2 tokens: one failure leaves it at half, so no retry.
  RunSync("m.6.Throttled", Idempotency::kIdempotent,
          Options{}.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
              RetryThrottle::Config().WithMaxTokens(2).WithTokenRatio(0.1))),
          [&](int) { return Took(5, unavailable); });
  auto token = std::make_shared<CancellationToken>();
  RunSync("m.7.Cancelled", Idempotency::kIdempotent,
          Options{}.set<CancellationOption>(token), [&](int) {
            token->Cancel();
            return Took(15, absl::CancelledError("cancelled"));
          });
  RunSync("m.8.Invalid", Idempotency::kIdempotent,
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(-1)),
          [&](int) { return Took(1, absl::OkStatus()); });

  std::vector<MethodMetrics> m = Snapshot();
  ASSERT_EQ(m.size(), 8u);
  ExpectOneCall(m[0], {1, StopReason::kSuccess, 3});
  ExpectOneCall(m[1], {1, StopReason::kPermanentError, 7});
  ExpectOneCall(m[2], {1, StopReason::kNonIdempotent, 1});
  ExpectOneCall(m[3], {3, StopReason::kExhausted, 330, 100 + 200});
  ExpectOneCall(m[4], {3, StopReason::kDeadline, 830, 400 + 400});
  ExpectOneCall(m[5], {1, StopReason::kThrottled, 5});
  ExpectOneCall(m[6], {1, StopReason::kCancelled, 15});
  // Nothing was sent: no attempt, and no retry either.
  ExpectOneCall(m[7], {0, StopReason::kInvalidArgument, 0});
}

TEST_F(MetricsTest, CallsOfOneMethodAddUp) {
  for (int ms : {2, 40, 40, 3000}) {
    RunSync("m.Sum", Idempotency::kIdempotent, {},
            [&](int) { return Took(ms, absl::OkStatus()); });
  }
  RunSync(
      "m.Sum", Idempotency::kIdempotent, FixedBackoff(100, 100), [&](int n) {
        return Took(1, n < 3 ? absl::UnavailableError("x") : absl::OkStatus());
      });  // 1 + 100 + 1 + 100 + 1 ms
  std::vector<MethodMetrics> m = Snapshot();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].calls, 5);
  EXPECT_EQ(m[0].attempts, 7);
  EXPECT_EQ(m[0].retries, 2);
  EXPECT_EQ(m[0].stopped(StopReason::kSuccess), 5);
  EXPECT_DOUBLE_EQ(m[0].latency_sum_ms, 2 + 40 + 40 + 3000 + 203);
  std::array<int64_t, kLatencyBucketBoundsMs.size() + 1> buckets{};
  for (double ms : {2.0, 40.0, 40.0, 3000.0, 203.0}) ++buckets[BucketOf(ms)];
  EXPECT_EQ(m[0].latency_buckets, buckets);
  // Only the call that retried observes a delay: 100 + 100 ms.
  EXPECT_EQ(m[0].hedges, 0);
  EXPECT_DOUBLE_EQ(m[0].retry_delay_sum_ms, 200);
  std::array<int64_t, kLatencyBucketBoundsMs.size() + 1> delay_buckets{};
  ++delay_buckets[BucketOf(200)];
  EXPECT_EQ(m[0].retry_delay_buckets, delay_buckets);
}

// Sleeps like the fake clock, but the `cancel_at`-th wait (from 1) passes
// only `part` of its length and then cancels the call.
class CancellingSleeper : public Sleeper {
 public:
  CancellingSleeper(std::shared_ptr<FakeClock> clock,
                    std::shared_ptr<CancellationToken> token, int cancel_at,
                    nanoseconds part)
      : clock_(std::move(clock)),
        token_(std::move(token)),
        cancel_at_(cancel_at),
        part_(part) {}
  void SleepFor(nanoseconds duration) override {
    if (++waits_ < cancel_at_) return clock_->Advance(duration);
    clock_->Advance(part_);
    token_->Cancel();
  }

 private:
  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<CancellationToken> token_;
  const int cancel_at_;
  const nanoseconds part_;
  int waits_ = 0;
};

TEST_F(MetricsTest, RetryDelayIsTheSumOfTheWaitsChosen) {
  const absl::Status unavailable = absl::UnavailableError("down");
  // Backoff 100, 200, 400, 800 ms between five attempts of 1 ms.
  RunSync(
      "d.1.Waits", Idempotency::kIdempotent,
      FixedBackoff(100, 1000).set<RetryPolicyOption>(
          RetryPolicy::LimitedErrorCount(4)),
      [&](int n) { return Took(1, n == 5 ? absl::OkStatus() : unavailable); });
  // A cancel 30 ms into the second wait (100 ms): only what passed counts.
  auto token = std::make_shared<CancellationToken>();
  RunSync(
      "d.2.CancelledWait", Idempotency::kIdempotent,
      FixedBackoff(100, 100).set<CancellationOption>(token).set<SleeperOption>(
          std::make_shared<CancellingSleeper>(clock_, token, 2,
                                              milliseconds(30))),
      [&](int) { return Took(10, unavailable); });
  std::vector<MethodMetrics> m = Snapshot();
  ASSERT_EQ(m.size(), 2u);
  ExpectOneCall(m[0], {5, StopReason::kSuccess, 5 + 100 + 200 + 400 + 800,
                       100 + 200 + 400 + 800});
  ExpectOneCall(m[1],
                {2, StopReason::kCancelled, 10 + 100 + 10 + 30, 100 + 30});
}

TEST_F(MetricsTest, AsyncCalls) {
  const absl::Status unavailable = absl::UnavailableError("down");
  RunAsync("a.1.Success", FixedBackoff(50, 50), [&](int n) {
    return Took(4, n < 2 ? absl::UnavailableError("x") : absl::OkStatus());
  });  // 4 + 50 + 4 ms
  RunAsync("a.2.Exhausted",
           FixedBackoff(100, 1000).set<RetryPolicyOption>(
               RetryPolicy::LimitedErrorCount(1)),
           [&](int) { return Took(10, unavailable); });  // 10 + 100 + 10 ms
  RunAsync("a.3.Permanent", {},
           [&](int) { return Took(2, absl::NotFoundError("no")); });
  auto token = std::make_shared<CancellationToken>();
  RunAsync("a.4.Cancelled", Options{}.set<CancellationOption>(token), [&](int) {
    token->Cancel();
    return Took(6, unavailable);
  });
  RunAsync("a.5.Invalid",
           Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(-1)),
           [&](int) { return Took(1, absl::OkStatus()); });

  std::vector<MethodMetrics> m = Snapshot();
  ASSERT_EQ(m.size(), 5u);
  ExpectOneCall(m[0], {2, StopReason::kSuccess, 58, 50});
  ExpectOneCall(m[1], {2, StopReason::kExhausted, 120, 100});
  ExpectOneCall(m[2], {1, StopReason::kPermanentError, 2});
  ExpectOneCall(m[3], {1, StopReason::kCancelled, 6});
  ExpectOneCall(m[4], {0, StopReason::kInvalidArgument, 0});
}

TEST_F(MetricsTest, HedgedCalls) {
  // The real timer thread with a hedging delay that never passes: the
  // second attempt goes out because the first failed with a non-fatal code.
  Options client = client_;
  client.set<AsyncSleeperOption>(nullptr);
  const MethodInfo method{"h.Hedged", RpcKind::kUnary,
                          Idempotency::kIdempotent};
  auto n = std::make_shared<std::atomic<int>>(0);
  auto clock = clock_;
  // Shared: the callback may still be inside set_value() when get() returns.
  auto result = std::make_shared<std::promise<absl::StatusOr<int>>>();
  internal::AsyncHedgedCall<int>(
      method,
      Options{}.set<HedgingPolicyOption>(
          HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(
              std::chrono::minutes(10))),
      client,
      [n, clock](grpc::ClientContext&, const OptionsView&,
                 AsyncCallback<int> done) {
        const int attempt = ++*n;
        clock->Advance(milliseconds(attempt == 1 ? 30 : 20));
        std::thread([attempt, done = std::move(done)] {
          if (attempt == 1) {
            done(absl::UnavailableError("first fails"));
          } else {
            done(2);
          }
        }).detach();
      },
      [result](absl::StatusOr<int> r) { result->set_value(std::move(r)); });
  absl::StatusOr<int> r = result->get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 2);
  std::vector<MethodMetrics> m = Snapshot();
  ASSERT_EQ(m.size(), 1u);
  // A96: the second attempt is a hedge, not a retry, and the call never
  // waited without an attempt in flight (no retry delay observed).
  ExpectOneCall(m[0], {2, StopReason::kSuccess, 50, 0, /*hedges=*/1});
}

// The collector caches entries by the address of the method's name; names
// that share an address (a reused buffer) or a cache slot must still count
// apart, from any number of threads.
TEST(MetricsCollectorTest, NamesSharingAnAddressOrASlotCountApart) {
  MetricsCollector metrics;
  char buffer[] = "pkg.Service.MethodA";
  metrics.RecordCall(buffer, 1, StopReason::kSuccess,
                     std::chrono::milliseconds(1));
  buffer[sizeof(buffer) - 2] = 'B';  // the same address, another method
  metrics.RecordCall(buffer, 2, StopReason::kSuccess,
                     std::chrono::milliseconds(1));
  metrics.RecordCall(buffer, 1, StopReason::kSuccess,
                     std::chrono::milliseconds(1));

  // 200 names in 64 slots, recorded from 4 threads at once.
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i)
    names.push_back("pkg.Many.M" + std::to_string(i));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 10; ++round) {
        for (const std::string& name : names) {
          metrics.RecordCall(name, 1, StopReason::kSuccess,
                             std::chrono::milliseconds(1));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::vector<MethodMetrics> snapshot = metrics.Snapshot();
  ASSERT_EQ(snapshot.size(), 202u);
  for (const MethodMetrics& m : snapshot) {
    if (m.method == "pkg.Service.MethodA") {
      EXPECT_EQ(m.calls, 1);
    } else if (m.method == "pkg.Service.MethodB") {
      EXPECT_EQ(m.calls, 2);
      EXPECT_EQ(m.attempts, 3);
    } else {
      EXPECT_EQ(m.calls, 40) << m.method;
    }
  }
}

// Issue 22 item 8: the sums were int64 nanoseconds, which wrap after 292
// years of summed latency (about 107 days at 10k calls/s of 100 ms) and then
// go negative. Three calls of a century each are past that; a sum in
// floating point cannot wrap, and stays exact for sums below 2^53 ns.
TEST(MetricsCollectorTest, LatencyAndRetryDelaySumsDoNotWrap) {
  MetricsCollector metrics;
  const nanoseconds century = std::chrono::hours(24 * 365 * 100);
  for (int i = 0; i < 3; ++i) {
    metrics.RecordCall("pkg.S.M", 2, StopReason::kSuccess, century,
                       /*hedges=*/0, century);
  }
  std::vector<MethodMetrics> snapshot = metrics.Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  const double want_ms =
      3 * std::chrono::duration<double, std::milli>(century).count();
  EXPECT_GT(snapshot[0].latency_sum_ms, 0);
  EXPECT_NEAR(snapshot[0].latency_sum_ms, want_ms, want_ms * 1e-12);
  EXPECT_NEAR(snapshot[0].retry_delay_sum_ms, want_ms, want_ms * 1e-12);
  // Further calls still add up after the int64 range is passed.
  metrics.RecordCall("pkg.S.M", 1, StopReason::kSuccess, century);
  EXPECT_NEAR(metrics.Snapshot()[0].latency_sum_ms, want_ms * 4 / 3,
              want_ms * 1e-12);
}

// Small sums stay exact to the nanosecond.
TEST(MetricsCollectorTest, SmallSumsAreExact) {
  MetricsCollector metrics;
  for (int i = 0; i < 1000; ++i) {
    metrics.RecordCall("pkg.S.M", 1, StopReason::kSuccess, nanoseconds(1));
  }
  EXPECT_EQ(metrics.Snapshot()[0].latency_sum_ms, 1000 / 1e6);
}

// A96's grpc.client.call.retries and .hedges: per call with any, its count
// by bucket (1, 2, 3, 4, 5, above); calls with none are not observed.
TEST(MetricsCollectorTest, RetryAndHedgeCountHistograms) {
  MetricsCollector metrics("dns:///backend:443");
  EXPECT_EQ(metrics.target(), "dns:///backend:443");
  for (int attempts : {1, 2, 3, 3, 7}) {
    metrics.RecordCall("pkg.S.M", attempts, StopReason::kSuccess,
                       nanoseconds(1));
  }
  metrics.RecordCall("pkg.S.M", 3, StopReason::kSuccess, nanoseconds(1),
                     /*hedges=*/2);
  const MethodMetrics m = metrics.Snapshot().at(0);
  EXPECT_EQ(m.retries, 1 + 2 + 2 + 6);
  EXPECT_EQ(
      m.retries_buckets,
      (std::array<int64_t, kCountBucketBounds.size() + 1>{1, 2, 0, 0, 0, 1}));
  EXPECT_EQ(m.hedges, 2);
  EXPECT_EQ(
      m.hedges_buckets,
      (std::array<int64_t, kCountBucketBounds.size() + 1>{0, 1, 0, 0, 0, 0}));
}

// MethodMetrics holds the fields of STUBKIT_METRICS' rows and nothing more:
// a field declared beside the list would be neither collected nor
// exported.
constexpr size_t kDeclaredFieldBytes = 0
#define STUBKIT_ONE_(field, family, help) +sizeof(MethodMetrics::field)
#define STUBKIT_TWO_(field, other, family, help) \
  +sizeof(MethodMetrics::field) + sizeof(MethodMetrics::other)
    STUBKIT_METRICS(STUBKIT_ONE_, STUBKIT_TWO_, STUBKIT_TWO_, STUBKIT_ONE_);
#undef STUBKIT_ONE_
#undef STUBKIT_TWO_
static_assert(sizeof(MethodMetrics) ==
                  sizeof(std::string) + kDeclaredFieldBytes,
              "a MethodMetrics field outside STUBKIT_METRICS");

// Every COUNTER row is collected and reaches the snapshot under its own
// name: each counted a different number of times.
TEST(MetricsCollectorTest, EveryDeclaredCounterReachesTheSnapshot) {
  MetricsCollector metrics;
  int64_t n = 0;
#define STUBKIT_COUNT_(field, family, help) \
  metrics.Count<&MethodMetrics::field>("pkg.S.M", ++n);
#define STUBKIT_OTHER_(...)
  STUBKIT_METRICS(STUBKIT_COUNT_, STUBKIT_OTHER_, STUBKIT_OTHER_,
                  STUBKIT_OTHER_)
  ASSERT_GT(n, 0);
  const MethodMetrics m = metrics.Snapshot().at(0);
  n = 0;
#undef STUBKIT_COUNT_
#define STUBKIT_COUNT_(field, family, help) EXPECT_EQ(m.field, ++n) << #field;
  STUBKIT_METRICS(STUBKIT_COUNT_, STUBKIT_OTHER_, STUBKIT_OTHER_,
                  STUBKIT_OTHER_)
#undef STUBKIT_COUNT_
#undef STUBKIT_OTHER_
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// The runtime's concurrent parts under many threads, without a gRPC channel
// or server: shared Options, the retry throttle and budget, cancellation
// tokens, the
// timer queue, and the sync and async retry loops over a fake transport
// whose completions arrive on its own thread (as gRPC's callbacks do).
//
// Built normally it is a quick stress test in ctest. scripts/sanitize.sh
// builds it with ThreadSanitizer (STUBKIT_SANITIZE=thread) and the
// tsan_absl_mutex_shim.cc (Debian's abseil is not instrumented). The only
// gRPC code it runs is grpc::ClientContext's (no call is ever made on one)
// and grpc_init(), which the async loop calls once.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/internal/api/timer_queue.h"
#include "stubkit/metrics.h"
#include "stubkit/options.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

constexpr MethodInfo kIdempotent{"test.Fake.Get", RpcKind::kUnary,
                                 Idempotency::kIdempotent};

constexpr int kThreads = 8;

void RunThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(body, t);
  for (auto& thread : threads) thread.join();
}

// Completes async attempts on its own thread, like gRPC's callback threads.
class FakeTransport {
 public:
  FakeTransport() : thread_([this] { Run(); }) {}
  ~FakeTransport() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Post(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(work));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

TEST(RuntimeConcurrencyTest, SharedOptionsReadConcurrently) {
  Options client =
      Options{}
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
          .set<AttemptTimeoutOption>(milliseconds(5));
  std::atomic<int> mismatches{0};
  RunThreads(kThreads, [&](int t) {
    for (int i = 0; i < 2000; ++i) {
      Options call = Options{}.set<TotalTimeoutOption>(milliseconds(t + 1));
      OptionsView view(call, client);
      Options copy = client;  // copies share the values
      Options merged = client.MergedWith(call);
      if (view.get<RetryPolicyOption>().max_failures() != 3 ||
          view.get<TotalTimeoutOption>() != milliseconds(t + 1) ||
          copy.get<AttemptTimeoutOption>() != milliseconds(5) ||
          merged.get<TotalTimeoutOption>() != milliseconds(t + 1) ||
          view.get<BackoffPolicyOption>().initial_delay() !=
              std::chrono::seconds(1)) {
        ++mismatches;
      }
    }
  });
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(RuntimeConcurrencyTest, ThrottleStaysWithinItsBounds) {
  RetryThrottle throttle(
      RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.5));
  std::atomic<int> out_of_bounds{0};
  RunThreads(kThreads, [&](int t) {
    for (int i = 0; i < 20000; ++i) {
      if ((i + t) % 3 == 0) {
        throttle.OnRetryableFailure();
      } else {
        throttle.OnSuccess();
      }
      double tokens = throttle.tokens();
      if (tokens < 0 || tokens > 10) ++out_of_bounds;
      (void)throttle.RetryAllowed();
    }
  });
  EXPECT_EQ(out_of_bounds.load(), 0);
  EXPECT_GE(throttle.tokens(), 0);
  EXPECT_LE(throttle.tokens(), 10);
}

// Deposits (lock-free) race withdrawals (locked) at one instant: none is
// lost, and the retries taken never pass the allowance of the requests.
TEST(RuntimeConcurrencyTest, BudgetLosesNoDepositAndOverdrawsNothing) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(std::chrono::seconds(1))
                         .WithMinRetriesPerSecond(5)
                         .WithPercentCanRetry(0.25));
  const RetryBudget::time_point now(std::chrono::hours(1));
  constexpr int kPerThread = 4000;
  std::atomic<int64_t> taken{0};
  RunThreads(kThreads, [&](int t) {
    for (int i = 0; i < kPerThread; ++i) {
      budget.Deposit(now);
      if ((i + t) % 2 == 0 && budget.TryWithdraw(now)) ++taken;
      (void)budget.CanWithdraw(now);
    }
  });
  const int64_t requests = int64_t{kThreads} * kPerThread;
  EXPECT_EQ(budget.requests(now), requests);
  EXPECT_EQ(budget.retries(now), taken.load());
  // 5 + a quarter of the requests, exactly, once drained.
  EXPECT_LE(taken.load(), 5 + requests / 4);
  while (budget.TryWithdraw(now)) ++taken;
  EXPECT_EQ(taken.load(), 5 + requests / 4);
}

// The window slides while threads deposit and withdraw, each reading a
// shared clock that one of them moves: the buckets are reused under
// contention. Under TSan this is the race check; otherwise the counts stay
// within what was sent.
TEST(RuntimeConcurrencyTest, BudgetWindowSlidesUnderContention) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(10))
                         .WithMinRetriesPerSecond(100)
                         .WithPercentCanRetry(0.5));
  std::atomic<int64_t> clock_ns{0};
  std::atomic<int64_t> deposits{0};
  std::atomic<int64_t> withdrawals{0};
  std::atomic<int> out_of_bounds{0};
  RunThreads(kThreads, [&](int t) {
    for (int i = 0; i < 20000; ++i) {
      if (t == 0) clock_ns.fetch_add(1000, std::memory_order_relaxed);
      const RetryBudget::time_point now(
          nanoseconds(clock_ns.load(std::memory_order_relaxed)));
      budget.Deposit(now);
      ++deposits;
      if (i % 3 == 0 && budget.TryWithdraw(now)) ++withdrawals;
      if (budget.requests(now) > deposits.load() + kThreads ||
          budget.retries(now) > withdrawals.load() + kThreads) {
        ++out_of_bounds;
      }
    }
  });
  EXPECT_EQ(out_of_bounds.load(), 0);
  EXPECT_GT(withdrawals.load(), 0);
}

TEST(RuntimeConcurrencyTest, CancellationRacesAttachWaitAndCallbacks) {
  constexpr int kWorkers = 4;
  constexpr int kPerWorker = 20;
  for (int round = 0; round < 50; ++round) {
    auto token = std::make_shared<CancellationToken>();
    // One slot per callback: how often it ran.
    std::vector<std::atomic<int>> runs(kWorkers * kPerWorker);
    // A wait that succeeded after its thread had seen the token cancelled.
    std::atomic<int> waits_after_cancel{0};
    std::atomic<int> waits_cancelled{0};
    // Every tenth round cancels before the workers start: then every wait is
    // cut short and every callback runs at once, removed or not.
    const bool cancel_first = round % 10 == 0;
    if (cancel_first) token->Cancel();
    std::vector<std::thread> threads;
    for (int t = 0; t < kWorkers; ++t) {
      threads.emplace_back([&, t] {
        bool seen_cancelled = false;
        for (int i = 0; i < kPerWorker; ++i) {
          grpc::ClientContext context;
          if (token->Attach(&context)) token->Detach(&context);
          int slot = t * kPerWorker + i;
          uint64_t id = token->AddCallback([&runs, slot] { ++runs[slot]; });
          if (i % 2 == 0 && id != 0) token->RemoveCallback(id);
          seen_cancelled = seen_cancelled || token->cancelled();
          if (!token->WaitFor(microseconds(50))) {
            ++waits_cancelled;
            seen_cancelled = true;
          } else if (seen_cancelled) {
            ++waits_after_cancel;
          }
        }
      });
    }
    std::this_thread::sleep_for(microseconds(100 * (round % 10)));
    token->Cancel();
    token->Cancel();  // idempotent
    for (auto& thread : threads) thread.join();
    EXPECT_TRUE(token->cancelled());
    EXPECT_FALSE(token->WaitFor(milliseconds(1)));
    EXPECT_EQ(waits_after_cancel.load(), 0) << "round " << round;
    // A callback never removed (odd i) runs exactly once: at Cancel(), or at
    // once when added after it. A removed one runs at most once (the cancel
    // may have won the race against the removal).
    for (int slot = 0; slot < kWorkers * kPerWorker; ++slot) {
      if (slot % kPerWorker % 2 == 1 || cancel_first) {
        EXPECT_EQ(runs[slot].load(), 1)
            << "round " << round << " slot " << slot;
      } else {
        EXPECT_LE(runs[slot].load(), 1)
            << "round " << round << " slot " << slot;
      }
    }
    if (cancel_first) {
      EXPECT_EQ(waits_cancelled.load(), kWorkers * kPerWorker);
      for (auto& r : runs) EXPECT_EQ(r.load(), 1) << "round " << round;
    }
  }
}

TEST(RuntimeConcurrencyTest, TimerQueueRunsEachCallbackExactlyOnce) {
  AsyncSleeper& timers = internal::DefaultAsyncSleeper();
  constexpr int kPerThread = 300;
  std::vector<std::atomic<int>> runs(kThreads * kPerThread);
  std::atomic<int> fired{0}, cancelled{0};
  RunThreads(kThreads, [&](int t) {
    std::vector<uint64_t> ids;
    for (int i = 0; i < kPerThread; ++i) {
      int slot = t * kPerThread + i;
      ids.push_back(timers.Schedule(microseconds((i * 37) % 2000),
                                    [&, slot](bool did_fire) {
                                      ++runs[slot];
                                      ++(did_fire ? fired : cancelled);
                                    }));
      if (i % 3 == 0) timers.Cancel(ids[i / 2]);
    }
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fired + cancelled < kThreads * kPerThread &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  int wrong = 0;
  for (auto& r : runs) wrong += r.load() != 1;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(fired + cancelled, kThreads * kPerThread);
}

// Many threads run sync calls on one client's options, sharing a throttle,
// a metrics collector, an observer and a fake clock.
TEST(RuntimeConcurrencyTest, SyncRetryLoopSharedClient) {
  auto clock = std::make_shared<FakeClock>();
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(1000).WithTokenRatio(1));
  auto metrics = std::make_shared<MetricsCollector>();
  std::atomic<int> observed{0};
  Options client =
      Options{}
          .set<ClockOption>(clock)
          .set<SleeperOption>(clock)
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
          .set<RetryThrottleOption>(throttle)
          .set<MetricsOption>(metrics)
          .set<RetryObserverOption>([&](const AttemptEvent&) { ++observed; });
  constexpr int kCalls = 500;
  std::atomic<int> ok{0}, attempts{0};
  RunThreads(kThreads, [&](int t) {
    for (int i = 0; i < kCalls; ++i) {
      int failures_left = (i + t) % 3;  // 0, 1 or 2 failures, then OK
      Options call;
      absl::StatusOr<int> r =
          RetryLoop<int>(kIdempotent, OptionsView(call, client),
                         [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                           ++attempts;
                           if (failures_left-- > 0)
                             return absl::UnavailableError("flaky");
                           return 7;
                         });
      if (r.ok() && *r == 7) ++ok;
    }
  });
  EXPECT_EQ(ok.load(), kThreads * kCalls);
  EXPECT_EQ(observed.load(), attempts.load());
  auto snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].calls, kThreads * kCalls);
  EXPECT_EQ(snapshot[0].attempts, attempts.load());
  EXPECT_EQ(snapshot[0].stopped(StopReason::kSuccess), kThreads * kCalls);
}

// The async loop: attempts complete on the transport's thread, backoff
// waits sit in the timer queue, and a token cancels some calls mid-way.
TEST(RuntimeConcurrencyTest, AsyncRetryLoopWithCancellation) {
  FakeTransport transport;
  auto metrics = std::make_shared<MetricsCollector>();
  Options client =
      Options{}
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(10))
          .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                        .WithInitialDelay(microseconds(100))
                                        .WithMaximumDelay(microseconds(500))
                                        .WithMultiplier(2.0))
          .set<MetricsOption>(metrics);
  constexpr int kCalls = 200;
  std::atomic<int> delivered{0}, ok{0}, cancelled{0}, other{0};
  std::atomic<int> double_delivery{0};
  std::atomic<int> attempts{0};
  RunThreads(kThreads, [&](int t) {
    std::vector<std::future<void>> waits;
    for (int i = 0; i < kCalls; ++i) {
      auto token = std::make_shared<CancellationToken>();
      auto failures_left = std::make_shared<std::atomic<int>>((i + t) % 4);
      auto done_once = std::make_shared<std::atomic<int>>(0);
      auto promise = std::make_shared<std::promise<void>>();
      waits.push_back(promise->get_future());
      AsyncRetryLoop<int>(
          kIdempotent, Options{}.set<CancellationOption>(token), client,
          [&transport, &attempts, failures_left](grpc::ClientContext&,
                                                 const OptionsView&,
                                                 AsyncCallback<int> done) {
            ++attempts;
            transport.Post([failures_left, done = std::move(done)] {
              if (failures_left->fetch_sub(1) > 0) {
                done(absl::UnavailableError("flaky"));
              } else {
                done(11);
              }
            });
          },
          [&, done_once, promise](absl::StatusOr<int> r) {
            if (done_once->fetch_add(1) != 0) {
              ++double_delivery;
              return;
            }
            ++delivered;
            if (r.ok()) {
              ++ok;
            } else if (r.status().code() == absl::StatusCode::kCancelled) {
              ++cancelled;
            } else {
              ++other;
            }
            promise->set_value();
          });
      if (i % 5 == 0) token->Cancel();
    }
    for (auto& w : waits) {
      ASSERT_EQ(w.wait_for(std::chrono::seconds(30)),
                std::future_status::ready);
    }
  });
  EXPECT_EQ(double_delivery.load(), 0);
  EXPECT_EQ(delivered.load(), kThreads * kCalls);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok + cancelled, kThreads * kCalls);
  EXPECT_GT(ok.load(), 0);
  // The metrics saw every call exactly once, each with how it really ended.
  std::vector<MethodMetrics> snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].method, kIdempotent.full_name);
  EXPECT_EQ(snapshot[0].calls, kThreads * kCalls);
  EXPECT_EQ(snapshot[0].attempts, attempts.load());
  EXPECT_EQ(snapshot[0].retries, attempts.load() - kThreads * kCalls);
  EXPECT_EQ(snapshot[0].stopped(StopReason::kSuccess), ok.load());
  EXPECT_EQ(snapshot[0].stopped(StopReason::kCancelled), cancelled.load());
  int64_t bucketed = 0;
  for (int64_t n : snapshot[0].latency_buckets) bucketed += n;
  EXPECT_EQ(bucketed, kThreads * kCalls);
}

}  // namespace
}  // namespace stubkit

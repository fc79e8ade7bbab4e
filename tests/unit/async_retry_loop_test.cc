// Copyright 2026 The stubkit Authors.
//
// The async loop over a fake transport: same decisions as the sync loop, no
// thread blocked, cancellation at every stage.

#include "stubkit/async_retry_loop.h"

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/retry_loop.h"
#include "tests/testing/default_policy_spec.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr MethodInfo kGet{"test.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};
constexpr MethodInfo kCreate{"test.Service.Create", RpcKind::kUnary,
                             Idempotency::kNonIdempotent};

using Done = std::function<void(absl::StatusOr<std::string>)>;

// An attempt that answers from another thread, like gRPC does.
auto ScriptedAttempt(std::shared_ptr<std::atomic<int>> attempts,
                     std::vector<absl::StatusCode> codes) {
  return
      [attempts, codes](grpc::ClientContext&, const OptionsView&, Done done) {
        int n = attempts->fetch_add(1);
        absl::StatusCode code = codes[std::min<size_t>(n, codes.size() - 1)];
        std::thread([code, done] {
          if (code == absl::StatusCode::kOk) {
            done(std::string("fine"));
          } else {
            done(absl::Status(code, "scripted"));
          }
        }).detach();
      };
}

class AsyncRetryLoopTest : public ::testing::Test {
 protected:
  AsyncRetryLoopTest() : clock_(std::make_shared<FakeClock>()) {
    client_.set<ClockOption>(clock_).set<AsyncSleeperOption>(clock_);
  }
  std::shared_ptr<FakeClock> clock_;
  Options client_;
};

TEST_F(AsyncRetryLoopTest, RetriesToSuccess) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  auto future = AsyncRetryLoop<std::string>(
      kGet, Options{}, client_,
      ScriptedAttempt(attempts,
                      {absl::StatusCode::kUnavailable,
                       absl::StatusCode::kUnavailable, absl::StatusCode::kOk}));
  absl::StatusOr<std::string> result = future.get();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "fine");
  EXPECT_EQ(attempts->load(), 3);
}

TEST_F(AsyncRetryLoopTest, SameDecisionsAsTheSyncLoop) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::string> permanent =
      AsyncRetryLoop<std::string>(
          kGet, Options{}, client_,
          ScriptedAttempt(attempts, {absl::StatusCode::kInternal}))
          .get();
  EXPECT_EQ(attempts->load(), 1);
  EXPECT_EQ(GetRetrySummary(permanent.status())->stop_reason,
            StopReason::kPermanentError);

  attempts->store(0);
  absl::StatusOr<std::string> not_idempotent =
      AsyncRetryLoop<std::string>(
          kCreate, Options{}, client_,
          ScriptedAttempt(attempts, {absl::StatusCode::kUnavailable}))
          .get();
  EXPECT_EQ(attempts->load(), 1);
  EXPECT_EQ(GetRetrySummary(not_idempotent.status())->stop_reason,
            StopReason::kNonIdempotent);

  attempts->store(0);
  absl::StatusOr<std::string> exhausted =
      AsyncRetryLoop<std::string>(
          kGet,
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(4)),
          client_, ScriptedAttempt(attempts, {absl::StatusCode::kUnavailable}))
          .get();
  EXPECT_EQ(attempts->load(), 5);
  EXPECT_THAT(exhausted.status().message(), HasSubstr("5 attempts"));
}

TEST_F(AsyncRetryLoopTest, DefaultPolicyStopsWithinThirtyMinutesOfFakeTime) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  const auto start = clock_->Now();
  absl::StatusOr<std::string> result =
      AsyncRetryLoop<std::string>(
          kGet, Options{}, client_,
          ScriptedAttempt(attempts, {absl::StatusCode::kUnavailable}))
          .get();
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kExhausted);
  EXPECT_LE(clock_->Now() - start, std::chrono::minutes(30));
  // Exact, from the spec's formula (attempts take no fake time here).
  testing::DefaultPolicyOutcome fastest =
      testing::SimulateDefaultPolicy(std::chrono::nanoseconds(0), 0.0);
  testing::DefaultPolicyOutcome slowest =
      testing::SimulateDefaultPolicy(std::chrono::nanoseconds(0), 1.0);
  ASSERT_EQ(fastest.attempts, slowest.attempts);
  EXPECT_EQ(attempts->load(), fastest.attempts);
  EXPECT_EQ(GetRetrySummary(result.status())->attempts, fastest.attempts);
  EXPECT_GE(clock_->Now() - start, fastest.elapsed - milliseconds(1));
  EXPECT_LE(clock_->Now() - start, slowest.elapsed + milliseconds(1));
}

TEST_F(AsyncRetryLoopTest, InvalidOptionsCompleteInlineWithoutAttempts) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  bool called = false;
  AsyncRetryLoop<std::string>(
      kGet,
      Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                             .WithInitialDelay(seconds(2))
                                             .WithMaximumDelay(seconds(1))
                                             .WithMultiplier(2.0)),
      client_, ScriptedAttempt(attempts, {absl::StatusCode::kOk}),
      [&](absl::StatusOr<std::string> result) {
        called = true;
        EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
      });
  EXPECT_TRUE(called);
  EXPECT_EQ(attempts->load(), 0);
}

TEST_F(AsyncRetryLoopTest, CancelledBeforeStartMakesNoAttempt) {
  auto token = std::make_shared<CancellationToken>();
  token->Cancel();
  auto attempts = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::string> result =
      AsyncRetryLoop<std::string>(
          kGet, Options{}.set<CancellationOption>(token), client_,
          ScriptedAttempt(attempts, {absl::StatusCode::kOk}))
          .get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(attempts->load(), 0);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kCancelled);
}

TEST_F(AsyncRetryLoopTest, DeadlineInThePastStopsBeforeSending) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::string> result =
      AsyncRetryLoop<std::string>(
          kGet,
          Options{}.set<DeadlineOption>(std::chrono::system_clock::now() -
                                        seconds(1)),
          client_, ScriptedAttempt(attempts, {absl::StatusCode::kOk}))
          .get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(attempts->load(), 0);
  std::optional<RetrySummary> summary = GetRetrySummary(result.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kDeadline);
  EXPECT_EQ(summary->attempts, 0);
}

TEST_F(AsyncRetryLoopTest, NoAsyncStubErrorIsNeverRetried) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::string> result =
      AsyncRetryLoop<std::string>(
          kGet,
          // Even when FAILED_PRECONDITION is made retryable.
          Options{}.set<RetryPolicyOption>(
              RetryPolicy::LimitedErrorCount(5).WithRetryableCodes(
                  {grpc::StatusCode::FAILED_PRECONDITION})),
          client_,
          [attempts](grpc::ClientContext&, const OptionsView&, Done done) {
            ++*attempts;
            done(internal::NoAsyncStubError("test.Service.Get"));
          })
          .get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("no callback API"));
  EXPECT_EQ(attempts->load(), 1);
}

// A sleeper that runs its first wait inline, in `Schedule` (the contract
// allows it), and keeps every later one pending until `Cancel` or `CancelAll`.
class InlineThenPendingSleeper : public AsyncSleeper {
 public:
  uint64_t Schedule(std::chrono::nanoseconds,
                    std::function<void(bool)> done) override {
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = ++next_id_;
      if (id > 1) {
        pending_.emplace(id, std::move(done));
        return id;
      }
    }
    done(true);
    return id;
  }
  void Cancel(uint64_t id) override {
    std::function<void(bool)> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      done = std::move(it->second);
      pending_.erase(it);
    }
    done(false);
  }
  void CancelAll() {
    std::map<uint64_t, std::function<void(bool)>> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending.swap(pending_);
    }
    for (auto& [id, done] : pending) done(false);
  }

 private:
  std::mutex mu_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::function<void(bool)>> pending_;
};

// Issue 22, item 3: the first wait fires inside `Schedule`, the next attempt
// fails inline and schedules a second wait before the first `Schedule` has
// returned. The cancel must reach the second, live wait (it used to cancel
// the first one's stale id, leaving the call in its wait).
TEST(AsyncRetryLoopWaitTest, CancelReachesAWaitScheduledWhileAnotherFired) {
  auto sleeper = std::make_shared<InlineThenPendingSleeper>();
  auto token = std::make_shared<CancellationToken>();
  std::atomic<int> attempts{0};
  auto call = Options{}
                  .set<CancellationOption>(token)
                  .set<AsyncSleeperOption>(sleeper)
                  .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5));
  auto future = AsyncRetryLoop<std::string>(
      kGet, call, Options{},
      [&attempts](grpc::ClientContext&, const OptionsView&, Done done) {
        attempts.fetch_add(1);
        done(absl::UnavailableError("inline"));
      });
  ASSERT_EQ(attempts.load(), 2);
  ASSERT_EQ(future.wait_for(milliseconds(0)), std::future_status::timeout);
  token->Cancel();
  const bool ready =
      future.wait_for(seconds(5)) == std::future_status::ready;
  if (!ready) sleeper->CancelAll();  // lets the test end either way
  absl::StatusOr<std::string> result = future.get();
  EXPECT_TRUE(ready) << "the cancel missed the pending wait";
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(attempts.load(), 2);
}

// Real timer thread: a 10-minute backoff wait ends promptly on Cancel().
TEST(AsyncRetryLoopTimerTest, CancelEndsAPendingWaitPromptly) {
  auto token = std::make_shared<CancellationToken>();
  auto attempts = std::make_shared<std::atomic<int>>(0);
  auto call = Options{}.set<CancellationOption>(token).set<BackoffPolicyOption>(
      ExponentialBackoffPolicy()
          .WithInitialDelay(std::chrono::minutes(10))
          .WithMaximumDelay(std::chrono::minutes(10))
          .WithMultiplier(1.0)
          .WithJitter(Jitter::None()));
  auto future = AsyncRetryLoop<std::string>(
      kGet, call, Options{},
      ScriptedAttempt(attempts, {absl::StatusCode::kUnavailable}));
  // Let the first attempt fail and the wait begin.
  while (attempts->load() < 1) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_EQ(future.wait_for(milliseconds(0)), std::future_status::timeout);
  const auto cancelled_at = std::chrono::steady_clock::now();
  token->Cancel();
  absl::StatusOr<std::string> result = future.get();
  const auto latency = std::chrono::steady_clock::now() - cancelled_at;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(attempts->load(), 1);
  // Far sooner than the 10-minute wait it cancelled. The bound is loose on
  // purpose: this runs beside other tests (ctest -j2, ASan) on 2 cores; the
  // measured figure is recorded, not asserted.
  EXPECT_LT(latency, seconds(1));
  ::testing::Test::RecordProperty(
      "cancel_latency_us",
      static_cast<int>(
          std::chrono::duration_cast<std::chrono::microseconds>(latency)
              .count()));
}

TEST(AsyncRetryLoopTimerTest, ManyCallsWaitOnOneTimerThread) {
  constexpr int kCalls = 1000;
  auto attempts = std::make_shared<std::atomic<int>>(0);
  auto call =
      Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                             .WithInitialDelay(milliseconds(20))
                                             .WithMaximumDelay(milliseconds(20))
                                             .WithMultiplier(1.0)
                                             .WithJitter(Jitter::None()));
  std::vector<std::future<absl::StatusOr<std::string>>> futures;
  // Attempts answer inline, so only the timer thread ever runs the retries.
  auto inline_attempt = [attempts](grpc::ClientContext&, const OptionsView&,
                                   Done done) {
    if (attempts->fetch_add(1) % 2 == 0) {
      done(absl::UnavailableError("first"));
    } else {
      done(std::string("fine"));
    }
  };
  for (int i = 0; i < kCalls; ++i) {
    futures.push_back(
        AsyncRetryLoop<std::string>(kGet, call, Options{}, inline_attempt));
  }
  int ok = 0;
  for (auto& f : futures) ok += f.get().ok() ? 1 : 0;
  EXPECT_EQ(ok, kCalls);
  EXPECT_EQ(attempts->load(), 2 * kCalls);
}

TEST(CancellationTokenTest, SyncLoopCancelledDuringBackoffReturnsPromptly) {
  auto token = std::make_shared<CancellationToken>();
  auto call = Options{}.set<CancellationOption>(token).set<BackoffPolicyOption>(
      ExponentialBackoffPolicy()
          .WithInitialDelay(std::chrono::minutes(10))
          .WithMaximumDelay(std::chrono::minutes(10))
          .WithMultiplier(1.0)
          .WithJitter(Jitter::None()));
  std::atomic<int> attempts{0};
  std::chrono::steady_clock::time_point cancelled_at;
  std::thread canceller([&] {
    while (attempts.load() < 1) std::this_thread::sleep_for(milliseconds(1));
    std::this_thread::sleep_for(milliseconds(50));
    cancelled_at = std::chrono::steady_clock::now();
    token->Cancel();
  });
  absl::StatusOr<int> result =
      RetryLoop<int>(kGet, OptionsView(call, Options{}),
                     [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                       ++attempts;
                       return absl::UnavailableError("down");
                     });
  const auto returned_at = std::chrono::steady_clock::now();
  canceller.join();
  const auto latency = returned_at - cancelled_at;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(attempts.load(), 1);
  // Far sooner than the 10-minute wait it cancelled (see above).
  EXPECT_LT(latency, seconds(1));
  ::testing::Test::RecordProperty(
      "cancel_latency_us",
      static_cast<int>(
          std::chrono::duration_cast<std::chrono::microseconds>(latency)
              .count()));
}

// An attempt that answers on the thread that started it: the first attempt
// fails, the second succeeds. The second starts from the backoff timer, so
// the call's callback runs on the thread that ran the timer's callback.
auto InlineAttempt() {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  return [attempts](grpc::ClientContext&, const OptionsView&, Done done) {
    if (attempts->fetch_add(1) == 0) {
      done(absl::UnavailableError("first attempt"));
    } else {
      done(std::string("fine"));
    }
  };
}

// Issue 15: one call's callback blocking (here until the others are done,
// at most 2 s) must not hold up other calls' backoff timers on the
// process-wide sleeper. With one thread running every fired timer, the
// other calls' 10 ms waits ended only when the blocking callback returned.
TEST(AsyncRetryLoopDefaultSleeperTest, BlockingCallbackDelaysNoOtherBackoff) {
  using Steady = std::chrono::steady_clock;
  constexpr auto kBlockFor = seconds(2);
  const Options fast =
      Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                             .WithInitialDelay(milliseconds(10))
                                             .WithMaximumDelay(milliseconds(10))
                                             .WithMultiplier(1.0)
                                             .WithJitter(Jitter::None()));
  std::promise<void> others_done;
  std::shared_future<void> others_done_future = others_done.get_future();
  std::promise<void> blocking_entered;
  std::promise<void> blocking_returned;
  std::atomic<bool> blocking{false};
  AsyncRetryLoop<std::string>(kGet, Options{}, fast, InlineAttempt(),
                              [&](absl::StatusOr<std::string> result) {
                                EXPECT_TRUE(result.ok()) << result.status();
                                blocking = true;
                                blocking_entered.set_value();
                                others_done_future.wait_for(kBlockFor);
                                blocking = false;
                                blocking_returned.set_value();
                              });
  blocking_entered.get_future().wait();

  constexpr int kOthers = 5;
  std::atomic<int> finished{0};
  std::atomic<int> finished_while_blocked{0};
  const Steady::time_point start = Steady::now();
  std::vector<std::promise<Steady::duration>> took(kOthers);
  for (int i = 0; i < kOthers; ++i) {
    AsyncRetryLoop<std::string>(kGet, Options{}, fast, InlineAttempt(),
                                [&, i](absl::StatusOr<std::string> result) {
                                  EXPECT_TRUE(result.ok()) << result.status();
                                  if (blocking) ++finished_while_blocked;
                                  took[i].set_value(Steady::now() - start);
                                  if (++finished == kOthers)
                                    others_done.set_value();
                                });
  }
  for (int i = 0; i < kOthers; ++i) {
    // Each waited 10 ms; far less than the blocking callback's 2 s.
    EXPECT_LT(
        std::chrono::duration_cast<milliseconds>(took[i].get_future().get())
            .count(),
        milliseconds(kBlockFor / 2).count())
        << "call " << i;
  }
  EXPECT_EQ(finished_while_blocked.load(), kOthers);
  blocking_returned.get_future().wait();
}

}  // namespace
}  // namespace stubkit

namespace stubkit {
namespace {

// Issue 22, item 13: the future forms' callback.
TEST(FulfilPromiseTest, ADroppedCallbackMakesTheFutureReadyWithAnError) {
  auto [future, fulfil] = internal::FulfilPromise<std::string>::Make();
  {
    AsyncCallback<std::string> callback = fulfil;  // as a connection gets it
    AsyncCallback<std::string> copy = callback;
  }
  // The last copy is the local one.
  { auto dropped = std::move(fulfil); }
  ASSERT_EQ(future.wait_for(seconds(0)), std::future_status::ready);
  absl::StatusOr<std::string> result = future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("without being called"));
}

TEST(FulfilPromiseTest, TheFirstCallWinsAndASecondIsIgnored) {
  std::future<absl::StatusOr<std::string>> future;
  {
    auto [f, fulfil] = internal::FulfilPromise<std::string>::Make();
    future = std::move(f);
    AsyncCallback<std::string> callback = fulfil;
    AsyncCallback<std::string> copy = callback;
    callback(std::string("first"));
    copy(std::string("second"));  // caught: no double set_value, no crash
    callback(absl::UnavailableError("third"));
  }
  absl::StatusOr<std::string> result = future.get();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "first");
}

TEST(FulfilPromiseTest, CalledFromAnotherThreadAfterTheCallerLetGo) {
  auto [future, fulfil] = internal::FulfilPromise<std::string>::Make();
  std::thread later([callback = AsyncCallback<std::string>(fulfil)] {
    std::this_thread::sleep_for(milliseconds(1));
    callback(std::string("late"));
  });
  { auto gone = std::move(fulfil); }
  EXPECT_EQ(*future.get(), "late");
  later.join();
}

}  // namespace
}  // namespace stubkit

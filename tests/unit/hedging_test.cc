// Copyright 2026 The stubkit Authors.
//
// Hedging over a fake transport: attempts complete when the test says so,
// the hedge timer fires when the test says so (ManualSleeper), and time
// moves only when the test moves it (FakeClock). Covers the async form
// (`AsyncHedgedCall`) and the sync form (`internal::RunUnary`).

#include "stubkit/hedging.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/internal/entry/unary_call.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr MethodInfo kGet{"test.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};

// Only a hang guard: a correct call ends long before.
constexpr auto kHangGuard = std::chrono::seconds(30);

using Result = absl::StatusOr<std::string>;

// A hedge timer that fires only when the test says so. Cancel() calls the
// callback with false, inline, like the default timer queue.
class ManualSleeper : public AsyncSleeper {
 public:
  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override {
    absl::MutexLock lock(&mu_);
    const uint64_t id = next_id_++;
    pending_[id] = Timer{duration, std::move(done)};
    ++scheduled_;
    return id;
  }
  void Cancel(uint64_t id) override {
    std::function<void(bool)> done;
    std::function<void()> hook;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      done = std::move(it->second.done);
      pending_.erase(it);
      hook = on_cancel_;
    }
    if (hook) hook();
    done(false);
  }
  // Fires the oldest pending timer; false when none is pending.
  bool FireNext() {
    std::function<void(bool)> done;
    {
      absl::MutexLock lock(&mu_);
      if (pending_.empty()) return false;
      done = std::move(pending_.begin()->second.done);
      pending_.erase(pending_.begin());
    }
    done(true);
    return true;
  }
  int pending() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(pending_.size());
  }
  std::chrono::nanoseconds last_delay() {
    absl::MutexLock lock(&mu_);
    return pending_.empty() ? std::chrono::nanoseconds(-1)
                            : pending_.rbegin()->second.duration;
  }
  // Runs in Cancel(), before the cancelled callback: stands in for whatever
  // another thread does at that moment.
  void set_on_cancel(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    on_cancel_ = std::move(hook);
  }

 private:
  struct Timer {
    std::chrono::nanoseconds duration;
    std::function<void(bool)> done;
  };
  absl::Mutex mu_;
  std::map<uint64_t, Timer> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  int scheduled_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void()> on_cancel_ ABSL_GUARDED_BY(mu_);
};

// The async fake transport: attempts wait until the test completes them.
class FakeTransport {
 public:
  AsyncAttempt<std::string> Attempt() {
    return [this](grpc::ClientContext&, const OptionsView&,
                  AsyncCallback<std::string> done) {
      absl::MutexLock lock(&mu_);
      pending_.push_back(Pending{started_++, std::move(done)});
    };
  }
  // Completes the attempt that started `n`-th (from 0), if still pending.
  bool Complete(int n, Result result) {
    AsyncCallback<std::string> done;
    {
      absl::MutexLock lock(&mu_);
      for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->n != n) continue;
        done = std::move(it->done);
        pending_.erase(it);
        break;
      }
    }
    if (!done) return false;
    done(std::move(result));
    return true;
  }
  int started() {
    absl::MutexLock lock(&mu_);
    return started_;
  }
  std::vector<int> pending() {
    absl::MutexLock lock(&mu_);
    std::vector<int> out;
    for (const Pending& p : pending_) out.push_back(p.n);
    return out;
  }

 private:
  struct Pending {
    int n;
    AsyncCallback<std::string> done;
  };
  absl::Mutex mu_;
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
};

// Collects the result of an async call and counts deliveries.
struct Outcome {
  std::atomic<int> calls{0};
  std::promise<Result> promise;
  std::future<Result> future = promise.get_future();

  AsyncCallback<std::string> Callback() {
    return [this](Result result) {
      if (calls.fetch_add(1) == 0) promise.set_value(std::move(result));
    };
  }
  bool ready() {
    return future.wait_for(std::chrono::seconds(0)) ==
           std::future_status::ready;
  }
  // Waits (hang guard only) for the result.
  std::optional<Result> Get() {
    if (future.wait_for(kHangGuard) != std::future_status::ready) {
      return std::nullopt;
    }
    return future.get();
  }
};

// Joins `thread` once `outcome` is in; leaves it behind (it may be
// deadlocked, on broken code) when the hang guard runs out.
std::optional<Result> GetAndJoin(Outcome& outcome, std::thread& thread) {
  std::optional<Result> result = outcome.Get();
  if (result.has_value()) {
    thread.join();
  } else {
    thread.detach();
  }
  return result;
}

Result Unavailable() { return absl::UnavailableError("down"); }
Result DeadlineExceeded() { return absl::DeadlineExceededError("too slow"); }

class HedgingTest : public ::testing::Test {
 protected:
  HedgingTest()
      : clock_(std::make_shared<FakeClock>()),
        sleeper_(std::make_shared<ManualSleeper>()) {
    client_.set<ClockOption>(clock_).set<AsyncSleeperOption>(sleeper_);
  }

  static Options Hedged(int max_attempts, std::chrono::nanoseconds delay) {
    return Options{}.set<HedgingPolicyOption>(
        HedgingPolicy().WithMaxAttempts(max_attempts).WithHedgingDelay(delay));
  }

  void StartAsync(const Options& call, Outcome& outcome) {
    internal::AsyncHedgedCall<std::string>(
        kGet, call, client_, transport_.Attempt(), outcome.Callback());
  }

  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<ManualSleeper> sleeper_;
  FakeTransport transport_;
  Options client_;
};

TEST_F(HedgingTest, HedgeWinsAndTheTimerIsCancelled) {
  Outcome outcome;
  StartAsync(Hedged(3, seconds(1)), outcome);
  EXPECT_EQ(transport_.started(), 1);
  ASSERT_TRUE(sleeper_->FireNext());
  EXPECT_EQ(transport_.started(), 2);
  EXPECT_EQ(sleeper_->pending(), 1);  // the third hedge's timer
  ASSERT_TRUE(transport_.Complete(1, std::string("second")));
  ASSERT_TRUE(outcome.ready());
  EXPECT_EQ(*outcome.future.get(), "second");
  EXPECT_EQ(sleeper_->pending(), 0);
  // The loser's late answer changes nothing.
  transport_.Complete(0, std::string("first"));
  EXPECT_EQ(outcome.calls.load(), 1);
}

// Issue 22, item 11: every hedged attempt reaches the observer, the losers
// marked as such, in launch order, before the final event.
TEST_F(HedgingTest, EveryAttemptReachesTheObserverLosersMarked) {
  struct Seen {
    int attempt;
    absl::StatusCode code;
    bool final;
    bool hedge_loser;
  };
  std::vector<Seen> events;
  client_.set<RetryObserverOption>([&events](const AttemptEvent& e) {
    events.push_back(Seen{e.attempt, e.status.code(), e.final, e.hedge_loser});
  });
  Outcome outcome;
  StartAsync(Hedged(3, seconds(1)), outcome);
  ASSERT_TRUE(transport_.Complete(0, Unavailable()));  // non-fatal: hedges
  ASSERT_EQ(transport_.started(), 2);
  ASSERT_TRUE(sleeper_->FireNext());
  ASSERT_EQ(transport_.started(), 3);
  ASSERT_TRUE(transport_.Complete(2, std::string("third")));
  ASSERT_TRUE(outcome.ready());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].attempt, 1);
  EXPECT_EQ(events[0].code, absl::StatusCode::kUnavailable);
  EXPECT_FALSE(events[0].final);
  EXPECT_FALSE(events[0].hedge_loser);
  EXPECT_EQ(events[1].attempt, 2);  // still running when the third won
  EXPECT_EQ(events[1].code, absl::StatusCode::kCancelled);
  EXPECT_FALSE(events[1].final);
  EXPECT_TRUE(events[1].hedge_loser);
  EXPECT_EQ(events[2].attempt, 3);
  EXPECT_EQ(events[2].code, absl::StatusCode::kOk);
  EXPECT_TRUE(events[2].final);
  EXPECT_FALSE(events[2].hedge_loser);
  transport_.Complete(1, std::string("late"));
  EXPECT_EQ(events.size(), 3u);  // nothing after the final event
}

// Issue item 2: a throttle token taken in OnAttemptFailed, then the bucket
// drained (by other calls) before the hedge is launched, left the call with
// nothing in flight, no timer and no result: it never completed.
TEST_F(HedgingTest, ThrottleDrainedBetweenDecisionAndLaunchStillCompletes) {
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(1));
  client_.set<RetryThrottleOption>(throttle);
  // Other calls failing at the moment this call disarms its hedge timer.
  sleeper_->set_on_cancel([throttle] {
    for (int i = 0; i < 10; ++i) throttle->OnRetryableFailure();
  });
  Outcome outcome;
  StartAsync(Hedged(3, seconds(10)), outcome);
  ASSERT_EQ(transport_.started(), 1);
  transport_.Complete(0, Unavailable());
  // Either a hedge went out, or the call ended: never neither.
  if (!outcome.ready()) {
    ASSERT_EQ(transport_.pending().size(), 1u)
        << "nothing in flight and no result: the call would hang";
    transport_.Complete(transport_.pending()[0], std::string("ok"));
  }
  std::optional<Result> result = outcome.Get();
  ASSERT_TRUE(result.has_value()) << "the hedged call never completed";
  EXPECT_EQ(outcome.calls.load(), 1);
}

TEST_F(HedgingTest, ThrottledNonFatalFailureEndsTheCallWhenNothingIsInFlight) {
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  throttle->OnRetryableFailure();  // 3 tokens: the next failure drains it
  client_.set<RetryThrottleOption>(throttle);
  Outcome outcome;
  StartAsync(Hedged(3, seconds(10)), outcome);
  transport_.Complete(0, Unavailable());
  ASSERT_TRUE(outcome.ready());
  Result result = outcome.future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kThrottled);
  EXPECT_EQ(sleeper_->pending(), 0);
}

// Issue item 3: an attempt that ran out of its own attempt timeout ended the
// whole hedged call with DEADLINE_EXCEEDED, cancelling a hedge about to win.
TEST_F(HedgingTest, AttemptTimeoutIsNotFatal) {
  Outcome outcome;
  StartAsync(Hedged(3, milliseconds(100)).set<AttemptTimeoutOption>(seconds(1)),
             outcome);
  ASSERT_TRUE(sleeper_->FireNext());  // the hedge goes out at 100 ms
  ASSERT_EQ(transport_.started(), 2);
  clock_->Advance(seconds(1));
  // Attempt 1 runs out of its own 1 s; the hedge is still running.
  transport_.Complete(0, DeadlineExceeded());
  ASSERT_FALSE(outcome.ready()) << outcome.future.get().status();
  ASSERT_TRUE(transport_.Complete(1, std::string("hedge")));
  std::optional<Result> result = outcome.Get();
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(result->ok()) << result->status();
  EXPECT_EQ(**result, "hedge");
}

TEST_F(HedgingTest, AttemptTimeoutSendsTheNextHedgeAtOnce) {
  Outcome outcome;
  StartAsync(Hedged(3, seconds(60)).set<AttemptTimeoutOption>(seconds(1)),
             outcome);
  clock_->Advance(seconds(1));
  transport_.Complete(0, DeadlineExceeded());
  ASSERT_FALSE(outcome.ready());
  EXPECT_EQ(transport_.started(), 2);
  transport_.Complete(1, std::string("fine"));
  ASSERT_TRUE(outcome.ready());
  EXPECT_TRUE(outcome.future.get().ok());
}

TEST_F(HedgingTest, TheCallsOwnEndIsFinalWithItsStopReason) {
  Outcome outcome;
  StartAsync(Hedged(3, seconds(1)).set<TotalTimeoutOption>(seconds(5)),
             outcome);
  ASSERT_TRUE(sleeper_->FireNext());
  clock_->Advance(seconds(5));
  transport_.Complete(0, DeadlineExceeded());
  ASSERT_TRUE(outcome.ready());
  Result result = outcome.future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
  EXPECT_THAT(result.status().message(), HasSubstr("deadline"));
}

TEST_F(HedgingTest, PolicyTimeLimitIsFinalWithItsStopReason) {
  Outcome outcome;
  StartAsync(Hedged(3, seconds(1))
                 .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(5))),
             outcome);
  clock_->Advance(seconds(5));
  transport_.Complete(0, DeadlineExceeded());
  ASSERT_TRUE(outcome.ready());
  Result result = outcome.future.get();
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kExhausted);
}

// Issue item 4: the observer ran under the hedging mutex; cancelling the
// call from inside it deadlocked.
TEST_F(HedgingTest, ObserverMayCancelTheCall) {
  auto token = std::make_shared<CancellationToken>();
  std::atomic<int> events{0};
  client_.set<RetryObserverOption>([token, &events](const AttemptEvent&) {
    ++events;
    token->Cancel();
  });
  Outcome outcome;
  std::thread caller([&] {
    StartAsync(Hedged(3, seconds(1)).set<CancellationOption>(token), outcome);
    EXPECT_TRUE(sleeper_->FireNext());
    transport_.Complete(1, std::string("hedge"));
  });
  std::optional<Result> result = GetAndJoin(outcome, caller);
  ASSERT_TRUE(result.has_value()) << "deadlock: observer under a lock";
  EXPECT_TRUE(result->ok()) << result->status();
  // The loser (attempt 1, still running) and the winner's final event.
  EXPECT_EQ(events.load(), 2);
  transport_.Complete(0, absl::CancelledError("cancelled"));
  EXPECT_EQ(outcome.calls.load(), 1);
}

class CancellingSink : public LogSink {
 public:
  explicit CancellingSink(std::shared_ptr<CancellationToken> token)
      : token_(std::move(token)) {}
  void Write(absl::string_view line) override {
    lines.fetch_add(1);
    if (absl::StrContains(line, "attempt 2 starts")) token_->Cancel();
  }
  std::atomic<int> lines{0};

 private:
  std::shared_ptr<CancellationToken> token_;
};

TEST_F(HedgingTest, LogSinkMayCancelTheCall) {
  auto token = std::make_shared<CancellationToken>();
  auto sink = std::make_shared<CancellingSink>(token);
  client_.set<LogLevelOption>(LogLevel::kRpc).set<LogSinkOption>(sink);
  Outcome outcome;
  std::thread caller([&] {
    StartAsync(Hedged(3, seconds(1)).set<CancellationOption>(token), outcome);
    sleeper_->FireNext();
  });
  std::optional<Result> result = GetAndJoin(outcome, caller);
  ASSERT_TRUE(result.has_value()) << "deadlock: log sink under a lock";
  EXPECT_EQ(result->status().code(), absl::StatusCode::kCancelled);
  for (int n : transport_.pending()) {
    transport_.Complete(n, absl::CancelledError("cancelled"));
  }
  EXPECT_EQ(outcome.calls.load(), 1);
}

TEST_F(HedgingTest, CancelEndsTheCallAtOnce) {
  auto token = std::make_shared<CancellationToken>();
  Outcome outcome;
  StartAsync(Hedged(3, seconds(1)).set<CancellationOption>(token), outcome);
  sleeper_->FireNext();
  token->Cancel();
  ASSERT_TRUE(outcome.ready());
  EXPECT_EQ(outcome.future.get().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(sleeper_->pending(), 0);
  for (int n : transport_.pending()) {
    transport_.Complete(n, absl::CancelledError("cancelled"));
  }
  EXPECT_EQ(outcome.calls.load(), 1);
}

// Item 11d: a deadline already past sends nothing.
TEST_F(HedgingTest, DeadlineInThePastStopsBeforeSendingAsync) {
  Outcome outcome;
  StartAsync(
      Hedged(3, seconds(1))
          .set<DeadlineOption>(std::chrono::system_clock::now() - seconds(1)),
      outcome);
  ASSERT_TRUE(outcome.ready());
  Result result = outcome.future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(GetRetrySummary(result.status()).has_value());
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
  EXPECT_EQ(GetRetrySummary(result.status())->attempts, 0);
  EXPECT_EQ(transport_.started(), 0);
}

// --- The sync form. ---------------------------------------------------------

// An async attempt a sync call must never use.
auto NoAsyncAttempt() {
  return [] {
    return AsyncAttempt<std::string>([](grpc::ClientContext&,
                                        const OptionsView&,
                                        AsyncCallback<std::string> done) {
      ADD_FAILURE() << "a sync call used the async attempt";
      done(absl::InternalError("async attempt used"));
    });
  };
}

bool WaitFor(absl::Notification& notification) {
  return notification.WaitForNotificationWithTimeout(absl::FromChrono(
      std::chrono::duration_cast<std::chrono::seconds>(kHangGuard)));
}

// Issue item 5: sync hedged calls went through the async attempt, skipping
// decorators that override only the sync method.
TEST_F(HedgingTest, SyncCallRunsTheSyncAttemptOnTheCallersThread) {
  std::atomic<int> attempts{0};
  std::thread::id attempt_thread;
  auto attempt = [&](grpc::ClientContext&) -> Result {
    ++attempts;
    attempt_thread = std::this_thread::get_id();
    return std::string("fine");
  };
  Options call = Hedged(3, seconds(1));
  Result result = internal::RunUnary<std::string>(
      kGet, OptionsView(call, client_), std::string("request"), attempt,
      NoAsyncAttempt());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "fine");
  EXPECT_EQ(attempts.load(), 1);
  // No hedge fired: no thread was started for the call.
  EXPECT_EQ(attempt_thread, std::this_thread::get_id());
  EXPECT_EQ(sleeper_->pending(), 0);  // the hedge timer was cancelled
}

TEST_F(HedgingTest, SyncNonFatalFailureRetriesOnTheSameThread) {
  std::vector<std::thread::id> threads;
  auto attempt = [&](grpc::ClientContext&) -> Result {
    threads.push_back(std::this_thread::get_id());
    if (threads.size() == 1) return Unavailable();
    return std::string("second");
  };
  Options call = Hedged(3, seconds(60));
  Result result = internal::RunUnary<std::string>(
      kGet, OptionsView(call, client_), std::string("request"), attempt,
      NoAsyncAttempt());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "second");
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0], std::this_thread::get_id());
  EXPECT_EQ(threads[1], std::this_thread::get_id());
}

TEST_F(HedgingTest, SyncHedgeRunsOnItsOwnThreadAndTheCallWaitsForIt) {
  absl::Notification first_started, hedge_started, release_hedge, delivered;
  std::atomic<bool> returned{false};
  std::atomic<bool> returned_before_hedge_ended{false};
  std::thread::id caller_thread, first_thread, hedge_thread;
  std::atomic<int> attempts{0};
  auto attempt = [&](grpc::ClientContext&) -> Result {
    if (attempts.fetch_add(1) == 0) {
      first_thread = std::this_thread::get_id();
      first_started.Notify();
      if (!WaitFor(hedge_started)) return absl::InternalError("no hedge");
      return std::string("first");  // wins while the hedge still runs
    }
    hedge_thread = std::this_thread::get_id();
    hedge_started.Notify();
    WaitFor(release_hedge);
    returned_before_hedge_ended = returned.load();
    return absl::CancelledError("lost");
  };
  client_.set<RetryObserverOption>([&](const AttemptEvent& event) {
    if (event.final) delivered.Notify();
  });
  Options call = Hedged(2, seconds(1));
  Result result = absl::UnknownError("not run");
  std::thread caller([&] {
    caller_thread = std::this_thread::get_id();
    result = internal::RunUnary<std::string>(kGet, OptionsView(call, client_),
                                             std::string("request"), attempt,
                                             NoAsyncAttempt());
    returned = true;
  });
  ASSERT_TRUE(WaitFor(first_started));
  ASSERT_EQ(sleeper_->pending(), 1);
  ASSERT_TRUE(sleeper_->FireNext());  // starts the hedge's thread
  ASSERT_TRUE(WaitFor(delivered));
  // The winner is known; the call must still wait for the hedge's thread,
  // which uses the caller's attempt (and stack).
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load());
  release_hedge.Notify();
  caller.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "first");
  EXPECT_FALSE(returned_before_hedge_ended.load());
  EXPECT_EQ(first_thread, caller_thread);
  EXPECT_NE(hedge_thread, caller_thread);
  EXPECT_NE(hedge_thread, std::this_thread::get_id());
}

TEST_F(HedgingTest, SyncObserverMayCancelTheCall) {
  auto token = std::make_shared<CancellationToken>();
  client_.set<RetryObserverOption>(
      [token](const AttemptEvent&) { token->Cancel(); });
  auto attempt = [](grpc::ClientContext&) -> Result {
    return std::string("fine");
  };
  Options call = Hedged(3, seconds(1)).set<CancellationOption>(token);
  auto done = std::make_shared<std::promise<Result>>();
  std::future<Result> future = done->get_future();
  std::thread caller([=, client = client_]() mutable {
    done->set_value(internal::RunUnary<std::string>(
        kGet, OptionsView(call, client), std::string("request"), attempt,
        NoAsyncAttempt()));
  });
  if (future.wait_for(kHangGuard) != std::future_status::ready) {
    caller.detach();
    FAIL() << "deadlock: observer under a lock";
  }
  caller.join();
  EXPECT_TRUE(future.get().ok());
}

// Item 11d, sync and hedged: a deadline already past sends nothing.
TEST_F(HedgingTest, DeadlineInThePastStopsBeforeSendingSync) {
  std::atomic<int> attempts{0};
  auto attempt = [&](grpc::ClientContext&) -> Result {
    ++attempts;
    return std::string("fine");
  };
  Options call =
      Hedged(3, seconds(1))
          .set<DeadlineOption>(std::chrono::system_clock::now() - seconds(1));
  Result result = internal::RunUnary<std::string>(
      kGet, OptionsView(call, client_), std::string("request"), attempt,
      NoAsyncAttempt());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(GetRetrySummary(result.status()).has_value());
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
  EXPECT_EQ(GetRetrySummary(result.status())->attempts, 0);
  EXPECT_EQ(attempts.load(), 0);
}

TEST_F(HedgingTest, NoAsyncStubErrorIsNeitherHedgedNorRetried) {
  Outcome outcome;
  // Even when the user made FAILED_PRECONDITION non-fatal.
  internal::AsyncHedgedCall<std::string>(
      kGet,
      Options{}.set<HedgingPolicyOption>(
          HedgingPolicy()
              .WithMaxAttempts(3)
              .WithHedgingDelay(seconds(1))
              .WithNonFatalCodes({grpc::StatusCode::FAILED_PRECONDITION})),
      client_,
      [](grpc::ClientContext&, const OptionsView&,
         AsyncCallback<std::string> done) {
        done(internal::NoAsyncStubError("test.Service.Get"));
      },
      outcome.Callback());
  ASSERT_TRUE(outcome.ready());
  Result result = outcome.future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("test.Service.Get"));
  EXPECT_THAT(result.status().message(), HasSubstr("no callback API"));
  EXPECT_EQ(GetRetrySummary(result.status())->attempts, 1);
}

// Every call completes exactly once, whatever the order of attempt results,
// timer firings, cancellation and a throttle drained by other calls.
TEST_F(HedgingTest, RandomInterleavingsCompleteExactlyOnce) {
  for (int seed = 0; seed < 3000; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 random(seed);
    auto pick = [&random](int n) {
      return std::uniform_int_distribution<int>(0, n - 1)(random);
    };
    auto clock = std::make_shared<FakeClock>();
    auto sleeper = std::make_shared<ManualSleeper>();
    auto throttle = std::make_shared<RetryThrottle>(
        RetryThrottle::Config().WithMaxTokens(6).WithTokenRatio(1));
    auto token = std::make_shared<CancellationToken>();
    FakeTransport transport;
    Options call = Hedged(1 + pick(4), seconds(1));
    if (pick(2) == 0) call.set<AttemptTimeoutOption>(seconds(2));
    if (pick(2) == 0) call.set<TotalTimeoutOption>(seconds(4));
    if (pick(2) == 0) call.set<RetryThrottleOption>(throttle);
    call.set<CancellationOption>(token);
    if (pick(3) == 0) {
      sleeper->set_on_cancel([throttle, drain = pick(4)] {
        for (int i = 0; i < drain; ++i) throttle->OnRetryableFailure();
      });
    }
    Options client;
    client.set<ClockOption>(clock).set<AsyncSleeperOption>(sleeper);
    Outcome outcome;
    internal::AsyncHedgedCall<std::string>(
        kGet, call, client, transport.Attempt(), outcome.Callback());
    for (int step = 0; step < 100; ++step) {
      std::vector<int> pending = transport.pending();
      const int timers = sleeper->pending();
      if (pending.empty() && timers == 0) break;
      switch (pick(6)) {
        case 0:
          if (timers > 0) sleeper->FireNext();
          break;
        case 1:
          clock->Advance(seconds(1));
          break;
        case 2:
          if (pick(8) == 0) token->Cancel();
          break;
        case 3:
          if (pick(2) == 0)
            throttle->OnRetryableFailure();
          else
            throttle->OnSuccess();
          break;
        default: {
          if (pending.empty()) break;
          const int n = pending[pick(static_cast<int>(pending.size()))];
          static const absl::StatusCode kCodes[] = {
              absl::StatusCode::kUnavailable, absl::StatusCode::kUnavailable,
              absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kInternal,
              absl::StatusCode::kCancelled};
          if (pick(4) == 0) {
            transport.Complete(n, std::string("ok"));
          } else {
            transport.Complete(n, absl::Status(kCodes[pick(5)], "scripted"));
          }
        }
      }
    }
    // Then let every timer fire and every attempt fail.
    for (int step = 0; step < 100; ++step) {
      if (sleeper->FireNext()) continue;
      std::vector<int> pending = transport.pending();
      if (pending.empty()) break;
      transport.Complete(pending[0], Unavailable());
    }
    // With nothing in flight and no timer pending, the call must be over.
    ASSERT_TRUE(transport.pending().empty() && sleeper->pending() == 0);
    ASSERT_TRUE(outcome.ready()) << "nothing in flight, nothing pending, "
                                    "and the call never completed";
    EXPECT_EQ(outcome.calls.load(), 1);
  }
}

// Issue 27: with an AdaptiveHedgingOption the hedge timer waits the
// percentile of the latencies recorded by earlier calls, and the policy's
// fixed delay until there are enough of them.
TEST_F(HedgingTest, AdaptiveDelayIsLearnedFromEarlierCalls) {
  auto adaptive =
      std::make_shared<AdaptiveHedging>(AdaptiveHedging::Config()
                                            .WithPercentile(0.9)
                                            .WithWindow(seconds(10))
                                            .WithMinDelay(milliseconds(1))
                                            .WithMaxDelay(milliseconds(200))
                                            .WithMinSamples(10));
  const Options call =
      Hedged(2, milliseconds(50)).set<AdaptiveHedgingOption>(adaptive);
  for (int i = 0; i < 10; ++i) {
    Outcome outcome;
    StartAsync(call, outcome);
    // Too few samples yet: the fixed delay.
    EXPECT_EQ(sleeper_->last_delay(), milliseconds(50)) << i;
    clock_->Advance(milliseconds(4));
    ASSERT_TRUE(transport_.Complete(i, std::string("fast")));
    ASSERT_TRUE(outcome.ready());
  }
  EXPECT_EQ(adaptive->samples(clock_->Now()), 10);
  clock_->Advance(milliseconds(100));  // the learned delay's refresh
  Outcome outcome;
  StartAsync(call, outcome);
  const std::chrono::nanoseconds learned = sleeper_->last_delay();
  EXPECT_GE(learned, milliseconds(4));
  EXPECT_LE(learned, std::chrono::microseconds(4250));  // a bucket's width
  ASSERT_TRUE(transport_.Complete(10, std::string("fast")));
  EXPECT_EQ(*outcome.future.get(), "fast");
}

// A hedge the hedging budget refuses is not sent: the call waits for its
// first attempt, and the metrics count the refusal.
TEST_F(HedgingTest, HedgeRefusedByTheBudgetWaitsForTheFirstAttempt) {
  auto metrics = std::make_shared<MetricsCollector>();
  client_.set<MetricsOption>(metrics);
  // 1 hedge per second whatever the volume, plus 5 % of the calls.
  auto adaptive = std::make_shared<AdaptiveHedging>(
      AdaptiveHedging::Config().WithMinHedgesPerSecond(1).WithMaxExtraLoad(
          0.05));
  const Options call =
      Hedged(3, milliseconds(50)).set<AdaptiveHedgingOption>(adaptive);
  // The first call may hedge (the reserve).
  Outcome first;
  StartAsync(call, first);
  ASSERT_TRUE(sleeper_->FireNext());
  EXPECT_EQ(transport_.started(), 2);
  ASSERT_TRUE(transport_.Complete(1, std::string("hedge")));
  EXPECT_EQ(*first.future.get(), "hedge");
  // The second, in the same second, may not.
  Outcome second;
  StartAsync(call, second);
  EXPECT_EQ(transport_.started(), 3);
  ASSERT_TRUE(sleeper_->FireNext());
  EXPECT_EQ(transport_.started(), 3);  // refused: nothing sent
  EXPECT_EQ(sleeper_->pending(), 0);   // and no further hedge timer
  EXPECT_FALSE(second.ready());        // the first attempt goes on
  clock_->Advance(milliseconds(180));
  ASSERT_TRUE(transport_.Complete(2, std::string("waited")));
  EXPECT_EQ(*second.future.get(), "waited");
  const std::vector<MethodMetrics> snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 1U);
  EXPECT_EQ(snapshot[0].calls, 2);
  EXPECT_EQ(snapshot[0].hedges, 1);
  EXPECT_EQ(snapshot[0].hedges_refused_by_budget, 1);
  EXPECT_EQ(adaptive->budget().retries(clock_->Now()), 1);
  EXPECT_EQ(adaptive->budget().requests(clock_->Now()), 2);
}

// When the first attempt then fails (non-fatally), the call ends with the
// budget's refusal in its summary.
TEST_F(HedgingTest, HedgeRefusedByTheBudgetThenFailureSaysWhy) {
  auto adaptive = std::make_shared<AdaptiveHedging>(
      AdaptiveHedging::Config().WithMinHedgesPerSecond(0));
  Outcome outcome;
  StartAsync(Hedged(2, milliseconds(50)).set<AdaptiveHedgingOption>(adaptive),
             outcome);
  ASSERT_TRUE(sleeper_->FireNext());
  EXPECT_EQ(transport_.started(), 1);
  ASSERT_TRUE(transport_.Complete(0, Unavailable()));
  std::optional<Result> result = outcome.Get();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(result->status().message()),
              HasSubstr("hedging budget spent (0 hedges in the last 1s for 1 "
                        "call; it allows 0/s plus 5% of the calls)"));
}

// Issue 39, item 2: a hedged call that sent all its attempts and then saw
// them fail is exhausted, even when the last failure finds the throttle
// drained or the hedging budget spent: no refusal happened, so none is
// counted, and nothing beyond the failures is taken. Async: attempt 2 is
// the timer's hedge; both fail after it.
TEST_F(HedgingTest, AllAttemptsSentThenFailedIsExhaustedNotThrottledAsync) {
  auto metrics = std::make_shared<MetricsCollector>();
  client_.set<MetricsOption>(metrics);
  // 4 tokens, refusing at or below 2: the second failure drains it.
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  client_.set<RetryThrottleOption>(throttle);
  // One hedge per window: the one sent spends it.
  auto adaptive = std::make_shared<AdaptiveHedging>(
      AdaptiveHedging::Config().WithMinHedgesPerSecond(1).WithMaxExtraLoad(
          0.05));
  Outcome outcome;
  StartAsync(Hedged(2, milliseconds(50)).set<AdaptiveHedgingOption>(adaptive),
             outcome);
  ASSERT_TRUE(sleeper_->FireNext());
  ASSERT_EQ(transport_.started(), 2);
  ASSERT_TRUE(transport_.Complete(0, Unavailable()));
  EXPECT_FALSE(outcome.ready());
  ASSERT_TRUE(transport_.Complete(1, Unavailable()));
  std::optional<Result> result = outcome.Get();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(result->status()).has_value());
  EXPECT_EQ(GetRetrySummary(result->status())->stop_reason,
            StopReason::kExhausted)
      << result->status();
  EXPECT_THAT(std::string(result->status().message()),
              HasSubstr("all 2 hedged attempts failed"));
  const std::vector<MethodMetrics> snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 1U);
  EXPECT_EQ(snapshot[0].hedges_refused_by_budget, 0);
  EXPECT_EQ(snapshot[0].stopped(StopReason::kExhausted), 1);
  EXPECT_EQ(snapshot[0].stopped(StopReason::kThrottled), 0);
  // Only the hedge sent withdrew; only the two failures took tokens.
  EXPECT_EQ(adaptive->budget().retries(clock_->Now()), 1);
  EXPECT_EQ(throttle->tokens(), 2);
}

// The same through the sync form: attempt 2 goes at once after attempt 1
// fails, on the caller's thread.
TEST_F(HedgingTest, AllAttemptsSentThenFailedIsExhaustedNotThrottledSync) {
  auto metrics = std::make_shared<MetricsCollector>();
  client_.set<MetricsOption>(metrics);
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  client_.set<RetryThrottleOption>(throttle);
  auto adaptive = std::make_shared<AdaptiveHedging>(
      AdaptiveHedging::Config().WithMinHedgesPerSecond(1).WithMaxExtraLoad(
          0.05));
  int attempts = 0;
  auto attempt = [&](grpc::ClientContext&) -> Result {
    ++attempts;
    return Unavailable();
  };
  Options call = Hedged(2, seconds(60)).set<AdaptiveHedgingOption>(adaptive);
  Result result = internal::RunUnary<std::string>(
      kGet, OptionsView(call, client_), std::string("request"), attempt,
      NoAsyncAttempt());
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(result.status()).has_value());
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kExhausted)
      << result.status();
  const std::vector<MethodMetrics> snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 1U);
  EXPECT_EQ(snapshot[0].hedges_refused_by_budget, 0);
  EXPECT_EQ(snapshot[0].stopped(StopReason::kExhausted), 1);
  EXPECT_EQ(adaptive->budget().retries(clock_->Now()), 1);
  EXPECT_EQ(throttle->tokens(), 2);
}

// Issue 39, item 9: once a hedge was refused the call sends no further
// hedge, even when the throttle has recovered by the time of a later
// non-fatal failure (other calls' successes refill it). The call ends with
// the refusal that happened.
TEST_F(HedgingTest, NoHedgeAfterARefusalWhenAFailureFindsTheThrottleRefilled) {
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  throttle->OnRetryableFailure();
  throttle->OnRetryableFailure();  // 2 tokens: refusing
  client_.set<RetryThrottleOption>(throttle);
  Outcome outcome;
  StartAsync(Hedged(3, milliseconds(50)), outcome);
  ASSERT_TRUE(sleeper_->FireNext());
  ASSERT_EQ(transport_.started(), 1);  // the hedge was refused
  throttle->OnSuccess();
  throttle->OnSuccess();  // 4 tokens: a failure leaves 3, admitting
  ASSERT_TRUE(transport_.Complete(0, Unavailable()));
  EXPECT_EQ(transport_.started(), 1) << "a hedge went after a refusal";
  std::optional<Result> result = outcome.Get();
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(GetRetrySummary(result->status()).has_value());
  EXPECT_EQ(GetRetrySummary(result->status())->stop_reason,
            StopReason::kThrottled)
      << result->status();
}

// The same through the hedge timer: a failure's refusal leaves the armed
// timer, which must find the call refused, not ask again.
TEST_F(HedgingTest, NoHedgeAfterARefusalWhenTheTimerFindsTheThrottleRefilled) {
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  throttle->OnRetryableFailure();  // 3 tokens: the next failure refuses
  client_.set<RetryThrottleOption>(throttle);
  Outcome outcome;
  StartAsync(Hedged(3, milliseconds(50)), outcome);
  ASSERT_TRUE(sleeper_->FireNext());
  ASSERT_EQ(transport_.started(), 2);
  ASSERT_TRUE(transport_.Complete(0, Unavailable()));  // refused: 2 tokens
  EXPECT_FALSE(outcome.ready());                       // attempt 2 goes on
  throttle->OnSuccess();
  throttle->OnSuccess();  // 4 tokens: admitting again
  if (sleeper_->pending() > 0) ASSERT_TRUE(sleeper_->FireNext());
  EXPECT_EQ(transport_.started(), 2) << "a hedge went after a refusal";
  ASSERT_TRUE(transport_.Complete(1, std::string("second")));
  std::optional<Result> result = outcome.Get();
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(result->ok()) << result->status();
  EXPECT_EQ(**result, "second");
}

// Real threads: the default timer thread, attempts answering from threads
// of their own after a little while, cancellation from yet another thread.
// Whatever the interleaving, every call completes exactly once (and, built
// with ThreadSanitizer, without a data race).
TEST(HedgingStressTest, AsyncCallsCompleteExactlyOnce) {
  constexpr int kCalls = 200;
  std::vector<std::unique_ptr<Outcome>> outcomes;
  std::vector<std::shared_ptr<CancellationToken>> tokens;
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(20).WithTokenRatio(0.5));
  // Shared: a hedge may still start after its call's result is in.
  auto seed = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < kCalls; ++i) {
    outcomes.push_back(std::make_unique<Outcome>());
    tokens.push_back(std::make_shared<CancellationToken>());
    Options call =
        Options{}
            .set<HedgingPolicyOption>(
                HedgingPolicy().WithMaxAttempts(1 + i % 4).WithHedgingDelay(
                    std::chrono::microseconds(100 * (i % 5))))
            .set<CancellationOption>(tokens.back())
            .set<RetryThrottleOption>(throttle);
    internal::AsyncHedgedCall<std::string>(
        kGet, call, Options{},
        [seed](grpc::ClientContext&, const OptionsView&,
               AsyncCallback<std::string> done) {
          std::thread([n = seed->fetch_add(1), done = std::move(done)] {
            std::this_thread::sleep_for(std::chrono::microseconds(n % 300));
            switch (n % 4) {
              case 0:
                return done(std::string("ok"));
              case 1:
                return done(absl::InternalError("fatal"));
              default:
                return done(Unavailable());
            }
          }).detach();
        },
        outcomes.back()->Callback());
    if (i % 7 == 0) {
      std::thread([token = tokens.back()] { token->Cancel(); }).detach();
    }
  }
  for (auto& outcome : outcomes) {
    ASSERT_TRUE(outcome->Get().has_value());
  }
  for (auto& outcome : outcomes) EXPECT_EQ(outcome->calls.load(), 1);
}

TEST(HedgingStressTest, SyncCallsReturnAfterEveryAttempt) {
  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = 25;
  std::atomic<int> completed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        // On the caller's stack, as generated code's attempt refers to it.
        absl::Mutex mu;
        int attempts = 0;
        int in_flight = 0;
        auto attempt = [&](grpc::ClientContext&) -> Result {
          int n;
          {
            absl::MutexLock lock(&mu);
            n = attempts++;
            ++in_flight;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(100 * n));
          absl::MutexLock lock(&mu);
          --in_flight;
          if ((t + i + n) % 3 == 0) return Unavailable();
          return std::string("ok");
        };
        auto token = std::make_shared<CancellationToken>();
        Options call =
            Options{}
                .set<HedgingPolicyOption>(
                    HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(
                        std::chrono::microseconds(50 * (i % 4))))
                .set<CancellationOption>(token);
        if (i % 5 == 0) token->Cancel();
        Result result = internal::RunUnary<std::string>(
            kGet, OptionsView(call, Options{}), std::string("request"), attempt,
            NoAsyncAttempt());
        (void)result;
        absl::MutexLock lock(&mu);
        EXPECT_EQ(in_flight, 0) << "the call returned before an attempt";
        ++completed;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(completed.load(), kThreads * kCallsPerThread);
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// The server-streaming reader over fake gRPC streams: cancellation from any
// thread, resumption of long streams, deadline classification, and the
// method description's lifetime. Time is a FakeClock unless a test cancels
// a real wait.

#include "stubkit/streaming.h"

#include <grpcpp/support/sync_stream.h>

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/internal/engine/stream_retry.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "tests/testing/recording_sleeper.h"

namespace stubkit {
namespace {

using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::stubkit::testing::RecordingSleeper;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr MethodInfo kRange{"test.Stream.Range", RpcKind::kServerStreaming,
                            Idempotency::kIdempotent};

// The request is where the stream starts; the hook continues after `last`.
struct RangeResumeOption {
  using Type = ResumeHook<int, int>;
  static Type Default() { return nullptr; }
};

// One scripted attempt: the items it delivers, then how long it runs before
// it ends (on the test's FakeClock), then its status.
struct Script {
  std::vector<int> items;
  grpc::Status status;
  nanoseconds runs_for{0};
};

class FakeStream : public grpc::ClientReaderInterface<int> {
 public:
  FakeStream(Script script, std::shared_ptr<FakeClock> clock)
      : script_(std::move(script)), clock_(std::move(clock)) {}

  bool Read(int* item) override {
    if (next_ < script_.items.size()) {
      *item = script_.items[next_++];
      return true;
    }
    if (!ended_ && clock_ != nullptr) clock_->Advance(script_.runs_for);
    ended_ = true;
    return false;
  }
  grpc::Status Finish() override { return script_.status; }
  bool NextMessageSize(uint32_t* size) override {
    *size = sizeof(int);
    return true;
  }
  void WaitForInitialMetadata() override {}

 private:
  Script script_;
  std::shared_ptr<FakeClock> clock_;
  std::size_t next_ = 0;
  bool ended_ = false;
};

// Hands out the scripted attempts in order and records each request.
class FakeServer {
 public:
  explicit FakeServer(std::shared_ptr<FakeClock> clock = nullptr)
      : clock_(std::move(clock)) {}

  void Add(Script script) {
    std::lock_guard<std::mutex> lock(mu_);
    scripts_.push_back(std::move(script));
  }
  // After the scripts run out, every open fails like this.
  grpc::Status otherwise{grpc::StatusCode::UNAVAILABLE, "down"};

  auto Opener() {
    return [this](grpc::ClientContext& context, const OptionsView&,
                  const int& request)
               -> std::unique_ptr<grpc::ClientReaderInterface<int>> {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      deadlines_.push_back(context.deadline());
      Script script{{}, otherwise};
      if (!scripts_.empty()) {
        script = std::move(scripts_.front());
        scripts_.pop_front();
      }
      return std::make_unique<FakeStream>(std::move(script), clock_);
    };
  }

  std::vector<int> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<std::chrono::system_clock::time_point> deadlines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return deadlines_;
  }

 private:
  std::shared_ptr<FakeClock> clock_;
  mutable std::mutex mu_;
  std::deque<Script> scripts_;
  std::vector<int> requests_;
  std::vector<std::chrono::system_clock::time_point> deadlines_;
};

grpc::Status Unavailable() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream broke");
}

ResumeHook<int, int> ResumeAfterLast(int* calls = nullptr) {
  return [calls](const int& last, int& request) {
    if (calls != nullptr) ++*calls;
    request = last + 1;
    return true;
  };
}

std::vector<int> ReadAll(StreamReader<int>& reader) {
  std::vector<int> items;
  int item;
  while (reader.Read(&item)) items.push_back(item);
  return items;
}

StopReason StopReasonOf(const absl::Status& status) {
  auto summary = GetRetrySummary(status);
  return summary.has_value() ? summary->stop_reason : StopReason::kSuccess;
}

class StreamingTest : public ::testing::Test {
 protected:
  // Fake time; backoff 1 s, 2 s, 4 s, ... without jitter.
  Options FakeTimeOptions() const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                      .WithInitialDelay(seconds(1))
                                      .WithMaximumDelay(minutes(10))
                                      .WithMultiplier(2.0)
                                      .WithJitter(Jitter::None()));
  }

  StreamReader<int> Open(const Options& call, int request = 0,
                         const MethodInfo& method = kRange) {
    return internal::OpenServerStream<RangeResumeOption, int, int>(
        method, OptionsView(call, client_), request, server_.Opener());
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FakeServer server_{clock_};
  Options client_;
};

// --- 11b: the reader keeps its own copy of the method description. -------

TEST_F(StreamingTest, TheReaderOutlivesTheMethodDescriptionItWasGiven) {
  MethodInfo method{"test.Stream.Original", RpcKind::kServerStreaming,
                    Idempotency::kIdempotent};
  StreamReader<int> reader =
      internal::OpenServerStream<RangeResumeOption, int, int>(
          method, OptionsView(Options{}, client_), 0,
          [](grpc::ClientContext&, const OptionsView&, const int&) {
            return std::unique_ptr<grpc::ClientReaderInterface<int>>();
          });
  // The caller's description changes (or goes away) after the call.
  method = MethodInfo{"test.Stream.Replaced", RpcKind::kUnary,
                      Idempotency::kNonIdempotent};
  int item;
  EXPECT_FALSE(reader.Read(&item));
  absl::Status status = reader.Finish();
  EXPECT_THAT(std::string(status.message()), HasSubstr("test.Stream.Original"));
}

// --- A hook declares a server stream idempotent, as it does a client or
// bidi stream (a new user's trial: the hook of an unmarked method never ran).

TEST_F(StreamingTest, AHookMakesAnUnmarkedServerStreamResumable) {
  constexpr MethodInfo kUnmarked{"test.Stream.Tail", RpcKind::kServerStreaming,
                                 Idempotency::kNonIdempotent};
  server_.Add(Script{{1, 2}, Unavailable()});
  server_.Add(Script{{3}, grpc::Status::OK});
  int calls = 0;
  StreamReader<int> reader =
      Open(FakeTimeOptions().set<RangeResumeOption>(ResumeAfterLast(&calls)), 1,
           kUnmarked);
  EXPECT_THAT(ReadAll(reader), ElementsAre(1, 2, 3));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(server_.requests(), ElementsAre(1, 3));
}

TEST_F(StreamingTest, AnExplicitNonIdempotentStreamIsNotResumedByItsHook) {
  constexpr MethodInfo kUnmarked{"test.Stream.Tail", RpcKind::kServerStreaming,
                                 Idempotency::kNonIdempotent};
  for (bool hook : {false, true}) {
    SCOPED_TRACE(hook);
    FakeServer server(clock_);
    server.Add(Script{{1, 2}, Unavailable()});
    Options call = FakeTimeOptions();
    if (hook) {
      // A hook, but the call says it must not be repeated: it wins.
      call.set<RangeResumeOption>(ResumeAfterLast())
          .set<IdempotencyOption>(Idempotency::kNonIdempotent);
    }
    StreamReader<int> reader =
        internal::OpenServerStream<RangeResumeOption, int, int>(
            kUnmarked, OptionsView(call, client_), 1, server.Opener());
    EXPECT_THAT(ReadAll(reader), ElementsAre(1, 2));
    absl::Status status = reader.Finish();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(StopReasonOf(status), StopReason::kNonIdempotent);
    EXPECT_THAT(server.requests(), ElementsAre(1));
  }
}

// --- 6: Cancel() from any thread, at any time, sticky. --------------------

TEST_F(StreamingTest, CancelBeforeTheFirstReadOpensNothing) {
  server_.Add(Script{{1, 2, 3}, grpc::Status::OK});
  StreamReader<int> reader = Open(FakeTimeOptions());
  reader.Cancel();
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(StopReasonOf(status), StopReason::kCancelled);
  EXPECT_THAT(server_.requests(), ElementsAre());
}

// A sleeper that cancels the reader in the middle of its backoff wait.
class CancellingSleeper : public Sleeper {
 public:
  void SleepFor(nanoseconds) override {
    ++sleeps;
    if (reader != nullptr) reader->Cancel();
  }
  StreamReader<int>* reader = nullptr;
  int sleeps = 0;
};

TEST_F(StreamingTest, CancelDuringABackoffIsNotLost) {
  auto sleeper = std::make_shared<CancellingSleeper>();
  // Three retries allowed, so a lost cancel shows as three waits.
  StreamReader<int> reader =
      Open(FakeTimeOptions().set<SleeperOption>(sleeper).set<RetryPolicyOption>(
          RetryPolicy::LimitedErrorCount(3)));
  sleeper->reader = &reader;
  // The first open fails with UNAVAILABLE; the reader is cancelled while it
  // waits, so no second stream is opened.
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(StopReasonOf(status), StopReason::kCancelled);
  EXPECT_EQ(sleeper->sleeps, 1);
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(reader.attempts(), 1);
}

// Options with a real (10-minute) backoff wait, and a future that is ready
// once the reader has decided to wait.
struct RealWait {
  Options options;
  std::future<void> waiting;
};

RealWait TenMinuteBackoff() {
  auto decided = std::make_shared<std::promise<void>>();
  RealWait wait;
  wait.waiting = decided->get_future();
  wait.options =
      Options{}
          .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                        .WithInitialDelay(minutes(10))
                                        .WithMaximumDelay(minutes(10))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::None()))
          .set<RetryObserverOption>(
              [decided, once = std::make_shared<std::once_flag>()](
                  const AttemptEvent& event) {
                if (event.final) return;
                std::call_once(*once, [&] { decided->set_value(); });
              });
  return wait;
}

TEST_F(StreamingTest, CancelFromAnotherThreadInterruptsTheBackoffWait) {
  RealWait wait = TenMinuteBackoff();
  StreamReader<int> reader = Open(wait.options);
  const auto start = std::chrono::steady_clock::now();
  auto reading =
      std::async(std::launch::async, [&] { return ReadAll(reader); });
  wait.waiting.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // into the wait
  reader.Cancel();
  EXPECT_THAT(reading.get(), ElementsAre());
  // Far sooner than the 10-minute wait it cut short.
  EXPECT_LT(std::chrono::steady_clock::now() - start, minutes(1));
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(StreamingTest, CancelWhileTheReaderReopensEndsIt) {
  // Every open fails; the reader reopens as fast as the fake clock lets it,
  // replacing its context each time, while another thread cancels.
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1 << 30))
               .set<BackoffPolicyOption>(
                   ExponentialBackoffPolicy()
                       .WithInitialDelay(std::chrono::microseconds(1))
                       .WithMaximumDelay(std::chrono::microseconds(1))
                       .WithMultiplier(1.0)
                       .WithJitter(Jitter::None())));
  auto reading =
      std::async(std::launch::async, [&] { return ReadAll(reader); });
  while (server_.requests().size() < 100) std::this_thread::yield();
  reader.Cancel();
  EXPECT_THAT(reading.get(), ElementsAre());
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kCancelled);
  const std::size_t opened = server_.requests().size();
  int item;
  EXPECT_FALSE(reader.Read(&item));
  EXPECT_EQ(server_.requests().size(), opened);
}

TEST_F(StreamingTest, CancellationTokenInterruptsTheBackoffWait) {
  RealWait wait = TenMinuteBackoff();
  auto token = std::make_shared<CancellationToken>();
  StreamReader<int> reader = Open(wait.options.set<CancellationOption>(token));
  const auto start = std::chrono::steady_clock::now();
  auto reading =
      std::async(std::launch::async, [&] { return ReadAll(reader); });
  wait.waiting.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  token->Cancel();
  EXPECT_THAT(reading.get(), ElementsAre());
  EXPECT_LT(std::chrono::steady_clock::now() - start, minutes(1));
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(StreamingTest, ACancelledTokenStopsTheStreamBeforeItOpens) {
  auto token = std::make_shared<CancellationToken>();
  token->Cancel();
  server_.Add(Script{{1, 2}, grpc::Status::OK});
  StreamReader<int> reader =
      Open(FakeTimeOptions().set<CancellationOption>(token));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(server_.requests(), ElementsAre());
}

TEST_F(StreamingTest, ATokenCancelledAfterTheReaderIsGoneIsHarmless) {
  auto token = std::make_shared<CancellationToken>();
  {
    server_.Add(Script{{1}, grpc::Status::OK});
    StreamReader<int> reader =
        Open(FakeTimeOptions().set<CancellationOption>(token));
    EXPECT_THAT(ReadAll(reader), ElementsAre(1));
  }
  token->Cancel();
  EXPECT_TRUE(token->cancelled());
}

TEST_F(StreamingTest, CancelAfterTheEndKeepsTheResult) {
  server_.Add(Script{{1, 2}, grpc::Status::OK});
  StreamReader<int> reader = Open(FakeTimeOptions());
  EXPECT_THAT(ReadAll(reader), ElementsAre(1, 2));
  reader.Cancel();
  EXPECT_TRUE(reader.Finish().ok());
}

// --- 7: a resume that delivered messages restarts the retry policy. -------

TEST_F(StreamingTest, AStreamThatBreaksAfterThePolicyTimeResumes) {
  // The default policy: 30 minutes. The stream breaks after 31.
  server_.Add(Script{{0, 1, 2}, Unavailable(), minutes(31)});
  server_.Add(Script{{3, 4}, grpc::Status::OK});
  int hook_calls = 0;
  StreamReader<int> reader = Open(
      FakeTimeOptions().set<RangeResumeOption>(ResumeAfterLast(&hook_calls)));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(hook_calls, 1);
  EXPECT_THAT(server_.requests(), ElementsAre(0, 3));
}

// MinAttemptTimeOption counts to the end that bounds a stream's attempt
// (the total timeout or the deadline), not to the policy's time limit,
// which bounds only how long the stream is reopened.
TEST_F(StreamingTest, MinAttemptTimeIgnoresThePolicysTimeLimit) {
  server_.Add(Script{{0, 1, 2}, grpc::Status::OK, minutes(20)});
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(1)))
               .set<MinAttemptTimeOption>(minutes(5)));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2));
  EXPECT_TRUE(reader.Finish().ok());
}

TEST_F(StreamingTest, MinAttemptTimeLongerThanTheTotalTimeoutOpensNothing) {
  StreamReader<int> reader = Open(FakeTimeOptions()
                                      .set<TotalTimeoutOption>(minutes(1))
                                      .set<MinAttemptTimeOption>(minutes(5)));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StopReasonOf(status), StopReason::kDeadline);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("(MinAttemptTimeOption) was left before "
                        "the call's deadline"));
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(StreamingTest, WithoutAHookALongStreamReportsTheBreak) {
  server_.Add(Script{{0, 1, 2}, Unavailable(), minutes(31)});
  StreamReader<int> reader = Open(FakeTimeOptions());
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2));
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(status.message(), "stream broke")) << status;
  // Issue 22, item 10: a reason of its own, not kNonIdempotent (the method
  // is idempotent).
  EXPECT_EQ(StopReasonOf(status), StopReason::kNotResumable);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(StreamingTest, TheTotalTimeoutStillBoundsAResumedStream) {
  // 40 minutes in all: the break at 31 minutes resumes (the policy starts
  // again), the one at 41 minutes does not.
  server_.Add(Script{{0, 1}, Unavailable(), minutes(31)});
  server_.Add(Script{{2, 3}, Unavailable(), minutes(10)});
  server_.Add(Script{{4}, grpc::Status::OK});
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<TotalTimeoutOption>(minutes(40))
               .set<RangeResumeOption>(ResumeAfterLast()));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2, 3));
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StopReasonOf(status), StopReason::kDeadline);
  EXPECT_THAT(server_.requests(), ElementsAre(0, 2));
}

TEST_F(StreamingTest, AStreamPastItsTotalTimeoutDoesNotResume) {
  server_.Add(Script{{0, 1}, Unavailable(), minutes(41)});
  server_.Add(Script{{2}, grpc::Status::OK});
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<TotalTimeoutOption>(minutes(40))
               .set<RangeResumeOption>(ResumeAfterLast()));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1));
  absl::Status status = reader.Finish();
  EXPECT_EQ(StopReasonOf(status), StopReason::kDeadline);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(StreamingTest, TheErrorCountStartsAgainAfterProgress) {
  // One retryable failure allowed, but each break follows new messages.
  for (int i = 0; i < 4; ++i) {
    server_.Add(Script{{2 * i, 2 * i + 1}, Unavailable()});
  }
  server_.Add(Script{{8}, grpc::Status::OK});
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1))
               .set<RangeResumeOption>(ResumeAfterLast()));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(reader.attempts(), 5);
}

TEST_F(StreamingTest, FailuresWithoutProgressStillExhaustThePolicy) {
  server_.Add(Script{{0, 1}, Unavailable()});
  // Then reopening fails twice: one failure is allowed after the restart
  // (the break itself), the next exhausts the policy.
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1))
               .set<RangeResumeOption>(ResumeAfterLast()));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1));
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StopReasonOf(status), StopReason::kExhausted);
  EXPECT_EQ(reader.attempts(), 2);
}

TEST_F(StreamingTest, TheBackoffStartsAgainAfterProgress) {
  server_.Add(Script{{}, Unavailable()});      // opening fails: wait 1 s
  server_.Add(Script{{}, Unavailable()});      // again: wait 2 s
  server_.Add(Script{{0, 1}, Unavailable()});  // progress, break: 1 s again
  server_.Add(Script{{2}, grpc::Status::OK});
  auto sleeper = std::make_shared<RecordingSleeper>(clock_);
  StreamReader<int> reader =
      Open(FakeTimeOptions().set<SleeperOption>(sleeper).set<RangeResumeOption>(
          ResumeAfterLast()));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_THAT(sleeper->waits, ElementsAre(seconds(1), seconds(2), seconds(1)));
}

// --- 11e: DEADLINE_EXCEEDED against the deadline the attempt really had. --

grpc::Status DeadlineExceeded() {
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline");
}

TEST_F(StreamingTest, TheStreamsCallDeadlineStopsWithDeadline) {
  // The policy's 5 minutes do not bound the stream; its total timeout does.
  server_.Add(Script{{}, DeadlineExceeded(), minutes(60)});
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<RetryPolicyOption>(RetryPolicy::LimitedTime(minutes(5)))
               .set<TotalTimeoutOption>(minutes(60)));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StopReasonOf(status), StopReason::kDeadline);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("the call's deadline was reached"));
  // The attempt's context had the total timeout, not the policy's limit.
  ASSERT_EQ(server_.deadlines().size(), 1u);
  EXPECT_GT(server_.deadlines()[0] - std::chrono::system_clock::now(),
            minutes(50));
}

TEST_F(StreamingTest, AReopenedStreamsDeadlineIsWhatIsLeftOfTheCallsEnd) {
  // The first attempt runs 20 minutes (fake time) and breaks before any
  // message; the reopened one may only have what is left of the hour. Both
  // deadlines come from the loop's one clock (here the fake one), not from
  // a wall-clock end fixed when the stream was opened.
  server_.Add(Script{{}, Unavailable(), minutes(20)});
  server_.Add(Script{{0}, grpc::Status::OK});
  StreamReader<int> reader =
      Open(FakeTimeOptions().set<TotalTimeoutOption>(minutes(60)));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0));
  EXPECT_TRUE(reader.Finish().ok());
  const auto deadlines = server_.deadlines();
  ASSERT_EQ(deadlines.size(), 2u);
  // 20 minutes of reading and a 1 s backoff apart, give or take real time.
  EXPECT_GT(deadlines[0] - deadlines[1], minutes(19));
  EXPECT_LT(deadlines[0] - deadlines[1], minutes(21));
}

TEST_F(StreamingTest, AServersDeadlineExceededPastThePolicyTimeIsPermanent) {
  // No deadline was set on the stream: the DEADLINE_EXCEEDED is the
  // server's own, not a retryable attempt timeout nor the policy's end.
  server_.Add(Script{{}, DeadlineExceeded(), minutes(6)});
  StreamReader<int> reader = Open(FakeTimeOptions().set<RetryPolicyOption>(
      RetryPolicy::LimitedTime(minutes(5))));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StopReasonOf(status), StopReason::kPermanentError);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(StreamingTest, AnAttemptTimeoutNoLongerAppliesAfterTheFirstMessage) {
  // The attempt timeout bounds the wait for the first message, not the
  // stream's life (docs/streaming.md): an attempt that delivered messages is
  // bounded only by the call's end, so a DEADLINE_EXCEEDED after 2 minutes
  // is the server's own, not an expired attempt timeout to resume from.
  server_.Add(Script{{0, 1}, DeadlineExceeded(), minutes(2)});
  server_.Add(Script{{2}, grpc::Status::OK});
  StreamReader<int> reader =
      Open(FakeTimeOptions()
               .set<RetryPolicyOption>(RetryPolicy::LimitedTime(minutes(1)))
               .set<AttemptTimeoutOption>(minutes(2))
               .set<TotalTimeoutOption>(minutes(60))
               .set<RangeResumeOption>(ResumeAfterLast()));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1));
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StopReasonOf(status), StopReason::kPermanentError);
  EXPECT_THAT(server_.requests(), ElementsAre(0));
  // gRPC was given the call's end (60 minutes), not the attempt timeout.
  ASSERT_EQ(server_.deadlines().size(), 1u);
  EXPECT_GT(server_.deadlines()[0],
            std::chrono::system_clock::now() + minutes(50));
}

TEST_F(StreamingTest, AnExpiredAttemptTimeoutWhileOpeningIsRetried) {
  server_.Add(Script{{}, DeadlineExceeded(), minutes(2)});
  server_.Add(Script{{0}, grpc::Status::OK});
  StreamReader<int> reader = Open(FakeTimeOptions()
                                      .set<AttemptTimeoutOption>(minutes(2))
                                      .set<TotalTimeoutOption>(minutes(60)));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(reader.attempts(), 2);
}

}  // namespace
}  // namespace stubkit

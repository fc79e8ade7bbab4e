// Copyright 2026 The stubkit Authors.
//
// Client and bidi streams (sync and async) that reopen and resume, and the
// attempt timeout of server and bidi streams (StreamAttemptTimeoutTest),
// against a real gRPC server on 127.0.0.1: the opening is retried (the writes
// replayed) until the first response, a break after it is resumed only through
// the generated MResumeOption hook, every attempt reaches the observer, and a
// failed stream's status carries the retry summary.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/explain.h"
#include "stubkit/retry_observer.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using ::stubkit::testing::Item;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;
using ::stubkit::testing::TestServer;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class ResumeStreamService final : public StreamService::Service {
 public:
  // Double: the first `fail_open_first` calls fail with UNAVAILABLE before
  // reading anything. The first `breaks` calls that answered `break_after`
  // items (never, when negative) read one more and fail with UNAVAILABLE
  // without answering it.
  std::atomic<int> fail_open_first{0};
  int break_after = -1;
  int breaks = 1;
  grpc::StatusCode break_code = grpc::StatusCode::UNAVAILABLE;
  // Sum: the first `sum_fail_first` calls fail with UNAVAILABLE after
  // reading everything.
  int sum_fail_first = 0;
  // Sum: call k (from 1) fails with UNAVAILABLE after reading
  // sum_break_at[k - 1] items, when that is positive.
  std::vector<int> sum_break_at;
  // Sum: the padding bytes read, over all calls.
  std::atomic<int64_t> sum_padding_bytes{0};

  grpc::Status Double(grpc::ServerContext*,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    const int call = ++double_calls_;
    std::vector<int>* inputs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      double_inputs_.emplace_back();
      inputs = &double_inputs_.back();
    }
    if (call <= fail_open_first) Ended();
    if (call <= fail_open_first) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "cannot open yet");
    }
    Item item;
    int answered = 0;
    while (stream->Read(&item)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        inputs->push_back(item.value());
      }
      if (answered == break_after && breaks_done_.fetch_add(1) < breaks) {
        Ended();
        return grpc::Status(break_code, "stream broke");
      }
      item.set_value(item.value() * 2);
      stream->Write(item);
      ++answered;
    }
    return grpc::Status::OK;
  }

  grpc::Status Sum(grpc::ServerContext*, grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    const int call = ++sum_calls_;
    const int break_at = call <= static_cast<int>(sum_break_at.size())
                             ? sum_break_at[call - 1]
                             : 0;
    Item item;
    while (reader->Read(&item)) {
      sum_padding_bytes += static_cast<int64_t>(item.padding().size());
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
      if (response->count() == break_at) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "sum broke");
      }
    }
    if (call <= sum_fail_first) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "sum failed");
    }
    return grpc::Status::OK;
  }

  int double_calls() const { return double_calls_.load(); }
  int sum_calls() const { return sum_calls_.load(); }
  std::vector<std::vector<int>> double_inputs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {double_inputs_.begin(), double_inputs_.end()};
  }
  // Ready once a Double call ended with a failure.
  std::shared_future<void> ended() const { return ended_future_; }

 private:
  void Ended() {
    std::call_once(ended_once_, [this] { ended_promise_.set_value(); });
  }

  std::atomic<int> double_calls_{0};
  std::atomic<int> sum_calls_{0};
  std::atomic<int> breaks_done_{0};
  mutable std::mutex mu_;
  // A deque's elements stay put while it grows.
  std::deque<std::vector<int>> double_inputs_;
  std::once_flag ended_once_;
  std::promise<void> ended_promise_;
  std::shared_future<void> ended_future_ = ended_promise_.get_future().share();
};

Item MakeItem(int value) {
  Item item;
  item.set_value(value);
  return item;
}

// About 64 KiB on the wire.
Item PaddedItem(int value) {
  Item item = MakeItem(value);
  item.set_padding(std::string(64 * 1024, 'x'));
  return item;
}

std::vector<int> Doubles(int from, int to) {
  std::vector<int> values;
  for (int i = from; i <= to; ++i) values.push_back(2 * i);
  return values;
}

class GeneratedStreamResumeTest : public ::testing::Test {
 protected:
  GeneratedStreamResumeTest() : server_(&service_) {}

  // Waits on the fake clock; records every attempt the observer sees.
  Options ClientOptions() {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::seconds(1))
                .WithMaximumDelay(std::chrono::seconds(10))
                .WithMultiplier(2.0)
                .WithJitter(Jitter::None()))
        .set<RetryObserverOption>([this](const AttemptEvent& event) {
          std::lock_guard<std::mutex> lock(mu_);
          events_.push_back(event.final);
        });
  }
  std::vector<bool> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

  // The hook a user writes for Double: the server answers each item with
  // its double, so it must be sent again every item written after the one
  // the last response answered. `sent` is the last item written.
  static StreamResumeHook<Item, Item> ResendUnanswered(const int* sent,
                                                       int* calls) {
    return [sent, calls](const Item* last, ResumeWriter<Item>& writer) {
      ++*calls;
      for (int v = last == nullptr ? 1 : last->value() / 2 + 1; v <= *sent;
           ++v) {
        writer.Write(MakeItem(v));
      }
      return true;
    };
  }

  // Writes first..last, reading each answer; returns the answers.
  static std::vector<int> WriteAndRead(StreamReaderWriter<Item, Item>& stream,
                                       int first, int last, int* sent) {
    std::vector<int> answers;
    for (int i = first; i <= last; ++i) {
      *sent = i;
      if (!stream.Write(MakeItem(i))) break;
      Item answer;
      if (!stream.Read(&answer)) break;
      answers.push_back(answer.value());
    }
    return answers;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  ResumeStreamService service_;
  TestServer server_;
  std::mutex mu_;
  std::vector<bool> events_;
};

TEST_F(GeneratedStreamResumeTest, BidiOpeningIsRetriedAndTheWritesReplayed) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 2;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  const auto start = clock_->Now();
  auto stream =
      client.Double(Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(stream.Write(MakeItem(1)));
  ASSERT_TRUE(stream.Write(MakeItem(2)));
  Item answer;
  std::vector<int> answers;
  while (answers.size() < 2 && stream.Read(&answer)) {
    answers.push_back(answer.value());
  }
  ASSERT_TRUE(stream.WritesDone());
  EXPECT_FALSE(stream.Read(&answer));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_THAT(answers, ElementsAre(2, 4));
  EXPECT_EQ(stream.attempts(), 3);
  EXPECT_EQ(service_.double_calls(), 3);
  EXPECT_THAT(service_.double_inputs().back(), ElementsAre(1, 2));
  EXPECT_THAT(events(), ElementsAre(false, false, true));
  // The backoff's 1 s and 2 s, on the fake clock.
  EXPECT_EQ(clock_->Now() - start, std::chrono::seconds(3));
}

TEST_F(GeneratedStreamResumeTest, ANonIdempotentBidiOpeningIsNotRetried) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 1;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto stream = client.Double();  // the proto says nothing: not idempotent
  stream.Write(MakeItem(1));
  Item answer;
  EXPECT_FALSE(stream.Read(&answer));
  absl::Status status = stream.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kNonIdempotent);
  EXPECT_EQ(GetRetrySummary(status)->attempts, 1);
  EXPECT_THAT(std::string(status.message()), HasSubstr("cannot open yet"));
  EXPECT_EQ(service_.double_calls(), 1);
  EXPECT_THAT(events(), ElementsAre(true));
}

TEST_F(GeneratedStreamResumeTest, ABreakAfterAResponseWithoutAHookIsReported) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 2;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto stream =
      client.Double(Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  int sent = 0;
  EXPECT_THAT(WriteAndRead(stream, 1, 5, &sent), ElementsAre(2, 4));
  absl::Status status = stream.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kNotResumable);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("cannot be replayed and has no resume hook"));
  EXPECT_EQ(service_.double_calls(), 1);
}

TEST_F(GeneratedStreamResumeTest, TheHookRestoresTheServersViewExactlyOnce) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 3;
  service_.breaks = 2;
  int sent = 0;
  int hook_calls = 0;
  // The hook alone makes Double (not idempotent in the proto) resumable.
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::DoubleResumeOption>(
          ResendUnanswered(&sent, &hook_calls)));
  auto stream = client.Double();
  EXPECT_THAT(WriteAndRead(stream, 1, 10, &sent),
              ElementsAreArray(Doubles(1, 10)));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(hook_calls, 2);
  EXPECT_EQ(stream.attempts(), 3);
  // Each new stream starts with what the hook wrote: the unanswered item.
  auto inputs = service_.double_inputs();
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_THAT(inputs[0], ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(inputs[1], ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(inputs[2], ElementsAre(7, 8, 9, 10));
  EXPECT_THAT(events(), ElementsAre(false, false, true));
}

TEST_F(GeneratedStreamResumeTest, AResumeRestartsTheRetryPolicy) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  service_.breaks = 100;
  int sent = 0;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1))
          .set<StreamServiceClient::DoubleResumeOption>(
              ResendUnanswered(&sent, &hook_calls)));
  auto stream = client.Double();
  // Each stream answers one item, then breaks: each break follows progress.
  EXPECT_THAT(WriteAndRead(stream, 1, 6, &sent),
              ElementsAreArray(Doubles(1, 6)));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(hook_calls, 5);
  EXPECT_EQ(stream.attempts(), 6);
}

TEST_F(GeneratedStreamResumeTest, AResumedStreamThatCannotOpenReplaysTheHooks) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 2;
  int sent = 0;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::DoubleResumeOption>(
          ResendUnanswered(&sent, &hook_calls)));
  auto stream = client.Double();
  ASSERT_THAT(WriteAndRead(stream, 1, 2, &sent), ElementsAre(2, 4));
  // The next streams fail before answering: opening failures, so the hook's
  // messages are replayed without asking it again.
  service_.fail_open_first = service_.double_calls() + 2;
  EXPECT_THAT(WriteAndRead(stream, 3, 4, &sent), ElementsAre(6, 8));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(stream.attempts(), 4);
}

TEST_F(GeneratedStreamResumeTest, AHookThatDeclinesReportsTheBreak) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::DoubleResumeOption>(
          [](const Item* last, ResumeWriter<Item>&) {
            EXPECT_NE(last, nullptr);
            return false;
          }));
  auto stream = client.Double();
  int sent = 0;
  EXPECT_THAT(WriteAndRead(stream, 1, 3, &sent), ElementsAre(2));
  absl::Status status = stream.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kNotResumable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("declined"));
}

TEST_F(GeneratedStreamResumeTest, TheSummarySaysHowOftenTheStreamResumed) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  service_.breaks = 100;
  int sent = 0;
  int hook_calls = 0;
  auto resend = ResendUnanswered(&sent, &hook_calls);
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::DoubleResumeOption>(
          [&](const Item* last, ResumeWriter<Item>& writer) {
            return hook_calls < 2 && resend(last, writer);
          }));
  auto stream = client.Double();
  EXPECT_THAT(WriteAndRead(stream, 1, 5, &sent), ElementsAre(2, 4, 6));
  absl::Status status = stream.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(
      std::string(status.message()),
      HasSubstr("declined; the stream was resumed 2 times; 3 attempts"));
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->attempts, 3);
}

TEST_F(GeneratedStreamResumeTest, AnExplicitNonIdempotentCallIgnoresTheHook) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 1;
  int sent = 0;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::DoubleResumeOption>(
          ResendUnanswered(&sent, &hook_calls)));
  auto stream = client.Double(
      Options{}.set<IdempotencyOption>(Idempotency::kNonIdempotent));
  EXPECT_THAT(WriteAndRead(stream, 1, 2, &sent), ElementsAre());
  absl::Status status = stream.Finish();
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kNonIdempotent);
  EXPECT_EQ(service_.double_calls(), 1);
}

// A Write that meets the break blocks through the reopen and returns true;
// its message is the hook's to restore, as every write after the last
// response read.
TEST_F(GeneratedStreamResumeTest, AWriteThatMeetsTheBreakWaitsForTheResume) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  int sent = 0;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::DoubleResumeOption>(
          ResendUnanswered(&sent, &hook_calls)));
  auto stream = client.Double();
  ASSERT_THAT(WriteAndRead(stream, 1, 1, &sent), ElementsAre(2));
  sent = 2;
  ASSERT_TRUE(stream.Write(MakeItem(2)));  // the server fails on reading it
  service_.ended().wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  sent = 3;
  EXPECT_TRUE(stream.Write(MakeItem(3)));
  std::vector<int> answers;
  Item answer;
  for (int i = 0; i < 2 && stream.Read(&answer); ++i) {
    answers.push_back(answer.value());
  }
  EXPECT_THAT(answers, ElementsAre(4, 6));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(hook_calls, 1);
  EXPECT_THAT(service_.double_inputs().back(), ElementsAre(2, 3));
}

TEST_F(GeneratedStreamResumeTest, CancelDuringTheReopenWaitEndsTheStream) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  auto waiting = std::make_shared<std::promise<void>>();
  int sent = 0;
  int hook_calls = 0;
  // Real waits: ten minutes of backoff, which only the cancel ends.
  StreamServiceClient client(
      server_.Channel(),
      Options{}
          .set<BackoffPolicyOption>(
              ExponentialBackoffPolicy()
                  .WithInitialDelay(std::chrono::minutes(10))
                  .WithMaximumDelay(std::chrono::minutes(10))
                  .WithMultiplier(2.0)
                  .WithJitter(Jitter::None()))
          .set<RetryObserverOption>(
              [waiting, once = std::make_shared<std::once_flag>()](
                  const AttemptEvent& event) {
                if (!event.final) {
                  std::call_once(*once, [&] { waiting->set_value(); });
                }
              })
          .set<StreamServiceClient::DoubleResumeOption>(
              ResendUnanswered(&sent, &hook_calls)));
  auto stream = client.Double();
  const auto start = std::chrono::steady_clock::now();
  auto writing = std::async(std::launch::async,
                            [&] { return WriteAndRead(stream, 1, 3, &sent); });
  waiting->get_future().wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // into it
  stream.Cancel();  // from another thread than the one using the stream
  EXPECT_THAT(writing.get(), ElementsAre(2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
  absl::Status status = stream.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(service_.double_calls(), 1);
  Item item;
  EXPECT_FALSE(stream.Write(MakeItem(9)));
  EXPECT_FALSE(stream.Read(&item));
}

TEST_F(GeneratedStreamResumeTest, AnIdempotentClientStreamIsReplayed) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 2;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto writer =
      client.Sum(Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(writer.Write(MakeItem(i)));
  absl::StatusOr<SumResponse> response = writer.Finish();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->sum(), 15);
  EXPECT_EQ(response->count(), 5);
  EXPECT_EQ(writer.attempts(), 3);
  EXPECT_EQ(service_.sum_calls(), 3);
  EXPECT_THAT(events(), ElementsAre(false, false, true));
}

TEST_F(GeneratedStreamResumeTest,
       AClientStreamPastTheReplayBufferNeedsTheHook) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 1;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::SumResumeOption>(
          [&hook_calls](const SumResponse* last, ResumeWriter<Item>& writer) {
            EXPECT_EQ(last, nullptr);
            ++hook_calls;
            writer.Write(MakeItem(7));  // what the server should know
            return true;
          }));
  auto writer = client.Sum();
  // Five bytes each (a large varint): past 256 KiB after ~52,000 writes.
  const int n = 60000;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(writer.Write(MakeItem(1 << 22)));
  absl::StatusOr<SumResponse> response = writer.Finish();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->count(), 1);  // only the hook's message was replayed
  EXPECT_EQ(response->sum(), 7);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(writer.attempts(), 2);
}

TEST_F(GeneratedStreamResumeTest, AFailedClientStreamCarriesTheSummary) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 100;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<RetryPolicyOption>(
                                 RetryPolicy::LimitedErrorCount(2)));
  auto writer =
      client.Sum(Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(writer.Write(MakeItem(1)));
  absl::StatusOr<SumResponse> response = writer.Finish();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(response.status()).has_value());
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kExhausted);
  EXPECT_EQ(GetRetrySummary(response.status())->attempts, 3);
  EXPECT_THAT(std::string(response.status().message()),
              HasSubstr("sum failed [stubkit:"));
  EXPECT_EQ(service_.sum_calls(), 3);
}

// The async form: the same rules, writes queued, messages pushed.
class AsyncBidi {
 public:
  // Starts client.AsyncDouble with these options.
  AsyncBidi(StreamServiceClient& client, const Options& call)
      : stream_(client.AsyncDouble(
            [this](const Item& item) {
              std::lock_guard<std::mutex> lock(mu_);
              answers_.push_back(item.value());
              cv_.notify_all();
            },
            [this](absl::Status status) {
              std::lock_guard<std::mutex> lock(mu_);
              status_ = std::move(status);
              done_ = true;
              cv_.notify_all();
            },
            call)) {}

  bool Write(int value) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent_ = value;
    }
    return stream_.Write(MakeItem(value));
  }
  // Waits (at most a minute) for `n` answers or the end.
  std::vector<int> Answers(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::minutes(1),
                 [&] { return answers_.size() >= n || done_; });
    return answers_;
  }
  absl::Status Done() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::minutes(1), [&] { return done_; });
    return done_ ? status_ : absl::DeadlineExceededError("no on_done");
  }
  // The test's hook: every item after the one `last` answered, under the
  // lock the writer takes.
  bool Resume(const Item* last, ResumeWriter<Item>& writer) {
    std::lock_guard<std::mutex> lock(mu_);
    ++hook_calls_;
    for (int v = last == nullptr ? 1 : last->value() / 2 + 1; v <= sent_; ++v) {
      writer.Write(MakeItem(v));
    }
    return true;
  }
  int hook_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return hook_calls_;
  }
  AsyncStreamWriter<Item>& stream() { return stream_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> answers_;
  int sent_ = 0;
  int hook_calls_ = 0;
  bool done_ = false;
  absl::Status status_;
  // Last: its callbacks use the members above.
  AsyncStreamWriter<Item> stream_;
};

TEST_F(GeneratedStreamResumeTest, AsyncBidiResumesThroughTheHook) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 3;
  service_.breaks = 2;
  AsyncBidi* bidi = nullptr;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<StreamServiceClient::DoubleResumeOption>(
              [&bidi](const Item* last, ResumeWriter<Item>& writer) {
                return bidi->Resume(last, writer);
              }));
  auto stream = std::make_unique<AsyncBidi>(client, Options{});
  bidi = stream.get();
  for (int i = 1; i <= 10; ++i) {
    ASSERT_TRUE(bidi->Write(i));
    ASSERT_EQ(bidi->Answers(i).size(), static_cast<size_t>(i));
  }
  ASSERT_TRUE(bidi->stream().WritesDone());
  EXPECT_TRUE(bidi->Done().ok());
  EXPECT_THAT(bidi->Answers(10), ElementsAreArray(Doubles(1, 10)));
  EXPECT_EQ(bidi->hook_calls(), 2);
  auto inputs = service_.double_inputs();
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_THAT(inputs[1], ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(events(), ElementsAre(false, false, true));
  EXPECT_FALSE(bidi->Write(11));  // over
}

// The hook overlaps a Write on the application's thread: the application
// records and writes each item under one lock, the hook reads the record
// and restores under it (docs/streaming.md). Item 5 is written after the
// hook started and before it read the record: the hook restores it, and
// the queued copy is dropped, so the server sees it once. It used to go
// twice: the queue was emptied only when the hook started.
TEST_F(GeneratedStreamResumeTest, AWriteQueuedAsTheHookStartsGoesOnce) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 3;  // item 4 breaks the first stream
  service_.breaks = 1;
  std::mutex app;
  int sent = 0;
  std::promise<void> hook_started;
  std::promise<void> written;
  std::shared_future<void> written_future = written.get_future().share();
  std::atomic<int> hook_calls{0};
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<StreamServiceClient::DoubleResumeOption>(
              [&](const Item* last, ResumeWriter<Item>& writer) {
                if (hook_calls++ == 0) {
                  hook_started.set_value();
                  written_future.wait();  // item 5's Write lands here
                }
                std::lock_guard<std::mutex> lock(app);
                for (int v = last == nullptr ? 1 : last->value() / 2 + 1;
                     v <= sent; ++v) {
                  writer.Write(MakeItem(v));
                }
                return true;
              }));
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> answers;
  bool done = false;
  absl::Status status;
  AsyncStreamWriter<Item> stream = client.AsyncDouble(
      [&](const Item& item) {
        std::lock_guard<std::mutex> lock(mu);
        answers.push_back(item.value());
        cv.notify_all();
      },
      [&](absl::Status s) {
        std::lock_guard<std::mutex> lock(mu);
        status = std::move(s);
        done = true;
        cv.notify_all();
      });
  const auto write = [&](int value) {
    std::lock_guard<std::mutex> lock(app);
    sent = value;
    return stream.Write(MakeItem(value));
  };
  const auto wait_for = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::minutes(1),
                [&] { return answers.size() >= n || done; });
    return answers.size();
  };
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(write(i));
    ASSERT_EQ(wait_for(i), static_cast<size_t>(i));
  }
  ASSERT_TRUE(write(4));
  hook_started.get_future().wait();
  ASSERT_TRUE(write(5));
  written.set_value();
  ASSERT_TRUE(write(6));
  ASSERT_EQ(wait_for(6), 6u);
  ASSERT_TRUE(stream.WritesDone());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::minutes(1), [&] { return done; });
    EXPECT_TRUE(done);
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_THAT(answers, ElementsAreArray(Doubles(1, 6)));
  }
  EXPECT_EQ(hook_calls.load(), 1);
  const auto inputs = service_.double_inputs();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_THAT(inputs[0], ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(inputs[1], ElementsAre(4, 5, 6));
}

TEST_F(GeneratedStreamResumeTest,
       AsyncBidiOpeningIsRetriedWithTheQueuedWrites) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 2;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncBidi bidi(client,
                 Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(bidi.Write(1));
  ASSERT_TRUE(bidi.Write(2));
  EXPECT_THAT(bidi.Answers(2), ElementsAre(2, 4));
  ASSERT_TRUE(bidi.stream().WritesDone());
  EXPECT_TRUE(bidi.Done().ok());
  EXPECT_EQ(service_.double_calls(), 3);
  EXPECT_THAT(service_.double_inputs().back(), ElementsAre(1, 2));
  EXPECT_THAT(events(), ElementsAre(false, false, true));
}

TEST_F(GeneratedStreamResumeTest, AsyncBidiBreakWithoutAHookIsReported) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncBidi bidi(client,
                 Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(bidi.Write(1));
  EXPECT_THAT(bidi.Answers(1), ElementsAre(2));
  ASSERT_TRUE(bidi.Write(2));
  absl::Status status = bidi.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kNotResumable);
  EXPECT_EQ(service_.double_calls(), 1);
}

TEST_F(GeneratedStreamResumeTest, AsyncBidiCancelDuringTheReopenWait) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  auto waiting = std::make_shared<std::promise<void>>();
  AsyncBidi* bidi = nullptr;
  // Real waits: ten minutes of backoff on the timer, which only the cancel
  // ends.
  StreamServiceClient client(
      server_.Channel(),
      Options{}
          .set<BackoffPolicyOption>(
              ExponentialBackoffPolicy()
                  .WithInitialDelay(std::chrono::minutes(10))
                  .WithMaximumDelay(std::chrono::minutes(10))
                  .WithMultiplier(2.0)
                  .WithJitter(Jitter::None()))
          .set<RetryObserverOption>(
              [waiting, once = std::make_shared<std::once_flag>()](
                  const AttemptEvent& event) {
                if (!event.final) {
                  std::call_once(*once, [&] { waiting->set_value(); });
                }
              })
          .set<StreamServiceClient::DoubleResumeOption>(
              [&bidi](const Item* last, ResumeWriter<Item>& writer) {
                return bidi->Resume(last, writer);
              }));
  auto stream = std::make_unique<AsyncBidi>(client, Options{});
  bidi = stream.get();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(bidi->Write(1));
  EXPECT_THAT(bidi->Answers(1), ElementsAre(2));
  ASSERT_TRUE(bidi->Write(2));  // the server fails on it
  waiting->get_future().wait();
  EXPECT_TRUE(bidi->Write(3));  // queued for the new stream
  bidi->stream().Cancel();
  absl::Status status = bidi->Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
  EXPECT_EQ(bidi->hook_calls(), 1);
  EXPECT_EQ(service_.double_calls(), 1);
  EXPECT_FALSE(bidi->Write(4));
}

// The async client stream: writes queued, the one response (or the final
// status) to `done`.
class AsyncSum {
 public:
  // Starts client.AsyncSum with these options.
  AsyncSum(StreamServiceClient& client, const Options& call)
      : stream_(client.AsyncSum(
            [this](absl::StatusOr<SumResponse> response) {
              std::lock_guard<std::mutex> lock(mu_);
              response_ = std::move(response);
              ++done_calls_;
              cv_.notify_all();
            },
            call)) {}

  // Waits (at most `limit`) for `done`.
  absl::StatusOr<SumResponse> Done(
      std::chrono::seconds limit = std::chrono::minutes(1)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, limit, [&] { return done_calls_ > 0; });
    if (done_calls_ == 0) return absl::DeadlineExceededError("no done");
    return response_;
  }
  int done_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_calls_;
  }
  AsyncStreamWriter<Item>& stream() { return stream_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int done_calls_ = 0;
  absl::StatusOr<SumResponse> response_ = absl::UnknownError("not yet");
  // Last: its callback uses the members above.
  AsyncStreamWriter<Item> stream_;
};

TEST_F(GeneratedStreamResumeTest, AsyncClientStreamGetsItsResponse) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncSum sum(client, Options{});
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(sum.stream().Write(MakeItem(i)));
  ASSERT_TRUE(sum.stream().WritesDone());
  absl::StatusOr<SumResponse> response = sum.Done();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->sum(), 15);
  EXPECT_EQ(response->count(), 5);
  EXPECT_EQ(service_.sum_calls(), 1);
  EXPECT_THAT(events(), ElementsAre(true));
  EXPECT_FALSE(sum.stream().Write(MakeItem(6)));  // over
  EXPECT_FALSE(sum.stream().WritesDone());
  EXPECT_EQ(sum.done_calls(), 1);
}

TEST_F(GeneratedStreamResumeTest, AnIdempotentAsyncClientStreamIsReplayed) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 2;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncSum sum(client,
               Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(sum.stream().Write(MakeItem(i)));
  ASSERT_TRUE(sum.stream().WritesDone());
  absl::StatusOr<SumResponse> response = sum.Done();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->sum(), 15);  // each write counted once, on the last
  EXPECT_EQ(response->count(), 5);
  EXPECT_EQ(service_.sum_calls(), 3);
  EXPECT_THAT(events(), ElementsAre(false, false, true));
}

TEST_F(GeneratedStreamResumeTest, ANonIdempotentAsyncClientStreamIsNotRetried) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 1;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncSum sum(client, Options{});  // Sum has no idempotency in the proto
  ASSERT_TRUE(sum.stream().Write(MakeItem(1)));
  ASSERT_TRUE(sum.stream().WritesDone());
  absl::StatusOr<SumResponse> response = sum.Done();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(response.status()).has_value());
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kNonIdempotent);
  EXPECT_EQ(service_.sum_calls(), 1);
}

TEST_F(GeneratedStreamResumeTest, AFailedAsyncClientStreamCarriesTheSummary) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 100;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<AsyncSleeperOption>(clock_).set<RetryPolicyOption>(
          RetryPolicy::LimitedErrorCount(2)));
  AsyncSum sum(client,
               Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(sum.stream().Write(MakeItem(1)));
  ASSERT_TRUE(sum.stream().WritesDone());
  absl::StatusOr<SumResponse> response = sum.Done();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(response.status()).has_value());
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kExhausted);
  EXPECT_EQ(GetRetrySummary(response.status())->attempts, 3);
  EXPECT_THAT(std::string(response.status().message()),
              HasSubstr("sum failed [stubkit:"));
  EXPECT_EQ(service_.sum_calls(), 3);
  EXPECT_EQ(sum.done_calls(), 1);
}

TEST_F(GeneratedStreamResumeTest,
       AnAsyncClientStreamPastTheReplayBufferNeedsTheHook) {
  ASSERT_TRUE(server_.ok());
  service_.sum_fail_first = 1;
  std::atomic<int> hook_calls{0};
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<StreamServiceClient::SumResumeOption>(
              [&hook_calls](const SumResponse* last,
                            ResumeWriter<Item>& writer) {
                EXPECT_EQ(last, nullptr);  // a client stream reads nothing
                ++hook_calls;
                writer.Write(MakeItem(7));  // what the server should know
                return true;
              }));
  AsyncSum sum(client, Options{});
  // Five bytes each (a large varint): past 256 KiB after ~52,000 writes.
  const int n = 60000;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(sum.stream().Write(MakeItem(1 << 22)));
  }
  ASSERT_TRUE(sum.stream().WritesDone());
  absl::StatusOr<SumResponse> response = sum.Done();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->count(), 1);  // only the hook's message was replayed
  EXPECT_EQ(response->sum(), 7);
  EXPECT_EQ(hook_calls.load(), 1);
  EXPECT_EQ(service_.sum_calls(), 2);
}

TEST_F(GeneratedStreamResumeTest, CancellingAnAsyncClientStream) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncSum sum(client, Options{});
  ASSERT_TRUE(sum.stream().Write(MakeItem(1)));
  sum.stream().Cancel();  // the server is still reading
  absl::StatusOr<SumResponse> response = sum.Done();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled)
      << response.status();
  EXPECT_FALSE(sum.stream().Write(MakeItem(2)));
  EXPECT_EQ(sum.done_calls(), 1);
}

// Issue 39, item 4: the resume hook runs only when the decision is to
// resume. A break after a response that stops the stream anyway (a code
// that is not retryable, a call that is not idempotent, the caller's
// cancel) never calls it. The same scenarios, sync and async.
TEST_F(GeneratedStreamResumeTest, TheResumeHookRunsOnlyWhenTheStreamResumes) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  service_.breaks = 1000;
  struct Case {
    const char* name;
    grpc::StatusCode code;
    bool non_idempotent;
    bool cancel;
    absl::StatusCode expected_code;
    StopReason reason;
  };
  const Case cases[] = {
      {"not retryable", grpc::StatusCode::PERMISSION_DENIED, false, false,
       absl::StatusCode::kPermissionDenied, StopReason::kPermanentError},
      {"not idempotent", grpc::StatusCode::UNAVAILABLE, true, false,
       absl::StatusCode::kUnavailable, StopReason::kNonIdempotent},
      {"cancelled", grpc::StatusCode::UNAVAILABLE, false, true,
       absl::StatusCode::kCancelled, StopReason::kCancelled},
  };
  for (const Case& c : cases) {
    for (const bool async : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (async ? ", async" : ", sync"));
      service_.break_code = c.code;
      std::atomic<int> hook_calls{0};
      StreamServiceClient client(
          server_.Channel(),
          ClientOptions()
              .set<AsyncSleeperOption>(clock_)
              .set<StreamServiceClient::DoubleResumeOption>(
                  [&hook_calls](const Item*, ResumeWriter<Item>& writer) {
                    ++hook_calls;
                    writer.Write(MakeItem(2));
                    return true;
                  }));
      Options call;
      if (c.non_idempotent) {
        call.set<IdempotencyOption>(Idempotency::kNonIdempotent);
      }
      const int calls_before = service_.double_calls();
      absl::Status status;
      if (async) {
        AsyncBidi bidi(client, call);
        ASSERT_TRUE(bidi.Write(1));
        ASSERT_THAT(bidi.Answers(1), ElementsAre(2));
        if (c.cancel) {
          bidi.stream().Cancel();
        } else {
          ASSERT_TRUE(bidi.Write(2));  // the server breaks on it
        }
        status = bidi.Done();
      } else {
        auto stream = client.Double(call);
        int sent = 0;
        ASSERT_THAT(WriteAndRead(stream, 1, 1, &sent), ElementsAre(2));
        if (c.cancel) {
          stream.Cancel();
          Item answer;
          EXPECT_FALSE(stream.Read(&answer));
        } else {
          EXPECT_THAT(WriteAndRead(stream, 2, 2, &sent), ElementsAre());
        }
        status = stream.Finish();
      }
      EXPECT_EQ(status.code(), c.expected_code) << status;
      ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
      EXPECT_EQ(GetRetrySummary(status)->stop_reason, c.reason);
      EXPECT_EQ(hook_calls.load(), 0);
      EXPECT_EQ(service_.double_calls(), calls_before + 1);
    }
  }
}

// Issue 39, item 3: a client stream resumed through its hook (its writes
// outgrew the replay buffer) starts its retry policy again, as a server
// stream does after progress: a break 40 minutes into an upload, past the
// default 30-minute policy, still resumes. Only TotalTimeoutOption or
// DeadlineOption bound the whole stream. Sync and async.
TEST_F(GeneratedStreamResumeTest,
       AClientStreamResumedByItsHookOutlivesThePolicy) {
  ASSERT_TRUE(server_.ok());
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    // This driver's first call fails once everything was written.
    service_.sum_fail_first = service_.sum_calls() + 1;
    std::atomic<int> hook_calls{0};
    StreamServiceClient client(
        server_.Channel(),
        ClientOptions()
            .set<AsyncSleeperOption>(clock_)
            .set<RetryPolicyOption>(
                RetryPolicy::LimitedTime(std::chrono::minutes(30)))
            .set<StreamServiceClient::SumResumeOption>(
                [&hook_calls](const SumResponse*, ResumeWriter<Item>& writer) {
                  ++hook_calls;
                  writer.Write(MakeItem(7));
                  return true;
                }));
    // Five bytes each: past the 256 KiB replay buffer.
    constexpr int kWrites = 60000;
    absl::StatusOr<SumResponse> response;
    if (async) {
      AsyncSum sum(client, Options{});
      for (int i = 0; i < kWrites; ++i) {
        ASSERT_TRUE(sum.stream().Write(MakeItem(1 << 22)));
      }
      clock_->Advance(std::chrono::minutes(40));
      ASSERT_TRUE(sum.stream().WritesDone());  // the server fails then
      response = sum.Done();
    } else {
      auto writer = client.Sum();
      for (int i = 0; i < kWrites; ++i) {
        ASSERT_TRUE(writer.Write(MakeItem(1 << 22)));
      }
      clock_->Advance(std::chrono::minutes(40));
      response = writer.Finish();
    }
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->sum(), 7);
    EXPECT_EQ(hook_calls.load(), 1);
  }
}

// ... and its error count: failures before the resume do not count after it.
TEST_F(GeneratedStreamResumeTest, AClientStreamResumedByItsHookCountsAgain) {
  ASSERT_TRUE(server_.ok());
  // Per driver: a break while the writes can still be replayed (a counted
  // failure), then one past the replay buffer (the hook's), then success.
  service_.sum_break_at = {100, 55000, 0, 100, 55000, 0};
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    const int calls_before = service_.sum_calls();
    std::atomic<int> hook_calls{0};
    StreamServiceClient client(
        server_.Channel(),
        ClientOptions()
            .set<AsyncSleeperOption>(clock_)
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1))
            .set<StreamServiceClient::SumResumeOption>(
                [&hook_calls](const SumResponse*, ResumeWriter<Item>& writer) {
                  ++hook_calls;
                  writer.Write(MakeItem(7));
                  return true;
                }));
    constexpr int kWrites = 60000;
    absl::StatusOr<SumResponse> response;
    if (async) {
      AsyncSum sum(client,
                   Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
      for (int i = 0; i < kWrites; ++i) {
        if (!sum.stream().Write(MakeItem(1 << 22))) break;
      }
      sum.stream().WritesDone();
      response = sum.Done();
    } else {
      auto writer = client.Sum(
          Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
      for (int i = 0; i < kWrites; ++i) {
        if (!writer.Write(MakeItem(1 << 22))) break;
      }
      response = writer.Finish();
    }
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(hook_calls.load(), 1);
    EXPECT_EQ(service_.sum_calls(), calls_before + 3);
  }
}

// Issue 39, item 1: a cancel after the attempt's context is attached to the
// token but before its reactor is live (here from the context setup hook,
// which runs between the two) must still end the stream: a client stream
// has no pending read to bring OnDone.
TEST_F(GeneratedStreamResumeTest,
       AnAsyncClientStreamCancelledWhileItsAttemptStartsCompletes) {
  ASSERT_TRUE(server_.ok());
  auto token = std::make_shared<CancellationToken>();
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncSum sum(client,
               Options{}.set<CancellationOption>(token).set<ContextSetupOption>(
                   [token](grpc::ClientContext&) { token->Cancel(); }));
  absl::StatusOr<SumResponse> response = sum.Done(std::chrono::seconds(30));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled)
      << response.status();
  EXPECT_EQ(sum.done_calls(), 1);
  EXPECT_FALSE(sum.stream().Write(MakeItem(1)));
}

// The same race from another thread: each of many streams is cancelled
// through its CancellationOption token while it starts; every one must
// complete, with CANCELLED.
// A bidi stream whose context is cancelled before its call starts: gRPC
// fails its read at once, on its own thread, and that end released the
// attempt's hold while StartAttempt was still using the reactor (ASan:
// heap-use-after-free in EndWrites; found in 1 of 7 ASan runs of
// AnAsyncBidiStreamOverflowingAsItReopensEnds). Many calls, so that under
// ASan some land in the window.
TEST_F(GeneratedStreamResumeTest,
       AsyncBidiStreamsCancelledAsTheirAttemptStartsAllComplete) {
  ASSERT_TRUE(server_.ok());
  constexpr int kCalls = 200;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  std::vector<std::unique_ptr<AsyncBidi>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto token = std::make_shared<CancellationToken>();
    calls.push_back(std::make_unique<AsyncBidi>(
        client,
        Options{}.set<CancellationOption>(token).set<ContextSetupOption>(
            [token](grpc::ClientContext&) { token->Cancel(); })));
  }
  int cancelled = 0;
  for (auto& call : calls) {
    if (call->Done().code() == absl::StatusCode::kCancelled) ++cancelled;
  }
  EXPECT_EQ(cancelled, kCalls);
}

TEST_F(GeneratedStreamResumeTest,
       AsyncClientStreamsCancelledFromAnotherThreadAllComplete) {
  ASSERT_TRUE(server_.ok());
  constexpr int kCalls = 400;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  std::vector<std::shared_ptr<CancellationToken>> tokens;
  for (int i = 0; i < kCalls; ++i) {
    tokens.push_back(std::make_shared<CancellationToken>());
  }
  // Call i's token is cancelled as call i starts, after a delay that
  // varies from call to call, so that some cancels land inside the start.
  std::atomic<int> starting{0};
  std::thread canceller([&] {
    for (int i = 0; i < kCalls; ++i) {
      while (starting.load() <= i) {
      }
      // Simple assignment: ++ on a volatile is deprecated in C++20.
      for (volatile int spin = 0; spin < (i % 40) * 500; spin = spin + 1) {
      }
      tokens[i]->Cancel();
    }
  });
  std::vector<std::unique_ptr<AsyncSum>> sums;
  for (int i = 0; i < kCalls; ++i) {
    starting.store(i + 1);
    sums.push_back(std::make_unique<AsyncSum>(
        client, Options{}.set<CancellationOption>(tokens[i])));
  }
  canceller.join();
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int completed = 0;
  int cancelled = 0;
  for (auto& sum : sums) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(
        give_up - std::chrono::steady_clock::now());
    absl::StatusOr<SumResponse> response =
        sum->Done(std::max(left, std::chrono::seconds(1)));
    if (sum->done_calls() == 1) ++completed;
    if (response.status().code() == absl::StatusCode::kCancelled) ++cancelled;
  }
  EXPECT_EQ(completed, kCalls);
  EXPECT_EQ(cancelled, kCalls);
}

// Issue 39, item 7: while an async client or bidi stream has no live
// attempt able to send (here held in its backoff, on the fake clock),
// at most 4 MiB of writes wait in its queue; the write that would pass the
// bound is refused and ends the call with the failure it waited after
// (gRFC A6: past the retry buffer the call is committed, and a call waiting
// to retry fails). No further attempt reaches the server.
constexpr std::size_t kQueuedWriteBound = 4 * 1024 * 1024;
// What the tests below try to queue while waiting: 20 MiB.
constexpr int kWritesTried = 320;

// Holds every wait until `Release()` ends them (done(true)) or `Cancel`
// ends one (done(false)): a call held in its backoff, on the fake clock.
class HeldSleeper : public AsyncSleeper {
 public:
  uint64_t Schedule(std::chrono::nanoseconds,
                    std::function<void(bool)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.emplace(++next_id_, std::move(done));
    return next_id_;
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
  void Release() {
    std::map<uint64_t, std::function<void(bool)>> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending.swap(pending_);
    }
    for (auto& [id, done] : pending) done(true);
  }
  size_t pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }
  // Waits (at most 30 s) until a wait is held.
  bool AwaitHeld() {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pending() == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pending() > 0;
  }

 private:
  std::mutex mu_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::function<void(bool)>> pending_;
};

// Writes `item` until a write is refused or `kWritesTried` were accepted;
// returns how many were.
int WriteUntilRefused(AsyncStreamWriter<Item>& stream, const Item& item) {
  int accepted = 0;
  while (accepted < kWritesTried && stream.Write(item)) ++accepted;
  return accepted;
}

void ExpectGaveUpOnTheQueue(const absl::Status& status,
                            absl::string_view failure, int attempts = 1) {
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(failure)));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("gave up retrying: more than 4 MiB of writes queued "
                        "while the stream was waiting to reopen"));
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kNotResumable);
  EXPECT_EQ(GetRetrySummary(status)->attempts, attempts);
  EXPECT_THAT(WhyNot(status).why, HasSubstr("more than 4 MiB"));
}

TEST_F(GeneratedStreamResumeTest,
       AnAsyncClientStreamWaitingToReopenBoundsItsWriteQueue) {
  ASSERT_TRUE(server_.ok());
  service_.sum_break_at = {1};
  auto sleeper = std::make_shared<HeldSleeper>();
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(sleeper));
  AsyncSum sum(client,
               Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(sum.stream().Write(MakeItem(1)));  // the server breaks on it
  // An idle client stream learns of the break through a write: empty ones
  // (0 bytes queued) until the retry is decided and its backoff is held.
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (sleeper->pending() == 0 &&
         std::chrono::steady_clock::now() < give_up) {
    ASSERT_TRUE(sum.stream().Write(Item()));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(sleeper->pending(), 1u);
  ASSERT_THAT(events(), ElementsAre(false));
  const Item big = PaddedItem(2);
  const int fits = static_cast<int>(kQueuedWriteBound / big.ByteSizeLong());
  const int accepted = WriteUntilRefused(sum.stream(), big);
  EXPECT_EQ(accepted, fits);
  if (accepted != fits) sum.stream().Cancel();  // still waiting: end it
  EXPECT_FALSE(sum.stream().Write(Item()));     // every later write too
  EXPECT_FALSE(sum.stream().WritesDone());
  absl::StatusOr<SumResponse> response = sum.Done(std::chrono::seconds(30));
  ExpectGaveUpOnTheQueue(response.status(), "sum broke");
  EXPECT_EQ(sum.done_calls(), 1);
  EXPECT_THAT(events(), ElementsAre(false, true));
  // The wait was cut short (cancelled), and nothing follows it.
  EXPECT_EQ(sleeper->pending(), 0u);
  sleeper->Release();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(service_.sum_calls(), 1);
  EXPECT_EQ(sum.done_calls(), 1);
}

TEST_F(GeneratedStreamResumeTest,
       AnAsyncBidiStreamWaitingToReopenBoundsItsWriteQueue) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 1;
  auto sleeper = std::make_shared<HeldSleeper>();
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(sleeper));
  AsyncBidi bidi(client,
                 Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  // The first attempt fails at once; its backoff is held.
  ASSERT_TRUE(sleeper->AwaitHeld());
  ASSERT_THAT(events(), ElementsAre(false));
  const Item big = PaddedItem(2);
  const int fits = static_cast<int>(kQueuedWriteBound / big.ByteSizeLong());
  const int accepted = WriteUntilRefused(bidi.stream(), big);
  EXPECT_EQ(accepted, fits);
  if (accepted != fits) bidi.stream().Cancel();  // still waiting: end it
  EXPECT_FALSE(bidi.stream().Write(Item()));     // every later write too
  EXPECT_FALSE(bidi.stream().WritesDone());
  ExpectGaveUpOnTheQueue(bidi.Done(), "cannot open yet");
  EXPECT_THAT(bidi.Answers(0), ElementsAre());
  EXPECT_THAT(events(), ElementsAre(false, true));
  EXPECT_EQ(sleeper->pending(), 0u);
  sleeper->Release();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(service_.double_calls(), 1);
}

// The same bound while the retry is being decided: writes made from the
// resume hook (which runs between the break and the wait) overflow it; the
// call ends with the break's status, and no wait stays behind.
TEST_F(GeneratedStreamResumeTest,
       AnAsyncBidiStreamOverflowingWhileItsBreakIsDecidedEnds) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  auto sleeper = std::make_shared<HeldSleeper>();
  AsyncBidi* bidi = nullptr;
  const Item big = PaddedItem(3);
  std::atomic<int> accepted{-1};
  StreamServiceClient client(
      server_.Channel(), ClientOptions()
                             .set<AsyncSleeperOption>(sleeper)
                             .set<StreamServiceClient::DoubleResumeOption>(
                                 [&](const Item*, ResumeWriter<Item>& writer) {
                                   writer.Write(MakeItem(2));
                                   accepted =
                                       WriteUntilRefused(bidi->stream(), big);
                                   return true;
                                 }));
  auto stream = std::make_unique<AsyncBidi>(client, Options{});
  bidi = stream.get();
  ASSERT_TRUE(bidi->Write(1));
  ASSERT_THAT(bidi->Answers(1), ElementsAre(2));
  ASSERT_TRUE(bidi->Write(2));  // the server breaks on it
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (accepted.load() < 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const int fits = static_cast<int>(kQueuedWriteBound / big.ByteSizeLong());
  EXPECT_EQ(accepted.load(), fits);
  if (accepted.load() != fits) bidi->stream().Cancel();  // still waiting
  ExpectGaveUpOnTheQueue(bidi->Done(), "stream broke");
  EXPECT_FALSE(bidi->Write(4));
  EXPECT_EQ(sleeper->pending(), 0u);
  sleeper->Release();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(service_.double_calls(), 1);
}

// ... and while the stream reopens, until the new attempt can send (here
// from the context setup hook, as the new attempt starts): the overflow
// cancels that attempt, and the call ends with the break that made it
// reopen.
TEST_F(GeneratedStreamResumeTest, AnAsyncBidiStreamOverflowingAsItReopensEnds) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  auto sleeper = std::make_shared<HeldSleeper>();
  AsyncBidi* bidi = nullptr;
  const Item big = PaddedItem(3);
  std::atomic<int> setups{0};
  std::atomic<int> accepted{-1};
  StreamServiceClient client(
      server_.Channel(), ClientOptions()
                             .set<AsyncSleeperOption>(sleeper)
                             .set<StreamServiceClient::DoubleResumeOption>(
                                 [](const Item*, ResumeWriter<Item>& writer) {
                                   writer.Write(MakeItem(2));
                                   return true;
                                 }));
  auto stream = std::make_unique<AsyncBidi>(
      client, Options{}.set<ContextSetupOption>([&](grpc::ClientContext&) {
        if (++setups == 2) accepted = WriteUntilRefused(bidi->stream(), big);
      }));
  bidi = stream.get();
  ASSERT_TRUE(bidi->Write(1));
  ASSERT_THAT(bidi->Answers(1), ElementsAre(2));
  ASSERT_TRUE(bidi->Write(2));  // the server breaks on it
  ASSERT_TRUE(sleeper->AwaitHeld());
  sleeper->Release();  // the second attempt starts here, inline
  const int fits = static_cast<int>(kQueuedWriteBound / big.ByteSizeLong());
  EXPECT_EQ(accepted.load(), fits);
  if (accepted.load() != fits) bidi->stream().Cancel();
  ExpectGaveUpOnTheQueue(bidi->Done(), "stream broke", 2);
  EXPECT_FALSE(bidi->Write(4));
  EXPECT_EQ(sleeper->pending(), 0u);
  EXPECT_EQ(setups.load(), 2);
}

// ... while a live stream keeps today's unbounded queue: gRPC sends it at
// its own pace, and pacing the writes is the writer's (as with grpc-java's
// StreamObserver). 8 MiB written at once all arrive.
TEST_F(GeneratedStreamResumeTest, ALiveAsyncStreamQueuesPastTheBound) {
  ASSERT_TRUE(server_.ok());
  constexpr int kWrites = 128;  // 8 MiB
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  {
    AsyncSum sum(client,
                 Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
    for (int i = 1; i <= kWrites; ++i) {
      ASSERT_TRUE(sum.stream().Write(PaddedItem(i)));
    }
    ASSERT_TRUE(sum.stream().WritesDone());
    absl::StatusOr<SumResponse> response = sum.Done();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->count(), kWrites);
    EXPECT_EQ(response->sum(), kWrites * (kWrites + 1) / 2);
    EXPECT_EQ(service_.sum_padding_bytes.load(), int64_t{kWrites} * 64 * 1024);
    EXPECT_EQ(service_.sum_calls(), 1);
  }
  {
    AsyncBidi bidi(client,
                   Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
    for (int i = 1; i <= kWrites; ++i) {
      ASSERT_TRUE(bidi.stream().Write(PaddedItem(i)));
    }
    ASSERT_TRUE(bidi.stream().WritesDone());
    EXPECT_TRUE(bidi.Done().ok());
    EXPECT_THAT(bidi.Answers(kWrites), ElementsAreArray(Doubles(1, kWrites)));
    EXPECT_EQ(service_.double_calls(), 1);
  }
  EXPECT_THAT(events(), ElementsAre(true, true));
}

// Attempt timeouts of server and bidi streams bound the wait for the first
// response, not the stream's life (docs/streaming.md), in real time: a
// stream that answers slowly but steadily is one attempt; one whose first
// answer stalls is ended and retried as an attempt timeout. Margins are
// wide, for a loaded machine under a sanitizer: a 1 s timeout against a
// first answer within milliseconds, 250 ms gaps (7 items outlive the
// timeout by half), and a 5 s stall.
class SlowStreamService final : public StreamService::Service {
 public:
  // Both methods: each call sends `count` items, one every `gap`; call 1
  // (when `stall_first`) or every call (`stall_all`) first waits `stall`
  // (or until the client goes away). Double waits for the first item
  // before answering, then answers with doubles of 1..count.
  int count = 7;
  std::chrono::milliseconds gap{250};
  std::chrono::milliseconds stall{5000};
  bool stall_first = false;
  bool stall_all = false;

  grpc::Status Range(grpc::ServerContext* context,
                     const ::stubkit::testing::RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    const int call = ++range_calls_;
    if (Stalls(call) && Wait(context, stall)) return Gone();
    for (int i = 0; i < count; ++i) {
      if (i > 0 && Wait(context, gap)) return Gone();
      if (!writer->Write(MakeItem(request->start() + i))) return Gone();
    }
    return grpc::Status::OK;
  }

  grpc::Status Double(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    const int call = ++double_calls_;
    Item item;
    if (!stream->Read(&item)) return grpc::Status::OK;
    if (Stalls(call) && Wait(context, stall)) return Gone();
    for (int i = 1; i <= count; ++i) {
      if (i > 1 && Wait(context, gap)) return Gone();
      if (!stream->Write(MakeItem(2 * i))) return Gone();
    }
    while (stream->Read(&item)) {
    }
    return grpc::Status::OK;
  }

  int range_calls() const { return range_calls_.load(); }
  int double_calls() const { return double_calls_.load(); }

 private:
  bool Stalls(int call) const {
    return stall_all || (stall_first && call == 1);
  }
  // Waits `d`; true when the client went away first.
  static bool Wait(grpc::ServerContext* context, std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      if (context->IsCancelled()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return context->IsCancelled();
  }
  static grpc::Status Gone() {
    return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  }

  std::atomic<int> range_calls_{0};
  std::atomic<int> double_calls_{0};
};

class StreamAttemptTimeoutTest : public ::testing::Test {
 protected:
  StreamAttemptTimeoutTest() : server_(&service_) {}

  // Real time (the attempt timeout is), short backoff, a generous total
  // timeout; every attempt's status is recorded.
  Options ClientOptions() {
    return Options{}
        .set<AttemptTimeoutOption>(std::chrono::seconds(1))
        .set<TotalTimeoutOption>(std::chrono::seconds(30))
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::milliseconds(10))
                .WithMaximumDelay(std::chrono::milliseconds(10))
                .WithJitter(Jitter::None()))
        .set<IdempotencyOption>(Idempotency::kIdempotent)
        .set<RetryObserverOption>([this](const AttemptEvent& event) {
          std::lock_guard<std::mutex> lock(mu_);
          statuses_.push_back(event.status.code());
        });
  }
  std::vector<absl::StatusCode> statuses() {
    std::lock_guard<std::mutex> lock(mu_);
    return statuses_;
  }

  static ::stubkit::testing::RangeRequest Range(int start, int count) {
    ::stubkit::testing::RangeRequest request;
    request.set_start(start);
    request.set_count(count);
    return request;
  }
  static std::vector<int> ReadAll(StreamReader<Item>& reader) {
    std::vector<int> items;
    Item item;
    while (reader.Read(&item)) items.push_back(item.value());
    return items;
  }
  struct AsyncResult {
    std::vector<int> items;
    absl::Status status;
  };
  static AsyncResult ReadAllAsync(StreamServiceClient& client) {
    auto items = std::make_shared<std::vector<int>>();
    std::promise<absl::Status> done;
    client.AsyncRange(
        Range(0, 7),
        [items](const Item& item) { items->push_back(item.value()); },
        [&done](absl::Status status) { done.set_value(std::move(status)); });
    AsyncResult result;
    result.status = done.get_future().get();
    result.items = *items;
    return result;
  }
  // Writes 1, reads every answer, half-closes.
  static std::vector<int> BidiOnce(StreamReaderWriter<Item, Item>& stream) {
    std::vector<int> answers;
    if (!stream.Write(MakeItem(1))) return answers;
    stream.WritesDone();
    Item answer;
    while (stream.Read(&answer)) answers.push_back(answer.value());
    return answers;
  }

  SlowStreamService service_;
  TestServer server_;
  std::mutex mu_;
  std::vector<absl::StatusCode> statuses_;
};

TEST_F(StreamAttemptTimeoutTest, ASlowSteadyServerStreamIsOneAttempt) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader = client.Range(Range(0, 7));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2, 3, 4, 5, 6));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(reader.attempts(), 1);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(StreamAttemptTimeoutTest, ASlowSteadyAsyncServerStreamIsOneAttempt) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  AsyncResult result = ReadAllAsync(client);
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2, 3, 4, 5, 6));
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(StreamAttemptTimeoutTest, ASlowSteadyBidiStreamIsOneAttempt) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto stream = client.Double();
  EXPECT_THAT(BidiOnce(stream), ElementsAreArray(Doubles(1, 7)));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(stream.attempts(), 1);
  EXPECT_EQ(service_.double_calls(), 1);
}

TEST_F(StreamAttemptTimeoutTest, ASlowSteadyAsyncBidiStreamIsOneAttempt) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  AsyncBidi bidi(client, Options{});
  ASSERT_TRUE(bidi.Write(1));
  ASSERT_TRUE(bidi.stream().WritesDone());
  EXPECT_THAT(bidi.Answers(7), ElementsAreArray(Doubles(1, 7)));
  EXPECT_TRUE(bidi.Done().ok()) << bidi.Done();
  EXPECT_EQ(service_.double_calls(), 1);
}

TEST_F(StreamAttemptTimeoutTest, AStalledServerStreamIsRetriedAsATimeout) {
  ASSERT_TRUE(server_.ok());
  service_.stall_first = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader = client.Range(Range(0, 7));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1, 2, 3, 4, 5, 6));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(reader.attempts(), 2);
  EXPECT_EQ(service_.range_calls(), 2);
  EXPECT_THAT(statuses(), ElementsAre(absl::StatusCode::kDeadlineExceeded,
                                      absl::StatusCode::kOk));
}

TEST_F(StreamAttemptTimeoutTest, AStalledAsyncServerStreamIsRetriedAsATimeout) {
  ASSERT_TRUE(server_.ok());
  service_.stall_first = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  AsyncResult result = ReadAllAsync(client);
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2, 3, 4, 5, 6));
  EXPECT_EQ(service_.range_calls(), 2);
  EXPECT_THAT(statuses(), ElementsAre(absl::StatusCode::kDeadlineExceeded,
                                      absl::StatusCode::kOk));
}

TEST_F(StreamAttemptTimeoutTest, AStalledBidiStreamIsRetriedAsATimeout) {
  ASSERT_TRUE(server_.ok());
  service_.stall_first = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto stream = client.Double();
  // The write is replayed on the second attempt.
  EXPECT_THAT(BidiOnce(stream), ElementsAreArray(Doubles(1, 7)));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_EQ(stream.attempts(), 2);
  EXPECT_EQ(service_.double_calls(), 2);
  EXPECT_THAT(statuses(), ElementsAre(absl::StatusCode::kDeadlineExceeded,
                                      absl::StatusCode::kOk));
}

TEST_F(StreamAttemptTimeoutTest, AStalledAsyncBidiStreamIsRetriedAsATimeout) {
  ASSERT_TRUE(server_.ok());
  service_.stall_first = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  AsyncBidi bidi(client, Options{});
  ASSERT_TRUE(bidi.Write(1));
  ASSERT_TRUE(bidi.stream().WritesDone());
  EXPECT_THAT(bidi.Answers(7), ElementsAreArray(Doubles(1, 7)));
  EXPECT_TRUE(bidi.Done().ok()) << bidi.Done();
  EXPECT_EQ(service_.double_calls(), 2);
  EXPECT_THAT(statuses(), ElementsAre(absl::StatusCode::kDeadlineExceeded,
                                      absl::StatusCode::kOk));
}

TEST_F(StreamAttemptTimeoutTest,
       AStreamThatNeverAnswersStopsAsAUnaryCallWould) {
  // Every attempt times out: DEADLINE_EXCEEDED, the policy exhausted after
  // 1 + 3 attempts, as for a unary call whose attempts all time out.
  ASSERT_TRUE(server_.ok());
  service_.stall_all = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader = client.Range(Range(0, 7));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  ASSERT_TRUE(GetRetrySummary(status).has_value());
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(reader.attempts(), 4);
  EXPECT_THAT(std::string(status.message()), HasSubstr("AttemptTimeoutOption"));
}

TEST_F(StreamAttemptTimeoutTest, ACallersCancelDuringTheWaitIsACancel) {
  // The caller cancels while the first answer is awaited, before the
  // attempt timeout (here 10 s): a cancel, not a timeout.
  ASSERT_TRUE(server_.ok());
  service_.stall_all = true;
  service_.stall = std::chrono::milliseconds(20000);
  auto token = std::make_shared<CancellationToken>();
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader = client.Range(
      Range(0, 7), Options{}
                       .set<AttemptTimeoutOption>(std::chrono::seconds(10))
                       .set<CancellationOption>(token));
  std::thread canceller([token] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token->Cancel();
  });
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  canceller.join();
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  ASSERT_TRUE(GetRetrySummary(status).has_value());
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(reader.attempts(), 1);
}

}  // namespace
}  // namespace stubkit

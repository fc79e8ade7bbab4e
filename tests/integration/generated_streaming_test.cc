// Copyright 2026 The stubkit Authors.
//
// Generated streaming clients against a real, fault-injecting gRPC server:
// server streams are reopened until the first response and resumed only
// through the user's hook; client and bidi streams work end to end and
// carry the call's options (their reopening and resume:
// generated_stream_resume_test.cc).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/retry_observer.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using ::stubkit::testing::Item;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;
using ::stubkit::testing::TestServer;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

class FlakyStreamService final : public StreamService::Service {
 public:
  // Range: the first `fail_open_first` calls fail with `fail_open_code`
  // before sending anything; the first `breaks` calls that reach item
  // `break_after` break there with UNAVAILABLE (never, when negative).
  int fail_open_first = 0;
  grpc::StatusCode fail_open_code = grpc::StatusCode::UNAVAILABLE;
  int break_after = -1;
  int breaks = 1;
  grpc::StatusCode break_code = grpc::StatusCode::UNAVAILABLE;
  // Range: after sending `hang_after` items (never, when negative), waits
  // until the client cancels.
  int hang_after = -1;
  // Sum fails with UNAVAILABLE after reading everything.
  bool fail_sum = false;
  // Double: after the first item, streams until the client goes away.
  bool double_floods = false;

  grpc::Status Range(grpc::ServerContext* context, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    int call = ++range_calls_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      range_starts_.push_back(request->start());
    }
    if (call <= fail_open_first) {
      return grpc::Status(fail_open_code, "cannot open yet");
    }
    for (int i = 0; i < request->count(); ++i) {
      if (i == hang_after) return WaitForCancel(context);
      if (i == break_after && breaks_done_.fetch_add(1) < breaks) {
        return grpc::Status(break_code, "stream broke");
      }
      Item item;
      item.set_value(request->start() + i);
      if (!writer->Write(item)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status Sum(grpc::ServerContext* context,
                   grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    ++sum_calls_;
    RecordMetadata(context);
    Item item;
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    if (fail_sum) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "sum");
    return grpc::Status::OK;
  }

  grpc::Status Double(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    ++double_calls_;
    RecordMetadata(context);
    Item item;
    while (stream->Read(&item)) {
      item.set_value(item.value() * 2);
      stream->Write(item);
      if (double_floods) {
        while (!context->IsCancelled() && stream->Write(item)) {
        }
        return grpc::Status(grpc::StatusCode::ABORTED, "flood ended");
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext*, const RangeRequest* request,
                   Item* response) override {
    response->set_value(request->start());
    return grpc::Status::OK;
  }

  int range_calls() const { return range_calls_.load(); }
  int sum_calls() const { return sum_calls_.load(); }
  int double_calls() const { return double_calls_.load(); }
  std::vector<int> range_starts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return range_starts_;
  }
  std::string metadata() const {
    std::lock_guard<std::mutex> lock(mu_);
    return metadata_;
  }

 private:
  // A bound, so that a client bug fails the test instead of hanging it.
  static grpc::Status WaitForCancel(grpc::ServerContext* context) {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!context->IsCancelled() &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return grpc::Status(grpc::StatusCode::ABORTED, "hung until cancelled");
  }

  void RecordMetadata(grpc::ServerContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = context->client_metadata().find("x-test");
    if (it != context->client_metadata().end()) {
      metadata_.assign(it->second.data(), it->second.size());
    }
  }

  std::atomic<int> range_calls_{0};
  std::atomic<int> sum_calls_{0};
  std::atomic<int> double_calls_{0};
  std::atomic<int> breaks_done_{0};
  mutable std::mutex mu_;
  std::vector<int> range_starts_;
  std::string metadata_;
};

class GeneratedStreamingTest : public ::testing::Test {
 protected:
  GeneratedStreamingTest() : server_(&service_) {}

  Options ClientOptions() const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::seconds(1))
                .WithMaximumDelay(std::chrono::seconds(10))
                .WithMultiplier(2.0)
                .WithJitter(Jitter::None()));
  }

  static RangeRequest Range(int start, int count) {
    RangeRequest request;
    request.set_start(start);
    request.set_count(count);
    return request;
  }

  static std::vector<int> ReadAll(StreamReader<Item>& reader) {
    std::vector<int> values;
    Item item;
    while (reader.Read(&item)) values.push_back(item.value());
    return values;
  }

  // Continues after the last item: the resume hook a user would write.
  static bool ResumeAfter(int* calls, const Item& last, RangeRequest& request) {
    ++*calls;
    const int end = request.start() + request.count();
    request.set_start(last.value() + 1);
    request.set_count(end - request.start());
    return true;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FlakyStreamService service_;
  TestServer server_;
};

std::vector<int> Iota(int from, int to) {
  std::vector<int> values;
  for (int i = from; i < to; ++i) values.push_back(i);
  return values;
}

TEST_F(GeneratedStreamingTest, OpeningIsRetriedUntilTheFirstResponse) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 2;
  StreamServiceClient client(server_.Channel(), ClientOptions());

  StreamReader<Item> reader = client.Range(Range(0, 5));
  EXPECT_THAT(ReadAll(reader), ElementsAreArray(Iota(0, 5)));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(reader.attempts(), 3);
  EXPECT_EQ(service_.range_calls(), 3);
}

TEST_F(GeneratedStreamingTest, OpeningStopsOnANonRetryableCode) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 1;
  service_.fail_open_code = grpc::StatusCode::PERMISSION_DENIED;
  StreamServiceClient client(server_.Channel(), ClientOptions());

  StreamReader<Item> reader = client.Range(Range(0, 5));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, ResumeHookContinuesABrokenStreamExactlyOnce) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::RangeResumeOption>(
          [&hook_calls](const Item& last, RangeRequest& request) {
            return ResumeAfter(&hook_calls, last, request);
          }));

  StreamReader<Item> reader = client.Range(Range(0, 10));
  // Every item once, in order, across the break.
  EXPECT_THAT(ReadAll(reader), ElementsAreArray(Iota(0, 10)));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(reader.attempts(), 2);
  EXPECT_THAT(service_.range_starts(), ElementsAre(0, 4));
}

TEST_F(GeneratedStreamingTest, StreamThatBreaksTwiceResumesTwice) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  service_.breaks = 2;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::RangeResumeOption>(
          [&hook_calls](const Item& last, RangeRequest& request) {
            return ResumeAfter(&hook_calls, last, request);
          }));
  StreamReader<Item> reader = client.Range(Range(0, 12));
  EXPECT_THAT(ReadAll(reader), ElementsAreArray(Iota(0, 12)));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(hook_calls, 2);
  EXPECT_EQ(reader.attempts(), 3);
  EXPECT_THAT(service_.range_starts(), ElementsAre(0, 4, 8));
}

TEST_F(GeneratedStreamingTest, ResumptionsAfterProgressRestartTheRetryPolicy) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 1;
  service_.breaks = 100;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2))
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  StreamReader<Item> reader = client.Range(Range(0, 10));
  // Each attempt delivers one item, then breaks: each break follows
  // progress, so two retries per break are never used up.
  EXPECT_THAT(ReadAll(reader), ElementsAreArray(Iota(0, 10)));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(hook_calls, 9);
  EXPECT_EQ(reader.attempts(), 10);
}

TEST_F(GeneratedStreamingTest, AStreamThatBreaksAfterThePolicyTimeResumes) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  int hook_calls = 0;
  // The default policy: 30 minutes. The stream breaks after 31.
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<RetryPolicyOption>(RetryPolicy::LimitedTime())
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  StreamReader<Item> reader = client.Range(Range(0, 10));
  std::vector<int> values;
  Item item;
  while (reader.Read(&item)) {
    values.push_back(item.value());
    if (item.value() == 3) clock_->Advance(std::chrono::minutes(31));
  }
  EXPECT_THAT(values, ElementsAreArray(Iota(0, 10)));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(hook_calls, 1);
  EXPECT_THAT(service_.range_starts(), ElementsAre(0, 4));
}

TEST_F(GeneratedStreamingTest, ResumeHookCanBeSetForOneCall) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 3;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  int hook_calls = 0;

  StreamReader<Item> reader = client.Range(
      Range(10, 6), Options{}.set<StreamServiceClient::RangeResumeOption>(
                        [&hook_calls](const Item& last, RangeRequest& r) {
                          return ResumeAfter(&hook_calls, last, r);
                        }));
  EXPECT_THAT(ReadAll(reader), ElementsAreArray(Iota(10, 16)));
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_EQ(hook_calls, 1);
  EXPECT_THAT(service_.range_starts(), ElementsAre(10, 13));
}

// A stream that broke after delivering messages and was not resumed still
// ends like any stopped call: one attempt, a retry summary naming the reason,
// the original code and message first.
void ExpectNotResumed(const absl::Status& status, absl::string_view why) {
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(status.message(), "stream broke")) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(why));
  std::optional<RetrySummary> summary = GetRetrySummary(status);
  ASSERT_TRUE(summary.has_value()) << status;
  EXPECT_EQ(summary->stop_reason, StopReason::kNotResumable);
  EXPECT_EQ(summary->attempts, 1);
}

TEST_F(GeneratedStreamingTest, WithoutAHookABreakAfterDataIsReported) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  std::vector<StopReason> final_events;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<RetryObserverOption>(
                                 [&final_events](const AttemptEvent& event) {
                                   if (event.final)
                                     final_events.push_back(event.stop_reason);
                                 }));

  StreamReader<Item> reader = client.Range(Range(0, 10));
  EXPECT_THAT(ReadAll(reader), ElementsAreArray(Iota(0, 4)));
  ExpectNotResumed(reader.Finish(), "has no resume hook");
  EXPECT_EQ(service_.range_calls(), 1);
  EXPECT_THAT(final_events, ElementsAre(StopReason::kNotResumable));
}

TEST_F(GeneratedStreamingTest, AHookThatDeclinesReportsTheBreak) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 2;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::RangeResumeOption>(
          [&hook_calls](const Item&, RangeRequest&) {
            ++hook_calls;
            return false;
          }));

  StreamReader<Item> reader = client.Range(Range(0, 10));
  EXPECT_THAT(ReadAll(reader), ElementsAre(0, 1));
  ExpectNotResumed(reader.Finish(), "its resume hook declined");
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, ClientStreamCarriesOptionsEndToEnd) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());

  auto writer = client.Sum(Options{}.set<MetadataOption>({{"x-test", "abc"}}));
  for (int i = 1; i <= 5; ++i) {
    Item item;
    item.set_value(i);
    ASSERT_TRUE(writer.Write(item));
  }
  absl::StatusOr<SumResponse> response = writer.Finish();  // half-closes
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->sum(), 15);
  EXPECT_EQ(response->count(), 5);
  EXPECT_EQ(service_.metadata(), "abc");
}

TEST_F(GeneratedStreamingTest, ANonIdempotentClientStreamIsNotReplayed) {
  ASSERT_TRUE(server_.ok());
  service_.fail_sum = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());

  // Sum is not idempotent in the proto, and no resume hook is set.
  auto writer = client.Sum();
  Item item;
  item.set_value(1);
  ASSERT_TRUE(writer.Write(item));
  ASSERT_TRUE(writer.WritesDone());
  absl::StatusOr<SumResponse> response = writer.Finish();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(response.status()).has_value());
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kNonIdempotent);
  EXPECT_EQ(service_.sum_calls(), 1);
}

TEST_F(GeneratedStreamingTest, BidiStreamWorksEndToEnd) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());

  auto stream =
      client.Double(Options{}
                        .set<MetadataOption>({{"x-test", "bidi"}})
                        .set<TotalTimeoutOption>(std::chrono::seconds(30)));
  std::vector<int> doubled;
  for (int i = 1; i <= 3; ++i) {
    Item item;
    item.set_value(i);
    ASSERT_TRUE(stream.Write(item));
    ASSERT_TRUE(stream.Read(&item));
    doubled.push_back(item.value());
  }
  ASSERT_TRUE(stream.WritesDone());
  Item extra;
  EXPECT_FALSE(stream.Read(&extra));
  EXPECT_TRUE(stream.Finish().ok());
  EXPECT_THAT(doubled, ElementsAre(2, 4, 6));
  EXPECT_EQ(service_.metadata(), "bidi");
  EXPECT_EQ(service_.double_calls(), 1);
}

// Finish() before Read returned false: it never blocks on a server that
// keeps streaming.
TEST_F(GeneratedStreamingTest, BidiFinishWhileTheServerKeepsStreamingCancels) {
  ASSERT_TRUE(server_.ok());
  service_.double_floods = true;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  // The deadline only bounds a failure of this test (a blocked Finish).
  auto stream = client.Double(
      Options{}.set<TotalTimeoutOption>(std::chrono::seconds(20)));
  Item item;
  item.set_value(1);
  ASSERT_TRUE(stream.Write(item));
  ASSERT_TRUE(stream.Read(&item));
  EXPECT_EQ(item.value(), 2);
  absl::Status status = stream.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("unread"));
  EXPECT_FALSE(stream.Read(&item));
  EXPECT_EQ(service_.double_calls(), 1);
}

TEST_F(GeneratedStreamingTest, BidiFinishWithUnreadResponsesCancels) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  // gRPC's own Finish() would wait for the unread responses to be read;
  // the deadline only bounds a failure of this test.
  auto stream = client.Double(
      Options{}.set<TotalTimeoutOption>(std::chrono::seconds(20)));
  Item item;
  for (int i = 1; i <= 3; ++i) {
    item.set_value(i);
    ASSERT_TRUE(stream.Write(item));
  }
  ASSERT_TRUE(stream.Read(&item));  // 4 and 6 stay unread
  EXPECT_EQ(stream.Finish().code(), absl::StatusCode::kCancelled);
}

TEST_F(GeneratedStreamingTest, BidiFinishAfterTheLastResponseReturnsTheStatus) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto stream = client.Double();
  Item item;
  for (int i = 1; i <= 3; ++i) {
    item.set_value(i);
    ASSERT_TRUE(stream.Write(item));
    ASSERT_TRUE(stream.Read(&item));
  }
  // Every response was read, though Read never returned false: Finish
  // half-closes and returns the server's status.
  EXPECT_TRUE(stream.Finish().ok());
}

TEST_F(GeneratedStreamingTest, BidiStreamHonoursTheCallDeadline) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());

  auto stream = client.Double(Options{}.set<DeadlineOption>(
      std::chrono::system_clock::now() - std::chrono::seconds(1)));
  Item item;
  item.set_value(1);
  stream.Write(item);
  EXPECT_FALSE(stream.Read(&item));
  EXPECT_EQ(stream.Finish().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(GeneratedStreamingTest, InvalidOptionsFailTheStreamUnsent) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());

  auto writer =
      client.Sum(Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(-1)));
  Item item;
  EXPECT_FALSE(writer.Write(item));
  EXPECT_EQ(writer.Finish().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(service_.sum_calls(), 0);
}

TEST_F(GeneratedStreamingTest,
       AClientStreamsInvalidTimeoutIsNamedAsInAUnaryCall) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());

  auto writer =
      client.Sum(Options{}.set<TotalTimeoutOption>(std::chrono::seconds(-1)));
  EXPECT_THAT(
      std::string(writer.Finish().status().message()),
      ::testing::HasSubstr("TotalTimeoutOption must not be negative, got -1s "
                           "[stubkit: invalid options, nothing was sent"));
  auto stream = client.Double(
      Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(-2)));
  EXPECT_THAT(
      std::string(stream.Finish().message()),
      ::testing::HasSubstr("AttemptTimeoutOption must not be negative, got -2s "
                           "[stubkit: invalid options, nothing was sent"));
  EXPECT_EQ(service_.sum_calls(), 0);
}

TEST_F(GeneratedStreamingTest, UnaryMethodNextToStreams) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  absl::StatusOr<Item> item = client.Get(Range(42, 1));
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ(item->value(), 42);
}

TEST_F(GeneratedStreamingTest, TheStreamsTotalTimeoutEndsItWithDeadline) {
  ASSERT_TRUE(server_.ok());
  service_.hang_after = 0;
  // Real time: the policy's 50 ms do not bound the stream's attempt; its
  // 300 ms total timeout does, and its expiry is the call's end.
  StreamServiceClient client(server_.Channel());
  StreamReader<Item> reader = client.Range(
      Range(0, 3),
      Options{}
          .set<RetryPolicyOption>(
              RetryPolicy::LimitedTime(std::chrono::milliseconds(50)))
          .set<TotalTimeoutOption>(std::chrono::milliseconds(300)));
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kDeadline);
  EXPECT_EQ(service_.range_calls(), 1);
}

// --- Cancel() and CancellationOption on sync streams ---------------------

// Far sooner than any wait a test cancels (10 minutes).
constexpr auto kPromptly = std::chrono::minutes(1);

// A real 10-minute backoff, and a future that is ready once the reader has
// chosen to wait.
struct TenMinuteBackoff {
  std::future<void> waiting;
  Options options;
};

TenMinuteBackoff TenMinuteBackoffOptions() {
  auto decided = std::make_shared<std::promise<void>>();
  TenMinuteBackoff backoff;
  backoff.waiting = decided->get_future();
  backoff.options =
      Options{}
          .set<BackoffPolicyOption>(
              ExponentialBackoffPolicy()
                  .WithInitialDelay(std::chrono::minutes(10))
                  .WithMaximumDelay(std::chrono::minutes(10))
                  .WithMultiplier(2.0)
                  .WithJitter(Jitter::None()))
          .set<RetryObserverOption>(
              [decided, once = std::make_shared<std::once_flag>()](
                  const AttemptEvent& event) {
                if (!event.final) {
                  std::call_once(*once, [&] { decided->set_value(); });
                }
              });
  return backoff;
}

TEST_F(GeneratedStreamingTest, CancelFromAnotherThreadEndsABlockedRead) {
  ASSERT_TRUE(server_.ok());
  service_.hang_after = 1;
  int hook_calls = 0;
  // Even where CANCELLED is retryable and a hook would resume, a cancel is
  // final.
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<RetryPolicyOption>(
              RetryPolicy::LimitedErrorCount(5).WithRetryableCodes(
                  {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::CANCELLED}))
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  StreamReader<Item> reader = client.Range(Range(0, 10));
  Item item;
  ASSERT_TRUE(reader.Read(&item));
  const auto start = std::chrono::steady_clock::now();
  std::thread canceller([&reader] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    reader.Cancel();
  });
  EXPECT_FALSE(reader.Read(&item));  // blocked until the cancel
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kPromptly);
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(hook_calls, 0);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, CancelDuringABackoffEndsTheStream) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 100;
  TenMinuteBackoff backoff = TenMinuteBackoffOptions();
  StreamServiceClient client(server_.Channel());
  StreamReader<Item> reader = client.Range(Range(0, 3), backoff.options);
  const auto start = std::chrono::steady_clock::now();
  auto reading =
      std::async(std::launch::async, [&reader] { return ReadAll(reader); });
  backoff.waiting.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // into it
  reader.Cancel();
  EXPECT_THAT(reading.get(), ElementsAre());
  EXPECT_LT(std::chrono::steady_clock::now() - start, kPromptly);
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, CancelBeforeTheFirstReadOpensNothing) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader = client.Range(Range(0, 3));
  reader.Cancel();
  EXPECT_THAT(ReadAll(reader), ElementsAre());
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.range_calls(), 0);
}

TEST_F(GeneratedStreamingTest, CancellationOptionEndsABlockedRead) {
  ASSERT_TRUE(server_.ok());
  service_.hang_after = 2;
  auto token = std::make_shared<CancellationToken>();
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::RangeResumeOption>(
          [&hook_calls](const Item& last, RangeRequest& request) {
            return ResumeAfter(&hook_calls, last, request);
          }));
  StreamReader<Item> reader =
      client.Range(Range(0, 10), Options{}.set<CancellationOption>(token));
  Item item;
  ASSERT_TRUE(reader.Read(&item));
  ASSERT_TRUE(reader.Read(&item));
  std::thread canceller([&token] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    token->Cancel();
  });
  EXPECT_FALSE(reader.Read(&item));
  canceller.join();
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  // The call was cancelled, not broken: no resume was considered.
  ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
  EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(hook_calls, 0);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, CancellationOptionEndsABackoffWait) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 100;
  auto token = std::make_shared<CancellationToken>();
  TenMinuteBackoff backoff = TenMinuteBackoffOptions();
  StreamServiceClient client(server_.Channel());
  StreamReader<Item> reader =
      client.Range(Range(0, 3), backoff.options.set<CancellationOption>(token));
  const auto start = std::chrono::steady_clock::now();
  auto reading =
      std::async(std::launch::async, [&reader] { return ReadAll(reader); });
  backoff.waiting.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  token->Cancel();
  EXPECT_THAT(reading.get(), ElementsAre());
  EXPECT_LT(std::chrono::steady_clock::now() - start, kPromptly);
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, CancelFromAnotherThreadEndsABlockedBidiRead) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  auto stream = client.Double();
  Item item;
  std::thread canceller([&stream] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stream.Cancel();
  });
  EXPECT_FALSE(stream.Read(&item));  // nothing was written: blocks
  canceller.join();
  EXPECT_EQ(stream.Finish().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace stubkit

namespace stubkit {
namespace {

// Async readers: the same rules, pushed to callbacks.
struct AsyncResult {
  std::vector<int> items;
  absl::Status status;
};

AsyncResult ReadAllAsync(StreamServiceClient& client,
                         const RangeRequest& request,
                         const Options& call = {}) {
  auto items = std::make_shared<std::vector<int>>();
  std::promise<absl::Status> done;
  client.AsyncRange(
      request, [items](const Item& item) { items->push_back(item.value()); },
      [&done](absl::Status status) { done.set_value(std::move(status)); },
      call);
  AsyncResult result;
  result.status = done.get_future().get();
  result.items = *items;
  return result;
}

TEST_F(GeneratedStreamingTest, AsyncOpeningIsRetriedUntilTheFirstResponse) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 2;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncResult result = ReadAllAsync(client, Range(0, 5));
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(result.items, ElementsAreArray(Iota(0, 5)));
  EXPECT_EQ(service_.range_calls(), 3);
}

TEST_F(GeneratedStreamingTest, AsyncStreamThatBreaksTwiceResumesTwice) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  service_.breaks = 2;
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  AsyncResult result = ReadAllAsync(client, Range(0, 12));
  EXPECT_TRUE(result.status.ok()) << result.status;
  // Every item exactly once, in order, across both breaks.
  EXPECT_THAT(result.items, ElementsAreArray(Iota(0, 12)));
  EXPECT_EQ(hook_calls, 2);
  EXPECT_THAT(service_.range_starts(), ElementsAre(0, 4, 8));
}

TEST_F(GeneratedStreamingTest, AsyncBreakWithoutAHookIsReported) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 3;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncResult result = ReadAllAsync(client, Range(0, 10));
  ExpectNotResumed(result.status, "has no resume hook");
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2));
  EXPECT_EQ(service_.range_calls(), 1);
}

// Reads asynchronously; the fake clock moves `advance` once `at` arrives.
AsyncResult ReadAllAsyncAdvancing(StreamServiceClient& client,
                                  const RangeRequest& request,
                                  std::shared_ptr<FakeClock> clock, int at,
                                  std::chrono::minutes advance,
                                  const Options& call = {}) {
  auto items = std::make_shared<std::vector<int>>();
  std::promise<absl::Status> done;
  client.AsyncRange(
      request,
      [items, clock, at, advance](const Item& item) {
        items->push_back(item.value());
        if (item.value() == at) clock->Advance(advance);
      },
      [&done](absl::Status status) { done.set_value(std::move(status)); },
      call);
  AsyncResult result;
  result.status = done.get_future().get();
  result.items = *items;
  return result;
}

TEST_F(GeneratedStreamingTest, AsyncStreamThatBreaksAfterThePolicyTimeResumes) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  std::atomic<int> hook_calls{0};
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<RetryPolicyOption>(RetryPolicy::LimitedTime())
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                int calls = 0;
                ResumeAfter(&calls, last, request);
                hook_calls += calls;
                return true;
              }));
  // The default 30-minute policy; 31 minutes pass before the break.
  AsyncResult result = ReadAllAsyncAdvancing(client, Range(0, 10), clock_, 3,
                                             std::chrono::minutes(31));
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(result.items, ElementsAreArray(Iota(0, 10)));
  EXPECT_EQ(hook_calls.load(), 1);
  EXPECT_THAT(service_.range_starts(), ElementsAre(0, 4));
}

TEST_F(GeneratedStreamingTest, AsyncLongStreamWithoutAHookReportsTheBreak) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<AsyncSleeperOption>(clock_).set<RetryPolicyOption>(
          RetryPolicy::LimitedTime()));
  AsyncResult result = ReadAllAsyncAdvancing(client, Range(0, 10), clock_, 3,
                                             std::chrono::minutes(31));
  ExpectNotResumed(result.status, "has no resume hook");
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, AsyncStreamPastItsTotalTimeoutDoesNotResume) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 4;
  std::atomic<int> hook_calls{0};
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<RetryPolicyOption>(RetryPolicy::LimitedTime())
          .set<TotalTimeoutOption>(std::chrono::minutes(40))
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                int calls = 0;
                ResumeAfter(&calls, last, request);
                hook_calls += calls;
                return true;
              }));
  AsyncResult result = ReadAllAsyncAdvancing(client, Range(0, 10), clock_, 3,
                                             std::chrono::minutes(41));
  EXPECT_EQ(result.status.code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(result.status).has_value()) << result.status;
  EXPECT_EQ(GetRetrySummary(result.status)->stop_reason, StopReason::kDeadline);
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, AsyncStreamCanBeCancelledWhileWaiting) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 100;
  auto token = std::make_shared<CancellationToken>();
  // The real timer, with a long backoff: the wait is what gets cancelled.
  StreamServiceClient client(
      server_.Channel(),
      Options{}.set<CancellationOption>(token).set<BackoffPolicyOption>(
          ExponentialBackoffPolicy()
              .WithInitialDelay(std::chrono::minutes(1))
              .WithMaximumDelay(std::chrono::minutes(1))
              .WithMultiplier(1.0)));
  std::promise<absl::Status> done;
  client.AsyncRange(
      Range(0, 3), [](const Item&) {},
      [&done](absl::Status status) { done.set_value(std::move(status)); });
  while (service_.range_calls() < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  token->Cancel();
  absl::Status status = done.get_future().get();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.range_calls(), 1);
}

// The handle AsyncRange returns cancels the stream mid-way: the attempt in
// flight ends, no further one opens, and `on_done` gets CANCELLED once.
struct CountedDone {
  std::atomic<int> calls{0};
  std::promise<absl::Status> first;
  StreamDoneCallback Callback() {
    return [this](absl::Status status) {
      if (calls.fetch_add(1) == 0) first.set_value(std::move(status));
    };
  }
};

TEST_F(GeneratedStreamingTest, AsyncStreamHandleCancelsMidStream) {
  ASSERT_TRUE(server_.ok());
  service_.hang_after = 3;  // sends 0 1 2, then waits for the cancel
  int hook_calls = 0;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<AsyncSleeperOption>(clock_)
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  auto items = std::make_shared<std::vector<int>>();
  std::promise<void> third;
  CountedDone done;
  AsyncStreamReader<Item> stream = client.AsyncRange(
      Range(0, 10),
      [items, &third](const Item& item) {
        items->push_back(item.value());
        if (item.value() == 2) third.set_value();
      },
      done.Callback());
  ASSERT_EQ(third.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  stream.Cancel();
  auto status = done.first.get_future();
  ASSERT_EQ(status.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_EQ(status.get().code(), absl::StatusCode::kCancelled);
  stream.Cancel();  // after the end: nothing happens
  AsyncStreamReader<Item> copy = stream;
  copy.Cancel();
  EXPECT_EQ(done.calls.load(), 1);
  EXPECT_THAT(*items, ElementsAre(0, 1, 2));
  EXPECT_EQ(service_.range_calls(), 1);
}

TEST_F(GeneratedStreamingTest, AsyncStreamHandleCancelsTheBackoffWait) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 100;
  // The real timer, with a long backoff: the wait is what gets cancelled.
  StreamServiceClient client(server_.Channel(),
                             Options{}.set<BackoffPolicyOption>(
                                 ExponentialBackoffPolicy()
                                     .WithInitialDelay(std::chrono::minutes(1))
                                     .WithMaximumDelay(std::chrono::minutes(1))
                                     .WithMultiplier(1.0)));
  CountedDone done;
  AsyncStreamReader<Item> stream = client.AsyncRange(
      Range(0, 3), [](const Item&) {}, done.Callback());
  while (service_.range_calls() < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stream.Cancel();
  auto status = done.first.get_future();
  ASSERT_EQ(status.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_EQ(status.get().code(), absl::StatusCode::kCancelled);
  stream.Cancel();
  EXPECT_EQ(done.calls.load(), 1);
  EXPECT_EQ(service_.range_calls(), 1);
}

// Cancelled from its own `on_message`, before the second message.
TEST_F(GeneratedStreamingTest, AsyncStreamHandleCancelsFromACallback) {
  ASSERT_TRUE(server_.ok());
  service_.hang_after = 5;
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  auto stream = std::make_shared<AsyncStreamReader<Item>>();
  std::promise<void> handle_set;
  std::shared_future<void> handle_ready = handle_set.get_future().share();
  auto items = std::make_shared<std::vector<int>>();
  CountedDone done;
  *stream = client.AsyncRange(
      Range(0, 10),
      [stream, handle_ready, items](const Item& item) {
        handle_ready.wait();
        items->push_back(item.value());
        stream->Cancel();
      },
      done.Callback());
  handle_set.set_value();
  auto status = done.first.get_future();
  ASSERT_EQ(status.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_EQ(status.get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(done.calls.load(), 1);
  EXPECT_THAT(*items, ElementsAre(0));
}

// A caller that keeps no handle still gets its stream, and a user's token
// still cancels it.
TEST_F(GeneratedStreamingTest, AsyncStreamWithoutAHandleRunsToTheEnd) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(),
                             ClientOptions().set<AsyncSleeperOption>(clock_));
  AsyncResult result = ReadAllAsync(client, Range(0, 4));
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2, 3));
  AsyncStreamReader<Item> none;
  none.Cancel();  // a handle of no stream
}

// Issue 39, item 4: the resume hook (user code, with side effects) runs
// only when the decision is to resume. A break that stops the stream anyway
// never calls it: a code that is not retryable, a call that is not
// idempotent, a call whose end has passed. The same scenarios, sync and
// async.
struct NoResumeCase {
  const char* name;
  grpc::StatusCode code;
  bool non_idempotent;
  int total_timeout_minutes;  // 0: none
  StopReason reason;
};

TEST_F(GeneratedStreamingTest, TheResumeHookRunsOnlyWhenTheStreamResumes) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 3;
  service_.breaks = 1000;
  const NoResumeCase cases[] = {
      {"not retryable", grpc::StatusCode::PERMISSION_DENIED, false, 0,
       StopReason::kPermanentError},
      {"not idempotent", grpc::StatusCode::UNAVAILABLE, true, 0,
       StopReason::kNonIdempotent},
      {"past the total timeout", grpc::StatusCode::UNAVAILABLE, false, 40,
       StopReason::kDeadline},
  };
  for (const NoResumeCase& c : cases) {
    for (const bool async : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (async ? ", async" : ", sync"));
      service_.break_code = c.code;
      std::atomic<int> hook_calls{0};
      StreamServiceClient client(
          server_.Channel(),
          ClientOptions()
              .set<AsyncSleeperOption>(clock_)
              .set<StreamServiceClient::RangeResumeOption>(
                  [&hook_calls](const Item& last, RangeRequest& request) {
                    ++hook_calls;
                    int calls = 0;
                    return ResumeAfter(&calls, last, request);
                  }));
      Options call;
      if (c.non_idempotent) {
        call.set<IdempotencyOption>(Idempotency::kNonIdempotent);
      }
      if (c.total_timeout_minutes > 0) {
        call.set<TotalTimeoutOption>(
            std::chrono::minutes(c.total_timeout_minutes));
      }
      // The stream breaks after item 2; with a total timeout, 41 minutes
      // have passed by then.
      const auto advance =
          std::chrono::minutes(c.total_timeout_minutes > 0 ? 41 : 0);
      const int calls_before = service_.range_calls();
      AsyncResult result;
      if (async) {
        result = ReadAllAsyncAdvancing(client, Range(0, 10), clock_, 2, advance,
                                       call);
      } else {
        StreamReader<Item> reader = client.Range(Range(0, 10), call);
        Item item;
        while (reader.Read(&item)) {
          result.items.push_back(item.value());
          if (item.value() == 2) clock_->Advance(advance);
        }
        result.status = reader.Finish();
      }
      EXPECT_EQ(static_cast<int>(result.status.code()),
                static_cast<int>(c.code))
          << result.status;
      ASSERT_TRUE(GetRetrySummary(result.status).has_value()) << result.status;
      EXPECT_EQ(GetRetrySummary(result.status)->stop_reason, c.reason);
      EXPECT_THAT(result.items, ElementsAre(0, 1, 2));
      EXPECT_EQ(hook_calls.load(), 0);
      EXPECT_EQ(service_.range_calls(), calls_before + 1);
    }
  }
}

// ... nor after the caller's cancel, whatever the status the attempt ended
// with (here CANCELLED is even a retryable code).
TEST_F(GeneratedStreamingTest, TheResumeHookDoesNotRunAfterACancel) {
  ASSERT_TRUE(server_.ok());
  service_.hang_after = 2;
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    auto token = std::make_shared<CancellationToken>();
    std::atomic<int> hook_calls{0};
    StreamServiceClient client(
        server_.Channel(),
        ClientOptions()
            .set<AsyncSleeperOption>(clock_)
            .set<RetryPolicyOption>(
                RetryPolicy::LimitedErrorCount(5).WithRetryableCodes(
                    {grpc::StatusCode::UNAVAILABLE,
                     grpc::StatusCode::CANCELLED}))
            .set<StreamServiceClient::RangeResumeOption>(
                [&hook_calls](const Item& last, RangeRequest& request) {
                  ++hook_calls;
                  int calls = 0;
                  return ResumeAfter(&calls, last, request);
                }));
    const Options call = Options{}.set<CancellationOption>(token);
    auto received = std::make_shared<std::atomic<int>>(0);
    std::promise<absl::Status> done;
    std::optional<StreamReader<Item>> reader;
    std::future<void> reading;
    if (async) {
      client.AsyncRange(
          Range(0, 10), [received](const Item&) { ++*received; },
          [&done](absl::Status status) { done.set_value(std::move(status)); },
          call);
    } else {
      reader.emplace(client.Range(Range(0, 10), call));
      reading = std::async(std::launch::async, [&] {
        Item item;
        while (reader->Read(&item)) ++*received;
        done.set_value(reader->Finish());
      });
    }
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (received->load() < 2 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    token->Cancel();
    std::future<absl::Status> result = done.get_future();
    ASSERT_EQ(result.wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    absl::Status status = result.get();
    if (reading.valid()) reading.get();
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_EQ(hook_calls.load(), 0);
  }
}

}  // namespace
}  // namespace stubkit

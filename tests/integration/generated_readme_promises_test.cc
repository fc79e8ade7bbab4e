// Copyright 2026 The stubkit Authors.
//
// Promises of README.md and docs/ that had no test of their own, each checked
// through a generated client against a real gRPC server on 127.0.0.1:
//
//   - hedging: custom `non_fatal_codes`, hedges take throttle tokens, no
//     hedge starts past the call's end;
//   - `stubkit::CreateChannel` really stops gRPC's own retries;
//   - streams: `StreamReader::Cancel()`, `StreamWriter::Cancel()`,
//     `CancellationOption` on a sync stream, each resumption waits its
//     backoff;
//   - async streams: resumptions consume the policy, a hook that declines,
//     a non-retryable open;
//   - options on generated sync, async and hedged calls:
//     `IdempotencyMapOption`, several `DecoratorsOption` decorators and
//     their order, `ServerHintsOption(false)` with a positive pushback,
//     `RetryAttemptHeaderOption(false)` on async calls;
//   - one `RetryThrottle` shared by two clients.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stubkit/cancellation.h"
#include "stubkit/channel.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_hints.h"
#include "stubkit/testing/echo.stubkit.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::EchoServiceStub;
using ::stubkit::testing::EchoServiceStubDecorator;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::Item;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::Request;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;
using ::stubkit::testing::TestServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void WaitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 5000 && !condition(); ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
}

// Records the waits the retry loop chose, and their reasons.
class WaitLog {
 public:
  RetryObserverOption::Type Observer() {
    return [this](const AttemptEvent& event) {
      if (event.final) return;
      std::lock_guard<std::mutex> lock(mu_);
      waits_.push_back(event.wait);
      reasons_.push_back(event.wait_reason);
    };
  }
  std::vector<nanoseconds> waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }
  std::vector<WaitReason> reasons() {
    std::lock_guard<std::mutex> lock(mu_);
    return reasons_;
  }

 private:
  std::mutex mu_;
  std::vector<nanoseconds> waits_;
  std::vector<WaitReason> reasons_;
};

class EchoPromisesTest : public ::testing::Test {
 protected:
  EchoPromisesTest() : server_(&service_) {}

  // Waits are skipped (fake sleepers), time is real.
  Options FastRetries() const {
    return Options{}
        .set<SleeperOption>(clock_)
        .set<AsyncSleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                      .WithInitialDelay(seconds(1))
                                      .WithMaximumDelay(seconds(10))
                                      .WithMultiplier(2.0)
                                      .WithJitter(Jitter::None()));
  }

  static Options Hedged(int max_attempts, nanoseconds delay,
                        StatusCodeSet non_fatal = {
                            grpc::StatusCode::UNAVAILABLE}) {
    // The real timer thread: a fake one would fire every hedge at once.
    return Options{}
        .set<HedgingPolicyOption>(HedgingPolicy()
                                      .WithMaxAttempts(max_attempts)
                                      .WithHedgingDelay(delay)
                                      .WithNonFatalCodes(std::move(non_fatal)))
        .set<AsyncSleeperOption>(nullptr);
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FlakyEchoService service_;
  TestServer server_;
};

// ---------------------------------------------------------------- hedging

TEST_F(EchoPromisesTest, HedgingHonoursCustomNonFatalCodes) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  // A long delay: only non-fatal failures can send the next hedge.
  const Options hedged =
      Hedged(3, minutes(10), {grpc::StatusCode::RESOURCE_EXHAUSTED});

  absl::StatusOr<EchoResponse> r = client.Echo(
      Request("exhausted", 2, grpc::StatusCode::RESOURCE_EXHAUSTED), hedged);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->attempt(), 3);
  EXPECT_EQ(service_.attempts("exhausted"), 3);

  // UNAVAILABLE is no longer in the set: it ends the call.
  absl::StatusOr<EchoResponse> fatal =
      client.Echo(Request("unavailable", 2), hedged);
  EXPECT_EQ(fatal.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("unavailable"), 1);

  // The same through the async path.
  absl::StatusOr<EchoResponse> async =
      client
          .AsyncEcho(Request("async", 2, grpc::StatusCode::RESOURCE_EXHAUSTED),
                     hedged)
          .get();
  ASSERT_TRUE(async.ok()) << async.status();
  EXPECT_EQ(service_.attempts("async"), 3);
}

TEST_F(EchoPromisesTest, HedgesTakeThrottleTokens) {
  ASSERT_TRUE(server_.ok());
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.5));
  EchoServiceClient client(server_.Channel(),
                           Options{}.set<RetryThrottleOption>(throttle));
  // Two non-fatal failures take a token each; the success returns 0.5.
  absl::StatusOr<EchoResponse> r =
      client.Echo(Request("tokens", 2), Hedged(3, minutes(10)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(service_.attempts("tokens"), 3);
  EXPECT_DOUBLE_EQ(throttle->tokens(), 10 - 2 + 0.5);
}

TEST_F(EchoPromisesTest, NoHedgeStartsPastTheCallsEnd) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 10;  // every attempt hangs until cancelled
  EchoServiceClient client(server_.Channel());
  // Hedges are due at 0, 1 s and 2 s; the call ends at 1.5 s.
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<EchoResponse> r = client.Echo(
      Request("end"),
      Hedged(3, seconds(1)).set<TotalTimeoutOption>(milliseconds(1500)));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r.status();
  // Past the third hedge's time: it was never sent.
  std::this_thread::sleep_until(start + milliseconds(2500));
  EXPECT_EQ(service_.attempts("end"), 2);
}

// -------------------------------------------------- CreateChannel, retries

TEST_F(EchoPromisesTest, CreateChannelStopsGrpcsOwnRetries) {
  ASSERT_TRUE(server_.ok());
  // A service config under which gRPC itself makes up to 4 attempts. Over
  // TCP (not an in-process channel) gRPC 1.51 honours it.
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"json({"methodConfig": [{
      "name": [{"service": "stubkit.testing.EchoService"}],
      "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s",
                      "maxBackoff": "0.01s", "backoffMultiplier": 1.0,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}]})json");

  // Control: on a plain channel one stubkit attempt is 4 on the wire.
  EchoServiceClient plain(
      grpc::CreateCustomChannel(server_.address(),
                                grpc::InsecureChannelCredentials(), args),
      FastRetries().set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_FALSE(plain.Echo(Request("plain", 100)).ok());
  EXPECT_EQ(service_.attempts("plain"), 4);

  // stubkit's channel: 3 stubkit attempts are 3 on the wire.
  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials(), args),
      FastRetries().set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)));
  absl::StatusOr<EchoResponse> r = client.Echo(Request("stubkit", 100));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(r.status())->attempts, 3);
  EXPECT_EQ(service_.attempts("stubkit"), 3);
  EXPECT_THAT(service_.headers("stubkit", kRetryAttemptHeader),
              ElementsAre("-", "2", "3"));
  EXPECT_THAT(service_.headers("stubkit", "grpc-previous-rpc-attempts"),
              ElementsAre("-", "-", "-"));
}

// A caller's own `GRPC_ARG_ENABLE_RETRIES=1` cannot turn gRPC's retries back
// on. (gRPC 1.51 honours the first of repeated arguments: appending a 0 after
// it was not enough.)
TEST_F(EchoPromisesTest, CreateChannelOverridesCallersEnableRetries) {
  ASSERT_TRUE(server_.ok());
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  args.SetServiceConfigJSON(R"json({"methodConfig": [{
      "name": [{"service": "stubkit.testing.EchoService"}],
      "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s",
                      "maxBackoff": "0.01s", "backoffMultiplier": 1.0,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}]})json");

  // Control: with these arguments gRPC makes 4 attempts of its own.
  EchoServiceClient plain(
      grpc::CreateCustomChannel(server_.address(),
                                grpc::InsecureChannelCredentials(), args),
      FastRetries().set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_FALSE(plain.Echo(Request("enabled-plain", 100)).ok());
  EXPECT_EQ(service_.attempts("enabled-plain"), 4);

  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials(), args),
      FastRetries().set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_FALSE(client.Echo(Request("enabled-stubkit", 100)).ok());
  EXPECT_EQ(service_.attempts("enabled-stubkit"), 1);
  EXPECT_THAT(service_.headers("enabled-stubkit", "grpc-previous-rpc-attempts"),
              ElementsAre("-"));
}

// ------------------------------------------ options on generated calls

TEST_F(EchoPromisesTest, IdempotencyMapOptionOnSyncAsyncAndHedgedCalls) {
  ASSERT_TRUE(server_.ok());
  // Append is not idempotent in the proto, Echo is; the map turns both.
  EchoServiceClient client(
      server_.Channel(),
      FastRetries().set<IdempotencyMapOption>(
          {{"stubkit.testing.EchoService.Append", Idempotency::kIdempotent},
           {"stubkit.testing.EchoService.Echo", Idempotency::kNonIdempotent}}));

  ASSERT_TRUE(client.Append(Request("append-sync", 2)).ok());
  EXPECT_EQ(service_.attempts("append-sync"), 3);
  ASSERT_TRUE(client.AsyncAppend(Request("append-async", 2)).get().ok());
  EXPECT_EQ(service_.attempts("append-async"), 3);
  // Now idempotent, Append is hedged: failures send the next hedge at once.
  ASSERT_TRUE(
      client.Append(Request("append-hedged", 2), Hedged(3, minutes(10))).ok());
  EXPECT_EQ(service_.attempts("append-hedged"), 3);

  absl::StatusOr<EchoResponse> echo = client.Echo(Request("echo-sync", 2));
  EXPECT_EQ(GetRetrySummary(echo.status())->stop_reason,
            StopReason::kNonIdempotent);
  EXPECT_EQ(service_.attempts("echo-sync"), 1);
  absl::StatusOr<EchoResponse> echo_async =
      client.AsyncEcho(Request("echo-async", 2)).get();
  EXPECT_EQ(GetRetrySummary(echo_async.status())->stop_reason,
            StopReason::kNonIdempotent);
  EXPECT_EQ(service_.attempts("echo-async"), 1);
  // Non-idempotent: never hedged, one attempt.
  EXPECT_FALSE(
      client.Echo(Request("echo-hedged", 2), Hedged(3, minutes(10))).ok());
  EXPECT_EQ(service_.attempts("echo-hedged"), 1);

  // A per-call IdempotencyOption wins over the map.
  ASSERT_TRUE(
      client
          .Echo(Request("echo-call", 1),
                Options{}.set<IdempotencyOption>(Idempotency::kIdempotent))
          .ok());
  EXPECT_EQ(service_.attempts("echo-call"), 2);
}

// Records its name on every attempt, sync or async, into a shared trace.
class TraceStub : public EchoServiceStubDecorator {
 public:
  TraceStub(std::shared_ptr<EchoServiceStub> child, std::string name,
            std::shared_ptr<std::vector<std::string>> trace,
            std::shared_ptr<std::mutex> mu)
      : EchoServiceStubDecorator(std::move(child)),
        name_(std::move(name)),
        trace_(std::move(trace)),
        mu_(std::move(mu)) {}

  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    Record();
    return EchoServiceStubDecorator::Echo(context, options, request);
  }
  void AsyncEcho(grpc::ClientContext& context, const OptionsView& options,
                 const EchoRequest& request,
                 AsyncCallback<EchoResponse> done) override {
    Record();
    EchoServiceStubDecorator::AsyncEcho(context, options, request,
                                        std::move(done));
  }

 private:
  void Record() {
    std::lock_guard<std::mutex> lock(*mu_);
    trace_->push_back(name_);
  }
  std::string name_;
  std::shared_ptr<std::vector<std::string>> trace_;
  std::shared_ptr<std::mutex> mu_;
};

TEST_F(EchoPromisesTest, SeveralDecoratorsInOrderOnSyncAsyncAndHedgedCalls) {
  ASSERT_TRUE(server_.ok());
  auto trace = std::make_shared<std::vector<std::string>>();
  auto mu = std::make_shared<std::mutex>();
  auto layer = [&](std::string name) {
    return [trace, mu, name](std::shared_ptr<EchoServiceStub> child)
               -> std::shared_ptr<EchoServiceStub> {
      return std::make_shared<TraceStub>(std::move(child), name, trace, mu);
    };
  };
  auto take = [&] {
    std::lock_guard<std::mutex> lock(*mu);
    std::vector<std::string> seen = *trace;
    trace->clear();
    return seen;
  };
  // The first wraps the gRPC stub, the last is outermost and sees each
  // attempt first; a factory that returns null is skipped.
  EchoServiceClient client(
      server_.Channel(),
      FastRetries().set<EchoServiceClient::DecoratorsOption>(
          {layer("inner"),
           [](std::shared_ptr<EchoServiceStub>)
               -> std::shared_ptr<EchoServiceStub> { return nullptr; },
           layer("outer")}));

  ASSERT_TRUE(client.Echo(Request("sync", 1)).ok());
  EXPECT_THAT(take(), ElementsAre("outer", "inner", "outer", "inner"));
  ASSERT_TRUE(client.AsyncEcho(Request("async", 1)).get().ok());
  EXPECT_THAT(take(), ElementsAre("outer", "inner", "outer", "inner"));
  ASSERT_TRUE(client.Echo(Request("hedged", 1), Hedged(3, minutes(10))).ok());
  EXPECT_THAT(take(), ElementsAre("outer", "inner", "outer", "inner"));
  EXPECT_EQ(service_.attempts("hedged"), 2);
}

TEST_F(EchoPromisesTest, ServerHintsOffIgnoresAPositivePushback) {
  ASSERT_TRUE(server_.ok());
  WaitLog log;
  EchoServiceClient client(
      server_.Channel(),
      FastRetries().set<RetryObserverOption>(log.Observer()));
  EchoRequest request = Request("pushback", 1);
  request.set_pushback_ms("60000");

  // Control: with hints on, the minute of pushback is the wait.
  ASSERT_TRUE(client.Echo(request).ok());
  EXPECT_THAT(log.waits(), ElementsAre(minutes(1)));
  EXPECT_THAT(log.reasons(), ElementsAre(WaitReason::kPushback));

  const Options off = Options{}.set<ServerHintsOption>(false);
  request.set_message("sync-off");
  WaitLog sync_log;
  ASSERT_TRUE(client
                  .Echo(request, Options(off).set<RetryObserverOption>(
                                     sync_log.Observer()))
                  .ok());
  EXPECT_THAT(sync_log.waits(), ElementsAre(seconds(1)));
  EXPECT_THAT(sync_log.reasons(), ElementsAre(WaitReason::kBackoff));

  request.set_message("async-off");
  WaitLog async_log;
  ASSERT_TRUE(client
                  .AsyncEcho(request, Options(off).set<RetryObserverOption>(
                                          async_log.Observer()))
                  .get()
                  .ok());
  EXPECT_THAT(async_log.waits(), ElementsAre(seconds(1)));
  EXPECT_THAT(async_log.reasons(), ElementsAre(WaitReason::kBackoff));
  EXPECT_EQ(service_.attempts("async-off"), 2);
}

TEST_F(EchoPromisesTest, RetryAttemptHeaderOffOnAsyncCalls) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), FastRetries());
  ASSERT_TRUE(client.AsyncEcho(Request("on", 2)).get().ok());
  EXPECT_THAT(service_.headers("on", kRetryAttemptHeader),
              ElementsAre("-", "2", "3"));
  ASSERT_TRUE(client
                  .AsyncEcho(Request("off", 2),
                             Options{}.set<RetryAttemptHeaderOption>(false))
                  .get()
                  .ok());
  EXPECT_THAT(service_.headers("off", kRetryAttemptHeader),
              ElementsAre("-", "-", "-"));
}

// ------------------------------------------------ one throttle, two clients

TEST_F(EchoPromisesTest, OneThrottleSharedByTwoClients) {
  ASSERT_TRUE(server_.ok());
  // gRPC's semantics: 4 tokens, retries stop at or below 2.
  auto shared = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(0.1));
  Options options = FastRetries().set<RetryThrottleOption>(shared);
  // TestServer::Channel() makes a new channel each time.
  EchoServiceClient a(server_.Channel(), options);
  EchoServiceClient b(server_.Channel(), options);

  // Client a's outage drains the bucket: 4 -> 3 (retry) -> 2 (stop).
  absl::StatusOr<EchoResponse> ra = a.Echo(Request("a", 100));
  EXPECT_EQ(GetRetrySummary(ra.status())->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(service_.attempts("a"), 2);

  // Client b, another client on another channel, is throttled too: its one
  // failure is not retried, sync or async.
  absl::StatusOr<EchoResponse> rb = b.Echo(Request("b", 1));
  EXPECT_EQ(GetRetrySummary(rb.status())->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(service_.attempts("b"), 1);
  absl::StatusOr<EchoResponse> rb_async =
      b.AsyncEcho(Request("b-async", 1)).get();
  EXPECT_EQ(GetRetrySummary(rb_async.status())->stop_reason,
            StopReason::kThrottled);
  EXPECT_EQ(service_.attempts("b-async"), 1);

  // Control: a client with a bucket of its own retries the same failure.
  EchoServiceClient c(
      server_.Channel(),
      FastRetries().set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
          RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(0.1))));
  ASSERT_TRUE(c.Echo(Request("c", 1)).ok());
  EXPECT_EQ(service_.attempts("c"), 2);
}

// ------------------------------------------------------------------ streams

// Range streams `count` items from `start`, `item_delay_ms` apart. The first
// `fail_open_first` calls, and every call from `fail_open_from` on (when
// positive), fail before sending anything; the first `breaks` calls that
// reach item `break_after` break there with UNAVAILABLE. Every call that
// sees the client cancel is counted.
class StreamPromisesService final : public StreamService::Service {
 public:
  std::atomic<int> item_delay_ms{0};
  std::atomic<int> fail_open_first{0};
  std::atomic<int> fail_open_from{0};
  grpc::StatusCode fail_open_code = grpc::StatusCode::UNAVAILABLE;
  std::atomic<int> break_after{-1};
  std::atomic<int> breaks{1};
  std::atomic<int> range_calls{0};
  std::atomic<int> sum_calls{0};
  std::atomic<int> cancelled{0};

  grpc::Status Range(grpc::ServerContext* context, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    const int call = ++range_calls;
    if (call <= fail_open_first ||
        (fail_open_from > 0 && call >= fail_open_from)) {
      return grpc::Status(fail_open_code, "cannot open");
    }
    for (int i = 0; i < request->count(); ++i) {
      if (i == break_after && breaks_done_.fetch_add(1) < breaks) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream broke");
      }
      if (context->IsCancelled()) {
        ++cancelled;
        return grpc::Status::CANCELLED;
      }
      Item item;
      item.set_value(request->start() + i);
      if (!writer->Write(item)) break;
      std::this_thread::sleep_for(milliseconds(item_delay_ms.load()));
    }
    if (context->IsCancelled()) ++cancelled;
    return grpc::Status::OK;
  }

  grpc::Status Sum(grpc::ServerContext* context,
                   grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    ++sum_calls;
    Item item;
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    if (context->IsCancelled()) ++cancelled;
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext*, const RangeRequest* request,
                   Item* response) override {
    response->set_value(request->start());
    return grpc::Status::OK;
  }

 private:
  std::atomic<int> breaks_done_{0};
};

class StreamPromisesTest : public ::testing::Test {
 protected:
  StreamPromisesTest() : server_(&service_) {}

  Options ClientOptions() const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<AsyncSleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                      .WithInitialDelay(seconds(1))
                                      .WithMaximumDelay(seconds(10))
                                      .WithMultiplier(2.0)
                                      .WithJitter(Jitter::None()));
  }

  static RangeRequest Range(int start, int count) {
    RangeRequest request;
    request.set_start(start);
    request.set_count(count);
    return request;
  }

  static bool ResumeAfter(std::atomic<int>* calls, const Item& last,
                          RangeRequest& request) {
    ++*calls;
    const int end = request.start() + request.count();
    request.set_start(last.value() + 1);
    request.set_count(end - request.start());
    return true;
  }

  struct AsyncResult {
    std::vector<int> items;
    absl::Status status;
  };
  static AsyncResult ReadAllAsync(StreamServiceClient& client,
                                  const RangeRequest& request,
                                  const Options& call = {}) {
    auto items = std::make_shared<std::vector<int>>();
    // Shared: on_done may still be inside set_value() when get() returns.
    auto done = std::make_shared<std::promise<absl::Status>>();
    client.AsyncRange(
        request, [items](const Item& item) { items->push_back(item.value()); },
        [done](absl::Status status) { done->set_value(std::move(status)); },
        call);
    AsyncResult result;
    result.status = done->get_future().get();
    result.items = *items;
    return result;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  StreamPromisesService service_;
  TestServer server_;
};

TEST_F(StreamPromisesTest, StreamReaderCancelEndsTheStream) {
  ASSERT_TRUE(server_.ok());
  service_.item_delay_ms = 20;  // 1000 items: 20 s if nobody cancels
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader = client.Range(Range(0, 1000));
  Item item;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader.Read(&item));
  const auto cancelled_at = std::chrono::steady_clock::now();
  reader.Cancel();
  int more = 0;
  while (reader.Read(&item)) ++more;
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_LT(more, 10) << "items kept arriving after Cancel()";
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, seconds(5));
  EXPECT_EQ(service_.range_calls.load(), 1) << "a cancelled stream reopened";
  WaitFor([&] { return service_.cancelled.load() == 1; });
  EXPECT_EQ(service_.cancelled.load(), 1);
}

TEST_F(StreamPromisesTest, StreamWriterCancelEndsTheStream) {
  ASSERT_TRUE(server_.ok());
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamWriter<Item, SumResponse> writer = client.Sum();
  Item item;
  item.set_value(1);
  ASSERT_TRUE(writer.Write(item));
  writer.Cancel();
  absl::StatusOr<SumResponse> result = writer.Finish();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
  WaitFor([&] { return service_.cancelled.load() == 1; });
  EXPECT_EQ(service_.cancelled.load(), 1);
  EXPECT_EQ(service_.sum_calls.load(), 1);
}

TEST_F(StreamPromisesTest, CancellationOptionCancelsASyncStreamMidRead) {
  ASSERT_TRUE(server_.ok());
  service_.item_delay_ms = 20;
  auto token = std::make_shared<CancellationToken>();
  StreamServiceClient client(server_.Channel(), ClientOptions());
  StreamReader<Item> reader =
      client.Range(Range(0, 1000), Options{}.set<CancellationOption>(token));
  Item item;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader.Read(&item));
  token->Cancel();
  int more = 0;
  while (reader.Read(&item)) ++more;
  EXPECT_LT(more, 10);
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.range_calls.load(), 1);
}

TEST_F(StreamPromisesTest, CancellationOptionEndsASyncStreamsReopenWait) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 100;
  auto token = std::make_shared<CancellationToken>();
  // The real clock, with a 10-minute backoff: the wait is what is cancelled.
  StreamServiceClient client(
      server_.Channel(),
      Options{}.set<CancellationOption>(token).set<BackoffPolicyOption>(
          ExponentialBackoffPolicy()
              .WithInitialDelay(minutes(10))
              .WithMaximumDelay(minutes(10))
              .WithMultiplier(1.0)
              .WithJitter(Jitter::None())));
  std::thread canceller([&] {
    WaitFor([&] { return service_.range_calls.load() >= 1; });
    std::this_thread::sleep_for(milliseconds(20));
    token->Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  StreamReader<Item> reader = client.Range(Range(0, 3));
  Item item;
  EXPECT_FALSE(reader.Read(&item));
  absl::Status status = reader.Finish();
  canceller.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  // Far sooner than the 10-minute wait it cancelled.
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_EQ(service_.range_calls.load(), 1);
}

TEST_F(StreamPromisesTest, EachResumptionWaitsItsBackoff) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 2;
  service_.breaks = 2;
  std::atomic<int> hook_calls{0};
  WaitLog log;
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<RetryObserverOption>(log.Observer())
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  const auto start = clock_->Now();
  StreamReader<Item> reader = client.Range(Range(0, 8));
  std::vector<int> items;
  Item item;
  while (reader.Read(&item)) items.push_back(item.value());
  ASSERT_TRUE(reader.Finish().ok());
  EXPECT_THAT(items, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(hook_calls.load(), 2);
  // Each of the two resumptions waited a backoff (1 s, then 1 s or 2 s
  // depending on whether the delivered items restarted the backoff), and
  // the fake clock moved by exactly those waits.
  std::vector<nanoseconds> waits = log.waits();
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0], seconds(1));
  EXPECT_TRUE(waits[1] == seconds(1) || waits[1] == seconds(2))
      << waits[1].count();
  EXPECT_THAT(log.reasons(),
              ElementsAre(WaitReason::kBackoff, WaitReason::kBackoff));
  EXPECT_EQ(clock_->Now() - start, waits[0] + waits[1]);
}

TEST_F(StreamPromisesTest, AsyncResumptionsConsumeTheRetryPolicy) {
  ASSERT_TRUE(server_.ok());
  // The first stream delivers 0, 1, 2 and breaks; every reopening fails
  // before delivering anything.
  service_.break_after = 3;
  service_.fail_open_from = 2;
  std::atomic<int> hook_calls{0};
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions()
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2))
          .set<StreamServiceClient::RangeResumeOption>(
              [&hook_calls](const Item& last, RangeRequest& request) {
                return ResumeAfter(&hook_calls, last, request);
              }));
  AsyncResult result = ReadAllAsync(client, Range(0, 10));
  EXPECT_THAT(result.items, ElementsAre(0, 1, 2));
  EXPECT_EQ(result.status.code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(GetRetrySummary(result.status).has_value()) << result.status;
  EXPECT_EQ(GetRetrySummary(result.status)->stop_reason,
            StopReason::kExhausted);
  // The resumption and one reopening were the 2 retries allowed.
  EXPECT_EQ(hook_calls.load(), 1);
  EXPECT_EQ(service_.range_calls.load(), 3);
}

TEST_F(StreamPromisesTest, AsyncHookThatDeclinesReportsTheBreak) {
  ASSERT_TRUE(server_.ok());
  service_.break_after = 2;
  std::atomic<int> hook_calls{0};
  StreamServiceClient client(
      server_.Channel(),
      ClientOptions().set<StreamServiceClient::RangeResumeOption>(
          [&hook_calls](const Item&, RangeRequest&) {
            ++hook_calls;
            return false;
          }));
  AsyncResult result = ReadAllAsync(client, Range(0, 10));
  EXPECT_THAT(result.items, ElementsAre(0, 1));
  EXPECT_EQ(result.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(hook_calls.load(), 1);
  EXPECT_EQ(service_.range_calls.load(), 1);
}

TEST_F(StreamPromisesTest, AsyncNonRetryableOpenFailsAtOnce) {
  ASSERT_TRUE(server_.ok());
  service_.fail_open_first = 1;
  service_.fail_open_code = grpc::StatusCode::PERMISSION_DENIED;
  StreamServiceClient client(server_.Channel(), ClientOptions());
  AsyncResult result = ReadAllAsync(client, Range(0, 5));
  EXPECT_THAT(result.items, ElementsAre());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kPermissionDenied);
  ASSERT_TRUE(GetRetrySummary(result.status).has_value()) << result.status;
  EXPECT_EQ(GetRetrySummary(result.status)->stop_reason,
            StopReason::kPermanentError);
  EXPECT_EQ(service_.range_calls.load(), 1);
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// A generated client over a real channel while its server on 127.0.0.1
// stops and comes back on the same port (issue 30 item 2; streams of every
// kind, sync and async: issue 40): the wait after the connection failure
// ends when the channel is ready again, long before its backoff would; and
// the once-per-connection warning about a channel whose service config
// turns gRPC's own retries on (issue 23).
//
// Nothing here asserts a duration: the backoff is 30 s, so a wait that did
// not end early would show as attempts and observer events (and a slow
// test), not as a timing threshold.

#include <gmock/gmock.h>
#include <grpc/support/log.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stubkit/cancellation.h"
#include "stubkit/channel.h"
#include "stubkit/logging.h"
#include "stubkit/retry_observer.h"
#include "stubkit/testing/echo.stubkit.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::Request;

using ::stubkit::testing::RestartableServer;

// Records the observer's events; lets the test wait for the n-th.
class Events {
 public:
  RetryObserverOption::Type Observer() {
    return [this](const AttemptEvent& event) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(Event{event.attempt, event.status.code(), event.final,
                              event.wait_reason, event.started_on_reconnect});
      cv_.notify_all();
    };
  }
  struct Event {
    int attempt;
    absl::StatusCode code;
    bool final;
    WaitReason wait_reason;
    bool started_on_reconnect;
  };
  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return events_.size() >= n; });
  }
  std::vector<Event> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> events_;
};

class CapturingSink : public LogSink {
 public:
  void Write(absl::string_view line) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
  }
  int Count(absl::string_view needle) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& line : lines_) {
      if (absl::string_view(line).find(needle) != absl::string_view::npos) {
        ++n;
      }
    }
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

class ReconnectTest : public ::testing::Test {
 protected:
  Options ClientOptions() {
    // A long backoff without jitter: the wait after the failure would last
    // 30 s. The default sleepers, as a client without test hooks has.
    return Options{}
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::seconds(30))
                .WithMaximumDelay(std::chrono::seconds(30))
                .WithMultiplier(2.0)
                .WithJitter(Jitter::None()))
        .set<RetryObserverOption>(events_.Observer());
  }

  // Stops the server, starts `call` (which must fail its first attempt on
  // the dead connection), waits for that failure, and brings the server
  // back on the same port.
  void RestartAround(const std::function<void()>& call) {
    server_.Stop();
    call();
    events_.WaitFor(1);
    ASSERT_TRUE(server_.Restart());
  }

  // The observer's events of a call that followed the server back.
  void ExpectEventsFollowedTheServerBack() {
    const std::vector<Events::Event> events = events_.events();
    ASSERT_EQ(events.size(), 2u);
    // Attempt 1 failed on the dead connection and chose a 30 s backoff...
    EXPECT_EQ(events[0].attempt, 1);
    EXPECT_EQ(events[0].code, absl::StatusCode::kUnavailable);
    EXPECT_FALSE(events[0].final);
    EXPECT_EQ(events[0].wait_reason, WaitReason::kBackoff);
    // ...which ended when the channel was ready again: attempt 2 succeeded.
    EXPECT_EQ(events[1].attempt, 2);
    EXPECT_EQ(events[1].code, absl::StatusCode::kOk);
    EXPECT_TRUE(events[1].final);
    EXPECT_TRUE(events[1].started_on_reconnect);
  }

  void ExpectFollowedTheServerBack() {
    ExpectEventsFollowedTheServerBack();
    // The restarted server saw one attempt; the failed one never reached it.
    EXPECT_EQ(service_.attempts("after"), 1);
  }

  FlakyEchoService service_;
  RestartableServer server_{&service_};
  Events events_;
};

TEST_F(ReconnectTest, SyncCallStartsWhenTheChannelIsReadyAgain) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials()),
      ClientOptions());
  // Connected first, so that the restart breaks an established connection.
  ASSERT_TRUE(
      client.Echo(Request("before"), Options{}.set<RetryObserverOption>({}))
          .ok());

  std::future<absl::StatusOr<EchoResponse>> result;
  RestartAround([&] {
    result = std::async(std::launch::async,
                        [&] { return client.Echo(Request("after")); });
  });

  absl::StatusOr<EchoResponse> response = result.get();
  ASSERT_TRUE(response.ok()) << response.status();
  ExpectFollowedTheServerBack();
}

TEST_F(ReconnectTest, AsyncCallStartsWhenTheChannelIsReadyAgain) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials()),
      ClientOptions());
  ASSERT_TRUE(
      client.Echo(Request("before"), Options{}.set<RetryObserverOption>({}))
          .ok());

  std::promise<absl::StatusOr<EchoResponse>> done;
  RestartAround([&] {
    client.AsyncEcho(Request("after"), [&](absl::StatusOr<EchoResponse> r) {
      done.set_value(std::move(r));
    });
  });

  absl::StatusOr<EchoResponse> response = done.get_future().get();
  ASSERT_TRUE(response.ok()) << response.status();
  ExpectFollowedTheServerBack();
}

TEST_F(ReconnectTest, FollowReconnectOptionFalseWaitsOutTheBackoff) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials()),
      ClientOptions()
          .set<FollowReconnectOption>(false)
          // Short, so that the test does not wait 30 s.
          .set<BackoffPolicyOption>(
              ExponentialBackoffPolicy()
                  .WithInitialDelay(std::chrono::milliseconds(500))
                  .WithMaximumDelay(std::chrono::milliseconds(500))
                  .WithMultiplier(2.0)
                  .WithJitter(Jitter::None())));
  ASSERT_TRUE(
      client.Echo(Request("before"), Options{}.set<RetryObserverOption>({}))
          .ok());

  std::future<absl::StatusOr<EchoResponse>> result;
  RestartAround([&] {
    result = std::async(std::launch::async,
                        [&] { return client.Echo(Request("after")); });
  });

  ASSERT_TRUE(result.get().ok());
  const std::vector<Events::Event> events = events_.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_TRUE(events.back().final);
  for (const Events::Event& event : events) {
    EXPECT_FALSE(event.started_on_reconnect);
  }
}

TEST_F(ReconnectTest, ACancelEndsTheWaitWhileTheServerIsDown) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials()),
      ClientOptions());
  server_.Stop();
  auto token = std::make_shared<CancellationToken>();
  std::future<absl::StatusOr<EchoResponse>> result =
      std::async(std::launch::async, [&] {
        return client.Echo(Request("after"),
                           Options{}.set<CancellationOption>(token));
      });
  events_.WaitFor(1);
  token->Cancel();
  absl::StatusOr<EchoResponse> response = result.get();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  const auto events = events_.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[1].started_on_reconnect);
}

// Streams follow the channel back as unary calls do (issue 40: a server
// stream used to wait out its backoff, reopening 7.2 s after the server was
// back). Each kind, sync and async, is opened while the server is down;
// its first attempt fails on the dead connection and chooses a 30 s
// backoff, which must end when the server is back.
class RangeService final : public testing::StreamService::Service {
 public:
  grpc::Status Range(grpc::ServerContext*, const testing::RangeRequest* request,
                     grpc::ServerWriter<testing::Item>* writer) override {
    ++calls_;
    for (int i = 0; i < request->count(); ++i) {
      testing::Item item;
      item.set_value(request->start() + i);
      writer->Write(item);
    }
    return grpc::Status::OK;
  }
  grpc::Status Sum(grpc::ServerContext*,
                   grpc::ServerReader<testing::Item>* reader,
                   testing::SumResponse* response) override {
    ++calls_;
    testing::Item item;
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    return grpc::Status::OK;
  }
  grpc::Status Double(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<testing::Item, testing::Item>* stream) override {
    ++calls_;
    testing::Item item;
    while (stream->Read(&item)) {
      item.set_value(item.value() * 2);
      stream->Write(item);
    }
    return grpc::Status::OK;
  }
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
};

class StreamReconnectTest : public ReconnectTest {
 protected:
  StreamReconnectTest() {
    client_ = std::make_unique<testing::StreamServiceClient>(
        stubkit::CreateChannel(streams_server_.address(),
                               grpc::InsecureChannelCredentials()),
        ClientOptions().set<IdempotencyOption>(Idempotency::kIdempotent));
  }

  // Connects first (so that the stop breaks an established connection),
  // stops the server, runs `call` on a thread of its own, and restarts the
  // server once the first attempt failed.
  template <typename Result>
  Result RestartAround(std::function<Result()> call) {
    EXPECT_TRUE(streams_server_.ok());
    testing::RangeRequest warm;
    warm.set_count(1);
    auto reader = client_->Range(warm, Options{}.set<RetryObserverOption>({}));
    testing::Item item;
    while (reader.Read(&item)) {
    }
    EXPECT_TRUE(reader.Finish().ok());
    const int before = streams_.calls();
    streams_server_.Stop();
    std::future<Result> result = std::async(std::launch::async, call);
    events_.WaitFor(1);
    EXPECT_TRUE(streams_server_.Restart());
    Result out = result.get();
    // The restarted server saw one attempt; the failed one never reached it.
    EXPECT_EQ(streams_.calls() - before, 1);
    return out;
  }

  static testing::Item MakeItem(int value) {
    testing::Item item;
    item.set_value(value);
    return item;
  }

  RangeService streams_;
  RestartableServer streams_server_{&streams_};
  std::unique_ptr<testing::StreamServiceClient> client_;
};

TEST_F(StreamReconnectTest, SyncServerStream) {
  const std::vector<int> values = RestartAround<std::vector<int>>([this] {
    testing::RangeRequest request;
    request.set_start(10);
    request.set_count(3);
    auto reader = client_->Range(request);
    std::vector<int> out;
    testing::Item item;
    while (reader.Read(&item)) out.push_back(item.value());
    if (!reader.Finish().ok()) out.push_back(-1);
    return out;
  });
  EXPECT_THAT(values, ::testing::ElementsAre(10, 11, 12));
  ExpectEventsFollowedTheServerBack();
}

TEST_F(StreamReconnectTest, AsyncServerStream) {
  const std::vector<int> values = RestartAround<std::vector<int>>([this] {
    testing::RangeRequest request;
    request.set_start(10);
    request.set_count(3);
    std::vector<int> out;
    std::promise<absl::Status> done;
    client_->AsyncRange(
        request,
        [&](const testing::Item& item) { out.push_back(item.value()); },
        [&](absl::Status status) { done.set_value(std::move(status)); });
    if (!done.get_future().get().ok()) out.push_back(-1);
    return out;
  });
  EXPECT_THAT(values, ::testing::ElementsAre(10, 11, 12));
  ExpectEventsFollowedTheServerBack();
}

TEST_F(StreamReconnectTest, SyncClientStream) {
  const absl::StatusOr<testing::SumResponse> sum =
      RestartAround<absl::StatusOr<testing::SumResponse>>([this] {
        auto writer = client_->Sum();
        for (int i = 1; i <= 3; ++i) writer.Write(MakeItem(i));
        writer.WritesDone();
        return writer.Finish();
      });
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->sum(), 6);
  EXPECT_EQ(sum->count(), 3);
  ExpectEventsFollowedTheServerBack();
}

TEST_F(StreamReconnectTest, AsyncClientStream) {
  const absl::StatusOr<testing::SumResponse> sum =
      RestartAround<absl::StatusOr<testing::SumResponse>>([this] {
        std::promise<absl::StatusOr<testing::SumResponse>> done;
        auto writer =
            client_->AsyncSum([&](absl::StatusOr<testing::SumResponse> r) {
              done.set_value(std::move(r));
            });
        for (int i = 1; i <= 3; ++i) writer.Write(MakeItem(i));
        writer.WritesDone();
        return done.get_future().get();
      });
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->sum(), 6);
  EXPECT_EQ(sum->count(), 3);
  ExpectEventsFollowedTheServerBack();
}

TEST_F(StreamReconnectTest, SyncBidiStream) {
  const std::vector<int> values = RestartAround<std::vector<int>>([this] {
    auto stream = client_->Double();
    std::vector<int> out;
    for (int i = 1; i <= 3; ++i) {
      testing::Item item;
      if (!stream.Write(MakeItem(i)) || !stream.Read(&item)) break;
      out.push_back(item.value());
    }
    stream.WritesDone();
    if (!stream.Finish().ok()) out.push_back(-1);
    return out;
  });
  EXPECT_THAT(values, ::testing::ElementsAre(2, 4, 6));
  ExpectEventsFollowedTheServerBack();
}

TEST_F(StreamReconnectTest, AsyncBidiStream) {
  const std::vector<int> values = RestartAround<std::vector<int>>([this] {
    std::mutex mu;
    std::vector<int> out;
    std::promise<absl::Status> done;
    auto writer = client_->AsyncDouble(
        [&](const testing::Item& item) {
          std::lock_guard<std::mutex> lock(mu);
          out.push_back(item.value());
        },
        [&](absl::Status status) { done.set_value(std::move(status)); });
    for (int i = 1; i <= 3; ++i) writer.Write(MakeItem(i));
    writer.WritesDone();
    const absl::Status status = done.get_future().get();
    std::lock_guard<std::mutex> lock(mu);
    if (!status.ok()) out.push_back(-1);
    return out;
  });
  EXPECT_THAT(values, ::testing::ElementsAre(2, 4, 6));
  ExpectEventsFollowedTheServerBack();
}

// A cancel ends a stream's channel-following wait at once, while the
// server is still down (as ACancelEndsTheWaitWhileTheServerIsDown for a
// unary call): sync through the token, async through the handle.
TEST_F(StreamReconnectTest, ACancelEndsASyncStreamsWaitWhileTheServerIsDown) {
  ASSERT_TRUE(streams_server_.ok());
  streams_server_.Stop();
  auto token = std::make_shared<CancellationToken>();
  std::future<absl::Status> result = std::async(std::launch::async, [&] {
    testing::RangeRequest request;
    request.set_count(3);
    auto reader =
        client_->Range(request, Options{}.set<CancellationOption>(token));
    testing::Item item;
    while (reader.Read(&item)) {
    }
    return reader.Finish();
  });
  events_.WaitFor(1);  // attempt 1 failed: the 30 s wait follows the channel
  token->Cancel();
  EXPECT_EQ(result.get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(streams_.calls(), 0);
}

TEST_F(StreamReconnectTest, ACancelEndsAnAsyncStreamsWaitWhileTheServerIsDown) {
  ASSERT_TRUE(streams_server_.ok());
  streams_server_.Stop();
  std::promise<absl::Status> done;
  auto writer = client_->AsyncDouble(
      [](const testing::Item&) {},
      [&](absl::Status status) { done.set_value(std::move(status)); });
  writer.Write(MakeItem(1));
  events_.WaitFor(1);
  writer.Cancel();
  EXPECT_EQ(done.get_future().get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(streams_.calls(), 0);
}

// Issue 23: gRPC's own retries under stubkit's multiply the attempts.
constexpr char kRetryingServiceConfig[] = R"json({
  "methodConfig": [{
    "name": [{"service": "stubkit.testing.EchoService"}],
    "retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": "0.1s",
      "maxBackoff": "1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json";

constexpr char kWarning[] = "turns on gRPC's own retries";

grpc::ChannelArguments RetryingArgs() {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(kRetryingServiceConfig);
  return args;
}

TEST_F(ReconnectTest, WarnsOnceAboutAChannelWithGrpcRetries) {
  ASSERT_TRUE(server_.ok());
  auto sink = std::make_shared<CapturingSink>();
  EchoServiceClient client(
      grpc::CreateCustomChannel(server_.address(),
                                grpc::InsecureChannelCredentials(),
                                RetryingArgs()),
      Options{}.set<LogSinkOption>(sink));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Echo(Request("call" + std::to_string(i))).ok());
  }
  std::promise<void> done;
  client.AsyncEcho(Request("async"),
                   [&](absl::StatusOr<EchoResponse>) { done.set_value(); });
  done.get_future().get();
  EXPECT_EQ(sink->Count(kWarning), 1);
  EXPECT_EQ(sink->Count("stubkit.testing.EchoService.Echo"), 1);
}

TEST_F(ReconnectTest, NoWarningForAStubkitChannel) {
  ASSERT_TRUE(server_.ok());
  auto sink = std::make_shared<CapturingSink>();
  // The same service config: gRPC ignores its retryPolicy, retries are off.
  EchoServiceClient client(
      stubkit::CreateChannel(server_.address(),
                             grpc::InsecureChannelCredentials(),
                             RetryingArgs()),
      Options{}.set<LogSinkOption>(sink));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Echo(Request("call" + std::to_string(i))).ok());
  }
  EXPECT_EQ(sink->Count(kWarning), 0);
}

TEST_F(ReconnectTest, NoWarningForAChannelWithoutARetryPolicy) {
  ASSERT_TRUE(server_.ok());
  auto sink = std::make_shared<CapturingSink>();
  EchoServiceClient client(
      grpc::CreateChannel(server_.address(),
                          grpc::InsecureChannelCredentials()),
      Options{}.set<LogSinkOption>(sink));
  ASSERT_TRUE(client.Echo(Request("call")).ok());
  EXPECT_EQ(sink->Count(kWarning), 0);
}

// gRPC's log lines that say a channel is not a client channel: gRPC writes
// one each time such a channel (an in-process one) is asked its state.
std::atomic<int> not_a_client_channel_lines{0};

void CountNotAClientChannel(gpr_log_func_args* args) {
  if (absl::string_view(args->message).find("not a client channel") !=
      absl::string_view::npos) {
    ++not_a_client_channel_lines;
  }
  std::fprintf(stderr, "gRPC: %s\n", args->message);
}

// A client over an in-process channel has no connection to follow: it is
// asked its kind once, when the client is built, and no call asks again
// (each did, through ChannelFollow, which cost about 7,000 instructions a
// call and a gRPC error line each time).
TEST(InProcessChannelTest, IsAskedItsKindOnceNotOnEveryCall) {
  FlakyEchoService service;
  RangeService streams;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  builder.RegisterService(&streams);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  gpr_set_log_function(CountNotAClientChannel);
  {
    std::shared_ptr<grpc::Channel> channel =
        server->InProcessChannel(grpc::ChannelArguments());
    const Options options =
        Options{}
            .set<BackoffPolicyOption>(
                ExponentialBackoffPolicy()
                    .WithInitialDelay(std::chrono::milliseconds(1))
                    .WithMaximumDelay(std::chrono::milliseconds(1))
                    .WithJitter(Jitter::None()))
            .set<IdempotencyOption>(Idempotency::kIdempotent);
    EchoServiceClient client(channel, options);
    testing::StreamServiceClient stream_client(channel, options);
    EXPECT_LE(not_a_client_channel_lines.load(), 2);  // once per client
    const int built = not_a_client_channel_lines.load();
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(client.Echo(Request("sync" + std::to_string(i))).ok());
    }
    // Two UNAVAILABLE attempts, each followed by a backoff wait.
    EXPECT_TRUE(client.Echo(Request("retried", 2)).ok());
    EXPECT_EQ(service.attempts("retried"), 3);
    std::promise<bool> done;
    client.AsyncEcho(Request("async", 1), [&](absl::StatusOr<EchoResponse> r) {
      done.set_value(r.ok());
    });
    EXPECT_TRUE(done.get_future().get());
    testing::RangeRequest range;
    range.set_count(3);
    auto reader = stream_client.Range(range);
    testing::Item item;
    int items = 0;
    while (reader.Read(&item)) ++items;
    EXPECT_TRUE(reader.Finish().ok());
    EXPECT_EQ(items, 3);
    EXPECT_EQ(not_a_client_channel_lines.load(), built);
  }
  // Left installed: gRPC 1.51 declares no default to restore, and this one
  // still prints every line.
  server->Shutdown();
}

}  // namespace
}  // namespace stubkit

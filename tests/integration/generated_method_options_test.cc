// Copyright 2026 The stubkit Authors.
//
// Per-method options (MethodOptionsOption), request-aware idempotency
// (IdempotentIf), AttemptEvent's received metadata and the response
// metadata of client and bidi streams, through generated clients against a
// real server on 127.0.0.1.

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "stubkit/call_options.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/method_options.h"
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
using ::stubkit::testing::Item;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;
using ::stubkit::testing::TestServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kEcho[] = "stubkit.testing.EchoService";
constexpr char kStreams[] = "stubkit.testing.StreamService";

// Sends initial and trailing metadata on every call; fails the first
// `fail_get` Gets and the first `fail_range` Ranges with UNAVAILABLE.
class MetadataStreamService final : public StreamService::Service {
 public:
  grpc::Status Get(grpc::ServerContext* context, const RangeRequest* request,
                   Item* response) override {
    const int attempt = ++get_attempts;
    context->AddInitialMetadata("x-initial", "get");
    context->AddTrailingMetadata("x-attempt", std::to_string(attempt));
    if (fail_get.fetch_sub(1) > 0) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected");
    }
    response->set_value(request->start());
    return grpc::Status::OK;
  }
  grpc::Status Range(grpc::ServerContext* /*context*/,
                     const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    ++range_attempts;
    if (fail_range.fetch_sub(1) > 0) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected");
    }
    for (int i = 0; i < request->count(); ++i) {
      Item item;
      item.set_value(request->start() + i);
      writer->Write(item);
    }
    return grpc::Status::OK;
  }
  grpc::Status Sum(grpc::ServerContext* context,
                   grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    ++stream_calls;
    context->AddInitialMetadata("x-initial", "sum");
    Item item;
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    context->AddTrailingMetadata("x-trailing",
                                 "sum-" + std::to_string(response->count()));
    return grpc::Status::OK;
  }
  grpc::Status Double(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    ++stream_calls;
    context->AddInitialMetadata("x-initial", "double");
    Item item;
    while (stream->Read(&item)) {
      item.set_value(item.value() * 2);
      stream->Write(item);
    }
    context->AddTrailingMetadata("x-trailing", "double");
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "bidi ends");
  }

  std::atomic<int> get_attempts{0};
  std::atomic<int> range_attempts{0};
  std::atomic<int> stream_calls{0};
  std::atomic<int> fail_get{0};
  std::atomic<int> fail_range{0};
};

class GeneratedMethodOptionsTest : public ::testing::Test {
 protected:
  GeneratedMethodOptionsTest()
      : echo_server_(&echo_service_), stream_server_(&stream_service_) {}

  // Fast, deterministic retries: the fake clock absorbs every wait.
  Options Base() const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<AsyncSleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::milliseconds(100))
                .WithMaximumDelay(std::chrono::seconds(1))
                .WithMultiplier(2.0)
                .WithJitter(Jitter::None()));
  }

  static Options Tag(const std::string& layer) {
    return Options{}.set<MetadataOption>({{"x-layer", layer}});
  }

  static EchoRequest Request(const std::string& message, int fail_first = 0) {
    EchoRequest request;
    request.set_message(message);
    request.set_fail_first(fail_first);
    return request;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FlakyEchoService echo_service_;
  MetadataStreamService stream_service_;
  TestServer echo_server_;
  TestServer stream_server_;
};

// ---- per-method options ---------------------------------------------------

TEST_F(GeneratedMethodOptionsTest, CallBeatsMethodBeatsServiceBeatsClient) {
  ASSERT_TRUE(echo_server_.ok());
  EchoServiceClient client(
      echo_server_.Channel(),
      Base()
          .set<MetadataOption>({{"x-layer", "client"}})
          .set<MethodOptionsOption>({
              {kEcho, Tag("service")},
              {std::string(kEcho) + ".Echo", Tag("method")},
          }));
  EchoServiceClient plain(echo_server_.Channel(),
                          Base().set<MetadataOption>({{"x-layer", "client"}}));

  ASSERT_TRUE(client.Echo(Request("m")).ok());
  ASSERT_TRUE(client.Append(Request("s")).ok());
  ASSERT_TRUE(client.Echo(Request("c"), Tag("call")).ok());
  ASSERT_TRUE(plain.Echo(Request("p")).ok());
  ASSERT_TRUE(client.AsyncEcho(Request("am")).get().ok());
  ASSERT_TRUE(client.AsyncAppend(Request("as")).get().ok());

  EXPECT_THAT(echo_service_.headers("m", "x-layer"), ElementsAre("method"));
  EXPECT_THAT(echo_service_.headers("s", "x-layer"), ElementsAre("service"));
  EXPECT_THAT(echo_service_.headers("c", "x-layer"), ElementsAre("call"));
  EXPECT_THAT(echo_service_.headers("p", "x-layer"), ElementsAre("client"));
  EXPECT_THAT(echo_service_.headers("am", "x-layer"), ElementsAre("method"));
  EXPECT_THAT(echo_service_.headers("as", "x-layer"), ElementsAre("service"));
}

TEST_F(GeneratedMethodOptionsTest, MethodLayerDecidesRetries) {
  ASSERT_TRUE(echo_server_.ok());
  // The client allows 5 retries; the service 1; Echo 3. Append is not
  // idempotent by its proto; its entry makes it so.
  EchoServiceClient client(
      echo_server_.Channel(),
      Base().set<MethodOptionsOption>({
          {kEcho,
           Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1))},
          {std::string(kEcho) + ".Echo",
           Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))},
          {std::string(kEcho) + ".Append",
           Options{}.set<IdempotencyOption>(Idempotency::kIdempotent)},
      }));

  auto echo = client.Echo(Request("echo", 3));
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(echo_service_.attempts("echo"), 4);

  auto append = client.Append(Request("append", 3));
  EXPECT_EQ(append.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(echo_service_.attempts("append"), 2);  // the service's 1 retry

  // The call's own policy beats the method's.
  auto call = client.Echo(
      Request("call", 3),
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_EQ(call.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(echo_service_.attempts("call"), 1);
}

TEST_F(GeneratedMethodOptionsTest, AsyncCallKeepsMethodLayerAfterClientIsGone) {
  ASSERT_TRUE(echo_server_.ok());
  std::future<absl::StatusOr<EchoResponse>> future;
  {
    EchoServiceClient client(
        echo_server_.Channel(),
        Base().set<MethodOptionsOption>(
            {{std::string(kEcho) + ".Echo", Tag("method")}}));
    future = client.AsyncEcho(Request("gone", 2));
  }  // retries may run after this: they read the operation's own copy
  auto response = future.get();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(echo_service_.headers("gone", "x-layer"),
              ElementsAre("method", "method", "method"));
}

TEST_F(GeneratedMethodOptionsTest, UnknownMethodOfOwnServiceIsRefused) {
  ASSERT_TRUE(echo_server_.ok());
  const std::string typo = std::string(kEcho) + ".Ehco";
  EchoServiceClient client(
      echo_server_.Channel(),
      Base().set<MethodOptionsOption>({{typo, Tag("typo")}}));

  auto sync = client.Echo(Request("refused"));
  EXPECT_EQ(sync.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sync.status().message()), HasSubstr(typo));
  auto async = client.AsyncAppend(Request("refused")).get();
  EXPECT_EQ(async.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(async.status().message()), HasSubstr(typo));
  EXPECT_EQ(echo_service_.total_attempts(), 0);

  // The same options serve a client of another service: not its business.
  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient streams(
      stream_server_.Channel(),
      Base().set<MethodOptionsOption>({{typo, Tag("typo")}}));
  RangeRequest get;
  get.set_start(7);
  auto item = streams.Get(get);
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ(item->value(), 7);
}

TEST_F(GeneratedMethodOptionsTest, OtherServicesKeysAreIgnored) {
  ASSERT_TRUE(echo_server_.ok());
  EchoServiceClient client(
      echo_server_.Channel(),
      Base().set<MethodOptionsOption>({
          {std::string(kStreams) + ".Nope", Tag("other")},
          {std::string(kEcho) + "Extra.Echo", Tag("prefix")},  // not ours
          {"", Tag("empty")},
      }));
  ASSERT_TRUE(client.Echo(Request("ok")).ok());
  EXPECT_THAT(echo_service_.headers("ok", "x-layer"), ElementsAre("-"));
}

TEST_F(GeneratedMethodOptionsTest, NestedMethodOptionsAreRefused) {
  ASSERT_TRUE(stream_server_.ok());
  const std::string key = std::string(kStreams) + ".Sum";
  StreamServiceClient client(
      stream_server_.Channel(),
      Base().set<MethodOptionsOption>(
          {{key, Options{}.set<MethodOptionsOption>(
                     {{std::string(kStreams) + ".Get", Tag("nested")}})}}));

  auto writer = client.Sum();
  auto sum = writer.Finish();
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sum.status().message()), HasSubstr("nest"));
  EXPECT_THAT(std::string(sum.status().message()), HasSubstr(key));
  RangeRequest get;
  EXPECT_EQ(client.Get(get).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(stream_service_.stream_calls.load(), 0);
  EXPECT_EQ(stream_service_.get_attempts.load(), 0);
}

// ---- request-aware idempotency ---------------------------------------------

Options SafePrefixIsIdempotent() {
  return Options{}.set<MethodOptionsOption>({
      {"stubkit.testing.EchoService.Append",
       Options{}.set<IdempotencyPredicateOption>(
           IdempotentIf<EchoRequest>([](const EchoRequest& request) {
             return absl::StartsWith(request.message(), "safe");
           }))},
  });
}

TEST_F(GeneratedMethodOptionsTest, PredicateDecidesEachCall) {
  ASSERT_TRUE(echo_server_.ok());
  // Append is not idempotent by its proto.
  EchoServiceClient client(echo_server_.Channel(),
                           Base().MergedWith(SafePrefixIsIdempotent()));

  EXPECT_TRUE(client.Append(Request("safe-sync", 1)).ok());
  EXPECT_EQ(echo_service_.attempts("safe-sync"), 2);
  EXPECT_EQ(client.Append(Request("unsafe-sync", 1)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(echo_service_.attempts("unsafe-sync"), 1);

  EXPECT_TRUE(client.AsyncAppend(Request("safe-async", 1)).get().ok());
  EXPECT_EQ(echo_service_.attempts("safe-async"), 2);
  EXPECT_EQ(
      client.AsyncAppend(Request("unsafe-async", 1)).get().status().code(),
      absl::StatusCode::kUnavailable);
  EXPECT_EQ(echo_service_.attempts("unsafe-async"), 1);

  // The call's own IdempotencyOption wins, both ways.
  EXPECT_EQ(
      client
          .Append(Request("safe-forced", 1),
                  Options{}.set<IdempotencyOption>(Idempotency::kNonIdempotent))
          .status()
          .code(),
      absl::StatusCode::kUnavailable);
  EXPECT_EQ(echo_service_.attempts("safe-forced"), 1);
  EXPECT_TRUE(
      client
          .Append(Request("unsafe-forced", 1),
                  Options{}.set<IdempotencyOption>(Idempotency::kIdempotent))
          .ok());
  EXPECT_EQ(echo_service_.attempts("unsafe-forced"), 2);
}

TEST_F(GeneratedMethodOptionsTest, PredicateDecidesHedging) {
  ASSERT_TRUE(echo_server_.ok());
  // A hedged call whose first attempt fails with a non-fatal code sends the
  // next hedge at once, but only when the call is idempotent.
  EchoServiceClient client(
      echo_server_.Channel(),
      Base()
          .MergedWith(SafePrefixIsIdempotent())
          .set<HedgingPolicyOption>(
              HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
                  std::chrono::seconds(10))));
  EXPECT_TRUE(client.Append(Request("safe-hedged", 1)).ok());
  EXPECT_EQ(echo_service_.attempts("safe-hedged"), 2);
  EXPECT_FALSE(client.Append(Request("unsafe-hedged", 1)).ok());
  EXPECT_EQ(echo_service_.attempts("unsafe-hedged"), 1);
}

TEST_F(GeneratedMethodOptionsTest, PredicateDecidesServerStreamRetries) {
  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient client(
      stream_server_.Channel(),
      Base().set<MethodOptionsOption>({
          {std::string(kStreams) + ".Range",
           Options{}.set<IdempotencyPredicateOption>(
               IdempotentIf<RangeRequest>([](const RangeRequest& request) {
                 return request.start() >= 0;
               }))},
      }));
  RangeRequest request;
  request.set_start(10);
  request.set_count(2);
  stream_service_.fail_range = 1;
  auto reader = client.Range(request);
  std::vector<int> values;
  Item item;
  while (reader.Read(&item)) values.push_back(item.value());
  EXPECT_TRUE(reader.Finish().ok());
  EXPECT_THAT(values, ElementsAre(10, 11));
  EXPECT_EQ(stream_service_.range_attempts.load(), 2);

  // Range is NO_SIDE_EFFECTS in its proto; the predicate says otherwise.
  request.set_start(-1);
  stream_service_.fail_range = 1;
  auto refused = client.Range(request);
  while (refused.Read(&item)) {
  }
  EXPECT_EQ(refused.Finish().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(stream_service_.range_attempts.load(), 3);
}

TEST_F(GeneratedMethodOptionsTest, PredicateOfAnotherRequestTypeIsRefused) {
  ASSERT_TRUE(echo_server_.ok());
  std::atomic<int> ran{0};
  EchoServiceClient client(
      echo_server_.Channel(),
      Base().set<MethodOptionsOption>({
          {kEcho, Options{}.set<IdempotencyPredicateOption>(
                      IdempotentIf<RangeRequest>([&](const RangeRequest&) {
                        ++ran;
                        return true;
                      }))},
      }));
  auto sync = client.Echo(Request("mismatch"));
  EXPECT_EQ(sync.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sync.status().message()),
              HasSubstr("stubkit.testing.EchoService.Echo takes a "
                        "stubkit.testing.EchoRequest but its predicate takes "
                        "a stubkit.testing.RangeRequest"));
  auto async = client.AsyncAppend(Request("mismatch")).get();
  EXPECT_EQ(async.status().code(), absl::StatusCode::kInvalidArgument);
  // The call's own IdempotencyOption wins: the predicate is not consulted.
  EXPECT_TRUE(client
                  .Echo(Request("forced"), Options{}.set<IdempotencyOption>(
                                               Idempotency::kIdempotent))
                  .ok());
  EchoServiceClient hedged(
      echo_server_.Channel(),
      Base()
          .set<IdempotencyPredicateOption>(IdempotentIf<RangeRequest>(
              [&](const RangeRequest&) { return true; }))
          .set<HedgingPolicyOption>(
              HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
                  std::chrono::seconds(1))));
  EXPECT_EQ(hedged.Echo(Request("mismatch")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(echo_service_.attempts("mismatch"), 0);
  EXPECT_EQ(ran.load(), 0);

  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient streams(
      stream_server_.Channel(),
      Base().set<IdempotencyPredicateOption>(
          IdempotentIf<EchoRequest>([](const EchoRequest&) { return true; })));
  RangeRequest range;
  range.set_count(1);
  auto reader = streams.Range(range);
  Item item;
  EXPECT_FALSE(reader.Read(&item));
  absl::Status status = reader.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("its predicate takes a stubkit.testing.EchoRequest"));
  EXPECT_EQ(stream_service_.range_attempts.load(), 0);
  // Client streams do not consult it.
  auto writer = streams.Sum();
  EXPECT_TRUE(writer.Finish().ok());
}

TEST_F(GeneratedMethodOptionsTest, NullPredicateIsUnset) {
  ASSERT_TRUE(echo_server_.ok());
  EchoServiceClient client(echo_server_.Channel(),
                           Base().set<IdempotencyPredicateOption>(
                               IdempotentIf<EchoRequest>(nullptr)));
  EXPECT_TRUE(client.Echo(Request("echo", 1)).ok());  // idempotent proto
  EXPECT_EQ(echo_service_.attempts("echo"), 2);
  EXPECT_FALSE(client.Append(Request("append", 1)).ok());  // not idempotent
  EXPECT_EQ(echo_service_.attempts("append"), 1);
}

// ---- AttemptEvent metadata ------------------------------------------------

TEST_F(GeneratedMethodOptionsTest, AttemptEventExposesEachAttemptsMetadata) {
  ASSERT_TRUE(stream_server_.ok());
  struct Seen {
    int attempt;
    bool has_context;
    ResponseMetadata received;
  };
  absl::Mutex mu;
  std::vector<Seen> seen;
  StreamServiceClient client(
      stream_server_.Channel(),
      Base().set<RetryObserverOption>([&](const AttemptEvent& event) {
        absl::MutexLock lock(&mu);
        seen.push_back({event.attempt, event.context != nullptr,
                        event.ReceivedMetadata()});
      }));
  stream_service_.fail_get = 1;
  RangeRequest request;
  request.set_start(3);
  ASSERT_TRUE(client.Get(request).ok());

  absl::MutexLock lock(&mu);
  ASSERT_EQ(seen.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(seen[i].attempt, i + 1);
    EXPECT_TRUE(seen[i].has_context);
    EXPECT_THAT(seen[i].received.initial_metadata,
                ElementsAre(Pair("x-initial", "get")));
    EXPECT_THAT(seen[i].received.trailing_metadata,
                ElementsAre(Pair("x-attempt", std::to_string(i + 1))));
    EXPECT_THAT(seen[i].received.peer, HasSubstr("127.0.0.1"));
  }
}

// ---- client and bidi stream response metadata ------------------------------

TEST_F(GeneratedMethodOptionsTest, ClientAndBidiStreamsFillResponseMetadata) {
  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient client(stream_server_.Channel(), Base());

  auto sum_received = std::make_shared<ResponseMetadata>();
  auto writer = client.Sum(Options{}.set<ResponseMetadataOption>(sum_received));
  Item item;
  item.set_value(4);
  ASSERT_TRUE(writer.Write(item));
  ASSERT_TRUE(writer.Write(item));
  auto sum = writer.Finish();
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->sum(), 8);
  EXPECT_THAT(sum_received->initial_metadata,
              ElementsAre(Pair("x-initial", "sum")));
  EXPECT_THAT(sum_received->trailing_metadata,
              ElementsAre(Pair("x-trailing", "sum-2")));
  EXPECT_THAT(sum_received->peer, HasSubstr("127.0.0.1"));

  // Filled on failure too.
  auto bidi_received = std::make_shared<ResponseMetadata>();
  auto stream =
      client.Double(Options{}.set<ResponseMetadataOption>(bidi_received));
  item.set_value(5);
  ASSERT_TRUE(stream.Write(item));
  ASSERT_TRUE(stream.WritesDone());
  ASSERT_TRUE(stream.Read(&item));
  EXPECT_EQ(item.value(), 10);
  EXPECT_FALSE(stream.Read(&item));
  EXPECT_EQ(stream.Finish().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bidi_received->initial_metadata,
              ElementsAre(Pair("x-initial", "double")));
  EXPECT_THAT(bidi_received->trailing_metadata,
              ElementsAre(Pair("x-trailing", "double")));
  EXPECT_THAT(bidi_received->peer, HasSubstr("127.0.0.1"));
}

}  // namespace
}  // namespace stubkit

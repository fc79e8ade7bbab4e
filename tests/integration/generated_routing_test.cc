// Copyright 2026 The stubkit Authors.
//
// x-goog-request-params as a real in-process server sees it, for the
// methods of protos/stubkit/testing/gen/routing.proto: built from a
// google.api.routing annotation, else from the google.api.http path
// variables, on every attempt (retries, async calls, streams); absent for
// methods without annotations, for an empty routing annotation, and when
// RoutingHeaderOption is off. Integers are sent when set, 0 included; fields
// named with keywords (protos/stubkit/testing/gen/keywords.proto) are read
// through protoc's accessors.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "stubkit/clock.h"
#include "stubkit/retry_options.h"
#ifndef STUBKIT_NO_KEYWORDS_PROTO  // C++17 only (tests/generator/CMakeLists.txt)
#include "stubkit/testing/gen/keywords.grpc.pb.h"
#include "stubkit/testing/gen/keywords.stubkit.h"
#endif
#include "stubkit/testing/gen/routing.grpc.pb.h"
#include "stubkit/testing/gen/routing.stubkit.h"

namespace stubkit {
namespace {

using ::routing::v1::ReadRequest;
using ::routing::v1::ReadResponse;
using ::routing::v1::RoutedClient;

constexpr char kNone[] = "<none>";

// Records the header of every call ("<none>" without one; the values
// joined with '|' if there were several).
class RoutedService : public ::routing::v1::Routed::Service {
 public:
  grpc::Status ReadRows(grpc::ServerContext* context, const ReadRequest*,
                        ReadResponse*) override {
    return Record(context);
  }
  grpc::Status Ping(grpc::ServerContext* context, const ReadRequest*,
                    ReadResponse*) override {
    return Record(context);
  }
  grpc::Status GetTable(grpc::ServerContext* context, const ReadRequest*,
                        ::routing::v1::Table*) override {
    grpc::Status status = Record(context);
    absl::MutexLock lock(&mu_);
    if (unavailable_ > 0) {
      --unavailable_;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "try again");
    }
    return status;
  }
  grpc::Status StreamRows(grpc::ServerContext* context, const ReadRequest*,
                          grpc::ServerWriter<ReadResponse>* writer) override {
    ReadResponse response;
    response.set_value("row");
    writer->Write(response);
    return Record(context);
  }
  grpc::Status Plain(grpc::ServerContext* context, const ReadRequest*,
                     ReadResponse*) override {
    return Record(context);
  }
  grpc::Status GetShard(grpc::ServerContext* context, const ReadRequest*,
                        ReadResponse*) override {
    return Record(context);
  }

  std::vector<std::string> Headers() {
    absl::MutexLock lock(&mu_);
    return headers_;
  }
  void FailGetTable(int times) {
    absl::MutexLock lock(&mu_);
    unavailable_ = times;
  }

 private:
  grpc::Status Record(grpc::ServerContext* context) {
    std::string seen;
    auto range =
        context->client_metadata().equal_range("x-goog-request-params");
    for (auto it = range.first; it != range.second; ++it) {
      if (!seen.empty()) seen += "|";
      seen.append(it->second.data(), it->second.size());
    }
    absl::MutexLock lock(&mu_);
    headers_.push_back(seen.empty() ? kNone : seen);
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  std::vector<std::string> headers_;
  int unavailable_ = 0;
};

class GeneratedRoutingTest : public ::testing::Test {
 protected:
  GeneratedRoutingTest() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~GeneratedRoutingTest() override { server_->Shutdown(); }

  RoutedClient Client(Options options = {}) {
    return RoutedClient(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                            grpc::InsecureChannelCredentials()),
        std::move(options)
            .set<ClockOption>(clock_)
            .set<SleeperOption>(clock_)
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
            .set<BackoffPolicyOption>(
                ExponentialBackoffPolicy()
                    .WithInitialDelay(std::chrono::seconds(1))
                    .WithMaximumDelay(std::chrono::seconds(10))
                    .WithMultiplier(2.0)
                    .WithJitter(Jitter::None())));
  }

  static ReadRequest Request() {
    ReadRequest request;
    request.set_table_name("projects/p/instances/i/tables/t");
    request.set_app_profile_id("profiles/x y");
    request.mutable_table()->set_name("projects/p/tables/t");
    request.set_shard(7);
    request.set_fast(true);
    return request;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  RoutedService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// google.api.routing: a matched template segment, a whole field, and for
// a key given twice the last parameter that matched.
TEST_F(GeneratedRoutingTest, RoutingAnnotation) {
  ASSERT_NE(server_, nullptr);
  RoutedClient client = Client();
  ASSERT_TRUE(client.ReadRows(Request()).ok());
  ReadRequest other = Request();
  other.mutable_table()->set_name("projects/p/instances/j/tables/t");
  ASSERT_TRUE(client.ReadRows(other).ok());
  EXPECT_EQ(
      service_.Headers(),
      (std::vector<std::string>{"table_location=projects%2Fp%2Finstances%2Fi"
                                "&app_profile_id=profiles%2Fx%20y",
                                "table_location=instances%2Fj"
                                "&app_profile_id=profiles%2Fx%20y"}));
}

// An empty google.api.routing annotation: no header, though the http rule
// has a path variable. No annotation at all: no header.
TEST_F(GeneratedRoutingTest, EmptyAnnotationAndNoAnnotationSendNothing) {
  ASSERT_NE(server_, nullptr);
  RoutedClient client = Client();
  ASSERT_TRUE(client.Ping(Request()).ok());
  ASSERT_TRUE(client.Plain(Request()).ok());
  EXPECT_EQ(service_.Headers(), (std::vector<std::string>{kNone, kNone}));
}

// google.api.http: each path variable (primary and additional bindings,
// once each) with its field's whole value; the bool variable is left out;
// on every attempt, sync and async.
TEST_F(GeneratedRoutingTest, HttpPathVariablesOnEveryAttempt) {
  ASSERT_NE(server_, nullptr);
  const std::string expected =
      "table.name=projects%2Fp%2Ftables%2Ft&shard=7"
      "&app_profile_id=profiles%2Fx%20y";
  service_.FailGetTable(1);
  RoutedClient client = Client();
  ASSERT_TRUE(client.GetTable(Request()).ok());
  ASSERT_TRUE(client.AsyncGetTable(Request()).get().ok());
  EXPECT_EQ(service_.Headers(),
            (std::vector<std::string>{expected, expected, expected}));
}

TEST_F(GeneratedRoutingTest, ServerStreamingAttemptsCarryIt) {
  ASSERT_NE(server_, nullptr);
  auto reader = Client().StreamRows(Request());
  ReadResponse response;
  while (reader.Read(&response)) {
  }
  ASSERT_TRUE(reader.Finish().ok());
  EXPECT_EQ(service_.Headers(),
            std::vector<std::string>{
                "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft"});
}

// Empty strings are left out; an integer is sent, 0 too (an id 0 was
// never sent): a proto3 integer without presence cannot be told unset.
TEST_F(GeneratedRoutingTest, EmptyStringsAreLeftOutZeroIsSent) {
  ASSERT_NE(server_, nullptr);
  ReadRequest request;
  request.set_shard(0);
  ASSERT_TRUE(Client().GetTable(request).ok());
  request.set_shard(3);
  ASSERT_TRUE(Client().GetTable(request).ok());
  EXPECT_EQ(service_.Headers(),
            (std::vector<std::string>{"shard=0", "shard=3"}));
}

// Integers the code can tell are unset (a field with presence, one inside
// an unset message) are left out; set to 0, they are sent (AIP-4222: a
// field that is set is sent).
TEST_F(GeneratedRoutingTest, IntegersAreSentWhenSetZeroIncluded) {
  ASSERT_NE(server_, nullptr);
  RoutedClient client = Client();
  ReadRequest request;
  ASSERT_TRUE(client.GetShard(request).ok());
  request.set_replica(0);
  ASSERT_TRUE(client.GetShard(request).ok());
  request.mutable_table();
  ASSERT_TRUE(client.GetShard(request).ok());
  request.set_shard(5);
  request.set_replica(2);
  request.mutable_table()->set_generation(9);
  ASSERT_TRUE(client.GetShard(request).ok());
  EXPECT_EQ(service_.Headers(),
            (std::vector<std::string>{"shard=0", "shard=0&replica=0",
                                      "shard=0&replica=0&table.generation=0",
                                      "shard=5&replica=2&table.generation=9"}));
}

// RoutingHeaderOption(false), for the client or for one call: no header.
TEST_F(GeneratedRoutingTest, TheOptionTurnsItOff) {
  ASSERT_NE(server_, nullptr);
  RoutedClient off = Client(Options{}.set<RoutingHeaderOption>(false));
  ASSERT_TRUE(off.GetTable(Request()).ok());
  ASSERT_TRUE(off.ReadRows(Request()).ok());
  RoutedClient on = Client();
  ASSERT_TRUE(
      on.GetTable(Request(), Options{}.set<RoutingHeaderOption>(false)).ok());
  ASSERT_TRUE(
      on.GetTable(Request(), Options{}.set<RoutingHeaderOption>(true)).ok());
  std::vector<std::string> headers = service_.Headers();
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[0], kNone);
  EXPECT_EQ(headers[1], kNone);
  EXPECT_EQ(headers[2], kNone);
  EXPECT_NE(headers[3], kNone);
}

#ifndef STUBKIT_NO_KEYWORDS_PROTO
// Records the header of every call, for keywords.proto.
class KeywordsService : public ::keywords::v1::Keywords::Service {
 public:
  grpc::Status GetThing(grpc::ServerContext* context,
                        const ::keywords::v1::KeywordRequest*,
                        ::keywords::v1::Thing*) override {
    return Record(context);
  }
  grpc::Status ReadThing(grpc::ServerContext* context,
                         const ::keywords::v1::KeywordRequest*,
                         ::keywords::v1::Thing*) override {
    return Record(context);
  }
  std::vector<std::string> Headers() {
    absl::MutexLock lock(&mu_);
    return headers_;
  }

 private:
  grpc::Status Record(grpc::ServerContext* context) {
    auto it = context->client_metadata().find("x-goog-request-params");
    absl::MutexLock lock(&mu_);
    headers_.push_back(it == context->client_metadata().end()
                           ? kNone
                           : std::string(it->second.data(), it->second.size()));
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  std::vector<std::string> headers_;
};

// Path variables and routing parameters named with keywords of every class
// reach the header with their values.
TEST(GeneratedKeywordRoutingTest, FieldsNamedWithKeywords) {
  KeywordsService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ::keywords::v1::KeywordsClient client(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  ::keywords::v1::KeywordRequest request;
  request.set_delete_("d");
  request.set_and_("a");
  request.set_constexpr_("ce");
  request.set_nullptr_("np");
  request.set_requires("rq");
  request.set_co_await("ca");
  request.set_null("nl");
  request.set_major("mj");
  request.set_register_(3);
  request.set_decltype_(4);
  request.mutable_thread_local_()->set_char8_t("c8");
  request.mutable_thread_local_()->set_co_yield("projects/p/x");
  request.mutable_thread_local_()->set_class_("cl");
  request.set_constinit("ci");
  request.set_co_return("cr");
  request.set_concept("cc");
  ASSERT_TRUE(client.GetThing(request).ok());
  ASSERT_TRUE(client.ReadThing(request).ok());
  server->Shutdown();
  EXPECT_EQ(service.Headers(),
            (std::vector<std::string>{
                "delete=d&and=a&constexpr=ce&nullptr=np&requires=rq"
                "&co_await=ca&NULL=nl&major=mj&register=3&decltype=4"
                "&thread_local.char8_t=c8",
                "consteval=projects%2Fp&constinit=ci&co_return=cr&concept=cc"
                "&thread_local.class=cl"}));
}

#endif  // STUBKIT_NO_KEYWORDS_PROTO

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// The x-goog-request-params value: encoding, path templates, "last one
// wins", and what is left out.

#include "stubkit/routing.h"

#include <grpcpp/client_context.h>
#include <grpcpp/test/client_context_test_peer.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "stubkit/internal/api/routing_header.h"
#include "stubkit/internal/base/metadata.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {
namespace {

TEST(RoutingTest, UrlEncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(UrlEncode("projects/p/topics/t"), "projects%2Fp%2Ftopics%2Ft");
  EXPECT_EQ(UrlEncode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(UrlEncode("a b&c=d%"), "a%20b%26c%3Dd%25");
  EXPECT_EQ(UrlEncode("\xC3\xA9"), "%C3%A9");
}

TEST(RoutingTest, MatchPathTemplate) {
  auto match = [](absl::string_view value, absl::string_view path_template) {
    auto matched = MatchPathTemplate(value, path_template);
    return matched.has_value() ? std::string(*matched) : "<no match>";
  };
  EXPECT_EQ(match("projects/p/instances/i/tables/t",
                  "{table_location=projects/*/instances/*}/**"),
            "projects/p/instances/i");
  EXPECT_EQ(match("projects/p/instances/i",
                  "{table_location=projects/*/instances/*}/**"),
            "projects/p/instances/i");
  EXPECT_EQ(match("projects/p/instances/i/tables/t",
                  "projects/*/{table_location=instances/*}/tables/*"),
            "instances/i");
  EXPECT_EQ(match("projects/p/instances/i/tables/t/extra",
                  "projects/*/{table_location=instances/*}/tables/*"),
            "<no match>");
  EXPECT_EQ(match("profiles/x", "{routing_id}"), "<no match>");
  EXPECT_EQ(match("x", "{routing_id}"), "x");
  EXPECT_EQ(match("a/b/c", "{name=**}"), "a/b/c");
  EXPECT_EQ(match("projects//x", "{p=projects/*}/**"), "<no match>");
  EXPECT_EQ(match("", "{p=projects/*}"), "<no match>");
  // Not exactly one variable: never matches.
  EXPECT_EQ(match("a/b", "{x=a}/{y=b}"), "<no match>");
  EXPECT_EQ(match("a/b", "a/b"), "<no match>");
}

TEST(RoutingTest, ParamsJoinEncodeAndTheLastMatchWins) {
  RequestParams params;
  params.Match("table_location", "projects/p/instances/i/tables/t",
               "{table_location=projects/*/instances/*}/**");
  params.Set("app_profile_id", "");  // empty: left out
  params.Set("shard", std::int64_t{42});
  params.Match("table_location", "projects/p/instances/j/tables/t",
               "projects/*/{table_location=instances/*}/tables/*");
  params.Match("table_location", "nothing to match",
               "projects/*/{table_location=instances/*}/tables/*");
  EXPECT_EQ(params.Value(), "table_location=instances%2Fj&shard=42");
  EXPECT_TRUE(ValidateMetadata(kRequestParamsHeader, params.Value()).ok());
}

// An integer is a value whatever it is: 0 is an id like any other (the
// generated code leaves out a field that is not set, when it can tell).
TEST(RoutingTest, IntegersAreSentZeroIncluded) {
  RequestParams params;
  params.Set("a", std::int64_t{0});
  params.Set("b", std::uint64_t{0});
  params.Set("c", std::int32_t{0});
  params.Set("d", std::uint32_t{0});
  params.Set("e", std::int64_t{-7});
  params.Set("f", std::uint64_t{18446744073709551615u});
  EXPECT_EQ(params.Value(), "a=0&b=0&c=0&d=0&e=-7&f=18446744073709551615");
}

TEST(RoutingTest, NothingSetIsAnEmptyValue) {
  RequestParams params;
  params.Set("name", "");
  params.Match("p", "x", "{p=projects/*}");
  EXPECT_EQ(params.Value(), "");
}

struct FakeRequest {
  std::string name;
};

void FakeParams(const FakeRequest& request, RequestParams& params) {
  params.Set("name", request.name);
}

// The one call a generated stub makes before each attempt.
TEST(RoutingTest, ApplyRoutingHeaderSendsWhatTheParamsFunctionSets) {
  FakeRequest request{"shelves/1"};
  Options call;
  Options client;
  grpc::ClientContext on;
  ApplyRoutingHeader(on, OptionsView(call, client), request, FakeParams);
  auto sent =
      grpc::testing::ClientContextTestPeer(&on).GetSendInitialMetadata();
  ASSERT_EQ(sent.count(kRequestParamsHeader), 1u);
  EXPECT_EQ(sent.find(kRequestParamsHeader)->second, "name=shelves%2F1");

  // Turned off for the call: nothing is sent, and the request is not read.
  Options off = Options{}.set<RoutingHeaderOption>(false);
  grpc::ClientContext none;
  ApplyRoutingHeader(
      none, OptionsView(off, client), request,
      +[](const FakeRequest&, RequestParams&) {
        ADD_FAILURE() << "read the request";
      });
  EXPECT_EQ(grpc::testing::ClientContextTestPeer(&none)
                .GetSendInitialMetadata()
                .count(kRequestParamsHeader),
            0u);

  // Nothing set, nothing sent.
  FakeRequest empty;
  grpc::ClientContext unset;
  ApplyRoutingHeader(unset, OptionsView(call, client), empty, FakeParams);
  EXPECT_EQ(grpc::testing::ClientContextTestPeer(&unset)
                .GetSendInitialMetadata()
                .count(kRequestParamsHeader),
            0u);
}

}  // namespace
}  // namespace internal
}  // namespace stubkit

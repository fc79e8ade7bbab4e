// Copyright 2026 The stubkit Authors.
//
// How a user tests their own code with the generated mocks: no server, no
// network. `MockEchoServiceConnection` replaces the whole connection;
// `MockEchoServiceStub` replaces one attempt, under the real retry loop.
// Both live in the package's nested `stubkit_mocks` namespace.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "stubkit/clock.h"
#include "stubkit/testing/echo.stubkit_mock.h"
#include "stubkit/testing/streams.stubkit_mock.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::Item;
using ::stubkit::testing::MakeEchoServiceConnection;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::stubkit_mocks::MockEchoServiceConnection;
using ::stubkit::testing::stubkit_mocks::MockEchoServiceStub;
using ::stubkit::testing::stubkit_mocks::MockStreamServiceConnection;
using ::testing::_;
using ::testing::Return;

// --- The user's code under test. -------------------------------------------

// Greets through the echo service, falling back to a default when the
// service is down.
std::string Greet(EchoServiceClient client, const std::string& name) {
  EchoRequest request;
  request.set_message("hello " + name);
  absl::StatusOr<EchoResponse> response = client.Echo(request);
  if (!response.ok()) return "hello (offline)";
  return response->message();
}

int SumRange(StreamServiceClient client, int start, int count) {
  RangeRequest request;
  request.set_start(start);
  request.set_count(count);
  auto reader = client.Range(request);
  int sum = 0;
  Item item;
  while (reader.Read(&item)) sum += item.value();
  return reader.Finish().ok() ? sum : -1;
}

// --- The user's tests. -----------------------------------------------------

TEST(GeneratedMockTest, UserCodeWithMockConnection) {
  auto connection = std::make_shared<MockEchoServiceConnection>();
  EchoResponse response;
  response.set_message("hello ada");
  EXPECT_CALL(*connection, Echo(_, _))
      .WillOnce([&](const OptionsView& options, const EchoRequest& request) {
        EXPECT_EQ(request.message(), "hello ada");
        // The client's options reach the connection through the view.
        EXPECT_TRUE(options.has<AttemptTimeoutOption>());
        return response;
      })
      .WillOnce(Return(absl::UnavailableError("down")));

  EchoServiceClient client(
      connection, Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(1)));
  EXPECT_EQ(Greet(client, "ada"), "hello ada");
  EXPECT_EQ(Greet(client, "ada"), "hello (offline)");
}

// Issue 22, item 13: a mocked AsyncEcho with no action never calls its
// callback; the future form must then fail the test, not hang it.
TEST(GeneratedMockTest, AMockThatDropsTheCallbackFailsTheFuture) {
  auto connection = std::make_shared<MockEchoServiceConnection>();
  EXPECT_CALL(*connection, AsyncEcho(_, _, _)).Times(1);  // no action
  EchoServiceClient client(connection);
  auto future = client.AsyncEcho(EchoRequest());
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  absl::StatusOr<EchoResponse> result = future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("destroyed without being called"));
}

TEST(GeneratedMockTest, UserCodeWithMockStreamingConnection) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  EXPECT_CALL(*connection, Range(_, _))
      .WillOnce([](const OptionsView&, const RangeRequest& request) {
        std::vector<Item> items(request.count());
        for (int i = 0; i < request.count(); ++i) {
          items[i].set_value(request.start() + i);
        }
        return MakeStreamReader(std::move(items));
      })
      .WillOnce([](const OptionsView&, const RangeRequest&) {
        return MakeStreamReader<Item>({}, absl::UnavailableError("down"));
      });
  StreamServiceClient client(connection);
  EXPECT_EQ(SumRange(client, 1, 4), 1 + 2 + 3 + 4);
  EXPECT_EQ(SumRange(client, 1, 4), -1);
}

TEST(GeneratedMockTest, MockStubUnderTheRealRetryLoop) {
  auto stub = std::make_shared<MockEchoServiceStub>();
  EchoResponse ok;
  ok.set_message("third time");
  EXPECT_CALL(*stub, Echo(_, _, _))
      .WillOnce(Return(absl::UnavailableError("1")))
      .WillOnce(Return(absl::UnavailableError("2")))
      .WillOnce(Return(ok));
  auto clock = std::make_shared<FakeClock>();
  Options options =
      Options{}
          .set<ClockOption>(clock)
          .set<SleeperOption>(clock)
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3));
  EchoServiceClient client(MakeEchoServiceConnection(stub, options), options);

  absl::StatusOr<EchoResponse> response = client.Echo(EchoRequest{});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->message(), "third time");
}

// Issue 39, item 16: the mock connection's AsyncRange returns a handle; by
// default one of no stream, whose Cancel does nothing.
TEST(GeneratedMockTest, AMockAsyncServerStreamReturnsAHandle) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  EXPECT_CALL(*connection, AsyncRange(_, _, _, _)).Times(1);
  StreamServiceClient client(connection);
  AsyncStreamReader<Item> stream = client.AsyncRange(
      RangeRequest(), [](const Item&) {}, [](absl::Status) {});
  stream.Cancel();
}

}  // namespace
}  // namespace stubkit

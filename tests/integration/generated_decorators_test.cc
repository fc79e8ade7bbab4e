// Copyright 2026 The stubkit Authors.
//
// Where DecoratorsOption takes effect. Decorators are applied when a
// connection is made (MakeFooConnection, or the client constructor that
// takes a channel). A client built from a connection cannot apply them, so
// when its options hold any, each of its calls fails with INVALID_ARGUMENT
// before anything is sent, rather than silently running undecorated.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "stubkit/testing/echo.stubkit.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::EchoServiceStub;
using ::stubkit::testing::EchoServiceStubDecorator;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::Item;
using ::stubkit::testing::MakeEchoServiceConnection;
using ::stubkit::testing::MakeStreamServiceConnection;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::Request;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::StreamServiceStub;
using ::stubkit::testing::TestServer;
using ::testing::HasSubstr;

class CountingStub : public EchoServiceStubDecorator {
 public:
  CountingStub(std::shared_ptr<EchoServiceStub> child,
               std::shared_ptr<std::atomic<int>> attempts)
      : EchoServiceStubDecorator(std::move(child)),
        attempts_(std::move(attempts)) {}

  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    ++*attempts_;
    return EchoServiceStubDecorator::Echo(context, options, request);
  }

 private:
  std::shared_ptr<std::atomic<int>> attempts_;
};

class GeneratedDecoratorsTest : public ::testing::Test {
 protected:
  GeneratedDecoratorsTest() : server_(&service_) {}

  Options Decorated() {
    return Options{}.set<EchoServiceClient::DecoratorsOption>(
        {[this](std::shared_ptr<EchoServiceStub> child)
             -> std::shared_ptr<EchoServiceStub> {
          ++factory_calls_;
          return std::make_shared<CountingStub>(std::move(child), attempts_);
        }});
  }

  static void ExpectRefused(const absl::Status& status,
                            const std::string& service) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(
        status.message(),
        HasSubstr(service + ": DecoratorsOption must be given to Make" +
                  service.substr(service.rfind('.') + 1) + "Connection"));
    EXPECT_THAT(status.message(), HasSubstr("built from a connection"));
  }

  std::atomic<int> factory_calls_{0};
  std::shared_ptr<std::atomic<int>> attempts_ =
      std::make_shared<std::atomic<int>>(0);
  FlakyEchoService service_;
  TestServer server_;
};

TEST_F(GeneratedDecoratorsTest, AppliedWhenGivenToMakeConnection) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(
      MakeEchoServiceConnection(server_.Channel(), Decorated()));
  ASSERT_TRUE(client.Echo(Request("made")).ok());
  EXPECT_EQ(factory_calls_.load(), 1);
  EXPECT_EQ(attempts_->load(), 1);
}

TEST_F(GeneratedDecoratorsTest, AppliedWhenGivenToTheChannelConstructor) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), Decorated());
  ASSERT_TRUE(client.Echo(Request("channel")).ok());
  EXPECT_EQ(attempts_->load(), 1);
}

TEST_F(GeneratedDecoratorsTest, ClientFromConnectionRefusesEveryUnaryCall) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(MakeEchoServiceConnection(server_.Channel()),
                           Decorated());

  ExpectRefused(client.Echo(Request("sync")).status(),
                "stubkit.testing.EchoService");
  std::future<absl::StatusOr<EchoResponse>> future =
      client.AsyncEcho(Request("future"));
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  ExpectRefused(future.get().status(), "stubkit.testing.EchoService");
  std::promise<absl::Status> done;
  client.AsyncEcho(Request("callback"),
                   [&](absl::StatusOr<EchoResponse> result) {
                     done.set_value(result.status());
                   });
  ExpectRefused(done.get_future().get(), "stubkit.testing.EchoService");
  // Copies of the client refuse too.
  EchoServiceClient copy = client;
  ExpectRefused(copy.Append(Request("copy")).status(),
                "stubkit.testing.EchoService");

  EXPECT_EQ(factory_calls_.load(), 0);
  EXPECT_EQ(attempts_->load(), 0);
  EXPECT_EQ(service_.total_attempts(), 0);
}

TEST_F(GeneratedDecoratorsTest, ClientFromConnectionRefusesEveryStream) {
  // No server needed: nothing is sent.
  int factories = 0;
  StreamServiceClient client(
      MakeStreamServiceConnection(server_.Channel()),
      Options{}.set<StreamServiceClient::DecoratorsOption>(
          {[&](std::shared_ptr<StreamServiceStub> child) {
            ++factories;
            return child;
          }}));
  const std::string service = "stubkit.testing.StreamService";
  RangeRequest range;
  range.set_count(2);
  Item item;

  auto reader = client.Range(range);
  EXPECT_FALSE(reader.Read(&item));
  ExpectRefused(reader.Finish(), service);

  std::promise<absl::Status> done;
  client.AsyncRange(
      range, [](const Item&) {},
      [&](absl::Status status) { done.set_value(std::move(status)); });
  ExpectRefused(done.get_future().get(), service);

  auto writer = client.Sum();
  EXPECT_FALSE(writer.Write(item));
  ExpectRefused(writer.Finish().status(), service);

  auto stream = client.Double();
  EXPECT_FALSE(stream.Write(item));
  EXPECT_FALSE(stream.Read(&item));
  ExpectRefused(stream.Finish(), service);

  ExpectRefused(client.Get(range).status(), service);
  EXPECT_EQ(factories, 0);
}

TEST_F(GeneratedDecoratorsTest, EmptyDecoratorsOptionIsHarmless) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(
      MakeEchoServiceConnection(server_.Channel()),
      Options{}.set<EchoServiceClient::DecoratorsOption>({}));
  absl::StatusOr<EchoResponse> response = client.Echo(Request("empty"));
  EXPECT_TRUE(response.ok()) << response.status();
}

}  // namespace
}  // namespace stubkit

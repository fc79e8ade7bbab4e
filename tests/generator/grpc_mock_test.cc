// Copyright 2026 The stubkit Authors.
//
// grpc_cpp_plugin's own mocks (`generate_mock_code=true`) and stubkit's in
// one translation unit. Both name a class MockEchoServiceStub; stubkit's
// lives in the nested namespace stubkit_mocks, so the two compile side by
// side and stay distinct types (before, this file did not compile).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <type_traits>

#include "stubkit/call_options.h"
#include "stubkit/clock.h"
#include "stubkit/testing/echo.stubkit_mock.h"
#include "stubkit/testing/echo_mock.grpc.pb.h"

namespace {

namespace pkg = ::stubkit::testing;
using ::testing::_;
using ::testing::Return;

static_assert(std::is_base_of_v<pkg::EchoService::StubInterface,
                                pkg::MockEchoServiceStub>);
static_assert(std::is_base_of_v<pkg::EchoServiceStub,
                                pkg::stubkit_mocks::MockEchoServiceStub>);
static_assert(!std::is_same_v<pkg::MockEchoServiceStub,
                              pkg::stubkit_mocks::MockEchoServiceStub>);

// grpc's mock of the raw stub under stubkit's generated layers: the retry
// loop and the generated gRPC stub run for real, gRPC's wire does not.
TEST(GrpcMockTest, GrpcMockUnderTheStubkitClient) {
  auto clock = std::make_shared<stubkit::FakeClock>();
  auto grpc_mock = std::make_unique<pkg::MockEchoServiceStub>();
  EXPECT_CALL(*grpc_mock, Echo(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")))
      .WillOnce([](grpc::ClientContext*, const pkg::EchoRequest& request,
                   pkg::EchoResponse* response) {
        response->set_message(request.message());
        return grpc::Status::OK;
      });
  // The client's options run the retry loop; a fake clock takes the wait.
  pkg::EchoServiceClient client(
      pkg::MakeEchoServiceConnection(
          pkg::MakeEchoServiceGrpcStub(std::move(grpc_mock))),
      stubkit::Options{}
          .set<stubkit::ClockOption>(clock)
          .set<stubkit::SleeperOption>(clock));
  const auto start = clock->Now();
  pkg::EchoRequest request;
  request.set_message("both mocks");
  absl::StatusOr<pkg::EchoResponse> response = client.Echo(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->message(), "both mocks");
  EXPECT_GT(clock->Now(), start);  // the backoff wait was on the fake clock
}

// The same program uses stubkit's mock of the per-attempt stub.
TEST(GrpcMockTest, StubkitMockInTheSameProgram) {
  auto stub = std::make_shared<pkg::stubkit_mocks::MockEchoServiceStub>();
  pkg::EchoResponse canned;
  canned.set_message("stubkit mock");
  EXPECT_CALL(*stub, Echo(_, _, _)).WillOnce(Return(canned));
  pkg::EchoServiceClient client(pkg::MakeEchoServiceConnection(stub));
  absl::StatusOr<pkg::EchoResponse> response = client.Echo(pkg::EchoRequest{});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->message(), "stubkit mock");
}

// Illegal metadata from a decorator is refused by stubkit::AddMetadata; the
// decorator fails its attempt with that status, so the gRPC stub below it is
// never called and the call is not retried.
class UppercaseKeyStub : public pkg::EchoServiceStubDecorator {
 public:
  using EchoServiceStubDecorator::EchoServiceStubDecorator;
  absl::StatusOr<pkg::EchoResponse> Echo(
      grpc::ClientContext& context, const stubkit::OptionsView& options,
      const pkg::EchoRequest& request) override {
    ++attempts;
    absl::Status added = stubkit::AddMetadata(context, "X-Tenant", "blue");
    if (!added.ok()) return added;
    return EchoServiceStubDecorator::Echo(context, options, request);
  }
  std::atomic<int> attempts{0};
};

TEST(GrpcMockTest, IllegalMetadataNeverReachesTheGrpcStub) {
  auto grpc_mock = std::make_unique<pkg::MockEchoServiceStub>();
  EXPECT_CALL(*grpc_mock, Echo(_, _, _)).Times(0);
  std::shared_ptr<UppercaseKeyStub> decorator;
  pkg::EchoServiceClient client(pkg::MakeEchoServiceConnection(
      pkg::MakeEchoServiceGrpcStub(std::move(grpc_mock)),
      stubkit::Options{}.set<pkg::EchoServiceClient::DecoratorsOption>(
          {[&decorator](std::shared_ptr<pkg::EchoServiceStub> child)
               -> std::shared_ptr<pkg::EchoServiceStub> {
            decorator = std::make_shared<UppercaseKeyStub>(std::move(child));
            return decorator;
          }})));
  absl::StatusOr<pkg::EchoResponse> response = client.Echo(pkg::EchoRequest{});
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), ::testing::HasSubstr("'X-Tenant'"));
  ASSERT_NE(decorator, nullptr);
  EXPECT_EQ(decorator->attempts.load(), 1);  // INVALID_ARGUMENT: not retried
}

}  // namespace

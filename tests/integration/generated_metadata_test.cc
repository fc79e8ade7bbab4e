// Copyright 2026 The stubkit Authors.
//
// Metadata a user decorator adds that gRPC would abort the process on (gRPC
// 1.51 asserts in Call::PerformOps on a key like "X-Tenant"): the generated
// gRPC stub refuses the attempt with INVALID_ARGUMENT naming the key, for
// every kind of call, and the server sees nothing. Before the check this
// test binary died with a GPR_CODEGEN_ASSERT.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "stubkit/hedging.h"
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
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::Request;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::StreamServiceStub;
using ::stubkit::testing::StreamServiceStubDecorator;
using ::stubkit::testing::SumResponse;
using ::stubkit::testing::TestServer;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Adds `key: blue` to every attempt, as a tenant-routing decorator would.
class TenantEchoStub : public EchoServiceStubDecorator {
 public:
  TenantEchoStub(std::shared_ptr<EchoServiceStub> child, std::string key)
      : EchoServiceStubDecorator(std::move(child)), key_(std::move(key)) {}

  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    ++attempts;
    context.AddMetadata(key_, "blue");
    return EchoServiceStubDecorator::Echo(context, options, request);
  }
  void AsyncEcho(grpc::ClientContext& context, const OptionsView& options,
                 const EchoRequest& request,
                 AsyncCallback<EchoResponse> done) override {
    ++attempts;
    context.AddMetadata(key_, "blue");
    EchoServiceStubDecorator::AsyncEcho(context, options, request,
                                        std::move(done));
  }

  std::atomic<int> attempts{0};

 private:
  std::string key_;
};

class TenantStreamStub : public StreamServiceStubDecorator {
 public:
  TenantStreamStub(std::shared_ptr<StreamServiceStub> child, std::string key)
      : StreamServiceStubDecorator(std::move(child)), key_(std::move(key)) {}

  std::unique_ptr<grpc::ClientReaderInterface<Item>> Range(
      grpc::ClientContext& context, const OptionsView& options,
      const RangeRequest& request) override {
    context.AddMetadata(key_, "blue");
    return StreamServiceStubDecorator::Range(context, options, request);
  }
  absl::Status AsyncRange(grpc::ClientContext& context,
                          const OptionsView& options,
                          const RangeRequest& request,
                          grpc::ClientReadReactor<Item>* reactor) override {
    context.AddMetadata(key_, "blue");
    return StreamServiceStubDecorator::AsyncRange(context, options, request,
                                                  reactor);
  }
  std::unique_ptr<grpc::ClientWriterInterface<Item>> Sum(
      grpc::ClientContext& context, const OptionsView& options,
      SumResponse* response) override {
    context.AddMetadata(key_, "blue");
    return StreamServiceStubDecorator::Sum(context, options, response);
  }
  std::unique_ptr<grpc::ClientReaderWriterInterface<Item, Item>> Double(
      grpc::ClientContext& context, const OptionsView& options) override {
    context.AddMetadata(key_, "blue");
    return StreamServiceStubDecorator::Double(context, options);
  }

 private:
  std::string key_;
};

// Counts the calls that reach the server.
class CountingStreamService final : public StreamService::Service {
 public:
  grpc::Status Range(grpc::ServerContext*, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    ++calls;
    for (int i = 0; i < request->count(); ++i) {
      Item item;
      item.set_value(request->start() + i);
      writer->Write(item);
    }
    return grpc::Status::OK;
  }
  grpc::Status Sum(grpc::ServerContext*, grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    ++calls;
    Item item;
    while (reader->Read(&item)) response->set_sum(response->sum() + 1);
    return grpc::Status::OK;
  }
  grpc::Status Double(grpc::ServerContext*,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    ++calls;
    Item item;
    while (stream->Read(&item)) stream->Write(item);
    return grpc::Status::OK;
  }

  std::atomic<int> calls{0};
};

RangeRequest Range(int count) {
  RangeRequest request;
  request.set_start(1);
  request.set_count(count);
  return request;
}

class GeneratedMetadataTest : public ::testing::Test {
 protected:
  GeneratedMetadataTest() : echo_server_(&echo_), stream_server_(&streams_) {}

  // A client whose decorator adds `key`; `stub` is the decorator.
  EchoServiceClient EchoClient(const std::string& key,
                               std::shared_ptr<TenantEchoStub>* stub) {
    return EchoServiceClient(
        echo_server_.Channel(),
        Options{}.set<EchoServiceClient::DecoratorsOption>(
            {[key, stub](std::shared_ptr<EchoServiceStub> child)
                 -> std::shared_ptr<EchoServiceStub> {
              *stub = std::make_shared<TenantEchoStub>(std::move(child), key);
              return *stub;
            }}));
  }

  StreamServiceClient StreamClient(const std::string& key) {
    return StreamServiceClient(
        stream_server_.Channel(),
        Options{}.set<StreamServiceClient::DecoratorsOption>(
            {[key](std::shared_ptr<StreamServiceStub> child)
                 -> std::shared_ptr<StreamServiceStub> {
              return std::make_shared<TenantStreamStub>(std::move(child), key);
            }}));
  }

  static ::testing::Matcher<const absl::Status&> RefusedKey(
      const std::string& method) {
    return ::testing::AllOf(
        ::testing::Property(&absl::Status::code,
                            absl::StatusCode::kInvalidArgument),
        ::testing::Property(&absl::Status::message,
                            AllOf(HasSubstr(method), HasSubstr("'X-Tenant'"),
                                  HasSubstr("the attempt was not sent"))));
  }

  FlakyEchoService echo_;
  CountingStreamService streams_;
  TestServer echo_server_;
  TestServer stream_server_;
};

TEST_F(GeneratedMetadataTest, LegalKeyFromDecoratorIsSent) {
  ASSERT_TRUE(echo_server_.ok());
  std::shared_ptr<TenantEchoStub> stub;
  EchoServiceClient client = EchoClient("x-tenant", &stub);
  absl::StatusOr<EchoResponse> response = client.Echo(Request("legal"));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(echo_.headers("legal", "x-tenant"), ElementsAre("blue"));
}

TEST_F(GeneratedMetadataTest, SyncUnaryIsRefusedBeforeSending) {
  ASSERT_TRUE(echo_server_.ok());
  std::shared_ptr<TenantEchoStub> stub;
  EchoServiceClient client = EchoClient("X-Tenant", &stub);
  absl::StatusOr<EchoResponse> response = client.Echo(Request("sync"));
  EXPECT_THAT(response.status(),
              RefusedKey("stubkit.testing.EchoService.Echo"));
  // INVALID_ARGUMENT is permanent: one attempt, and it never left.
  EXPECT_EQ(stub->attempts.load(), 1);
  EXPECT_EQ(echo_.total_attempts(), 0);
}

TEST_F(GeneratedMetadataTest, AsyncUnaryIsRefusedBeforeSending) {
  ASSERT_TRUE(echo_server_.ok());
  std::shared_ptr<TenantEchoStub> stub;
  EchoServiceClient client = EchoClient("X-Tenant", &stub);
  std::future<absl::StatusOr<EchoResponse>> future =
      client.AsyncEcho(Request("async"));
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_THAT(future.get().status(),
              RefusedKey("stubkit.testing.EchoService.Echo"));
  EXPECT_EQ(stub->attempts.load(), 1);
  EXPECT_EQ(echo_.total_attempts(), 0);
}

TEST_F(GeneratedMetadataTest, HedgedCallIsRefusedBeforeSending) {
  ASSERT_TRUE(echo_server_.ok());
  std::shared_ptr<TenantEchoStub> stub;
  EchoServiceClient client = EchoClient("X-Tenant", &stub);
  // Echo is idempotent, so this call is hedged (on the async stub).
  absl::StatusOr<EchoResponse> response = client.Echo(
      Request("hedged"), Options{}.set<HedgingPolicyOption>(
                             HedgingPolicy(3, std::chrono::milliseconds(1))));
  EXPECT_THAT(response.status(),
              RefusedKey("stubkit.testing.EchoService.Echo"));
  EXPECT_GE(stub->attempts.load(), 1);
  EXPECT_EQ(echo_.total_attempts(), 0);
}

TEST_F(GeneratedMetadataTest, ServerStreamIsRefusedBeforeSending) {
  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient client = StreamClient("X-Tenant");
  StreamReader<Item> reader = client.Range(Range(3));
  Item item;
  EXPECT_FALSE(reader.Read(&item));
  EXPECT_THAT(reader.Finish(),
              RefusedKey("stubkit.testing.StreamService.Range"));
  EXPECT_EQ(streams_.calls.load(), 0);
}

TEST_F(GeneratedMetadataTest, AsyncServerStreamIsRefusedBeforeSending) {
  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient client = StreamClient("X-Tenant");
  std::atomic<int> messages{0};
  std::promise<absl::Status> done;
  client.AsyncRange(
      Range(3), [&](const Item&) { ++messages; },
      [&](absl::Status status) { done.set_value(std::move(status)); });
  std::future<absl::Status> finished = done.get_future();
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_THAT(finished.get(),
              RefusedKey("stubkit.testing.StreamService.Range"));
  EXPECT_EQ(messages.load(), 0);
  EXPECT_EQ(streams_.calls.load(), 0);
}

TEST_F(GeneratedMetadataTest, ClientAndBidiStreamsAreRefusedBeforeSending) {
  ASSERT_TRUE(stream_server_.ok());
  StreamServiceClient client = StreamClient("X-Tenant");
  Item item;
  item.set_value(1);

  auto writer = client.Sum();
  EXPECT_FALSE(writer.Write(item));
  EXPECT_THAT(writer.Finish().status(),
              RefusedKey("stubkit.testing.StreamService.Sum"));

  auto stream = client.Double();
  EXPECT_FALSE(stream.Write(item));
  EXPECT_FALSE(stream.Read(&item));
  EXPECT_THAT(stream.Finish(),
              RefusedKey("stubkit.testing.StreamService.Double"));
  EXPECT_EQ(streams_.calls.load(), 0);
}

}  // namespace
}  // namespace stubkit

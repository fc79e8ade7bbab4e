// Copyright 2026 The stubkit Authors.
//
// Metadata a user decorator adds that gRPC would abort the process on (gRPC
// 1.51 asserts in Call::PerformOps on a key like "X-Tenant"): added through
// `stubkit::AddMetadata`, it is refused with INVALID_ARGUMENT naming the
// key, the decorator fails its attempt with that status, for every kind of
// call, the call is not retried, and the server sees nothing. The setup
// hook sees the status too and its call goes on without the key.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/status.h"
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

// Adds `key: blue` to every attempt through stubkit::AddMetadata, as a
// tenant-routing decorator would, and fails the attempt with the refusal.
class TenantEchoStub : public EchoServiceStubDecorator {
 public:
  TenantEchoStub(std::shared_ptr<EchoServiceStub> child, std::string key)
      : EchoServiceStubDecorator(std::move(child)), key_(std::move(key)) {}

  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    ++attempts;
    absl::Status added = AddMetadata(context, key_, "blue");
    if (!added.ok()) return added;
    return EchoServiceStubDecorator::Echo(context, options, request);
  }
  void AsyncEcho(grpc::ClientContext& context, const OptionsView& options,
                 const EchoRequest& request,
                 AsyncCallback<EchoResponse> done) override {
    ++attempts;
    absl::Status added = AddMetadata(context, key_, "blue");
    if (!added.ok()) {
      done(std::move(added));
      return;
    }
    EchoServiceStubDecorator::AsyncEcho(context, options, request,
                                        std::move(done));
  }

  std::atomic<int> attempts{0};

 private:
  std::string key_;
};

// Streams failed before anything was sent: what a decorator's sync stream
// method returns to fail its attempt with `status`.
class FailedReader final : public grpc::ClientReaderInterface<Item> {
 public:
  explicit FailedReader(const absl::Status& status)
      : status_(ToGrpcStatus(status)) {}
  grpc::Status Finish() override { return status_; }
  bool NextMessageSize(uint32_t* size) override {
    *size = 0;
    return false;
  }
  bool Read(Item* /*msg*/) override { return false; }
  void WaitForInitialMetadata() override {}

 private:
  grpc::Status status_;
};

class FailedWriter final : public grpc::ClientWriterInterface<Item> {
 public:
  explicit FailedWriter(const absl::Status& status)
      : status_(ToGrpcStatus(status)) {}
  grpc::Status Finish() override { return status_; }
  bool Write(const Item& /*msg*/, grpc::WriteOptions /*options*/) override {
    return false;
  }
  bool WritesDone() override { return false; }

 private:
  grpc::Status status_;
};

class FailedReaderWriter final
    : public grpc::ClientReaderWriterInterface<Item, Item> {
 public:
  explicit FailedReaderWriter(const absl::Status& status)
      : status_(ToGrpcStatus(status)) {}
  grpc::Status Finish() override { return status_; }
  bool NextMessageSize(uint32_t* size) override {
    *size = 0;
    return false;
  }
  bool Read(Item* /*msg*/) override { return false; }
  void WaitForInitialMetadata() override {}
  bool Write(const Item& /*msg*/, grpc::WriteOptions /*options*/) override {
    return false;
  }
  bool WritesDone() override { return false; }

 private:
  grpc::Status status_;
};

class TenantStreamStub : public StreamServiceStubDecorator {
 public:
  TenantStreamStub(std::shared_ptr<StreamServiceStub> child, std::string key)
      : StreamServiceStubDecorator(std::move(child)), key_(std::move(key)) {}

  std::unique_ptr<grpc::ClientReaderInterface<Item>> Range(
      grpc::ClientContext& context, const OptionsView& options,
      const RangeRequest& request) override {
    ++attempts;
    absl::Status added = AddMetadata(context, key_, "blue");
    if (!added.ok()) return std::make_unique<FailedReader>(added);
    return StreamServiceStubDecorator::Range(context, options, request);
  }
  absl::Status AsyncRange(grpc::ClientContext& context,
                          const OptionsView& options,
                          const RangeRequest& request,
                          grpc::ClientReadReactor<Item>* reactor) override {
    ++attempts;
    absl::Status added = AddMetadata(context, key_, "blue");
    if (!added.ok()) return added;
    return StreamServiceStubDecorator::AsyncRange(context, options, request,
                                                  reactor);
  }
  std::unique_ptr<grpc::ClientWriterInterface<Item>> Sum(
      grpc::ClientContext& context, const OptionsView& options,
      SumResponse* response) override {
    ++attempts;
    absl::Status added = AddMetadata(context, key_, "blue");
    if (!added.ok()) return std::make_unique<FailedWriter>(added);
    return StreamServiceStubDecorator::Sum(context, options, response);
  }
  std::unique_ptr<grpc::ClientReaderWriterInterface<Item, Item>> Double(
      grpc::ClientContext& context, const OptionsView& options) override {
    ++attempts;
    absl::Status added = AddMetadata(context, key_, "blue");
    if (!added.ok()) return std::make_unique<FailedReaderWriter>(added);
    return StreamServiceStubDecorator::Double(context, options);
  }

  std::atomic<int> attempts{0};

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

  // A client whose decorator adds `key`; `stub` is the decorator. Streams
  // are retried on UNAVAILABLE like unary calls.
  StreamServiceClient StreamClient(const std::string& key,
                                   std::shared_ptr<TenantStreamStub>* stub) {
    return StreamServiceClient(
        stream_server_.Channel(),
        Options{}.set<StreamServiceClient::DecoratorsOption>(
            {[key, stub](std::shared_ptr<StreamServiceStub> child)
                 -> std::shared_ptr<StreamServiceStub> {
              *stub = std::make_shared<TenantStreamStub>(std::move(child), key);
              return *stub;
            }}));
  }

  // stubkit::AddMetadata's refusal, as the call's final status.
  static ::testing::Matcher<const absl::Status&> RefusedKey() {
    return ::testing::AllOf(
        ::testing::Property(&absl::Status::code,
                            absl::StatusCode::kInvalidArgument),
        ::testing::Property(
            &absl::Status::message,
            AllOf(HasSubstr("metadata key 'X-Tenant'"),
                  HasSubstr("gRPC would abort the process on it"))));
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
  EXPECT_THAT(response.status(), RefusedKey());
  // INVALID_ARGUMENT is permanent: one attempt, and it never left.
  EXPECT_EQ(stub->attempts.load(), 1);
  std::optional<RetrySummary> summary = GetRetrySummary(response.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->attempts, 1);
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
  EXPECT_THAT(future.get().status(), RefusedKey());
  EXPECT_EQ(stub->attempts.load(), 1);
  EXPECT_EQ(echo_.total_attempts(), 0);
}

TEST_F(GeneratedMetadataTest, HedgedCallIsRefusedBeforeSending) {
  ASSERT_TRUE(echo_server_.ok());
  std::shared_ptr<TenantEchoStub> stub;
  EchoServiceClient client = EchoClient("X-Tenant", &stub);
  // Echo is idempotent, so this call is hedged (on the async stub).
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("hedged"),
                  Options{}.set<HedgingPolicyOption>(
                      HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(
                          std::chrono::milliseconds(1))));
  EXPECT_THAT(response.status(), RefusedKey());
  EXPECT_GE(stub->attempts.load(), 1);
  EXPECT_EQ(echo_.total_attempts(), 0);
}

TEST_F(GeneratedMetadataTest, ServerStreamIsRefusedBeforeSending) {
  ASSERT_TRUE(stream_server_.ok());
  std::shared_ptr<TenantStreamStub> stub;
  StreamServiceClient client = StreamClient("X-Tenant", &stub);
  StreamReader<Item> reader = client.Range(Range(3));
  Item item;
  EXPECT_FALSE(reader.Read(&item));
  EXPECT_THAT(reader.Finish(), RefusedKey());
  EXPECT_EQ(stub->attempts.load(), 1);
  EXPECT_EQ(streams_.calls.load(), 0);
}

TEST_F(GeneratedMetadataTest, AsyncServerStreamIsRefusedBeforeSending) {
  ASSERT_TRUE(stream_server_.ok());
  std::shared_ptr<TenantStreamStub> stub;
  StreamServiceClient client = StreamClient("X-Tenant", &stub);
  std::atomic<int> messages{0};
  std::promise<absl::Status> done;
  client.AsyncRange(
      Range(3), [&](const Item&) { ++messages; },
      [&](absl::Status status) { done.set_value(std::move(status)); });
  std::future<absl::Status> finished = done.get_future();
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_THAT(finished.get(), RefusedKey());
  EXPECT_EQ(messages.load(), 0);
  EXPECT_EQ(stub->attempts.load(), 1);
  EXPECT_EQ(streams_.calls.load(), 0);
}

TEST_F(GeneratedMetadataTest, ClientAndBidiStreamsAreRefusedBeforeSending) {
  ASSERT_TRUE(stream_server_.ok());
  std::shared_ptr<TenantStreamStub> stub;
  StreamServiceClient client = StreamClient("X-Tenant", &stub);
  Item item;
  item.set_value(1);

  auto writer = client.Sum();
  EXPECT_FALSE(writer.Write(item));
  EXPECT_THAT(writer.Finish().status(), RefusedKey());
  EXPECT_EQ(stub->attempts.load(), 1);

  auto stream = client.Double();
  EXPECT_FALSE(stream.Write(item));
  EXPECT_FALSE(stream.Read(&item));
  EXPECT_THAT(stream.Finish(), RefusedKey());
  EXPECT_EQ(stub->attempts.load(), 2);
  EXPECT_EQ(streams_.calls.load(), 0);
}

// The setup hook cannot fail its attempt: a refused key is not added, the
// hook sees the status, and the call goes on with the legal keys.
TEST_F(GeneratedMetadataTest, HookSeesTheRefusalAndTheCallGoesOn) {
  ASSERT_TRUE(echo_server_.ok());
  EchoServiceClient client(echo_server_.Channel());
  std::vector<absl::Status> statuses;
  absl::StatusOr<EchoResponse> response = client.Echo(
      Request("hook"),
      Options{}.set<ContextSetupOption>(
          [&statuses](grpc::ClientContext& context) {
            statuses.push_back(AddMetadata(context, "X-Tenant", "blue"));
            statuses.push_back(AddMetadata(context, "x-tenant", "blue"));
          }));
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_THAT(statuses[0], RefusedKey());
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
  EXPECT_EQ(echo_.total_attempts(), 1);
  EXPECT_THAT(echo_.headers("hook", "x-tenant"), ElementsAre("blue"));
}

}  // namespace
}  // namespace stubkit

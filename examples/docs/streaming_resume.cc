// docs/streaming.md: a server stream that breaks, read with and without a
// resume hook. A complete program: it serves stubkit.testing.StreamService
// (protos/stubkit/testing/streams.proto) in-process on 127.0.0.1; the
// server's Range sends `count` items from `start` and, the first time only,
// fails with UNAVAILABLE after 3 of them, as a restarting server would.
#include <grpcpp/security/credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "stubkit/channel.h"
#include "stubkit/retry_options.h"
#include "stubkit/testing/streams.grpc.pb.h"
#include "stubkit/testing/streams.stubkit.h"

using stubkit::testing::Item;
using stubkit::testing::RangeRequest;
using stubkit::testing::StreamServiceClient;

class BreakingServer final : public stubkit::testing::StreamService::Service {
 public:
  grpc::Status Range(grpc::ServerContext*, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    for (int i = 0; i < request->count(); ++i) {
      if (i == 3 && breaks_left_.fetch_sub(1) > 0) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
      }
      Item item;
      item.set_value(request->start() + i);
      writer->Write(item);
    }
    return grpc::Status::OK;
  }
  std::atomic<int> breaks_left_{1};
};

// Reads the values 1..10 and prints them; returns the stream's status.
absl::Status ReadAll(StreamServiceClient& client) {
  RangeRequest request;
  request.set_start(1);
  request.set_count(10);
  stubkit::StreamReader<Item> reader = client.Range(request);
  Item item;
  while (reader.Read(&item)) std::cout << item.value() << " ";
  absl::Status status = reader.Finish();
  std::cout << "-> " << absl::StatusCodeToString(status.code())
            << " (attempts: " << reader.attempts() << ")\n";
  return status;
}

int main() {
  BreakingServer service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto channel = stubkit::CreateChannel("127.0.0.1:" + std::to_string(port),
                                        grpc::InsecureChannelCredentials());
  // Short waits between attempts, for the example's sake.
  stubkit::Options options =
      stubkit::Options{}.set<stubkit::BackoffPolicyOption>(
          stubkit::ExponentialBackoffPolicy()
              .WithInitialDelay(std::chrono::milliseconds(10))
              .WithMaximumDelay(std::chrono::milliseconds(100))
              .WithMultiplier(2.0));

  // Without a hook: the items before the break, then the break itself.
  StreamServiceClient plain(channel, options);
  const bool plain_broke = !ReadAll(plain).ok();  // 1 2 3 -> UNAVAILABLE

  // With a hook: the request is rewritten to continue after the last item
  // seen, and the reader goes on as if nothing happened. Each item is
  // delivered once.
  service.breaks_left_ = 1;
  StreamServiceClient resuming(
      channel,
      stubkit::Options(options).set<StreamServiceClient::RangeResumeOption>(
          [](const Item& last, RangeRequest& request) {
            const int next = last.value() + 1;
            request.set_count(request.start() + request.count() - next);
            request.set_start(next);
            return true;  // false: report the break instead
          }));
  const bool resumed = ReadAll(resuming).ok();  // 1 2 ... 10 -> OK

  server->Shutdown();
  return plain_broke && resumed ? 0 : 1;
}

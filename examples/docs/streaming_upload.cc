// docs/streaming.md: an async client stream whose first attempt fails after
// the server read every write. A complete program: it serves
// stubkit.testing.StreamService (protos/stubkit/testing/streams.proto)
// in-process on 127.0.0.1; the server's Sum adds up the items sent and, the
// first time only, answers UNAVAILABLE instead of the sum.
#include <grpcpp/security/credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "stubkit/channel.h"
#include "stubkit/retry_options.h"
#include "stubkit/testing/streams.grpc.pb.h"
#include "stubkit/testing/streams.stubkit.h"

using stubkit::testing::Item;
using stubkit::testing::StreamServiceClient;
using stubkit::testing::SumResponse;

class FlakySumServer final : public stubkit::testing::StreamService::Service {
 public:
  grpc::Status Sum(grpc::ServerContext*, grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    Item item;
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    if (failures_left_.fetch_sub(1) > 0) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
    }
    return grpc::Status::OK;
  }
  std::atomic<int> failures_left_{1};
};

int main() {
  FlakySumServer service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  StreamServiceClient client(
      stubkit::CreateChannel("127.0.0.1:" + std::to_string(port),
                             grpc::InsecureChannelCredentials()),
      // Short waits between attempts, for the example's sake.
      stubkit::Options{}.set<stubkit::BackoffPolicyOption>(
          stubkit::ExponentialBackoffPolicy()
              .WithInitialDelay(std::chrono::milliseconds(10))
              .WithMaximumDelay(std::chrono::milliseconds(100))
              .WithMultiplier(2.0)));

  // Adding up is safe to repeat, though the proto does not say so: the
  // call says it, and the writes are replayed on a new stream.
  std::promise<absl::StatusOr<SumResponse>> result;
  stubkit::AsyncStreamWriter<Item> sum = client.AsyncSum(
      [&result](absl::StatusOr<SumResponse> response) {
        result.set_value(std::move(response));  // once, on gRPC's thread
      },
      stubkit::Options{}.set<stubkit::IdempotencyOption>(
          stubkit::Idempotency::kIdempotent));
  for (int i = 1; i <= 5; ++i) {
    Item item;
    item.set_value(i);
    sum.Write(item);  // queued; returns at once
  }
  sum.WritesDone();

  absl::StatusOr<SumResponse> response = result.get_future().get();
  if (response.ok()) {
    std::cout << "sum " << response->sum() << " of " << response->count()
              << " items\n";  // sum 15 of 5 items: each write counted once
  } else {
    std::cout << response.status() << "\n";
  }
  server->Shutdown();
  return response.ok() && response->sum() == 15 ? 0 : 1;
}

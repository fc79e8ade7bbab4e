// A program built against an installed stubkit: it starts a Greeter server
// on 127.0.0.1 (a port the system picks) that fails the first attempt with
// UNAVAILABLE, then calls it through the generated stubkit client, which
// retries. Exits 0 when the reply comes from the second attempt.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "greeter/greeter.grpc.pb.h"
#include "greeter/greeter.stubkit.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"

namespace {

class FlakyGreeter final : public greeter::Greeter::Service {
 public:
  grpc::Status SayHello(grpc::ServerContext*,
                        const greeter::HelloRequest* request,
                        greeter::HelloReply* reply) override {
    const int attempt = ++attempts_;
    if (attempt == 1) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "warming up");
    }
    reply->set_message("Hello, " + request->name() + "!");
    reply->set_attempt(attempt);
    return grpc::Status::OK;
  }

 private:
  std::atomic<int> attempts_{0};
};

}  // namespace

int main() {
  using namespace std::chrono_literals;

  FlakyGreeter service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "could not start the server on 127.0.0.1\n");
    return 1;
  }

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  greeter::GreeterClient client(
      channel,
      stubkit::Options{}
          .set<stubkit::RetryPolicyOption>(
              stubkit::RetryPolicy::LimitedErrorCount(3))
          .set<stubkit::BackoffPolicyOption>(stubkit::ExponentialBackoffPolicy()
                                                 .WithInitialDelay(10ms)
                                                 .WithMaximumDelay(100ms)
                                                 .WithMultiplier(2.0)));

  greeter::HelloRequest request;
  request.set_name("stubkit");
  absl::StatusOr<greeter::HelloReply> reply = client.SayHello(request);
  server->Shutdown();

  if (!reply.ok()) {
    std::fprintf(stderr, "SayHello failed: %s\n",
                 reply.status().ToString().c_str());
    return 1;
  }
  std::printf("%s (attempt %d)\n", reply->message().c_str(), reply->attempt());
  return reply->attempt() == 2 ? 0 : 1;
}

// Copyright 2026 The stubkit Authors.
//
// The stubkit runtime around a hand-written call to a raw gRPC stub, against
// an embedded server on 127.0.0.1 that fails the first calls with
// UNAVAILABLE. Exits 0 when every call behaved as expected.
//
//   stubkit_runtime_demo [--failures=N]

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "stubkit/retry_loop.h"
#include "stubkit/testing/echo.grpc.pb.h"

namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using std::chrono::milliseconds;

constexpr stubkit::MethodInfo kEcho{"stubkit.testing.EchoService.Echo",
                                    stubkit::RpcKind::kUnary,
                                    stubkit::Idempotency::kIdempotent};
constexpr stubkit::MethodInfo kAppend{"stubkit.testing.EchoService.Append",
                                      stubkit::RpcKind::kUnary,
                                      stubkit::Idempotency::kNonIdempotent};

// Fails every call while `outage` is positive, counting it down.
class FlakyServer final : public EchoService::Service {
 public:
  std::atomic<int> outage{0};
  std::atomic<int> calls{0};

  grpc::Status Echo(grpc::ServerContext*, const EchoRequest* request,
                    EchoResponse* response) override {
    return Answer(request, response);
  }
  grpc::Status Append(grpc::ServerContext*, const EchoRequest* request,
                      EchoResponse* response) override {
    return Answer(request, response);
  }

 private:
  grpc::Status Answer(const EchoRequest* request, EchoResponse* response) {
    int call = ++calls;
    if (outage.fetch_sub(1) > 0) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server restarting");
    }
    response->set_message(request->message());
    response->set_attempt(call);
    return grpc::Status::OK;
  }
};

std::string Describe(const absl::Status& status) {
  // Code and message; ToString() would also print the payloads.
  return std::string(absl::StatusCodeToString(status.code())) + ": " +
         std::string(status.message());
}

absl::StatusOr<EchoResponse> Call(EchoService::Stub& stub,
                                  const stubkit::MethodInfo& method,
                                  const std::string& text,
                                  const stubkit::Options& client,
                                  const stubkit::Options& call = {}) {
  EchoRequest request;
  request.set_message(text);
  return stubkit::RetryLoop<EchoResponse>(
      method, stubkit::OptionsView(call, client),
      [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
        EchoResponse response;
        grpc::Status status = &method == &kEcho
                                  ? stub.Echo(&context, request, &response)
                                  : stub.Append(&context, request, &response);
        if (!status.ok()) return stubkit::FromGrpcStatus(status);
        return response;
      });
}

int Usage(const char* message) {
  std::fprintf(stderr, "error: %s\nusage: stubkit_runtime_demo [--failures=N]"
                       " (N from 0 to 5)\n", message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 3;
  for (int i = 1; i < argc; ++i) {
    const char* flag = "--failures=";
    if (std::strncmp(argv[i], flag, std::strlen(flag)) != 0) {
      return Usage((std::string("unknown argument ") + argv[i]).c_str());
    }
    if (!absl::SimpleAtoi(argv[i] + std::strlen(flag), &failures) ||
        failures < 0 || failures > 5) {
      return Usage("--failures takes a whole number from 0 to 5");
    }
  }

  FlakyServer service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return Usage("cannot start the server");
  auto stub = EchoService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));

  // Short waits so the demo takes well under a second.
  auto client = stubkit::Options{}.set<stubkit::BackoffPolicyOption>(
      stubkit::ExponentialBackoffPolicy(milliseconds(20), milliseconds(200),
                                        2.0));
  bool ok = true;

  service.outage = failures;
  service.calls = 0;
  auto echo = Call(*stub, kEcho, "hello", client);
  std::printf("Echo (idempotent), server down for %d calls: %s after %d "
              "attempts\n",
              failures, echo.ok() ? "OK" : Describe(echo.status()).c_str(),
              service.calls.load());
  ok = ok && echo.ok() && service.calls == failures + 1;

  service.outage = 1;
  service.calls = 0;
  auto append = Call(*stub, kAppend, "entry", client);
  std::printf("Append (not idempotent), server down: %s\n",
              Describe(append.status()).c_str());
  ok = ok && !append.ok() && service.calls == 1;

  service.outage = 100;
  service.calls = 0;
  auto limited = Call(*stub, kEcho, "hello", client,
                      stubkit::Options{}.set<stubkit::RetryPolicyOption>(
                          stubkit::LimitedErrorCountRetryPolicy(2)));
  std::printf("Echo with a per-call LimitedErrorCountRetryPolicy(2): %s\n",
              Describe(limited.status()).c_str());
  ok = ok && !limited.ok() && service.calls == 3;

  server->Shutdown();
  std::printf(ok ? "demo: all calls behaved as expected\n"
                 : "demo: UNEXPECTED RESULT\n");
  return ok ? 0 : 1;
}

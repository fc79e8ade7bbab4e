// Copyright 2026 The stubkit Authors.
//
// FlakyEchoService: a real gRPC service for integration tests that misbehaves
// as each request asks, and counts what it sees.
//
//   FlakyEchoService service;
//   TestServer server(&service);             // 127.0.0.1, picked port
//   auto stub = EchoService::NewStub(server.channel());
//   // request.fail_first = 2, fail_code = UNAVAILABLE: two failures, then OK
//   client.Echo(Request("message", 2));   // the same request, built
//   service.attempts("message")              // attempts seen for a message

#ifndef STUBKIT_TESTS_TESTING_FLAKY_ECHO_SERVICE_H_
#define STUBKIT_TESTS_TESTING_FLAKY_ECHO_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "stubkit/retry_options.h"
#include "stubkit/testing/echo.grpc.pb.h"

namespace stubkit {
namespace testing {

class FlakyEchoService final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    return Handle(context, request, response);
  }
  grpc::Status Append(grpc::ServerContext* context, const EchoRequest* request,
                      EchoResponse* response) override {
    return Handle(context, request, response);
  }

  int attempts(const std::string& message) {
    absl::MutexLock lock(&mu_);
    return attempts_[message];
  }
  int total_attempts() {
    absl::MutexLock lock(&mu_);
    int total = 0;
    for (const auto& [message, count] : attempts_) total += count;
    return total;
  }
  // Values of metadata `key` on each attempt for `message` ("-" if absent).
  std::vector<std::string> headers(const std::string& message,
                                   const std::string& key) {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> values;
    for (const auto& attempt : metadata_[message]) {
      auto it = attempt.find(key);
      values.push_back(it == attempt.end() ? "-" : it->second);
    }
    return values;
  }

  // The next `slow_attempts` attempts hang until the client gives up; the
  // server counts those it saw cancelled.
  std::atomic<int> slow_attempts{0};
  std::atomic<int> cancelled_attempts{0};
  // While true every call fails with UNAVAILABLE.
  std::atomic<bool> outage{false};

 private:
  grpc::Status Handle(grpc::ServerContext* context, const EchoRequest* request,
                      EchoResponse* response) {
    int attempt;
    {
      absl::MutexLock lock(&mu_);
      attempt = ++attempts_[request->message()];
      std::map<std::string, std::string> seen;
      for (const auto& [key, value] : context->client_metadata()) {
        seen[std::string(key.data(), key.size())] =
            std::string(value.data(), value.size());
      }
      metadata_[request->message()].push_back(std::move(seen));
    }
    if (outage.load()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "outage");
    }
    if (slow_attempts.load() > 0) {
      --slow_attempts;
      for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (context->IsCancelled()) ++cancelled_attempts;
      return grpc::Status(grpc::StatusCode::INTERNAL, "should not be seen");
    }
    if (attempt <= request->fail_first()) {
      if (!request->pushback_ms().empty()) {
        context->AddTrailingMetadata("grpc-retry-pushback-ms",
                                     request->pushback_ms());
      }
      auto code = request->fail_code() == 0
                      ? grpc::StatusCode::UNAVAILABLE
                      : static_cast<grpc::StatusCode>(request->fail_code());
      return grpc::Status(code, "injected failure " + std::to_string(attempt),
                          request->error_details());
    }
    response->set_message(request->message());
    response->set_attempt(attempt);
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  std::map<std::string, int> attempts_;
  std::map<std::string, std::vector<std::map<std::string, std::string>>>
      metadata_;
};

// A request for FlakyEchoService: `message` is echoed once `fail_first`
// attempts have failed with `code`.
inline EchoRequest Request(
    const std::string& message, int fail_first = 0,
    grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE) {
  EchoRequest request;
  request.set_message(message);
  request.set_fail_first(fail_first);
  request.set_fail_code(code);
  return request;
}

// An in-process gRPC server on 127.0.0.1 with a port the kernel picks.
class TestServer {
 public:
  explicit TestServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~TestServer() { Shutdown(); }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  }
  void Shutdown() {
    if (server_ != nullptr) server_->Shutdown();
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Stop() and Restart() on the same port: a server that goes away and comes
// back, for reconnect tests. The service outlives it.
class RestartableServer {
 public:
  explicit RestartableServer(grpc::Service* service) : service_(service) {
    Start("127.0.0.1:0");
  }
  ~RestartableServer() { Stop(); }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void Stop() {
    if (server_ == nullptr) return;
    server_->Shutdown();
    server_->Wait();
    server_.reset();
  }
  // Serves again on the same port.
  bool Restart() {
    const int port = port_;
    Start(address());
    return server_ != nullptr && port_ == port;
  }

 private:
  void Start(const std::string& address) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service_);
    server_ = builder.BuildAndStart();
  }

  grpc::Service* service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace testing
}  // namespace stubkit

#endif  // STUBKIT_TESTS_TESTING_FLAKY_ECHO_SERVICE_H_

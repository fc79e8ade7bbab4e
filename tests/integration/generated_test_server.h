// Copyright 2026 The stubkit Authors.
//
// An in-process gRPC server on 127.0.0.1 with a port picked by the kernel,
// for the tests of generated clients:
//
//   FlakyEchoService service;
//   stubkit::testing_util::TestServer server(&service);
//   stubkit::testing::EchoServiceClient client(server.Channel(), options);

#ifndef STUBKIT_TESTS_INTEGRATION_GENERATED_TEST_SERVER_H_
#define STUBKIT_TESTS_INTEGRATION_GENERATED_TEST_SERVER_H_

#include <memory>
#include <string>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

namespace stubkit {
namespace testing_util {

class TestServer {
 public:
  explicit TestServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~TestServer() {
    if (server_ != nullptr) server_->Shutdown();
  }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                               grpc::InsecureChannelCredentials());
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace testing_util
}  // namespace stubkit

#endif  // STUBKIT_TESTS_INTEGRATION_GENERATED_TEST_SERVER_H_

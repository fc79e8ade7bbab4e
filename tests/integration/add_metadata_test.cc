// Copyright 2026 The stubkit Authors.
//
// stubkit::AddMetadata against a real server: a legal pair is added to the
// context and reaches the server; an illegal key or value is refused with
// INVALID_ARGUMENT and not added. `grpc::ClientContext` has no public
// getter for what it will send, so the server's view is the evidence (and
// had a refused pair been added, gRPC would have aborted the process when
// the call started).

#include <gmock/gmock.h>
#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "stubkit/call_options.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::Request;
using ::stubkit::testing::TestServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AddMetadataTest : public ::testing::Test {
 protected:
  AddMetadataTest() : server_(&service_) {}

  // Sends `message` with `context` on a raw gRPC stub.
  grpc::Status Send(grpc::ClientContext& context, const std::string& message) {
    auto stub = EchoService::NewStub(server_.Channel());
    EchoResponse response;
    return stub->Echo(&context, Request(message), &response);
  }

  FlakyEchoService service_;
  TestServer server_;
};

TEST_F(AddMetadataTest, LegalPairsAreAddedAndSent) {
  ASSERT_TRUE(server_.ok());
  grpc::ClientContext context;
  EXPECT_TRUE(AddMetadata(context, "x-tenant", "blue").ok());
  EXPECT_TRUE(AddMetadata(context, "x_y.z-0", " ~printable ASCII~ ").ok());
  const std::string binary("\0\n\xff\x7f", 4);
  EXPECT_TRUE(AddMetadata(context, "trace-bin", binary).ok());
  grpc::Status sent = Send(context, "legal");
  ASSERT_TRUE(sent.ok()) << sent.error_message();
  EXPECT_THAT(service_.headers("legal", "x-tenant"), ElementsAre("blue"));
  EXPECT_THAT(service_.headers("legal", "x_y.z-0"),
              ElementsAre(" ~printable ASCII~ "));
  EXPECT_THAT(service_.headers("legal", "trace-bin"), ElementsAre(binary));
}

TEST_F(AddMetadataTest, IllegalKeysAndValuesAreRefusedAndNotAdded) {
  ASSERT_TRUE(server_.ok());
  grpc::ClientContext context;
  struct Case {
    std::string key;
    std::string value;
    std::string says;
  };
  for (const Case& c : {
           Case{"X-Tenant", "blue",
                "metadata key 'X-Tenant': keys may hold only lowercase"},
           Case{"x tenant", "blue", "keys may hold only lowercase"},
           Case{"", "blue", "metadata key must not be empty"},
           Case{"grpc-timeout", "1S", "the 'grpc-' prefix is reserved"},
           // ClientContext::set_compression_algorithm's own key: stubkit's
           // CompressionOption sets it.
           Case{GRPC_COMPRESSION_REQUEST_ALGORITHM_MD_KEY, "gzip",
                "the 'grpc-' prefix is reserved"},
           Case{"x-note", "a\nb",
                "metadata key 'x-note': its value holds byte 0x0a"},
           Case{"x-note", std::string("nul\0", 4), "holds byte 0x00"},
       }) {
    SCOPED_TRACE(c.key);
    absl::Status status = AddMetadata(context, c.key, c.value);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.says));
  }
  EXPECT_TRUE(AddMetadata(context, "x-tenant", "blue").ok());
  // gRPC would have aborted here on any refused pair had it been added.
  grpc::Status sent = Send(context, "illegal");
  ASSERT_TRUE(sent.ok()) << sent.error_message();
  EXPECT_THAT(service_.headers("illegal", "x-tenant"), ElementsAre("blue"));
  EXPECT_THAT(service_.headers("illegal", "x-note"), ElementsAre("-"));
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// The generator's model and its collision checks (src/generator/model.h),
// on protos parsed in memory. tests/generator/golden_test.cc runs the same
// refusals through protoc end to end.

#include "src/generator/model.h"

#include <gmock/gmock.h>
#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace stubkit {
namespace generator {
namespace {

using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::FileDescriptorProto;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ModelTest : public ::testing::Test {
 protected:
  // Parses `text` as the proto file `name` into a pool of its own. The
  // underlay supplies descriptor.proto, for options.
  const FileDescriptor* Parse(const std::string& text,
                              const std::string& name = "test/x.proto") {
    google::protobuf::io::ArrayInputStream input(text.data(),
                                                 static_cast<int>(text.size()));
    google::protobuf::io::Tokenizer tokenizer(&input, nullptr);
    google::protobuf::compiler::Parser parser;
    FileDescriptorProto proto;
    if (!parser.Parse(&tokenizer, &proto)) return nullptr;
    proto.set_name(name);
    pools_.push_back(
        std::make_unique<DescriptorPool>(DescriptorPool::generated_pool()));
    return pools_.back()->BuildFile(proto);
  }

  // The error BuildFileModel gives for `text`; "" when it accepts it.
  std::string Refusal(const std::string& text) {
    const FileDescriptor* file = Parse(text);
    if (file == nullptr) return "<does not parse>";
    FileModel model;
    std::string error;
    return BuildFileModel(file, &model, &error) ? "" : error;
  }

  std::vector<std::unique_ptr<DescriptorPool>> pools_;
};

constexpr char kMessages[] =
    "syntax = \"proto3\";\n"
    "package test.v1;\n"
    "message Req {}\n"
    "message Resp {}\n";

TEST_F(ModelTest, BuildsNamesTypesKindsAndComments) {
  const FileDescriptor* file =
      Parse(std::string(kMessages) +
            "message Outer { message Inner {} }\n"
            "// The service.\n"
            "service Svc {\n"
            "  // Gets.\n"
            "  //   Indented.\n"
            "  rpc Get(Req) returns (Resp) {\n"
            "    option idempotency_level = "
            "NO_SIDE_EFFECTS;\n"
            "  }\n"
            "  rpc Tail(Req) returns (stream Outer.Inner);\n"
            "  rpc Sum(stream Req) returns (Resp) {\n"
            "    option deprecated = true;\n"
            "  }\n"
            "  rpc Chat(stream Req) returns (stream Resp);\n"
            "}\n");
  ASSERT_NE(file, nullptr);
  FileModel model;
  std::string error;
  ASSERT_TRUE(BuildFileModel(file, &model, &error)) << error;
  EXPECT_EQ(model.stem, "test/x");
  EXPECT_EQ(model.package, "test.v1");
  ASSERT_EQ(model.services.size(), 1u);
  const ServiceModel& service = model.services[0];
  EXPECT_EQ(service.name, "Svc");
  EXPECT_EQ(service.full_name, "test.v1.Svc");
  EXPECT_EQ(service.grpc_class, "::test::v1::Svc");
  EXPECT_EQ(service.comment, "// The service.\n");
  ASSERT_EQ(service.methods.size(), 4u);
  const MethodModel& get = service.methods[0];
  EXPECT_EQ(get.kind, Kind::kUnary);
  EXPECT_TRUE(get.idempotent);
  EXPECT_FALSE(get.deprecated);
  EXPECT_EQ(get.request, "::test::v1::Req");
  EXPECT_EQ(get.comment, "// Gets.\n//   Indented.\n");
  EXPECT_EQ(service.methods[1].kind, Kind::kServerStreaming);
  EXPECT_EQ(service.methods[1].response, "::test::v1::Outer_Inner");
  EXPECT_FALSE(service.methods[1].idempotent);
  EXPECT_EQ(service.methods[2].kind, Kind::kClientStreaming);
  EXPECT_TRUE(service.methods[2].deprecated);
  EXPECT_EQ(service.methods[3].kind, Kind::kBidi);
}

TEST_F(ModelTest, AcceptsAnOrdinaryService) {
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc Get(Req) returns (Resp); "
                      "rpc AsyncGet(Resp) returns (Resp); }\n"),
              IsEmpty());
}

TEST_F(ModelTest, RefusesKeywordsInPackageServiceMethodAndMessage) {
  EXPECT_THAT(Refusal("syntax = \"proto3\"; package a.new.b;\n"),
              HasSubstr("package a.new.b contains the C++ keyword 'new'"));
  EXPECT_THAT(Refusal(std::string(kMessages) + "service union {}\n"),
              HasSubstr("the service name is a C++ keyword"));
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc delete(Req) returns (Resp); }\n"),
              HasSubstr("service test.v1.Svc, method delete: 'delete' is a "
                        "C++ keyword"));
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "message int { }\n"
                      "service Svc { rpc Get(int) returns (Resp); }\n"),
              HasSubstr("contains the C++ keyword 'int'"));
}

TEST_F(ModelTest, RefusesMethodsNamedLikeGeneratedMembers) {
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc async(Req) returns (Resp); }\n"),
              HasSubstr("collides with a member grpc_cpp_plugin generates"));
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc options_(Req) returns (Resp); }\n"),
              HasSubstr("collides with a name stubkit generates"));
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc SvcClient(Req) returns (Resp); }\n"),
              HasSubstr("collides with a name stubkit generates"));
}

TEST_F(ModelTest, RefusesGeneratedNamesClashingWithMessages) {
  EXPECT_THAT(Refusal(std::string(kMessages) + "message SvcConnection {}\n"
                                               "service Svc {}\n"),
              HasSubstr("stubkit generates 'SvcConnection' for this "
                        "service, which clashes with message "
                        "test.v1.SvcConnection"));
  EXPECT_THAT(Refusal(std::string(kMessages) + "message stubkit_mocks {}\n"
                                               "service Svc {}\n"),
              HasSubstr("namespace 'stubkit_mocks'"));
}

TEST_F(ModelTest, ClientMembersClashOnlyWithTheSameParameters) {
  // AsyncGet(Req) is also Get's async variant: the same parameters.
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc Get(Req) returns (Resp); "
                      "rpc AsyncGet(Req) returns (Resp); }\n"),
              HasSubstr("'AsyncGet' in SvcClient both as rpc AsyncGet and "
                        "as the asynchronous variant of rpc Get, with the "
                        "same parameters (const ::test::v1::Req&, const "
                        "::stubkit::Options&)"));
  // A streaming AsyncGet takes only the options: no clash.
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc Get(Req) returns (Resp); "
                      "rpc AsyncGet(stream Req) returns (Resp); }\n"),
              IsEmpty());
  // A type and a function never share a name, whatever the parameters.
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc AsyncTail(Req) returns (stream Resp); "
                      "rpc TailResumeOption(Req) returns (Resp); }\n"),
              HasSubstr("'AsyncTailResumeOption' in SvcClient both as the "
                        "asynchronous variant of rpc TailResumeOption and as "
                        "the resume option of rpc AsyncTail"));
}

TEST_F(ModelTest, RefusesGrpcPrivateMemberClashes) {
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc Get(Req) returns (Resp); "
                      "rpc GetRaw(Req) returns (Resp); }\n"),
              HasSubstr("grpc_cpp_plugin generates members named "
                        "AsyncGetRaw and PrepareAsyncGetRaw"));
  // Another request type: different parameters, no clash.
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc Get(Req) returns (Resp); "
                      "rpc GetRaw(Resp) returns (Resp); }\n"),
              IsEmpty());
  EXPECT_THAT(Refusal(std::string(kMessages) +
                      "service Svc { rpc Get(Req) returns (Resp); "
                      "rpc rpcmethod_Get_(Req) returns (Resp); }\n"),
              HasSubstr("collides with a member grpc_cpp_plugin generates "
                        "for rpc Get"));
}

}  // namespace
}  // namespace generator
}  // namespace stubkit

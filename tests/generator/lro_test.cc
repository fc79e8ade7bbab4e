// Copyright 2026 The stubkit Authors.
//
// Long-running operations in the generator (src/generator/lro.h): how
// operation_info is read and its type names resolved, on protos parsed in
// memory into one pool. tests/generator/golden_test.cc and compile_test.cc
// run the same through protoc.

#include "src/generator/lro.h"

#include <gmock/gmock.h>
#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <string>

#include "src/generator/convention.h"
#include "src/generator/model.h"
#include "src/generator/printer.h"

namespace stubkit {
namespace generator {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::FileDescriptorProto;
using ::testing::HasSubstr;

constexpr char kOperations[] = R"(
syntax = "proto3";
package google.longrunning;
import "google/protobuf/descriptor.proto";
extend google.protobuf.MethodOptions { OperationInfo operation_info = 1049; }
message Operation { string name = 1; }
message OperationInfo {
  string response_type = 1;
  string metadata_type = 2;
}
)";

class LroTest : public ::testing::Test {
 protected:
  LroTest() : pool_(DescriptorPool::generated_pool()) {
    Add("google/longrunning/operations.proto", kOperations);
    Add("a.proto", "syntax = 'proto3'; package a; message Foo {}");
    Add("a_v1.proto",
        "syntax = 'proto3'; package a.v1; import 'a.proto';"
        "message Foo {} message Bar {} message a {} enum Color { RED = 0; }");
    Add("a_v1_inner.proto",
        "syntax = 'proto3'; package a.v1.inner; import 'a_v1.proto';"
        "message X {}");
  }

  const FileDescriptor* Add(const std::string& name, const std::string& text) {
    google::protobuf::io::ArrayInputStream input(text.data(),
                                                 static_cast<int>(text.size()));
    google::protobuf::io::Tokenizer tokenizer(&input, nullptr);
    google::protobuf::compiler::Parser parser;
    FileDescriptorProto proto;
    if (!parser.Parse(&tokenizer, &proto)) return nullptr;
    proto.set_name(name);
    return pool_.BuildFile(proto);
  }

  // The full name `name` resolves to in `package`, or "error: ...".
  std::string Resolve(const std::string& package, const std::string& name) {
    std::string error;
    const Descriptor* found = ResolveMessageName(&pool_, package, name, &error);
    return found != nullptr ? found->full_name() : "error: " + error;
  }

  // BuildFileModel's verdict on a service in package a.v1 whose method M
  // has `options`; on success the awaiter's response type.
  std::string Model(
      const std::string& options,
      const std::string& returns = ".google.longrunning.Operation") {
    // Taken once: `++files_` and `files_` in one expression are unsequenced.
    const std::string n = std::to_string(++files_);
    const FileDescriptor* file =
        Add("svc" + n + ".proto",
            "syntax = 'proto3'; package a.v1.svc" + n +
                "; import 'google/longrunning/operations.proto';"
                "import 'a_v1.proto';"
                "service S { rpc M(.a.v1.Bar) returns (" +
                returns + ") { " + options + " } }");
    if (file == nullptr) return "<does not parse>";
    FileModel model;
    std::string error;
    if (!BuildFileModel(file, &model, &error)) return "refused: " + error;
    const LroInfo& lro = model.services[0].methods[0].lro;
    if (lro.present) return lro.response;
    return lro.not_generated.empty() ? "no awaiter"
                                     : "no awaiter: " + lro.not_generated;
  }

  DescriptorPool pool_;
  int files_ = 0;
};

TEST_F(LroTest, UnqualifiedNamesSearchThePackageThenEnclosingOnes) {
  EXPECT_EQ(Resolve("a.v1", "Foo"), "a.v1.Foo");
  EXPECT_EQ(Resolve("a.v1.inner", "Foo"), "a.v1.Foo");
  EXPECT_EQ(Resolve("a.v1.inner", "X"), "a.v1.inner.X");
  EXPECT_EQ(Resolve("a", "Foo"), "a.Foo");
}

TEST_F(LroTest, PartlyQualifiedNamesStopAtTheInnermostScopeOfTheirFirstPart) {
  EXPECT_EQ(Resolve("a.v1.inner", "v1.Bar"), "a.v1.Bar");
  // In a.v1, `a` is the message a.v1.a, so `a.Foo` means a.v1.a.Foo, which
  // does not exist: protoc does not go on to the package a.
  EXPECT_THAT(Resolve("a.v1", "a.Foo"),
              HasSubstr("resolves to a.v1.a.Foo (the innermost scope "
                        "defining 'a'), which is not a message"));
  EXPECT_EQ(Resolve("a.v1", "a.v1.Bar"),
            "error: resolves to a.v1.a.v1.Bar "
            "(the innermost scope defining 'a'), "
            "which is not a message");
}

TEST_F(LroTest, AbsoluteNamesAndErrors) {
  EXPECT_EQ(Resolve("a.v1", ".a.Foo"), "a.Foo");
  EXPECT_THAT(Resolve("a.v1", ".a.Missing"), HasSubstr("names no message"));
  EXPECT_THAT(Resolve("a.v1", "Missing"),
              HasSubstr("names no message in package 'a.v1' or an "
                        "enclosing one"));
  EXPECT_THAT(Resolve("a.v1", "Color"), HasSubstr("which is not a message"));
  EXPECT_THAT(Resolve("a.v1", ""), HasSubstr("is empty"));
}

TEST_F(LroTest, OperationInfoIsReadFromTheRawOptionBytes) {
  EXPECT_EQ(Model("option (google.longrunning.operation_info) = {"
                  "response_type: 'Foo' metadata_type: 'Bar' };"),
            "::a::v1::Foo");
  EXPECT_EQ(Model("option (google.longrunning.operation_info) = {"
                  "response_type: '.a.Foo' };"),
            "::a::Foo");
  // No operation_info, or not an Operation: a plain unary method.
  EXPECT_EQ(Model(""), "no awaiter");
  EXPECT_EQ(Model("option (google.longrunning.operation_info) = {"
                  "response_type: 'Foo' };",
                  ".a.v1.Foo"),
            "no awaiter");
}

// Real protos name types in files they do not import (operation_info is
// only strings to protoc): such a method keeps its plain unary form, and
// the header says why it has no awaiters.
TEST_F(LroTest, UnusableOperationInfoLeavesAPlainMethod) {
  EXPECT_EQ(Model("option (google.longrunning.operation_info) = {"
                  "metadata_type: 'Bar' };"),
            "no awaiter: its google.longrunning.operation_info has no "
            "response_type, so stubkit cannot tell what the operation "
            "returns");
  EXPECT_THAT(Model("option (google.longrunning.operation_info) = {"
                    "response_type: 'Nope' metadata_type: 'Bar' };"),
              HasSubstr("no awaiter: its google.longrunning.operation_info "
                        "response_type 'Nope' names no message"));
  // The metadata type is not used: one that resolves to nothing is fine.
  EXPECT_EQ(Model("option (google.longrunning.operation_info) = {"
                  "response_type: 'Foo' metadata_type: 'Nope' };"),
            "::a::v1::Foo");
}

// The proto's text is a value, never part of a template: a `$` in a
// response_type the generator cannot resolve is printed as is in the
// comment that says why there is no awaiter (it made protoc fail with
// "template variable ... is not defined").
TEST_F(LroTest, ADollarInTheResponseTypeIsPrintedAsIs) {
  const FileDescriptor* file =
      Add("dollar.proto",
          "syntax = 'proto3'; package a.v1.dollar;"
          "import 'google/longrunning/operations.proto'; import 'a_v1.proto';"
          "service S { rpc M(.a.v1.Bar) returns (.google.longrunning.Operation)"
          " { option (google.longrunning.operation_info) = {"
          " response_type: 'No$Such' }; } }");
  ASSERT_NE(file, nullptr);
  FileModel model;
  std::string error;
  ASSERT_TRUE(BuildFileModel(file, &model, &error)) << error;
  const MethodModel& method = model.services[0].methods[0];
  ASSERT_THAT(method.lro.not_generated, HasSubstr("No$Such"));
  Printer w;
  LroConvention()->PrintClientMethodDeclarations(w, model, model.services[0],
                                                 method);
  EXPECT_EQ(w.error(), "");
  EXPECT_THAT(w.Finish(), HasSubstr("No$Such"));
}

}  // namespace
}  // namespace generator
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// Which methods are paginated and what their items are
// (src/generator/pagination.h), and the routing parameters read from raw
// option bytes (src/generator/routing.h), on protos parsed in memory.

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/generator/pagination.h"
#include "src/generator/routing.h"

namespace stubkit {
namespace generator {
namespace {

using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::FileDescriptorProto;
using ::google::protobuf::MethodDescriptor;
using ::google::protobuf::UnknownFieldSet;

constexpr char kMessages[] = R"(
  syntax = "proto3";
  package p;
  message Item { string name = 1; }
  message Req { int32 page_size = 1; string page_token = 2; string parent = 3; }
  message MaxReq { int64 max_results = 1; string page_token = 2; }
  message NoSizeReq { string page_token = 2; }
  message StringSizeReq { string page_size = 1; string page_token = 2; }
  message Resp { repeated Item items = 1; string next_page_token = 2; }
  message Several { string next_page_token = 1; repeated string later = 9;
                    repeated Item first = 4; }
  message Map { map<int32, Item> entries = 1; string next_page_token = 2; }
  message NoItems { string next_page_token = 1; }
  message Keyword { repeated string class = 1; string next_page_token = 2; }
  message Nested { Req req = 1; int64 id = 2; bool flag = 3; }
)";

class ConventionsModelTest : public ::testing::Test {
 protected:
  // Parses `text`; `edit` may change the proto (options) before building.
  const FileDescriptor* Parse(
      const std::string& text,
      const std::function<void(FileDescriptorProto&)>& edit = nullptr) {
    google::protobuf::io::ArrayInputStream input(text.data(),
                                                 static_cast<int>(text.size()));
    google::protobuf::io::Tokenizer tokenizer(&input, nullptr);
    google::protobuf::compiler::Parser parser;
    FileDescriptorProto proto;
    if (!parser.Parse(&tokenizer, &proto)) return nullptr;
    proto.set_name("test/x.proto");
    if (edit) edit(proto);
    pools_.push_back(
        std::make_unique<DescriptorPool>(DescriptorPool::generated_pool()));
    return pools_.back()->BuildFile(proto);
  }

  PaginationModel Pagination(const std::string& rpc) {
    const FileDescriptor* file =
        Parse(std::string(kMessages) + "service S { " + rpc + " }");
    if (file == nullptr) return {};
    return DetectPagination(file->service(0)->method(0));
  }

  std::vector<std::unique_ptr<DescriptorPool>> pools_;
};

TEST_F(ConventionsModelTest, PaginatedMethods) {
  PaginationModel m = Pagination("rpc L(Req) returns (Resp);");
  EXPECT_TRUE(m.paginated);
  EXPECT_EQ(m.item_type, "::p::Item");
  EXPECT_EQ(m.items_field, "items");
  EXPECT_TRUE(Pagination("rpc L(MaxReq) returns (Resp);").paginated);
  m = Pagination("rpc L(Req) returns (Several);");
  EXPECT_EQ(m.item_type, "::p::Item");  // field 4, not 9
  EXPECT_EQ(m.items_field, "first");
  m = Pagination("rpc L(Req) returns (Map);");
  EXPECT_EQ(m.item_type, "::std::pair<::int32_t, ::p::Item>");
  m = Pagination("rpc L(Req) returns (Keyword);");
  EXPECT_EQ(m.item_type, "::std::string");
  EXPECT_EQ(m.items_field, "class_");
}

TEST_F(ConventionsModelTest, NearMissesAreNotPaginated) {
  EXPECT_FALSE(Pagination("rpc L(NoSizeReq) returns (Resp);").paginated);
  EXPECT_FALSE(Pagination("rpc L(StringSizeReq) returns (Resp);").paginated);
  EXPECT_FALSE(Pagination("rpc L(Req) returns (NoItems);").paginated);
  EXPECT_FALSE(Pagination("rpc L(Req) returns (Req);").paginated);
  EXPECT_FALSE(Pagination("rpc L(Req) returns (stream Resp);").paginated);
  EXPECT_FALSE(Pagination("rpc L(stream Req) returns (Resp);").paginated);
}

// Serialized length-delimited fields, as the annotations' bytes.
std::string Message(const std::vector<std::pair<int, std::string>>& fields) {
  UnknownFieldSet set;
  for (const auto& [number, bytes] : fields) {
    set.AddLengthDelimited(number, bytes);
  }
  std::string out;
  set.SerializeToString(&out);
  return out;
}

constexpr int kHttp = 72295728;
constexpr int kRouting = 72295729;

class RoutingModelTest : public ConventionsModelTest {
 protected:
  // BuildRoutingModel of `rpc M(Nested)` with these raw options.
  bool Build(const std::vector<std::pair<int, std::string>>& options,
             RoutingModel* model, std::string* error,
             const std::string& rpc = "rpc M(Nested) returns (Nested);") {
    const FileDescriptor* file =
        Parse(std::string(kMessages) + "service S { " + rpc + " }",
              [&](FileDescriptorProto& proto) {
                auto* fields = proto.mutable_service(0)
                                   ->mutable_method(0)
                                   ->mutable_options()
                                   ->mutable_unknown_fields();
                for (const auto& [number, bytes] : options) {
                  fields->AddLengthDelimited(number, bytes);
                }
              });
    if (file == nullptr) {
      *error = "<does not build>";
      return false;
    }
    return BuildRoutingModel(file->service(0)->method(0), model, error);
  }
};

TEST_F(RoutingModelTest, HttpVariablesOnceEachFromEveryPattern) {
  // get "/v1/{req.parent=a/*}/{id}/{flag}", custom path "{req.parent}/x",
  // an additional binding post "/v1/{id}:do".
  std::string rule =
      Message({{2, "/v1/{req.parent=a/*}/{id}/{flag}"},
               {8, Message({{1, "LIST"}, {2, "/{req.parent}/x"}})},
               {11, Message({{4, "/v1/{id}:do/{req.page_token}"}})}});
  RoutingModel model;
  std::string error;
  ASSERT_TRUE(Build({{kHttp, rule}}, &model, &error)) << error;
  std::vector<std::string> keys, getters;
  for (const RoutingParam& p : model.params) {
    keys.push_back(p.key);
    getters.push_back(p.getter);
    EXPECT_EQ(p.path_template, "");
  }
  // The bool `flag` has no text form in the header: left out.
  EXPECT_EQ(keys,
            (std::vector<std::string>{"req.parent", "id", "req.page_token"}));
  EXPECT_EQ(getters,
            (std::vector<std::string>{"request.req().parent()", "request.id()",
                                      "request.req().page_token()"}));
}

TEST_F(RoutingModelTest, RoutingAnnotationWinsAndEmptyMeansNone) {
  std::string http = Message({{2, "/v1/{req.parent=a/*}"}});
  std::string parameter =
      Message({{1, "req.parent"}, {2, "{project=projects/*}/**"}});
  RoutingModel model;
  std::string error;
  ASSERT_TRUE(Build({{kHttp, http}, {kRouting, Message({{2, parameter}})}},
                    &model, &error))
      << error;
  ASSERT_EQ(model.params.size(), 1u);
  EXPECT_EQ(model.params[0].key, "project");
  EXPECT_EQ(model.params[0].path_template, "{project=projects/*}/**");

  RoutingModel none;
  ASSERT_TRUE(Build({{kHttp, http}, {kRouting, ""}}, &none, &error)) << error;
  EXPECT_TRUE(none.params.empty());
}

TEST_F(RoutingModelTest, ClientStreamsAndUnannotatedMethodsGetNothing) {
  RoutingModel model;
  std::string error;
  ASSERT_TRUE(Build({{kHttp, Message({{2, "/{id}"}})}}, &model, &error,
                    "rpc M(stream Nested) returns (Nested);"));
  EXPECT_TRUE(model.params.empty());
  ASSERT_TRUE(Build({}, &model, &error));
  EXPECT_TRUE(model.params.empty());
}

TEST_F(RoutingModelTest, BrokenAnnotationsAreRefusedNamingTheMethod) {
  RoutingModel model;
  std::string error;
  EXPECT_FALSE(Build({{kRouting, Message({{2, Message({{1, "req"}})}})}},
                     &model, &error));
  EXPECT_NE(error.find("service p.S, method M: its google.api.routing "
                       "parameter names field 'req'"),
            std::string::npos)
      << error;
  EXPECT_FALSE(Build(
      {{kRouting, Message({{2, Message({{1, "req.parent"}, {2, "a/*"}})}})}},
      &model, &error));
  EXPECT_NE(error.find("exactly one named variable"), std::string::npos)
      << error;
  EXPECT_FALSE(Build({{kHttp, Message({{2, "/{nope}"}})}}, &model, &error));
  EXPECT_NE(error.find("its google.api.http path names 'nope'"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace generator
}  // namespace stubkit

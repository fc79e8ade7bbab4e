// Copyright 2026 The stubkit Authors.
//
// What protoc-gen-stubkit generates from, built and validated before any
// text is printed: a FileModel holds, per service and method, the names and
// types the printers need. BuildFileModel refuses a proto whose generated
// code would not compile, with a message naming the service and method.

#ifndef STUBKIT_SRC_GENERATOR_MODEL_H_
#define STUBKIT_SRC_GENERATOR_MODEL_H_

#include <google/protobuf/descriptor.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/generator/lro.h"
#include "src/generator/pagination.h"
#include "src/generator/routing.h"

namespace stubkit {
namespace generator {

enum class Kind { kUnary, kServerStreaming, kClientStreaming, kBidi };

struct MethodModel {
  std::string name;
  std::string full_name;
  Kind kind;
  bool idempotent;
  // Why the proto makes it idempotent (IdempotencyReason); "" when not.
  std::string idempotency_reason;
  bool deprecated;
  std::string request;   // "::pkg::Req"
  std::string response;  // "::pkg::Resp"
  std::string comment;   // "// ...\n" lines, possibly empty
  int index = 0;         // its position in the service, from 0
  // API conventions (AIP-158, AIP-4222): pagination.h, routing.h.
  PaginationModel pagination;
  RoutingModel routing;
  LroInfo lro;  // long-running operations (lro.h)
};

struct ServiceModel {
  std::string name;
  std::string full_name;
  std::string grpc_class;  // "::pkg::Svc"
  std::string comment;     // "// ...\n" lines, possibly empty
  std::vector<MethodModel> methods;
};

struct FileModel {
  std::string proto_name;  // "foo/bar.proto"
  std::string stem;        // "foo/bar"
  std::string package;     // "foo.v1"
  std::vector<ServiceModel> services;
};

// Builds the model of `file`; false with `*error` when stubkit cannot
// generate compiling code for it.
// `protoc_release`: the protobuf release of the protoc that generates the
// .pb.h files (see ProtobufFieldName).
bool BuildFileModel(const google::protobuf::FileDescriptor* file,
                    FileModel* model, std::string* error,
                    int protoc_release = kDefaultProtocRelease);

// True when the proto marks `method` idempotent: `idempotency_level =
// IDEMPOTENT` or `NO_SIDE_EFFECTS`, or a `google.api.http` rule whose
// pattern is `get` or `put`.
bool IsIdempotentByProto(const google::protobuf::MethodDescriptor* method);

// Which of those marks it, for comments: "idempotency_level =
// NO_SIDE_EFFECTS", "its google.api.http get binding", ...; "" when none.
std::string IdempotencyReason(const google::protobuf::MethodDescriptor* method);

// Every identifier protobuf and gRPC put at the namespace scope of
// `package`, from `file` and the files it imports, mapped to a description
// for error messages ("message foo.Bar").
void CollectPackageSymbols(
    const google::protobuf::FileDescriptor* file, const std::string& package,
    std::set<const google::protobuf::FileDescriptor*>* seen,
    std::map<std::string, std::string>* symbols);

// "" or why `message` cannot be an RPC type.
std::string CheckMessageType(const google::protobuf::Descriptor* message);

// "" or the error naming the later of two methods whose generated members
// of SClient C++ cannot tell apart.
std::string CheckClientMembers(
    const google::protobuf::ServiceDescriptor* service,
    const ServiceModel& model);

// "" or the error naming a method whose grpc_cpp_plugin output does not
// compile because of another method's generated private members.
std::string CheckGrpcPrivateMembers(
    const google::protobuf::ServiceDescriptor* service);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_MODEL_H_

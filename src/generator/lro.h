// Copyright 2026 The stubkit Authors.
//
// Long-running operations (AIP-151) in protoc-gen-stubkit: a unary method
// that returns google.longrunning.Operation and declares
// `google.longrunning.operation_info` gets, in SClient,
//
//   AwaitM(request, call)           -> absl::StatusOr<Response>
//   AsyncAwaitM(request, call)      -> std::future<absl::StatusOr<Response>>
//   AwaitMByName(name, call)        -> absl::StatusOr<Response>
//   AsyncAwaitMByName(name, call)   -> std::future<...>
//
// and the client holds a google::longrunning::OperationsClient on the same
// channel (SClient::OperationsConnectionOption for a client built from a
// connection). The runtime side is stubkit/internal/entry/operation_poller.h;
// the unit in the printers is LroConvention() (convention.h).
//
// The printers call the Print* hooks below; model.cc calls BuildLroInfo and
// adds LroClientMembers to its collision check.

#ifndef STUBKIT_SRC_GENERATOR_LRO_H_
#define STUBKIT_SRC_GENERATOR_LRO_H_

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

namespace stubkit {
namespace generator {

struct MethodModel;

// What a method's operation_info resolved to.
struct LroInfo {
  bool present = false;
  std::string response;            // "::pkg::Resp"
  std::string response_full_name;  // "pkg.Resp"
  // Why a method with operation_info gets no awaiters (its response_type is
  // missing, or names no message this file can see); printed as a comment
  // where they would be. "" otherwise.
  std::string not_generated;
};

// google/longrunning/operations.proto: `extend MethodOptions {
// OperationInfo operation_info = 1049; }`, OperationInfo response_type = 1,
// metadata_type = 2. Read from the raw option bytes, as the http rule is.
constexpr int kOperationInfoExtensionNumber = 1049;
constexpr int kOperationInfoResponseType = 1;
constexpr int kOperationInfoMetadataType = 2;
inline constexpr char kOperationFullName[] = "google.longrunning.Operation";

// Fills `*info` for `method`. `present` stays false for a method without
// operation_info, or one that is not a unary method returning
// google.longrunning.Operation; and for one whose response_type is missing
// or resolves to no usable message, with the reason in `not_generated`.
// Real protos do that (googleapis names types defined in files it does not
// import: operation_info is only strings to protoc), and such a method was
// a plain unary method before awaiters existed, so it stays one instead of
// failing the whole file. metadata_type is not used (the awaiters return
// the response only), so it is not resolved. Returns "" (kept for callers
// that add the service and method to a reason).
std::string BuildLroInfo(const google::protobuf::MethodDescriptor* method,
                         LroInfo* info);

// Resolves a type name from operation_info as protoc resolves a type name
// written in `package`: a leading '.' makes it absolute; otherwise the
// first component is looked up in `package`, then each enclosing package
// out to the root, and the innermost scope that defines it must hold the
// whole name. Null with `*error` when it names no message.
const google::protobuf::Descriptor* ResolveMessageName(
    const google::protobuf::DescriptorPool* pool, const std::string& package,
    const std::string& name, std::string* error);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_LRO_H_

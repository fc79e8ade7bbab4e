// Copyright 2026 The stubkit Authors.
//
// An API convention as one unit: how it finds itself in a proto, what it
// refuses, and what it adds at each place of the generated code. The model
// and the printers know no convention by name; they call every unit of
// `Conventions()` at each hook, in that order:
//
//   for (const Convention* convention : Conventions()) {
//     convention->PrintBeforeAttempt(w, vars, method);
//   }
//
// The units today: pagination (AIP-158, pagination.cc), routing headers
// (AIP-4222, routing.cc) and long-running operations (AIP-151, lro.cc).
// A fourth is one class deriving from `Convention` that overrides the hooks
// it needs, plus one line in conventions.cc; ARCHITECTURE.md walks through
// it. A convention's per-method data lives in its own struct in
// MethodModel (model.h), which its unit fills in `BuildMethod`.

#ifndef STUBKIT_SRC_GENERATOR_CONVENTION_H_
#define STUBKIT_SRC_GENERATOR_CONVENTION_H_

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

#include "src/generator/printer.h"

namespace stubkit {
namespace generator {

struct FileModel;
struct MethodModel;
struct ServiceModel;

// A name a generated client declares, for the clash check (model.cc): two
// members of one name from different methods, or any reuse of a type or
// data member, fail the file with both named.
struct ClientMember {
  std::string name;
  bool function;       // false: a type or data member; any reuse clashes
  std::string params;  // functions: the parameter types
  int method;          // the method it comes from; -1 for fixed names
  std::string what;    // for the error message
};

// The includes of a generated file: <standard> and "project" headers.
struct Includes {
  std::vector<std::string> standard;
  std::vector<std::string> project;
};

class Convention {
 public:
  virtual ~Convention() = default;

  // --- The model (model.cc).
  // Fills the convention's part of `model` from `method`, or returns why
  // the file cannot be generated ("" when it can).
  virtual std::string BuildMethod(
      const google::protobuf::MethodDescriptor* /*method*/,
      int /*protoc_release*/, MethodModel& /*model*/) const {
    return "";
  }
  // After every method is built: a refusal that needs the whole service.
  virtual std::string CheckService(
      const google::protobuf::ServiceDescriptor* /*service*/,
      const ServiceModel& /*model*/) const {
    return "";
  }
  // The client members the convention adds, for the clash check.
  virtual void AddClientMembers(const ServiceModel& /*service*/,
                                std::vector<ClientMember>& /*members*/) const {}

  // --- Includes (stubkit_generator.cc).
  virtual void AddHeaderIncludes(const FileModel& /*file*/,
                                 Includes& /*includes*/) const {}
  virtual void AddSourceIncludes(const FileModel& /*file*/,
                                 Includes& /*includes*/) const {}

  // --- SClient in the header (client_printer.cc), in this order.
  // Option types, after the client's own.
  virtual void PrintClientOptions(Printer& /*w*/, const FileModel& /*file*/,
                                  const ServiceModel& /*service*/) const {}
  // After the declarations of `method`.
  virtual void PrintClientMethodDeclarations(
      Printer& /*w*/, const FileModel& /*file*/,
      const ServiceModel& /*service*/, const MethodModel& /*method*/) const {}
  // After every method's declarations.
  virtual void PrintClientDeclarations(Printer& /*w*/,
                                       const FileModel& /*file*/,
                                       const ServiceModel& /*service*/) const {}
  // Data members, after the client's own.
  virtual void PrintClientMembers(Printer& /*w*/,
                                  const ServiceModel& /*service*/) const {}

  // --- SClient in the source (client_printer.cc).
  // Whether the constructor over a channel still reads `channel` after it
  // made the connection (in `PrintConstructorTail`).
  virtual bool KeepsChannel(const ServiceModel& /*service*/) const {
    return false;
  }
  // At the end of each constructor's body (`from_channel`: the one over a
  // channel).
  virtual void PrintConstructorTail(Printer& /*w*/,
                                    const ServiceModel& /*service*/,
                                    bool /*from_channel*/) const {}
  // After the definitions of `method`.
  virtual void PrintClientMethodDefinitions(
      Printer& /*w*/, const FileModel& /*file*/,
      const ServiceModel& /*service*/, const MethodModel& /*method*/) const {}
  // After every method's definitions.
  virtual void PrintClientDefinitions(Printer& /*w*/, const FileModel& /*file*/,
                                      const ServiceModel& /*service*/) const {}

  // --- The gRPC stub in the source (stub_printer.cc). `vars` are the
  // method's (MethodVars).
  // File-local helpers, before the stub's class.
  virtual void PrintStubHelpers(Printer& /*w*/, const Printer::Vars& /*vars*/,
                                const MethodModel& /*method*/) const {}
  // In the stub's sync and async methods, before grpc_cpp_plugin's call.
  virtual void PrintBeforeAttempt(Printer& /*w*/, const Printer::Vars& /*vars*/,
                                  const MethodModel& /*method*/) const {}
};

struct Signature;

// The member `signature` declares in SClient for `method` ("AwaitGet"),
// with its parameter types, for the clash check; `what` names it in an
// error ("the awaiter of rpc Get").
ClientMember ClientMemberOf(const Signature& signature,
                            const MethodModel& method, const std::string& what);

// Every convention, in the order their additions are printed.
const std::vector<const Convention*>& Conventions();

// The units (conventions.cc lists them).
const Convention* PaginationConvention();
const Convention* RoutingConvention();
const Convention* LroConvention();

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_CONVENTION_H_

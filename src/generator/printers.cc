// Copyright 2026 The stubkit Authors.
//
// What the layer printers share.

#include "src/generator/printers.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "src/generator/names.h"

namespace stubkit {
namespace generator {
namespace {

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kUnary:
      return "::stubkit::RpcKind::kUnary";
    case Kind::kServerStreaming:
      return "::stubkit::RpcKind::kServerStreaming";
    case Kind::kClientStreaming:
      return "::stubkit::RpcKind::kClientStreaming";
    case Kind::kBidi:
      return "::stubkit::RpcKind::kBidiStreaming";
  }
  return "";
}

}  // namespace

Printer::Vars ServiceVars(const FileModel& file, const ServiceModel& service) {
  return {{"Service", service.name},
          {"package", PackageToNamespace(file.package)},
          {"mocks", kMockNamespace},
          {"file", file.proto_name},
          {"service_full_name", service.full_name},
          {"grpc_class", service.grpc_class}};
}

Printer::Vars MethodVars(const FileModel& file, const ServiceModel& service,
                         const MethodModel& method) {
  Printer::Vars vars = ServiceVars(file, service);
  vars["Method"] = method.name;
  vars["method_full_name"] = method.full_name;
  vars["Request"] = method.request;
  vars["Response"] = method.response;
  vars["kind"] = KindName(method.kind);
  vars["method_index"] = absl::StrCat(method.index);
  // The source's function that reads its routing header from a request
  // (routing.h); the service in its name keeps two services' apart.
  vars["routing_params"] =
      absl::StrCat(service.name, method.name, "RoutingParams");
  vars["idempotency"] = method.idempotent
                            ? "::stubkit::Idempotency::kIdempotent"
                            : "::stubkit::Idempotency::kNonIdempotent";
  return vars;
}

void PrintMember(Printer& w, const Printer::Vars& vars,
                 const std::string& text) {
  w.Indent();
  w.Print(vars, text);
  w.Outdent();
}

void PrintInterface(Printer& w, const FileModel& file,
                    const ServiceModel& service, const std::string& class_name,
                    Layer layer) {
  Printer::Vars vars = ServiceVars(file, service);
  vars["interface"] = class_name;
  w.Print(vars,
          "class $interface$ {\n"
          " public:\n"
          "  virtual ~$interface$() = default;\n");
  for (const MethodModel& method : service.methods) {
    const Printer::Vars mv = MethodVars(file, service, method);
    w.Print("\n");
    for (const Signature* signature : SignaturesFor(layer, method.kind)) {
      w.Print(SignatureVars(w, mv, *signature),
              "  virtual $declaration$ = 0;\n");
    }
  }
  w.Print("};\n\n");
}

void PrintDeprecated(Printer& w, const Printer::Vars& vars,
                     const MethodModel& method) {
  if (!method.deprecated) return;
  PrintMember(w, vars,
              "[[deprecated(\"$method_full_name$ is deprecated in "
              "$file$\")]]\n");
}

}  // namespace generator
}  // namespace stubkit

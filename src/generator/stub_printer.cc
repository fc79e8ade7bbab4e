// Copyright 2026 The stubkit Authors.
//
// The stub layer: SMethods (each method's static description), SStub (one
// attempt, the interface decorators implement), SStubDecorator (forwards
// to the stub below) and, in the source only, SGrpcStub (calls
// grpc_cpp_plugin's stub; MakeSGrpcStub in the header).

#include <string>

#include "src/generator/convention.h"
#include "src/generator/printers.h"

namespace stubkit {
namespace generator {
namespace {

// The gRPC stub ignores the options: the layers above applied them.
const Unnamed& kUnusedOptions = *new Unnamed{"options"};

// The gRPC stub reads the options only for the routing header (routing.h).
const Unnamed& UnusedOptions(const MethodModel& method) {
  static const Unnamed& kNone = *new Unnamed{};
  return method.routing.params.empty() ? kUnusedOptions : kNone;
}

// Every SStub method (and its async variant) as an override: the decorator
// base and the gRPC stub implement the same set.
void PrintStubOverrides(Printer& w, const FileModel& file,
                        const ServiceModel& service) {
  for (const MethodModel& method : service.methods) {
    const Printer::Vars vars = MethodVars(file, service, method);
    w.Print("\n");
    for (const Signature* signature :
         SignaturesFor(Layer::kStub, method.kind)) {
      w.Print(SignatureVars(w, vars, *signature),
              "  $declaration$ override;\n");
    }
  }
}

// The decorator's M and AsyncM: forward to the stub below.
void PrintDecoratorDefinitions(Printer& w, const Printer::Vars& mv,
                               const MethodModel& method) {
  w.Print(SignatureVars(
              w, mv, *FindSignature(Layer::kStub, method.kind, Variant::kSync),
              "$Service$StubDecorator"),
          "$definition$ {\n"
          "  return child_->$Method$($arguments$);\n"
          "}\n\n");
  const Printer::Vars async = SignatureVars(
      w, mv, *FindSignature(Layer::kStub, method.kind, Variant::kAsync),
      "$Service$StubDecorator");
  if (method.kind == Kind::kUnary) {
    w.Print(async,
            "$definition$ {\n"
            "  child_->Async$Method$(context, options, request, "
            "::std::move(done));\n"
            "}\n\n");
    return;
  }
  w.Print(async,
          "$definition$ {\n"
          "  return child_->Async$Method$($arguments$);\n"
          "}\n\n");
}

// The gRPC stub's AsyncM: grpc_cpp_plugin's callback API.
void PrintGrpcStubAsyncDefinition(Printer& w, const Printer::Vars& mv,
                                  const MethodModel& method) {
  const Printer::Vars async = SignatureVars(
      w, mv, *FindSignature(Layer::kStub, method.kind, Variant::kAsync),
      "$Service$GrpcStub", UnusedOptions(method));
  if (method.kind == Kind::kUnary) {
    w.Print(async,
            "$definition$ {\n"
            "  auto* async = grpc_stub_->async();\n"
            "  if (async == nullptr) {\n"
            "    done(::stubkit::internal::NoAsyncStubError("
            "\"$method_full_name$\"));\n"
            "    return;\n"
            "  }\n");
    for (const Convention* convention : Conventions()) {
      convention->PrintBeforeAttempt(w, mv, method);
    }
    w.Print(mv,
            "  ::stubkit::internal::StartAsyncUnary<$Response$>(\n"
            "      [&](auto* response, auto on_done) {\n"
            "        async->$Method$(&context, &request, response, "
            "::std::move(on_done));\n"
            "      },\n"
            "      ::std::move(done));\n"
            "}\n\n");
    return;
  }
  w.Print(async,
          "$definition$ {\n"
          "  auto* async = grpc_stub_->async();\n"
          "  if (async == nullptr) {\n"
          "    return ::stubkit::internal::NoAsyncStubError("
          "\"$method_full_name$\");\n"
          "  }\n");
  for (const Convention* convention : Conventions()) {
    convention->PrintBeforeAttempt(w, mv, method);
  }
  switch (method.kind) {
    case Kind::kServerStreaming:
      w.Print(mv, "  async->$Method$(&context, &request, reactor);\n");
      break;
    case Kind::kClientStreaming:
      w.Print(mv, "  async->$Method$(&context, response, reactor);\n");
      break;
    case Kind::kBidi:
      w.Print(mv, "  async->$Method$(&context, reactor);\n");
      break;
    case Kind::kUnary:  // above
      break;
  }
  w.Print(
      "  return ::absl::OkStatus();\n"
      "}\n\n");
}

// The gRPC stub's M: calls grpc_cpp_plugin's.
void PrintGrpcStubDefinition(Printer& w, const Printer::Vars& mv,
                             const MethodModel& method) {
  w.Print(SignatureVars(
              w, mv, *FindSignature(Layer::kStub, method.kind, Variant::kSync),
              "$Service$GrpcStub", UnusedOptions(method)),
          "$definition$ {\n");
  for (const Convention* convention : Conventions()) {
    convention->PrintBeforeAttempt(w, mv, method);
  }
  switch (method.kind) {
    case Kind::kUnary:
      w.Print(mv,
              "  $Response$ response;\n"
              "  return ::stubkit::internal::ToStatusOr("
              "grpc_stub_->$Method$(&context, request, &response), "
              "::std::move(response));\n");
      break;
    case Kind::kServerStreaming:
      w.Print(mv, "  return grpc_stub_->$Method$(&context, request);\n");
      break;
    case Kind::kClientStreaming:
      w.Print(mv, "  return grpc_stub_->$Method$(&context, response);\n");
      break;
    case Kind::kBidi:
      w.Print(mv, "  return grpc_stub_->$Method$(&context);\n");
      break;
  }
  w.Print("}\n\n");
}

}  // namespace

void PrintStubHeader(Printer& w, const FileModel& file,
                     const ServiceModel& service) {
  const Printer::Vars vars = ServiceVars(file, service);
  w.PrintComment(vars,
                 "The static description of each $service_full_name$ "
                 "method, handed to the stubkit runtime.");
  w.Print(vars, "struct $Service$Methods {\n");
  for (const MethodModel& method : service.methods) {
    w.Print(
        MethodVars(file, service, method),
        "  static constexpr ::stubkit::MethodInfo k$Method${"
        "\"$method_full_name$\", $kind$, $idempotency$, $method_index$};\n");
  }
  w.Print("};\n\n");

  // The per-attempt interface.
  w.PrintComment(vars,
                 "One attempt of each $service_full_name$ RPC. Implemented "
                 "by the gRPC stub (Make$Service$GrpcStub) and by "
                 "decorators; derive from $Service$StubDecorator to add a "
                 "layer.");
  PrintInterface(w, file, service, vars.at("Service") + "Stub", Layer::kStub);

  // The forwarding base.
  w.Print(vars,
          "// Forwards every method to the stub below it. Override what you "
          "need.\n"
          "class $Service$StubDecorator : public $Service$Stub {\n"
          " public:\n");
  w.Print(vars,
          "  explicit $Service$StubDecorator("
          "::std::shared_ptr<$Service$Stub> child)\n"
          "      : child_(::std::move(child)) {}\n");
  PrintStubOverrides(w, file, service);
  w.Print(vars,
          "\n"
          " protected:\n"
          "  const ::std::shared_ptr<$Service$Stub>& child() const { return "
          "child_; }\n"
          "\n"
          " private:\n"
          "  ::std::shared_ptr<$Service$Stub> child_;\n"
          "};\n\n");

  // The bottom; its class is in the source.
  w.Print(vars,
          "// The stub at the bottom of every stack: calls grpc_cpp_plugin's "
          "stub (or a mock of its StubInterface).\n"
          "::std::shared_ptr<$Service$Stub> Make$Service$GrpcStub("
          "::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub);\n\n");
}

void PrintStubSource(Printer& w, const FileModel& file,
                     const ServiceModel& service) {
  const Printer::Vars vars = ServiceVars(file, service);
  // The decorator base: every method forwards.
  for (const MethodModel& method : service.methods) {
    PrintDecoratorDefinitions(w, MethodVars(file, service, method), method);
  }
  // The gRPC stub: what conventions add before an attempt (the routing
  // header), then grpc_cpp_plugin's call.
  w.Print("namespace {\n\n");
  for (const MethodModel& method : service.methods) {
    const Printer::Vars mv = MethodVars(file, service, method);
    for (const Convention* convention : Conventions()) {
      convention->PrintStubHelpers(w, mv, method);
    }
  }
  w.Print(vars,
          "class $Service$GrpcStub : public $Service$Stub {\n"
          " public:\n"
          "  explicit $Service$GrpcStub("
          "::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub)\n"
          "      : grpc_stub_(::std::move(grpc_stub)) {}\n");
  PrintStubOverrides(w, file, service);
  w.Print(vars,
          "\n"
          " private:\n"
          "  ::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub_;\n"
          "};\n\n"
          "}  // namespace\n\n");
  for (const MethodModel& method : service.methods) {
    const Printer::Vars mv = MethodVars(file, service, method);
    PrintGrpcStubDefinition(w, mv, method);
    PrintGrpcStubAsyncDefinition(w, mv, method);
  }
  w.Print(vars,
          "::std::shared_ptr<$Service$Stub> Make$Service$GrpcStub("
          "::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub) {\n"
          "  return ::std::make_shared<$Service$GrpcStub>("
          "::std::move(grpc_stub));\n"
          "}\n\n");
}

}  // namespace generator
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.

#include "src/generator/stubkit_generator.h"

#include <google/protobuf/io/zero_copy_stream.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "src/generator/model.h"
#include "src/generator/names.h"
#include "src/generator/printer.h"

namespace stubkit {
namespace generator {
namespace {

using google::protobuf::FileDescriptor;
using google::protobuf::compiler::GeneratorContext;

std::string KindName(Kind kind) {
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

class FileGenerator {
 public:
  explicit FileGenerator(const FileModel& file) : file_(file) {}

  void Header(Printer& w) const;
  void Source(Printer& w) const;
  void Mock(Printer& w) const;

 private:
  void OpenNamespace(Printer& w) const;
  void CloseNamespace(Printer& w) const;
  Printer::Vars Vars(const ServiceModel& service) const;
  Printer::Vars Vars(const ServiceModel& service,
                     const MethodModel& method) const;

  void EmitStubOverrides(Printer& w, const ServiceModel& service) const;
  void HeaderService(Printer& w, const ServiceModel& service) const;
  void SourceService(Printer& w, const ServiceModel& service) const;
  void MockService(Printer& w, const ServiceModel& service) const;

  const FileModel& file_;
};

void FileGenerator::OpenNamespace(Printer& w) const {
  for (const std::string& part : PackageParts(file_.package)) {
    w.Print({{"ns", part}}, "namespace $ns$ {\n");
  }
  if (!file_.package.empty()) w.Print("\n");
}

void FileGenerator::CloseNamespace(Printer& w) const {
  std::vector<std::string> parts = PackageParts(file_.package);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    w.Print({{"ns", *it}}, "}  // namespace $ns$\n");
  }
}

Printer::Vars FileGenerator::Vars(const ServiceModel& service) const {
  return {{"Service", service.name},
          {"package", PackageToNamespace(file_.package)},
          {"mocks", kMockNamespace},
          {"service_full_name", service.full_name},
          {"grpc_class", service.grpc_class}};
}

Printer::Vars FileGenerator::Vars(const ServiceModel& service,
                                  const MethodModel& method) const {
  Printer::Vars vars = Vars(service);
  vars["Method"] = method.name;
  vars["method_full_name"] = method.full_name;
  vars["Request"] = method.request;
  vars["Response"] = method.response;
  vars["kind"] = KindName(method.kind);
  vars["idempotency"] = method.idempotent
                            ? "::stubkit::Idempotency::kIdempotent"
                            : "::stubkit::Idempotency::kNonIdempotent";
  vars["comment"] = method.comment;
  // Opens the gRPC stub's refusal of an attempt whose outgoing metadata (as
  // a decorator left it) gRPC would abort the process on; the caller
  // completes the block. Allocates nothing when the metadata is legal.
  vars["check_metadata"] = absl::StrCat(
      "  if (::absl::Status refused =\n"
      "          ::stubkit::internal::ValidateOutgoingMetadata(\n"
      "              context, \"",
      method.full_name,
      "\");\n"
      "      !refused.ok()) {\n");
  vars["deprecated"] =
      method.deprecated
          ? absl::StrCat("  [[deprecated(\"", method.full_name,
                         " is deprecated in ", file_.proto_name, "\")]]\n")
          : "";
  return vars;
}

// Per-kind signatures of the stub, connection and client methods.
struct Signatures {
  const char* stub;        // SStub::M: returns, params
  const char* connection;  // SConnection::M
  const char* client;      // SClient::M, declaration (with default)
  const char* client_def;  // SClient::M, definition
};

Signatures SignaturesFor(Kind kind) {
  switch (kind) {
    case Kind::kUnary:
      return {
          "::absl::StatusOr<$Response$> $Method$(\n"
          "      ::grpc::ClientContext& context,\n"
          "      const ::stubkit::OptionsView& options,\n"
          "      const $Request$& request)",
          "::absl::StatusOr<$Response$> $Method$(\n"
          "      const ::stubkit::OptionsView& options,\n"
          "      const $Request$& request)",
          "::absl::StatusOr<$Response$> $Method$(\n"
          "      const $Request$& request,\n"
          "      const ::stubkit::Options& call = {})",
          "::absl::StatusOr<$Response$> $Service$Client::$Method$(\n"
          "    const $Request$& request, const ::stubkit::Options& call)"};
    case Kind::kServerStreaming:
      return {
          "::std::unique_ptr<::grpc::ClientReaderInterface<$Response$>> "
          "$Method$(\n"
          "      ::grpc::ClientContext& context,\n"
          "      const ::stubkit::OptionsView& options,\n"
          "      const $Request$& request)",
          "::stubkit::StreamReader<$Response$> $Method$(\n"
          "      const ::stubkit::OptionsView& options,\n"
          "      const $Request$& request)",
          "::stubkit::StreamReader<$Response$> $Method$(\n"
          "      const $Request$& request,\n"
          "      const ::stubkit::Options& call = {})",
          "::stubkit::StreamReader<$Response$> $Service$Client::$Method$(\n"
          "    const $Request$& request, const ::stubkit::Options& call)"};
    case Kind::kClientStreaming:
      return {
          "::std::unique_ptr<::grpc::ClientWriterInterface<$Request$>> "
          "$Method$(\n"
          "      ::grpc::ClientContext& context,\n"
          "      const ::stubkit::OptionsView& options,\n"
          "      $Response$* response)",
          "::stubkit::StreamWriter<$Request$, $Response$> $Method$(\n"
          "      const ::stubkit::OptionsView& options)",
          "::stubkit::StreamWriter<$Request$, $Response$> $Method$(\n"
          "      const ::stubkit::Options& call = {})",
          "::stubkit::StreamWriter<$Request$, $Response$>\n"
          "$Service$Client::$Method$(const ::stubkit::Options& call)"};
    case Kind::kBidi:
      return {
          "::std::unique_ptr<\n"
          "      ::grpc::ClientReaderWriterInterface<$Request$, "
          "$Response$>>\n"
          "  $Method$(::grpc::ClientContext& context,\n"
          "      const ::stubkit::OptionsView& options)",
          "::stubkit::StreamReaderWriter<$Request$, $Response$> $Method$(\n"
          "      const ::stubkit::OptionsView& options)",
          "::stubkit::StreamReaderWriter<$Request$, $Response$> $Method$(\n"
          "      const ::stubkit::Options& call = {})",
          "::stubkit::StreamReaderWriter<$Request$, $Response$>\n"
          "$Service$Client::$Method$(const ::stubkit::Options& call)"};
  }
  return {};
}

// Unary methods also get a callback-API variant at each layer.
constexpr char kAsyncStubSignature[] =
    "void Async$Method$(\n"
    "      ::grpc::ClientContext& context,\n"
    "      const ::stubkit::OptionsView& options,\n"
    "      const $Request$& request,\n"
    "      ::stubkit::AsyncCallback<$Response$> done)";
constexpr char kAsyncConnectionSignature[] =
    "void Async$Method$(\n"
    "      const ::stubkit::OptionsView& options,\n"
    "      const $Request$& request,\n"
    "      ::stubkit::AsyncCallback<$Response$> done)";

constexpr char kAsyncStreamStubSignature[] =
    "::absl::Status Async$Method$(\n"
    "      ::grpc::ClientContext& context,\n"
    "      const ::stubkit::OptionsView& options,\n"
    "      const $Request$& request,\n"
    "      ::grpc::ClientReadReactor<$Response$>* reactor)";
constexpr char kAsyncStreamConnectionSignature[] =
    "void Async$Method$(\n"
    "      const ::stubkit::OptionsView& options,\n"
    "      const $Request$& request,\n"
    "      ::stubkit::MessageCallback<$Response$> on_message,\n"
    "      ::stubkit::DoneCallback on_done)";

// The async variant of a stub or connection method, if the kind has one.
const char* AsyncStubSignature(Kind kind) {
  if (kind == Kind::kUnary) return kAsyncStubSignature;
  if (kind == Kind::kServerStreaming) return kAsyncStreamStubSignature;
  return nullptr;
}
const char* AsyncConnectionSignature(Kind kind) {
  if (kind == Kind::kUnary) return kAsyncConnectionSignature;
  if (kind == Kind::kServerStreaming) return kAsyncStreamConnectionSignature;
  return nullptr;
}

// The same signature as a definition outside the class: "Class::" inserted
// before the method name, and indentation of continuation lines reduced.
std::string OutOfClass(const std::string& signature, const std::string& cls) {
  std::string result = absl::StrReplaceAll(
      signature, {{" $Method$(", absl::StrCat(" ", cls, "::$Method$(")},
                  {"\n  $Method$(", absl::StrCat("\n", cls, "::$Method$(")},
                  {"\n      ", "\n    "}});
  return result;
}

// Declares every SStub method (and its async variant) as an override: the
// decorator base and the gRPC stub implement the same set.
void FileGenerator::EmitStubOverrides(Printer& w,
                                      const ServiceModel& service) const {
  for (const MethodModel& method : service.methods) {
    w.Print("\n");
    w.Print(
        Vars(service, method),
        absl::StrCat("  ", SignaturesFor(method.kind).stub, " override;\n"));
    if (const char* async = AsyncStubSignature(method.kind)) {
      w.Print(Vars(service, method), absl::StrCat("  ", async, " override;\n"));
    }
  }
}

void FileGenerator::HeaderService(Printer& w,
                                  const ServiceModel& service) const {
  Printer::Vars vars = Vars(service);
  // Method descriptions.
  w.Print(vars,
          "// The static description of each $service_full_name$ method, "
          "handed to the\n"
          "// stubkit runtime.\n"
          "struct $Service$Methods {\n");
  for (const MethodModel& method : service.methods) {
    w.Print(Vars(service, method),
            "  static constexpr ::stubkit::MethodInfo k$Method${\n"
            "      \"$method_full_name$\", $kind$,\n"
            "      $idempotency$};\n");
  }
  w.Print(vars, "};\n\n");

  // The per-attempt interface.
  w.Print(vars,
          "// One attempt of each $service_full_name$ RPC. Implemented by\n"
          "// $Service$GrpcStub (the wire) and by decorators; derive from\n"
          "// $Service$StubDecorator to add a layer.\n"
          "class $Service$Stub {\n"
          " public:\n"
          "  virtual ~$Service$Stub() = default;\n");
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = Vars(service, method);
    w.Print("\n");
    w.Print(mv, absl::StrCat("  virtual ", SignaturesFor(method.kind).stub,
                             " = 0;\n"));
    if (const char* async = AsyncStubSignature(method.kind)) {
      w.Print(mv, absl::StrCat("  virtual ", async, " = 0;\n"));
    }
  }
  w.Print(vars, "};\n\n");

  // The forwarding base.
  w.Print(vars,
          "// Forwards every method to the stub below it. Override what you "
          "need.\n"
          "class $Service$StubDecorator : public $Service$Stub {\n"
          " public:\n"
          "  explicit $Service$StubDecorator(::std::shared_ptr<$Service$Stub> "
          "child)\n"
          "      : child_(::std::move(child)) {}\n");
  EmitStubOverrides(w, service);
  w.Print(vars,
          "\n"
          " protected:\n"
          "  const ::std::shared_ptr<$Service$Stub>& child() const { return "
          "child_; }\n"
          "\n"
          " private:\n"
          "  ::std::shared_ptr<$Service$Stub> child_;\n"
          "};\n\n");

  // The bottom.
  w.Print(vars,
          "// Calls the grpc_cpp_plugin stub.\n"
          "class $Service$GrpcStub : public $Service$Stub {\n"
          " public:\n"
          "  explicit $Service$GrpcStub(\n"
          "      ::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub)\n"
          "      : grpc_stub_(::std::move(grpc_stub)) {}\n");
  EmitStubOverrides(w, service);
  w.Print(vars,
          "\n"
          " private:\n"
          "  ::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub_;\n"
          "};\n\n");

  // The connection.
  w.Print(vars,
          "// Runs each $service_full_name$ call under the stubkit retry "
          "rules. Mock it\n"
          "// ($mocks$::Mock$Service$Connection) to test code that uses "
          "$Service$Client.\n"
          "class $Service$Connection {\n"
          " public:\n"
          "  virtual ~$Service$Connection() = default;\n");
  for (const MethodModel& method : service.methods) {
    w.Print("\n");
    w.Print(Vars(service, method),
            absl::StrCat("  virtual ", SignaturesFor(method.kind).connection,
                         " = 0;\n"));
    if (const char* async = AsyncConnectionSignature(method.kind)) {
      w.Print(Vars(service, method),
              absl::StrCat("  virtual ", async, " = 0;\n"));
    }
  }
  w.Print(vars,
          "};\n\n"
          "// The default connection over `channel`. The decorators in\n"
          "// `options` ($Service$Client::DecoratorsOption) are applied here, "
          "once.\n"
          "::std::shared_ptr<$Service$Connection> Make$Service$Connection(\n"
          "    ::std::shared_ptr<::grpc::ChannelInterface> channel,\n"
          "    const ::stubkit::Options& options = {});\n"
          "// The default connection over any stub stack, e.g. a mock.\n"
          "::std::shared_ptr<$Service$Connection> Make$Service$Connection(\n"
          "    ::std::shared_ptr<$Service$Stub> stub,\n"
          "    const ::stubkit::Options& options = {});\n\n");

  // The client.
  if (!service.comment.empty()) w.PrintRaw(service.comment + "//\n");
  w.Print(vars,
          "// A $service_full_name$ client: cheap to copy, safe to share "
          "between threads.\n"
          "// Every call takes per-call options that override the client's.\n"
          "class $Service$Client {\n"
          " public:\n"
          "  // User decorators of $Service$Stub, applied when the connection "
          "is made:\n"
          "  // by Make$Service$Connection, or by the constructor that takes a "
          "channel.\n"
          "  using DecoratorsOption = "
          "::stubkit::DecoratorsOptionFor<$Service$Stub>;\n");
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kServerStreaming) continue;
    w.Print(Vars(service, method),
            "  // Resumes a broken $Method$ stream: rewrite the request from "
            "the last\n"
            "  // response received; return false to report the break "
            "instead.\n"
            "  struct $Method$ResumeOption {\n"
            "    using Type = ::stubkit::ResumeHook<$Request$, $Response$>;\n"
            "    static Type Default() { return nullptr; }\n"
            "  };\n");
  }
  w.Print(vars,
          "\n"
          "  explicit $Service$Client(\n"
          "      ::std::shared_ptr<::grpc::ChannelInterface> channel,\n"
          "      ::stubkit::Options options = {});\n"
          "  // Over a connection made by Make$Service$Connection, or a mock. "
          "It cannot\n"
          "  // apply decorators: when `options` hold a non-empty "
          "DecoratorsOption,\n"
          "  // every call fails with INVALID_ARGUMENT before anything is "
          "sent.\n"
          "  explicit $Service$Client(\n"
          "      ::std::shared_ptr<$Service$Connection> connection,\n"
          "      ::stubkit::Options options = {});\n");
  for (const MethodModel& method : service.methods) {
    w.Print("\n");
    Printer::Vars mv = Vars(service, method);
    w.Print(mv, absl::StrCat("$comment$$deprecated$  ",
                             SignaturesFor(method.kind).client, ";\n"));
    if (method.kind == Kind::kUnary) {
      w.Print(mv,
              "  // $Method$ without blocking: retries wait on a timer, not a "
              "thread.\n"
              "$deprecated$  ::std::future<::absl::StatusOr<$Response$>> "
              "Async$Method$(\n"
              "      const $Request$& request,\n"
              "      const ::stubkit::Options& call = {});\n"
              "$deprecated$  void Async$Method$(\n"
              "      const $Request$& request,\n"
              "      ::stubkit::AsyncCallback<$Response$> done,\n"
              "      const ::stubkit::Options& call = {});\n");
    }
    if (method.kind == Kind::kServerStreaming) {
      w.Print(mv,
              "  // $Method$ without blocking: each message goes to "
              "`on_message`, then\n"
              "  // the final status to `on_done`.\n"
              "$deprecated$  void Async$Method$(\n"
              "      const $Request$& request,\n"
              "      ::stubkit::MessageCallback<$Response$> on_message,\n"
              "      ::stubkit::DoneCallback on_done,\n"
              "      const ::stubkit::Options& call = {});\n");
    }
  }
  w.Print(vars,
          "\n"
          " private:\n"
          "  ::stubkit::Options options_;\n"
          "  ::std::shared_ptr<$Service$Connection> connection_;\n"
          "};\n\n");
}

void FileGenerator::SourceService(Printer& w,
                                  const ServiceModel& service) const {
  Printer::Vars vars = Vars(service);
  const std::string decorator = service.name + "StubDecorator";
  const std::string grpc_stub = service.name + "GrpcStub";
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = Vars(service, method);
    std::string signature =
        OutOfClass(SignaturesFor(method.kind).stub, decorator);
    w.Print(mv, signature + " {\n");
    switch (method.kind) {
      case Kind::kUnary:
      case Kind::kServerStreaming:
        w.Print(mv, "  return child_->$Method$(context, options, request);\n");
        break;
      case Kind::kClientStreaming:
        w.Print(mv, "  return child_->$Method$(context, options, response);\n");
        break;
      case Kind::kBidi:
        w.Print(mv, "  return child_->$Method$(context, options);\n");
        break;
    }
    w.Print("}\n\n");
  }
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kServerStreaming) continue;
    Printer::Vars mv = Vars(service, method);
    mv["Decorator"] = decorator;
    mv["GrpcStub"] = grpc_stub;
    w.Print(mv,
            "::absl::Status $Decorator$::Async$Method$(\n"
            "    ::grpc::ClientContext& context,\n"
            "    const ::stubkit::OptionsView& options,\n"
            "    const $Request$& request,\n"
            "    ::grpc::ClientReadReactor<$Response$>* reactor) {\n"
            "  return child_->Async$Method$(context, options, request, "
            "reactor);\n"
            "}\n\n"
            "::absl::Status $GrpcStub$::Async$Method$(\n"
            "    ::grpc::ClientContext& context,\n"
            "    const ::stubkit::OptionsView& /*options*/,\n"
            "    const $Request$& request,\n"
            "    ::grpc::ClientReadReactor<$Response$>* reactor) {\n"
            "  auto* async = grpc_stub_->async();\n"
            "  if (async == nullptr) {\n"
            "    return ::stubkit::internal::NoAsyncStubError("
            "\"$method_full_name$\");\n"
            "  }\n"
            "$check_metadata$"
            "    return refused;\n"
            "  }\n"
            "  async->$Method$(&context, &request, reactor);\n"
            "  return ::absl::OkStatus();\n"
            "}\n\n");
  }
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kUnary) continue;
    Printer::Vars mv = Vars(service, method);
    mv["Decorator"] = decorator;
    mv["GrpcStub"] = grpc_stub;
    w.Print(mv,
            "void $Decorator$::Async$Method$(\n"
            "    ::grpc::ClientContext& context,\n"
            "    const ::stubkit::OptionsView& options,\n"
            "    const $Request$& request,\n"
            "    ::stubkit::AsyncCallback<$Response$> done) {\n"
            "  child_->Async$Method$(context, options, request, "
            "::std::move(done));\n"
            "}\n\n"
            "void $GrpcStub$::Async$Method$(\n"
            "    ::grpc::ClientContext& context,\n"
            "    const ::stubkit::OptionsView& /*options*/,\n"
            "    const $Request$& request,\n"
            "    ::stubkit::AsyncCallback<$Response$> done) {\n"
            "  auto* async = grpc_stub_->async();\n"
            "  if (async == nullptr) {\n"
            "    done(::stubkit::internal::NoAsyncStubError("
            "\"$method_full_name$\"));\n"
            "    return;\n"
            "  }\n"
            "$check_metadata$"
            "    done(::std::move(refused));\n"
            "    return;\n"
            "  }\n"
            "  ::stubkit::internal::StartAsyncUnary<$Response$>(\n"
            "      [&](auto* response, auto on_done) {\n"
            "        async->$Method$(&context, &request, response, "
            "::std::move(on_done));\n"
            "      },\n"
            "      ::std::move(done));\n"
            "}\n\n");
  }
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = Vars(service, method);
    // The gRPC stub ignores the options: the layers above applied them.
    std::string signature = absl::StrReplaceAll(
        OutOfClass(SignaturesFor(method.kind).stub, grpc_stub),
        {{"& options", "& /*options*/"}});
    w.Print(mv, signature + " {\n$check_metadata$");
    switch (method.kind) {
      case Kind::kUnary:
        w.Print(mv,
                "    return refused;\n"
                "  }\n"
                "  $Response$ response;\n"
                "  return ::stubkit::internal::ToStatusOr(\n"
                "      grpc_stub_->$Method$(&context, request, &response),\n"
                "      ::std::move(response));\n");
        break;
      case Kind::kServerStreaming:
        w.Print(
            mv,
            "    return ::std::make_unique<\n"
            "        ::stubkit::internal::RefusedClientReader<$Response$>>(\n"
            "        ::stubkit::internal::ToGrpcStatus(refused));\n"
            "  }\n"
            "  return grpc_stub_->$Method$(&context, request);\n");
        break;
      case Kind::kClientStreaming:
        w.Print(
            mv,
            "    return ::std::make_unique<\n"
            "        ::stubkit::internal::RefusedClientWriter<$Request$>>(\n"
            "        ::stubkit::internal::ToGrpcStatus(refused));\n"
            "  }\n"
            "  return grpc_stub_->$Method$(&context, response);\n");
        break;
      case Kind::kBidi:
        w.Print(mv,
                "    return ::std::make_unique<\n"
                "        ::stubkit::internal::RefusedClientReaderWriter<\n"
                "            $Request$, $Response$>>(\n"
                "        ::stubkit::internal::ToGrpcStatus(refused));\n"
                "  }\n"
                "  return grpc_stub_->$Method$(&context);\n");
        break;
    }
    w.Print("}\n\n");
  }

  // The default connection.
  w.Print(vars,
          "namespace {\n\n"
          "class $Service$ConnectionImpl : public $Service$Connection {\n"
          " public:\n"
          "  explicit $Service$ConnectionImpl(::std::shared_ptr<$Service$Stub> "
          "stub)\n"
          "      : stub_(::std::move(stub)) {}\n");
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = Vars(service, method);
    w.Print("\n");
    w.Print(mv, absl::StrCat("  ", SignaturesFor(method.kind).connection,
                             " override {\n"));
    switch (method.kind) {
      case Kind::kUnary:
        w.Print(mv,
                "    return ::stubkit::internal::RunUnary<$Response$>(\n"
                "        $Service$Methods::k$Method$, options, request,\n"
                "        [&](::grpc::ClientContext& context) {\n"
                "          return stub_->$Method$(context, options, request);\n"
                "        },\n"
                "        [&] { return Async$Method$Attempt(request); });\n"
                "  }\n\n");
        w.Print(mv,
                absl::StrCat("  ", kAsyncConnectionSignature, " override {\n"));
        w.Print(mv,
                "    ::stubkit::internal::RunAsyncUnary<$Response$>(\n"
                "        $Service$Methods::k$Method$, options,\n"
                "        Async$Method$Attempt(request), ::std::move(done));\n");
        break;
      case Kind::kServerStreaming:
        // The reader outlives this call, so the lambda owns the stub.
        w.Print(mv,
                "    return ::stubkit::internal::OpenServerStream<\n"
                "        $Service$Client::$Method$ResumeOption, $Request$, "
                "$Response$>(\n"
                "        $Service$Methods::k$Method$, options, request,\n"
                "        [stub = stub_](::grpc::ClientContext& context,\n"
                "                       const ::stubkit::OptionsView& "
                "attempt_options,\n"
                "                       const $Request$& attempt_request) {\n"
                "          return stub->$Method$(context, attempt_options, "
                "attempt_request);\n"
                "        });\n"
                "  }\n\n");
        w.Print(mv, absl::StrCat("  ", kAsyncStreamConnectionSignature,
                                 " override {\n"));
        w.Print(
            mv,
            "    ::stubkit::internal::StartAsyncServerStream<\n"
            "        $Service$Client::$Method$ResumeOption, $Request$, "
            "$Response$>(\n"
            "        $Service$Methods::k$Method$, options, request,\n"
            "        [stub = stub_](::grpc::ClientContext& context,\n"
            "                       const ::stubkit::OptionsView& "
            "attempt_options,\n"
            "                       const $Request$& attempt_request,\n"
            "                       ::grpc::ClientReadReactor<$Response$>* "
            "reactor) {\n"
            "          return stub->Async$Method$(context, attempt_options,\n"
            "                                     attempt_request, reactor);\n"
            "        },\n"
            "        ::std::move(on_message), ::std::move(on_done));\n");
        break;
      case Kind::kClientStreaming:
        w.Print(mv,
                "    return ::stubkit::internal::OpenClientStream<$Request$, "
                "$Response$>(\n"
                "        $Service$Methods::k$Method$, options,\n"
                "        [&](::grpc::ClientContext& context, $Response$* "
                "response) {\n"
                "          return stub_->$Method$(context, options, "
                "response);\n"
                "        });\n");
        break;
      case Kind::kBidi:
        w.Print(mv,
                "    return ::stubkit::internal::OpenBidiStream<$Request$, "
                "$Response$>(\n"
                "        $Service$Methods::k$Method$, options,\n"
                "        [&](::grpc::ClientContext& context) {\n"
                "          return stub_->$Method$(context, options);\n"
                "        });\n");
        break;
    }
    w.Print("  }\n");
  }
  w.Print(vars, "\n private:\n");
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kUnary) continue;
    // An attempt that owns the stub and a copy of the request: async and
    // hedged attempts may outlive the call that started them.
    w.Print(
        Vars(service, method),
        "  ::stubkit::AsyncAttempt<$Response$> Async$Method$Attempt(\n"
        "      const $Request$& request) const {\n"
        "    return [stub = stub_,\n"
        "            request = ::std::make_shared<const $Request$>(request)](\n"
        "               ::grpc::ClientContext& context,\n"
        "               const ::stubkit::OptionsView& options,\n"
        "               ::stubkit::AsyncCallback<$Response$> done) {\n"
        "      stub->Async$Method$(context, options, *request, "
        "::std::move(done));\n"
        "    };\n"
        "  }\n\n");
  }
  w.Print(vars,
          "  ::std::shared_ptr<$Service$Stub> stub_;\n"
          "};\n\n");

  // What a client built from a connection uses when its options hold
  // decorators it cannot apply: every call fails before anything is sent.
  w.Print(vars,
          "// Stands in for the connection of a $Service$Client built from a "
          "connection\n"
          "// with DecoratorsOption, which only Make$Service$Connection can "
          "apply.\n"
          "class $Service$RefusingConnection : public $Service$Connection {\n"
          " public:\n"
          "  explicit $Service$RefusingConnection(::absl::Status refusal)\n"
          "      : refusal_(::std::move(refusal)) {}\n");
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = Vars(service, method);
    auto unnamed = [](const std::string& signature) {
      return absl::StrReplaceAll(signature,
                                 {{"& options", "& /*options*/"},
                                  {"& request", "& /*request*/"},
                                  {"> on_message", "> /*on_message*/"}});
    };
    w.Print("\n");
    w.Print(mv,
            absl::StrCat("  ", unnamed(SignaturesFor(method.kind).connection),
                         " override {\n"));
    switch (method.kind) {
      case Kind::kUnary:
        w.Print(mv, "    return refusal_;\n  }\n");
        w.Print(mv, absl::StrCat("  ", unnamed(kAsyncConnectionSignature),
                                 " override {\n"
                                 "    done(refusal_);\n"));
        break;
      case Kind::kServerStreaming:
        w.Print(mv,
                "    return ::stubkit::StreamReader<$Response$>(refusal_);\n"
                "  }\n");
        w.Print(mv, absl::StrCat("  ", unnamed(kAsyncStreamConnectionSignature),
                                 " override {\n"
                                 "    on_done(refusal_);\n"));
        break;
      case Kind::kClientStreaming:
        w.Print(mv,
                "    auto writer = ::std::make_unique<\n"
                "        ::stubkit::internal::GrpcStreamWriter<$Request$, "
                "$Response$>>();\n"
                "    writer->Start(nullptr, refusal_);\n"
                "    return ::stubkit::StreamWriter<$Request$, $Response$>(\n"
                "        ::std::move(writer));\n");
        break;
      case Kind::kBidi:
        w.Print(
            mv,
            "    auto stream = ::std::make_unique<\n"
            "        ::stubkit::internal::GrpcStreamReaderWriter<$Request$, "
            "$Response$>>(\n"
            "        $Service$Methods::k$Method$);\n"
            "    stream->Start(nullptr, refusal_);\n"
            "    return ::stubkit::StreamReaderWriter<$Request$, "
            "$Response$>(\n"
            "        ::std::move(stream));\n");
        break;
    }
    w.Print("  }\n");
  }
  w.Print(
      vars,
      "\n"
      " private:\n"
      "  ::absl::Status refusal_;\n"
      "};\n\n"
      "}  // namespace\n\n"
      "::std::shared_ptr<$Service$Connection> Make$Service$Connection(\n"
      "    ::std::shared_ptr<::grpc::ChannelInterface> channel,\n"
      "    const ::stubkit::Options& options) {\n"
      "  return Make$Service$Connection(\n"
      "      ::std::make_shared<$Service$GrpcStub>("
      "$grpc_class$::NewStub(channel)),\n"
      "      options);\n"
      "}\n\n"
      "::std::shared_ptr<$Service$Connection> Make$Service$Connection(\n"
      "    ::std::shared_ptr<$Service$Stub> stub,\n"
      "    const ::stubkit::Options& options) {\n"
      "  return ::std::make_shared<$Service$ConnectionImpl>(\n"
      "      ::stubkit::internal::ApplyDecorators(\n"
      "          ::std::move(stub),\n"
      "          options.get<$Service$Client::DecoratorsOption>()));\n"
      "}\n\n"
      "$Service$Client::$Service$Client(\n"
      "    ::std::shared_ptr<::grpc::ChannelInterface> channel,\n"
      "    ::stubkit::Options options)\n"
      "    : options_(::std::move(options)),\n"
      "      connection_(Make$Service$Connection(::std::move(channel), "
      "options_)) {}\n\n"
      "$Service$Client::$Service$Client(\n"
      "    ::std::shared_ptr<$Service$Connection> connection,\n"
      "    ::stubkit::Options options)\n"
      "    : options_(::std::move(options)), "
      "connection_(::std::move(connection)) {\n"
      "  const auto* decorators = options_.find<DecoratorsOption>();\n"
      "  if (decorators != nullptr && !decorators->empty()) {\n"
      "    connection_ = ::std::make_shared<$Service$RefusingConnection>(\n"
      "        ::absl::InvalidArgumentError(\n"
      "            \"$service_full_name$: DecoratorsOption must be given to "
      "\"\n"
      "            \"Make$Service$Connection (or to the $Service$Client \"\n"
      "            \"constructor that takes a channel); the client was \"\n"
      "            \"built from a connection, which cannot apply them, so \"\n"
      "            \"the call was not sent\"));\n"
      "  }\n"
      "}\n");
  for (const MethodModel& method : service.methods) {
    Printer::Vars mv = Vars(service, method);
    w.Print("\n");
    w.Print(mv, absl::StrCat(SignaturesFor(method.kind).client_def, " {\n"));
    switch (method.kind) {
      case Kind::kUnary:
      case Kind::kServerStreaming:
        w.Print(mv,
                "  return connection_->$Method$(::stubkit::OptionsView(call, "
                "options_),\n"
                "                               request);\n");
        break;
      case Kind::kClientStreaming:
      case Kind::kBidi:
        w.Print(mv,
                "  return connection_->$Method$(::stubkit::OptionsView(call, "
                "options_));\n");
        break;
    }
    w.Print("}\n");
    if (method.kind == Kind::kUnary) {
      w.Print(mv,
              "\n"
              "::std::future<::absl::StatusOr<$Response$>>\n"
              "$Service$Client::Async$Method$(const $Request$& request,\n"
              "    const ::stubkit::Options& call) {\n"
              "  auto promise = ::std::make_shared<\n"
              "      ::std::promise<::absl::StatusOr<$Response$>>>();\n"
              "  auto future = promise->get_future();\n"
              "  connection_->Async$Method$(\n"
              "      ::stubkit::OptionsView(call, options_), request,\n"
              "      [promise](::absl::StatusOr<$Response$> result) {\n"
              "        promise->set_value(::std::move(result));\n"
              "      });\n"
              "  return future;\n"
              "}\n"
              "\n"
              "void $Service$Client::Async$Method$(const $Request$& request,\n"
              "    ::stubkit::AsyncCallback<$Response$> done,\n"
              "    const ::stubkit::Options& call) {\n"
              "  connection_->Async$Method$(::stubkit::OptionsView(call, "
              "options_), request,\n"
              "                              ::std::move(done));\n"
              "}\n");
    }
    if (method.kind == Kind::kServerStreaming) {
      w.Print(mv,
              "\n"
              "void $Service$Client::Async$Method$(const $Request$& request,\n"
              "    ::stubkit::MessageCallback<$Response$> on_message,\n"
              "    ::stubkit::DoneCallback on_done,\n"
              "    const ::stubkit::Options& call) {\n"
              "  connection_->Async$Method$(::stubkit::OptionsView(call, "
              "options_), request,\n"
              "                              ::std::move(on_message), "
              "::std::move(on_done));\n"
              "}\n");
    }
  }
  w.Print("\n");
}

// gMock wants a parenthesized type when it contains a comma.
std::string MockMethod(const std::string& stub_signature,
                       const std::string& name = "$Method$") {
  // "RET NAME(\n PARAMS)" -> "MOCK_METHOD((RET), NAME, (PARAMS), (override));"
  size_t open = stub_signature.find(name + "(");
  std::string ret(absl::StripAsciiWhitespace(stub_signature.substr(0, open)));
  std::string params = stub_signature.substr(open + name.size() + 1);
  params.pop_back();  // ')'
  params = absl::StrReplaceAll(params, {{"\n      ", " "}, {"\n", " "}});
  ret = absl::StrReplaceAll(ret, {{"\n      ", ""}, {"\n", ""}});
  absl::StripAsciiWhitespace(&params);
  return absl::StrCat("  MOCK_METHOD((", ret, "), ", name, ",\n              (",
                      params, "),\n              (override));\n");
}

void FileGenerator::MockService(Printer& w, const ServiceModel& service) const {
  Printer::Vars vars = Vars(service);
  w.Print(vars,
          "class Mock$Service$Stub : public $package$::$Service$Stub {\n"
          " public:\n");
  for (const MethodModel& method : service.methods) {
    w.Print(Vars(service, method), MockMethod(SignaturesFor(method.kind).stub));
    if (const char* async = AsyncStubSignature(method.kind)) {
      w.Print(Vars(service, method), MockMethod(async, "Async$Method$"));
    }
  }
  w.Print(vars,
          "};\n\n"
          "class Mock$Service$Connection\n"
          "    : public $package$::$Service$Connection {\n"
          " public:\n");
  for (const MethodModel& method : service.methods) {
    w.Print(Vars(service, method),
            MockMethod(SignaturesFor(method.kind).connection));
    if (const char* async = AsyncConnectionSignature(method.kind)) {
      w.Print(Vars(service, method), MockMethod(async, "Async$Method$"));
    }
  }
  w.Print("};\n\n");
}

void FileGenerator::Header(Printer& w) const {
  Printer::Vars vars = {{"file", file_.proto_name},
                        {"stem", file_.stem},
                        {"guard", IncludeGuard(file_.stem + ".stubkit.h")}};
  w.Print(vars,
          "// Generated by protoc-gen-stubkit. DO NOT EDIT!\n"
          "// source: $file$\n"
          "\n"
          "#ifndef $guard$\n"
          "#define $guard$\n"
          "\n"
          "#include <future>\n"
          "#include <memory>\n"
          "#include <utility>\n"
          "\n"
          "#include <grpcpp/client_context.h>\n"
          "#include <grpcpp/support/sync_stream.h>\n"
          "\n"
          "#include \"absl/status/statusor.h\"\n"
          "#include \"$stem$.grpc.pb.h\"\n"
          "#include \"$stem$.pb.h\"\n"
          "#include \"stubkit/async_retry_loop.h\"\n"
          "#include \"stubkit/async_streaming.h\"\n"
          "#include \"stubkit/client_support.h\"\n"
          "#include \"stubkit/method.h\"\n"
          "#include \"stubkit/options.h\"\n"
          "#include \"stubkit/streaming.h\"\n"
          "\n");
  OpenNamespace(w);
  for (const ServiceModel& service : file_.services) HeaderService(w, service);
  CloseNamespace(w);
  w.Print(vars, "\n#endif  // $guard$\n");
}

void FileGenerator::Source(Printer& w) const {
  Printer::Vars vars = {{"file", file_.proto_name}, {"stem", file_.stem}};
  w.Print(vars,
          "// Generated by protoc-gen-stubkit. DO NOT EDIT!\n"
          "// source: $file$\n"
          "\n"
          "#include \"$stem$.stubkit.h\"\n"
          "\n"
          "#include <memory>\n"
          "#include <utility>\n"
          "\n"
          "#include \"stubkit/internal/metadata.h\"\n"
          "#include \"stubkit/retry_loop.h\"\n"
          "#include \"stubkit/unary_call.h\"\n"
          "\n");
  OpenNamespace(w);
  for (const ServiceModel& service : file_.services) SourceService(w, service);
  CloseNamespace(w);
}

void FileGenerator::Mock(Printer& w) const {
  Printer::Vars vars = {{"file", file_.proto_name},
                        {"stem", file_.stem},
                        {"guard", IncludeGuard(file_.stem + ".stubkit_mock.h")},
                        {"mocks", kMockNamespace}};
  w.Print(
      vars,
      "// Generated by protoc-gen-stubkit. DO NOT EDIT!\n"
      "// source: $file$\n"
      "//\n"
      "// gMock classes for the stubkit clients of $file$, in the nested\n"
      "// namespace $mocks$: grpc_cpp_plugin's generate_mock_code=true puts "
      "its\n"
      "// own Mock<Service>Stub in the package's namespace.\n"
      "\n"
      "#ifndef $guard$\n"
      "#define $guard$\n"
      "\n"
      "#include <memory>\n"
      "\n"
      "#include <gmock/gmock.h>\n"
      "\n"
      "#include \"$stem$.stubkit.h\"\n"
      "\n");
  OpenNamespace(w);
  w.Print(vars, "namespace $mocks$ {\n\n");
  for (const ServiceModel& service : file_.services) MockService(w, service);
  w.Print(vars, "}  // namespace $mocks$\n");
  CloseNamespace(w);
  w.Print(vars, "\n#endif  // $guard$\n");
}

bool WriteFile(GeneratorContext* context, const std::string& name,
               const std::string& contents, std::string* error) {
  std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> output(
      context->Open(name));
  void* buffer;
  int size;
  size_t written = 0;
  while (written < contents.size()) {
    if (!output->Next(&buffer, &size)) {
      *error = "cannot write " + name;
      return false;
    }
    size_t chunk =
        std::min(static_cast<size_t>(size), contents.size() - written);
    std::memcpy(buffer, contents.data() + written, chunk);
    written += chunk;
    if (chunk < static_cast<size_t>(size)) {
      output->BackUp(size - static_cast<int>(chunk));
    }
  }
  return true;
}

}  // namespace

bool StubkitGenerator::Generate(const FileDescriptor* file,
                                const std::string& parameter,
                                GeneratorContext* context,
                                std::string* error) const {
  if (!parameter.empty()) {
    *error = absl::StrCat("protoc-gen-stubkit takes no options, got '",
                          parameter, "'");
    return false;
  }
  FileModel model;
  if (!BuildFileModel(file, &model, error)) return false;
  FileGenerator generator(model);
  struct Output {
    const char* suffix;
    void (FileGenerator::*print)(Printer&) const;
    std::string contents;
  };
  Output outputs[] = {{".stubkit.h", &FileGenerator::Header, ""},
                      {".stubkit.cc", &FileGenerator::Source, ""},
                      {".stubkit_mock.h", &FileGenerator::Mock, ""}};
  // Print everything before writing anything: a printer bug leaves no file.
  for (Output& output : outputs) {
    Printer printer;
    (generator.*output.print)(printer);
    if (!printer.error().empty()) {
      *error = absl::StrCat("protoc-gen-stubkit internal error in ", model.stem,
                            output.suffix, ": ", printer.error());
      return false;
    }
    output.contents = printer.Finish();
  }
  for (const Output& output : outputs) {
    if (!WriteFile(context, model.stem + output.suffix, output.contents,
                   error)) {
      return false;
    }
  }
  return true;
}

}  // namespace generator
}  // namespace stubkit

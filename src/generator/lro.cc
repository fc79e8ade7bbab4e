// Copyright 2026 The stubkit Authors.

#include "src/generator/lro.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/unknown_field_set.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/generator/convention.h"
#include "src/generator/model.h"
#include "src/generator/names.h"
#include "src/generator/printers.h"
#include "src/generator/signatures.h"

namespace stubkit {
namespace generator {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::MethodDescriptor;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

namespace {

// True when `name` is a symbol protoc would stop at when resolving the
// first component of a partly qualified name: a message, enum, service or
// package (an "aggregate"), not a field, enum value or method.
bool IsAggregate(const DescriptorPool* pool, const std::string& name) {
  if (pool->FindMessageTypeByName(name) != nullptr ||
      pool->FindEnumTypeByName(name) != nullptr ||
      pool->FindServiceByName(name) != nullptr) {
    return true;
  }
  if (pool->FindFileContainingSymbol(name) == nullptr) return false;
  return pool->FindEnumValueByName(name) == nullptr &&
         pool->FindFieldByName(name) == nullptr &&
         pool->FindExtensionByName(name) == nullptr &&
         pool->FindMethodByName(name) == nullptr;
}

std::string Join(const std::string& scope, const std::string& name) {
  return scope.empty() ? name : absl::StrCat(scope, ".", name);
}

}  // namespace

const Descriptor* ResolveMessageName(const DescriptorPool* pool,
                                     const std::string& package,
                                     const std::string& name,
                                     std::string* error) {
  if (name.empty()) {
    *error = "is empty";
    return nullptr;
  }
  if (name[0] == '.') {
    const Descriptor* found = pool->FindMessageTypeByName(name.substr(1));
    if (found == nullptr) *error = "names no message";
    return found;
  }
  const std::string first = name.substr(0, name.find('.'));
  std::string scope = package;
  while (true) {
    if (IsAggregate(pool, Join(scope, first))) {
      const std::string full = Join(scope, name);
      const Descriptor* found = pool->FindMessageTypeByName(full);
      if (found == nullptr) {
        *error = absl::StrCat("resolves to ", full,
                              " (the innermost scope defining '", first,
                              "'), which is not a message");
      }
      return found;
    }
    if (scope.empty()) break;
    const size_t dot = scope.rfind('.');
    scope = dot == std::string::npos ? "" : scope.substr(0, dot);
  }
  *error = absl::StrCat("names no message in package '", package,
                        "' or an enclosing one (is its file imported?)");
  return nullptr;
}

std::string BuildLroInfo(const MethodDescriptor* method, LroInfo* info) {
  *info = LroInfo();
  if (method->client_streaming() || method->server_streaming() ||
      method->output_type()->full_name() != kOperationFullName) {
    return "";
  }
  UnknownFieldSet fields;
  if (!fields.ParseFromString(method->options().SerializeAsString())) {
    return "";
  }
  std::string response_type;
  std::string metadata_type;
  bool found = false;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& field = fields.field(i);
    if (field.number() != kOperationInfoExtensionNumber ||
        field.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    UnknownFieldSet operation_info;
    if (!operation_info.ParseFromString(field.length_delimited())) continue;
    found = true;
    for (int j = 0; j < operation_info.field_count(); ++j) {
      const UnknownField& value = operation_info.field(j);
      if (value.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
      if (value.number() == kOperationInfoResponseType) {
        response_type = value.length_delimited();
      } else if (value.number() == kOperationInfoMetadataType) {
        metadata_type = value.length_delimited();
      }
    }
  }
  // A method returning Operation without operation_info stays a plain
  // unary method.
  if (!found) return "";
  if (response_type.empty()) {
    info->not_generated =
        "its google.longrunning.operation_info has no response_type, so "
        "stubkit cannot tell what the operation returns";
    return "";
  }
  const DescriptorPool* pool = method->file()->pool();
  const std::string& package = method->file()->package();
  std::string why;
  const Descriptor* response =
      ResolveMessageName(pool, package, response_type, &why);
  if (response == nullptr) {
    info->not_generated =
        absl::StrCat("its google.longrunning.operation_info response_type '",
                     response_type, "' ", why);
    return "";
  }
  std::string problem = CheckMessageType(response);
  if (!problem.empty()) {
    info->not_generated = absl::StrCat("its response_type's ", problem);
    return "";
  }
  info->present = true;
  info->response = QualifiedMessageName(response);
  info->response_full_name = response->full_name();
  return "";
}

namespace {

std::vector<const Signature*> LroClientSignatures() {
  static const auto* const kSignatures = [] {
    const Param request{"const $Request$&", "request", ""};
    const Param name{"const ::std::string&", "operation_name", ""};
    const Param call{"const ::stubkit::Options&", "call", "{}"};
    const std::string sync = "::absl::StatusOr<$LroResponse$>";
    const std::string future = "::std::future<::absl::StatusOr<$LroResponse$>>";
    return new std::vector<Signature>{
        {Layer::kClient,
         Kind::kUnary,
         Variant::kSync,
         sync,
         "Await$Method$",
         {request, call}},
        {Layer::kClient,
         Kind::kUnary,
         Variant::kFuture,
         future,
         "AsyncAwait$Method$",
         {request, call}},
        {Layer::kClient,
         Kind::kUnary,
         Variant::kSync,
         sync,
         "Await$Method$ByName",
         {name, call}},
        {Layer::kClient,
         Kind::kUnary,
         Variant::kFuture,
         future,
         "AsyncAwait$Method$ByName",
         {name, call}},
    };
  }();
  std::vector<const Signature*> result;
  for (const Signature& signature : *kSignatures) result.push_back(&signature);
  return result;
}

bool ServiceHasLro(const ServiceModel& service) {
  for (const MethodModel& method : service.methods) {
    if (method.lro.present) return true;
  }
  return false;
}

Printer::Vars LroVars(const FileModel& file, const ServiceModel& service,
                      const MethodModel& method) {
  Printer::Vars vars = MethodVars(file, service, method);
  vars["LroResponse"] = method.lro.response;
  vars["lro_response_full_name"] = method.lro.response_full_name;
  return vars;
}

void PrintLroClientOptions(Printer& w, const FileModel& file,
                           const ServiceModel& service) {
  if (!ServiceHasLro(service)) return;
  const Printer::Vars vars = ServiceVars(file, service);
  w.Indent();
  w.PrintComment(vars,
                 "The google.longrunning.Operations connection the Await "
                 "methods poll on. Unset: one over the client's channel. A "
                 "client built from a connection has none unless this is "
                 "set; its Await methods then fail with FAILED_PRECONDITION.");
  w.Outdent();
  w.Print(
      "  struct OperationsConnectionOption {\n"
      "    using Type = "
      "::std::shared_ptr<::google::longrunning::OperationsConnection>;\n"
      "    static Type Default() { return nullptr; }\n"
      "  };\n");
}

void PrintLroClientDeclarations(Printer& w, const FileModel& file,
                                const ServiceModel& service,
                                const MethodModel& method) {
  if (!method.lro.not_generated.empty()) {
    w.Indent();
    // The reason quotes the proto's text: a value, never part of the
    // template (a `$` in it would be read as a variable).
    Printer::Vars vars = MethodVars(file, service, method);
    vars["why"] = method.lro.not_generated;
    w.PrintComment(vars,
                   "No Await$Method$: $why$. $Method$ is a plain "
                   "unary method.");
    w.Outdent();
    return;
  }
  if (!method.lro.present) return;
  const Printer::Vars vars = LroVars(file, service, method);
  const std::vector<const Signature*> signatures = LroClientSignatures();
  // Parenthesized: one element each, however many literals (clang's
  // -Wstring-concatenation).
  const char* comments[] = {
      ("Starts $Method$, then polls the operation it returns until it is "
       "done (stubkit/long_running_operation.h): its $lro_response_full_name$, "
       "or its error."),
      "Await$Method$ without blocking: waits between polls on a timer.",
      ("Polls an operation $Method$ started, by its name: e.g. after "
       "Await$Method$ ran out of polling time (stubkit::GetOperationName)."),
      ""};
  for (size_t i = 0; i < signatures.size(); ++i) {
    if (comments[i][0] != '\0') {
      w.Indent();
      w.PrintComment(vars, comments[i]);
      w.Outdent();
    }
    PrintDeprecated(w, vars, method);
    w.Print(SignatureVars(w, vars, *signatures[i]), "  $declaration$;\n");
  }
}

void PrintLroClientMembers(Printer& w, const ServiceModel& service) {
  if (!ServiceHasLro(service)) return;
  w.Print(
      "  // Polls operations; null when built from a connection without\n"
      "  // OperationsConnectionOption.\n"
      "  ::std::shared_ptr<::google::longrunning::OperationsClient> "
      "operations_;\n");
}

void PrintLroConstructorTail(Printer& w, const ServiceModel& service,
                             bool from_channel) {
  if (!ServiceHasLro(service)) return;
  w.Print(
      "  if (options_.get<OperationsConnectionOption>() != nullptr) {\n"
      "    operations_ = "
      "::std::make_shared<::google::longrunning::OperationsClient>(\n"
      "        options_.get<OperationsConnectionOption>(), options_);\n");
  if (from_channel) {
    w.Print(
        "  } else {\n"
        "    operations_ = "
        "::std::make_shared<::google::longrunning::OperationsClient>(\n"
        "        ::std::move(channel), options_);\n");
  }
  w.Print("  }\n");
}

void PrintLroClientDefinitions(Printer& w, const FileModel& file,
                               const ServiceModel& service,
                               const MethodModel& method) {
  if (!method.lro.present) return;
  const Printer::Vars vars = LroVars(file, service, method);
  const std::vector<const Signature*> signatures = LroClientSignatures();
  // A local alias keeps the calls short.
  w.Print(SignatureVars(w, vars, *signatures[0], "$Service$Client"),
          "\n"
          "$definition$ {\n"
          "  using Response = $LroResponse$;\n"
          "  if (operations_ == nullptr) {\n"
          "    return ::stubkit::internal::NoOperationsClient("
          "\"$method_full_name$\");\n"
          "  }\n"
          "  return ::stubkit::internal::PollOperation<Response>("
          "*operations_, "
          "method_options_.View($Service$Methods::k$Method$, call, options_, "
          "request), call, \"$method_full_name$\", "
          "[&] { return $Method$(request, call); });\n"
          "}\n");
  w.Print(SignatureVars(w, vars, *signatures[1], "$Service$Client"),
          "\n"
          "$definition$ {\n"
          "  using Response = $LroResponse$;\n"
          "  auto [future, started] = "
          "::stubkit::internal::AsyncAwaitOperation<Response>(operations_, "
          "method_options_.View($Service$Methods::k$Method$, call, options_, "
          "request), call, \"$method_full_name$\");\n"
          "  if (started != nullptr) {\n"
          "    Async$Method$(request, ::std::move(started), call);\n"
          "  }\n"
          "  return ::std::move(future);\n"
          "}\n");
  w.Print(SignatureVars(w, vars, *signatures[2], "$Service$Client"),
          "\n"
          "$definition$ {\n"
          "  using Response = $LroResponse$;\n"
          "  return ::stubkit::internal::AwaitOperationByName<Response>("
          "operations_.get(), "
          "method_options_.View($Service$Methods::k$Method$, call, options_), "
          "call, \"$method_full_name$\", operation_name);\n"
          "}\n");
  w.Print(SignatureVars(w, vars, *signatures[3], "$Service$Client"),
          "\n"
          "$definition$ {\n"
          "  using Response = $LroResponse$;\n"
          "  return ::stubkit::internal::AsyncAwaitOperationByName<Response>("
          "operations_, "
          "method_options_.View($Service$Methods::k$Method$, call, options_), "
          "call, \"$method_full_name$\", operation_name);\n"
          "}\n");
}

// AIP-151 as a unit: SClient's awaiters and the operations client they
// poll with.
class Lro final : public Convention {
 public:
  std::string BuildMethod(const MethodDescriptor* method,
                          int /*protoc_release*/,
                          MethodModel& model) const override {
    const std::string error = BuildLroInfo(method, &model.lro);
    if (error.empty()) return "";
    return absl::StrCat("service ", method->service()->full_name(), ", method ",
                        method->name(), ": ", error);
  }
  void AddClientMembers(const ServiceModel& service,
                        std::vector<ClientMember>& members) const override {
    for (const MethodModel& method : service.methods) {
      if (!method.lro.present) continue;
      for (const Signature* signature : LroClientSignatures()) {
        members.push_back(
            ClientMemberOf(*signature, method,
                           absl::StrCat("the awaiter of rpc ", method.name)));
      }
    }
    if (!ServiceHasLro(service)) return;
    for (const char* name : {"OperationsConnectionOption", "operations_"}) {
      members.push_back(
          {name, false, "", -1, "a member of clients with long-running rpcs"});
    }
  }
  void AddHeaderIncludes(const FileModel& file,
                         Includes& includes) const override {
    // Awaiters poll through the stubkit client of
    // google/longrunning/operations.proto.
    for (const ServiceModel& service : file.services) {
      if (!ServiceHasLro(service)) continue;
      includes.standard.push_back("string");
      includes.project.push_back("google/longrunning/operations.stubkit.h");
      includes.project.push_back("stubkit/internal/entry/operation_poller.h");
      includes.project.push_back("stubkit/long_running_operation.h");
      return;
    }
  }
  void PrintClientOptions(Printer& w, const FileModel& file,
                          const ServiceModel& service) const override {
    PrintLroClientOptions(w, file, service);
  }
  void PrintClientMethodDeclarations(Printer& w, const FileModel& file,
                                     const ServiceModel& service,
                                     const MethodModel& method) const override {
    PrintLroClientDeclarations(w, file, service, method);
  }
  void PrintClientMembers(Printer& w,
                          const ServiceModel& service) const override {
    PrintLroClientMembers(w, service);
  }
  bool KeepsChannel(const ServiceModel& service) const override {
    return ServiceHasLro(service);
  }
  void PrintConstructorTail(Printer& w, const ServiceModel& service,
                            bool from_channel) const override {
    PrintLroConstructorTail(w, service, from_channel);
  }
  void PrintClientMethodDefinitions(Printer& w, const FileModel& file,
                                    const ServiceModel& service,
                                    const MethodModel& method) const override {
    PrintLroClientDefinitions(w, file, service, method);
  }
};

}  // namespace

const Convention* LroConvention() {
  static const Convention* const kUnit = new Lro();
  return kUnit;
}

}  // namespace generator
}  // namespace stubkit

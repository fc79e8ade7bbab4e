// Copyright 2026 The stubkit Authors.

#include "src/generator/model.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/unknown_field_set.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/generator/convention.h"
#include "src/generator/names.h"
#include "src/generator/signatures.h"

namespace stubkit {
namespace generator {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::MethodOptions;
using google::protobuf::ServiceDescriptor;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

namespace {

// google/api/annotations.proto: `extend MethodOptions { HttpRule http =
// 72295728; }`, and in google/api/http.proto HttpRule's pattern oneof has
// get = 2 and put = 3 (post = 4, delete = 5, patch = 6, custom = 8). The
// plugin does not link the google/api protos, so it reads the raw bytes.
constexpr int kHttpExtensionNumber = 72295728;
constexpr int kHttpRuleGet = 2;
constexpr int kHttpRulePut = 3;

// The error for `reason`, saying which service and method (protoc prefixes
// the file name).
std::string Fail(const ServiceDescriptor* service,
                 const MethodDescriptor* method, const std::string& reason) {
  std::string where;
  if (service != nullptr) {
    absl::StrAppend(&where, "service ", service->full_name());
  }
  if (method != nullptr) {
    absl::StrAppend(&where, ", method ", method->name());
  }
  return where.empty() ? reason : absl::StrCat(where, ": ", reason);
}

Kind KindOf(const MethodDescriptor* method) {
  if (method->client_streaming() && method->server_streaming()) {
    return Kind::kBidi;
  }
  if (method->client_streaming()) return Kind::kClientStreaming;
  if (method->server_streaming()) return Kind::kServerStreaming;
  return Kind::kUnary;
}

}  // namespace

void CollectPackageSymbols(const FileDescriptor* file,
                           const std::string& package,
                           std::set<const FileDescriptor*>* seen,
                           std::map<std::string, std::string>* symbols) {
  if (!seen->insert(file).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) {
    CollectPackageSymbols(file->dependency(i), package, seen, symbols);
  }
  if (file->package() != package) return;
  std::vector<std::pair<const Descriptor*, std::string>> pending;
  for (int i = 0; i < file->message_type_count(); ++i) {
    pending.emplace_back(file->message_type(i), "");
  }
  // A top-level enum's values sit in the namespace as they are; a nested
  // enum's as Outer_Enum_VALUE.
  auto add_enum = [&](const EnumDescriptor* e, const std::string& prefix) {
    (*symbols)[prefix + e->name()] = "enum " + e->full_name();
    const std::string value_prefix =
        prefix.empty() ? "" : prefix + e->name() + "_";
    for (int v = 0; v < e->value_count(); ++v) {
      (*symbols)[value_prefix + e->value(v)->name()] =
          "enum value " + e->value(v)->full_name();
    }
  };
  for (int i = 0; i < file->enum_type_count(); ++i) {
    add_enum(file->enum_type(i), "");
  }
  while (!pending.empty()) {
    auto [message, prefix] = pending.back();
    pending.pop_back();
    std::string cpp_name = prefix + message->name();
    (*symbols)[cpp_name] = "message " + message->full_name();
    for (int i = 0; i < message->nested_type_count(); ++i) {
      pending.emplace_back(message->nested_type(i), cpp_name + "_");
    }
    for (int i = 0; i < message->enum_type_count(); ++i) {
      add_enum(message->enum_type(i), cpp_name + "_");
    }
  }
  for (int i = 0; i < file->service_count(); ++i) {
    (*symbols)[file->service(i)->name()] =
        "service " + file->service(i)->full_name();
  }
}

// Returns an error message, or "" when `message` can be used as an RPC type.
std::string CheckMessageType(const Descriptor* message) {
  for (const std::string& part : MessageNameParts(message)) {
    if (IsCppKeyword(part)) {
      return absl::StrCat(
          "message type ", message->full_name(), " contains the C++ keyword '",
          part,
          "'; protobuf renames it (appending '_') but grpc_cpp_plugin does "
          "not, so the gRPC stubs would not compile. Rename the message");
    }
  }
  return "";
}

namespace {

// "" or why `method` (of `service`) cannot be generated; `class_members`
// are the names stubkit generates in the service's classes.
std::string CheckMethod(const ServiceDescriptor* service,
                        const MethodDescriptor* method,
                        const std::set<std::string>& class_members) {
  const std::string& name = method->name();
  if (IsCppKeyword(name)) {
    return Fail(service, method,
                absl::StrCat("'", name,
                             "' is a C++ keyword; grpc_cpp_plugin emits it "
                             "unchanged, so no C++ client can be generated. "
                             "Rename the method"));
  }
  if (CollidesWithGrpc(name)) {
    return Fail(service, method,
                absl::StrCat("'", name,
                             "' collides with a member grpc_cpp_plugin "
                             "generates in class ",
                             service->name(),
                             name == "experimental_async"
                                 ? ", where it would hide the stub's "
                                   "experimental_async() accessor. "
                                 : ", so its output would not compile. ",
                             "Rename the method"));
  }
  if (CollidesWithStubkitMembers(name) || class_members.count(name) > 0) {
    return Fail(service, method,
                absl::StrCat("'", name,
                             "' collides with a name stubkit generates for "
                             "this service. Rename the method"));
  }
  for (const Descriptor* type : {method->input_type(), method->output_type()}) {
    std::string problem = CheckMessageType(type);
    if (!problem.empty()) return Fail(service, method, problem);
  }
  return "";
}

// The convention-free part of `method`'s model (Conventions() fill the
// rest).
MethodModel BuildMethodModel(const MethodDescriptor* method) {
  MethodModel model;
  model.name = method->name();
  model.full_name = method->full_name();
  model.kind = KindOf(method);
  model.idempotency_reason = IdempotencyReason(method);
  model.idempotent = !model.idempotency_reason.empty();
  model.deprecated = method->options().deprecated();
  model.request = QualifiedMessageName(method->input_type());
  model.response = QualifiedMessageName(method->output_type());
  model.comment = LeadingComment(method, "");
  return model;
}

// Builds the model of `service`, or says why it cannot be generated.
// `symbols` holds the names already taken in the package's namespace; the
// service's generated names join them.
bool BuildServiceModel(const ServiceDescriptor* service, int protoc_release,
                       std::map<std::string, std::string>* symbols,
                       ServiceModel* model, std::string* error) {
  if (IsCppKeyword(service->name())) {
    *error = Fail(service, nullptr,
                  "the service name is a C++ keyword; grpc_cpp_plugin "
                  "cannot generate a class for it. Rename the service");
    return false;
  }
  for (const std::string& name : GeneratedTopLevelNames(service->name())) {
    auto it = symbols->find(name);
    if (it != symbols->end()) {
      *error = Fail(
          service, nullptr,
          absl::StrCat("stubkit generates '", name,
                       "' for this service, which clashes with ", it->second,
                       " in the same C++ namespace. Rename one"));
      return false;
    }
  }
  // Later services must not clash with what this one generates.
  for (const std::string& name : GeneratedTopLevelNames(service->name())) {
    (*symbols)[name] =
        "a name stubkit generates for service " + service->full_name();
  }
  model->name = service->name();
  model->full_name = service->full_name();
  model->grpc_class = absl::StrCat(
      PackageToNamespace(service->file()->package()), "::", service->name());
  model->comment = LeadingComment(service, "");

  std::set<std::string> class_members = {"DecoratorsOption"};
  for (const std::string& name : GeneratedTopLevelNames(service->name())) {
    class_members.insert(name);
  }
  for (const std::string& name : GeneratedMockNames(service->name())) {
    class_members.insert(name);
  }
  for (int m = 0; m < service->method_count(); ++m) {
    const MethodDescriptor* method = service->method(m);
    if (method->server_streaming() || method->client_streaming()) {
      class_members.insert(method->name() + "ResumeOption");
    }
  }
  for (int m = 0; m < service->method_count(); ++m) {
    *error = CheckMethod(service, service->method(m), class_members);
    if (!error->empty()) return false;
    model->methods.push_back(BuildMethodModel(service->method(m)));
    model->methods.back().index = m;
    for (const Convention* convention : Conventions()) {
      *error = convention->BuildMethod(service->method(m), protoc_release,
                                       model->methods.back());
      if (!error->empty()) return false;
    }
  }
  *error = CheckClientMembers(service, *model);
  if (error->empty()) *error = CheckGrpcPrivateMembers(service);
  for (const Convention* convention : Conventions()) {
    if (error->empty()) *error = convention->CheckService(service, *model);
  }
  return error->empty();
}

}  // namespace

bool BuildFileModel(const FileDescriptor* file, FileModel* model,
                    std::string* error, int protoc_release) {
  model->proto_name = file->name();
  model->stem = FileStem(file->name());
  model->package = file->package();
  for (const std::string& part : PackageParts(file->package())) {
    if (IsCppKeyword(part)) {
      *error = Fail(nullptr, nullptr,
                    absl::StrCat("package ", file->package(),
                                 " contains the C++ keyword '", part,
                                 "', which cannot be a namespace"));
      return false;
    }
  }
  std::map<std::string, std::string> symbols;
  std::set<const FileDescriptor*> seen;
  CollectPackageSymbols(file, file->package(), &seen, &symbols);
  if (file->service_count() > 0) {
    auto it = symbols.find(kMockNamespace);
    if (it != symbols.end()) {
      *error = Fail(
          file->service(0), nullptr,
          absl::StrCat("stubkit puts its mocks in namespace '", kMockNamespace,
                       "', which clashes with ", it->second,
                       " in the same C++ namespace. Rename it"));
      return false;
    }
  }
  for (int s = 0; s < file->service_count(); ++s) {
    ServiceModel service;
    if (!BuildServiceModel(file->service(s), protoc_release, &symbols, &service,
                           error)) {
      return false;
    }
    model->services.push_back(std::move(service));
  }
  return true;
}

namespace {

// SClient is the class where generated names meet: for a method M it
// holds M, AsyncM and, for streams, MResumeOption, and each convention adds
// its own (ClientMember, convention.h). The stub and connection classes
// hold the same names, but the parameters there (the context or
// OptionsView first, then a callback, reactor or nothing) never coincide
// between M and another method's AsyncM.

}  // namespace

std::string CheckClientMembers(const ServiceDescriptor* service,
                               const ServiceModel& model) {
  std::vector<ClientMember> members;
  for (const char* name :
       {"DecoratorsOption", "options_", "method_options_", "connection_"}) {
    members.push_back({name, false, "", -1, "a member of every client"});
  }
  // Generated code names these classes unqualified inside the client.
  for (const std::string& name : GeneratedTopLevelNames(model.name)) {
    members.push_back({name, false, "", -1, "a class stubkit generates"});
  }
  for (size_t i = 0; i < model.methods.size(); ++i) {
    const MethodModel& m = model.methods[i];
    const int index = static_cast<int>(i);
    auto expand = [&m](const std::string& text) {
      return absl::StrReplaceAll(text, {{"$Method$", m.name},
                                        {"$Request$", m.request},
                                        {"$Response$", m.response}});
    };
    for (const Signature* signature : SignaturesFor(Layer::kClient, m.kind)) {
      members.push_back(
          {expand(signature->name), true, expand(ParamTypes(*signature)), index,
           signature->variant == Variant::kSync
               ? absl::StrCat("rpc ", m.name)
               : absl::StrCat("the asynchronous variant of rpc ", m.name)});
    }
    if (m.kind != Kind::kUnary) {
      members.push_back({m.name + "ResumeOption", false, "", index,
                         absl::StrCat("the resume option of rpc ", m.name)});
    }
  }
  for (const Convention* convention : Conventions()) {
    convention->AddClientMembers(model, members);
  }
  std::map<std::string, std::vector<const ClientMember*>> by_name;
  for (const ClientMember& member : members) {
    by_name[member.name].push_back(&member);
  }
  for (const auto& [name, same] : by_name) {
    for (size_t a = 0; a < same.size(); ++a) {
      for (size_t b = a + 1; b < same.size(); ++b) {
        const ClientMember* first = same[a];
        const ClientMember* second = same[b];
        if (first->method == second->method) continue;
        const bool both_functions = first->function && second->function;
        if (both_functions && first->params != second->params) continue;
        if (first->method > second->method) std::swap(first, second);
        return Fail(
            service, service->method(second->method),
            absl::StrCat(
                "stubkit would declare '", name, "' in ", model.name,
                "Client both as ", second->what, " and as ", first->what,
                both_functions ? absl::StrCat(", with the same parameters (",
                                              first->params, ")")
                               : "",
                "; that does not compile. Rename one of the methods"));
      }
    }
  }
  return "";
}

std::string CheckGrpcPrivateMembers(const ServiceDescriptor* service) {
  std::map<std::string, const MethodDescriptor*> by_name;
  for (int m = 0; m < service->method_count(); ++m) {
    by_name[service->method(m)->name()] = service->method(m);
  }
  for (int m = 0; m < service->method_count(); ++m) {
    const MethodDescriptor* method = service->method(m);
    const std::string& name = method->name();
    // The Stub's data member `rpcmethod_X_` for each method X.
    if (absl::StartsWith(name, "rpcmethod_") && absl::EndsWith(name, "_") &&
        name.size() > 11 && by_name.count(name.substr(10, name.size() - 11))) {
      return Fail(service, method,
                  absl::StrCat("'", name,
                               "' collides with a member grpc_cpp_plugin "
                               "generates for rpc ",
                               name.substr(10, name.size() - 11),
                               ", so its output would not compile. Rename "
                               "the method"));
    }
    // For a unary or server-streaming X, grpc_cpp_plugin declares private
    // AsyncXRaw/PrepareAsyncXRaw (and XRaw) taking (context, request, ...);
    // the public async members of a method XRaw with the same request type
    // have those names and parameters.
    if (method->client_streaming() || !absl::EndsWith(name, "Raw")) continue;
    auto base = by_name.find(name.substr(0, name.size() - 3));
    if (base == by_name.end() || base->second->client_streaming() ||
        base->second->input_type() != method->input_type()) {
      continue;
    }
    return Fail(
        service, method,
        absl::StrCat("'", name, "' takes the same request as rpc ", base->first,
                     ", for which grpc_cpp_plugin generates members "
                     "named Async",
                     name, " and PrepareAsync", name,
                     " with the same parameters as this method's, so "
                     "its output would not compile. Rename the method"));
  }
  return "";
}

bool IsIdempotentByProto(const MethodDescriptor* method) {
  return !IdempotencyReason(method).empty();
}

std::string IdempotencyReason(const MethodDescriptor* method) {
  const MethodOptions& options = method->options();
  if (options.idempotency_level() == MethodOptions::IDEMPOTENT) {
    return "idempotency_level = IDEMPOTENT";
  }
  if (options.idempotency_level() == MethodOptions::NO_SIDE_EFFECTS) {
    return "idempotency_level = NO_SIDE_EFFECTS";
  }
  // Known or not to this binary, the http extension survives a round trip
  // through the wire format; read it as unknown fields.
  UnknownFieldSet fields;
  if (!fields.ParseFromString(options.SerializeAsString())) return "";
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& field = fields.field(i);
    if (field.number() != kHttpExtensionNumber ||
        field.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    UnknownFieldSet rule;
    if (!rule.ParseFromString(field.length_delimited())) continue;
    for (int j = 0; j < rule.field_count(); ++j) {
      const int number = rule.field(j).number();
      if (number == kHttpRuleGet) return "its google.api.http get binding";
      if (number == kHttpRulePut) return "its google.api.http put binding";
    }
  }
  return "";
}

}  // namespace generator
}  // namespace stubkit

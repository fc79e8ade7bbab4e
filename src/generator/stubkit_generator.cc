// Copyright 2026 The stubkit Authors.

#include "src/generator/stubkit_generator.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/unknown_field_set.h>

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

namespace stubkit {
namespace generator {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::MethodOptions;
using google::protobuf::ServiceDescriptor;
using google::protobuf::SourceLocation;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;
using google::protobuf::compiler::GeneratorContext;

// google/api/annotations.proto: `extend MethodOptions { HttpRule http =
// 72295728; }`, and in google/api/http.proto HttpRule's pattern oneof has
// get = 2 and put = 3 (post = 4, delete = 5, patch = 6, custom = 8). The
// plugin does not link the google/api protos, so it reads the raw bytes.
constexpr int kHttpExtensionNumber = 72295728;
constexpr int kHttpRuleGet = 2;
constexpr int kHttpRulePut = 3;

// C++ keywords and alternative tokens (C++20 included: users compile
// generated code with newer standards too).
const std::set<std::string>& CppKeywords() {
  static const auto* const kKeywords = new std::set<std::string>{
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
      "bool", "break", "case", "catch", "char", "char8_t", "char16_t",
      "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
      "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof",
      "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq",
      // Macros every translation unit sees.
      "NULL", "assert", "errno", "offsetof", "setjmp", "va_arg"};
  return *kKeywords;
}

bool IsCppKeyword(const std::string& name) {
  return CppKeywords().count(name) > 0;
}

// Method names that collide with the members grpc_cpp_plugin (1.51)
// generates: its output does not compile, or, for `experimental_async`, the
// method hides StubInterface's experimental_async() accessor in Stub and in
// grpc's MockStub.
bool CollidesWithGrpc(const std::string& method_name) {
  static const auto* const kNames = new std::set<std::string>{
      "Stub",     "StubInterface",   "Service",
      "async",    "async_interface", "experimental_async",
      "channel_", "async_stub_",     "experimental_async_interface"};
  return kNames->count(method_name) > 0;
}

// Identifiers the generated classes use for their own members.
bool CollidesWithStubkitMembers(const std::string& method_name) {
  static const auto* const kNames = new std::set<std::string>{
      "child",    "child_",   "stub_",      "grpc_stub_",
      "options_", "refusal_", "connection_"};
  return kNames->count(method_name) > 0;
}

enum class Kind { kUnary, kServerStreaming, kClientStreaming, kBidi };

struct MethodModel {
  std::string name;
  std::string full_name;
  Kind kind;
  bool idempotent;
  bool deprecated;
  std::string request;   // "::pkg::Req"
  std::string response;  // "::pkg::Resp"
  std::string comment;   // "// ...\n" lines, possibly empty
};

struct ServiceModel {
  std::string name;
  std::string full_name;
  std::string grpc_class;  // "::pkg::Svc"
  std::string comment;
  std::vector<MethodModel> methods;
};

// "a.b.c" -> "::a::b::c"; "" -> "".
std::string PackageToNamespace(const std::string& package) {
  if (package.empty()) return "";
  return "::" + absl::StrReplaceAll(package, {{".", "::"}});
}

// The C++ name of a message type as both protobuf and grpc_cpp_plugin spell
// it: the package as namespaces, nesting joined with '_'.
std::string QualifiedMessageName(const Descriptor* message) {
  std::string name = message->name();
  for (const Descriptor* outer = message->containing_type(); outer != nullptr;
       outer = outer->containing_type()) {
    name = absl::StrCat(outer->name(), "_", name);
  }
  return absl::StrCat(PackageToNamespace(message->file()->package()),
                      "::", name);
}

// The names of `message` and its containers, which become (parts of) C++
// identifiers.
std::vector<std::string> MessageNameParts(const Descriptor* message) {
  std::vector<std::string> parts;
  for (const Descriptor* d = message; d != nullptr; d = d->containing_type()) {
    parts.push_back(d->name());
  }
  return parts;
}

// Turns a proto comment into "// " lines. Trailing backslashes are dropped:
// in a // comment they would splice the next line of code into the comment.
std::string FormatComment(const std::string& text, const std::string& indent) {
  std::string out;
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) {
    lines.pop_back();
  }
  for (std::string line : lines) {
    while (!line.empty() && (line.back() == '\\' || line.back() == ' ' ||
                             line.back() == '\t' || line.back() == '\r')) {
      line.pop_back();
    }
    if (line.empty()) {
      absl::StrAppend(&out, indent, "//\n");
    } else {
      absl::StrAppend(&out, indent, "//", line[0] == ' ' ? "" : " ", line,
                      "\n");
    }
  }
  return out;
}

template <typename D>
std::string LeadingComment(const D* descriptor, const std::string& indent) {
  SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return "";
  return FormatComment(location.leading_comments, indent);
}

// A tiny template engine: "$name$" is replaced by vars["name"]; "$$" is "$".
class Writer {
 public:
  using Vars = std::map<std::string, std::string>;

  void Emit(const Vars& vars, absl::string_view text) {
    while (!text.empty()) {
      size_t open = text.find('$');
      if (open == absl::string_view::npos) {
        out_.append(text.data(), text.size());
        return;
      }
      out_.append(text.data(), open);
      size_t close = text.find('$', open + 1);
      if (close == absl::string_view::npos) {
        // A template bug; keep the text so the output shows it.
        out_.append(text.data() + open, text.size() - open);
        return;
      }
      std::string key(text.substr(open + 1, close - open - 1));
      if (key.empty()) {
        out_ += '$';
      } else {
        auto it = vars.find(key);
        out_ += it != vars.end() ? it->second : "<missing:" + key + ">";
      }
      text.remove_prefix(close + 1);
    }
  }
  void Raw(absl::string_view text) { out_.append(text.data(), text.size()); }

  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

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

// The per-service names at namespace scope.
std::vector<std::string> GeneratedTopLevelNames(const std::string& service) {
  return {service + "Methods",
          service + "Stub",
          service + "StubDecorator",
          service + "GrpcStub",
          service + "Connection",
          "Make" + service + "Connection",
          service + "Client",
          service + "ConnectionImpl",
          service + "RefusingConnection"};
}

// The namespace, nested in the package's, that holds the gMock classes.
// grpc_cpp_plugin's `generate_mock_code=true` puts its own `Mock<S>Stub` in
// the package's namespace; a nested one keeps both usable in one program.
constexpr char kMockNamespace[] = "stubkit_mocks";

// The per-service classes in kMockNamespace.
std::vector<std::string> GeneratedMockNames(const std::string& service) {
  return {"Mock" + service + "Stub", "Mock" + service + "Connection"};
}

// Every identifier protobuf and gRPC put at the namespace scope of
// `package`, from `file` and the files it imports.
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

// "foo/bar.proto" -> "foo/bar", the prefix every generated file shares.
std::string FileStem(const FileDescriptor* file) {
  std::string stem = file->name();
  if (absl::EndsWith(stem, ".proto")) stem.resize(stem.size() - 6);
  return stem;
}

std::vector<std::string> PackageParts(const FileDescriptor* file) {
  return absl::StrSplit(file->package(), '.', absl::SkipEmpty());
}

class FileGenerator {
 public:
  explicit FileGenerator(const FileDescriptor* file) : file_(file) {}

  // Builds the model; false with `*error` when the file cannot be handled.
  bool Build(std::string* error);

  std::string Header() const;
  std::string Source() const;
  std::string Mock() const;

 private:
  std::string Fail(const ServiceDescriptor* service,
                   const MethodDescriptor* method,
                   const std::string& reason) const {
    // protoc prefixes the file name; say which service and method.
    std::string where;
    if (service != nullptr) {
      absl::StrAppend(&where, "service ", service->full_name());
    }
    if (method != nullptr) {
      absl::StrAppend(&where, ", method ", method->name());
    }
    return where.empty() ? reason : absl::StrCat(where, ": ", reason);
  }

  std::string Stem() const { return FileStem(file_); }

  std::string Guard(absl::string_view suffix) const {
    std::string guard = "STUBKIT_GENERATED_";
    for (char c : absl::StrCat(Stem(), suffix)) {
      guard += absl::ascii_isalnum(static_cast<unsigned char>(c))
                   ? absl::ascii_toupper(static_cast<unsigned char>(c))
                   : '_';
    }
    return guard + "_";
  }

  // Two generated members of SClient that C++ cannot tell apart; "" or the
  // error naming the later of the two methods involved.
  std::string CheckGeneratedMembers(const ServiceDescriptor* service,
                                    const ServiceModel& model) const;
  // Methods whose grpc_cpp_plugin output does not compile because of
  // another method's generated private members.
  std::string CheckGrpcPrivateMembers(const ServiceDescriptor* service) const;

  void OpenNamespace(Writer& w) const;
  void CloseNamespace(Writer& w) const;
  Writer::Vars Vars(const ServiceModel& service) const;
  Writer::Vars Vars(const ServiceModel& service,
                    const MethodModel& method) const;

  void EmitStubOverrides(Writer& w, const ServiceModel& service) const;
  void HeaderService(Writer& w, const ServiceModel& service) const;
  void SourceService(Writer& w, const ServiceModel& service) const;
  void MockService(Writer& w, const ServiceModel& service) const;

  const FileDescriptor* file_;
  std::vector<ServiceModel> services_;
};

bool FileGenerator::Build(std::string* error) {
  for (const std::string& part : PackageParts(file_)) {
    if (IsCppKeyword(part)) {
      *error = Fail(nullptr, nullptr,
                    absl::StrCat("package ", file_->package(),
                                 " contains the C++ keyword '", part,
                                 "', which cannot be a namespace"));
      return false;
    }
  }
  std::map<std::string, std::string> symbols;
  std::set<const FileDescriptor*> seen;
  CollectPackageSymbols(file_, file_->package(), &seen, &symbols);
  if (file_->service_count() > 0) {
    auto it = symbols.find(kMockNamespace);
    if (it != symbols.end()) {
      *error = Fail(
          file_->service(0), nullptr,
          absl::StrCat("stubkit puts its mocks in namespace '", kMockNamespace,
                       "', which clashes with ", it->second,
                       " in the same C++ namespace. Rename it"));
      return false;
    }
  }

  for (int s = 0; s < file_->service_count(); ++s) {
    const ServiceDescriptor* service = file_->service(s);
    if (IsCppKeyword(service->name())) {
      *error = Fail(service, nullptr,
                    "the service name is a C++ keyword; grpc_cpp_plugin "
                    "cannot generate a class for it. Rename the service");
      return false;
    }
    for (const std::string& name : GeneratedTopLevelNames(service->name())) {
      auto it = symbols.find(name);
      if (it != symbols.end()) {
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
      symbols[name] =
          "a name stubkit generates for service " + service->full_name();
    }
    ServiceModel model;
    model.name = service->name();
    model.full_name = service->full_name();
    model.grpc_class = absl::StrCat(PackageToNamespace(file_->package()),
                                    "::", service->name());
    model.comment = LeadingComment(service, "");

    std::set<std::string> class_members = {"DecoratorsOption"};
    for (const std::string& name : GeneratedTopLevelNames(service->name())) {
      class_members.insert(name);
    }
    for (const std::string& name : GeneratedMockNames(service->name())) {
      class_members.insert(name);
    }
    for (int m = 0; m < service->method_count(); ++m) {
      const MethodDescriptor* method = service->method(m);
      if (method->server_streaming() && !method->client_streaming()) {
        class_members.insert(method->name() + "ResumeOption");
      }
    }
    for (int m = 0; m < service->method_count(); ++m) {
      const MethodDescriptor* method = service->method(m);
      const std::string& name = method->name();
      if (IsCppKeyword(name)) {
        *error = Fail(service, method,
                      absl::StrCat("'", name,
                                   "' is a C++ keyword; grpc_cpp_plugin emits "
                                   "it unchanged, so no C++ client can be "
                                   "generated. Rename the method"));
        return false;
      }
      if (CollidesWithGrpc(name)) {
        *error = Fail(service, method,
                      absl::StrCat("'", name,
                                   "' collides with a member grpc_cpp_plugin "
                                   "generates in class ",
                                   service->name(),
                                   name == "experimental_async"
                                       ? ", where it would hide the stub's "
                                         "experimental_async() accessor. "
                                       : ", so its output would not compile. ",
                                   "Rename the method"));
        return false;
      }
      if (CollidesWithStubkitMembers(name) || class_members.count(name) > 0) {
        *error = Fail(service, method,
                      absl::StrCat("'", name,
                                   "' collides with a name stubkit generates "
                                   "for this service. Rename the method"));
        return false;
      }
      for (const Descriptor* type :
           {method->input_type(), method->output_type()}) {
        std::string problem = CheckMessageType(type);
        if (!problem.empty()) {
          *error = Fail(service, method, problem);
          return false;
        }
      }
      MethodModel mm;
      mm.name = name;
      mm.full_name = method->full_name();
      if (method->client_streaming() && method->server_streaming()) {
        mm.kind = Kind::kBidi;
      } else if (method->client_streaming()) {
        mm.kind = Kind::kClientStreaming;
      } else if (method->server_streaming()) {
        mm.kind = Kind::kServerStreaming;
      } else {
        mm.kind = Kind::kUnary;
      }
      mm.idempotent = IsIdempotentByProto(method);
      mm.deprecated = method->options().deprecated();
      mm.request = QualifiedMessageName(method->input_type());
      mm.response = QualifiedMessageName(method->output_type());
      mm.comment = LeadingComment(method, "  ");
      model.methods.push_back(std::move(mm));
    }
    std::string clash = CheckGeneratedMembers(service, model);
    if (clash.empty()) clash = CheckGrpcPrivateMembers(service);
    if (!clash.empty()) {
      *error = clash;
      return false;
    }
    services_.push_back(std::move(model));
  }
  return true;
}

// A member stubkit declares in SClient. The client is the class where
// generated names meet: for a method M it holds M and, for unary and
// server-streaming methods, AsyncM (and MResumeOption). The stub and
// connection classes hold the same names, but the parameters there (the
// context or OptionsView first, then a callback, reactor or nothing) never
// coincide between M and another method's AsyncM.
struct ClientMember {
  std::string name;
  bool function;       // false: a type or data member; any reuse clashes
  std::string params;  // functions: the parameter types
  int method;          // the method it comes from; -1 for fixed names
  std::string what;    // for the error message
};

std::string FileGenerator::CheckGeneratedMembers(
    const ServiceDescriptor* service, const ServiceModel& model) const {
  std::vector<ClientMember> members;
  for (const char* name : {"DecoratorsOption", "options_", "connection_"}) {
    members.push_back({name, false, "", -1, "a member of every client"});
  }
  // Generated code names these classes unqualified inside the client.
  for (const std::string& name : GeneratedTopLevelNames(model.name)) {
    members.push_back({name, false, "", -1, "a class stubkit generates"});
  }
  const std::string options = "const ::stubkit::Options&";
  for (size_t i = 0; i < model.methods.size(); ++i) {
    const MethodModel& m = model.methods[i];
    const int index = static_cast<int>(i);
    const std::string request = absl::StrCat("const ", m.request, "&, ");
    const std::string async_what =
        absl::StrCat("the asynchronous variant of rpc ", m.name);
    const std::string self = absl::StrCat("rpc ", m.name);
    switch (m.kind) {
      case Kind::kUnary:
        members.push_back({m.name, true, request + options, index, self});
        members.push_back(
            {"Async" + m.name, true, request + options, index, async_what});
        members.push_back({"Async" + m.name, true,
                           absl::StrCat(request, "::stubkit::AsyncCallback<",
                                        m.response, ">, ", options),
                           index, async_what});
        break;
      case Kind::kServerStreaming:
        members.push_back({m.name, true, request + options, index, self});
        members.push_back(
            {"Async" + m.name, true,
             absl::StrCat(request, "::stubkit::MessageCallback<", m.response,
                          ">, ::stubkit::DoneCallback, ", options),
             index, async_what});
        members.push_back({m.name + "ResumeOption", false, "", index,
                           absl::StrCat("the resume option of rpc ", m.name)});
        break;
      case Kind::kClientStreaming:
      case Kind::kBidi:
        members.push_back({m.name, true, options, index, self});
        break;
    }
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

std::string FileGenerator::CheckGrpcPrivateMembers(
    const ServiceDescriptor* service) const {
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

void FileGenerator::OpenNamespace(Writer& w) const {
  for (const std::string& part : PackageParts(file_)) {
    w.Emit({{"ns", part}}, "namespace $ns$ {\n");
  }
  if (!file_->package().empty()) w.Raw("\n");
}

void FileGenerator::CloseNamespace(Writer& w) const {
  std::vector<std::string> parts = PackageParts(file_);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    w.Emit({{"ns", *it}}, "}  // namespace $ns$\n");
  }
}

Writer::Vars FileGenerator::Vars(const ServiceModel& service) const {
  return {{"Service", service.name},
          {"package", PackageToNamespace(file_->package())},
          {"mocks", kMockNamespace},
          {"service_full_name", service.full_name},
          {"grpc_class", service.grpc_class}};
}

Writer::Vars FileGenerator::Vars(const ServiceModel& service,
                                 const MethodModel& method) const {
  Writer::Vars vars = Vars(service);
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
                         " is deprecated in ", file_->name(), "\")]]\n")
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
void FileGenerator::EmitStubOverrides(Writer& w,
                                      const ServiceModel& service) const {
  for (const MethodModel& method : service.methods) {
    w.Raw("\n");
    w.Emit(Vars(service, method),
           absl::StrCat("  ", SignaturesFor(method.kind).stub, " override;\n"));
    if (const char* async = AsyncStubSignature(method.kind)) {
      w.Emit(Vars(service, method), absl::StrCat("  ", async, " override;\n"));
    }
  }
}

void FileGenerator::HeaderService(Writer& w,
                                  const ServiceModel& service) const {
  Writer::Vars vars = Vars(service);
  // Method descriptions.
  w.Emit(vars,
         "// The static description of each $service_full_name$ method, "
         "handed to the\n"
         "// stubkit runtime.\n"
         "struct $Service$Methods {\n");
  for (const MethodModel& method : service.methods) {
    w.Emit(Vars(service, method),
           "  static constexpr ::stubkit::MethodInfo k$Method${\n"
           "      \"$method_full_name$\", $kind$,\n"
           "      $idempotency$};\n");
  }
  w.Emit(vars, "};\n\n");

  // The per-attempt interface.
  w.Emit(vars,
         "// One attempt of each $service_full_name$ RPC. Implemented by\n"
         "// $Service$GrpcStub (the wire) and by decorators; derive from\n"
         "// $Service$StubDecorator to add a layer.\n"
         "class $Service$Stub {\n"
         " public:\n"
         "  virtual ~$Service$Stub() = default;\n");
  for (const MethodModel& method : service.methods) {
    Writer::Vars mv = Vars(service, method);
    w.Raw("\n");
    w.Emit(mv, absl::StrCat("  virtual ", SignaturesFor(method.kind).stub,
                            " = 0;\n"));
    if (const char* async = AsyncStubSignature(method.kind)) {
      w.Emit(mv, absl::StrCat("  virtual ", async, " = 0;\n"));
    }
  }
  w.Emit(vars, "};\n\n");

  // The forwarding base.
  w.Emit(vars,
         "// Forwards every method to the stub below it. Override what you "
         "need.\n"
         "class $Service$StubDecorator : public $Service$Stub {\n"
         " public:\n"
         "  explicit $Service$StubDecorator(::std::shared_ptr<$Service$Stub> "
         "child)\n"
         "      : child_(::std::move(child)) {}\n");
  EmitStubOverrides(w, service);
  w.Emit(vars,
         "\n"
         " protected:\n"
         "  const ::std::shared_ptr<$Service$Stub>& child() const { return "
         "child_; }\n"
         "\n"
         " private:\n"
         "  ::std::shared_ptr<$Service$Stub> child_;\n"
         "};\n\n");

  // The bottom.
  w.Emit(vars,
         "// Calls the grpc_cpp_plugin stub.\n"
         "class $Service$GrpcStub : public $Service$Stub {\n"
         " public:\n"
         "  explicit $Service$GrpcStub(\n"
         "      ::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub)\n"
         "      : grpc_stub_(::std::move(grpc_stub)) {}\n");
  EmitStubOverrides(w, service);
  w.Emit(vars,
         "\n"
         " private:\n"
         "  ::std::unique_ptr<$grpc_class$::StubInterface> grpc_stub_;\n"
         "};\n\n");

  // The connection.
  w.Emit(vars,
         "// Runs each $service_full_name$ call under the stubkit retry "
         "rules. Mock it\n"
         "// ($mocks$::Mock$Service$Connection) to test code that uses "
         "$Service$Client.\n"
         "class $Service$Connection {\n"
         " public:\n"
         "  virtual ~$Service$Connection() = default;\n");
  for (const MethodModel& method : service.methods) {
    w.Raw("\n");
    w.Emit(Vars(service, method),
           absl::StrCat("  virtual ", SignaturesFor(method.kind).connection,
                        " = 0;\n"));
    if (const char* async = AsyncConnectionSignature(method.kind)) {
      w.Emit(Vars(service, method),
             absl::StrCat("  virtual ", async, " = 0;\n"));
    }
  }
  w.Emit(vars,
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
  if (!service.comment.empty()) w.Raw(service.comment + "//\n");
  w.Emit(vars,
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
    w.Emit(Vars(service, method),
           "  // Resumes a broken $Method$ stream: rewrite the request from "
           "the last\n"
           "  // response received; return false to report the break "
           "instead.\n"
           "  struct $Method$ResumeOption {\n"
           "    using Type = ::stubkit::ResumeHook<$Request$, $Response$>;\n"
           "    static Type Default() { return nullptr; }\n"
           "  };\n");
  }
  w.Emit(vars,
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
    w.Raw("\n");
    Writer::Vars mv = Vars(service, method);
    w.Emit(mv, absl::StrCat("$comment$$deprecated$  ",
                            SignaturesFor(method.kind).client, ";\n"));
    if (method.kind == Kind::kUnary) {
      w.Emit(mv,
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
      w.Emit(mv,
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
  w.Emit(vars,
         "\n"
         " private:\n"
         "  ::stubkit::Options options_;\n"
         "  ::std::shared_ptr<$Service$Connection> connection_;\n"
         "};\n\n");
}

void FileGenerator::SourceService(Writer& w,
                                  const ServiceModel& service) const {
  Writer::Vars vars = Vars(service);
  const std::string decorator = service.name + "StubDecorator";
  const std::string grpc_stub = service.name + "GrpcStub";
  for (const MethodModel& method : service.methods) {
    Writer::Vars mv = Vars(service, method);
    std::string signature =
        OutOfClass(SignaturesFor(method.kind).stub, decorator);
    w.Emit(mv, signature + " {\n");
    switch (method.kind) {
      case Kind::kUnary:
      case Kind::kServerStreaming:
        w.Emit(mv, "  return child_->$Method$(context, options, request);\n");
        break;
      case Kind::kClientStreaming:
        w.Emit(mv, "  return child_->$Method$(context, options, response);\n");
        break;
      case Kind::kBidi:
        w.Emit(mv, "  return child_->$Method$(context, options);\n");
        break;
    }
    w.Raw("}\n\n");
  }
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kServerStreaming) continue;
    Writer::Vars mv = Vars(service, method);
    mv["Decorator"] = decorator;
    mv["GrpcStub"] = grpc_stub;
    w.Emit(mv,
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
    Writer::Vars mv = Vars(service, method);
    mv["Decorator"] = decorator;
    mv["GrpcStub"] = grpc_stub;
    w.Emit(mv,
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
    Writer::Vars mv = Vars(service, method);
    // The gRPC stub ignores the options: the layers above applied them.
    std::string signature = absl::StrReplaceAll(
        OutOfClass(SignaturesFor(method.kind).stub, grpc_stub),
        {{"& options", "& /*options*/"}});
    w.Emit(mv, signature + " {\n$check_metadata$");
    switch (method.kind) {
      case Kind::kUnary:
        w.Emit(mv,
               "    return refused;\n"
               "  }\n"
               "  $Response$ response;\n"
               "  return ::stubkit::internal::ToStatusOr(\n"
               "      grpc_stub_->$Method$(&context, request, &response),\n"
               "      ::std::move(response));\n");
        break;
      case Kind::kServerStreaming:
        w.Emit(
            mv,
            "    return ::std::make_unique<\n"
            "        ::stubkit::internal::RefusedClientReader<$Response$>>(\n"
            "        ::stubkit::internal::ToGrpcStatus(refused));\n"
            "  }\n"
            "  return grpc_stub_->$Method$(&context, request);\n");
        break;
      case Kind::kClientStreaming:
        w.Emit(mv,
               "    return ::std::make_unique<\n"
               "        ::stubkit::internal::RefusedClientWriter<$Request$>>(\n"
               "        ::stubkit::internal::ToGrpcStatus(refused));\n"
               "  }\n"
               "  return grpc_stub_->$Method$(&context, response);\n");
        break;
      case Kind::kBidi:
        w.Emit(mv,
               "    return ::std::make_unique<\n"
               "        ::stubkit::internal::RefusedClientReaderWriter<\n"
               "            $Request$, $Response$>>(\n"
               "        ::stubkit::internal::ToGrpcStatus(refused));\n"
               "  }\n"
               "  return grpc_stub_->$Method$(&context);\n");
        break;
    }
    w.Raw("}\n\n");
  }

  // The default connection.
  w.Emit(vars,
         "namespace {\n\n"
         "class $Service$ConnectionImpl : public $Service$Connection {\n"
         " public:\n"
         "  explicit $Service$ConnectionImpl(::std::shared_ptr<$Service$Stub> "
         "stub)\n"
         "      : stub_(::std::move(stub)) {}\n");
  for (const MethodModel& method : service.methods) {
    Writer::Vars mv = Vars(service, method);
    w.Raw("\n");
    w.Emit(mv, absl::StrCat("  ", SignaturesFor(method.kind).connection,
                            " override {\n"));
    switch (method.kind) {
      case Kind::kUnary:
        w.Emit(mv,
               "    return ::stubkit::internal::RunUnary<$Response$>(\n"
               "        $Service$Methods::k$Method$, options, request,\n"
               "        [&](::grpc::ClientContext& context) {\n"
               "          return stub_->$Method$(context, options, request);\n"
               "        },\n"
               "        [&] { return Async$Method$Attempt(request); });\n"
               "  }\n\n");
        w.Emit(mv,
               absl::StrCat("  ", kAsyncConnectionSignature, " override {\n"));
        w.Emit(mv,
               "    ::stubkit::internal::RunAsyncUnary<$Response$>(\n"
               "        $Service$Methods::k$Method$, options,\n"
               "        Async$Method$Attempt(request), ::std::move(done));\n");
        break;
      case Kind::kServerStreaming:
        // The reader outlives this call, so the lambda owns the stub.
        w.Emit(mv,
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
        w.Emit(mv, absl::StrCat("  ", kAsyncStreamConnectionSignature,
                                " override {\n"));
        w.Emit(
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
        w.Emit(mv,
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
        w.Emit(mv,
               "    return ::stubkit::internal::OpenBidiStream<$Request$, "
               "$Response$>(\n"
               "        $Service$Methods::k$Method$, options,\n"
               "        [&](::grpc::ClientContext& context) {\n"
               "          return stub_->$Method$(context, options);\n"
               "        });\n");
        break;
    }
    w.Raw("  }\n");
  }
  w.Emit(vars, "\n private:\n");
  for (const MethodModel& method : service.methods) {
    if (method.kind != Kind::kUnary) continue;
    // An attempt that owns the stub and a copy of the request: async and
    // hedged attempts may outlive the call that started them. Not a
    // std::function: the async loop stores it in the call's one allocation.
    w.Emit(
        Vars(service, method),
        "  ::stubkit::internal::AsyncUnaryAttempt<$Service$Stub, $Request$,\n"
        "      $Response$, &$Service$Stub::Async$Method$>\n"
        "  Async$Method$Attempt(const $Request$& request) const {\n"
        "    return {stub_, request};\n"
        "  }\n\n");
  }
  w.Emit(vars,
         "  ::std::shared_ptr<$Service$Stub> stub_;\n"
         "};\n\n");

  // What a client built from a connection uses when its options hold
  // decorators it cannot apply: every call fails before anything is sent.
  w.Emit(vars,
         "// Stands in for the connection of a $Service$Client built from a "
         "connection\n"
         "// with DecoratorsOption, which only Make$Service$Connection can "
         "apply.\n"
         "class $Service$RefusingConnection : public $Service$Connection {\n"
         " public:\n"
         "  explicit $Service$RefusingConnection(::absl::Status refusal)\n"
         "      : refusal_(::std::move(refusal)) {}\n");
  for (const MethodModel& method : service.methods) {
    Writer::Vars mv = Vars(service, method);
    auto unnamed = [](const std::string& signature) {
      return absl::StrReplaceAll(signature,
                                 {{"& options", "& /*options*/"},
                                  {"& request", "& /*request*/"},
                                  {"> on_message", "> /*on_message*/"}});
    };
    w.Raw("\n");
    w.Emit(mv,
           absl::StrCat("  ", unnamed(SignaturesFor(method.kind).connection),
                        " override {\n"));
    switch (method.kind) {
      case Kind::kUnary:
        w.Emit(mv, "    return refusal_;\n  }\n");
        w.Emit(mv, absl::StrCat("  ", unnamed(kAsyncConnectionSignature),
                                " override {\n"
                                "    done(refusal_);\n"));
        break;
      case Kind::kServerStreaming:
        w.Emit(mv,
               "    return ::stubkit::StreamReader<$Response$>(refusal_);\n"
               "  }\n");
        w.Emit(mv, absl::StrCat("  ", unnamed(kAsyncStreamConnectionSignature),
                                " override {\n"
                                "    on_done(refusal_);\n"));
        break;
      case Kind::kClientStreaming:
        w.Emit(mv,
               "    auto writer = ::std::make_unique<\n"
               "        ::stubkit::internal::GrpcStreamWriter<$Request$, "
               "$Response$>>();\n"
               "    writer->Start(nullptr, refusal_);\n"
               "    return ::stubkit::StreamWriter<$Request$, $Response$>(\n"
               "        ::std::move(writer));\n");
        break;
      case Kind::kBidi:
        w.Emit(mv,
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
    w.Raw("  }\n");
  }
  w.Emit(
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
    Writer::Vars mv = Vars(service, method);
    w.Raw("\n");
    w.Emit(mv, absl::StrCat(SignaturesFor(method.kind).client_def, " {\n"));
    switch (method.kind) {
      case Kind::kUnary:
      case Kind::kServerStreaming:
        w.Emit(mv,
               "  return connection_->$Method$(::stubkit::OptionsView(call, "
               "options_),\n"
               "                               request);\n");
        break;
      case Kind::kClientStreaming:
      case Kind::kBidi:
        w.Emit(mv,
               "  return connection_->$Method$(::stubkit::OptionsView(call, "
               "options_));\n");
        break;
    }
    w.Raw("}\n");
    if (method.kind == Kind::kUnary) {
      w.Emit(mv,
             "\n"
             "::std::future<::absl::StatusOr<$Response$>>\n"
             "$Service$Client::Async$Method$(const $Request$& request,\n"
             "    const ::stubkit::Options& call) {\n"
             "  auto [future, fulfil] =\n"
             "      ::stubkit::internal::FulfilPromise<$Response$>::Make();\n"
             "  connection_->Async$Method$(\n"
             "      ::stubkit::OptionsView(call, options_), request, fulfil);\n"
             "  return ::std::move(future);\n"
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
      w.Emit(mv,
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
  w.Raw("\n");
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

void FileGenerator::MockService(Writer& w, const ServiceModel& service) const {
  Writer::Vars vars = Vars(service);
  w.Emit(vars,
         "class Mock$Service$Stub : public $package$::$Service$Stub {\n"
         " public:\n");
  for (const MethodModel& method : service.methods) {
    w.Emit(Vars(service, method), MockMethod(SignaturesFor(method.kind).stub));
    if (const char* async = AsyncStubSignature(method.kind)) {
      w.Emit(Vars(service, method), MockMethod(async, "Async$Method$"));
    }
  }
  w.Emit(vars,
         "};\n\n"
         "class Mock$Service$Connection\n"
         "    : public $package$::$Service$Connection {\n"
         " public:\n");
  for (const MethodModel& method : service.methods) {
    w.Emit(Vars(service, method),
           MockMethod(SignaturesFor(method.kind).connection));
    if (const char* async = AsyncConnectionSignature(method.kind)) {
      w.Emit(Vars(service, method), MockMethod(async, "Async$Method$"));
    }
  }
  w.Raw("};\n\n");
}

std::string FileGenerator::Header() const {
  Writer w;
  Writer::Vars vars = {{"file", file_->name()},
                       {"stem", Stem()},
                       {"guard", Guard(".stubkit.h")}};
  w.Emit(vars,
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
  for (const ServiceModel& service : services_) HeaderService(w, service);
  CloseNamespace(w);
  w.Emit(vars, "\n#endif  // $guard$\n");
  return w.str();
}

std::string FileGenerator::Source() const {
  Writer w;
  Writer::Vars vars = {{"file", file_->name()}, {"stem", Stem()}};
  w.Emit(vars,
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
  for (const ServiceModel& service : services_) SourceService(w, service);
  CloseNamespace(w);
  return w.str();
}

std::string FileGenerator::Mock() const {
  Writer w;
  Writer::Vars vars = {{"file", file_->name()},
                       {"stem", Stem()},
                       {"guard", Guard(".stubkit_mock.h")},
                       {"mocks", kMockNamespace}};
  w.Emit(vars,
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
  w.Emit(vars, "namespace $mocks$ {\n\n");
  for (const ServiceModel& service : services_) MockService(w, service);
  w.Emit(vars, "}  // namespace $mocks$\n");
  CloseNamespace(w);
  w.Emit(vars, "\n#endif  // $guard$\n");
  return w.str();
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

bool IsIdempotentByProto(const MethodDescriptor* method) {
  const MethodOptions& options = method->options();
  if (options.idempotency_level() == MethodOptions::IDEMPOTENT ||
      options.idempotency_level() == MethodOptions::NO_SIDE_EFFECTS) {
    return true;
  }
  // Known or not to this binary, the http extension survives a round trip
  // through the wire format; read it as unknown fields.
  UnknownFieldSet fields;
  if (!fields.ParseFromString(options.SerializeAsString())) return false;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& field = fields.field(i);
    if (field.number() != kHttpExtensionNumber ||
        field.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    UnknownFieldSet rule;
    if (!rule.ParseFromString(field.length_delimited())) continue;
    for (int j = 0; j < rule.field_count(); ++j) {
      int number = rule.field(j).number();
      if (number == kHttpRuleGet || number == kHttpRulePut) return true;
    }
  }
  return false;
}

bool StubkitGenerator::Generate(const FileDescriptor* file,
                                const std::string& parameter,
                                GeneratorContext* context,
                                std::string* error) const {
  if (!parameter.empty()) {
    *error = absl::StrCat("protoc-gen-stubkit takes no options, got '",
                          parameter, "'");
    return false;
  }
  FileGenerator generator(file);
  if (!generator.Build(error)) return false;
  const std::string stem = FileStem(file);
  return WriteFile(context, stem + ".stubkit.h", generator.Header(), error) &&
         WriteFile(context, stem + ".stubkit.cc", generator.Source(), error) &&
         WriteFile(context, stem + ".stubkit_mock.h", generator.Mock(), error);
}

}  // namespace generator
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.

#include "src/generator/names.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace stubkit {
namespace generator {

using google::protobuf::Descriptor;

bool IsCppKeyword(const std::string& name) {
  // C++20 included: users compile generated code with newer standards too.
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
  return kKeywords->count(name) > 0;
}

bool IsProtobufKeyword(const std::string& name, int protoc_release) {
  static const auto* const kKeywords = new std::set<std::string>{
      // protoc 3.21's list, as it is: C++11 keywords, alternative tokens.
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
      "bool", "break", "case", "catch", "char", "class", "compl", "const",
      "constexpr", "const_cast", "continue", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline",
      "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
      "register", "reinterpret_cast", "return", "short", "signed", "sizeof",
      "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq",
      // A macro.
      "NULL"};
  static const auto* const kSince22 = new std::set<std::string>{
      // What protobuf 22 added.
      "char8_t",   "char16_t", "char32_t",  "concept",  "consteval",
      "constinit", "co_await", "co_return", "co_yield", "requires"};
  if (kKeywords->count(name) > 0) return true;
  if (protoc_release >= 22 && kSince22->count(name) > 0) return true;
  return protoc_release >= 23 && name == "assert";
}

std::string ProtobufFieldName(const google::protobuf::FieldDescriptor* field,
                              int protoc_release) {
  std::string name = absl::AsciiStrToLower(field->name());
  if (IsProtobufKeyword(name, protoc_release)) name += "_";
  return name;
}

bool CollidesWithGrpc(const std::string& method_name) {
  static const auto* const kNames = new std::set<std::string>{
      "Stub",     "StubInterface",   "Service",
      "async",    "async_interface", "experimental_async",
      "channel_", "async_stub_",     "experimental_async_interface"};
  return kNames->count(method_name) > 0;
}

bool CollidesWithStubkitMembers(const std::string& method_name) {
  static const auto* const kNames = new std::set<std::string>{
      "child",    "child_",   "stub_",      "grpc_stub_",
      "options_", "refusal_", "connection_"};
  return kNames->count(method_name) > 0;
}

std::string PackageToNamespace(const std::string& package) {
  if (package.empty()) return "";
  return "::" + absl::StrReplaceAll(package, {{".", "::"}});
}

std::vector<std::string> PackageParts(const std::string& package) {
  return absl::StrSplit(package, '.', absl::SkipEmpty());
}

std::string QualifiedMessageName(const Descriptor* message) {
  std::string name = message->name();
  for (const Descriptor* outer = message->containing_type(); outer != nullptr;
       outer = outer->containing_type()) {
    name = absl::StrCat(outer->name(), "_", name);
  }
  return absl::StrCat(PackageToNamespace(message->file()->package()),
                      "::", name);
}

std::vector<std::string> MessageNameParts(const Descriptor* message) {
  std::vector<std::string> parts;
  for (const Descriptor* d = message; d != nullptr; d = d->containing_type()) {
    parts.push_back(d->name());
  }
  return parts;
}

std::string FileStem(const std::string& proto_file_name) {
  std::string stem = proto_file_name;
  if (absl::EndsWith(stem, ".proto")) stem.resize(stem.size() - 6);
  return stem;
}

std::string IncludeGuard(const std::string& file_name) {
  std::string guard = "STUBKIT_GENERATED_";
  for (char c : file_name) {
    guard += absl::ascii_isalnum(static_cast<unsigned char>(c))
                 ? absl::ascii_toupper(static_cast<unsigned char>(c))
                 : '_';
  }
  return guard + "_";
}

std::vector<std::string> GeneratedTopLevelNames(const std::string& service) {
  return {service + "Methods",       service + "Stub",
          service + "StubDecorator", service + "GrpcStub",
          service + "Connection",    "Make" + service + "Connection",
          service + "Client",        service + "ConnectionImpl"};
}

std::vector<std::string> GeneratedMockNames(const std::string& service) {
  return {"Mock" + service + "Stub", "Mock" + service + "Connection"};
}

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

}  // namespace generator
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// Naming and text helpers of protoc-gen-stubkit: how proto names become C++
// names, which names C++, gRPC and stubkit itself reserve, and how proto
// comments become C++ comments. Pure functions, tested in
// tests/generator/names_test.cc.

#ifndef STUBKIT_SRC_GENERATOR_NAMES_H_
#define STUBKIT_SRC_GENERATOR_NAMES_H_

#include <google/protobuf/descriptor.h>

#include <cstddef>
#include <string>
#include <vector>

namespace stubkit {
namespace generator {

// C++ keywords, alternative tokens and macros every translation unit sees.
// For the names stubkit itself emits (or refuses); not for protobuf's
// accessors, which follow ProtobufFieldName.
bool IsCppKeyword(const std::string& name);

// The protobuf release of the protoc that runs the plugin: the minor
// number of its version (21 for 3.21.x, 22 for 22.x, which reports 4.22).
// 21, the release stubkit is built and tested with, when protoc says
// nothing.
inline constexpr int kDefaultProtocRelease = 21;

// Whether protoc's C++ generator of `protoc_release` appends '_' to a
// field named `name` (lowercased): its own keyword list (kKeywordList in
// src/google/protobuf/compiler/cpp/helpers.cc), which is not the language's.
// Up to 21 it holds the C++11 keywords and alternative tokens and NULL, and
// no C++20 keyword (concept, requires, co_await, char8_t, ...); 22 added
// those and char16_t, char32_t; 23 added assert.
bool IsProtobufKeyword(const std::string& name, int protoc_release);

// The name of `field`'s accessors in protoc's C++ code (`name()`,
// `mutable_name()`, `set_name()`): the field's name lowercased, '_'
// appended when IsProtobufKeyword.
std::string ProtobufFieldName(const google::protobuf::FieldDescriptor* field,
                              int protoc_release);

// Method names that collide with the members grpc_cpp_plugin (1.51)
// generates: its output does not compile, or, for `experimental_async`, the
// method hides StubInterface's experimental_async() accessor in Stub and in
// grpc's MockStub.
bool CollidesWithGrpc(const std::string& method_name);

// Identifiers the generated classes use for their own members.
bool CollidesWithStubkitMembers(const std::string& method_name);

// "a.b.c" -> "::a::b::c"; "" -> "".
std::string PackageToNamespace(const std::string& package);

// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> PackageParts(const std::string& package);

// The C++ name of a message type as both protobuf and grpc_cpp_plugin spell
// it: the package as namespaces, nesting joined with '_'.
std::string QualifiedMessageName(const google::protobuf::Descriptor* message);

// The names of `message` and its containers, innermost first; they become
// (parts of) C++ identifiers.
std::vector<std::string> MessageNameParts(
    const google::protobuf::Descriptor* message);

// "foo/bar.proto" -> "foo/bar", the prefix every generated file shares.
std::string FileStem(const std::string& proto_file_name);

// The include guard of a generated file: "foo/bar" + ".stubkit.h" ->
// "STUBKIT_GENERATED_FOO_BAR_STUBKIT_H_".
std::string IncludeGuard(const std::string& file_name);

// The per-service names stubkit generates at namespace scope.
std::vector<std::string> GeneratedTopLevelNames(const std::string& service);

// The namespace, nested in the package's, that holds the gMock classes.
// grpc_cpp_plugin's `generate_mock_code=true` puts its own `Mock<S>Stub` in
// the package's namespace; a nested one keeps both usable in one program.
inline constexpr char kMockNamespace[] = "stubkit_mocks";

// The per-service classes in kMockNamespace.
std::vector<std::string> GeneratedMockNames(const std::string& service);

// Turns a proto comment into "// " lines, each prefixed with `indent`.
// Trailing blank lines go; so do trailing backslashes: in a // comment they
// would splice the next line of code into the comment.
std::string FormatComment(const std::string& text, const std::string& indent);

// The leading comment of `descriptor`'s declaration, formatted; "" when the
// descriptor has none (or no source info).
template <typename D>
std::string LeadingComment(const D* descriptor, const std::string& indent) {
  google::protobuf::SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return "";
  return FormatComment(location.leading_comments, indent);
}

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_NAMES_H_

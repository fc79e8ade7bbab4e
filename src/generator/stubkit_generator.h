// Copyright 2026 The stubkit Authors.
//
// protoc-gen-stubkit: the protoc plugin that writes stubkit clients.
//
// For `foo/bar.proto` it writes `foo/bar.stubkit.h`, `foo/bar.stubkit.cc`
// and `foo/bar.stubkit_mock.h` next to what `--cpp_out` and `--grpc_out`
// write. Run it with the other two:
//
//   protoc -I protos --cpp_out=gen --grpc_out=gen --stubkit_out=gen
//       --plugin=protoc-gen-grpc=$(which grpc_cpp_plugin)
//       --plugin=protoc-gen-stubkit=build/src/generator/protoc-gen-stubkit
//       foo/bar.proto
//
// A proto it cannot turn into compiling C++ (for example a method named
// after a C++ keyword, which grpc_cpp_plugin cannot handle either) fails the
// protoc run with a message naming the file, the service and the method.
// See src/generator/README.md for the generated API.

#ifndef STUBKIT_SRC_GENERATOR_STUBKIT_GENERATOR_H_
#define STUBKIT_SRC_GENERATOR_STUBKIT_GENERATOR_H_

#include <google/protobuf/compiler/code_generator.h>
#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <string>

namespace stubkit {
namespace generator {

class StubkitGenerator : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file,
                const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;

  uint64_t GetSupportedFeatures() const override {
    return FEATURE_PROTO3_OPTIONAL;
  }
};

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_STUBKIT_GENERATOR_H_

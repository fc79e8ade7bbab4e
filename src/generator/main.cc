// Copyright 2026 The stubkit Authors.
//
// protoc-gen-stubkit: protoc runs it as `--plugin=protoc-gen-stubkit=...`
// with `--stubkit_out=DIR`. See stubkit_generator.h.

#include <google/protobuf/compiler/plugin.h>

#include "src/generator/stubkit_generator.h"

int main(int argc, char* argv[]) {
  stubkit::generator::StubkitGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}

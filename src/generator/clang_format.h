// Copyright 2026 The stubkit Authors.
//
// The opt-in formatting of generated files: `--stubkit_out=clang_format=
// /usr/bin/clang-format-14:out` pipes each file through that binary. The
// printers write unformatted code (valid, with long lines); a project that
// reads or diffs its generated code can have it laid out by its own
// clang-format and style. Off by default: the build then needs no
// clang-format.

#ifndef STUBKIT_SRC_GENERATOR_CLANG_FORMAT_H_
#define STUBKIT_SRC_GENERATOR_CLANG_FORMAT_H_

#include <string>

namespace stubkit {
namespace generator {

// Runs `binary` (a path, or a name looked up on the PATH) over `input`,
// the contents of the generated file `name` (relative to the output
// directory), with `--style=file --fallback-style=Google` and
// `--assume-filename=<working directory>/<name>`: the style is the
// nearest .clang-format above that path, which is the one of protoc's
// working directory or a parent (a plugin is not told the output
// directory), else Google's. Returns false with `*error` set when the
// binary cannot be run or fails.
bool ClangFormat(const std::string& binary, const std::string& name,
                 const std::string& input, std::string* output,
                 std::string* error);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_CLANG_FORMAT_H_

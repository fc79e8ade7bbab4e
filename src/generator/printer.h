// Copyright 2026 The stubkit Authors.
//
// The text sink of every protoc-gen-stubkit printer: protobuf's
// io::Printer (`$name$` variables, "$$" for a dollar sign, Indent() and
// Outdent()), made strict. io::Printer only logs a variable it does not
// know (GOOGLE_LOG(DFATAL), an error in release builds) and leaves it out;
// here a template naming a variable the printer was not given, or with an
// unpaired '$', prints nothing and sets error(), which fails the protoc
// run. tests/generator/printer_test.cc checks that.

#ifndef STUBKIT_SRC_GENERATOR_PRINTER_H_
#define STUBKIT_SRC_GENERATOR_PRINTER_H_

#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <map>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace stubkit {
namespace generator {

class Printer {
 public:
  using Vars = std::map<std::string, std::string>;

  Printer();
  ~Printer();
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;

  // `text` with each $name$ replaced by vars.at(name).
  void Print(const Vars& vars, absl::string_view text);
  // `text` with "$$" as '$' and no variables.
  void Print(absl::string_view text) { Print(Vars{}, text); }
  // `text` as it is, '$' included: for text from the proto, like comments.
  void PrintRaw(absl::string_view text);

  // `text` (a template) as a // comment on one line, its newlines made
  // spaces: clang-format refills it (the goldens' formatting step).
  void PrintComment(const Vars& vars, absl::string_view text);

  // Every line printed from now on starts with two more (fewer) spaces.
  void Indent();
  void Outdent();

  // `text` with `vars` substituted, not printed; errors as Print's.
  std::string Expand(const Vars& vars, absl::string_view text);

  // The first template error, or "" when there was none.
  const std::string& error() const { return error_; }

  // Flushes and returns everything printed. Call once, last.
  std::string Finish();

 private:
  std::string out_;
  std::unique_ptr<google::protobuf::io::StringOutputStream> stream_;
  std::unique_ptr<google::protobuf::io::Printer> printer_;
  std::string error_;
};

// `text` printed with `vars`: the template's text alone, e.g. to measure it.
std::string Expand(const Printer::Vars& vars, absl::string_view text,
                   std::string* error);

// The first error `text` would cause with `vars`: a variable not in `vars`
// or an unpaired '$'; "" when there is none.
std::string CheckTemplate(const Printer::Vars& vars, absl::string_view text);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_PRINTER_H_

// Copyright 2026 The stubkit Authors.

#include "src/generator/printer.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace stubkit {
namespace generator {

std::string CheckTemplate(const Printer::Vars& vars, absl::string_view text) {
  size_t pos = 0;
  while (true) {
    const size_t open = text.find('$', pos);
    if (open == absl::string_view::npos) return "";
    const size_t close = text.find('$', open + 1);
    if (close == absl::string_view::npos) {
      return absl::StrCat("unpaired '$' in template: ", text.substr(open));
    }
    const std::string name(text.substr(open + 1, close - open - 1));
    if (!name.empty() && vars.count(name) == 0) {
      return absl::StrCat("template variable $", name,
                          "$ is not defined, in: ", text);
    }
    pos = close + 1;
  }
}

Printer::Printer()
    : stream_(
          std::make_unique<google::protobuf::io::StringOutputStream>(&out_)),
      printer_(std::make_unique<google::protobuf::io::Printer>(stream_.get(),
                                                               '$')) {}

Printer::~Printer() = default;

void Printer::Print(const Vars& vars, absl::string_view text) {
  if (!error_.empty()) return;
  error_ = CheckTemplate(vars, text);
  if (!error_.empty()) return;
  printer_->Print(vars, std::string(text).c_str());
}

void Printer::PrintRaw(absl::string_view text) {
  if (!error_.empty()) return;
  // As a variable's value, line by line: io::Printer indents a line only
  // where its template starts one, not after a newline inside a value.
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const size_t end =
        newline == absl::string_view::npos ? text.size() : newline + 1;
    const absl::string_view line = text.substr(0, end);
    const bool ends_line = absl::EndsWith(line, "\n");
    printer_->Print(
        {{"line",
          std::string(ends_line ? line.substr(0, line.size() - 1) : line)}},
        ends_line ? "$line$\n" : "$line$");
    text.remove_prefix(end);
  }
}

void Printer::PrintComment(const Vars& vars, absl::string_view text) {
  if (!error_.empty()) return;
  const std::string expanded = Expand(vars, text);
  if (!error_.empty()) return;
  PrintRaw(
      absl::StrCat("// ", absl::StrReplaceAll(expanded, {{"\n", " "}}), "\n"));
}

std::string Printer::Expand(const Vars& vars, absl::string_view text) {
  if (!error_.empty()) return "";
  return generator::Expand(vars, text, &error_);
}

void Printer::Indent() { printer_->Indent(); }

void Printer::Outdent() { printer_->Outdent(); }

std::string Printer::Finish() {
  // io::Printer hands unused buffer space back when it is destroyed.
  printer_.reset();
  stream_.reset();
  return std::move(out_);
}

std::string Expand(const Printer::Vars& vars, absl::string_view text,
                   std::string* error) {
  Printer printer;
  printer.Print(vars, text);
  if (!printer.error().empty()) *error = printer.error();
  return printer.Finish();
}

}  // namespace generator
}  // namespace stubkit

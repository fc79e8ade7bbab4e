// Copyright 2026 The stubkit Authors.
//
// Lays out a function head the way clang-format (Google style, 80 columns,
// the repository's .clang-format) does, so that generated code is
// clang-format clean whatever the length of the names in it:
//
//   - on one line if it fits;
//   - else parameters aligned after '(', or on the next lines indented by 4,
//     bin-packed; a parameter too long for its line breaks before its name;
//   - else the return type on a line of its own (broken inside its template
//     arguments if it is too long itself), then the name.
//
// Only function heads: bodies are printed as they are.

#ifndef STUBKIT_SRC_GENERATOR_LAYOUT_H_
#define STUBKIT_SRC_GENERATOR_LAYOUT_H_

#include <string>
#include <vector>

namespace stubkit {
namespace generator {

struct FunctionHead {
  std::string prefix;       // "virtual ", "explicit " or ""
  std::string return_type;  // "" for constructors
  std::string name;         // "Get", "FooClient::Get"
  std::vector<std::string> params;
  std::string suffix;  // after ')': " = 0;", " override {", " {", ";"
};

// The lines of `head` starting at column `indent`, without that
// indentation (the printer adds it), joined with '\n', no final newline.
std::string LayoutFunctionHead(const FunctionHead& head, int indent);

// "head" + items + "tail" as a call or braced list: one line, aligned after
// the opening bracket, or on the next lines indented by 4, bin-packed.
std::string LayoutList(const std::string& head,
                       const std::vector<std::string>& items,
                       const std::string& tail, int indent);

// "`lhs` = `outer``inner`", the head of an assignment of a call whose
// only argument is a call ("x = f(g("), as clang-format breaks it: on one
// line; else after the '=', "f(g(" together; else after "f(" as well.
// Sets `*args_offset` to the column of g's arguments, relative to
// `indent`.
std::string LayoutNestedCallHead(const std::string& lhs,
                                 const std::string& outer,
                                 const std::string& inner, int indent,
                                 int* args_offset);

// The string literals "piece" on consecutive lines at column `indent`,
// `tail` after the last; a literal too long for its line is broken after
// a space, as clang-format breaks it.
std::string LayoutStringLiterals(const std::vector<std::string>& pieces,
                                 const std::string& tail, int indent);

// `type` + `suffix` ("using T = a<b, c>" + ";"), broken in its template
// arguments if it does not fit.
std::string LayoutType(const std::string& type, const std::string& suffix,
                       int indent);

// "type name", or the name on the next line indented by 4.
std::string LayoutVariable(const std::string& type, const std::string& name,
                           int indent);

// "class `name` : public `base` {", or the base on the next line.
std::string LayoutClassHead(const std::string& name, const std::string& base,
                            int indent);

// "MOCK_METHOD((`ret`), `name`, (`params`), (override));" as clang-format
// lays the macro out.
std::string LayoutMockMethod(const std::string& ret, const std::string& name,
                             const std::vector<std::string>& params,
                             int indent);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_LAYOUT_H_

// Copyright 2026 The stubkit Authors.

#include "src/generator/layout.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace stubkit {
namespace generator {
namespace {

constexpr int kColumnLimit = 80;
constexpr int kContinuation = 4;

bool Fits(int column, const std::string& text) {
  return column + static_cast<int>(text.size()) <= kColumnLimit;
}

}  // namespace

std::string LayoutType(const std::string& type, const std::string& suffix,
                       int indent);

namespace {

// `items` separated by ", ", starting at column `column` on every line,
std::vector<std::string> LayoutLongType(const std::string& type, int indent,
                                        const std::string& suffix = "",
                                        int outer_next = -1,
                                        int inner_next = -1);

// `items` separated by ", ", starting at column `column` on every line,
// `last` after the last item. The first line is not padded (it follows
// whatever precedes it); the others are, relative to `indent`.
struct Packed {
  std::vector<std::string> lines;
  bool split = false;        // an item was broken, or the suffix moved down
  bool param_split = false;  // an item was broken before its last word
  // Such breaks, breaks in their types and a suffix moved down.
  int breaks_in_params = 0;
  bool type_split = false;  // a parameter's type broken in its arguments
  bool braced = false;      // a braced list was broken inside its braces
  bool fits = true;         // every line within the limit
};

// The top-level elements of a braced list "{a, b(c, d), "e, f"}", or
// nullopt when `item` is not one.
std::optional<std::vector<std::string>> BracedElements(
    const std::string& item) {
  if (item.size() < 2 || item.front() != '{' || item.back() != '}') {
    return std::nullopt;
  }
  std::vector<std::string> elements;
  int depth = 0;
  bool quoted = false;
  size_t start = 1;
  for (size_t i = 1; i + 1 < item.size(); ++i) {
    const char c = item[i];
    if (quoted) {
      if (c == '\\') ++i;
      if (c == '"') quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '(' || c == '{' || c == '<' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == '>' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      elements.push_back(item.substr(start, i - start));
      start = i + 2;  // ", "
    }
  }
  elements.push_back(item.substr(start, item.size() - 1 - start));
  return elements;
}

std::vector<std::string> LayoutCall(const std::string& head,
                                    const std::vector<std::string>& params,
                                    const std::string& tail, int indent,
                                    bool* fits, bool nested_calls = false);

// With `nested_calls`, an item "f(a, b)" too long for its line is laid
// out as a call (arguments of a call, not parameters of a function).
Packed Pack(const std::vector<std::string>& items, int column, int indent,
            const std::string& last, bool allow_split,
            const std::string& closing = "", const std::string& suffix = "",
            bool nested_calls = false, bool split_types = false) {
  Packed packed;
  const std::string pad(column - indent, ' ');
  std::string line;
  auto flush = [&] {
    if (!Fits(column, line)) packed.fits = false;
    packed.lines.push_back(packed.lines.empty() ? line : pad + line);
    line.clear();
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string text = items[i] + (i + 1 < items.size() ? "," : last);
    if (line.empty() ? Fits(column, text)
                     : Fits(column, absl::StrCat(line, " ", text))) {
      absl::StrAppend(&line, line.empty() ? "" : " ", text);
      continue;
    }
    if (!line.empty()) flush();
    // " override;" goes to a line of its own before a parameter is split.
    if (i + 1 == items.size() && !suffix.empty() && !Fits(column, text) &&
        Fits(column, items[i] + closing)) {
      line = items[i] + closing;
      flush();
      packed.lines.push_back(std::string(kContinuation, ' ') + suffix);
      packed.split = true;
      ++packed.breaks_in_params;
      continue;
    }
    // A braced list too long for its line: its elements bin-packed after
    // its '{', on a line of its own.
    if (allow_split && !Fits(column, text)) {
      if (auto elements = BracedElements(items[i])) {
        packed.braced = true;
        const std::string rest = text.substr(items[i].size());
        Packed inner = Pack(*elements, column + 1, indent, "}" + rest, false);
        if (!inner.fits) packed.fits = false;
        for (size_t k = 0; k < inner.lines.size(); ++k) {
          line = k == 0 ? "{" + inner.lines[k]
                        : inner.lines[k].substr(column - indent);
          flush();
        }
        continue;
      }
      // A call "f(args)" too long for its line: laid out as a call from
      // its column, its arguments aligned after its '(' or 4 columns in.
      const size_t open = items[i].find('(');
      if (!nested_calls || items[i].empty() || items[i].back() != ')' ||
          open == std::string::npos || items[i].find(' ') < open) {
        // Not a call: a parameter, split below.
      } else if (auto args = BracedElements(
                     "{" +
                     items[i].substr(open + 1, items[i].size() - open - 2) +
                     "}")) {
        packed.braced = true;
        if (!line.empty()) flush();
        bool fits = true;
        const std::vector<std::string> call =
            LayoutCall(items[i].substr(0, open + 1), *args,
                       ")" + text.substr(items[i].size()), column, &fits,
                       /*nested_calls=*/true);
        if (!fits) packed.fits = false;
        for (size_t k = 0; k < call.size(); ++k) {
          line = call[k];
          flush();
        }
        continue;
      }
    }
    // A type too long for its line (the parameter types of MOCK_METHOD):
    // broken in its template arguments.
    // "a<b>*": the '*' or '&' follows the template arguments. A type with
    // a comma comes parenthesized for gMock: "(a<b, c>*)".
    const bool parenthesized = items[i].size() > 2 && items[i].front() == '(' &&
                               items[i].back() == ')';
    const std::string bare =
        parenthesized ? items[i].substr(1, items[i].size() - 2) : items[i];
    const size_t bare_core = bare.find_last_not_of("*&") + 1;
    if (split_types && !Fits(column, text) && bare_core > 0 &&
        bare[bare_core - 1] == '>') {
      packed.split = true;
      const std::vector<std::string> type_lines = LayoutLongType(
          bare.substr(0, bare_core), column + (parenthesized ? 1 : 0),
          bare.substr(bare_core) + (parenthesized ? ")" : "") +
              text.substr(items[i].size()));
      for (size_t k = 0; k < type_lines.size(); ++k) {
        line = (parenthesized ? (k == 0 ? "(" : " ") : "") + type_lines[k];
        flush();
      }
      continue;
    }
    const size_t space = items[i].rfind(' ');
    if (Fits(column, text) || !allow_split || space == std::string::npos) {
      line = text;
      continue;
    }
    // "const Type&\n    name": the name indented by 4 more; the type broken
    // in its template arguments if it is still too long.
    packed.split = true;
    packed.param_split = true;
    const std::string type = items[i].substr(0, space);
    // "a<b>*": the '*' or '&' follows the template arguments.
    const size_t core = type.find_last_not_of("*&") + 1;
    const std::vector<std::string> type_lines =
        Fits(column, type)
            ? std::vector<std::string>{type}
            : LayoutLongType(type.substr(0, core), column, type.substr(core));
    const std::string name = text.substr(space + 1);
    // A type broken in its template arguments, aligned after its '<', keeps
    // the name on its last line when it fits there (not when broken after
    // the '<': then the name goes below, as clang-format does).
    const bool name_follows =
        type_lines.size() > 1 && type_lines.front().back() != '<' &&
        name.rfind("/*", 0) != 0 &&
        Fits(column, absl::StrCat(type_lines.back(), " ", name));
    packed.breaks_in_params += Fits(column, type) || name_follows ? 1 : 2;
    if (type_lines.size() > 1) packed.type_split = true;
    for (size_t k = 0; k < type_lines.size(); ++k) {
      line = type_lines[k];
      if (name_follows && k + 1 == type_lines.size()) break;
      flush();
    }
    if (name_follows) {
      absl::StrAppend(&line, " ", name);
      continue;
    }
    // A comment in place of the name is not indented: clang-format does
    // not treat it as a continuation.
    line = name.rfind("/*", 0) == 0 ? name
                                    : std::string(kContinuation, ' ') + name;
    flush();
  }
  if (!line.empty()) flush();
  return packed;
}

// `first` + the packed lines: the first packed line follows `first`.
std::vector<std::string> Join(const std::string& first, const Packed& packed) {
  std::vector<std::string> lines = packed.lines;
  if (lines.empty()) return {first};
  lines[0] = first + lines[0];
  return lines;
}

// `head`, then the packed lines on the next lines (Pack padded all but the
// first).
std::vector<std::string> Below(const std::string& head, const Packed& packed,
                               int pad = kContinuation) {
  std::vector<std::string> lines = {head};
  for (size_t i = 0; i < packed.lines.size(); ++i) {
    lines.push_back(i == 0 ? std::string(pad, ' ') + packed.lines[i]
                           : packed.lines[i]);
  }
  return lines;
}

// The split of "outer<a, b<c>>" into "outer<" and its top-level arguments
// "a", "b<c>"; nullopt when `type` does not end in template arguments.
std::optional<std::pair<std::string, std::vector<std::string>>> TemplateArgs(
    const std::string& type) {
  const size_t open = type.find('<');
  if (open == std::string::npos || type.back() != '>') return std::nullopt;
  std::vector<std::string> args;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i + 1 < type.size(); ++i) {
    if (type[i] == '<') ++depth;
    if (type[i] == '>') --depth;
    if (type[i] == ',' && depth == 0) {
      args.push_back(type.substr(start, i - start));
      start = i + 2;  // ", "
    }
  }
  args.push_back(type.substr(start, type.size() - 1 - start));
  return std::make_pair(type.substr(0, open + 1), args);
}

// A type too long for its line, broken in its template arguments: aligned
// after the outer '<', then on the next line; failing both, the same in the
// only argument's arguments. The fewest lines win, in that order. A broken
// list continues at `outer_next` or `inner_next` (default: indent + 4).
std::vector<std::string> LayoutLongType(const std::string& type, int indent,
                                        const std::string& suffix,
                                        int outer_next, int inner_next) {
  std::vector<std::vector<std::string>> candidates;
  const int next = outer_next < 0 ? indent + kContinuation : outer_next;
  if (inner_next < 0) inner_next = indent + kContinuation;
  if (auto outer = TemplateArgs(type)) {
    const auto& [head, args] = *outer;
    Packed aligned = Pack(args, indent + static_cast<int>(head.size()), indent,
                          ">" + suffix, false);
    if (aligned.fits) candidates.push_back(Join(head, aligned));
    Packed broken = Pack(args, next, indent, ">" + suffix, false);
    if (broken.fits) candidates.push_back(Below(head, broken, next - indent));
    if (args.size() == 1) {
      if (auto inner = TemplateArgs(args[0])) {
        const std::string inner_head = head + inner->first;
        Packed inner_aligned =
            Pack(inner->second, indent + static_cast<int>(inner_head.size()),
                 indent, ">>" + suffix, false);
        if (inner_aligned.fits) {
          candidates.push_back(Join(inner_head, inner_aligned));
        }
        Packed inner_broken =
            Pack(inner->second, inner_next, indent, ">>" + suffix, false);
        if (inner_broken.fits) {
          candidates.push_back(
              Below(inner_head, inner_broken, inner_next - indent));
        }
      }
    }
  }
  if (candidates.empty()) return {type + suffix};
  const std::vector<std::string>* best = &candidates[0];
  for (const auto& candidate : candidates) {
    if (candidate.size() < best->size()) best = &candidate;
  }
  return *best;
}

// "name(params)suffix" at `indent`, the name starting the line.
std::vector<std::string> LayoutCall(const std::string& head,
                                    const std::vector<std::string>& params,
                                    const std::string& tail, int indent,
                                    bool* fits, bool nested_calls) {
  *fits = true;
  const std::string one_line =
      absl::StrCat(head, absl::StrJoin(params, ", "), tail);
  if (Fits(indent, one_line)) return {one_line};
  // "lhs = f(args)": broken after the '=' when the rest fits on one line.
  // Not the '=' of a lambda's capture.
  const size_t equals = head.find(" = ");
  if (equals != std::string::npos && equals < head.find('(') &&
      head.rfind(']', equals) == head.rfind('[', equals) &&
      Fits(indent + kContinuation, one_line.substr(equals + 3))) {
    return {head.substr(0, equals + 2),
            std::string(kContinuation, ' ') + one_line.substr(equals + 3)};
  }
  if (!Fits(indent, head) && head.size() > 2 &&
      head.compare(head.size() - 2, 2, ">(") == 0) {
    // "f<args>(" too long itself: broken in its template arguments, the
    // call's arguments on the next lines, 4 columns in.
    std::vector<std::string> lines = absl::StrSplit(
        LayoutType(head.substr(0, head.size() - 1), "(", indent), '\n');
    for (const std::string& line : lines) *fits = *fits && Fits(indent, line);
    // The arguments after the last line of the head if they fit there.
    const std::string rest = absl::StrJoin(params, ", ") + tail;
    if (lines.size() > 1 && Fits(indent, lines.back() + rest)) {
      lines.back() += rest;
      return lines;
    }
    // 4 columns past the start of the call: 8 after a break after '='.
    const int column =
        indent + kContinuation +
        (lines[0].size() > 2 &&
                 lines[0].compare(lines[0].size() - 2, 2, " =") == 0
             ? kContinuation
             : 0);
    Packed args = Pack(params, column, indent, tail, true);
    if (!args.fits) *fits = false;
    for (size_t i = 0; i < args.lines.size(); ++i) {
      lines.push_back(i == 0 ? std::string(column - indent, ' ') + args.lines[i]
                             : args.lines[i]);
    }
    return lines;
  }
  if (!Fits(indent, head)) *fits = false;
  // clang-format breaks before "override" and "const", not before "= 0".
  std::string suffix;
  if (tail.rfind(") override", 0) == 0 || tail.rfind(") const", 0) == 0) {
    suffix = tail.substr(2);
  }
  Packed aligned = Pack(params, indent + static_cast<int>(head.size()), indent,
                        tail, true, ")", suffix, nested_calls);
  Packed broken = Pack(params, indent + kContinuation, indent, tail, true, ")",
                       suffix, nested_calls);
  const std::vector<std::string> broken_lines = Below(head, broken);
  // A call's arguments (not a function's parameters) go below the head
  // when aligned they would take more lines.
  if (aligned.fits && !aligned.split && !aligned.braced &&
      !(nested_calls && broken.fits && !broken.split && !broken.braced &&
        broken_lines.size() < aligned.lines.size())) {
    return Join(head, aligned);
  }
  if (broken.fits && !broken.split && !broken.braced) return broken_lines;
  // Breaking inside a parameter's type is the last resort.
  if (broken.fits && aligned.type_split && !broken.type_split) {
    return broken_lines;
  }
  // The fewest lines win; on a tie, the fewest breaks inside parameters
  // (a braced list broken counting as one when aligned); then aligned.
  const int aligned_breaks =
      aligned.breaks_in_params + (aligned.braced ? 1 : 0);
  if (aligned.fits &&
      (!broken.fits || aligned.lines.size() < broken_lines.size() ||
       (aligned.lines.size() == broken_lines.size() &&
        aligned_breaks <= broken.breaks_in_params))) {
    return Join(head, aligned);
  }
  if (!broken.fits) *fits = false;
  return broken_lines;
}

}  // namespace

std::string LayoutList(const std::string& head,
                       const std::vector<std::string>& items,
                       const std::string& tail, int indent) {
  bool fits;
  return absl::StrJoin(
      LayoutCall(head, items, tail, indent, &fits, /*nested_calls=*/true),
      "\n");
}

std::string LayoutNestedCallHead(const std::string& lhs,
                                 const std::string& outer,
                                 const std::string& inner, int indent,
                                 int* args_offset) {
  const std::string pad(kContinuation, ' ');
  const std::string one_line = absl::StrCat(lhs, " = ", outer, inner);
  if (Fits(indent, one_line)) {
    *args_offset = kContinuation;
    return one_line;
  }
  *args_offset = 2 * kContinuation;
  if (Fits(indent + kContinuation, outer + inner)) {
    return absl::StrCat(lhs, " =\n", pad, outer, inner);
  }
  return absl::StrCat(lhs, " = ", outer, "\n", pad, inner);
}

std::string LayoutStringLiterals(const std::vector<std::string>& pieces,
                                 const std::string& tail, int indent) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string end = i + 1 == pieces.size() ? "\"" + tail : "\"";
    std::string rest = pieces[i];
    // Too long: broken after the last space that leaves the first part
    // within the limit, the space ending that part.
    while (!Fits(indent, "\"" + rest + end)) {
      size_t space = rest.rfind(' ', kColumnLimit - indent - 3);
      if (space == std::string::npos || space + 1 == rest.size()) break;
      lines.push_back("\"" + rest.substr(0, space + 1) + "\"");
      rest = rest.substr(space + 1);
    }
    lines.push_back("\"" + rest + end);
  }
  return absl::StrJoin(lines, "\n");
}

std::string LayoutType(const std::string& type, const std::string& suffix,
                       int indent) {
  if (Fits(indent, type + suffix)) return type + suffix;
  // "lhs = rhs<...>": the break goes after the '=' when that puts the rest
  // on one line; else in the template arguments; failing both, after the
  // '=' again, the rest laid out 4 columns in.
  const size_t equals = type.find(" = ");
  const bool assignment =
      equals != std::string::npos && equals < type.find('<');
  const std::string pad(kContinuation, ' ');
  auto after_equals = [&] {
    return absl::StrCat(
        type.substr(0, equals + 2), "\n", pad,
        absl::StrReplaceAll(
            LayoutType(type.substr(equals + 3), suffix, indent + kContinuation),
            {{"\n", "\n" + pad}}));
  };
  if (assignment &&
      Fits(indent + kContinuation, type.substr(equals + 3) + suffix)) {
    return after_equals();
  }
  std::vector<std::string> lines = LayoutLongType(type, indent, suffix);
  bool fits = true;
  for (const std::string& line : lines) fits = fits && Fits(indent, line);
  if (!fits && assignment) return after_equals();
  return absl::StrJoin(lines, "\n");
}

std::string LayoutVariable(const std::string& type, const std::string& name,
                           int indent) {
  const std::string one_line = absl::StrCat(type, " ", name);
  if (Fits(indent, one_line)) return one_line;
  std::vector<std::string> lines = Fits(indent, type)
                                       ? std::vector<std::string>{type}
                                       : LayoutLongType(type, indent);
  lines.push_back(std::string(kContinuation, ' ') + name);
  return absl::StrJoin(lines, "\n");
}

std::string LayoutClassHead(const std::string& name, const std::string& base,
                            int indent) {
  const std::string one_line =
      absl::StrCat("class ", name, " : public ", base, " {");
  if (Fits(indent, one_line)) return one_line;
  return absl::StrCat("class ", name, "\n", std::string(kContinuation, ' '),
                      ": public ", base, " {");
}

std::string LayoutMockMethod(const std::string& ret, const std::string& name,
                             const std::vector<std::string>& params,
                             int indent) {
  const std::string head = "MOCK_METHOD(";
  const std::string nested = "(" + absl::StrJoin(params, ", ") + ")";
  const std::vector<std::string> items = {"(" + ret + ")", name, nested,
                                          "(override)"};
  const std::string one_line =
      absl::StrCat(head, absl::StrJoin(items, ", "), ");");
  if (Fits(indent, one_line)) return one_line;
  // The arguments from `column`, bin-packed; the parameter list goes to a
  // line of its own unless it fits whole, is aligned after its '(' when it
  // does not fit on one line, and then nothing follows it on its last line.
  // `*depth`: how many template argument lists are open where the return
  // type breaks.
  auto pack = [&](int column, bool* fits, bool* split, int* depth) {
    *fits = true;
    *split = false;
    *depth = 0;
    const std::string pad(column - indent, ' ');
    std::vector<std::string> lines;
    std::string line;
    auto flush = [&] {
      if (!Fits(column, line)) *fits = false;
      lines.push_back(lines.empty() ? line : pad + line);
      line.clear();
    };
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string text = items[i] + (i + 1 < items.size() ? "," : ");");
      if (line.empty() ? Fits(column, text)
                       : Fits(column, absl::StrCat(line, " ", text))) {
        absl::StrAppend(&line, line.empty() ? "" : " ", text);
        continue;
      }
      if (!line.empty()) flush();
      if (i == 0 && !Fits(column, text)) {
        // The return type broken in its template arguments, which continue
        // 4 columns after the '(' (outer) or after the type's start (inner).
        *split = true;
        const std::vector<std::string> type_lines =
            LayoutLongType(ret, column + 1, "),", column + kContinuation,
                           column + 1 + kContinuation);
        for (char c : type_lines[0]) *depth += c == '<' ? 1 : c == '>' ? -1 : 0;
        for (size_t k = 0; k < type_lines.size(); ++k) {
          line = (k == 0 ? "(" : " ") + type_lines[k];
          flush();
        }
        continue;
      }
      if (i != 2 || Fits(column, text)) {
        line = text;
        continue;
      }
      Packed packed = Pack(params, column + 1, column, "),", false, "", "",
                           false, /*split_types=*/true);
      if (!packed.fits) *fits = false;
      if (packed.split) *split = true;
      for (size_t k = 0; k < packed.lines.size(); ++k) {
        line = k == 0 ? "(" + packed.lines[k] : packed.lines[k];
        flush();
      }
    }
    if (!line.empty()) flush();
    return lines;
  };
  // Aligned after "MOCK_METHOD(" or on the next line; whichever does not
  // break the return type, aligned first; when both do, whichever breaks it
  // in fewer nested template argument lists, aligned first.
  bool aligned_fits, aligned_split, broken_fits, broken_split;
  int aligned_depth, broken_depth;
  std::vector<std::string> aligned =
      pack(indent + static_cast<int>(head.size()), &aligned_fits,
           &aligned_split, &aligned_depth);
  std::vector<std::string> broken =
      pack(indent + kContinuation, &broken_fits, &broken_split, &broken_depth);
  if (aligned_fits && aligned_split && broken_fits && broken_split &&
      broken_depth < aligned_depth) {
    aligned_fits = false;
  }
  if (aligned_fits && (!aligned_split || !broken_fits || broken_split)) {
    aligned[0] = head + aligned[0];
    return absl::StrJoin(aligned, "\n");
  }
  broken[0] = std::string(kContinuation, ' ') + broken[0];
  broken.insert(broken.begin(), head);
  return absl::StrJoin(broken, "\n");
}

std::string LayoutFunctionHead(const FunctionHead& function, int indent) {
  const std::string tail = ")" + function.suffix;
  const std::string typed =
      function.return_type.empty()
          ? function.prefix
          : absl::StrCat(function.prefix, function.return_type, " ");
  bool fits = true;
  std::vector<std::string> lines = LayoutCall(
      typed + function.name + "(", function.params, tail, indent, &fits);
  if (fits || function.return_type.empty()) {
    return absl::StrJoin(lines, "\n");
  }
  // The return type on a line of its own, then the name.
  const std::string type = function.prefix + function.return_type;
  lines = Fits(indent, type) ? std::vector<std::string>{type}
                             : LayoutLongType(type, indent);
  for (const std::string& line :
       LayoutCall(function.name + "(", function.params, tail, indent, &fits)) {
    lines.push_back(line);
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace generator
}  // namespace stubkit

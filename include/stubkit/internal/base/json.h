// Copyright 2026 The stubkit Authors.
//
// A strict JSON reader (RFC 8259) for the gRPC service config.
//
// stubkit reads service config files itself, so that every error it reports
// comes from a walk over values it parsed, never from a dependency's error
// text (which changes between releases):
//
// ```cpp fragment
// absl::StatusOr<stubkit::internal::JsonValue> root =
//     stubkit::internal::ParseJson(R"({"methodConfig": []})");
// if (!root.ok()) return root.status();  // "line L, column C: ..."
// const stubkit::internal::JsonValue* methods = root->Find("methodConfig");
// ```
//
// What it accepts is RFC 8259 and nothing more: no comments, no trailing
// commas, no NaN or Infinity literals, strings of valid UTF-8. Objects keep
// their members in order, duplicates included, so that a reader can say which
// key was given twice (`CountOf`). Nesting deeper than `kMaxJsonDepth` is
// refused rather than risking the stack.

#ifndef STUBKIT_INTERNAL_JSON_H_
#define STUBKIT_INTERNAL_JSON_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace stubkit {
namespace internal {

inline constexpr int kMaxJsonDepth = 64;

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }

  // Valid for kBool.
  bool bool_value() const { return bool_; }
  // Valid for kNumber: the value as a double, and the number as written
  // (what error messages quote, and what integer fields read exactly).
  double number_value() const { return number_; }
  // Valid for kString (decoded: escapes resolved, UTF-8), and for kNumber
  // (the literal text).
  const std::string& text() const { return text_; }
  // Valid for kArray.
  const std::vector<JsonValue>& elements() const { return elements_; }
  // Valid for kObject, in input order, duplicates kept.
  const std::vector<Member>& members() const { return members_; }

  // The last member named `key` (kObject), or nullptr.
  const JsonValue* Find(absl::string_view key) const;
  // How many members are named `key` (kObject).
  int CountOf(absl::string_view key) const;

 private:
  friend class JsonParser;

  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<JsonValue> elements_;
  std::vector<Member> members_;
};

// Parses one JSON text (surrounding whitespace allowed). Errors are
// INVALID_ARGUMENT, "line L, column C: what was expected", on one line.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_JSON_H_

// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/base/json.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace stubkit {
namespace internal {

const JsonValue* JsonValue::Find(absl::string_view key) const {
  const JsonValue* found = nullptr;
  for (const Member& member : members_) {
    if (member.first == key) found = &member.second;
  }
  return found;
}

int JsonValue::CountOf(absl::string_view key) const {
  int count = 0;
  for (const Member& member : members_) {
    if (member.first == key) ++count;
  }
  return count;
}

// Recursive descent over the grammar of RFC 8259, section 2 onwards. The
// first error stops the parse; `error_` holds it.
class JsonParser {
 public:
  explicit JsonParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<JsonValue> Parse() {
    JsonValue value;
    SkipSpace();
    if (!ParseValue(value, 0)) return error_;
    SkipSpace();
    if (pos_ != text_.size()) {
      Fail("expected the end of the text after the value");
      return error_;
    }
    return value;
  }

 private:
  bool Fail(absl::string_view what) {
    // Line and column (in bytes, from 1) of where the parse stopped.
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    error_ = absl::InvalidArgumentError(absl::StrCat(
        "line ", line, ", column ", pos_ - line_start + 1, ": ", what));
    return false;
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                        text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) {
      return Fail(
          "expected a value (an object, a list, a string, a number, "
          "true, false or null)");
    }
    pos_ += word.size();
    return true;
  }

  bool ParseValue(JsonValue& out, int depth) {
    if (AtEnd()) return Fail("unexpected end of text, expected a value");
    switch (Peek()) {
      case '{':
        return ParseObject(out, depth + 1);
      case '[':
        return ParseArray(out, depth + 1);
      case '"':
        out.kind_ = JsonValue::Kind::kString;
        return ParseString(out.text_);
      case 't':
        out.kind_ = JsonValue::Kind::kBool;
        out.bool_ = true;
        return Literal("true");
      case 'f':
        out.kind_ = JsonValue::Kind::kBool;
        out.bool_ = false;
        return Literal("false");
      case 'n':
        out.kind_ = JsonValue::Kind::kNull;
        return Literal("null");
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) {
          return ParseNumber(out);
        }
        return Fail(
            "expected a value (an object, a list, a string, a number, "
            "true, false or null)");
    }
  }

  bool ParseObject(JsonValue& out, int depth) {
    if (depth > kMaxJsonDepth) {
      return Fail(
          absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels"));
    }
    out.kind_ = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (Peek() != '"') return Fail("expected a key in double quotes");
      std::string key;
      if (!ParseString(key)) return false;
      SkipSpace();
      if (Peek() != ':') return Fail("expected ':' after the key");
      ++pos_;
      SkipSpace();
      JsonValue value;
      if (!ParseValue(value, depth)) return false;
      out.members_.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or '}' after an object member");
    }
  }

  bool ParseArray(JsonValue& out, int depth) {
    if (depth > kMaxJsonDepth) {
      return Fail(
          absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels"));
    }
    out.kind_ = JsonValue::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      JsonValue element;
      if (!ParseValue(element, depth)) return false;
      out.elements_.push_back(std::move(element));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or ']' after a list element");
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool ParseNumber(JsonValue& out) {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (!AtEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (Peek() == '-') ++pos_;
    if (Peek() == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return Fail("expected a digit");
    }
    if (Peek() == '.') {
      ++pos_;
      if (digits() == 0) return Fail("expected a digit after '.'");
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (digits() == 0) return Fail("expected a digit in the exponent");
    }
    out.kind_ = JsonValue::Kind::kNumber;
    out.text_ = std::string(text_.substr(start, pos_ - start));
    // SimpleAtod is locale-independent. A number beyond a double's range
    // is still JSON (gRPC's reader keeps it as text): it reads as
    // +-infinity, and each reader of a field decides what that means.
    if (!absl::SimpleAtod(out.text_, &out.number_)) {
      out.number_ = out.text_[0] == '-'
                        ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
    }
    return true;
  }

  static void AppendUtf8(uint32_t code_point, std::string& out) {
    if (code_point < 0x80) {
      out.push_back(static_cast<char>(code_point));
    } else if (code_point < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
      out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else if (code_point < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    }
  }

  bool Hex4(uint32_t& value) {
    value = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      const char c = Peek();
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Fail("expected four hex digits after \\u");
      }
      value = value * 16 + digit;
    }
    return true;
  }

  // One UTF-8 sequence starting at pos_, checked (no overlong forms, no
  // surrogates, at most U+10FFFF), copied to `out`.
  bool Utf8(std::string& out) {
    const auto lead = static_cast<unsigned char>(text_[pos_]);
    int length;
    uint32_t code_point;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
      code_point = lead & 0x1Fu;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      code_point = lead & 0x0Fu;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      code_point = lead & 0x07u;
    } else {
      return Fail("invalid UTF-8 in a string");
    }
    if (pos_ + static_cast<size_t>(length) > text_.size()) {
      return Fail("invalid UTF-8 in a string");
    }
    for (int i = 1; i < length; ++i) {
      const auto byte = static_cast<unsigned char>(text_[pos_ + i]);
      if ((byte & 0xC0) != 0x80) return Fail("invalid UTF-8 in a string");
      code_point = (code_point << 6) | (byte & 0x3Fu);
    }
    const bool overlong = (length == 3 && code_point < 0x800) ||
                          (length == 4 && code_point < 0x10000);
    if (overlong || (code_point >= 0xD800 && code_point <= 0xDFFF) ||
        code_point > 0x10FFFF) {
      return Fail("invalid UTF-8 in a string");
    }
    out.append(text_.data() + pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return true;
  }

  // A \u escape's unit, its 4 hex digits at pos_ (and a surrogate pair's
  // second escape), appended to `out` as UTF-8.
  bool UnicodeEscape(std::string& out) {
    uint32_t unit;
    if (!Hex4(unit)) return false;
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      // A high surrogate: a low one must follow.
      uint32_t low;
      if (text_.substr(pos_, 2) != "\\u") {
        return Fail("a high surrogate \\u escape without its low half");
      }
      pos_ += 2;
      if (!Hex4(low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) {
        return Fail("a high surrogate \\u escape without its low half");
      }
      unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
      return Fail("a low surrogate \\u escape without its high half");
    }
    AppendUtf8(unit, out);
    return true;
  }

  // One escape, from its backslash at pos_, appended to `out`.
  bool Escape(std::string& out) {
    ++pos_;  // '\\'
    const char escape = Peek();
    ++pos_;
    switch (escape) {
      case '"':
      case '\\':
      case '/':
        out.push_back(escape);
        return true;
      case 'b':
        out.push_back('\b');
        return true;
      case 'f':
        out.push_back('\f');
        return true;
      case 'n':
        out.push_back('\n');
        return true;
      case 'r':
        out.push_back('\r');
        return true;
      case 't':
        out.push_back('\t');
        return true;
      case 'u':
        return UnicodeEscape(out);
      default:
        --pos_;
        return Fail("unknown escape in a string");
    }
  }

  bool ParseString(std::string& out) {
    ++pos_;  // '"'
    while (true) {
      if (AtEnd()) return Fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return Fail("a control character in a string must be escaped");
      }
      if (static_cast<unsigned char>(c) >= 0x80) {
        if (!Utf8(out)) return false;
        continue;
      }
      if (c != '\\') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      if (!Escape(out)) return false;
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
  absl::Status error_;
};

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return JsonParser(text).Parse();
}

}  // namespace internal
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/api/routing_header.h"

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace stubkit {
namespace internal {
namespace {

bool Unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

// A path template as a list of segment patterns, with where the named
// variable begins and ends.
struct Token {
  enum Kind { kLiteral, kStar, kDoubleStar, kBegin, kEnd } kind;
  absl::string_view literal;
};

// Tokens of `path_template`; false when it is not one named variable among
// segments.
bool Tokenize(absl::string_view path_template, std::vector<Token>* tokens) {
  int variables = 0;
  bool inside = false;
  auto add_segments = [tokens](absl::string_view text) {
    for (absl::string_view segment : absl::StrSplit(text, '/')) {
      if (segment == "*") {
        tokens->push_back({Token::kStar, {}});
      } else if (segment == "**") {
        tokens->push_back({Token::kDoubleStar, {}});
      } else {
        tokens->push_back({Token::kLiteral, segment});
      }
    }
  };
  // Split at the braces; the pieces between are segments joined by '/'.
  while (!path_template.empty()) {
    if (!inside) {
      size_t open = path_template.find('{');
      absl::string_view before = path_template.substr(0, open);
      // "a/{x}" leaves "a/": the '/' only separates.
      if (absl::ConsumeSuffix(&before, "/") || !before.empty()) {
        add_segments(before);
      }
      if (open == absl::string_view::npos) break;
      path_template.remove_prefix(open + 1);
      inside = true;
      continue;
    }
    size_t close = path_template.find('}');
    if (close == absl::string_view::npos) return false;
    absl::string_view variable = path_template.substr(0, close);
    size_t equals = variable.find('=');
    tokens->push_back({Token::kBegin, {}});
    add_segments(equals == absl::string_view::npos
                     ? absl::string_view("*")
                     : variable.substr(equals + 1));
    tokens->push_back({Token::kEnd, {}});
    ++variables;
    inside = false;
    path_template.remove_prefix(close + 1);
    // "{x}/b": the '/' after the brace only separates.
    absl::ConsumePrefix(&path_template, "/");
  }
  return variables == 1 && !inside;
}

bool MatchFrom(const std::vector<Token>& tokens, size_t t,
               const std::vector<absl::string_view>& segments, size_t s,
               size_t* begin, size_t* end) {
  if (t == tokens.size()) return s == segments.size();
  const Token& token = tokens[t];
  switch (token.kind) {
    case Token::kBegin:
      *begin = s;
      return MatchFrom(tokens, t + 1, segments, s, begin, end);
    case Token::kEnd:
      *end = s;
      return MatchFrom(tokens, t + 1, segments, s, begin, end);
    case Token::kLiteral:
      return s < segments.size() && segments[s] == token.literal &&
             MatchFrom(tokens, t + 1, segments, s + 1, begin, end);
    case Token::kStar:
      return s < segments.size() && !segments[s].empty() &&
             MatchFrom(tokens, t + 1, segments, s + 1, begin, end);
    case Token::kDoubleStar:
      for (size_t next = s; next <= segments.size(); ++next) {
        if (MatchFrom(tokens, t + 1, segments, next, begin, end)) return true;
      }
      return false;
  }
  return false;
}

}  // namespace

std::string UrlEncode(absl::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(text.size());
  for (char c : text) {
    if (Unreserved(c)) {
      encoded.push_back(c);
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    encoded.push_back('%');
    encoded.push_back(kHex[byte >> 4]);
    encoded.push_back(kHex[byte & 0xF]);
  }
  return encoded;
}

absl::optional<absl::string_view> MatchPathTemplate(
    absl::string_view value, absl::string_view path_template) {
  std::vector<Token> tokens;
  if (!Tokenize(path_template, &tokens)) return absl::nullopt;
  std::vector<absl::string_view> segments = absl::StrSplit(value, '/');
  size_t begin = 0;
  size_t end = 0;
  if (!MatchFrom(tokens, 0, segments, 0, &begin, &end)) return absl::nullopt;
  if (end <= begin) return absl::string_view();
  const char* first = segments[begin].data();
  const char* last = segments[end - 1].data() + segments[end - 1].size();
  return absl::string_view(first, static_cast<size_t>(last - first));
}

void RequestParams::Set(absl::string_view key, absl::string_view value) {
  if (value.empty()) return;
  for (auto& param : params_) {
    if (param.first == key) {
      param.second = std::string(value);
      return;
    }
  }
  params_.emplace_back(std::string(key), std::string(value));
}

void RequestParams::Match(absl::string_view key, absl::string_view value,
                          absl::string_view path_template) {
  absl::optional<absl::string_view> matched =
      MatchPathTemplate(value, path_template);
  if (matched.has_value()) Set(key, *matched);
}

std::string RequestParams::Value() const {
  return absl::StrJoin(params_, "&", [](std::string* out, const auto& param) {
    absl::StrAppend(out, UrlEncode(param.first), "=", UrlEncode(param.second));
  });
}

void RequestParams::Apply(grpc::ClientContext& context) const {
  if (params_.empty()) return;
  context.AddMetadata(kRequestParamsHeader, Value());
}

}  // namespace internal
}  // namespace stubkit

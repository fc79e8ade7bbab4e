// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/base/metadata.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stubkit {
namespace internal {
namespace {

bool IsLegalKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// Shown in errors: the key, with anything unprintable escaped and long keys
// cut, so an error message is never itself a problem.
std::string Quote(absl::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\'' && c != '\\') {
      out.push_back(c);
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", byte);
    }
  }
  if (text.size() > 64) out += "...";
  return absl::StrCat("'", out, "'");
}

}  // namespace

absl::Status ValidateMetadata(absl::string_view key, absl::string_view value) {
  if (key.empty()) {
    return absl::InvalidArgumentError("metadata key must not be empty");
  }
  for (char c : key) {
    if (!IsLegalKeyChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metadata key ", Quote(key),
          ": keys may hold only lowercase letters, digits, '-', '_' and "
          "'.' (gRPC would abort the process on it)"));
    }
  }
  if (absl::StartsWith(key, "grpc-")) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata key ", Quote(key),
                     ": the 'grpc-' prefix is reserved for gRPC itself"));
  }
  if (absl::EndsWith(key, "-bin")) return absl::OkStatus();
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "metadata key %s: its value holds byte 0x%02x; values of keys "
          "not ending in '-bin' may hold only printable ASCII (0x20-0x7e)",
          Quote(key), byte));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMetadata(
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  for (const auto& [key, value] : metadata) {
    absl::Status status = ValidateMetadata(key, value);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.

#include "stubkit/logging.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "stubkit/retry_observer.h"

namespace stubkit {
namespace {

class StderrSink : public LogSink {
 public:
  void Write(absl::string_view line) override {
    // One write per line keeps lines from interleaving across threads.
    std::string buffer = absl::StrCat(line, "\n");
    ssize_t ignored = ::write(STDERR_FILENO, buffer.data(), buffer.size());
    (void)ignored;
  }
};

}  // namespace

std::shared_ptr<LogSink> StderrLogSink() {
  static const auto* const sink =
      new std::shared_ptr<LogSink>(std::make_shared<StderrSink>());
  return *sink;
}

LogLevel LogLevelFromEnvironment() {
  const char* value = std::getenv("STUBKIT_LOG");
  if (value == nullptr) return LogLevel::kOff;
  std::string level = absl::AsciiStrToLower(value);
  if (level.empty() || level == "off" || level == "0") return LogLevel::kOff;
  if (level == "retries") return LogLevel::kRetries;
  if (level == "rpc") return LogLevel::kRpc;
  std::fprintf(stderr,
               "stubkit: ignoring STUBKIT_LOG=%s; expected off, retries or "
               "rpc\n",
               value);
  return LogLevel::kOff;
}

bool IsCredentialMetadataKey(absl::string_view key) {
  std::string lower = absl::AsciiStrToLower(key);
  if (lower == "authorization" || lower == "proxy-authorization" ||
      lower == "cookie" || lower == "set-cookie" ||
      absl::EndsWith(lower, "-bin")) {
    return true;
  }
  for (absl::string_view word : {"token", "key", "secret", "password",
                                 "credential", "session", "auth"}) {
    if (absl::StrContains(lower, word)) return true;
  }
  return false;
}

std::string FormatMetadataRedacted(
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", key, ": ",
                    IsCredentialMetadataKey(key) ? "[REDACTED]" : value);
  }
  return out;
}

absl::string_view ToString(WaitReason reason) {
  switch (reason) {
    case WaitReason::kNone:
      return "none";
    case WaitReason::kBackoff:
      return "backoff";
    case WaitReason::kPushback:
      return "server pushback";
    case WaitReason::kRetryInfo:
      return "server RetryInfo";
    case WaitReason::kThrottle:
      return "retry throttle, waiting for recovery";
  }
  return "unknown";
}

}  // namespace stubkit

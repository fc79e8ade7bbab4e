// Copyright 2026 The stubkit Authors.
//
// Logging of retries and attempts, off by default.
//
// Levels: `kRetries` logs each retry (method, attempt, code, message, the
// wait and why) and each call that gives up; `kRpc` also logs every attempt
// with its metadata. Switch it on per client or call, or for the whole
// process with the environment variable `STUBKIT_LOG=retries` or
// `STUBKIT_LOG=rpc` (read once).
//
//   auto options = stubkit::Options{}
//       .set<stubkit::LogLevelOption>(stubkit::LogLevel::kRpc)
//       .set<stubkit::LogSinkOption>(my_sink);  // stderr by default
//
// Credentials are never logged: the values of `authorization`, `cookie`,
// `set-cookie`, any `*-bin` key and any key containing `token`, `key`,
// `secret`, `password`, `credential` or `session` are replaced by
// "[REDACTED]". Request and response payloads are logged only with
// `LogPayloadsOption` set to true. Sample lines: docs/observability.md.

#ifndef STUBKIT_LOGGING_H_
#define STUBKIT_LOGGING_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace stubkit {

enum class LogLevel { kOff, kRetries, kRpc };

// Receives whole lines, without the trailing newline. Must be thread-safe.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(absl::string_view line) = 0;
};

// The default sink: one `write(2)` per line to stderr.
std::shared_ptr<LogSink> StderrLogSink();

// The level of `STUBKIT_LOG`: "", "off" or unset give kOff; "retries" and
// "rpc" their levels. Any other value gives kOff and one warning on stderr.
LogLevel LogLevelFromEnvironment();

struct LogLevelOption {
  using Type = LogLevel;
  static Type Default() { return LogLevelFromEnvironment(); }
};

struct LogSinkOption {
  using Type = std::shared_ptr<LogSink>;
  static Type Default() { return nullptr; }  // stderr
};

struct LogPayloadsOption {
  using Type = bool;
  static Type Default() { return false; }
};

// True for metadata keys whose values may carry credentials.
bool IsCredentialMetadataKey(absl::string_view key);

// "key: value, key: [REDACTED]".
std::string FormatMetadataRedacted(
    const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace stubkit

#endif  // STUBKIT_LOGGING_H_

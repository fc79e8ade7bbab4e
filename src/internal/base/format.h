// Copyright 2026 The stubkit Authors.
//
// Small formatting helpers shared by the runtime's messages. Not public API.

#ifndef STUBKIT_SRC_INTERNAL_FORMAT_H_
#define STUBKIT_SRC_INTERNAL_FORMAT_H_

#include <chrono>
#include <string>

#include "absl/strings/string_view.h"

namespace stubkit {
namespace internal {

// Rounded for people: "7.1s", "92.3ms", "257us", "30m".
std::string FormatDuration(std::chrono::nanoseconds duration);

// "UNAVAILABLE" for 14; "CODE(99)" style text is not needed because callers
// pass only 0..16, anything else gives "UNKNOWN_CODE".
absl::string_view StatusCodeName(int code);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_SRC_INTERNAL_FORMAT_H_

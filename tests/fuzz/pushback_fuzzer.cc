// Copyright 2026 The stubkit Authors.
//
// Fuzzes the `grpc-retry-pushback-ms` trailer parser: any bytes a server
// sends. A value is a wait only when, trimmed of ASCII whitespace, it is a
// non-negative decimal integer, of any length (saturating at
// nanoseconds::max()); everything else is "do not retry". Checked against a
// reference parse.

#include <cctype>
#include <cstdint>
#include <string>

#include "stubkit/internal/base/hint_parsing.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string value(reinterpret_cast<const char*>(data), size);
  stubkit::internal::Pushback p = stubkit::internal::ParsePushback(value);

  // Reference: trim, then digits only, at least one; the value saturates.
  size_t begin = 0, end = value.size();
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
  };
  while (begin < end && space(value[begin])) ++begin;
  while (end > begin && space(value[end - 1])) --end;
  constexpr int64_t kMaxMs = std::chrono::nanoseconds::max().count() / 1000000;
  bool digits = end > begin;
  bool saturated = false;
  int64_t ms = 0;
  for (size_t i = begin; digits && i < end; ++i) {
    if (value[i] < '0' || value[i] > '9') {
      digits = false;
    } else if (!saturated) {
      // In unsigned arithmetic, so the reference itself cannot overflow.
      uint64_t next = static_cast<uint64_t>(ms) * 10 + (value[i] - '0');
      if (next > static_cast<uint64_t>(kMaxMs)) {
        saturated = true;
      } else {
        ms = static_cast<int64_t>(next);
      }
    }
  }
  using Kind = stubkit::internal::Pushback::Kind;
  if (digits) {
    FUZZ_CHECK(p.kind == Kind::kWait);
    if (saturated) {
      FUZZ_CHECK(p.delay == std::chrono::nanoseconds::max());
    } else {
      FUZZ_CHECK(p.delay == std::chrono::milliseconds(ms));
    }
    FUZZ_CHECK(p.delay >= std::chrono::nanoseconds::zero());
  } else {
    FUZZ_CHECK(p.kind == Kind::kDoNotRetry);
  }
  return 0;
}

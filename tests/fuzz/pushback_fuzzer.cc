// Copyright 2026 The stubkit Authors.
//
// Fuzzes the `grpc-retry-pushback-ms` trailer parser: any bytes a server
// sends. A value is a wait only when, trimmed of ASCII whitespace, it is a
// non-negative decimal integer of at most 18 digits; everything else is
// "do not retry". Checked against a reference parse.

#include <cctype>
#include <cstdint>
#include <string>

#include "stubkit/server_hints.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string value(reinterpret_cast<const char*>(data), size);
  stubkit::internal::Pushback p = stubkit::internal::ParsePushback(value);

  // Reference: trim, then digits only, 1..18 of them.
  size_t begin = 0, end = value.size();
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
  };
  while (begin < end && space(value[begin])) ++begin;
  while (end > begin && space(value[end - 1])) --end;
  bool digits = end > begin && end - begin <= 18;
  int64_t ms = 0;
  for (size_t i = begin; digits && i < end; ++i) {
    if (value[i] < '0' || value[i] > '9') {
      digits = false;
    } else {
      ms = ms * 10 + (value[i] - '0');
    }
  }
  using Kind = stubkit::internal::Pushback::Kind;
  if (digits) {
    FUZZ_CHECK(p.kind == Kind::kWait);
    constexpr int64_t kMaxMs =
        std::chrono::nanoseconds::max().count() / 1000000;
    if (ms > kMaxMs) {
      FUZZ_CHECK(p.delay == std::chrono::nanoseconds::max());  // saturated
    } else {
      FUZZ_CHECK(p.delay == std::chrono::milliseconds(ms));
    }
    FUZZ_CHECK(p.delay >= std::chrono::nanoseconds::zero());
  } else {
    FUZZ_CHECK(p.kind == Kind::kDoNotRetry);
  }
  return 0;
}

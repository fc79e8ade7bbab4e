// Copyright 2026 The stubkit Authors.
//
// Builds serialized google.rpc.Status messages by hand for tests, so the
// tests need no google/rpc protos either:
//
//   std::string details = stubkit::testing::StatusWithRetryInfo(2, 500000000);

#ifndef STUBKIT_TESTS_TESTING_STATUS_DETAILS_H_
#define STUBKIT_TESTS_TESTING_STATUS_DETAILS_H_

#include <cstdint>
#include <string>

namespace stubkit {
namespace testing {

inline void AppendVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

inline void AppendTag(std::string* out, int field, int wire_type) {
  AppendVarint(out, static_cast<uint64_t>(field) << 3 | wire_type);
}

inline void AppendBytes(std::string* out, int field, const std::string& bytes) {
  AppendTag(out, field, 2);
  AppendVarint(out, bytes.size());
  out->append(bytes);
}

inline std::string Any(const std::string& type_url, const std::string& value) {
  std::string any;
  AppendBytes(&any, 1, type_url);
  AppendBytes(&any, 2, value);
  return any;
}

inline std::string RetryInfo(int64_t seconds, int32_t nanos) {
  std::string duration;
  AppendTag(&duration, 1, 0);
  AppendVarint(&duration, static_cast<uint64_t>(seconds));
  AppendTag(&duration, 2, 0);
  AppendVarint(&duration, static_cast<uint64_t>(static_cast<int64_t>(nanos)));
  std::string retry_info;
  AppendBytes(&retry_info, 1, duration);
  return retry_info;
}

// google.rpc.Status{code, message, details: [extra..., RetryInfo]}.
inline std::string StatusWithRetryInfo(int64_t seconds, int32_t nanos,
                                       const std::string& extra_any = "") {
  std::string status;
  AppendTag(&status, 1, 0);
  AppendVarint(&status, 14);
  AppendBytes(&status, 2, "unavailable");
  if (!extra_any.empty()) AppendBytes(&status, 3, extra_any);
  AppendBytes(&status, 3,
              Any("type.googleapis.com/google.rpc.RetryInfo",
                  RetryInfo(seconds, nanos)));
  return status;
}

}  // namespace testing
}  // namespace stubkit

#endif  // STUBKIT_TESTS_TESTING_STATUS_DETAILS_H_

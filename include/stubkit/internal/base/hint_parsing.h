// Copyright 2026 The stubkit Authors.
//
// The wire parsers of the server's retry hints (see stubkit/server_hints.h):
// the `grpc-retry-pushback-ms` value and `google.rpc.RetryInfo` inside
// `grpc-status-details-bin`, decoded by hand from the protobuf wire format.
//
//   stubkit::internal::Pushback p = stubkit::internal::ParsePushback("250");
//   // p.kind == kWait, p.delay == 250ms
//   stubkit::internal::RetryInfoHint h =
//       stubkit::internal::ParseRetryInfoDelay(status_details_bytes);
//   // h.kind == kDelay when a RetryInfo with a valid retry_delay is there
//
// Not API.

#ifndef STUBKIT_INTERNAL_HINT_PARSING_H_
#define STUBKIT_INTERNAL_HINT_PARSING_H_

#include <chrono>
#include <cstddef>

#include "absl/strings/string_view.h"

namespace stubkit {
namespace internal {

// Larger status details are ignored without being decoded.
inline constexpr size_t kMaxStatusDetailsBytes = 64 * 1024;

struct Pushback {
  enum class Kind { kWait, kDoNotRetry };
  Kind kind;
  std::chrono::nanoseconds delay{0};
};

// Parses a `grpc-retry-pushback-ms` value. A non-negative decimal integer
// (ASCII whitespace around it is ignored), of any length, is a wait in
// milliseconds, saturating at nanoseconds::max(); anything else means do not
// retry.
Pushback ParsePushback(absl::string_view value);

struct RetryInfoHint {
  enum class Kind { kAbsent, kMalformed, kDelay };
  Kind kind;
  std::chrono::nanoseconds delay{0};
};

// The `retry_delay` of the first `google.rpc.RetryInfo` in a serialized
// `google.rpc.Status`. Bytes that are malformed, larger than
// `kMaxStatusDetailsBytes`, or hold a negative or out-of-range delay give
// kMalformed.
RetryInfoHint ParseRetryInfoDelay(absl::string_view status_details);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_HINT_PARSING_H_

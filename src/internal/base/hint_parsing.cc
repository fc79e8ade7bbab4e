// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/base/hint_parsing.h"

#include <cstdint>
#include <limits>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace stubkit {
namespace internal {
namespace {

constexpr absl::string_view kRetryInfoTypeUrl =
    "type.googleapis.com/google.rpc.RetryInfo";
// google.protobuf.Duration allows +-10,000 years.
constexpr int64_t kMaxDurationSeconds = 315576000000;

// A minimal, bounds-checked reader of the protobuf wire format.
class WireReader {
 public:
  explicit WireReader(absl::string_view data) : data_(data) {}

  bool done() const { return data_.empty(); }

  bool ReadVarint(uint64_t* value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (data_.empty()) return false;
      uint8_t byte = static_cast<uint8_t>(data_.front());
      data_.remove_prefix(1);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }

  // Reads a tag; returns false at a malformed one.
  bool ReadTag(uint32_t* field, uint32_t* wire_type) {
    uint64_t tag;
    if (!ReadVarint(&tag) || tag > std::numeric_limits<uint32_t>::max()) {
      return false;
    }
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<uint32_t>(tag & 7);
    return *field != 0;
  }

  bool ReadBytes(absl::string_view* bytes) {
    uint64_t size;
    if (!ReadVarint(&size) || size > data_.size()) return false;
    *bytes = data_.substr(0, size);
    data_.remove_prefix(size);
    return true;
  }

  bool Skip(uint32_t wire_type) {
    uint64_t ignored;
    absl::string_view bytes;
    switch (wire_type) {
      case 0:
        return ReadVarint(&ignored);
      case 1:
        return Advance(8);
      case 2:
        return ReadBytes(&bytes);
      case 5:
        return Advance(4);
      default:
        return false;  // groups and unknown wire types are not expected here
    }
  }

 private:
  bool Advance(size_t n) {
    if (data_.size() < n) return false;
    data_.remove_prefix(n);
    return true;
  }

  absl::string_view data_;
};

// google.protobuf.Duration { int64 seconds = 1; int32 nanos = 2; }
std::optional<std::chrono::nanoseconds> ParseDuration(absl::string_view bytes) {
  WireReader reader(bytes);
  int64_t seconds = 0;
  int64_t nanos = 0;
  while (!reader.done()) {
    uint32_t field, wire_type;
    if (!reader.ReadTag(&field, &wire_type)) return std::nullopt;
    uint64_t value;
    if (field == 1 && wire_type == 0) {
      if (!reader.ReadVarint(&value)) return std::nullopt;
      seconds = static_cast<int64_t>(value);
    } else if (field == 2 && wire_type == 0) {
      if (!reader.ReadVarint(&value)) return std::nullopt;
      nanos = static_cast<int32_t>(value);
    } else if (!reader.Skip(wire_type)) {
      return std::nullopt;
    }
  }
  if (seconds < 0 || nanos < 0 || nanos > 999999999 ||
      seconds > kMaxDurationSeconds) {
    return std::nullopt;  // a negative delay is not a delay
  }
  constexpr int64_t kMaxSeconds =
      std::numeric_limits<int64_t>::max() / 1000000000 - 1;
  if (seconds > kMaxSeconds) return std::chrono::nanoseconds::max();
  return std::chrono::seconds(seconds) + std::chrono::nanoseconds(nanos);
}

// RetryInfo { Duration retry_delay = 1; }
std::optional<std::chrono::nanoseconds> ParseRetryInfo(
    absl::string_view bytes) {
  WireReader reader(bytes);
  std::optional<std::chrono::nanoseconds> delay;
  while (!reader.done()) {
    uint32_t field, wire_type;
    if (!reader.ReadTag(&field, &wire_type)) return std::nullopt;
    if (field == 1 && wire_type == 2) {
      absl::string_view duration;
      if (!reader.ReadBytes(&duration)) return std::nullopt;
      delay = ParseDuration(duration);
      if (!delay.has_value()) return std::nullopt;
    } else if (!reader.Skip(wire_type)) {
      return std::nullopt;
    }
  }
  return delay;
}

}  // namespace

Pushback ParsePushback(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  Pushback result{Pushback::Kind::kDoNotRetry};
  if (value.empty()) return result;
  // Any non-negative integer is a wait, however many digits it has: beyond
  // nanoseconds::max() (about 292 years) it saturates rather than wrapping
  // into a short or negative wait, and the call's end (or a hint ceiling)
  // then decides.
  constexpr int64_t kMaxMs = std::chrono::nanoseconds::max().count() / 1000000;
  int64_t ms = 0;
  bool saturated = false;
  for (char c : value) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return result;
    const int digit = c - '0';
    if (saturated || ms > (kMaxMs - digit) / 10) {
      saturated = true;
    } else {
      ms = ms * 10 + digit;
    }
  }
  result.kind = Pushback::Kind::kWait;
  result.delay = saturated
                     ? std::chrono::nanoseconds::max()
                     : std::chrono::nanoseconds(std::chrono::milliseconds(ms));
  return result;
}

RetryInfoHint ParseRetryInfoDelay(absl::string_view status_details) {
  const RetryInfoHint kMalformed{RetryInfoHint::Kind::kMalformed};
  if (status_details.size() > kMaxStatusDetailsBytes) return kMalformed;
  // google.rpc.Status { int32 code = 1; string message = 2;
  //                     repeated google.protobuf.Any details = 3; }
  WireReader status(status_details);
  while (!status.done()) {
    uint32_t field, wire_type;
    if (!status.ReadTag(&field, &wire_type)) return kMalformed;
    if (field != 3 || wire_type != 2) {
      if (!status.Skip(wire_type)) return kMalformed;
      continue;
    }
    absl::string_view any_bytes;
    if (!status.ReadBytes(&any_bytes)) return kMalformed;
    // google.protobuf.Any { string type_url = 1; bytes value = 2; }
    WireReader any(any_bytes);
    absl::string_view type_url, value;
    while (!any.done()) {
      uint32_t any_field, any_wire_type;
      if (!any.ReadTag(&any_field, &any_wire_type)) return kMalformed;
      if (any_field == 1 && any_wire_type == 2) {
        if (!any.ReadBytes(&type_url)) return kMalformed;
      } else if (any_field == 2 && any_wire_type == 2) {
        if (!any.ReadBytes(&value)) return kMalformed;
      } else if (!any.Skip(any_wire_type)) {
        return kMalformed;
      }
    }
    if (type_url == kRetryInfoTypeUrl) {
      std::optional<std::chrono::nanoseconds> delay = ParseRetryInfo(value);
      if (!delay.has_value()) return kMalformed;
      return RetryInfoHint{RetryInfoHint::Kind::kDelay, *delay};
    }
  }
  return RetryInfoHint{RetryInfoHint::Kind::kAbsent};
}

}  // namespace internal
}  // namespace stubkit

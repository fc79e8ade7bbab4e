// Copyright 2026 The stubkit Authors.

#include "stubkit/service_config.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/internal/base/format.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/base/json.h"
#include "stubkit/internal/base/method_name.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"

namespace stubkit {
namespace {

using internal::JsonValue;
using std::chrono::nanoseconds;

// The rules of one methodConfig entry.
struct Rules {
  std::optional<nanoseconds> timeout;
  std::optional<nanoseconds> attempt_timeout;
  std::optional<bool> wait_for_ready;
  std::optional<RetryPolicy> retry;
  std::optional<ExponentialBackoffPolicy> backoff;
  std::optional<HedgingPolicy> hedging;
};

// `text` from the input, for a one-line message: control bytes escaped.
std::string Printable(absl::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

absl::Status Bad(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// A value as an error message quotes it: strings quoted (and cut), numbers
// as written, objects and lists by kind.
std::string Describe(const JsonValue& value) {
  switch (value.kind()) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return value.bool_value() ? "true" : "false";
    case JsonValue::Kind::kNumber:
      return value.text();
    case JsonValue::Kind::kString: {
      constexpr size_t kShown = 64;
      const absl::string_view text = value.text();
      return absl::StrCat("\"", Printable(text.substr(0, kShown)),
                          text.size() > kShown ? "...\"" : "\"");
    }
    case JsonValue::Kind::kArray:
      return "a list";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "";
}

std::string Child(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

// The member `key` of `object` at `path`: nullptr when it is absent or
// null (as gRPC reads a null field), an error when it is given twice.
// Members stubkit does not read are ignored, as gRPC ignores them.
absl::StatusOr<const JsonValue*> Member(const JsonValue& object,
                                        absl::string_view path,
                                        absl::string_view key) {
  if (object.CountOf(key) > 1) {
    return Bad(Child(path, key), "given more than once");
  }
  const JsonValue* value = object.Find(key);
  if (value == nullptr || value->is_null()) return nullptr;
  return value;
}

// As `Member`, for the fields gRPC 1.51 refuses as null (it reads them
// with a typed loader, where null is a value of the wrong type).
absl::StatusOr<const JsonValue*> NonNullMember(const JsonValue& object,
                                               absl::string_view path,
                                               absl::string_view key) {
  const JsonValue* value = object.Find(key);
  if (value != nullptr && value->is_null() && object.CountOf(key) == 1) {
    return Bad(Child(path, key), "must not be null (gRPC refuses it)");
  }
  return Member(object, path, key);
}

// Configuration warnings: settings read differently from, or ignored like,
// gRPC 1.51, written once per client through its LogSinkOption.
using Warnings = std::vector<std::string>;

void Warn(Warnings& warnings, absl::string_view path, absl::string_view what) {
  warnings.push_back(absl::StrCat(path, ": ", what));
}

absl::Status ExpectObject(const JsonValue& value, absl::string_view path) {
  if (value.kind() == JsonValue::Kind::kObject) return absl::OkStatus();
  return Bad(path, absl::StrCat("expected an object, got ", Describe(value)));
}

absl::Status ExpectList(const JsonValue& value, absl::string_view path) {
  if (value.kind() == JsonValue::Kind::kArray) return absl::OkStatus();
  return Bad(path, absl::StrCat("expected a list, got ", Describe(value)));
}

absl::StatusOr<std::string> ReadString(const JsonValue& value,
                                       absl::string_view path) {
  if (value.kind() != JsonValue::Kind::kString) {
    return Bad(path, absl::StrCat("expected a string, got ", Describe(value)));
  }
  return value.text();
}

// An integer, written as a number or, as gRPC also reads it, a string.
absl::StatusOr<int64_t> ReadInteger(const JsonValue& value,
                                    absl::string_view path) {
  int64_t out;
  if ((value.kind() == JsonValue::Kind::kNumber ||
       value.kind() == JsonValue::Kind::kString) &&
      absl::SimpleAtoi(value.text(), &out)) {
    return out;
  }
  return Bad(path, absl::StrCat("expected an integer, got ", Describe(value)));
}

// A duration as gRPC's JSON writes it: "-"? seconds, up to 9 decimals, "s"
// ("0.100s"); at most 315,576,000,000 s either way (protobuf's Duration).
struct Duration {
  int64_t seconds = 0;
  int32_t nanos = 0;  // same sign as seconds
  bool negative() const { return seconds < 0 || nanos < 0; }
  bool zero() const { return seconds == 0 && nanos == 0; }
};

// As protobuf prints a Duration: 0, 3, 6 or 9 decimals.
std::string Quoted(const Duration& d) {
  std::string out = d.negative() ? "\"-" : "\"";
  absl::StrAppend(&out, d.seconds < 0 ? -d.seconds : d.seconds);
  int32_t nanos = d.nanos < 0 ? -d.nanos : d.nanos;
  if (nanos != 0) {
    int digits = 9;
    while (digits > 3 && nanos % 1000 == 0) {
      nanos /= 1000;
      digits -= 3;
    }
    std::string fraction = absl::StrCat(nanos);
    fraction.insert(0, static_cast<size_t>(digits) - fraction.size(), '0');
    absl::StrAppend(&out, ".", fraction);
  }
  absl::StrAppend(&out, "s\"");
  return out;
}

absl::StatusOr<Duration> ReadDuration(const JsonValue& value,
                                      absl::string_view path) {
  auto bad = [&] {
    return Bad(path, absl::StrCat("not a duration such as \"0.100s\" (got ",
                                  Describe(value), ")"));
  };
  if (value.kind() != JsonValue::Kind::kString) return bad();
  absl::string_view text = value.text();
  const bool negative = absl::ConsumePrefix(&text, "-");
  if (!absl::ConsumeSuffix(&text, "s")) return bad();
  absl::string_view whole = text;
  absl::string_view fraction;
  if (const size_t dot = text.find('.'); dot != absl::string_view::npos) {
    whole = text.substr(0, dot);
    fraction = text.substr(dot + 1);
    if (fraction.empty() || fraction.size() > 9) return bad();
  }
  auto all_digits = [](absl::string_view digits) {
    return std::all_of(digits.begin(), digits.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  constexpr int64_t kMaxSeconds = 315576000000;
  int64_t seconds = 0;
  if (whole.empty() || whole.size() > 12 || !all_digits(whole) ||
      !all_digits(fraction) || !absl::SimpleAtoi(whole, &seconds) ||
      seconds > kMaxSeconds) {
    return bad();
  }
  int32_t nanos = 0;
  for (size_t i = 0; i < 9; ++i) {
    nanos = nanos * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
  }
  Duration d{seconds, nanos};
  if (negative) d = Duration{-seconds, -nanos};
  return d;
}

absl::StatusOr<nanoseconds> ToNanoseconds(const Duration& d,
                                          absl::string_view path) {
  // A Duration allows 10,000 years; nanoseconds hold about 292.
  constexpr int64_t kMaxSeconds =
      std::numeric_limits<int64_t>::max() / 1000000000 - 1;
  if (d.seconds > kMaxSeconds || d.seconds < -kMaxSeconds) {
    return Bad(path, absl::StrCat("too large, got ", Quoted(d)));
  }
  return std::chrono::seconds(d.seconds) + nanoseconds(d.nanos);
}

// The key of `known` that `key` probably meant: the same letters but for
// case, '_' and '-' ("method_config", "MethodConfig"); empty if none.
std::string MeantKey(absl::string_view key,
                     std::initializer_list<absl::string_view> known) {
  auto letters = [](absl::string_view text) {
    std::string out;
    for (char c : text) {
      if (c != '_' && c != '-') out.push_back(absl::ascii_tolower(c));
    }
    return out;
  };
  const std::string wanted = letters(key);
  for (absl::string_view candidate : known) {
    if (letters(candidate) == wanted) return std::string(candidate);
  }
  return "";
}

// Warns of each key of `object` that gRPC 1.51 does not read there (`known`
// lists what it reads, including what stubkit ignores): ignored by both,
// but named, with the spelling it probably meant. `hint`, if given, gets
// the first such misspelling, for the client's "names no method" line.
void WarnUnknownKeys(const JsonValue& object, absl::string_view path,
                     std::initializer_list<absl::string_view> known,
                     Warnings& warnings, std::string* hint = nullptr) {
  if (object.kind() != JsonValue::Kind::kObject) return;
  for (const auto& member : object.members()) {
    const std::string& key = member.first;
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string meant = MeantKey(key, known);
    std::string line = "not a key gRPC reads: ignored, as gRPC ignores it";
    if (!meant.empty()) {
      absl::StrAppend(&line, "; did you mean \"", meant, "\"?");
      if (hint != nullptr && hint->empty()) {
        *hint = absl::StrCat("\"", Printable(key),
                             "\" is not gRPC's spelling, \"", meant, "\"");
      }
    }
    Warn(warnings, Child(path, Printable(key)), line);
  }
}

// Durations gRPC 1.51 reads (timeout, initialBackoff, maxBackoff) are
// milliseconds; beyond this, a wait or a deadline is never reached.
constexpr int64_t kFarMillis = int64_t{100} * 36525 * 24 * 3600 * 10;  // 100 y

// A duration as gRPC 1.51 reads `timeout`, `initialBackoff` and
// `maxBackoff`, in milliseconds: an "s" suffix, whitespace around the
// number ignored, seconds in [0, 315576000000], up to 9 decimals, then
// truncated to whole milliseconds (gRPC keeps time in ms). Text gRPC takes
// that protobuf's form would read otherwise ("1 s", "-0.5s", sub-ms
// digits) is read as gRPC reads it, with a warning. One difference: a
// signed fraction ("1.-5s") is refused.
absl::StatusOr<int64_t> ReadGrpcMillis(const JsonValue& value,
                                       absl::string_view path,
                                       Warnings& warnings) {
  auto bad = [&](absl::string_view why) {
    return Bad(path, absl::StrCat("not a duration such as \"0.100s\" (", why,
                                  "; got ", Describe(value), ")"));
  };
  if (value.kind() != JsonValue::Kind::kString) return bad("not a string");
  absl::string_view text = value.text();
  if (!absl::ConsumeSuffix(&text, "s")) return bad("no s suffix");
  text = absl::StripAsciiWhitespace(text);
  int64_t nanos = 0;
  if (const size_t dot = text.find('.'); dot != absl::string_view::npos) {
    const absl::string_view fraction = text.substr(dot + 1);
    text = text.substr(0, dot);
    int32_t n = 0;
    if (!absl::SimpleAtoi(fraction, &n)) return bad("bad decimals");
    if (fraction.size() > 9) return bad("more than 9 decimals");
    if (fraction.find_first_of("+-") != absl::string_view::npos) {
      return bad("a signed fraction, which stubkit does not read");
    }
    nanos = n;
    for (size_t i = fraction.size(); i < 9; ++i) nanos *= 10;
  }
  int64_t seconds = 0;
  if (!absl::SimpleAtoi(text, &seconds)) return bad("not a number of seconds");
  constexpr int64_t kMaxSeconds = 315576000000;
  if (seconds < 0) {
    return Bad(path,
               absl::StrCat("must not be negative, got ", Describe(value)));
  }
  if (seconds > kMaxSeconds) {
    return Bad(path,
               absl::StrCat("more than ", kMaxSeconds,
                            " seconds (protobuf's largest duration), got ",
                            Describe(value)));
  }
  const int64_t millis = seconds * 1000 + nanos / 1000000;
  absl::StatusOr<Duration> strict = ReadDuration(value, path);
  if (!strict.ok() ||
      strict->seconds * 1000 + strict->nanos / 1000000 != millis) {
    Warn(warnings, path,
         absl::StrCat(Describe(value),
                      " is not protobuf's duration form; read as gRPC 1.51 "
                      "reads it, ",
                      millis, " ms"));
  } else if (nanos % 1000000 != 0) {
    Warn(warnings, path,
         absl::StrCat(Describe(value), " truncated to ", millis,
                      " ms, as gRPC 1.51 keeps milliseconds"));
  }
  return millis;
}

absl::StatusOr<std::optional<int64_t>> GrpcMillisMember(const JsonValue& object,
                                                        absl::string_view path,
                                                        absl::string_view key,
                                                        Warnings& warnings) {
  absl::StatusOr<const JsonValue*> value = NonNullMember(object, path, key);
  if (!value.ok()) return value.status();
  if (*value == nullptr) return std::optional<int64_t>();
  absl::StatusOr<int64_t> millis =
      ReadGrpcMillis(**value, Child(path, key), warnings);
  if (!millis.ok()) return millis.status();
  return std::optional<int64_t>(*millis);
}

// Milliseconds as nanoseconds, at most `kFarMillis` (with a warning).
nanoseconds FarCapped(int64_t millis, absl::string_view path,
                      Warnings& warnings) {
  if (millis > kFarMillis) {
    Warn(warnings, path,
         "beyond 100 years: counts as 100 years (gRPC's wait or deadline "
         "is as unreachable)");
    millis = kFarMillis;
  }
  return std::chrono::milliseconds(millis);
}

// The value at `key` of `object` read by `read`, if given (not absent nor
// null).
template <typename T>
absl::StatusOr<std::optional<T>> ReadMember(
    const JsonValue& object, absl::string_view path, absl::string_view key,
    absl::StatusOr<T> (*read)(const JsonValue&, absl::string_view)) {
  absl::StatusOr<const JsonValue*> value = Member(object, path, key);
  if (!value.ok()) return value.status();
  if (*value == nullptr) return std::optional<T>();
  absl::StatusOr<T> out = read(**value, Child(path, key));
  if (!out.ok()) return out.status();
  return std::optional<T>(*std::move(out));
}

absl::StatusOr<std::optional<Duration>> DurationMember(const JsonValue& object,
                                                       absl::string_view path,
                                                       absl::string_view key) {
  return ReadMember<Duration>(object, path, key, ReadDuration);
}
absl::StatusOr<std::optional<int64_t>> IntegerMember(const JsonValue& object,
                                                     absl::string_view path,
                                                     absl::string_view key) {
  return ReadMember<int64_t>(object, path, key, ReadInteger);
}

absl::StatusOr<nanoseconds> Positive(const Duration& d,
                                     absl::string_view path) {
  if (d.negative() || d.zero()) {
    return Bad(path, absl::StrCat("must be positive, got ", Quoted(d)));
  }
  return ToNanoseconds(d, path);
}

// A status code as gRPC's JSON writes it ("UNAVAILABLE") or as a number.
absl::StatusOr<grpc::StatusCode> ParseCode(const JsonValue& value,
                                           absl::string_view path) {
  constexpr int kLastCode = 16;  // UNAUTHENTICATED
  if (value.kind() == JsonValue::Kind::kString) {
    for (int code = 0; code <= kLastCode; ++code) {
      if (value.text() == internal::StatusCodeName(code)) {
        return static_cast<grpc::StatusCode>(code);  // OK: see CodesMember
      }
    }
    return Bad(path, absl::StrCat("unknown status code ", Describe(value),
                                  " (names are gRPC's, e.g. \"UNAVAILABLE\")"));
  }
  if (value.kind() == JsonValue::Kind::kNumber) {
    const double number = value.number_value();
    if (!(number >= 1 && number <= kLastCode) || number != std::floor(number)) {
      return Bad(path, absl::StrCat("status code numbers are 1 to ", kLastCode,
                                    ", got ", value.text()));
    }
    return static_cast<grpc::StatusCode>(static_cast<int>(number));
  }
  return Bad(path, "expected a status code name or number");
}

// The list of codes at `key` of `object`; an empty set when it is absent.
// "OK", which gRPC 1.51 accepts and which never fails a call, is left out
// with a warning (`given` still counts it).
absl::StatusOr<StatusCodeSet> CodesMember(const JsonValue& object,
                                          absl::string_view path,
                                          absl::string_view key, bool& given,
                                          Warnings& warnings) {
  absl::StatusOr<const JsonValue*> list = NonNullMember(object, path, key);
  if (!list.ok()) return list.status();
  given = *list != nullptr;
  StatusCodeSet codes;
  if (*list == nullptr) return codes;
  const std::string list_path = Child(path, key);
  if (absl::Status status = ExpectList(**list, list_path); !status.ok()) {
    return status;
  }
  const std::vector<JsonValue>& values = (*list)->elements();
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StatusOr<grpc::StatusCode> code =
        ParseCode(values[i], absl::StrCat(list_path, "[", i, "]"));
    if (!code.ok()) return code.status();
    if (*code == grpc::StatusCode::OK) {
      Warn(warnings, absl::StrCat(list_path, "[", i, "]"),
           "\"OK\" is never a failure: ignored, as gRPC 1.51 never retries "
           "it");
      continue;
    }
    codes.insert(*code);
  }
  given = !values.empty();
  return codes;
}

// maxAttempts: at least 2 (it counts the first attempt); larger than
// `limit` counts as `limit`, as gRFC A6 says ("treated as equal to the
// maximum value").
absl::StatusOr<int> MaxAttempts(int64_t value, int64_t limit,
                                absl::string_view path) {
  if (value < 2) {
    return Bad(path, absl::StrCat("must be at least 2 (it counts the first "
                                  "attempt), got ",
                                  value));
  }
  return static_cast<int>(std::min(value, limit));
}

// backoffMultiplier as gRPC 1.51 reads it: a float, from a number or a
// string, greater than 0 ("1e-50" is 0 as a float). Infinity counts as
// the largest finite multiplier (every wait after the first is
// maxBackoff, as under gRPC); NaN, which gRPC takes, is refused.
absl::StatusOr<double> ReadMultiplier(const JsonValue& value,
                                      absl::string_view path,
                                      Warnings& warnings) {
  // Judged as gRPC's float, kept as a double ("1.3" stays 1.3).
  float multiplier = 0;
  double exact = 0;
  if ((value.kind() != JsonValue::Kind::kNumber &&
       value.kind() != JsonValue::Kind::kString) ||
      !absl::SimpleAtof(value.text(), &multiplier) ||
      !absl::SimpleAtod(value.text(), &exact)) {
    return Bad(path, absl::StrCat("expected a number, got ", Describe(value)));
  }
  if (std::isnan(multiplier)) {
    return Bad(path, "NaN is not a multiplier (stubkit refuses it)");
  }
  if (!(multiplier > 0)) {
    return Bad(path, absl::StrCat("must be greater than 0 (as a float), got ",
                                  Describe(value)));
  }
  if (std::isinf(multiplier)) {
    Warn(warnings, path,
         "infinite: counts as the largest multiplier (every wait after the "
         "first is maxBackoff)");
    return std::numeric_limits<double>::max();
  }
  return exact;
}

// retryPolicy.maxAttempts as gRPC reads it (an int), if given.
// ParseRetryPolicy applies MaxAttempts once the other fields are read.
absl::StatusOr<std::optional<int64_t>> MaxAttemptsMember(
    const JsonValue& in, absl::string_view path) {
  absl::StatusOr<const JsonValue*> value =
      NonNullMember(in, path, "maxAttempts");
  if (!value.ok()) return value.status();
  if (*value == nullptr) return std::nullopt;
  absl::StatusOr<int64_t> n = ReadInteger(**value, Child(path, "maxAttempts"));
  if (!n.ok()) return n.status();
  // gRPC reads an int: more is not a number to it.
  if (*n > std::numeric_limits<int32_t>::max() ||
      *n < std::numeric_limits<int32_t>::min()) {
    return Bad(Child(path, "maxAttempts"),
               absl::StrCat("out of range, got ", *n));
  }
  return std::optional<int64_t>(*n);
}

// initialBackoff or maxBackoff: required, whole milliseconds above 0.
absl::StatusOr<nanoseconds> BackoffMember(const JsonValue& in,
                                          absl::string_view path,
                                          absl::string_view key,
                                          Warnings& warnings) {
  const std::string key_path = Child(path, key);
  absl::StatusOr<std::optional<int64_t>> millis =
      GrpcMillisMember(in, path, key, warnings);
  if (!millis.ok()) return millis.status();
  if (!millis->has_value()) return Bad(key_path, "is required");
  if (**millis <= 0) {
    return Bad(key_path, "must be greater than 0 (in whole milliseconds)");
  }
  return FarCapped(**millis, key_path, warnings);
}

// backoffMultiplier: required (see ReadMultiplier).
absl::StatusOr<double> MultiplierMember(const JsonValue& in,
                                        absl::string_view path,
                                        Warnings& warnings) {
  const std::string multiplier_path = Child(path, "backoffMultiplier");
  absl::StatusOr<const JsonValue*> value =
      NonNullMember(in, path, "backoffMultiplier");
  if (!value.ok()) return value.status();
  if (*value == nullptr) return Bad(multiplier_path, "is required");
  return ReadMultiplier(**value, multiplier_path, warnings);
}

// retryableStatusCodes: required, and listing a code (an "OK" alone lists
// none but is accepted).
absl::StatusOr<StatusCodeSet> RetryableCodes(const JsonValue& in,
                                             absl::string_view path,
                                             Warnings& warnings) {
  bool codes_given = false;
  absl::StatusOr<StatusCodeSet> codes =
      CodesMember(in, path, "retryableStatusCodes", codes_given, warnings);
  if (!codes.ok()) return codes.status();
  if (!codes_given) {
    return Bad(Child(path, "retryableStatusCodes"), "must not be empty");
  }
  return codes;
}

// gRPC C++ 1.51 ignores perAttemptRecvTimeout (it reads it only with
// hedging, which it lacks); stubkit follows A6: a positive duration.
absl::Status ParseRecvTimeout(const JsonValue& in, absl::string_view path,
                              Rules& rules) {
  absl::StatusOr<std::optional<Duration>> recv_timeout =
      DurationMember(in, path, "perAttemptRecvTimeout");
  if (!recv_timeout.ok()) return recv_timeout.status();
  if (recv_timeout->has_value()) {
    absl::StatusOr<nanoseconds> attempt_timeout =
        Positive(**recv_timeout, Child(path, "perAttemptRecvTimeout"));
    if (!attempt_timeout.ok()) return attempt_timeout.status();
    rules.attempt_timeout = *attempt_timeout;
  }
  return absl::OkStatus();
}

// The policy an entry's retryPolicy stands for: by count, or by the
// entry's timeout when it gives no count.
RetryPolicy PolicyOf(const StatusCodeSet& codes, std::optional<int> attempts,
                     const std::optional<nanoseconds>& timeout) {
  // Only "OK": gRPC accepts the policy and never retries.
  if (codes.empty()) return RetryPolicy::LimitedErrorCount(0);
  if (attempts.has_value()) {
    return RetryPolicy::LimitedErrorCount(*attempts - 1)
        .WithRetryableCodes(codes);
  }
  // As GAPIC clients read googleapis' files: bounded by the timeout.
  if (timeout.has_value()) {
    return RetryPolicy::LimitedTime(*timeout).WithRetryableCodes(codes);
  }
  return RetryPolicy::LimitedTime().WithRetryableCodes(codes);
}

absl::Status ParseRetryPolicy(const JsonValue& in,
                              const std::optional<nanoseconds>& timeout,
                              const ServiceConfigImport& how,
                              absl::string_view path, Rules& rules,
                              Warnings& warnings) {
  if (absl::Status status = ExpectObject(in, path); !status.ok()) {
    return status;
  }
  WarnUnknownKeys(
      in, path,
      {"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier",
       "retryableStatusCodes", "perAttemptRecvTimeout"},
      warnings);
  absl::StatusOr<std::optional<int64_t>> max_attempts =
      MaxAttemptsMember(in, path);
  if (!max_attempts.ok()) return max_attempts.status();
  absl::StatusOr<nanoseconds> initial =
      BackoffMember(in, path, "initialBackoff", warnings);
  if (!initial.ok()) return initial.status();
  absl::StatusOr<nanoseconds> maximum =
      BackoffMember(in, path, "maxBackoff", warnings);
  if (!maximum.ok()) return maximum.status();
  absl::StatusOr<double> multiplier = MultiplierMember(in, path, warnings);
  if (!multiplier.ok()) return multiplier.status();
  // A6 caps each wait at maxBackoff, also below initialBackoff: with a
  // multiplier of at least 1 every wait is then maxBackoff's.
  if (*maximum < *initial) {
    if (*multiplier < 1) {
      Warn(warnings, Child(path, "maxBackoff"),
           "below initialBackoff with a backoffMultiplier below 1: the waits "
           "start at maxBackoff and shrink from the second one (A6 shrinks "
           "them once the exponential falls below maxBackoff)");
    }
    *initial = *maximum;
  }
  absl::StatusOr<StatusCodeSet> codes = RetryableCodes(in, path, warnings);
  if (!codes.ok()) return codes.status();
  if (absl::Status status = ParseRecvTimeout(in, path, rules); !status.ok()) {
    return status;
  }
  std::optional<int> attempts;
  if (max_attempts->has_value()) {
    absl::StatusOr<int> n = MaxAttempts(**max_attempts, how.max_attempts,
                                        Child(path, "maxAttempts"));
    if (!n.ok()) return n.status();
    attempts = *n;
  }
  rules.retry = PolicyOf(*codes, attempts, timeout);
  // Full jitter by default: gRFC A6 draws each wait from U[0, capped
  // exponential].
  rules.backoff = ExponentialBackoffPolicy()
                      .WithInitialDelay(*initial)
                      .WithMaximumDelay(*maximum)
                      .WithMultiplier(*multiplier)
                      .WithJitter(how.jitter);
  return absl::OkStatus();
}

// gRPC C++ 1.51 has no hedging and ignores hedgingPolicy whatever it
// holds; stubkit hedges, and reads it by A6's rules.
absl::Status ParseHedgingPolicy(const JsonValue& in,
                                const ServiceConfigImport& how,
                                absl::string_view path, Rules& rules,
                                Warnings& warnings) {
  if (absl::Status status = ExpectObject(in, path); !status.ok()) {
    return status;
  }
  WarnUnknownKeys(in, path,
                  {"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"},
                  warnings);
  const std::string attempts_path = Child(path, "maxAttempts");
  absl::StatusOr<std::optional<int64_t>> max_attempts =
      IntegerMember(in, path, "maxAttempts");
  if (!max_attempts.ok()) return max_attempts.status();
  if (!max_attempts->has_value()) return Bad(attempts_path, "is required");
  absl::StatusOr<int> attempts =
      MaxAttempts(**max_attempts,
                  std::min(how.max_attempts, HedgingPolicy::kMaxAttemptsLimit),
                  attempts_path);
  if (!attempts.ok()) return attempts.status();
  nanoseconds delay = nanoseconds::zero();
  absl::StatusOr<std::optional<Duration>> hedging_delay =
      DurationMember(in, path, "hedgingDelay");
  if (!hedging_delay.ok()) return hedging_delay.status();
  if (hedging_delay->has_value()) {
    const std::string delay_path = Child(path, "hedgingDelay");
    if ((*hedging_delay)->negative()) {
      return Bad(delay_path, absl::StrCat("must not be negative, got ",
                                          Quoted(**hedging_delay)));
    }
    absl::StatusOr<nanoseconds> d = ToNanoseconds(**hedging_delay, delay_path);
    if (!d.ok()) return d.status();
    delay = *d;
  }
  // gRPC's default is no non-fatal code; stubkit's hedging needs one, so an
  // omitted or empty list keeps stubkit's default, UNAVAILABLE.
  StatusCodeSet non_fatal{grpc::StatusCode::UNAVAILABLE};
  bool codes_given = false;
  absl::StatusOr<StatusCodeSet> codes =
      CodesMember(in, path, "nonFatalStatusCodes", codes_given, warnings);
  if (!codes.ok()) return codes.status();
  if (!codes->empty()) non_fatal = *codes;
  rules.hedging = HedgingPolicy()
                      .WithMaxAttempts(*attempts)
                      .WithHedgingDelay(delay)
                      .WithNonFatalCodes(non_fatal);
  return absl::OkStatus();
}

// maxRequestMessageBytes, maxResponseMessageBytes: not stubkit's to apply
// (the channel's), but checked as gRPC 1.51 checks them, so that a file
// gRPC refuses is refused here too.
absl::Status CheckMessageSize(const JsonValue& in, absl::string_view path,
                              absl::string_view key) {
  absl::StatusOr<const JsonValue*> value = NonNullMember(in, path, key);
  if (!value.ok()) return value.status();
  if (*value == nullptr) return absl::OkStatus();
  uint32_t bytes = 0;
  if (((*value)->kind() != JsonValue::Kind::kNumber &&
       (*value)->kind() != JsonValue::Kind::kString) ||
      !absl::SimpleAtoi((*value)->text(), &bytes)) {
    return Bad(Child(path, key),
               absl::StrCat("expected a non-negative integer, got ",
                            Describe(**value)));
  }
  return absl::OkStatus();
}

// An entry's retryPolicy or hedgingPolicy (with both, as gRPC 1.51).
absl::Status ParsePolicies(const JsonValue& in, const ServiceConfigImport& how,
                           absl::string_view path, Rules& rules,
                           Warnings& warnings) {
  absl::StatusOr<const JsonValue*> retry = Member(in, path, "retryPolicy");
  if (!retry.ok()) return retry.status();
  absl::StatusOr<const JsonValue*> hedging = Member(in, path, "hedgingPolicy");
  if (!hedging.ok()) return hedging.status();
  if (*retry != nullptr) {
    absl::Status status =
        ParseRetryPolicy(**retry, rules.timeout, how,
                         Child(path, "retryPolicy"), rules, warnings);
    if (!status.ok()) return status;
  }
  if (*hedging != nullptr) {
    Rules hedged;
    absl::Status status = ParseHedgingPolicy(
        **hedging, how, Child(path, "hedgingPolicy"), hedged, warnings);
    if (!status.ok()) return status;
    if (*retry != nullptr) {
      // gRPC 1.51 accepts both and retries by the retryPolicy (it has no
      // hedging); A6 allows one. stubkit does what gRPC does.
      Warn(warnings, path,
           "has both a retryPolicy and a hedgingPolicy: the hedgingPolicy is "
           "ignored and the methods retry by the retryPolicy, as under gRPC "
           "1.51 (A6 allows one)");
    } else {
      rules.hedging = hedged.hedging;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Rules> ParseRules(const JsonValue& in,
                                 const ServiceConfigImport& how,
                                 absl::string_view path, Warnings& warnings) {
  Rules rules;
  const std::string timeout_path = Child(path, "timeout");
  absl::StatusOr<std::optional<int64_t>> timeout =
      GrpcMillisMember(in, path, "timeout", warnings);
  if (!timeout.ok()) return timeout.status();
  // "0s" (or under a millisecond) is no timeout, as in gRPC; beyond 100
  // years is none either (gRPC's deadline saturates).
  if (timeout->has_value() && **timeout > 0) {
    if (**timeout > kFarMillis) {
      Warn(warnings, timeout_path,
           "beyond 100 years: no timeout (gRPC's deadline is as unreachable)");
    } else {
      rules.timeout = std::chrono::milliseconds(**timeout);
    }
  }
  absl::StatusOr<const JsonValue*> wait_for_ready =
      Member(in, path, "waitForReady");
  if (!wait_for_ready.ok()) return wait_for_ready.status();
  if (*wait_for_ready != nullptr) {
    if ((*wait_for_ready)->kind() != JsonValue::Kind::kBool) {
      return Bad(Child(path, "waitForReady"), "expected true or false");
    }
    rules.wait_for_ready = (*wait_for_ready)->bool_value();
  }
  for (absl::string_view key :
       {"maxRequestMessageBytes", "maxResponseMessageBytes"}) {
    if (absl::Status status = CheckMessageSize(in, path, key); !status.ok()) {
      return status;
    }
  }
  if (absl::Status status = ParsePolicies(in, how, path, rules, warnings);
      !status.ok()) {
    return status;
  }
  return rules;
}

// The options one entry sets, plus resets of what the less specific
// entries (`outer`) set and it does not, so that it wins as a whole.
Options ToOptionsOf(const Rules& rules, const std::vector<const Rules*>& outer,
                    const ServiceConfigImport& how,
                    const std::shared_ptr<RetryThrottle>& throttle) {
  Options options;
  // Every entry decides how its methods retry: its policy, or none.
  options.set<RetryPolicyOption>(
      rules.retry ? *rules.retry : RetryPolicy::LimitedErrorCount(0));
  options.set<HedgingPolicyOption>(rules.hedging ? *rules.hedging
                                                 : HedgingPolicy());
  const bool has_policy = rules.retry || rules.hedging;
  // A policy is the service owner's word that the method may be repeated
  // (A6 has no other idempotency marker).
  if (has_policy && !how.keep_idempotency_rules) {
    options.set<IdempotencyOption>(Idempotency::kIdempotent);
  }
  // A6: only the calls of methods with a policy count for the throttle, so
  // the failures of a method the file does not retry cannot switch retries
  // off for those it does.
  if (throttle != nullptr) {
    options.set<RetryThrottleOption>(has_policy ? throttle : nullptr);
  }
  bool outer_timeout = false;
  bool outer_wait_for_ready = false;
  bool outer_backoff = false;
  bool outer_attempt_timeout = false;
  for (const Rules* o : outer) {
    outer_timeout |= o->timeout.has_value();
    outer_wait_for_ready |= o->wait_for_ready.has_value();
    outer_backoff |= o->backoff.has_value();
    outer_attempt_timeout |= o->attempt_timeout.has_value();
  }
  if (rules.attempt_timeout) {
    options.set<AttemptTimeoutOption>(*rules.attempt_timeout);
  } else if (outer_attempt_timeout) {
    options.set<AttemptTimeoutOption>(nanoseconds::zero());
  }
  if (rules.timeout) {
    options.set<TotalTimeoutOption>(*rules.timeout);
  } else if (outer_timeout) {
    options.set<TotalTimeoutOption>(nanoseconds::zero());
  }
  if (rules.wait_for_ready) {
    options.set<WaitForReadyOption>(*rules.wait_for_ready);
  } else if (outer_wait_for_ready) {
    options.set<WaitForReadyOption>(false);  // gRPC's default: fail fast
  }
  if (rules.backoff) {
    options.set<BackoffPolicyOption>(*rules.backoff);
  } else if (outer_backoff) {
    options.set<BackoffPolicyOption>(ExponentialBackoffPolicy());
  }
  return options;
}

std::string NameForMessages(const std::string& key) {
  return key.empty() ? "{} (the default)"
                     : absl::StrCat("\"", Printable(key), "\"");
}

// The shared parser of method names (either spelling).
std::pair<absl::string_view, absl::string_view> SplitMethod(
    absl::string_view method) {
  return internal::SplitMethodName(method);
}

// gRPC's JSON reader refuses a key given twice in any object, also in
// fields stubkit does not read.
absl::Status CheckDuplicateKeys(const JsonValue& value,
                                const std::string& path) {
  if (value.kind() == JsonValue::Kind::kArray) {
    const std::vector<JsonValue>& elements = value.elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      absl::Status status =
          CheckDuplicateKeys(elements[i], absl::StrCat(path, "[", i, "]"));
      if (!status.ok()) return status;
    }
  } else if (value.kind() == JsonValue::Kind::kObject) {
    for (const auto& member : value.members()) {
      const std::string child = Child(path, Printable(member.first));
      if (value.CountOf(member.first) > 1) {
        return Bad(child, "given more than once");
      }
      absl::Status status = CheckDuplicateKeys(member.second, child);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

// retryThrottling.maxTokens as gRPC 1.51 reads it: an unsigned 32-bit
// integer above 0, from a number or a string.
absl::StatusOr<uint32_t> MaxTokensMember(const JsonValue& in,
                                         absl::string_view path) {
  const std::string tokens_path = "retryThrottling.maxTokens";
  absl::StatusOr<const JsonValue*> tokens_value =
      NonNullMember(in, path, "maxTokens");
  if (!tokens_value.ok()) return tokens_value.status();
  if (*tokens_value == nullptr) return Bad(tokens_path, "is required");
  uint32_t max_tokens = 0;
  if (((*tokens_value)->kind() != JsonValue::Kind::kNumber &&
       (*tokens_value)->kind() != JsonValue::Kind::kString) ||
      !absl::SimpleAtoi((*tokens_value)->text(), &max_tokens)) {
    return Bad(tokens_path,
               absl::StrCat("expected an integer in [1, 4294967295], got ",
                            Describe(**tokens_value)));
  }
  if (max_tokens == 0) return Bad(tokens_path, "must be greater than 0");
  return max_tokens;
}

// retryThrottling.tokenRatio as gRPC 1.51 reads it: digits with at most 3
// decimals counted (more are dropped), above 0, from a number or a string.
absl::StatusOr<double> TokenRatioMember(const JsonValue& in,
                                        absl::string_view path) {
  const std::string ratio_path = "retryThrottling.tokenRatio";
  absl::StatusOr<const JsonValue*> ratio_value =
      NonNullMember(in, path, "tokenRatio");
  if (!ratio_value.ok()) return ratio_value.status();
  if (*ratio_value == nullptr) return Bad(ratio_path, "is required");
  const JsonValue& ratio_json = **ratio_value;
  auto bad_ratio = [&] {
    return Bad(ratio_path, absl::StrCat("expected a number such as 0.1, got ",
                                        Describe(ratio_json)));
  };
  if (ratio_json.kind() != JsonValue::Kind::kNumber &&
      ratio_json.kind() != JsonValue::Kind::kString) {
    return bad_ratio();
  }
  absl::string_view whole = ratio_json.text();
  uint32_t thousandths = 0;
  uint32_t scale = 1;
  if (const size_t dot = whole.find('.'); dot != absl::string_view::npos) {
    absl::string_view decimals = whole.substr(dot + 1);
    whole = whole.substr(0, dot);
    if (decimals.size() > 3) decimals = decimals.substr(0, 3);
    if (!absl::SimpleAtoi(decimals, &thousandths)) return bad_ratio();
    for (size_t i = decimals.size(); i < 3; ++i) thousandths *= 10;
    scale = 1000;
  }
  uint32_t whole_value = 0;
  if (!absl::SimpleAtoi(whole, &whole_value)) return bad_ratio();
  const uint64_t milli = uint64_t{whole_value} * scale + thousandths;
  if (milli == 0) {
    return Bad(ratio_path,
               absl::StrCat("must be greater than 0 (in thousandths), got ",
                            Describe(ratio_json)));
  }
  return static_cast<double>(milli) / 1000;
}

// retryThrottling as gRPC 1.51 reads it (see MaxTokensMember and
// TokenRatioMember), within what RetryThrottle holds.
absl::StatusOr<std::shared_ptr<RetryThrottle>> ParseThrottling(
    const JsonValue& in, Warnings& warnings) {
  const std::string path = "retryThrottling";
  WarnUnknownKeys(in, "retryThrottling", {"maxTokens", "tokenRatio"}, warnings);
  if (absl::Status status = ExpectObject(in, path); !status.ok()) {
    return status;
  }
  absl::StatusOr<uint32_t> max_tokens = MaxTokensMember(in, path);
  if (!max_tokens.ok()) return max_tokens.status();
  absl::StatusOr<double> ratio = TokenRatioMember(in, path);
  if (!ratio.ok()) return ratio.status();
  double tokens = *max_tokens;
  // RetryThrottle holds at most 1000 tokens.
  if (tokens > 1000) {
    Warn(warnings, "retryThrottling.maxTokens",
         absl::StrCat(*max_tokens,
                      " counts as 1000, stubkit's largest bucket: retries "
                      "stop after fewer failures in a row than under gRPC"));
    tokens = 1000;
  }
  // A success never fills the bucket beyond maxTokens: a larger ratio
  // behaves as maxTokens.
  return std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(tokens).WithTokenRatio(
          std::min(*ratio, tokens)));
}

// Where a methodConfig name points: its entry, for messages its JSON
// path, and whether it names a method (or a service, or every method).
struct Named {
  size_t rules;
  std::string path;
  bool is_method;
};
// Keyed "" (the default), "pkg.Service" and "pkg.Service/Method".
using Names = std::map<std::string, Named>;

struct NameParts {
  std::string service;
  std::string method;  // "" for a whole service
};

// One entry of a `name` list: a service and, if it names one, a method.
absl::StatusOr<NameParts> ReadName(const JsonValue& name,
                                   const std::string& name_path,
                                   Warnings& warnings, std::string& key_hint) {
  if (absl::Status status = ExpectObject(name, name_path); !status.ok()) {
    return status;
  }
  WarnUnknownKeys(name, name_path, {"service", "method"}, warnings, &key_hint);
  std::string name_parts[2];
  const char* keys[2] = {"service", "method"};
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<const JsonValue*> part = Member(name, name_path, keys[k]);
    if (!part.ok()) return part.status();
    if (*part == nullptr) continue;
    absl::StatusOr<std::string> text =
        ReadString(**part, Child(name_path, keys[k]));
    if (!text.ok()) return text.status();
    name_parts[k] = *std::move(text);
  }
  if (name_parts[0].empty() && !name_parts[1].empty()) {
    return Bad(name_path, absl::StrCat("method \"", Printable(name_parts[1]),
                                       "\" needs a service"));
  }
  return NameParts{std::move(name_parts[0]), std::move(name_parts[1])};
}

// The names step: entry `i`'s `name` list, into `names`.
absl::Status ParseNames(const JsonValue& entry, const std::string& path,
                        size_t i, Names& names, Warnings& warnings,
                        std::string& key_hint) {
  const std::string names_path = Child(path, "name");
  absl::StatusOr<const JsonValue*> name_list =
      NonNullMember(entry, path, "name");
  if (!name_list.ok()) return name_list.status();
  if (*name_list != nullptr) {
    if (absl::Status status = ExpectList(**name_list, names_path);
        !status.ok()) {
      return status;
    }
  }
  if (*name_list == nullptr || (*name_list)->elements().empty()) {
    // gRPC 1.51 accepts it and applies it to no method.
    Warn(warnings, names_path,
         "lists no name: the entry applies to no method, as under gRPC "
         "({} names every method)");
  }
  static const std::vector<JsonValue> kNoNames;
  const std::vector<JsonValue>& name_values =
      *name_list == nullptr ? kNoNames : (*name_list)->elements();
  for (size_t j = 0; j < name_values.size(); ++j) {
    const std::string name_path = absl::StrCat(names_path, "[", j, "]");
    absl::StatusOr<NameParts> parts =
        ReadName(name_values[j], name_path, warnings, key_hint);
    if (!parts.ok()) return parts.status();
    const std::string& service = parts->service;
    const std::string& method = parts->method;
    // Methods in gRPC's spelling, "a.B/C": the service "a.B.C" is
    // another name.
    std::string key = service;
    if (!method.empty()) absl::StrAppend(&key, "/", method);
    auto [it, inserted] =
        names.emplace(key, Named{i, name_path, !method.empty()});
    if (!inserted) {
      return Bad(name_path,
                 absl::StrCat("duplicate name ", NameForMessages(key),
                              ", also at ", it->second.path));
    }
  }
  return absl::OkStatus();
}

// The methodConfig list: each entry's names and rules.
absl::Status ParseMethodConfig(const JsonValue& root,
                               const ServiceConfigImport& how,
                               std::vector<Rules>& rules, Names& names,
                               Warnings& warnings, std::string& key_hint) {
  absl::StatusOr<const JsonValue*> method_config =
      NonNullMember(root, "", "methodConfig");
  if (!method_config.ok()) return method_config.status();
  if (*method_config == nullptr) return absl::OkStatus();
  if (absl::Status status = ExpectList(**method_config, "methodConfig");
      !status.ok()) {
    return status;
  }
  const std::vector<JsonValue>& entries = (*method_config)->elements();
  rules.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const JsonValue& entry = entries[i];
    const std::string path = absl::StrCat("methodConfig[", i, "]");
    if (absl::Status status = ExpectObject(entry, path); !status.ok()) {
      return status;
    }
    WarnUnknownKeys(
        entry, path,
        {"name", "timeout", "waitForReady", "retryPolicy", "hedgingPolicy",
         "maxRequestMessageBytes", "maxResponseMessageBytes"},
        warnings, &key_hint);
    if (absl::Status status =
            ParseNames(entry, path, i, names, warnings, key_hint);
        !status.ok()) {
      return status;
    }
    absl::StatusOr<Rules> parsed_rules = ParseRules(entry, how, path, warnings);
    if (!parsed_rules.ok()) return parsed_rules.status();
    rules.push_back(*std::move(parsed_rules));
  }
  return absl::OkStatus();
}

// The import settings, checked before the text is read.
absl::Status CheckImport(const ServiceConfigImport& how) {
  if (how.max_attempts < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ServiceConfigImport::max_attempts must be at least 2, got ",
        how.max_attempts));
  }
  if (absl::Status jitter = ExponentialBackoffPolicy()
                                .WithInitialDelay(nanoseconds(1))
                                .WithMaximumDelay(nanoseconds(1))
                                .WithMultiplier(1)
                                .WithJitter(how.jitter)
                                .status();
      !jitter.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ServiceConfigImport::jitter: ", jitter.message()));
  }
  return absl::OkStatus();
}

// The JSON step: the text as one object, without duplicate keys.
absl::StatusOr<JsonValue> ParseRoot(absl::string_view json) {
  absl::StatusOr<JsonValue> root = internal::ParseJson(json);
  if (!root.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid service config JSON: ", root.status().message()));
  }
  if (root->kind() != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid service config JSON: expected an object at the "
                     "top level, got ",
                     Describe(*root)));
  }

  if (absl::Status status = CheckDuplicateKeys(*root, ""); !status.ok()) {
    // Outside what stubkit reads, the path alone would not say what it is.
    if (!absl::StartsWith(status.message(), "methodConfig") &&
        !absl::StartsWith(status.message(), "retryThrottling")) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid service config JSON: ", status.message()));
    }
    return status;
  }
  return root;
}

// The throttling step: the retryThrottling bucket, null when there is none.
absl::StatusOr<std::shared_ptr<RetryThrottle>> ParseOptionalThrottling(
    const JsonValue& root, Warnings& warnings) {
  absl::StatusOr<const JsonValue*> throttling =
      Member(root, "", "retryThrottling");
  if (!throttling.ok()) return throttling.status();
  if (*throttling == nullptr) return nullptr;
  return ParseThrottling(**throttling, warnings);
}

// What the resolution step gives a name: its options and its service.
struct ResolvedName {
  std::string key;
  Options options;
  std::string service;
};
struct Resolution {
  Options default_options;
  bool has_default = false;
  std::vector<ResolvedName> names;
};

// The resolution step: a name's options are its entry's rules over its
// service's entry (for a method name) over the default entry's.
Resolution Resolve(const std::vector<Rules>& rules, const Names& names,
                   const ServiceConfigImport& how,
                   const std::shared_ptr<RetryThrottle>& throttle) {
  Resolution resolution;
  const Rules* default_rules = nullptr;
  if (auto it = names.find(""); it != names.end()) {
    default_rules = &rules[it->second.rules];
    resolution.default_options = ToOptionsOf(*default_rules, {}, how, throttle);
    resolution.has_default = true;
  } else if (how.keep_stubkit_defaults) {
    // The client's own options, and its retries count for the bucket.
    if (throttle != nullptr) {
      resolution.default_options.set<RetryThrottleOption>(throttle);
    }
  } else {
    // As gRPC: "unless the service owner specifies a policy in the
    // configuration, retries and hedging will not be enabled".
    resolution.default_options = ToOptionsOf(Rules{}, {}, how, throttle);
  }
  for (const auto& [key, named] : names) {
    if (key.empty()) continue;
    std::vector<const Rules*> outer;
    if (named.is_method) {
      auto service = names.find(std::string(SplitMethod(key).first));
      if (service != names.end())
        outer.push_back(&rules[service->second.rules]);
    }
    if (default_rules != nullptr) outer.push_back(default_rules);
    resolution.names.push_back(ResolvedName{
        key, ToOptionsOf(rules[named.rules], outer, how, throttle),
        named.is_method ? std::string(SplitMethod(key).first) : key});
  }
  return resolution;
}

}  // namespace

absl::StatusOr<ServiceConfig> ParseServiceConfig(
    absl::string_view json, const ServiceConfigImport& how) {
  if (absl::Status status = CheckImport(how); !status.ok()) return status;
  absl::StatusOr<JsonValue> root = ParseRoot(json);
  if (!root.ok()) return root.status();

  // Parsed rules, one per methodConfig entry, and where each name points.
  std::vector<Rules> rules;
  Names names;  // "" is the default
  Warnings warnings;
  std::string key_hint;  // a misspelt key that may explain an unnamed service
  WarnUnknownKeys(*root, "",
                  {"methodConfig", "retryThrottling", "loadBalancingConfig",
                   "loadBalancingPolicy", "healthCheckConfig"},
                  warnings, &key_hint);
  if (absl::Status status =
          ParseMethodConfig(*root, how, rules, names, warnings, key_hint);
      !status.ok()) {
    return status;
  }

  ServiceConfig config;
  config.how_ = how;
  absl::StatusOr<std::shared_ptr<RetryThrottle>> throttle =
      ParseOptionalThrottling(*root, warnings);
  if (!throttle.ok()) return throttle.status();
  config.throttle_ = *std::move(throttle);
  Resolution resolution = Resolve(rules, names, how, config.throttle_);
  config.default_ = std::move(resolution.default_options);
  config.has_default_ = resolution.has_default;
  for (ResolvedName& name : resolution.names) {
    config.entries_[name.key] =
        ServiceConfig::Entry{std::move(name.options), std::move(name.service)};
  }

  config.warnings_ = std::move(warnings);
  config.key_hint_ = std::move(key_hint);
  return config;
}

absl::StatusOr<ServiceConfig> LoadServiceConfigFile(
    const std::string& path, const ServiceConfigImport& how) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    return absl::NotFoundError(absl::StrCat("cannot read service config ", path,
                                            ": ", std::strerror(error)));
  }
  std::ostringstream content;
  content << file.rdbuf();
  if (file.bad()) {
    return absl::DataLossError(
        absl::StrCat("cannot read service config ", path));
  }
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(content.str(), how);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(path, ": ", config.status().message()));
  }
  return config;
}

Options ServiceConfig::OptionsFor(absl::string_view method) const {
  // As a client layers its entries: the service's, then the method's.
  Options options = default_;
  bool named = has_default_;  // the file has rules for this method
  const absl::string_view service = SplitMethod(method).first;
  if (!service.empty()) {
    if (auto it = entries_.find(std::string(service)); it != entries_.end()) {
      options = options.MergedWith(it->second.options);
      named = true;
    }
    const std::string key =
        absl::StrCat(service, "/", SplitMethod(method).second);
    if (auto it = entries_.find(key); it != entries_.end()) {
      options = options.MergedWith(it->second.options);
      named = true;
    }
  }
  // Used as a client's options, a client of another service says so.
  SetImported(options, &service);
  if (named) NoticeDroppedRetries(options);
  return options;
}

void ServiceConfig::SetImported(Options& options,
                                const absl::string_view* service) const {
  auto imported = std::make_shared<internal::ImportedServices>();
  imported->has_default = has_default_;
  imported->keep_stubkit_defaults = how_.keep_stubkit_defaults;
  imported->warnings = warnings_;
  imported->key_hint = key_hint_;
  for (const auto& [key, entry] : entries_) {
    if (service != nullptr && entry.service != *service) continue;
    if (imported->services.empty() ||
        imported->services.back() != entry.service) {
      imported->services.push_back(entry.service);
    }
  }
  // Sorted and without duplicates, for the message.
  std::sort(imported->services.begin(), imported->services.end());
  imported->services.erase(
      std::unique(imported->services.begin(), imported->services.end()),
      imported->services.end());
  options.set<internal::ImportedServicesOption>(std::move(imported));
}

void ServiceConfig::NoticeDroppedRetries(Options& options) const {
  // A fresh flag for each client's options: the notice is once per client.
  if (how_.keep_idempotency_rules &&
      (options.get<RetryPolicyOption>().max_failures() != 0 ||
       options.get<HedgingPolicyOption>().enabled())) {
    options.set<internal::DroppedRetryNoticeOption>(
        std::make_shared<std::atomic<bool>>(false));
  }
}

Options ServiceConfig::ClientOptions(const absl::string_view* service) const {
  Options options = default_;
  SetImported(options, service);
  if (has_default_) NoticeDroppedRetries(options);
  MethodOptionsOption::Type entries;
  for (const auto& [key, entry] : entries_) {
    if (service == nullptr || entry.service == *service) {
      // Marked, so that a client ignores an entry naming a method it
      // lacks (see ImportedEntryOption).
      Options options = entry.options;
      options.set<internal::ImportedEntryOption>(true);
      NoticeDroppedRetries(options);
      entries.emplace(key, std::move(options));
    }
  }
  if (!entries.empty()) {
    options.set<MethodOptionsOption>(std::move(entries));
  }
  return options;
}

Options ServiceConfig::ToOptions() const { return ClientOptions(nullptr); }

Options ServiceConfig::ToOptions(absl::string_view service) const {
  return ClientOptions(&service);
}

}  // namespace stubkit

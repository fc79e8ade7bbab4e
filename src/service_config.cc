// Copyright 2026 The stubkit Authors.

#include "stubkit/service_config.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

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
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "src/internal/format.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/method_options.h"
#include "stubkit/internal/service_config.pb.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"

namespace stubkit {
namespace {

namespace json = ::stubkit::internal::grpc_service_config;
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

std::string Quoted(const google::protobuf::Duration& d) {
  return absl::StrCat("\"", google::protobuf::util::TimeUtil::ToString(d),
                      "\"");
}

// "method_config[0].retry_policy" -> "methodConfig[0].retryPolicy": the
// JSON names, as the user wrote them (or would have).
std::string JsonPath(absl::string_view proto_path) {
  std::string out;
  bool upper = false;
  for (char c : proto_path) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out.push_back(
        upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
              : c);
    upper = false;
  }
  return out;
}

// Rewrites protobuf's parse errors in stubkit's "path: problem" form.
// Shapes (protobuf 3.21): "(path): invalid value <v> for type <t>", and
// text with a caret diagram for JSON syntax errors.
absl::Status FromParseError(absl::string_view message) {
  if (absl::ConsumePrefix(&message, "(")) {
    const size_t close = message.find("): ");
    if (close != absl::string_view::npos) {
      std::string path = JsonPath(message.substr(0, close));
      absl::string_view rest = message.substr(close + 3);
      if (path.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid service config JSON: ", Printable(rest)));
      }
      // protobuf names the object, not the field, here.
      if (absl::StrContains(rest, "on a scalar field")) {
        return Bad(path,
                   "a field of it takes a single value, got an object "
                   "or a list");
      }
      // A key given twice, where the mirror proto has an optional field:
      // "oneof field '_x' is already set. Cannot set 'x'" (the fuzzer
      // found it).
      const size_t cannot_set = rest.find("Cannot set '");
      if (rest.find("is already set") != absl::string_view::npos &&
          cannot_set != absl::string_view::npos) {
        absl::string_view field = rest.substr(cannot_set + 12);
        field = field.substr(0, field.find('\''));
        return Bad(absl::StrCat(path, path.empty() ? "" : ".", JsonPath(field)),
                   "given more than once");
      }
      absl::string_view type;
      const size_t for_type = rest.rfind(" for type ");
      if (for_type != absl::string_view::npos) {
        type = rest.substr(for_type + 10);
        rest = rest.substr(0, for_type);
      }
      absl::ConsumePrefix(&rest, "invalid value ");
      // Durations: "Field 'timeout', Illegal duration format; ...".
      if (absl::ConsumePrefix(&rest, "Field '")) {
        const size_t comma = rest.find("', ");
        if (comma != absl::string_view::npos) rest = rest.substr(comma + 3);
        return Bad(path, absl::StrCat("not a duration such as \"0.100s\" (",
                                      Printable(rest), ")"));
      }
      absl::string_view expected = "a value of another type";
      if (type == "TYPE_STRING") {
        expected = "a string";
      } else if (type == "TYPE_BOOL") {
        expected = "true or false";
      } else if (type == "TYPE_DOUBLE" || type == "TYPE_FLOAT") {
        expected = "a number";
      } else if (absl::StartsWith(type, "TYPE_INT") ||
                 absl::StartsWith(type, "TYPE_UINT")) {
        expected = "an integer";
      } else if (!type.empty()) {
        expected = "an object";
      }
      return Bad(
          path, absl::StrCat("expected ", expected, ", got ", Printable(rest)));
    }
  }
  // Syntax errors: the first line, without protobuf's caret diagram.
  absl::string_view first_line = message.substr(0, message.find('\n'));
  absl::ConsumePrefix(&first_line, ": ");
  return absl::InvalidArgumentError(
      absl::StrCat("invalid service config JSON: ", Printable(first_line)));
}

absl::StatusOr<nanoseconds> ToNanoseconds(const google::protobuf::Duration& d,
                                          absl::string_view path) {
  // Duration allows 10,000 years; nanoseconds hold about 292.
  constexpr int64_t kMaxSeconds =
      std::numeric_limits<int64_t>::max() / 1000000000 - 1;
  if (d.seconds() > kMaxSeconds || d.seconds() < -kMaxSeconds) {
    return Bad(path, absl::StrCat("too large, got ", Quoted(d)));
  }
  return std::chrono::seconds(d.seconds()) + nanoseconds(d.nanos());
}

absl::StatusOr<nanoseconds> Positive(const google::protobuf::Duration& d,
                                     absl::string_view path) {
  if (d.seconds() < 0 || d.nanos() < 0 ||
      (d.seconds() == 0 && d.nanos() == 0)) {
    return Bad(path, absl::StrCat("must be positive, got ", Quoted(d)));
  }
  return ToNanoseconds(d, path);
}

// A status code as gRPC's JSON writes it ("UNAVAILABLE") or as a number.
absl::StatusOr<grpc::StatusCode> ParseCode(const google::protobuf::Value& value,
                                           absl::string_view path) {
  constexpr int kLastCode = 16;  // UNAUTHENTICATED
  if (value.kind_case() == google::protobuf::Value::kStringValue) {
    for (int code = 0; code <= kLastCode; ++code) {
      if (value.string_value() == internal::StatusCodeName(code)) {
        if (code == 0) return Bad(path, "OK is not a failure");
        return static_cast<grpc::StatusCode>(code);
      }
    }
    return Bad(
        path,
        absl::StrCat("unknown status code \"", Printable(value.string_value()),
                     "\" (names are gRPC's, e.g. \"UNAVAILABLE\")"));
  }
  if (value.kind_case() == google::protobuf::Value::kNumberValue) {
    const double number = value.number_value();
    if (!(number >= 1 && number <= kLastCode) || number != std::floor(number)) {
      return Bad(path, absl::StrCat("status code numbers are 1 to ", kLastCode,
                                    ", got ", number));
    }
    return static_cast<grpc::StatusCode>(static_cast<int>(number));
  }
  return Bad(path, "expected a status code name or number");
}

absl::StatusOr<StatusCodeSet> ParseCodes(
    const google::protobuf::RepeatedPtrField<google::protobuf::Value>& values,
    absl::string_view path) {
  StatusCodeSet codes;
  for (int i = 0; i < values.size(); ++i) {
    absl::StatusOr<grpc::StatusCode> code =
        ParseCode(values[i], absl::StrCat(path, "[", i, "]"));
    if (!code.ok()) return code.status();
    codes.insert(*code);
  }
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

absl::Status ParseRetryPolicy(const json::MethodConfig::RetryPolicy& in,
                              const std::optional<nanoseconds>& timeout,
                              const ServiceConfigImport& how,
                              absl::string_view path, Rules& rules) {
  const std::string initial_path = absl::StrCat(path, ".initialBackoff");
  const std::string max_path = absl::StrCat(path, ".maxBackoff");
  const std::string multiplier_path = absl::StrCat(path, ".backoffMultiplier");
  const std::string codes_path = absl::StrCat(path, ".retryableStatusCodes");
  if (!in.has_initial_backoff()) return Bad(initial_path, "is required");
  absl::StatusOr<nanoseconds> initial =
      Positive(in.initial_backoff(), initial_path);
  if (!initial.ok()) return initial.status();
  if (!in.has_max_backoff()) return Bad(max_path, "is required");
  absl::StatusOr<nanoseconds> maximum = Positive(in.max_backoff(), max_path);
  if (!maximum.ok()) return maximum.status();
  if (!in.has_backoff_multiplier()) return Bad(multiplier_path, "is required");
  const double multiplier = in.backoff_multiplier();
  if (!std::isfinite(multiplier) || !(multiplier > 0)) {
    return Bad(multiplier_path,
               absl::StrCat("must be positive, got ", multiplier));
  }
  // A6 caps each wait at maxBackoff, also below initialBackoff: with a
  // multiplier of at least 1 every wait is then maxBackoff's.
  if (*maximum < *initial) {
    if (multiplier < 1) {
      return Bad(
          max_path,
          absl::StrCat("below initialBackoff (", Quoted(in.initial_backoff()),
                       ") with a backoffMultiplier below 1 is not "
                       "supported, got ",
                       Quoted(in.max_backoff())));
    }
    initial = *maximum;
  }
  if (in.retryable_status_codes().empty()) {
    return Bad(codes_path, "must not be empty");
  }
  absl::StatusOr<StatusCodeSet> codes =
      ParseCodes(in.retryable_status_codes(), codes_path);
  if (!codes.ok()) return codes.status();

  if (in.has_per_attempt_recv_timeout()) {
    absl::StatusOr<nanoseconds> attempt_timeout =
        Positive(in.per_attempt_recv_timeout(),
                 absl::StrCat(path, ".perAttemptRecvTimeout"));
    if (!attempt_timeout.ok()) return attempt_timeout.status();
    rules.attempt_timeout = *attempt_timeout;
  }
  if (in.has_max_attempts()) {
    absl::StatusOr<int> attempts =
        MaxAttempts(in.max_attempts(), how.max_attempts,
                    absl::StrCat(path, ".maxAttempts"));
    if (!attempts.ok()) return attempts.status();
    rules.retry = RetryPolicy::LimitedErrorCount(*attempts - 1);
  } else if (timeout.has_value()) {
    // As GAPIC clients read googleapis' files: bounded by the timeout.
    rules.retry = RetryPolicy::LimitedTime(*timeout);
  } else {
    rules.retry = RetryPolicy::LimitedTime();
  }
  rules.retry->WithRetryableCodes(*codes);
  // Full jitter by default: gRFC A6 draws each wait from U[0, capped
  // exponential].
  rules.backoff =
      ExponentialBackoffPolicy(*initial, *maximum, multiplier, how.jitter);
  return absl::OkStatus();
}

absl::Status ParseHedgingPolicy(const json::MethodConfig::HedgingPolicy& in,
                                const ServiceConfigImport& how,
                                absl::string_view path, Rules& rules) {
  const std::string attempts_path = absl::StrCat(path, ".maxAttempts");
  if (!in.has_max_attempts()) return Bad(attempts_path, "is required");
  absl::StatusOr<int> attempts =
      MaxAttempts(in.max_attempts(),
                  std::min(how.max_attempts, HedgingPolicy::kMaxAttemptsLimit),
                  attempts_path);
  if (!attempts.ok()) return attempts.status();
  nanoseconds delay = nanoseconds::zero();
  if (in.has_hedging_delay()) {
    const std::string delay_path = absl::StrCat(path, ".hedgingDelay");
    if (in.hedging_delay().seconds() < 0 || in.hedging_delay().nanos() < 0) {
      return Bad(delay_path, absl::StrCat("must not be negative, got ",
                                          Quoted(in.hedging_delay())));
    }
    absl::StatusOr<nanoseconds> d =
        ToNanoseconds(in.hedging_delay(), delay_path);
    if (!d.ok()) return d.status();
    delay = *d;
  }
  // gRPC's default is no non-fatal code; stubkit's hedging needs one, so an
  // omitted or empty list keeps stubkit's default, UNAVAILABLE.
  StatusCodeSet non_fatal{grpc::StatusCode::UNAVAILABLE};
  if (!in.non_fatal_status_codes().empty()) {
    absl::StatusOr<StatusCodeSet> codes =
        ParseCodes(in.non_fatal_status_codes(),
                   absl::StrCat(path, ".nonFatalStatusCodes"));
    if (!codes.ok()) return codes.status();
    non_fatal = *codes;
  }
  rules.hedging = HedgingPolicy(*attempts, delay, non_fatal);
  return absl::OkStatus();
}

absl::StatusOr<Rules> ParseRules(const json::MethodConfig& in,
                                 const ServiceConfigImport& how,
                                 absl::string_view path) {
  Rules rules;
  if (in.has_timeout()) {
    const std::string timeout_path = absl::StrCat(path, ".timeout");
    if (in.timeout().seconds() < 0 || in.timeout().nanos() < 0) {
      return Bad(timeout_path, absl::StrCat("must not be negative, got ",
                                            Quoted(in.timeout())));
    }
    absl::StatusOr<nanoseconds> timeout =
        ToNanoseconds(in.timeout(), timeout_path);
    if (!timeout.ok()) return timeout.status();
    // "0s" is no timeout, as in gRPC.
    if (*timeout > nanoseconds::zero()) rules.timeout = *timeout;
  }
  if (in.has_wait_for_ready()) {
    const google::protobuf::Value& value = in.wait_for_ready();
    if (value.kind_case() == google::protobuf::Value::kBoolValue) {
      rules.wait_for_ready = value.bool_value();
    } else if (value.kind_case() != google::protobuf::Value::kNullValue) {
      return Bad(absl::StrCat(path, ".waitForReady"), "expected true or false");
    }
  }
  if (in.has_retry_policy() && in.has_hedging_policy()) {
    return Bad(path,
               "has both a retryPolicy and a hedgingPolicy (gRPC allows one)");
  }
  if (in.has_retry_policy()) {
    absl::Status status =
        ParseRetryPolicy(in.retry_policy(), rules.timeout, how,
                         absl::StrCat(path, ".retryPolicy"), rules);
    if (!status.ok()) return status;
  }
  if (in.has_hedging_policy()) {
    absl::Status status = ParseHedgingPolicy(
        in.hedging_policy(), how, absl::StrCat(path, ".hedgingPolicy"), rules);
    if (!status.ok()) return status;
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

// "pkg.Service.Method" or "pkg.Service/Method" -> ("pkg.Service",
// "Method").
std::pair<absl::string_view, absl::string_view> SplitMethod(
    absl::string_view method) {
  const size_t slash = method.find('/');
  if (slash != absl::string_view::npos) {
    return {method.substr(0, slash), method.substr(slash + 1)};
  }
  const size_t dot = method.rfind('.');
  if (dot == absl::string_view::npos) return {absl::string_view(), method};
  return {method.substr(0, dot), method.substr(dot + 1)};
}

}  // namespace

absl::StatusOr<ServiceConfig> ParseServiceConfig(
    absl::string_view json, const ServiceConfigImport& how) {
  if (how.max_attempts < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ServiceConfigImport::max_attempts must be at least 2, got ",
        how.max_attempts));
  }
  if (absl::Status jitter = ExponentialBackoffPolicy(
                                nanoseconds(1), nanoseconds(1), 1, how.jitter)
                                .status();
      !jitter.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ServiceConfigImport::jitter: ", jitter.message()));
  }
  json::ServiceConfig parsed;
  google::protobuf::util::JsonParseOptions parse_options;
  // Everything stubkit does not read (newer gRPC fields included) is ignored.
  parse_options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &parsed,
      parse_options);
  if (!status.ok()) {
    return FromParseError(
        absl::string_view(status.message().data(), status.message().size()));
  }

  // Parsed rules, one per methodConfig entry, and where each name points.
  std::vector<Rules> rules;
  rules.reserve(parsed.method_config_size());
  struct Named {
    int rules;
    std::string path;
    bool is_method;
  };
  std::map<std::string, Named> names;  // "" is the default
  for (int i = 0; i < parsed.method_config_size(); ++i) {
    const json::MethodConfig& entry = parsed.method_config(i);
    const std::string path = absl::StrCat("methodConfig[", i, "]");
    if (entry.name().empty()) {
      return Bad(absl::StrCat(path, ".name"),
                 "must list at least one name ({} for every method)");
    }
    for (int j = 0; j < entry.name_size(); ++j) {
      const json::MethodConfig::Name& name = entry.name(j);
      const std::string name_path = absl::StrCat(path, ".name[", j, "]");
      if (name.service().empty() && !name.method().empty()) {
        return Bad(name_path,
                   absl::StrCat("method \"", Printable(name.method()),
                                "\" needs a service"));
      }
      // Methods in gRPC's spelling, "a.B/C": the service "a.B.C" is
      // another name.
      std::string key = name.service();
      if (!name.method().empty()) absl::StrAppend(&key, "/", name.method());
      auto [it, inserted] =
          names.emplace(key, Named{i, name_path, !name.method().empty()});
      if (!inserted) {
        return Bad(name_path,
                   absl::StrCat("duplicate name ", NameForMessages(key),
                                ", also at ", it->second.path));
      }
    }
    absl::StatusOr<Rules> parsed_rules = ParseRules(entry, how, path);
    if (!parsed_rules.ok()) return parsed_rules.status();
    rules.push_back(*std::move(parsed_rules));
  }

  ServiceConfig config;
  config.how_ = how;
  if (parsed.has_retry_throttling()) {
    const auto& throttling = parsed.retry_throttling();
    if (!throttling.has_max_tokens()) {
      return Bad("retryThrottling.maxTokens", "is required");
    }
    if (throttling.max_tokens() <= 0 || throttling.max_tokens() > 1000) {
      return Bad(
          "retryThrottling.maxTokens",
          absl::StrCat("must be in (0, 1000], got ", throttling.max_tokens()));
    }
    if (!throttling.has_token_ratio()) {
      return Bad("retryThrottling.tokenRatio", "is required");
    }
    const double ratio = throttling.token_ratio();
    // RetryThrottle keeps thousandths of a token, as gRPC does.
    if (!(ratio >= 0.001 && ratio <= throttling.max_tokens())) {
      return Bad("retryThrottling.tokenRatio",
                 absl::StrCat("must be in [0.001, maxTokens], got ", ratio));
    }
    config.throttle_ = std::make_shared<RetryThrottle>(
        static_cast<double>(throttling.max_tokens()), ratio);
  }
  const Rules* default_rules = nullptr;
  if (auto it = names.find(""); it != names.end()) {
    default_rules = &rules[it->second.rules];
    config.default_ = ToOptionsOf(*default_rules, {}, how, config.throttle_);
    config.has_default_ = true;
  } else if (how.keep_stubkit_defaults) {
    // The client's own options, and its retries count for the bucket.
    if (config.throttle_ != nullptr) {
      config.default_.set<RetryThrottleOption>(config.throttle_);
    }
  } else {
    // As gRPC: "unless the service owner specifies a policy in the
    // configuration, retries and hedging will not be enabled".
    config.default_ = ToOptionsOf(Rules{}, {}, how, config.throttle_);
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
    config.entries_[key] = ServiceConfig::Entry{
        ToOptionsOf(rules[named.rules], outer, how, config.throttle_),
        named.is_method ? std::string(SplitMethod(key).first) : key};
  }

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
  options.set<internal::ImportedServicesOption>(Imported(&service));
  if (named) NoticeDroppedRetries(options);
  return options;
}

std::shared_ptr<const internal::ImportedServices> ServiceConfig::Imported(
    const absl::string_view* service) const {
  auto imported = std::make_shared<internal::ImportedServices>();
  imported->has_default = has_default_;
  imported->keep_stubkit_defaults = how_.keep_stubkit_defaults;
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
  return imported;
}

void ServiceConfig::NoticeDroppedRetries(Options& options) const {
  // A fresh flag for each client's options: the notice is once per client.
  if (how_.keep_idempotency_rules &&
      (options.get<RetryPolicyOption>().max_retries() != 0 ||
       options.get<HedgingPolicyOption>().enabled())) {
    options.set<internal::DroppedRetryNoticeOption>(
        std::make_shared<std::atomic<bool>>(false));
  }
}

Options ServiceConfig::ClientOptions(const absl::string_view* service) const {
  Options options = default_;
  options.set<internal::ImportedServicesOption>(Imported(service));
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

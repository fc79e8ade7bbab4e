// Copyright 2026 The stubkit Authors.
//
// Fuzzes option validation and the retry loop's decisions together: the
// bytes choose a retry policy, retryable codes, backoff, jitter, timeouts,
// a throttle and idempotency (valid or not), then the outcome of every
// attempt (code, message, binary status details a server might send). The
// loop runs over this fake transport with a fake clock, and the fuzzer
// checks the rules stubkit promises:
//
//   - invalid options: InvalidArgument with kInvalidArgument, nothing sent;
//   - a non-idempotent call makes exactly one attempt, and stops as the
//     decision table's order says (permanent error, then not idempotent);
//   - a count policy makes at most max_failures + 1 attempts;
//   - the result is the last attempt's (OK, or its code and message with a
//     summary whose attempt count is exact);
//   - no wait is negative, and no wait crosses the call's end;
//   - every backoff delay is within [0, maximum_delay].

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "stubkit/retry_loop.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/testing/status_details.h"

namespace {

using std::chrono::nanoseconds;

constexpr stubkit::MethodInfo kMethod{"fuzz.Service.Method",
                                      stubkit::RpcKind::kUnary,
                                      stubkit::Idempotency::kIdempotent};
// The fake clock stops the run before it could wrap steady_clock.
constexpr nanoseconds kMaxFakeTime = std::chrono::hours(24 * 365 * 100);

class FuzzClock : public stubkit::Clock, public stubkit::Sleeper {
 public:
  time_point Now() const override { return time_point(start_ + elapsed_); }
  void SleepFor(nanoseconds d) override {
    FUZZ_CHECK(d >= nanoseconds::zero());
    waits.push_back(d);
    Advance(d);
  }
  void Advance(nanoseconds d) {
    if (d > kMaxFakeTime - elapsed_) {
      elapsed_ = kMaxFakeTime;
      saturated = true;
    } else {
      elapsed_ += d;
    }
  }
  nanoseconds elapsed() const { return elapsed_; }

  std::vector<nanoseconds> waits;
  bool saturated = false;

 private:
  nanoseconds start_ = std::chrono::hours(1);
  nanoseconds elapsed_{0};
};

nanoseconds Duration(stubkit::fuzz::FuzzInput& in) {
  // Mostly small and plausible, sometimes anything at all.
  uint8_t shape = in.Byte();
  int64_t raw = in.Integral<int64_t>();
  switch (shape % 4) {
    case 0:
      return nanoseconds(raw);
    case 1:
      return std::chrono::milliseconds(static_cast<int16_t>(raw));
    case 2:
      return std::chrono::microseconds(static_cast<int32_t>(raw));
    default:
      return nanoseconds(static_cast<uint32_t>(raw));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stubkit::fuzz::FuzzInput in(data, size);
  auto clock = std::make_shared<FuzzClock>();
  stubkit::Options client;
  client.set<stubkit::ClockOption>(clock).set<stubkit::SleeperOption>(clock);
  stubkit::Options call;

  // Retry policy and codes.
  const uint8_t policy_kind = in.Byte();
  const bool count_policy = policy_kind & 1;
  const int max_failures = static_cast<int8_t>(in.Byte());
  stubkit::RetryPolicy policy =
      count_policy ? static_cast<stubkit::RetryPolicy>(
                         stubkit::RetryPolicy::LimitedErrorCount(max_failures))
                   : static_cast<stubkit::RetryPolicy>(
                         stubkit::RetryPolicy::LimitedTime(Duration(in)));
  if (policy_kind & 2) {
    uint32_t bits = in.Integral<uint32_t>();
    stubkit::StatusCodeSet codes;
    for (int c = 0; c < 20; ++c) {
      if (bits & (1u << c)) codes.insert(static_cast<grpc::StatusCode>(c));
    }
    policy.WithRetryableCodes(codes);
  }
  // Backoff.
  const nanoseconds initial = Duration(in);
  const nanoseconds maximum = Duration(in);
  const double multiplier = in.Double();
  const uint8_t jitter_kind = in.Byte() % 4;
  const double fraction = in.Double();
  stubkit::Jitter jitter =
      jitter_kind == 0   ? stubkit::Jitter::UpToInitialDelay()
      : jitter_kind == 1 ? stubkit::Jitter::Full()
      : jitter_kind == 2 ? stubkit::Jitter::Proportional(fraction)
                         : stubkit::Jitter::None();
  stubkit::ExponentialBackoffPolicy backoff =
      stubkit::ExponentialBackoffPolicy()
          .WithInitialDelay(initial)
          .WithMaximumDelay(maximum)
          .WithMultiplier(multiplier)
          .WithJitter(jitter);
  if (backoff.status().ok()) {
    for (int retry : {0, 1, 2, 10, 63, 64, 1000, 1 << 30}) {
      for (double u : {0.0, 0.5, 0.999999}) {
        nanoseconds d = backoff.DelayFor(retry, u);
        FUZZ_CHECK(d >= nanoseconds::zero());
        FUZZ_CHECK(d <= backoff.maximum_delay());
      }
    }
  } else {
    FUZZ_CHECK(backoff.status().code() == absl::StatusCode::kInvalidArgument);
  }
  (void)backoff.ToString();
  (void)policy.ToString();

  const uint8_t flags = in.Byte();
  (flags & 1 ? call : client).set<stubkit::RetryPolicyOption>(policy);
  (flags & 2 ? call : client).set<stubkit::BackoffPolicyOption>(backoff);
  if (flags & 4) call.set<stubkit::AttemptTimeoutOption>(Duration(in));
  if (flags & 8) call.set<stubkit::TotalTimeoutOption>(Duration(in));
  std::shared_ptr<stubkit::RetryThrottle> throttle;
  if (flags & 16) {
    double max_tokens = in.Double();
    double ratio = in.Double();
    throttle = std::make_shared<stubkit::RetryThrottle>(
        stubkit::RetryThrottle::Config()
            .WithMaxTokens(max_tokens)
            .WithTokenRatio(ratio));
    client.set<stubkit::RetryThrottleOption>(throttle);
  }
  const bool idempotent = !(flags & 32);
  if (!idempotent) {
    call.set<stubkit::IdempotencyOption>(stubkit::Idempotency::kNonIdempotent);
  }
  call.set<stubkit::ServerHintsOption>(!(flags & 64));

  const bool options_valid =
      policy.status().ok() && backoff.status().ok() &&
      (!(flags & 4) ||
       call.get<stubkit::AttemptTimeoutOption>() >= nanoseconds::zero()) &&
      (!(flags & 8) ||
       call.get<stubkit::TotalTimeoutOption>() >= nanoseconds::zero()) &&
      (throttle == nullptr || throttle->status().ok());

  // The attempts: the rest of the input, a few bytes each.
  int attempts = 0;
  absl::Status last = absl::OkStatus();
  absl::StatusOr<int> result = stubkit::RetryLoop<int>(
      kMethod, stubkit::OptionsView(call, client),
      [&](grpc::ClientContext&) -> absl::StatusOr<int> {
        ++attempts;
        // An attempt takes some time; a steady clock never goes back.
        nanoseconds took = Duration(in);
        clock->Advance(took < nanoseconds::zero() ? nanoseconds::zero() : took);
        if (in.empty() || clock->saturated || attempts > 10000) {
          last = absl::OkStatus();
          return attempts;
        }
        const uint8_t code = in.Byte() % 17;
        if (code == 0) {
          last = absl::OkStatus();
          return attempts;
        }
        last = absl::Status(static_cast<absl::StatusCode>(code), in.String(64));
        const uint8_t details_kind = in.Byte() % 3;
        if (details_kind == 1) {
          last.SetPayload(stubkit::kErrorDetailsPayloadKey,
                          absl::Cord(in.String(512)));
        } else if (details_kind == 2) {
          last.SetPayload(
              stubkit::kErrorDetailsPayloadKey,
              absl::Cord(stubkit::testing::StatusWithRetryInfo(
                  static_cast<int64_t>(in.Integral<uint32_t>() % 100),
                  static_cast<int32_t>(in.Integral<uint32_t>() % 1000000000))));
        }
        return last;
      });

  std::optional<stubkit::RetrySummary> summary =
      result.ok() ? std::nullopt : stubkit::GetRetrySummary(result.status());
  if (!options_valid) {
    FUZZ_CHECK(attempts == 0);
    FUZZ_CHECK(!result.ok());
    FUZZ_CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(summary.has_value());
    FUZZ_CHECK(summary->stop_reason == stubkit::StopReason::kInvalidArgument);
    FUZZ_CHECK(summary->attempts == 0);
    return 0;
  }
  FUZZ_CHECK(attempts >= 1);
  if (!idempotent) FUZZ_CHECK(attempts == 1);
  if (count_policy) FUZZ_CHECK(attempts <= max_failures + 1);
  if (result.ok()) {
    FUZZ_CHECK(last.ok());
    FUZZ_CHECK(*result == attempts);
  } else {
    FUZZ_CHECK(!last.ok());
    FUZZ_CHECK(result.status().code() == last.code());
    FUZZ_CHECK(absl::StartsWith(result.status().message(), last.message()));
    FUZZ_CHECK(stubkit::GetErrorDetails(result.status()) ==
               stubkit::GetErrorDetails(last));
    FUZZ_CHECK(summary.has_value());
    FUZZ_CHECK(summary->attempts == attempts);
    FUZZ_CHECK(summary->stop_reason != stubkit::StopReason::kSuccess);
    if (!idempotent) {
      // The decision table's order: a code that is not retryable is a
      // permanent error; a retryable one stops as not idempotent. The only
      // other way out is DEADLINE_EXCEEDED: when the call's own end ran out
      // during the attempt (kDeadline, or kExhausted for the policy's time
      // limit), or when the attempt's own timeout did (retryable).
      const stubkit::StopReason reason = summary->stop_reason;
      if (last.code() == absl::StatusCode::kDeadlineExceeded) {
        FUZZ_CHECK(
            reason == stubkit::StopReason::kPermanentError ||
            reason == stubkit::StopReason::kNonIdempotent ||
            reason == stubkit::StopReason::kDeadline ||
            (reason == stubkit::StopReason::kExhausted && !count_policy));
      } else if (policy.retryable_codes().contains(last.code())) {
        FUZZ_CHECK(reason == stubkit::StopReason::kNonIdempotent);
      } else {
        FUZZ_CHECK(reason == stubkit::StopReason::kPermanentError);
      }
    }
  }
  FUZZ_CHECK(static_cast<int>(clock->waits.size()) == attempts - 1);
  // No wait crosses the call's end (policy limit or total timeout).
  if (!clock->saturated) {
    nanoseconds end = nanoseconds::max();
    if (!count_policy) end = policy.time_limit();
    if (flags & 8) {
      nanoseconds total = call.get<stubkit::TotalTimeoutOption>();
      if (total > nanoseconds::zero() && total < end) end = total;
    }
    nanoseconds waited{0};
    for (nanoseconds w : clock->waits) waited += w;
    FUZZ_CHECK(waited <= end);
  }
  return 0;
}

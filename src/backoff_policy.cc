// Copyright 2026 The stubkit Authors.

#include "stubkit/backoff_policy.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/base/process_random.h"

namespace stubkit {
namespace {

using std::chrono::nanoseconds;

// SplitMix64 over an atomic counter: one fetch_add per draw, no lock, and
// distinct outputs for concurrent callers. Seeded once per process.
std::atomic<uint64_t>& GeneratorState() {
  static std::atomic<uint64_t>* const state = [] {
    std::random_device device;
    uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
    return new std::atomic<uint64_t>(seed);
  }();
  return *state;
}

uint64_t NextRandom() {
  uint64_t z = GeneratorState().fetch_add(0x9e3779b97f4a7c15ULL,
                                          std::memory_order_relaxed) +
               0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

namespace internal {
double ProcessUniform01() {
  // The top 53 bits fill a double's mantissa exactly: [0, 1).
  return static_cast<double>(NextRandom() >> 11) * 0x1.0p-53;
}

void SeedProcessRandomForTesting(uint64_t seed) {
  GeneratorState().store(seed, std::memory_order_relaxed);
}
}  // namespace internal

std::string Jitter::ToString() const {
  switch (kind_) {
    case Kind::kUpToInitialDelay:
      return "default";  // The name before UpToInitialDelay; logs keep it.
    case Kind::kFull:
      return "full";
    case Kind::kProportional:
      return absl::StrCat("proportional(", fraction_, ")");
    case Kind::kNone:
      return "none";
    case Kind::kGrpc:
      return "grpc";
  }
  return "unknown";
}

ExponentialBackoffPolicy::ExponentialBackoffPolicy(nanoseconds initial_delay,
                                                   nanoseconds maximum_delay,
                                                   double multiplier,
                                                   Jitter jitter)
    : initial_delay_(initial_delay),
      maximum_delay_(maximum_delay),
      multiplier_(multiplier),
      jitter_(jitter) {
  Validate();
}

// The same checks, in the same order, however the fields were set.
void ExponentialBackoffPolicy::Validate() {
  const nanoseconds initial_delay = initial_delay_;
  const nanoseconds maximum_delay = maximum_delay_;
  const double multiplier = multiplier_;
  const Jitter& jitter = jitter_;
  status_ = absl::OkStatus();
  if (initial_delay <= nanoseconds::zero()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "ExponentialBackoffPolicy: initial_delay must be positive, got ",
        internal::FormatDuration(initial_delay)));
  } else if (maximum_delay < initial_delay) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("ExponentialBackoffPolicy: maximum_delay (",
                     internal::FormatDuration(maximum_delay),
                     ") must not be below initial_delay (",
                     internal::FormatDuration(initial_delay), ")"));
  } else if (!(multiplier > 0.0) || std::isinf(multiplier)) {
    // Written to reject NaN as well.
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "ExponentialBackoffPolicy: multiplier must be a finite number > 0, "
        "got ",
        multiplier));
  } else if (jitter.kind() == Jitter::Kind::kProportional &&
             !(jitter.fraction() > 0.0 && jitter.fraction() <= 1.0)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "ExponentialBackoffPolicy: jitter fraction must be in (0, 1], got ",
        jitter.fraction()));
  }
}

nanoseconds ExponentialBackoffPolicy::DelayFor(int retry,
                                               double uniform01) const {
  if (!status_.ok()) return nanoseconds::zero();
  const double initial = static_cast<double>(initial_delay_.count());
  const double maximum = static_cast<double>(maximum_delay_.count());
  // Doubles saturate to +inf instead of overflowing; min() then truncates.
  double base =
      std::min(initial * std::pow(multiplier_, std::max(retry, 0)), maximum);
  double delay = base;
  switch (jitter_.kind()) {
    case Jitter::Kind::kUpToInitialDelay:
      delay = std::min(base + uniform01 * initial, maximum);
      break;
    case Jitter::Kind::kFull:
      delay = uniform01 * base;
      break;
    case Jitter::Kind::kProportional:
      delay = std::min(base * (1.0 - jitter_.fraction() +
                               2.0 * jitter_.fraction() * uniform01),
                       maximum);
      break;
    case Jitter::Kind::kNone:
      break;
    case Jitter::Kind::kGrpc:
      // gRPC's BackOff: the first wait is not jittered, and the jittered
      // ones are not capped.
      if (retry <= 0) return initial_delay_;
      delay = base *
              (1.0 - jitter_.fraction() + 2.0 * jitter_.fraction() * uniform01);
      if (!(delay < 0x1.0p62)) return nanoseconds(int64_t{1} << 62);
      return nanoseconds(static_cast<int64_t>(delay));
  }
  // A maximum near nanoseconds::max() rounds up as a double, and converting
  // a double beyond int64's range is undefined: compare, then convert only
  // what is known to fit.
  if (!(delay < maximum)) return maximum_delay_;
  if (!(delay > 0.0)) return nanoseconds::zero();
  return nanoseconds(static_cast<int64_t>(delay));
}

nanoseconds ExponentialBackoffPolicy::DelayFor(int retry) const {
  double uniform01 = 0.0;
  if (jitter_.kind() != Jitter::Kind::kNone) {
    uniform01 =
        pinned_draw_ >= 0.0 ? pinned_draw_ : internal::ProcessUniform01();
  }
  return DelayFor(retry, uniform01);
}

ExponentialBackoffPolicy::DelayRange ExponentialBackoffPolicy::RangeFor(
    int retry) const {
  return DelayRange{DelayFor(retry, 0.0), DelayFor(retry, 0.5),
                    DelayFor(retry, kLargestDraw)};
}

std::string ExponentialBackoffPolicy::ToString() const {
  return absl::StrCat("ExponentialBackoffPolicy(",
                      internal::FormatDuration(initial_delay_), ", ",
                      internal::FormatDuration(maximum_delay_), ", ",
                      multiplier_, ", jitter: ", jitter_.ToString(), ")");
}

}  // namespace stubkit

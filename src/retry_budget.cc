// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_budget.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"

namespace stubkit {
namespace {

using std::chrono::nanoseconds;

// A bucket's word: the epoch modulo 2^40 above a 24-bit count. 2^40
// buckets of at least 100 us are over 3 years: only a bucket left untouched
// that long could pass for a current one. 2^24 - 1 requests per bucket (a
// tenth of the window) is 16.7 million: more deposits are not counted, which
// only lowers the allowance; a withdrawal is refused rather than lost.
constexpr int kCountBits = 24;
constexpr uint64_t kMaxCount = (uint64_t{1} << kCountBits) - 1;
constexpr int kEpochBits = 40;
constexpr uint64_t kEpochMask = (uint64_t{1} << kEpochBits) - 1;

uint64_t Pack(int64_t epoch, uint64_t count) {
  return ((static_cast<uint64_t>(epoch) & kEpochMask) << kCountBits) | count;
}
uint64_t CountOf(uint64_t word) { return word & kMaxCount; }

// How many buckets `epoch` is after the word's epoch, in (-2^39, 2^39].
int64_t Age(int64_t epoch, uint64_t word) {
  const uint64_t diff =
      (static_cast<uint64_t>(epoch) - (word >> kCountBits)) & kEpochMask;
  return diff > (kEpochMask >> 1)
             ? static_cast<int64_t>(diff) - static_cast<int64_t>(kEpochMask + 1)
             : static_cast<int64_t>(diff);
}

size_t SlotOf(int64_t epoch) {
  const int64_t slot = epoch % RetryBudget::kBuckets;
  return static_cast<size_t>(slot < 0 ? slot + RetryBudget::kBuckets : slot);
}

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("RetryBudget: ", what));
}

}  // namespace

RetryBudget::RetryBudget(const Config& config) : config_(config) {
  const nanoseconds ttl = config.ttl();
  const double rate = config.min_retries_per_second();
  const double percent = config.percent_can_retry();
  if (!(ttl >= std::chrono::milliseconds(1) && ttl <= std::chrono::hours(1))) {
    status_ = Invalid(absl::StrCat("ttl must be in [1ms, 1h], got ",
                                   internal::FormatDuration(ttl)));
    return;
  }
  if (!(rate >= 0 && rate <= 1e6)) {
    status_ = Invalid(
        absl::StrCat("min_retries_per_second must be in [0, 1e6], got ", rate));
    return;
  }
  if (!(percent >= 0 && percent <= 1)) {
    status_ = Invalid(
        absl::StrCat("percent_can_retry must be in [0, 1] (a fraction: 0.2 is "
                     "20%), got ",
                     percent));
    return;
  }
  if (rate == 0 && percent == 0) {
    status_ = Invalid(
        "min_retries_per_second and percent_can_retry are both 0: the budget "
        "would refuse every retry and hedge (to make none, use "
        "RetryPolicy::LimitedErrorCount(0))");
    return;
  }
  width_ns_ = ttl.count() / kBuckets;
  const double ttl_seconds = std::chrono::duration<double>(ttl).count();
  reserve_micro_ = std::llround(rate * ttl_seconds * 1e6);
  percent_micro_ = std::llround(percent * 1e6);
}

int64_t RetryBudget::EpochOf(time_point now) const {
  // Floor division: a fake clock may read before its epoch.
  const int64_t t = now.time_since_epoch().count();
  const int64_t quotient = t / width_ns_;
  return quotient - (t % width_ns_ < 0 ? 1 : 0);
}

int64_t RetryBudget::Sum(const Buckets& buckets, int64_t epoch) {
  int64_t sum = 0;
  for (const Bucket& bucket : buckets) {
    const uint64_t word = bucket.load(std::memory_order_relaxed);
    const int64_t age = Age(epoch, word);
    // A bucket ahead of `epoch` (another thread's clock read later) is
    // left out: fewer requests counted only lowers the allowance.
    if (age >= 0 && age < kBuckets) sum += static_cast<int64_t>(CountOf(word));
  }
  return sum;
}

bool RetryBudget::Add(Buckets& buckets, int64_t epoch) {
  Bucket& bucket = buckets[SlotOf(epoch)];
  uint64_t word = bucket.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t age = Age(epoch, word);
    uint64_t next;
    if (CountOf(word) == 0) {
      // Never used (its epoch 0 is no time at all; it may even look later
      // than `epoch`).
      next = Pack(epoch, 1);
    } else if (age == 0) {
      if (CountOf(word) == kMaxCount) return false;
      next = word + 1;
    } else if (age > 0) {
      next = Pack(epoch, 1);  // the bucket's old epoch has left the window
    } else {
      // The slot already counts an epoch kBuckets or more later: `epoch`
      // is outside every window still to come. Nothing to count.
      return true;
    }
    if (bucket.compare_exchange_weak(word, next, std::memory_order_relaxed)) {
      return true;
    }
  }
}

bool RetryBudget::Fits(int64_t retries, int64_t requests) const {
  return retries * 1'000'000 <= reserve_micro_ + percent_micro_ * requests;
}

void RetryBudget::Deposit(time_point now) {
  if (!status_.ok()) return;
  Add(deposits_, EpochOf(now));
}

bool RetryBudget::CanWithdraw(time_point now) const {
  if (!status_.ok()) return false;
  const int64_t epoch = EpochOf(now);
  return Fits(Sum(withdrawals_, epoch) + 1, Sum(deposits_, epoch));
}

bool RetryBudget::TryWithdraw(time_point now) {
  if (!status_.ok()) return false;
  internal::MutexLock lock(&mu_);
  const int64_t epoch = std::max(EpochOf(now), latest_epoch_);
  latest_epoch_ = epoch;
  return Fits(Sum(withdrawals_, epoch) + 1, Sum(deposits_, epoch)) &&
         Add(withdrawals_, epoch);
}

int64_t RetryBudget::requests(time_point now) const {
  return status_.ok() ? Sum(deposits_, EpochOf(now)) : 0;
}

int64_t RetryBudget::retries(time_point now) const {
  return status_.ok() ? Sum(withdrawals_, EpochOf(now)) : 0;
}

}  // namespace stubkit

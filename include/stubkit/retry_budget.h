// Copyright 2026 The stubkit Authors.
//
// RetryBudget: retries as a share of the requests over a sliding window.
//
// Every call that starts deposits one request; every retry or hedge
// withdraws one, allowed while the retries in the window (`ttl`), this one
// included, are at most
//
//   min_retries_per_second * ttl  +  percent_can_retry * requests
//
// the shape of Finagle's `RetryBudget` (and Linkerd's), with Finagle's
// defaults: a 10 s window, 10 retries per second, 20 % of the requests.
//
// Off by default. Like `RetryThrottle`, one budget is shared by all calls of
// a client and can be shared across clients:
//
//   auto budget = std::make_shared<stubkit::RetryBudget>(
//       stubkit::RetryBudget::Config()
//           .WithTtl(std::chrono::seconds(10))
//           .WithMinRetriesPerSecond(10)
//           .WithPercentCanRetry(0.2));
//   auto options = stubkit::Options{}.set<stubkit::RetryBudgetOption>(budget);
//
// A refused retry stops the call with `StopReason::kThrottled`; a refused
// hedge is not sent. Thread-safe: a deposit (the success path) takes no
// lock, a withdrawal (the failure path) a small one. Invalid parameters
// leave `status()` non-OK and make calls fail unsent. Time is the calls'
// own clock (`ClockOption`): share one budget only among calls on the same
// clock. What counts, the window, working with the throttle, and budget or
// bucket: docs/throttling.md ("Retry budget").

#ifndef STUBKIT_RETRY_BUDGET_H_
#define STUBKIT_RETRY_BUDGET_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "stubkit/internal/base/mutex.h"

namespace stubkit {

class RetryBudget {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // The window is this many buckets of ttl / kBuckets each.
  static constexpr int kBuckets = 10;

  // The parameters of a budget: a copyable value, checked when the budget
  // is built (see `status()`). Every parameter has a default (Finagle's).
  class Config {
   public:
    // The window, in [1 ms, 1 h]. Default 10 s.
    [[nodiscard]] Config WithTtl(std::chrono::nanoseconds ttl) const {
      Config copy = *this;
      copy.ttl_ = ttl;
      return copy;
    }
    // Retries per second allowed whatever the volume, in [0, 1e6]: the
    // window holds min_retries_per_second * ttl of them. Default 10.
    [[nodiscard]] Config WithMinRetriesPerSecond(double rate) const {
      Config copy = *this;
      copy.min_retries_per_second_ = rate;
      return copy;
    }
    // Retries allowed on top of those, as a fraction of the requests in the
    // window, in [0, 1] (0.2 is 20 %; above 1 retries would outnumber the
    // requests, which no budget should allow). Default 0.2.
    [[nodiscard]] Config WithPercentCanRetry(double fraction) const {
      Config copy = *this;
      copy.percent_can_retry_ = fraction;
      return copy;
    }

    std::chrono::nanoseconds ttl() const { return ttl_; }
    double min_retries_per_second() const { return min_retries_per_second_; }
    double percent_can_retry() const { return percent_can_retry_; }

   private:
    std::chrono::nanoseconds ttl_ = std::chrono::seconds(10);
    double min_retries_per_second_ = 10;
    double percent_can_retry_ = 0.2;
  };

  // Finagle's defaults.
  RetryBudget() : RetryBudget(Config()) {}
  explicit RetryBudget(const Config& config);
  RetryBudget(const RetryBudget&) = delete;
  RetryBudget& operator=(const RetryBudget&) = delete;

  // A request starts at `now`. Lock-free. (The retry loops deposit once per
  // call, when its first attempt starts.)
  void Deposit(time_point now);
  // Takes one retry at `now` if the window allows it; false otherwise.
  bool TryWithdraw(time_point now);
  // Whether `TryWithdraw(now)` would succeed, taking nothing. Lock-free.
  bool CanWithdraw(time_point now) const;

  // The requests and the retries counted in the window at `now`.
  int64_t requests(time_point now) const;
  int64_t retries(time_point now) const;

  const Config& config() const { return config_; }
  const absl::Status& status() const { return status_; }

 private:
  // Each bucket is one word: the epoch it counts (the bucket's start over
  // its width, modulo 2^40) above a 24-bit count, so that the bucket's
  // reset and its count change in one atomic step.
  using Bucket = std::atomic<uint64_t>;
  using Buckets = std::array<Bucket, kBuckets>;

  int64_t EpochOf(time_point now) const;
  static int64_t Sum(const Buckets& buckets, int64_t epoch);
  // Adds one to the bucket of `epoch`; false when its count is full.
  static bool Add(Buckets& buckets, int64_t epoch);
  bool Fits(int64_t retries, int64_t requests) const;

  Config config_;
  absl::Status status_;
  int64_t width_ns_ = 1;
  // min_retries_per_second * ttl and percent_can_retry, in millionths.
  int64_t reserve_micro_ = 0;
  int64_t percent_micro_ = 0;
  Buckets deposits_ = {};
  Buckets withdrawals_ = {};
  // Withdrawals are serialized: a check of the whole window and the count
  // that follows it must not interleave with another's.
  internal::Mutex mu_;
  // The latest epoch a withdrawal used: a later withdrawal whose clock
  // reads a little earlier (another thread's) counts at this one.
  int64_t latest_epoch_ ABSL_GUARDED_BY(mu_) = INT64_MIN;
};

struct RetryBudgetOption {
  using Type = std::shared_ptr<RetryBudget>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_RETRY_BUDGET_H_

// Copyright 2026 The stubkit Authors.
//
// MetricsCollector: in-memory per-method counters and latency histograms.
//
// Set one on a client (or share one across clients) and read it whenever
// you like:
//
// ```cpp
// #include <iostream>
// #include <memory>
//
// #include "stubkit/stubkit.h"
//
// stubkit::Options WithMetrics(
//     const std::shared_ptr<stubkit::MetricsCollector>& metrics) {
//   return stubkit::Options{}.set<stubkit::MetricsOption>(metrics);
// }
//
// void Print(const stubkit::MetricsCollector& metrics) {
//   for (const stubkit::MethodMetrics& m : metrics.Snapshot()) {
//     std::cout << m.method << ": " << m.calls << " calls, " << m.retries
//               << " retries, " << m.stopped(stubkit::StopReason::kExhausted)
//               << " gave up with the retry policy exhausted\n";
//   }
// }
// ```
//
// The snapshot holds plain numbers with cumulative semantics (counters only
// grow, the histogram has fixed bucket bounds plus sum and count), which is
// what an exporter polls (`Snapshot()`), mapping each field to an
// instrument: docs/observability.md has the fields and exported series.

#ifndef STUBKIT_METRICS_H_
#define STUBKIT_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "stubkit/internal/mutex.h"
#include "stubkit/status.h"

namespace stubkit {

inline constexpr int kStopReasonCount =
    static_cast<int>(StopReason::kServerRefused) + 1;

// Upper bounds, in milliseconds, of the latency buckets; one more bucket
// counts everything above the last bound.
inline constexpr std::array<double, 18> kLatencyBucketBoundsMs = {
    0.5, 1,    2,    5,    10,    20,    50,    100,    200,
    500, 1000, 2000, 5000, 10000, 30000, 60000, 300000, 1800000};

// gRFC A96's recommended bucket bounds for the per-call retry and hedge
// counts; one more bucket counts the calls above the last bound.
inline constexpr std::array<int64_t, 5> kCountBucketBounds = {1, 2, 3, 4, 5};

struct MethodMetrics {
  std::string method;
  int64_t calls = 0;
  int64_t attempts = 0;
  // gRPC A96's names: retries are attempts sent after an earlier one
  // failed; hedges are attempts a hedged call sent beside the first (a
  // hedged call makes no retries). attempts = calls that sent anything +
  // retries + hedges.
  int64_t retries = 0;
  int64_t hedges = 0;
  // A96's grpc.client.call.retries and grpc.client.call.hedges histograms:
  // per call that retried (hedged), how many retries (hedges) it made, by
  // bucket of kCountBucketBounds. A call with none is not observed (A96
  // reports no 0); `retries` and `hedges` above are their sums.
  std::array<int64_t, kCountBucketBounds.size() + 1> retries_buckets{};
  std::array<int64_t, kCountBucketBounds.size() + 1> hedges_buckets{};
  // Hedged calls whose hedge the hedging budget refused
  // (`AdaptiveHedgingOption`): they waited for the attempts they had.
  int64_t hedges_refused_by_budget = 0;
  // Calls by how they ended, indexed by `static_cast<int>(StopReason)`.
  std::array<int64_t, kStopReasonCount> stops{};
  // Whole-call latency: counts per bucket (see kLatencyBucketBoundsMs).
  std::array<int64_t, kLatencyBucketBoundsMs.size() + 1> latency_buckets{};
  double latency_sum_ms = 0;
  // A96's grpc.client.call.retry_delay: per call that retried, the total
  // time it waited between attempts (backoff, server pushback, the
  // throttle's waiting mode); same bucket bounds as the latency.
  std::array<int64_t, kLatencyBucketBoundsMs.size() + 1> retry_delay_buckets{};
  double retry_delay_sum_ms = 0;

  int64_t stopped(StopReason reason) const {
    return stops[static_cast<size_t>(reason)];
  }
};

class MetricsCollector {
 public:
  MetricsCollector() = default;
  // `target`: the channel's target (what was given to CreateChannel, e.g.
  // "dns:///backend:443"), exported as A96's grpc.target label. A collector
  // shared by clients of several targets has none ("other").
  explicit MetricsCollector(std::string target) : target_(std::move(target)) {}
  MetricsCollector(const MetricsCollector&) = delete;
  MetricsCollector& operator=(const MetricsCollector&) = delete;

  // Records one finished call. Called by the retry loop. Of `attempts`,
  // `hedges` were hedges (the rest after the first were retries);
  // `retry_delay` is the time spent waiting between attempts, observed for
  // calls that retried.
  void RecordCall(
      absl::string_view method, int attempts, StopReason reason,
      std::chrono::nanoseconds latency, int hedges = 0,
      std::chrono::nanoseconds retry_delay = std::chrono::nanoseconds::zero());
  // A hedged call's hedge was refused by the hedging budget. Called by the
  // hedged loop once per such call, before its `RecordCall`.
  void RecordHedgeRefusedByBudget(absl::string_view method);

  // A consistent-enough copy of every method's figures, sorted by name.
  std::vector<MethodMetrics> Snapshot() const;

  const std::string& target() const { return target_; }

 private:
  struct Entry {
    explicit Entry(absl::string_view method) : name(method) {}
    const std::string name;
    std::atomic<int64_t> calls{0};
    std::atomic<int64_t> attempts{0};
    std::atomic<int64_t> retries{0};
    std::atomic<int64_t> hedges{0};
    std::atomic<int64_t> hedges_refused_by_budget{0};
    std::array<std::atomic<int64_t>, kCountBucketBounds.size() + 1>
        retries_buckets{};
    std::array<std::atomic<int64_t>, kCountBucketBounds.size() + 1>
        hedges_buckets{};
    std::array<std::atomic<int64_t>, kStopReasonCount> stops{};
    std::array<std::atomic<int64_t>, kLatencyBucketBoundsMs.size() + 1>
        buckets{};
    // Sums in floating-point nanoseconds: an int64 wrapped after 292 years
    // of summed latency (107 days at 10k calls/s of 100 ms), and Prometheus
    // then saw `_sum` go negative. A double cannot wrap, is exact below
    // 2^53 ns (104 days of summed latency), and keeps 16 significant
    // digits after that.
    std::atomic<double> latency_sum_ns{0};
    std::array<std::atomic<int64_t>, kLatencyBucketBoundsMs.size() + 1>
        retry_delay_buckets{};
    std::atomic<double> retry_delay_sum_ns{0};
  };
  // Lock-free on a hit: see kCacheSlots.
  Entry& EntryFor(absl::string_view method);
  // Under the lock: finds or makes the entry.
  Entry& FindOrAdd(absl::string_view method);

  // The hot path takes no lock and hashes no string: entries are cached in
  // a table indexed by the address of the method's name, which generated
  // clients keep in static storage (so each method's slot is stable). A hit
  // is one load and one name comparison; a miss (first call, or two
  // methods sharing a slot) takes the lock and refills the slot. Entries
  // live as long as the collector, so a cached pointer never dangles.
  static constexpr size_t kCacheSlots = 64;
  std::array<std::atomic<Entry*>, kCacheSlots> cache_{};

  const std::string target_;
  mutable internal::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> entries_
      ABSL_GUARDED_BY(mu_);
};

struct MetricsOption {
  using Type = std::shared_ptr<MetricsCollector>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_METRICS_H_

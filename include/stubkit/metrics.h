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
#include "stubkit/internal/base/mutex.h"
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

// Every metric, declared once. Each row makes the fields of MethodMetrics
// it names (with the types below), MetricsCollector's atomic copies of
// them, Snapshot()'s copy and, when it names a family, its Prometheus
// family (src/prometheus.cc, in this order). Adding a metric:
// ARCHITECTURE.md, "Adding a metric". The kinds of row:
//   COUNTER(field, family, help): int64_t `field`; a counter family, or
//     none when `family` is "".
//   COUNT_HISTOGRAM(sum, buckets, family, help): per call that counted at
//     least one, a count in `buckets` (std::array, by bucket of
//     kCountBucketBounds, one more above); int64_t `sum` is their total.
//   TIME_HISTOGRAM(buckets, sum_ms, family, help): per call observed, its
//     duration in `buckets` (by bucket of kLatencyBucketBoundsMs, one more
//     above); double `sum_ms` is their total in milliseconds.
//   BY_STOP_REASON(field, family, help): calls by how they ended, `field`
//     indexed by `static_cast<int>(StopReason)` (see stopped()).
// clang-format off
#define STUBKIT_METRICS(COUNTER, COUNT_HISTOGRAM, TIME_HISTOGRAM,           \
                        BY_STOP_REASON)                                     \
  /* Finished calls (exported by stop reason) and the attempts they sent. */\
  COUNTER(calls, "", "")                                                    \
  COUNTER(attempts, "", "")                                                 \
  /* gRPC A96's names: retries are attempts sent after an earlier one      \
     failed; hedges are attempts a hedged call sent beside the first (a    \
     hedged call makes no retries). attempts = calls that sent anything +  \
     retries + hedges. A96's histograms observe only the calls that        \
     retried (hedged): A96 reports no 0. */                                \
  COUNT_HISTOGRAM(retries, retries_buckets, "grpc_client_call_retries",     \
      "A96 grpc.client.call.retries: per call that retried, the number of " \
      "retries.")                                                           \
  COUNT_HISTOGRAM(hedges, hedges_buckets, "grpc_client_call_hedges",        \
      "A96 grpc.client.call.hedges: per call that hedged, the number of "   \
      "hedges.")                                                            \
  /* A96's grpc.client.call.retry_delay: per call that retried, the total  \
     time it waited between attempts (backoff, server pushback, the        \
     throttle's waiting mode). */                                          \
  TIME_HISTOGRAM(retry_delay_buckets, retry_delay_sum_ms,                   \
      "grpc_client_call_retry_delay_seconds",                               \
      "A96 grpc.client.call.retry_delay: per call that retried, the total " \
      "time it waited between attempts.")                                   \
  BY_STOP_REASON(stops, "stubkit_client_calls_total",                       \
      "Finished calls by method and stop reason.")                          \
  /* Whole-call latency. */                                                \
  TIME_HISTOGRAM(latency_buckets, latency_sum_ms,                           \
      "stubkit_client_call_duration_seconds",                               \
      "Whole-call latency, retries and waits included.")                    \
  /* Hedged calls whose hedge the hedging budget refused                   \
     (AdaptiveHedgingOption): they waited for the attempts they had. */    \
  COUNTER(hedges_refused_by_budget, "stubkit_client_hedges_refused_total",  \
      "Hedged calls whose hedge the hedging budget refused "                \
      "(AdaptiveHedgingOption).")
// clang-format on

// One method's figures: `method`, then the fields of STUBKIT_METRICS'
// rows (calls, attempts, retries, retries_buckets, ..., latency_sum_ms).
struct MethodMetrics {
  std::string method;
#define STUBKIT_COUNTER_(field, family, help) int64_t field = 0;
#define STUBKIT_COUNT_HISTOGRAM_(sum, buckets, family, help) \
  int64_t sum = 0;                                           \
  std::array<int64_t, kCountBucketBounds.size() + 1> buckets{};
#define STUBKIT_TIME_HISTOGRAM_(buckets, sum_ms, family, help)      \
  std::array<int64_t, kLatencyBucketBoundsMs.size() + 1> buckets{}; \
  double sum_ms = 0;
#define STUBKIT_BY_STOP_REASON_(field, family, help) \
  std::array<int64_t, kStopReasonCount> field{};
  STUBKIT_METRICS(STUBKIT_COUNTER_, STUBKIT_COUNT_HISTOGRAM_,
                  STUBKIT_TIME_HISTOGRAM_, STUBKIT_BY_STOP_REASON_)
#undef STUBKIT_COUNTER_
#undef STUBKIT_COUNT_HISTOGRAM_
#undef STUBKIT_TIME_HISTOGRAM_
#undef STUBKIT_BY_STOP_REASON_

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
  // Adds `n` to `kCounter`, a COUNTER row of STUBKIT_METRICS, for
  // `method`: a metric counted at an event rather than at the call's end,
  // e.g. Count<&MethodMetrics::hedges_refused_by_budget>(method).
  template <int64_t MethodMetrics::*kCounter>
  void Count(absl::string_view method, int64_t n = 1) {
    constexpr std::atomic<int64_t> Entry::*kAtomic = AtomicCounter(kCounter);
    static_assert(kAtomic != nullptr,
                  "Count<> takes a COUNTER row of STUBKIT_METRICS");
    (EntryFor(method).*kAtomic).fetch_add(n, std::memory_order_relaxed);
  }
  // A hedged call's hedge was refused by the hedging budget: the same as
  // Count<&MethodMetrics::hedges_refused_by_budget>(method).
  void RecordHedgeRefusedByBudget(absl::string_view method) {
    Count<&MethodMetrics::hedges_refused_by_budget>(method);
  }

  // A consistent-enough copy of every method's figures, sorted by name.
  std::vector<MethodMetrics> Snapshot() const;

  const std::string& target() const { return target_; }

 private:
  // A sum of durations, in floating-point nanoseconds: an int64 wrapped
  // after 292 years of summed latency (107 days at 10k calls/s of 100 ms),
  // and Prometheus then saw `_sum` go negative. A double cannot wrap, is
  // exact below 2^53 ns (104 days of summed latency), and keeps 16
  // significant digits after that.
  struct DurationSum {
    void Add(std::chrono::nanoseconds value);
    double Milliseconds() const {
      return ns.load(std::memory_order_relaxed) / 1e6;
    }
    std::atomic<double> ns{0};
  };
  // One method's STUBKIT_METRICS fields, as atomics of the same names.
  struct Entry {
    explicit Entry(absl::string_view method) : name(method) {}
    const std::string name;
#define STUBKIT_COUNTER_(field, family, help) std::atomic<int64_t> field{0};
#define STUBKIT_COUNT_HISTOGRAM_(sum, buckets, family, help) \
  std::atomic<int64_t> sum{0};                               \
  std::array<std::atomic<int64_t>, kCountBucketBounds.size() + 1> buckets{};
#define STUBKIT_TIME_HISTOGRAM_(buckets, sum_ms, family, help)        \
  std::array<std::atomic<int64_t>, kLatencyBucketBoundsMs.size() + 1> \
      buckets{};                                                      \
  DurationSum sum_ms;
#define STUBKIT_BY_STOP_REASON_(field, family, help) \
  std::array<std::atomic<int64_t>, kStopReasonCount> field{};
    STUBKIT_METRICS(STUBKIT_COUNTER_, STUBKIT_COUNT_HISTOGRAM_,
                    STUBKIT_TIME_HISTOGRAM_, STUBKIT_BY_STOP_REASON_)
#undef STUBKIT_COUNTER_
#undef STUBKIT_COUNT_HISTOGRAM_
#undef STUBKIT_TIME_HISTOGRAM_
#undef STUBKIT_BY_STOP_REASON_
  };
  // Entry's atomic for a COUNTER row's field; null for any other field.
  static constexpr std::atomic<int64_t> Entry::*AtomicCounter(
      int64_t MethodMetrics::*field) {
#define STUBKIT_COUNTER_(name, family, help) \
  if (field == &MethodMetrics::name) return &Entry::name;
#define STUBKIT_OTHER_(...)
    STUBKIT_METRICS(STUBKIT_COUNTER_, STUBKIT_OTHER_, STUBKIT_OTHER_,
                    STUBKIT_OTHER_)
#undef STUBKIT_COUNTER_
#undef STUBKIT_OTHER_
    return nullptr;
  }
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

// Copyright 2026 The stubkit Authors.
//
// LatencyWindow: the latencies recorded over a sliding window, as a
// log-linear histogram, for adaptive hedging (stubkit/adaptive_hedging.h).
//
//   LatencyWindow window(std::chrono::seconds(10));
//   window.Record(now, latency);                  // any thread, lock-free
//   std::optional<std::chrono::nanoseconds> p95 =
//       window.Quantile(now, 0.95, /*min_samples=*/100);
//
// Why this shape: recording runs on every call's success path, from many
// threads, so it must take no lock and allocate nothing. A sketch (t-digest,
// DDSketch with a growing store) merges or allocates; per-thread histograms
// need thread-local state, which stubkit avoids. Fixed buckets of atomics do
// neither: a record is one relaxed `fetch_add`, and the reader (a few times
// a second) sums them.
//
// Buckets: microseconds, exact below 16 us, then 16 buckets per power of
// two (HdrHistogram's log-linear layout), so a bucket is at most 1/16 of its
// lower bound wide: a quantile read as a bucket's upper bound is at most
// 6.25 % (plus 1 us) above the true one, never below it. Latencies above
// 2^31 us (about 36 minutes) count in the last bucket.
//
// Window: `kSlices` time slices of window / kSlices each, every slice a
// full histogram stamped with its epoch (its start over its width). The
// slices that count at time t are those of the last kSlices epochs, so the
// window is between window - window / kSlices and window long. The first
// record in a new epoch takes over its slot's slice and clears it; a record
// on another thread into that slice at the very same moment may be lost,
// and a reader at that moment may count the old epoch's samples once more.
// Neither matters to a percentile read a few times a second.

#ifndef STUBKIT_INTERNAL_LATENCY_WINDOW_H_
#define STUBKIT_INTERNAL_LATENCY_WINDOW_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace stubkit {
namespace internal {

class LatencyWindow {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  static constexpr int kSlices = 8;
  // Buckets per power of two: 2^kSubBits.
  static constexpr int kSubBits = 4;
  static constexpr int kSubBuckets = 1 << kSubBits;
  // Powers of two above the exact range: values up to 2^(kSubBits + this).
  static constexpr int kOctaves = 27;
  static constexpr int kBuckets = (kOctaves + 1) * kSubBuckets;

  // `window` at least kSlices ns (the caller validates its range).
  explicit LatencyWindow(std::chrono::nanoseconds window);
  LatencyWindow(const LatencyWindow&) = delete;
  LatencyWindow& operator=(const LatencyWindow&) = delete;

  // A latency observed at `now`. Lock-free, no allocation.
  void Record(time_point now, std::chrono::nanoseconds latency);

  // The samples in the window at `now`.
  int64_t Count(time_point now) const;

  // The `quantile` (in (0, 1)) of the samples in the window at `now`: the
  // upper bound of the bucket holding the ceil(quantile * n)-th smallest of
  // the n samples. Empty when n < `min_samples`.
  std::optional<std::chrono::nanoseconds> Quantile(time_point now,
                                                   double quantile,
                                                   int64_t min_samples) const;

  // The bucket of `latency`, and a bucket's bounds: [lower, upper).
  static int BucketOf(std::chrono::nanoseconds latency);
  static std::chrono::nanoseconds LowerBound(int bucket);
  static std::chrono::nanoseconds UpperBound(int bucket);

 private:
  struct Slice {
    std::atomic<int64_t> epoch{INT64_MIN};
    std::array<std::atomic<uint32_t>, kBuckets> counts{};
  };
  using Counts = std::array<int64_t, kBuckets>;

  int64_t EpochOf(time_point now) const;
  // Adds the counts of the slices in the window at `now`; returns the total.
  int64_t Gather(time_point now, Counts& counts) const;

  int64_t width_ns_;
  std::array<Slice, kSlices> slices_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_LATENCY_WINDOW_H_

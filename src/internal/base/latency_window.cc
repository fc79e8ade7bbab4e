// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/base/latency_window.h"

#include <algorithm>
#include <cmath>

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;

constexpr int64_t kNsPerUnit = 1000;  // buckets count microseconds

int MostSignificantBit(uint64_t v) { return 63 - __builtin_clzll(v); }

}  // namespace

LatencyWindow::LatencyWindow(nanoseconds window)
    : width_ns_(std::max<int64_t>(1, window.count() / kSlices)) {}

int LatencyWindow::BucketOf(nanoseconds latency) {
  const int64_t ns = latency.count();
  if (ns < kSubBuckets * kNsPerUnit) {
    return ns <= 0 ? 0 : static_cast<int>(ns / kNsPerUnit);
  }
  const uint64_t units = static_cast<uint64_t>(ns / kNsPerUnit);
  const int shift = MostSignificantBit(units) - kSubBits;
  if (shift > kOctaves - 1) return kBuckets - 1;
  // (units >> shift) is in [kSubBuckets, 2 * kSubBuckets).
  return (shift + 1) * kSubBuckets +
         static_cast<int>((units >> shift) - kSubBuckets);
}

nanoseconds LatencyWindow::LowerBound(int bucket) {
  if (bucket < kSubBuckets) return nanoseconds(bucket * kNsPerUnit);
  const int shift = bucket / kSubBuckets - 1;
  const int64_t units = int64_t{kSubBuckets + bucket % kSubBuckets} << shift;
  return nanoseconds(units * kNsPerUnit);
}

nanoseconds LatencyWindow::UpperBound(int bucket) {
  if (bucket < kSubBuckets) return nanoseconds((bucket + 1) * kNsPerUnit);
  const int shift = bucket / kSubBuckets - 1;
  return LowerBound(bucket) + nanoseconds((int64_t{1} << shift) * kNsPerUnit);
}

int64_t LatencyWindow::EpochOf(time_point now) const {
  // Floor division: a fake clock may read before its epoch.
  const int64_t t = now.time_since_epoch().count();
  return t / width_ns_ - (t % width_ns_ < 0 ? 1 : 0);
}

void LatencyWindow::Record(time_point now, nanoseconds latency) {
  const int64_t epoch = EpochOf(now);
  const int64_t slot = epoch % kSlices;
  Slice& slice = slices_[static_cast<size_t>(slot < 0 ? slot + kSlices : slot)];
  int64_t seen = slice.epoch.load(std::memory_order_acquire);
  if (seen != epoch) {
    // Older than what the slice counts: outside every window still to come.
    if (seen > epoch) return;
    if (slice.epoch.compare_exchange_strong(seen, epoch,
                                            std::memory_order_acq_rel)) {
      for (auto& count : slice.counts)
        count.store(0, std::memory_order_relaxed);
    } else if (seen != epoch) {
      return;  // another thread moved it past `epoch`
    }
  }
  slice.counts[BucketOf(latency)].fetch_add(1, std::memory_order_relaxed);
}

int64_t LatencyWindow::Gather(time_point now, Counts& counts) const {
  counts.fill(0);
  const int64_t epoch = EpochOf(now);
  int64_t total = 0;
  for (const Slice& slice : slices_) {
    const int64_t stamp = slice.epoch.load(std::memory_order_acquire);
    // INT64_MIN: never used.
    if (stamp == INT64_MIN || stamp > epoch || epoch - stamp >= kSlices) {
      continue;
    }
    for (int i = 0; i < kBuckets; ++i) {
      const int64_t n = slice.counts[i].load(std::memory_order_relaxed);
      counts[i] += n;
      total += n;
    }
  }
  return total;
}

int64_t LatencyWindow::Count(time_point now) const {
  Counts counts;
  return Gather(now, counts);
}

std::optional<nanoseconds> LatencyWindow::Quantile(time_point now,
                                                   double quantile,
                                                   int64_t min_samples) const {
  Counts counts;
  const int64_t total = Gather(now, counts);
  if (total == 0 || total < min_samples) return std::nullopt;
  const int64_t rank = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(quantile * static_cast<double>(total))), 1,
      total);
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= rank) return UpperBound(i);
  }
  return UpperBound(kBuckets - 1);
}

}  // namespace internal
}  // namespace stubkit

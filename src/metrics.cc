// Copyright 2026 The stubkit Authors.

#include "stubkit/metrics.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

namespace stubkit {
namespace {

size_t BucketOf(std::chrono::nanoseconds value) {
  const double ms = std::chrono::duration<double, std::milli>(value).count();
  return std::lower_bound(kLatencyBucketBoundsMs.begin(),
                          kLatencyBucketBoundsMs.end(), ms) -
         kLatencyBucketBoundsMs.begin();
}

size_t CountBucketOf(int count) {
  return static_cast<size_t>(std::lower_bound(kCountBucketBounds.begin(),
                                              kCountBucketBounds.end(),
                                              static_cast<int64_t>(count)) -
                             kCountBucketBounds.begin());
}

int64_t Load(const std::atomic<int64_t>& value) {
  return value.load(std::memory_order_relaxed);
}
template <size_t N>
std::array<int64_t, N> Load(const std::array<std::atomic<int64_t>, N>& values) {
  std::array<int64_t, N> loaded;
  for (size_t i = 0; i < N; ++i) loaded[i] = Load(values[i]);
  return loaded;
}

}  // namespace

// fetch_add for an atomic<double> (C++20 has it; C++17 does not).
void MetricsCollector::DurationSum::Add(std::chrono::nanoseconds value) {
  const double add = static_cast<double>(value.count());
  double old = ns.load(std::memory_order_relaxed);
  while (!ns.compare_exchange_weak(old, old + add, std::memory_order_relaxed)) {
  }
}

MetricsCollector::Entry& MetricsCollector::EntryFor(absl::string_view method) {
  std::atomic<Entry*>& slot =
      cache_[(reinterpret_cast<uintptr_t>(method.data()) >> 3) % kCacheSlots];
  Entry* entry = slot.load(std::memory_order_acquire);
  if (entry != nullptr && entry->name == method) return *entry;
  entry = &FindOrAdd(method);
  slot.store(entry, std::memory_order_release);
  return *entry;
}

MetricsCollector::Entry& MetricsCollector::FindOrAdd(absl::string_view method) {
  internal::MutexLock lock(&mu_);
  std::unique_ptr<Entry>& entry = entries_[method];
  if (entry == nullptr) entry = std::make_unique<Entry>(method);
  return *entry;
}

void MetricsCollector::RecordCall(absl::string_view method, int attempts,
                                  StopReason reason,
                                  std::chrono::nanoseconds latency, int hedges,
                                  std::chrono::nanoseconds retry_delay) {
  Entry& entry = EntryFor(method);
  entry.calls.fetch_add(1, std::memory_order_relaxed);
  entry.attempts.fetch_add(attempts, std::memory_order_relaxed);
  // Attempts after the first are hedges or retries; a call refused before
  // sending made none.
  const int retries = attempts > 1 ? attempts - 1 - hedges : 0;
  if (retries > 0) {
    entry.retries.fetch_add(retries, std::memory_order_relaxed);
    entry.retries_buckets[CountBucketOf(retries)].fetch_add(
        1, std::memory_order_relaxed);
    // As A96 does for the retry count, a call that never retried reports
    // no delay (not a zero): the histogram describes the calls that waited.
    entry.retry_delay_buckets[BucketOf(retry_delay)].fetch_add(
        1, std::memory_order_relaxed);
    entry.retry_delay_sum_ms.Add(retry_delay);
  }
  if (hedges > 0) {
    entry.hedges.fetch_add(hedges, std::memory_order_relaxed);
    entry.hedges_buckets[CountBucketOf(hedges)].fetch_add(
        1, std::memory_order_relaxed);
  }
  entry.stops[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
  entry.latency_buckets[BucketOf(latency)].fetch_add(1,
                                                     std::memory_order_relaxed);
  entry.latency_sum_ms.Add(latency);
}

std::vector<MethodMetrics> MetricsCollector::Snapshot() const {
  std::vector<MethodMetrics> result;
  // Exclusive (absl::ReaderMutexLock was shared): snapshots are an
  // exporter's occasional polls, and calls take the lock only on a miss of
  // the method cache, so nothing contends for it.
  internal::MutexLock lock(&mu_);
  for (const auto& [name, entry] : entries_) {
    MethodMetrics m;
    m.method = name;
#define STUBKIT_COUNTER_(field, family, help) m.field = Load(entry->field);
#define STUBKIT_COUNT_HISTOGRAM_(sum, buckets, family, help) \
  m.sum = Load(entry->sum);                                  \
  m.buckets = Load(entry->buckets);
#define STUBKIT_TIME_HISTOGRAM_(buckets, sum_ms, family, help) \
  m.buckets = Load(entry->buckets);                            \
  m.sum_ms = entry->sum_ms.Milliseconds();
    STUBKIT_METRICS(STUBKIT_COUNTER_, STUBKIT_COUNT_HISTOGRAM_,
                    STUBKIT_TIME_HISTOGRAM_, STUBKIT_COUNTER_)
#undef STUBKIT_COUNTER_
#undef STUBKIT_COUNT_HISTOGRAM_
#undef STUBKIT_TIME_HISTOGRAM_
    result.push_back(std::move(m));
  }
  std::sort(result.begin(), result.end(),
            [](const MethodMetrics& a, const MethodMetrics& b) {
              return a.method < b.method;
            });
  return result;
}

}  // namespace stubkit

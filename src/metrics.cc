// Copyright 2026 The stubkit Authors.

#include "stubkit/metrics.h"

#include <algorithm>
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

// fetch_add for an atomic<double> (C++20 has it; C++17 does not).
void Add(std::atomic<double>& sum, std::chrono::nanoseconds value) {
  const double add = static_cast<double>(value.count());
  double old = sum.load(std::memory_order_relaxed);
  while (
      !sum.compare_exchange_weak(old, old + add, std::memory_order_relaxed)) {
  }
}

}  // namespace

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
    Add(entry.retry_delay_sum_ns, retry_delay);
  }
  if (hedges > 0) {
    entry.hedges.fetch_add(hedges, std::memory_order_relaxed);
    entry.hedges_buckets[CountBucketOf(hedges)].fetch_add(
        1, std::memory_order_relaxed);
  }
  entry.stops[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
  entry.buckets[BucketOf(latency)].fetch_add(1, std::memory_order_relaxed);
  Add(entry.latency_sum_ns, latency);
}

void MetricsCollector::RecordHedgeRefusedByBudget(absl::string_view method) {
  EntryFor(method).hedges_refused_by_budget.fetch_add(
      1, std::memory_order_relaxed);
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
    m.calls = entry->calls.load(std::memory_order_relaxed);
    m.attempts = entry->attempts.load(std::memory_order_relaxed);
    m.retries = entry->retries.load(std::memory_order_relaxed);
    m.hedges = entry->hedges.load(std::memory_order_relaxed);
    m.hedges_refused_by_budget =
        entry->hedges_refused_by_budget.load(std::memory_order_relaxed);
    for (size_t i = 0; i < m.retries_buckets.size(); ++i) {
      m.retries_buckets[i] =
          entry->retries_buckets[i].load(std::memory_order_relaxed);
      m.hedges_buckets[i] =
          entry->hedges_buckets[i].load(std::memory_order_relaxed);
    }
    for (int i = 0; i < kStopReasonCount; ++i) {
      m.stops[i] = entry->stops[i].load(std::memory_order_relaxed);
    }
    for (size_t i = 0; i < m.latency_buckets.size(); ++i) {
      m.latency_buckets[i] = entry->buckets[i].load(std::memory_order_relaxed);
    }
    m.latency_sum_ms =
        entry->latency_sum_ns.load(std::memory_order_relaxed) / 1e6;
    for (size_t i = 0; i < m.retry_delay_buckets.size(); ++i) {
      m.retry_delay_buckets[i] =
          entry->retry_delay_buckets[i].load(std::memory_order_relaxed);
    }
    m.retry_delay_sum_ms =
        entry->retry_delay_sum_ns.load(std::memory_order_relaxed) / 1e6;
    result.push_back(std::move(m));
  }
  std::sort(result.begin(), result.end(),
            [](const MethodMetrics& a, const MethodMetrics& b) {
              return a.method < b.method;
            });
  return result;
}

}  // namespace stubkit

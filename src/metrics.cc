// Copyright 2026 The stubkit Authors.

#include "stubkit/metrics.h"

#include <algorithm>
#include <cstdint>

namespace stubkit {

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
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Entry>& entry = entries_[method];
  if (entry == nullptr) entry = std::make_unique<Entry>(method);
  return *entry;
}

void MetricsCollector::RecordCall(absl::string_view method, int attempts,
                                  StopReason reason,
                                  std::chrono::nanoseconds latency) {
  Entry& entry = EntryFor(method);
  entry.calls.fetch_add(1, std::memory_order_relaxed);
  entry.attempts.fetch_add(attempts, std::memory_order_relaxed);
  // Attempts after the first; a call refused before sending made none.
  if (attempts > 1) {
    entry.retries.fetch_add(attempts - 1, std::memory_order_relaxed);
  }
  entry.stops[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
  const double ms = std::chrono::duration<double, std::milli>(latency).count();
  const size_t bucket = std::lower_bound(kLatencyBucketBoundsMs.begin(),
                                         kLatencyBucketBoundsMs.end(), ms) -
                        kLatencyBucketBoundsMs.begin();
  entry.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  entry.latency_sum_ns.fetch_add(latency.count(), std::memory_order_relaxed);
}

std::vector<MethodMetrics> MetricsCollector::Snapshot() const {
  std::vector<MethodMetrics> result;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, entry] : entries_) {
    MethodMetrics m;
    m.method = name;
    m.calls = entry->calls.load(std::memory_order_relaxed);
    m.attempts = entry->attempts.load(std::memory_order_relaxed);
    m.retries = entry->retries.load(std::memory_order_relaxed);
    for (int i = 0; i < kStopReasonCount; ++i) {
      m.stops[i] = entry->stops[i].load(std::memory_order_relaxed);
    }
    for (size_t i = 0; i < m.latency_buckets.size(); ++i) {
      m.latency_buckets[i] = entry->buckets[i].load(std::memory_order_relaxed);
    }
    m.latency_sum_ms =
        entry->latency_sum_ns.load(std::memory_order_relaxed) / 1e6;
    result.push_back(std::move(m));
  }
  std::sort(result.begin(), result.end(),
            [](const MethodMetrics& a, const MethodMetrics& b) {
              return a.method < b.method;
            });
  return result;
}

}  // namespace stubkit

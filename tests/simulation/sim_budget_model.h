// Copyright 2026 The stubkit Authors.
//
// The executable model of the retry budget's invariant
// (stubkit/retry_budget.h), shared by the simulation suites. It calls
// nothing of the code under test: it takes the moments calls deposited
// (their first attempts) and retries withdrew, as the transport saw them,
// and says whether any window held more retries than the budget allows.
//
//   budget_model::Params p{ttl, min_retries_per_second, percent_can_retry};
//   std::string violation = budget_model::Check(p, requests, retries);

#ifndef STUBKIT_TESTS_SIMULATION_SIM_BUDGET_MODEL_H_
#define STUBKIT_TESTS_SIMULATION_SIM_BUDGET_MODEL_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stubkit/clock.h"

namespace stubkit {
namespace sim {
namespace budget_model {

struct Params {
  std::chrono::milliseconds ttl{10000};
  double min_retries_per_second = 10;
  double percent_can_retry = 0.2;
};

// With w = ttl / 10 and e(t) = floor(t / w), after every withdrawal at t:
//   retries with e in [e(t) - 9, e(t)] and time <= t
//     <= min_rate * ttl + percent * requests with e in [e(t) - 9, e(t)]
//        and time <= t,
// in the budget's fixed point (millionths). Ties at t count in full: the
// last withdrawal at t saw every earlier one, and counting a request at t
// that came after it only loosens the bound. In time rather than buckets,
// the bucketing's tolerance: over any (ttl - w)-long span ending at a
// retry, retries <= min_rate * ttl + percent * (requests in the ttl ending
// there). Withdrawals may be a superset of the retries sent (a retry
// cancelled in its backoff withdrew and sent nothing): the check stays
// sound. Returns a violation, or "".
inline std::string Check(const Params& p,
                         const std::vector<Clock::time_point>& requests,
                         const std::vector<Clock::time_point>& retries) {
  const int64_t width = p.ttl.count() * 1'000'000 / 10;  // ns
  auto epoch = [&](Clock::time_point t) {
    const int64_t ns = t.time_since_epoch().count();
    return ns / width - (ns % width < 0 ? 1 : 0);
  };
  const int64_t reserve =
      std::llround(p.min_retries_per_second *
                   std::chrono::duration<double>(p.ttl).count() * 1e6);
  const int64_t percent = std::llround(p.percent_can_retry * 1e6);
  for (const Clock::time_point t : retries) {
    const int64_t e = epoch(t);
    auto in_window = [&](Clock::time_point u) {
      return u <= t && epoch(u) >= e - 9 && epoch(u) <= e;
    };
    const int64_t w = std::count_if(retries.begin(), retries.end(), in_window);
    const int64_t d =
        std::count_if(requests.begin(), requests.end(), in_window);
    if (w * 1'000'000 > reserve + percent * d) {
      return absl::StrCat(
          "retry budget exceeded: ", w, " retries in the window ending at ",
          std::chrono::duration_cast<std::chrono::microseconds>(
              t.time_since_epoch())
              .count(),
          " us, for ", d, " requests (allowed ", p.min_retries_per_second,
          "/s * ", p.ttl.count(), "ms + ", p.percent_can_retry, " of them)");
    }
  }
  return "";
}

}  // namespace budget_model
}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_BUDGET_MODEL_H_

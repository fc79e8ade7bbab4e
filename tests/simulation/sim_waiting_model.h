// Copyright 2026 The stubkit Authors.
//
// The executable model of the retry throttle's waiting mode
// (stubkit/retry_throttle.h, "Waiting mode"), for
// waiting_simulation_test.cc. Like sim_model.h it calls nothing of the code
// under test: it states what a run of many calls sharing one throttle may
// have done, from what the transport saw.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_WAITING_MODEL_H_
#define STUBKIT_TESTS_SIMULATION_SIM_WAITING_MODEL_H_

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
namespace waiting_model {

using std::chrono::nanoseconds;
using TimePoint = Clock::time_point;

struct Params {
  double max_tokens = 10;
  nanoseconds probe_interval{0};
  int probes = 1;
  double release_ratio = 0.5;
  bool adaptive = false;
};

// One attempt that left the throttle's wait (admitted), and whether the
// throttle considered the backend down when it was admitted.
struct Admission {
  TimePoint at;
  bool down;
};

// Rule "probes": while down, at most `probes` admissions in any window of
// `probe_interval`. Returns a violation, or "".
inline std::string CheckProbes(const Params& p, std::vector<Admission> all) {
  std::vector<TimePoint> down;
  for (const Admission& a : all) {
    if (a.down) down.push_back(a.at);
  }
  std::sort(down.begin(), down.end());
  for (size_t i = 0; i + p.probes < down.size(); ++i) {
    if (down[i + p.probes] - down[i] < p.probe_interval) {
      return absl::StrCat(p.probes + 1, " probes within ",
                          (down[i + p.probes] - down[i]).count(),
                          " ns, less than the probe interval");
    }
  }
  return "";
}

// The highest rate R the throttle can have measured: successes of calls
// that never waited, over any interval, counted as at least probe_interval
// long (per nanosecond). The throttle counts a subset of them over
// intervals whose ends enclose the ones counted, so its R is at most this.
inline double HighestFreshRate(const Params& p,
                               std::vector<TimePoint> fresh_successes) {
  std::sort(fresh_successes.begin(), fresh_successes.end());
  const double interval = static_cast<double>(p.probe_interval.count());
  double highest = 0;
  for (size_t i = 0; i < fresh_successes.size(); ++i) {
    for (size_t j = i; j < fresh_successes.size(); ++j) {
      const double length = std::max(
          interval, static_cast<double>(
                        (fresh_successes[j] - fresh_successes[i]).count()));
      highest = std::max(highest, static_cast<double>(j - i + 1) / length);
    }
  }
  return highest;
}

// Rule "release": no burst. In any window [a, b] between two admissions
// while up, the admissions are at most
//   max(release_ratio * R, probes / probe_interval) * (b - a) + 1,
// R as above. No credit is banked: the bucket's size does not appear.
inline std::string CheckRelease(const Params& p, std::vector<Admission> all,
                                std::vector<TimePoint> fresh_successes) {
  std::vector<TimePoint> up;
  for (const Admission& a : all) {
    if (!a.down) up.push_back(a.at);
  }
  std::sort(up.begin(), up.end());
  const double rate = std::max(
      p.release_ratio * HighestFreshRate(p, std::move(fresh_successes)),
      p.probes / static_cast<double>(p.probe_interval.count()));
  for (size_t i = 0; i < up.size(); ++i) {
    for (size_t j = i + 1; j < up.size(); ++j) {
      const double span = static_cast<double>((up[j] - up[i]).count());
      // (1e-6: the throttle's rounding, never a whole admission.)
      const int64_t bound =
          static_cast<int64_t>(std::floor(rate * span * (1 + 1e-6))) + 1;
      const int64_t released = static_cast<int64_t>(j - i + 1);
      if (released > bound) {
        return absl::StrCat(released, " waiting calls released within ",
                            (up[j] - up[i]).count(), " ns; the bound is ",
                            bound, " (", rate * 1e9,
                            "/s: release_ratio * R or the probe pace, + 1)");
      }
    }
  }
  return "";
}

// Rule "adaptive release": the pace grows by at most 1 / probe_interval per
// success of a call that waited (slow start adds that; the additive
// increase adds probes / (pace * interval^2), no more since the pace is at
// least the probe pace), and cuts only lower it. So the gap between two
// admissions while up is at least 1 / (probes / probe_interval + W /
// probe_interval), W the successes of waited calls before the second. It
// bounds the overshoot: no burst, and no faster growth than one doubling
// per interval.
inline std::string CheckAdaptiveRelease(const Params& p,
                                        std::vector<Admission> all,
                                        std::vector<TimePoint> waited_ok) {
  std::sort(all.begin(), all.end(),
            [](const Admission& a, const Admission& b) { return a.at < b.at; });
  std::sort(waited_ok.begin(), waited_ok.end());
  const double interval = static_cast<double>(p.probe_interval.count());
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].down) continue;
    const int64_t w =
        std::upper_bound(waited_ok.begin(), waited_ok.end(), all[i].at) -
        waited_ok.begin();
    const double pace = (p.probes + static_cast<double>(w)) / interval;
    const double gap = static_cast<double>((all[i].at - all[i - 1].at).count());
    // (1e-6 and 1 ns: the throttle rounds the gap up to whole nanoseconds.)
    if (gap * pace * (1 + 1e-6) + pace < 1) {
      return absl::StrCat("two admissions ", gap,
                          " ns apart while up; the "
                          "adaptive pace was at most ",
                          pace * 1e9, "/s after ", w, " waited successes");
    }
  }
  return "";
}

}  // namespace waiting_model
}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_WAITING_MODEL_H_

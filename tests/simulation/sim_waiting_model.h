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

// Rule "release": in any window [t, t + probe_interval] starting at an
// admission, admissions while up are at most the credits banked before it
// (max_tokens, at least 1), plus one per success of a call that never
// waited within the window, plus the probe pace (`probes` + 1 for a window
// straddling two spacings).
inline std::string CheckRelease(const Params& p, std::vector<Admission> all,
                                std::vector<TimePoint> fresh_successes) {
  std::vector<TimePoint> up;
  for (const Admission& a : all) {
    if (!a.down) up.push_back(a.at);
  }
  std::sort(up.begin(), up.end());
  std::sort(fresh_successes.begin(), fresh_successes.end());
  const int64_t cap =
      std::max<int64_t>(1, static_cast<int64_t>(std::floor(p.max_tokens)));
  for (size_t i = 0; i < up.size(); ++i) {
    const TimePoint from = up[i];
    const TimePoint to = from + p.probe_interval;
    const int64_t released =
        std::upper_bound(up.begin(), up.end(), to) - (up.begin() + i);
    const int64_t earned =
        std::upper_bound(fresh_successes.begin(), fresh_successes.end(), to) -
        std::lower_bound(fresh_successes.begin(), fresh_successes.end(), from);
    const int64_t bound = cap + earned + p.probes + 1;
    if (released > bound) {
      return absl::StrCat(released,
                          " waiting calls released within one probe "
                          "interval; the bound is ",
                          bound, " (", cap, " banked + ", earned, " earned + ",
                          p.probes + 1, " paced)");
    }
  }
  return "";
}

}  // namespace waiting_model
}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_WAITING_MODEL_H_

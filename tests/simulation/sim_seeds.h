// Copyright 2026 The stubkit Authors.
//
// The seed loop of the smaller simulation suites (the waiting throttle's,
// adaptive hedging's): runs scenarios made from consecutive seeds, reports
// each failing seed with its scenario, trace and replay command (stopping
// after 3), prints the coverage counters, and on a full run expects each
// named one to have been reached.
//
//   sim::SeedSuite suite{"STUBKIT_SIM_HEDGE_SCENARIOS", 300,
//                        "stubkit_hedging_simulation_test", {"hedged"}};
//   sim::RunSeeds<Runner>(suite, Make, Describe, g_coverage);
//
// `Runner` is built from a scenario and has `std::vector<std::string>
// Run()` (the violations) and `std::string Trace() const`. One seed is
// replayed, its scenario and trace printed, with STUBKIT_SIM_SEED=<n>.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_SEEDS_H_
#define STUBKIT_TESTS_SIMULATION_SIM_SEEDS_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stubkit/internal/base/process_random.h"

namespace stubkit {
namespace sim {

struct SeedSuite {
  const char* count_env;  // how many scenarios, when set
  uint64_t default_count;
  const char* binary;  // for the replay command
  std::vector<const char*> must_cover;
};

inline std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

template <typename Runner, typename Scenario>
void RunSeeds(const SeedSuite& suite, Scenario (*make)(uint64_t),
              std::string (*describe)(const Scenario&),
              std::map<std::string, int>& coverage) {
  const std::string one = Env("STUBKIT_SIM_SEED");
  const std::string count_env = Env(suite.count_env);
  const bool replay = !one.empty();
  const uint64_t base = replay ? std::stoull(one) : 1;
  const uint64_t count = replay ? 1
                                : (count_env.empty() ? suite.default_count
                                                     : std::stoull(count_env));
  int failures = 0;
  for (uint64_t seed = base; seed < base + count; ++seed) {
    const Scenario s = make(seed);
    // The jitter's draws too: a seed replayed alone draws what it drew here.
    internal::SeedProcessRandomForTesting(seed);
    Runner runner(s);
    const std::vector<std::string> violations = runner.Run();
    if (replay) {
      std::printf("%s%s", describe(s).c_str(), runner.Trace().c_str());
    }
    if (!violations.empty()) {
      std::string report = absl::StrCat("seed ", seed, " failed:\n");
      for (const auto& e : violations) absl::StrAppend(&report, "  ", e, "\n");
      absl::StrAppend(&report, describe(s), runner.Trace(),
                      "replay: STUBKIT_SIM_SEED=", seed, " ", suite.binary,
                      "\n");
      ADD_FAILURE() << report;
      if (++failures >= 3) break;
    }
  }
  std::printf("coverage:\n");
  for (const auto& [what, n] : coverage) {
    std::printf("  %-40s %d\n", what.c_str(), n);
  }
  if (!replay && count >= suite.default_count) {
    for (const char* what : suite.must_cover) {
      EXPECT_GT(coverage[what], 0) << "never exercised: " << what;
    }
  }
}

}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_SEEDS_H_

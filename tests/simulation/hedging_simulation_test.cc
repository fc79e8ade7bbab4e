// Copyright 2026 The stubkit Authors.
//
// Randomized scenarios of adaptive hedging (issue 27): up to 150 async
// hedged calls share one AdaptiveHedging (or one per method) while a fake
// backend answers with a heavy-tailed latency that may shift 5x slower for
// a while. Fake clock and timer (SimScheduler), no gRPC call, no real
// waiting. Drawn: the percentile, window, min/max delay, min samples, the
// budget's share, reserve and window, the policy's attempts and fixed
// delay, non-fatal and fatal failures, a shared retry throttle, cancels,
// and the timer's inline behaviours. Checked after every scenario:
//
//   - every call completes exactly once, with at most max_attempts sent;
//   - the hedging budget is never exceeded over any of its windows
//     (sim_budget_model.h, first attempts deposit, hedges withdraw);
//   - a call never waits longer for its hedge than max_delay, and a hedge
//     the timer sent waited at least min_delay;
//   - the percentile the object reports, at every call's start, is the
//     one of a sorted-vector model of the samples in its window.
//
//   build/tests/simulation/stubkit_hedging_simulation_test
//   STUBKIT_SIM_HEDGE_SCENARIOS=5000 ...   # more (default 300)
//   STUBKIT_SIM_SEED=<n> ...               # replay one seed, with its trace

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/cancellation.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/base/latency_window.h"
#include "stubkit/internal/engine/hedged_operation.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_throttle.h"
#include "tests/simulation/sim_budget_model.h"
#include "tests/simulation/sim_fakes.h"
#include "tests/simulation/sim_seeds.h"

namespace stubkit {
namespace sim {
namespace {

constexpr MethodInfo kMethods[] = {
    {"sim.Service.Get", RpcKind::kUnary, Idempotency::kIdempotent},
    {"sim.Service.List", RpcKind::kUnary, Idempotency::kIdempotent}};

struct HCall {
  int id = 0;
  int method = 0;
  milliseconds start{0};
  bool cancel = false;
  milliseconds cancel_at{0};
};

struct HScenario {
  uint64_t seed = 0;
  int max_attempts = 2;
  milliseconds fixed_delay{20};
  double percentile = 0.95;
  milliseconds window{1000};
  milliseconds min_delay{1};
  milliseconds max_delay{200};
  int64_t min_samples = 20;
  budget_model::Params budget;  // budget_window, min rate, max_extra_load
  bool per_method = false;      // one AdaptiveHedging per method
  bool throttle = false;        // a RetryThrottle shared by every call
  double fail_rate = 0;         // UNAVAILABLE (non-fatal) per attempt
  double fatal_rate = 0;        // PERMISSION_DENIED per attempt
  // Every latency is 5x longer in [shift_from, shift_to).
  milliseconds shift_from{0};
  milliseconds shift_to{0};
  bool cancel_inline = true;
  bool fire_inline = false;
  std::vector<HCall> calls;
};

HScenario Make(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto ms = [&](int lo, int hi) {
    return milliseconds(lo + pick(hi - lo + 1));
  };
  HScenario s;
  s.seed = seed;
  s.max_attempts = 2 + pick(3);
  s.fixed_delay =
      std::vector<milliseconds>{milliseconds(0), milliseconds(3),
                                milliseconds(20), milliseconds(500)}[pick(4)];
  s.percentile = std::vector<double>{0.5, 0.9, 0.95, 0.99}[pick(4)];
  s.window = std::vector<milliseconds>{milliseconds(100), milliseconds(1000),
                                       milliseconds(10000)}[pick(3)];
  s.min_delay = std::vector<milliseconds>{milliseconds(0), milliseconds(1),
                                          milliseconds(10)}[pick(3)];
  s.max_delay =
      s.min_delay + std::vector<milliseconds>{milliseconds(0), milliseconds(5),
                                              milliseconds(100),
                                              milliseconds(2000)}[pick(4)];
  s.min_samples = std::vector<int64_t>{1, 5, 20, 100}[pick(4)];
  s.budget.ttl = std::vector<milliseconds>{
      milliseconds(100), milliseconds(1000), milliseconds(10000)}[pick(3)];
  s.budget.min_retries_per_second = std::vector<double>{0, 1, 10}[pick(3)];
  s.budget.percent_can_retry = std::vector<double>{0.01, 0.05, 0.2, 1}[pick(4)];
  s.per_method = pick(2) == 0;
  s.throttle = pick(4) == 0;
  s.fail_rate = std::vector<double>{0, 0, 0.05, 0.3}[pick(4)];
  s.fatal_rate = pick(5) == 0 ? 0.02 : 0;
  s.cancel_inline = pick(2) == 0;
  s.fire_inline = pick(2) == 0;
  const int n = 5 + pick(146);
  const milliseconds horizon = ms(200, 8000);
  if (pick(2) == 0) {
    s.shift_from = ms(0, static_cast<int>(horizon.count()));
    s.shift_to = s.shift_from + ms(100, 3000);
  }
  for (int i = 0; i < n; ++i) {
    HCall c;
    c.id = i;
    c.method = pick(2);
    c.start = ms(0, static_cast<int>(horizon.count()));
    if (pick(10) == 0) {
      c.cancel = true;
      c.cancel_at = c.start + ms(0, 300);
    }
    s.calls.push_back(c);
  }
  return s;
}

std::string Describe(const HScenario& s) {
  std::string out = absl::StrCat(
      "scenario ", s.seed, ": ", s.calls.size(), " calls, max_attempts ",
      s.max_attempts, ", fixed ", s.fixed_delay.count(), " ms; adaptive(p",
      s.percentile, ", window ", s.window.count(), " ms, delay [",
      s.min_delay.count(), ", ", s.max_delay.count(), "] ms, min_samples ",
      s.min_samples, s.per_method ? ", per method" : ", per client",
      "); budget(", s.budget.ttl.count(), " ms, ",
      s.budget.min_retries_per_second, "/s, ", s.budget.percent_can_retry, ")",
      s.throttle ? ", throttle" : "", ", fail ", s.fail_rate, ", fatal ",
      s.fatal_rate);
  if (s.shift_to > s.shift_from) {
    absl::StrAppend(&out, ", 5x slower in [", s.shift_from.count(), ", ",
                    s.shift_to.count(), ") ms");
  }
  absl::StrAppend(&out, ", cancel ", s.cancel_inline ? "inline" : "deferred",
                  s.fire_inline ? ", timer fires inline" : "", "\n");
  for (const HCall& c : s.calls) {
    absl::StrAppend(
        &out, "  call ", c.id, " method ", c.method, " at ", c.start.count(),
        " ms",
        c.cancel ? absl::StrCat(", cancel at ", c.cancel_at.count(), " ms")
                 : "",
        "\n");
  }
  return out;
}

struct AttemptLog {
  TimePoint start;
  TimePoint end = TimePoint::max();
  absl::StatusCode code = absl::StatusCode::kOk;
};

struct CallLog {
  std::vector<AttemptLog> attempts;
  int completions = 0;
  TimePoint start;
  TimePoint end;
  absl::Status status;
};

// One latency sample as AdaptiveHedging records it.
struct Sample {
  TimePoint at;
  nanoseconds latency;
};

std::map<std::string, int> g_coverage;

SimScheduler::Options SchedulerOptions(const HScenario& s) {
  SimScheduler::Options o;
  o.cancel_inline = s.cancel_inline;
  o.fire_inline = s.fire_inline;
  o.preempt_seed = s.seed;
  o.max_steps = 2000000;
  return o;
}

class Runner {
 public:
  explicit Runner(const HScenario& s)
      : s_(s),
        sched_(std::make_shared<SimScheduler>(SchedulerOptions(s))),
        rng_(s.seed ^ 0x5EED),
        metrics_(std::make_shared<MetricsCollector>()) {
    const auto config =
        AdaptiveHedging::Config()
            .WithPercentile(s.percentile)
            .WithWindow(s.window)
            .WithMinDelay(s.min_delay)
            .WithMaxDelay(s.max_delay)
            .WithMinSamples(s.min_samples)
            .WithMaxExtraLoad(s.budget.percent_can_retry)
            .WithMinHedgesPerSecond(s.budget.min_retries_per_second)
            .WithBudgetWindow(s.budget.ttl);
    adaptive_[0] = std::make_shared<AdaptiveHedging>(config);
    adaptive_[1] =
        s.per_method ? std::make_shared<AdaptiveHedging>(config) : adaptive_[0];
    if (s.throttle) {
      throttle_ = std::make_shared<RetryThrottle>(
          RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1));
    }
    t0_ = sched_->Now();
    logs_.resize(s.calls.size());
  }

  std::vector<std::string> Run() {
    for (const HCall& c : s_.calls) {
      sched_->PostAt(t0_ + c.start, c.id, [this, &c] { StartCall(c); });
      if (c.cancel) {
        tokens_[c.id] = std::make_shared<CancellationToken>();
        auto token = tokens_[c.id];
        sched_->PostAt(t0_ + c.cancel_at, c.id, [token] { token->Cancel(); });
      }
    }
    while (sched_->RunOne()) {
      if (sched_->over_budget()) break;
    }
    return Check();
  }

  std::string Trace() const {
    std::string out;
    for (size_t i = 0; i < logs_.size(); ++i) {
      const CallLog& l = logs_[i];
      absl::StrAppend(&out, "  call ", i, ": ", l.completions,
                      " completion(s) at ", Ms(l.end),
                      " ms: ", l.status.ToString(), "\n");
      for (const AttemptLog& a : l.attempts) {
        absl::StrAppend(&out, "    attempt ", Ms(a.start), "..", Ms(a.end),
                        " ms ", absl::StatusCodeToString(a.code), "\n");
      }
    }
    return out;
  }

 private:
  int64_t Ms(TimePoint t) const {
    return std::chrono::duration_cast<milliseconds>(t - t0_).count();
  }
  bool Shifted(TimePoint t) const {
    return t >= t0_ + s_.shift_from && t < t0_ + s_.shift_to;
  }
  // 97 % in [1, 4] ms, 3 % in [50, 250] ms; 5x in the shift.
  nanoseconds Latency(TimePoint at) {
    std::uniform_int_distribution<int> body(1000, 4000);
    std::uniform_int_distribution<int> tail(50000, 250000);
    const bool slow = std::bernoulli_distribution(0.03)(rng_);
    nanoseconds latency = microseconds(slow ? tail(rng_) : body(rng_));
    return Shifted(at) ? 5 * latency : latency;
  }

  Options CallOptions(const HCall& c) {
    Options o;
    o.set<ClockOption>(sched_)
        .set<SleeperOption>(sched_)
        .set<AsyncSleeperOption>(sched_)
        .set<MetricsOption>(metrics_)
        .set<HedgingPolicyOption>(HedgingPolicy()
                                      .WithMaxAttempts(s_.max_attempts)
                                      .WithHedgingDelay(s_.fixed_delay))
        .set<AdaptiveHedgingOption>(adaptive_[c.method]);
    if (throttle_ != nullptr) o.set<RetryThrottleOption>(throttle_);
    if (c.cancel) o.set<CancellationOption>(tokens_[c.id]);
    return o;
  }

  void StartCall(const HCall& c) {
    CallLog& log = logs_[c.id];
    log.start = sched_->Now();
    CheckPercentile(c.method, log.start);
    internal::AsyncHedgedCall<int>(
        kMethods[c.method], CallOptions(c), Options{},
        [this, &c](grpc::ClientContext&, const OptionsView&,
                   AsyncCallback<int> done) {
          std::vector<AttemptLog>& attempts = logs_[c.id].attempts;
          const size_t index = attempts.size();
          AttemptLog a;
          a.start = sched_->Now();
          std::uniform_real_distribution<double> u(0, 1);
          const double draw = u(rng_);
          a.code = draw < s_.fatal_rate ? absl::StatusCode::kPermissionDenied
                   : draw < s_.fatal_rate + s_.fail_rate
                       ? absl::StatusCode::kUnavailable
                       : absl::StatusCode::kOk;
          attempts.push_back(a);
          const nanoseconds latency = Latency(a.start);
          sched_->PostAt(a.start + latency, c.id, [this, &c, index, done] {
            AttemptLog& a = logs_[c.id].attempts[index];
            a.end = sched_->Now();
            if (a.code != absl::StatusCode::kOk) {
              done(absl::Status(a.code, "injected"));
            } else {
              done(1);
            }
          });
        },
        [this, &c](absl::StatusOr<int> r) {
          CallLog& log = logs_[c.id];
          ++log.completions;
          log.end = sched_->Now();
          log.status = r.status();
          // A success is delivered as the winning attempt ends: the sample
          // the object recorded, from the first attempt's start.
          if (r.ok()) {
            samples_[c.method].push_back(
                Sample{log.end, log.end - log.attempts[0].start});
          }
        });
  }

  // The object's percentile against the model's: the samples recorded by
  // calls of its methods, in the slices of the window at `now`.
  void CheckPercentile(int method, TimePoint now) {
    std::vector<nanoseconds> in_window;
    const int64_t width = std::max<int64_t>(
        1, nanoseconds(s_.window).count() / internal::LatencyWindow::kSlices);
    auto epoch = [&](TimePoint t) {
      const int64_t ns = t.time_since_epoch().count();
      return ns / width - (ns % width < 0 ? 1 : 0);
    };
    const int64_t e = epoch(now);
    for (int m = 0; m < 2; ++m) {
      if (s_.per_method && m != method) continue;
      for (const Sample& sample : samples_[m]) {
        const int64_t se = epoch(sample.at);
        if (se <= e && se > e - internal::LatencyWindow::kSlices) {
          in_window.push_back(sample.latency);
        }
      }
    }
    std::optional<nanoseconds> expected;
    const int64_t n = static_cast<int64_t>(in_window.size());
    if (n > 0 && n >= s_.min_samples) {
      std::sort(in_window.begin(), in_window.end());
      const int64_t rank = std::clamp<int64_t>(
          static_cast<int64_t>(std::ceil(s_.percentile * n)), 1, n);
      expected = internal::LatencyWindow::UpperBound(
          internal::LatencyWindow::BucketOf(in_window[rank - 1]));
    }
    const std::optional<nanoseconds> got = adaptive_[method]->Percentile(now);
    if (got != expected) {
      percentile_errors_.push_back(absl::StrCat(
          "at ", Ms(now), " ms, method ", method, ": percentile ",
          got ? absl::StrCat(got->count(), " ns") : "none", ", model ",
          expected ? absl::StrCat(expected->count(), " ns") : "none", " (", n,
          " samples)"));
    }
    ++g_coverage[expected ? "percentile learned" : "fixed delay (too few)"];
  }

  std::vector<std::string> Check() {
    std::vector<std::string> v;
    auto fail = [&](int id, const std::string& what) {
      v.push_back(absl::StrCat("call ", id, ": ", what));
    };
    if (sched_->over_budget()) v.push_back("over the step budget");
    for (const std::string& e : percentile_errors_) v.push_back(e);
    std::vector<TimePoint> requests[2];
    std::vector<TimePoint> hedges[2];
    int64_t sent_hedges = 0;
    for (const HCall& c : s_.calls) {
      const CallLog& l = logs_[c.id];
      if (l.completions != 1) {
        fail(c.id, absl::StrCat(l.completions, " completions"));
        continue;
      }
      const int attempts = static_cast<int>(l.attempts.size());
      if (attempts > s_.max_attempts) {
        fail(c.id,
             absl::StrCat(attempts, " attempts, more than ", s_.max_attempts));
      }
      const int object = s_.per_method ? c.method : 0;
      for (int i = 0; i < attempts; ++i) {
        const AttemptLog& a = l.attempts[i];
        if (a.start > l.end) fail(c.id, "attempt after the call ended");
        if (i == 0) {
          requests[object].push_back(a.start);
          continue;
        }
        hedges[object].push_back(a.start);
        ++sent_hedges;
        // Sent at once after a non-fatal failure, or by the timer: then
        // no later than max_delay after the attempt before it, and not
        // before min_delay. (A hedge the budget refused at the timer may
        // go after a later failure, whenever that comes.)
        bool after_failure = false;
        for (int j = 0; j < i; ++j) {
          after_failure |= l.attempts[j].end == a.start &&
                           l.attempts[j].code != absl::StatusCode::kOk;
        }
        const nanoseconds gap = a.start - l.attempts[i - 1].start;
        if (!after_failure && gap > s_.max_delay) {
          fail(c.id, absl::StrCat("hedge ", i, " waited ", gap.count(),
                                  " ns, more than max_delay"));
        }
        if (!after_failure && gap < s_.min_delay) {
          fail(c.id, absl::StrCat("hedge ", i, " waited ", gap.count(),
                                  " ns, less than min_delay"));
        }
        ++g_coverage[after_failure ? "hedge after a failure"
                                   : "hedge by the timer"];
      }
      // Cancelled: ends promptly (its token's callback ends it).
      if (c.cancel && l.end > t0_ + c.cancel_at) {
        fail(c.id,
             absl::StrCat("ended at ", Ms(l.end), " ms, after its cancel"));
      }
    }
    for (int object = 0; object < (s_.per_method ? 2 : 1); ++object) {
      if (std::string e =
              budget_model::Check(s_.budget, requests[object], hedges[object]);
          !e.empty()) {
        v.push_back(absl::StrCat("object ", object, ": ", e));
      }
    }
    int64_t metric_hedges = 0;
    int64_t refused = 0;
    for (const MethodMetrics& m : metrics_->Snapshot()) {
      metric_hedges += m.hedges;
      refused += m.hedges_refused_by_budget;
    }
    // A hedge the cancel stopped after its withdrawal counts in neither.
    if (metric_hedges < sent_hedges) {
      v.push_back(absl::StrCat("metrics say ", metric_hedges, " hedges, ",
                               sent_hedges, " were sent"));
    }
    if (refused > 0) ++g_coverage["hedge refused by the budget"];
    if (s_.shift_to > s_.shift_from) ++g_coverage["latency shift"];
    if (s_.per_method) ++g_coverage["per-method objects"];
    if (sched_->inline_fired() > 0) ++g_coverage["timer fired inside Schedule"];
    return v;
  }

  const HScenario& s_;
  std::shared_ptr<SimScheduler> sched_;
  std::mt19937_64 rng_;
  std::shared_ptr<MetricsCollector> metrics_;
  std::shared_ptr<AdaptiveHedging> adaptive_[2];
  std::shared_ptr<RetryThrottle> throttle_;  // null: none
  TimePoint t0_;
  std::vector<CallLog> logs_;
  std::map<int, std::shared_ptr<CancellationToken>> tokens_;
  std::vector<Sample> samples_[2];  // by method
  std::vector<std::string> percentile_errors_;
};

TEST(HedgingSimulation, AdaptiveDelayAndBudget) {
  const SeedSuite suite{
      "STUBKIT_SIM_HEDGE_SCENARIOS",
      300,
      "stubkit_hedging_simulation_test",
      {"percentile learned", "fixed delay (too few)", "hedge by the timer",
       "hedge after a failure", "hedge refused by the budget", "latency shift",
       "per-method objects", "timer fired inside Schedule"}};
  RunSeeds<Runner>(suite, Make, Describe, g_coverage);
}

}  // namespace
}  // namespace sim
}  // namespace stubkit

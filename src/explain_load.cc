// Copyright 2026 The stubkit Authors.
//
// ExplainLoad and ExplainLayers: what a method's retry options cost the
// server, as attempts sent per call offered, against the fraction of
// attempts the server fails. A small analytic model over two facts the
// real loop gives (Explain: how many attempts one failing call makes, and
// what stops it) and the shared limiters' own arithmetic. The derivations
// are here, next to the code; docs/explain.md ("Load") says the same in
// words. Notation: p the failure fraction, n the attempts a call whose
// every attempt fails makes, S_n(q) = 1 + q + ... + q^(n-1).
//
// Steady state: each attempt fails with probability p, independently. A
// call makes attempt k+1 only after k failures: A = S_n(p) attempts, p*A
// retryable failures, (1-p)*A successes (the call's chance to succeed).
//
// Worst case: the failures stick to calls (a fraction p of the calls fail
// every attempt: an outage of some backends, a request that always fails).
// A = (1-p) + p*n.
//
// Token bucket (RetryThrottle): a retryable failure takes 1 token, a
// success gives r back (r = token_ratio() as the throttle rounds it, in
// thousandths: at least 0.001), and retries go while tokens > max/2. Per
// call the bucket drifts by D = r*successes - failures. If D >= 0 with
// retries on, the bucket stays full: no throttling. If D < 0 even with
// retries off (one attempt per call: D = r*(1-p) - p), it drains to 0 and
// stays there: one attempt per call. In between it hovers at half, with
// retries on a share x of the time where x*D_on + (1-x)*D_off = 0. With
// independent failures D has the sign of r*(1-p) - p either way, so the
// cut-off is exact: p* = r / (1 + r). A full bucket of M thousandths first
// lets (M - 1) / 2000 retries through (the k-th failure in a row leaves
// M - 1000k, and a retry needs twice that above M).
//
// Retry budget: over a window of ttl, retries <= min_retries_per_second *
// ttl + percent_can_retry * calls; in the long run at a rate of L calls/s
// that is c = percent_can_retry + min_retries_per_second / L retries per
// call, and a demand above it gets exactly it: A = min(A, 1 + c). Which
// retries it refuses is modelled as each retry admitted with the same
// chance a, the largest with S_n(p*a) - 1 <= c (for a call's chance to
// fail, which the bucket and the layers read).
//
// Layers: the top's client calls layer 2's server, whose client calls
// layer 3's ... and the last calls the backend. Each attempt at a layer
// becomes one call of the next layer's client. Counted from the backend up,
// each layer is a pair: the backend attempts and the chance to fail of a
// call the layer above makes for an incoming first attempt (X1, F1) and for
// an incoming retry (X2, F2); the backend itself is (1, p, 1, p). A call
// with at most c attempts sends its first as a first attempt and the rest
// as retries: X = X1 + F1 * X2 * S_(c-1)(F2), F = F1 * F2^(c-1). Without
// IncomingCall every call makes its n attempts, so both halves are the
// same: X = S_n(F) * X below (the SRE book's 4^3 = 64). With IncomingCall
// (NestedRetryOption) a call for an incoming retry makes 1 attempt
// (kNever), 2 (kOnce) or n; its attempts still start as first attempts
// below. With Reply as well, a layer whose retries ran out for overload
// answers "don't retry", so every layer above makes one attempt and only
// the last one's retries reach the backend. A layer's token bucket above
// its cut-off (for the failures of first attempts below) makes 1 attempt.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/explain_internal.h"
#include "src/internal/base/format.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/explain.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_propagation.h"

namespace stubkit {
namespace {

using internal::FormatDuration;
using internal::XmlEscape;
using std::chrono::nanoseconds;

// 1 + q + ... + q^(n-1).
double GeometricSum(double q, int n) {
  double sum = 0;
  double term = 1;
  for (int k = 0; k < n; ++k) {
    sum += term;
    term *= q;
  }
  return sum;
}

// What one call does on average: attempts sent, retryable failures (which
// take a token each), and its chance to succeed (which gives r back).
struct CallLoad {
  double attempts = 1;
  double failures = 0;
  double successes = 0;
};

CallLoad Mix(const CallLoad& on, const CallLoad& off, double x) {
  return {x * on.attempts + (1 - x) * off.attempts,
          x * on.failures + (1 - x) * off.failures,
          x * on.successes + (1 - x) * off.successes};
}

// Sequential retries: at most `n` attempts, each retry admitted with
// chance `a`. `stuck`: the worst case, failures stick to calls.
CallLoad Retries(double p, int n, double a, bool stuck) {
  if (stuck) {
    const double failing = GeometricSum(a, n);
    return {(1 - p) + p * failing, p * failing, 1 - p};
  }
  const double attempts = GeometricSum(p * a, n);
  return {attempts, p * attempts, (1 - p) * attempts};
}

// Hedging with a fixed delay `d` and every attempt answering after `l`: an
// attempt goes at 0, then one each time `d` passes with no answer (the
// timer restarts at each one sent), and at once after a non-fatal
// failure, up to `n`; the first success ends it. Exact over the 2^n
// outcomes of the attempts' answers, which come back in the order sent.
// Times in nanoseconds as doubles: a delay and a latency near
// nanoseconds::max() add without overflowing.
struct HedgeRun {
  int n;
  double d;
  double l;
  double p;
  bool fatal = false;  // a failure ends the call (not a non-fatal code)
};

void HedgesFrom(const HedgeRun& run, std::vector<double> sent, size_t answered,
                double weight, CallLoad& out) {
  const size_t n = static_cast<size_t>(run.n);
  // What the timer sends before the next answer comes back.
  while (sent.size() < n &&
         (run.d == 0 || sent.back() + run.d < sent[answered] + run.l)) {
    sent.push_back(sent.back() + run.d);
  }
  // The answer succeeds: the call ends with what it sent.
  const double count = static_cast<double>(sent.size());
  out.attempts += weight * (1 - run.p) * count;
  out.failures += weight * (1 - run.p) * static_cast<double>(answered);
  out.successes += weight * (1 - run.p);
  // It fails: the next goes at once, if one is left.
  const double w = weight * run.p;
  if (w == 0) return;
  if (run.fatal || (answered + 1 == sent.size() && sent.size() == n)) {
    out.attempts += w * count;
    out.failures += w * count;
    return;
  }
  if (sent.size() < n) sent.push_back(sent[answered] + run.l);
  HedgesFrom(run, std::move(sent), answered + 1, w, out);
}

CallLoad Hedges(double p, const HedgeRun& shape, bool stuck) {
  CallLoad out{0, 0, 0};
  if (stuck) {
    HedgeRun healthy = shape;
    healthy.p = 0;
    HedgesFrom(healthy, {0.0}, 0, 1.0, out);
    // A failing call: all it may send, or, when a failure ends it, what
    // the timer sent before the first answer.
    HedgeRun failing = shape;
    failing.p = 1;
    CallLoad fails{0, 0, 0};
    HedgesFrom(failing, {0.0}, 0, 1.0, fails);
    return {(1 - p) * out.attempts + p * fails.attempts, p * fails.attempts,
            1 - p};
  }
  HedgeRun run = shape;
  run.p = p;
  HedgesFrom(run, {0.0}, 0, 1.0, out);
  return out;
}

// What the options make of a failing call, and the shared limiters.
struct LoadPolicy {
  // Sequential retries: the attempts of a call whose every attempt fails,
  // with median waits and with the shortest (the most), and what stops it.
  int median_attempts = 1;
  int most_attempts = 1;
  bool most = false;  // the worst case: count on the most
  bool retried = true;
  std::string bound;  // "maxAttempts (5)", "time limit (12 attempts)"
  std::string most_bound;  // the same, with `most_attempts`
  // Hedging: a hedged call does not retry, it races.
  bool hedged = false;
  HedgeRun hedges{1, 0, 0, 0};
  int hedge_attempts = 1;
  nanoseconds hedge_delay{0};
  nanoseconds latency{0};
  std::optional<double> adaptive_cap;  // hedges per call at most
  // The token bucket's r, in its own rounding, and the waiting mode's
  // probes per call offered at most.
  std::optional<double> ratio;
  std::optional<double> probes_per_call;
  // The retry budget's retries per call at most.
  std::optional<double> budget_cap;
};

// The load of one call at `p`, and what bounds it.
struct Evaluated {
  CallLoad load;
  std::string bound;
};

CallLoad Demand(const LoadPolicy& policy, double p, double a, bool stuck) {
  if (policy.hedged) {
    return Hedges(p, policy.hedges, stuck);
  }
  return Retries(p, policy.most ? policy.most_attempts : policy.median_attempts,
                 a, stuck);
}

// The budget's share: the largest chance `a` that a retry is admitted with
// the retries per call within `cap` (S_n(p*a) grows with a). Hedges: the
// load is cut to 1 + cap, their refused share taken off the top.
CallLoad WithinBudget(const LoadPolicy& policy, double p, double cap,
                      bool stuck, const CallLoad& demand) {
  if (policy.hedged) {
    const double keep = (1 + cap) / demand.attempts;
    return {1 + cap, demand.failures * keep, demand.successes};
  }
  double lo = 0;
  double hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (Demand(policy, p, mid, stuck).attempts - 1 <= cap ? lo : hi) = mid;
  }
  return Demand(policy, p, lo, stuck);
}

std::string Percent(double fraction) {
  return absl::StrFormat("%.4g%%", fraction * 100);
}

// The bucket on top of `on` (what goes with the bucket above half).
Evaluated WithThrottle(const LoadPolicy& policy, double p, bool stuck,
                       Evaluated on) {
  const double r = *policy.ratio;
  const CallLoad off{1, p, 1 - p};  // one attempt, whatever failed
  const double d_on = r * on.load.successes - on.load.failures;
  const double d_off = r * off.successes - off.failures;
  // Sequential retries with independent failures: both drifts have the
  // sign of r * (1 - p) - p, so the regime is p against the cut-off,
  // compared as such (the drifts' rounding would blur it at p*).
  if (!stuck && !policy.hedged ? p <= r / (1 + r) : d_on >= 0) return on;
  Evaluated out;
  if (d_off < 0) {
    out = {off,
           absl::StrCat("throttle: above its cut-off ", Percent(r / (1 + r)))};
  } else {
    const double x = d_off / (d_off - d_on);
    out = {Mix(on.load, off, x),
           absl::StrCat("throttle: at half its bucket, retrying ", Percent(x),
                        " of the time")};
  }
  if (stuck && policy.probes_per_call.has_value()) {
    out.load.attempts += *policy.probes_per_call;
    absl::StrAppend(&out.bound, ", + probes");
  }
  return out;
}

// Attempts per call offered at `p`: `stuck`, the worst case.
Evaluated Evaluate(const LoadPolicy& policy, double p, bool stuck) {
  if (!policy.hedged && (p == 0 || !policy.retried)) {
    return {{1, p, 1 - p},
            p == 0 ? "no failures"
                   : (policy.most ? policy.most_bound : policy.bound)};
  }
  Evaluated e{Demand(policy, p, 1, stuck),
              policy.most ? policy.most_bound : policy.bound};
  if (policy.budget_cap.has_value() &&
      e.load.attempts - 1 > *policy.budget_cap) {
    e = {WithinBudget(policy, p, *policy.budget_cap, stuck, e.load),
         absl::StrFormat("retry budget (%.4g per call)",
                         1 + *policy.budget_cap)};
  }
  if (policy.adaptive_cap.has_value() &&
      e.load.attempts - 1 > *policy.adaptive_cap) {
    e = {WithinBudget(policy, p, *policy.adaptive_cap, stuck, e.load),
         absl::StrFormat("hedging budget (%.4g per call)",
                         1 + *policy.adaptive_cap)};
  }
  if (policy.ratio.has_value() && p > 0) {
    e = WithThrottle(policy, p, stuck, std::move(e));
  }
  return e;
}

// What stops a failing call, from the loop's own stop, which made
// `attempts` (`more`: more than that, not followed further).
std::string BoundOf(const ExplainedStop& stop, int attempts, bool more) {
  const std::string n =
      absl::StrCat(more ? "more than " : "", attempts, " attempts");
  switch (stop.reason) {
    case StopReason::kExhausted:
      if (absl::StrContains(stop.explanation, "time limit")) {
        return absl::StrCat("time limit (", n, ")");
      }
      return absl::StrCat("maxAttempts (", attempts, ")");
    case StopReason::kDeadline:
      return absl::StrCat("deadline (", n, ")");
    case StopReason::kNonIdempotent:
      return "not idempotent: not retried";
    case StopReason::kPermanentError:
      return "not a retryable code: not retried";
    default:
      return absl::StrCat(ToString(stop.reason), " (", n, ")");
  }
}

// The limiters and hedging a call would refuse to run with; Explain
// replaces the shared ones with its own, so they are checked here.
absl::Status CheckLimiters(const OptionsView& options) {
  if (const RetryThrottle* t = options.get<RetryThrottleOption>().get()) {
    if (!t->status().ok()) return t->status();
  }
  if (const RetryBudget* b = options.get<RetryBudgetOption>().get()) {
    if (!b->status().ok()) return b->status();
  }
  if (const AdaptiveHedging* a = options.get<AdaptiveHedgingOption>().get()) {
    if (!a->status().ok()) return a->status();
  }
  return options.get<HedgingPolicyOption>().status();
}

// The shared limiters, into `policy` and `e`.
void ReadLimiters(const OptionsView& options, double rate, int clients,
                  LoadPolicy& policy, LoadExplanation& e) {
  if (const RetryThrottle* t = options.get<RetryThrottleOption>().get()) {
    const double r = t->token_ratio();  // thousandths, as it counts
    policy.ratio = r;
    e.throttle_cutoff = r / (1 + r);
    const int64_t milli = std::llround(t->max_tokens() * 1000);
    e.throttle_onset_retries = static_cast<int>((milli - 1) / 2000);
    e.settings.push_back(absl::StrFormat(
        "retry throttle: %g tokens, %g back per success: cut-off at %s of "
        "attempts failing (r / (1 + r)); a full bucket first lets %d "
        "retries through",
        t->max_tokens(), r, Percent(*e.throttle_cutoff),
        e.throttle_onset_retries));
    if (t->waiting_mode()) {
      const auto& w = t->wait_options();
      const double pace =
          w.probes * 1e9 / static_cast<double>(w.probe_interval.count());
      policy.probes_per_call = pace * clients / rate;
    }
  }
  if (const RetryBudget* b = options.get<RetryBudgetOption>().get()) {
    const auto& c = b->config();
    policy.budget_cap =
        c.percent_can_retry() + c.min_retries_per_second() * clients / rate;
    e.budget_bound = 1 + *policy.budget_cap;
    e.settings.push_back(absl::StrFormat(
        "retry budget: %g%% of the calls + %g/s: at most %.4g attempts per "
        "call at %g calls/s over %d client(s)",
        c.percent_can_retry() * 100, c.min_retries_per_second(),
        *e.budget_bound, rate, clients));
  }
}

void ReadHedging(const OptionsView& options, const MethodInfo& method,
                 const LoadAssumptions& assume, LoadPolicy& policy,
                 LoadExplanation& e) {
  const HedgingPolicy& hedging = options.get<HedgingPolicyOption>();
  if (!hedging.enabled() || !internal::IsIdempotent(method, options)) return;
  policy.hedged = true;
  policy.hedge_attempts = hedging.max_attempts();
  policy.hedge_delay = hedging.hedging_delay();
  policy.latency = assume.attempt.attempt_duration;
  // Times in doubles: see HedgeRun.
  policy.hedges = {hedging.max_attempts(),
                   static_cast<double>(hedging.hedging_delay().count()),
                   static_cast<double>(policy.latency.count()), 0,
                   !hedging.non_fatal_codes().contains(assume.attempt.failure)};
  policy.bound =
      absl::StrCat("hedging: ", hedging.max_attempts(), " attempts, ",
                   FormatDuration(hedging.hedging_delay()), " apart");
  policy.most_bound = policy.bound;  // a hedged call races as many
  if (const AdaptiveHedging* a = options.get<AdaptiveHedgingOption>().get()) {
    const auto& c = a->config();
    policy.adaptive_cap = c.max_extra_load() + c.min_hedges_per_second() *
                                                   assume.clients /
                                                   assume.offered_rate;
    e.notes.push_back(absl::StrFormat(
        "adaptive hedging: its delay is learnt, so the rows take the fixed "
        "delay; its budget bounds the hedges: at most %.4g attempts per call",
        1 + *policy.adaptive_cap));
  }
}

absl::Status CheckLoadAssumptions(const LoadAssumptions& assume) {
  if (!(assume.offered_rate > 0) || std::isinf(assume.offered_rate)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ExplainLoad: offered_rate must be a positive number of calls per "
        "second, got ",
        assume.offered_rate));
  }
  if (assume.failure_fractions.empty()) {
    return absl::InvalidArgumentError(
        "ExplainLoad: failure_fractions is empty");
  }
  if (assume.clients < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ExplainLoad: clients must be at least 1, got ", assume.clients));
  }
  if (assume.outage.has_value() && *assume.outage <= nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExplainLoad: an outage must last more than 0, got ",
                     FormatDuration(*assume.outage)));
  }
  for (double p : assume.failure_fractions) {
    if (!(p >= 0 && p <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ExplainLoad: a failure fraction must be in [0, 1], got ", p));
    }
  }
  return absl::OkStatus();
}

// The row at `p`: the steady state, and the worse of the two patterns with
// each call making its most attempts (failures that stick drain a bucket
// faster than spread ones).
LoadRow Row(const LoadPolicy& policy, double p) {
  const Evaluated steady = Evaluate(policy, p, /*stuck=*/false);
  LoadPolicy most = policy;
  most.most = true;
  const Evaluated spread = Evaluate(most, p, /*stuck=*/false);
  const Evaluated stuck = Evaluate(most, p, /*stuck=*/true);
  const Evaluated& worst =
      stuck.load.attempts >= spread.load.attempts ? stuck : spread;
  return {p, steady.load.attempts, steady.bound, worst.load.attempts,
          worst.bound};
}

// An outage of T from a healthy start: a call started t into it sends the
// attempts of its median schedule that start before T - t; over calls
// started evenly in it, that is sum_k max(0, T - s_k) / T. Hedges go
// min(delay, latency) apart. Then the limiters: the budget's bound, and a
// bucket's allowance (each client's) over the calls offered in T.
OutageLoad Outage(const LoadPolicy& policy, const Explanation& schedule,
                  const LoadAssumptions& assume, int onset) {
  const double t = static_cast<double>(assume.outage->count());
  std::vector<double> starts;
  if (policy.hedged) {
    const double step = static_cast<double>(
        std::min(policy.hedge_delay, policy.latency).count());
    for (int k = 0; k < policy.hedge_attempts; ++k) starts.push_back(step * k);
  } else {
    for (const ExplainedAttempt& a : schedule.attempts) {
      if (!a.median_start.has_value()) break;
      starts.push_back(static_cast<double>(a.median_start->count()));
      if (!policy.retried) break;
    }
  }
  OutageLoad out{*assume.outage, 0, policy.bound};
  for (double s : starts) out.attempts += std::max(0.0, t - s) / t;
  if (starts.empty()) out.attempts = 1;
  auto cap = [&](std::optional<double> extra, std::string why) {
    if (extra.has_value() && out.attempts > 1 + *extra) {
      out = {*assume.outage, 1 + *extra, std::move(why)};
    }
  };
  cap(policy.budget_cap, "retry budget");
  cap(policy.adaptive_cap, "hedging budget");
  if (policy.ratio.has_value()) {
    const double calls = assume.offered_rate * t / 1e9;
    cap(assume.clients * onset / calls,
        absl::StrCat("throttle: ", onset, " retries per client's bucket"));
  }
  return out;
}

}  // namespace

absl::StatusOr<LoadExplanation> ExplainLoad(const OptionsView& options,
                                            const MethodInfo& method,
                                            const LoadAssumptions& assume) {
  if (absl::Status s = CheckLoadAssumptions(assume); !s.ok()) return s;
  if (absl::Status s = CheckLimiters(options); !s.ok()) return s;
  absl::StatusOr<Explanation> schedule =
      Explain(options, method, assume.attempt);
  if (!schedule.ok()) return schedule.status();
  LoadExplanation e;
  e.method = schedule->method;
  e.offered_rate = assume.offered_rate;
  e.settings = schedule->settings;
  LoadPolicy policy;
  policy.median_attempts = schedule->median_waits.attempts;
  policy.most_attempts = schedule->most_attempts;
  policy.bound =
      BoundOf(schedule->median_waits, schedule->median_waits.attempts, false);
  // The most attempts are the shortest waits'; not followed to their stop,
  // they stop as the median's do, later.
  policy.most_bound =
      BoundOf(schedule->more_than_followed ? schedule->median_waits
                                           : schedule->shortest_waits,
              schedule->most_attempts, schedule->more_than_followed);
  policy.retried =
      schedule->median_waits.reason != StopReason::kNonIdempotent &&
      schedule->median_waits.reason != StopReason::kPermanentError;
  if (schedule->more_than_followed) {
    e.notes.push_back(absl::StrCat(
        "a failing call makes more than ", schedule->most_attempts,
        " attempts with its shortest waits: the worst case is at least that"));
  }
  ReadLimiters(options, assume.offered_rate, assume.clients, policy, e);
  ReadHedging(options, method, assume, policy, e);
  for (double p : assume.failure_fractions) e.rows.push_back(Row(policy, p));
  if (assume.outage.has_value()) {
    e.outage = Outage(policy, *schedule, assume, e.throttle_onset_retries);
  }
  if (policy.probes_per_call.has_value()) {
    e.notes.push_back(absl::StrFormat(
        "waiting throttle: while its bucket refuses, waiting calls probe at "
        "most %.4g times per call offered (probes / probe_interval over the "
        "rate), none within a probe spacing of a failure: the worst case "
        "adds it, the steady state (failures keep coming) none; the release "
        "after a recovery is not in these rows",
        *policy.probes_per_call));
  }
  return e;
}

absl::StatusOr<LoadExplanation> ExplainLoad(const Options& client,
                                            absl::string_view method,
                                            const LoadAssumptions& assume,
                                            const Options& call) {
  absl::StatusOr<internal::NamedMethod> m =
      internal::ResolveNamedMethod(client, method);
  if (!m.ok()) return m.status();
  // The schedule by name says what the by-view one cannot: a service
  // config without the method, an idempotency assumed.
  absl::StatusOr<Explanation> named =
      Explain(client, method, call, assume.attempt);
  if (!named.ok()) return named.status();
  const internal::MethodOptionsTable table(m->lower, m->service, {m->name});
  const MethodInfo info{m->full_name, RpcKind::kUnary,
                        assume.attempt.idempotency, 0};
  const internal::MethodCallOptions view = table.View(info, call, m->lower);
  absl::StatusOr<LoadExplanation> e = ExplainLoad(view, info, assume);
  if (!e.ok()) return e;
  // The words for the idempotency assumed; the limiters' lines follow.
  for (size_t i = 0; i < named->settings.size() && i < e->settings.size();
       ++i) {
    e->settings[i] = named->settings[i];
  }
  if (named->not_in_service_config) {
    return absl::InvalidArgumentError(named->notes.front());
  }
  // What the client's entries say of the name ("did you mean ...?").
  if (!named->notes.empty() &&
      (absl::StrContains(named->notes.front(), "did you mean") ||
       absl::StrContains(named->notes.front(), "no MethodOptionsOption"))) {
    e->notes.insert(e->notes.begin(), named->notes.front());
  }
  return e;
}

std::string LoadExplanation::ToTable() const {
  std::string out = absl::StrCat("method: ", method, "\n");
  for (const std::string& s : settings) absl::StrAppend(&out, s, "\n");
  absl::StrAppendFormat(&out, "offered: %g calls/s\n\n", offered_rate);
  // The first column is as wide as its widest label ("outage 40s"), so
  // that every row's numbers stand in one column.
  const std::string outage_label =
      outage.has_value()
          ? absl::StrCat("outage ", FormatDuration(outage->duration))
          : "";
  const int label = std::max<int>(8, static_cast<int>(outage_label.size()));
  absl::StrAppendFormat(&out, "%*s  %-48s  %s\n", label, "failing",
                        "steady: attempts per call  (bounded by)",
                        "worst case  (bounded by)");
  for (const LoadRow& row : rows) {
    absl::StrAppendFormat(
        &out, "%*s  %-48s  %s\n", label, Percent(row.failure_fraction),
        absl::StrFormat("%7.3f  (%s)", row.steady, row.steady_bound),
        absl::StrFormat("%7.3f  (%s)", row.worst, row.worst_bound));
  }
  if (outage.has_value()) {
    absl::StrAppendFormat(&out, "%*s  %7.3f  (%s)\n", label, outage_label,
                          outage->attempts, outage->bound);
  }
  absl::StrAppend(
      &out,
      "\nsteady: each attempt fails with that chance, independently, in the "
      "long run; worst case: each call makes its most attempts (its "
      "shortest waits), and the failures are spread or stick to calls (a "
      "failing call fails every attempt), whichever costs more",
      outage.has_value() ? "; outage: every attempt fails for that long, "
                           "from a healthy start, counted over the calls "
                           "offered in it\n"
                         : "\n");
  if (!notes.empty()) {
    absl::StrAppend(&out, "notes:\n");
    for (const std::string& n : notes) absl::StrAppend(&out, "- ", n, "\n");
  }
  return out;
}

namespace {

// One layer's client.
struct Layer {
  std::string method;            // as the --load table spells it
  std::string throttle;          // its token bucket's settings line, if any
  int attempts = 1;              // a failing call's, median waits
  int nested = 1;                // for an incoming retry (IncomingCall)
  std::optional<double> cutoff;  // its token bucket's
};

// What a call made for an incoming first attempt, and for an incoming
// retry, costs the backend, and its chance to fail.
struct Below {
  double first_cost, first_fails, retry_cost, retry_fails;
};

// A call of at most `c` attempts over `below`: its cost and its chance to
// fail.
std::pair<double, double> CallOver(const Below& below, int c) {
  return {below.first_cost + below.first_fails * below.retry_cost *
                                 GeometricSum(below.retry_fails, c - 1),
          below.first_fails * std::pow(below.retry_fails, c - 1)};
}

// The top's call over `layers` (the top's first) at failure fraction `p`;
// `nested`: IncomingCall's rule for incoming retries.
double Layered(const std::vector<Layer>& layers, double p, bool nested) {
  Below below{1, p, 1, p};
  for (size_t i = layers.size(); i-- > 0;) {
    const Layer& l = layers[i];
    const bool cut = l.cutoff.has_value() && below.first_fails > *l.cutoff;
    const int n = cut ? 1 : l.attempts;
    const int m = cut ? 1 : (nested ? std::min(l.nested, n) : n);
    const auto [first_cost, first_fails] = CallOver(below, n);
    const auto [retry_cost, retry_fails] = CallOver(below, m);
    below = {first_cost, first_fails, retry_cost, retry_fails};
  }
  return below.first_cost;
}

// With "don't retry" upstream: only the last layer's retries count.
double Propagated(const std::vector<Layer>& layers, double p) {
  return Layered({layers.back()}, p, /*nested=*/false);
}

absl::StatusOr<Layer> LayerOf(const Options& client, absl::string_view method,
                              const LoadAssumptions& assume,
                              const Options& call) {
  absl::StatusOr<LoadExplanation> load =
      ExplainLoad(client, method, assume, call);
  if (!load.ok()) return load.status();
  absl::StatusOr<Explanation> e = Explain(client, method, call, assume.attempt);
  if (!e.ok()) return e.status();
  Layer layer;
  const StopReason stop = e->median_waits.reason;
  layer.attempts =
      stop == StopReason::kNonIdempotent || stop == StopReason::kPermanentError
          ? 1
          : e->median_waits.attempts;
  const NestedRetry nested = call.has<NestedRetryOption>()
                                 ? call.get<NestedRetryOption>()
                                 : client.get<NestedRetryOption>();
  switch (nested) {
    case NestedRetry::kAsUsual:
      layer.nested = layer.attempts;
      break;
    case NestedRetry::kOnce:
      layer.nested = 2;
      break;
    default:
      layer.nested = 1;
  }
  layer.cutoff = load->throttle_cutoff;
  layer.method = load->method;
  for (const std::string& line : load->settings) {
    if (absl::StartsWith(line, "retry throttle: ")) layer.throttle = line;
  }
  return layer;
}

}  // namespace

absl::StatusOr<LayersExplanation> ExplainLayers(
    int count, const std::vector<Options>& layers, absl::string_view method,
    const LoadAssumptions& assume, const Options& call) {
  if (count < 1 || count > 100) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ExplainLayers: the layers must number 1 to 100, got ", count));
  }
  if (layers.size() != 1 && layers.size() != static_cast<size_t>(count)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ExplainLayers: ", layers.size(), " options sets for ", count,
        " layers: give one for every layer, or one per layer"));
  }
  LayersExplanation e;
  std::vector<Layer> model;
  for (int i = 0; i < count; ++i) {
    const size_t at = layers.size() == 1 ? 0 : static_cast<size_t>(i);
    if (i > 0 && at == 0) {
      model.push_back(model.front());
    } else {
      absl::StatusOr<Layer> layer = LayerOf(layers[at], method, assume, call);
      if (!layer.ok()) return layer.status();
      model.push_back(*layer);
      // The bucket counts in the rows: say whose it is.
      if (!layer->throttle.empty()) {
        e.settings.push_back(
            layers.size() == 1
                ? layer->throttle
                : absl::StrCat("layer ", i + 1, ": ", layer->throttle));
      }
    }
    e.attempts.push_back(model.back().attempts);
  }
  e.method = model.front().method;
  for (double p : assume.failure_fractions) {
    e.rows.push_back({p, Layered(model, p, /*nested=*/false),
                      Layered(model, p, /*nested=*/true),
                      Propagated(model, p)});
  }
  e.notes.push_back(
      "a layer's retry budget and hedging are not in these rows (its own "
      "--load table says what they do to its calls); a layer's token bucket "
      "is: above its cut-off, for the failures it sees, it makes 1 attempt");
  return e;
}

std::string LayersExplanation::ToTable() const {
  std::string out = absl::StrCat("method: ", method, "\n");
  for (const std::string& s : settings) absl::StrAppend(&out, s, "\n");
  absl::StrAppend(&out, "layers: ", attempts.size(),
                  " (the top's client first); a failing call's attempts at "
                  "each: ");
  for (size_t i = 0; i < attempts.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", attempts[i]);
  }
  absl::StrAppendFormat(&out,
                        "\n\nbackend attempts per call offered at the top:\n"
                        "%8s  %12s  %12s  %20s\n",
                        "failing", "naive", "IncomingCall",
                        "IncomingCall+Reply");
  for (const LayersRow& row : rows) {
    absl::StrAppendFormat(&out, "%8s  %12.3f  %12.3f  %20.3f\n",
                          Percent(row.failure_fraction), row.naive, row.nested,
                          row.propagated);
  }
  absl::StrAppend(
      &out,
      "\nnaive: every layer retries as its options say. IncomingCall: a "
      "layer's call for an incoming retry makes NestedRetryOption's attempts "
      "(1 by default). IncomingCall+Reply: a layer whose retries ran out for "
      "overload answers \"don't retry\", so only the last layer retries.\n");
  for (const std::string& n : notes) absl::StrAppend(&out, "- ", n, "\n");
  return out;
}

// ---- The load chart ----

namespace {

// A line of the chart: (failure fraction, attempts per call) points.
struct Curve {
  std::string name;
  std::string colour;
  std::vector<std::pair<double, double>> points;
};

// A round step for attempts from 1 to `top`: 1, 2 or 5 x 10^k.
double AttemptStep(double top) {
  const double raw = (top - 1) / 5;
  for (double step = 0.01;; step *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * step >= raw) return m * step;
    }
  }
}

// The axes, in the explainer's chart style: the failure fraction across
// (0 to 100 %), attempts per call offered up (1 to `top`).
struct LoadChart {
  static constexpr double kLeft = 70, kRight = 150, kTop = 40, kWidth = 760,
                          kHeight = 360, kBottom = 50;
  double top;
  double X(double p) const { return kLeft + (kWidth - kLeft - kRight) * p; }
  double Y(double a) const {
    return kHeight - kBottom -
           (kHeight - kBottom - kTop) * (a - 1) / std::max(top - 1, 1e-9);
  }
};

std::string ChartAxes(const LoadChart& chart, absl::string_view title) {
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"18\" font-size=\"13\">%s</text>\n",
      LoadChart::kWidth, LoadChart::kHeight, LoadChart::kLeft,
      XmlEscape(title));
  for (int percent = 0; percent <= 100; percent += 10) {
    const double x = chart.X(percent / 100.0);
    absl::StrAppendFormat(
        &out,
        "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
        "stroke=\"#ddd\"/>\n<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" "
        "text-anchor=\"middle\">%d%%</text>\n",
        x, chart.Y(chart.top), x, chart.Y(1), x, chart.Y(1) + 16, percent);
  }
  // 1, then the round multiples of the step above it.
  const double step = AttemptStep(chart.top);
  for (double k = 0, a = 1; a <= chart.top * (1 + 1e-9);
       a = step * std::floor(1 / step + 1e-9) + step * ++k) {
    absl::StrAppendFormat(
        &out,
        "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
        "stroke=\"#ddd\"/>\n<text class=\"tick\" x=\"%.0f\" y=\"%.1f\" "
        "text-anchor=\"end\">%g</text>\n",
        chart.X(0), chart.Y(a), chart.X(1), chart.Y(a), chart.X(0) - 6,
        chart.Y(a) + 4, a);
  }
  absl::StrAppendFormat(
      &out,
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">failure fraction "
      "(of the attempts the server gets)</text>\n",
      chart.X(0.5), LoadChart::kHeight - 12);
  return out;
}

std::string LoadSvg(absl::string_view title, const std::vector<Curve>& curves) {
  LoadChart chart{1};
  for (const Curve& c : curves) {
    for (const auto& [p, a] : c.points) chart.top = std::max(chart.top, a);
  }
  if (chart.top <= 1) chart.top = 2;
  const double step = AttemptStep(chart.top);
  chart.top = step * std::ceil(chart.top / step - 1e-9);
  std::string out = ChartAxes(chart, title);
  double legend = LoadChart::kTop + 10;
  for (Curve c : curves) {
    std::sort(c.points.begin(), c.points.end());
    std::string path;
    for (const auto& [p, a] : c.points) {
      absl::StrAppendFormat(&path, "%s%.1f,%.1f", path.empty() ? "" : " ",
                            chart.X(p), chart.Y(a));
    }
    absl::StrAppendFormat(
        &out,
        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
        "points=\"%s\"/>\n<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
        "y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>\n<text x=\"%.0f\" "
        "y=\"%.0f\">%s</text>\n",
        c.colour, path, chart.X(1) + 12, legend, chart.X(1) + 32, legend,
        c.colour, chart.X(1) + 36, legend + 4, XmlEscape(c.name));
    legend += 16;
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace

std::string LoadExplanation::ToSvg() const {
  Curve steady{"steady state", "#2b6cb0", {}};
  Curve worst{"worst case", "#dd6b20", {}};
  for (const LoadRow& row : rows) {
    steady.points.push_back({row.failure_fraction, row.steady});
    worst.points.push_back({row.failure_fraction, row.worst});
  }
  return LoadSvg(absl::StrCat(method, ": attempts per call offered (",
                              offered_rate, " calls/s)"),
                 {steady, worst});
}

std::string LayersExplanation::ToSvg() const {
  Curve naive{"naive", "#c53030", {}};
  Curve nested{"IncomingCall", "#dd6b20", {}};
  Curve propagated{"IncomingCall+Reply", "#2b6cb0", {}};
  for (const LayersRow& row : rows) {
    naive.points.push_back({row.failure_fraction, row.naive});
    nested.points.push_back({row.failure_fraction, row.nested});
    propagated.points.push_back({row.failure_fraction, row.propagated});
  }
  return LoadSvg(absl::StrCat(method, ": backend attempts per call through ",
                              attempts.size(), " layers"),
                 {naive, nested, propagated});
}

}  // namespace stubkit

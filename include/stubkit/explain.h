// Copyright 2026 The stubkit Authors.
//
// The policy explainer: what a call's retry options do to a call that keeps
// failing, before any call is made.
//
// `Explain` runs stubkit's own retry loop for one method against an attempt
// that always fails, under a fake clock, with every backoff wait at its
// shortest, median and longest: the bands it returns (each attempt's
// earliest, median and latest start; what stops the call, when, and with
// which summary) are what the runtime does, not a second model of it.
//
// ```cpp
// #include <iostream>
//
// #include "stubkit/explain.h"
//
// void PrintSchedule(const stubkit::Options& client) {
//   absl::StatusOr<stubkit::Explanation> e =
//       stubkit::Explain(client, "demo.KeyValue.Get");
//   if (e.ok()) std::cout << e->ToTable();  // or e->ToSvg(), a chart
// }
// // Why a failed call stopped, and the option that would change it.
// void SayWhy(const absl::Status& status) {
//   std::cerr << stubkit::WhyNot(status).ToString();
// }
// ```
//
// Options as a generated client's call sees them (invalid: the call's
// error). `ExplainLoad`, `ExplainLayers`: what the retries cost the server
// per call offered, by failure fraction. Link stubkit::explain. The command
// `stubkit-explain` prints all; bands, SVG, the load model: docs/explain.md.

#ifndef STUBKIT_EXPLAIN_H_
#define STUBKIT_EXPLAIN_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/status.h"

namespace stubkit {

// What the explainer takes the failing call to be.
struct ExplainAssumptions {
  // How long each attempt runs before it fails. An attempt whose deadline
  // (AttemptTimeoutOption, the call's end) comes first fails with
  // DEADLINE_EXCEEDED at that deadline instead.
  std::chrono::nanoseconds attempt_duration{0};
  // The code every attempt fails with.
  absl::StatusCode failure = absl::StatusCode::kUnavailable;
  // For `Explain` by name: the method's idempotency when no option sets it
  // (a name does not say what the proto declares).
  Idempotency idempotency = Idempotency::kIdempotent;
  // Attempts followed at most: waits that can be zero (full jitter) allow
  // any number of attempts in a time limit.
  int max_attempts = 1000;
};

// One attempt of a failing call. Times are from the call's start.
struct ExplainedAttempt {
  int number = 0;  // from 1
  // The backoff wait before it: zero for the first.
  std::chrono::nanoseconds shortest_wait{0};
  std::chrono::nanoseconds median_wait{0};
  std::chrono::nanoseconds longest_wait{0};
  // With every wait at its shortest, median, longest. `median_start` is
  // empty when median waits stop the call before this attempt; then
  // `latest_start` is a bound (the call's end, less MinAttemptTimeOption).
  std::chrono::nanoseconds earliest_start{0};
  std::optional<std::chrono::nanoseconds> median_start;
  std::chrono::nanoseconds latest_start{0};
  // Whether every draw of the jitter reaches this attempt.
  bool always = true;
};

// How a failing call ends with every wait at one point of its range.
struct ExplainedStop {
  StopReason reason = StopReason::kSuccess;
  int attempts = 0;
  std::chrono::nanoseconds at{0};  // from the call's start
  // The summary the call's status would carry, e.g. "gave up: retry policy
  // exhausted (at most 4 retries)".
  std::string explanation;
};

struct Explanation {
  std::string method;  // "package.Service.Method"
  // The method's kind: a stream's schedule is drawn as a unary call's, with
  // a note (by name: always kUnary).
  RpcKind kind = RpcKind::kUnary;
  // The options that decide, in words: policy, backoff, timeouts.
  std::vector<std::string> settings;
  std::vector<ExplainedAttempt> attempts;
  ExplainedStop shortest_waits;
  ExplainedStop median_waits;
  ExplainedStop longest_waits;
  // Attempts on any draw of the jitter; `most_attempts` is only a lower
  // bound when `more_than_followed` (see ExplainAssumptions::max_attempts).
  int fewest_attempts = 0;
  int most_attempts = 0;
  bool more_than_followed = false;
  // The call's end (the earliest of the policy's time limit, the total
  // timeout and the deadline) from its start, if it has one.
  std::optional<std::chrono::nanoseconds> end;
  // The longest a failing call can take, on any draw.
  std::chrono::nanoseconds worst_case{0};
  // What the bands leave out or what would change them: a throttle, a
  // budget, server hints, hedging.
  std::vector<std::string> notes;
  // By name only. No option (IdempotencyOption, IdempotencyMapOption) said
  // whether the method is idempotent, so ExplainAssumptions::idempotency
  // was taken: a name does not say what the proto declares.
  bool idempotency_assumed = false;
  // By name only, with a service config's options (ServiceConfig::
  // ToOptions()): the file has no entry for the method, its service or
  // every method (`{}`), so the call is not retried, as under gRPC. Often
  // a typo: the first note names the closest name the file has.
  bool not_in_service_config = false;

  // A plain-text table, one row per attempt, then the stops and the notes.
  std::string ToTable() const;
  // A standalone SVG chart: one band per attempt on a time axis.
  std::string ToSvg() const;
};

// Explains a call of `method` with the effective `options`. A unary call:
// a stream's attempts are bounded differently (docs/streaming.md).
absl::StatusOr<Explanation> Explain(const OptionsView& options,
                                    const MethodInfo& method,
                                    const ExplainAssumptions& assumptions = {});

// As above for a client's options and a method's name, "package.Service.
// Method" or "package.Service/Method", with the per-method and per-service
// entries of `client`'s MethodOptionsOption resolved as a generated client
// resolves them, and `call` over them.
absl::StatusOr<Explanation> Explain(const Options& client,
                                    absl::string_view method,
                                    const Options& call = {},
                                    const ExplainAssumptions& assumptions = {});

// ---- Load: what the retries cost the server (docs/explain.md, "Load") ----

// The load the server is assumed to see.
struct LoadAssumptions {
  // Calls offered per second, > 0: a retry budget's reserve and adaptive
  // hedging's minimum are per second.
  double offered_rate = 100;
  // The fractions of attempts the server fails, each in [0, 1].
  std::vector<double> failure_fractions = {0, 0.01, 0.1, 0.5, 1};
  // Each attempt: its duration (the latency hedges race), failure code, the
  // method's idempotency by name, attempts followed.
  ExplainAssumptions attempt;
  // The clients the rate is spread over, each with its own bucket or budget
  // (the options' limiter stands for each client's), >= 1.
  int clients = 1;
  // Also: attempts per call offered during an outage this long (every
  // attempt failing), counted as the studies count them. > 0.
  std::optional<std::chrono::nanoseconds> outage;
};

// Attempts per call offered during an outage: those of the calls started in
// it that start in it, over the calls started in it (the median schedule).
struct OutageLoad {
  std::chrono::nanoseconds duration{0};
  double attempts = 1;
  std::string bound;
};

// Attempts sent per call offered at one failure fraction.
struct LoadRow {
  double failure_fraction = 0;
  // In the long run, with each attempt failing independently.
  double steady = 1;
  std::string steady_bound;  // what bounds it: "maxAttempts (5)", ...
  // Each call making its most attempts (its shortest waits), with the
  // failures spread or stuck to calls (a failing call fails every
  // attempt), whichever costs more.
  double worst = 1;
  std::string worst_bound;
};

struct LoadExplanation {
  std::string method;
  double offered_rate = 0;
  std::vector<std::string> settings;  // as Explanation's, then the limiters
  std::vector<LoadRow> rows;
  // A retry throttle's cut-off: above this failure fraction its bucket
  // drains and calls make one attempt (r / (1 + r), r as it rounds), and
  // the retries a full bucket lets through before that.
  std::optional<double> throttle_cutoff;
  int throttle_onset_retries = 0;
  // A retry budget's bound on attempts per call in the long run.
  std::optional<double> budget_bound;
  std::optional<OutageLoad> outage;
  std::vector<std::string> notes;
  std::string ToTable() const;
  // A standalone SVG chart of the rows: attempts per call offered against
  // the failure fraction, a line for the steady state and the worst case.
  std::string ToSvg() const;
};

absl::StatusOr<LoadExplanation> ExplainLoad(const OptionsView& options,
                                            const MethodInfo& method,
                                            const LoadAssumptions& assumptions);
// By name, with the options resolved as `Explain` by name resolves them.
absl::StatusOr<LoadExplanation> ExplainLoad(
    const Options& client, absl::string_view method,
    const LoadAssumptions& assumptions = {}, const Options& call = {});

// Layers of retries: a client calls a server that calls a server ... that
// calls the backend, each layer's client with its own options.
struct LayersRow {
  double failure_fraction = 0;  // of the backend's attempts
  // Backend attempts per call offered at the top, in the steady state:
  double naive = 1;       // every layer retries as its options say
  double nested = 1;      // IncomingCall: a retry is not retried below
  double propagated = 1;  // IncomingCall and Reply: "don't retry" upstream
};

struct LayersExplanation {
  std::string method;  // "package.Service.Method", as LoadExplanation's
  // What the rows count in besides the attempts: each layer's token bucket
  // ("retry throttle: ...", prefixed "layer N: " with options per layer).
  std::vector<std::string> settings;
  // Per layer, the top's first: a failing call's attempts (median waits).
  std::vector<int> attempts;
  std::vector<LayersRow> rows;
  std::vector<std::string> notes;
  std::string ToTable() const;
  // The rows as an SVG chart, a line per variant.
  std::string ToSvg() const;
};

// `count` layers, `layers` their clients' options, the top's first: one per
// layer, or one for every layer. INVALID_ARGUMENT for `count` outside
// [1, 100], a number of options sets that is neither 1 nor `count`, or what
// ExplainLoad refuses. `call`: over every layer's options, as ExplainLoad's.
absl::StatusOr<LayersExplanation> ExplainLayers(
    int count, const std::vector<Options>& layers, absl::string_view method,
    const LoadAssumptions& assumptions = {}, const Options& call = {});

// Why a call stopped, in plain words, and what would have changed it.
struct StopAdvice {
  StopReason reason = StopReason::kSuccess;
  int attempts = -1;  // -1: unknown
  std::string why;
  // The option (or service config field) to change, and how.
  std::string change;
  std::string ToString() const;
};

// From a status a stubkit call returned. A status without stubkit's
// summary gets advice on its code alone.
StopAdvice WhyNot(const absl::Status& status);
// From the text of such a status (its message, or `absl::Status::
// ToString()`). INVALID_ARGUMENT when it holds no stubkit summary.
absl::StatusOr<StopAdvice> WhyNot(absl::string_view text);

}  // namespace stubkit

#endif  // STUBKIT_EXPLAIN_H_

// Copyright 2026 The stubkit Authors.
//
// The explainer runs the real retry loop (RetryLoopState, RunRetryLoop)
// against an attempt that always fails, on a fake clock, with the backoff's
// draw pinned (internal::ExplainerDraws). Nothing here decides whether or
// how long to wait: the bands are what the loop did.

#include "stubkit/explain.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "src/explain_internal.h"
#include "src/internal/base/format.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/engine/retry_decision.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "stubkit/logging.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_hints.h"

namespace stubkit {
namespace {

using internal::FormatDuration;
using internal::XmlEscape;
using std::chrono::nanoseconds;

// Times saturate at nanoseconds::max(): waits of up to that (an uncapped
// backoff) add past what nanoseconds hold, and a wrapped sum would put
// attempts before the call's start. A saturated time means "at least".
nanoseconds AddSaturating(nanoseconds a, nanoseconds b) {
  return b > nanoseconds::zero() && a > nanoseconds::max() - b
             ? nanoseconds::max()
             : a + b;
}

// Whether the fake clock has saturated (a tick before max(): FakeClock).
bool Saturated(Clock::time_point now) {
  return now >= Clock::time_point::max() - nanoseconds(1);
}

// The time from `start` to `now` on the fake clock.
nanoseconds Since(Clock::time_point start, Clock::time_point now) {
  return Saturated(now) ? nanoseconds::max() : now - start;
}

// FormatDuration, with a saturated time shown as what it is: a bound.
std::string FormatTime(nanoseconds t) {
  return t == nanoseconds::max() ? std::string(">292y") : FormatDuration(t);
}

// Advances the fake clock by each wait the loop asks for, and keeps them.
class WaitRecorder final : public Sleeper {
 public:
  explicit WaitRecorder(std::shared_ptr<FakeClock> clock)
      : clock_(std::move(clock)) {}
  void SleepFor(nanoseconds wait) override {
    waits.push_back(wait);
    clock_->Advance(wait);
  }
  std::vector<nanoseconds> waits;

 private:
  std::shared_ptr<FakeClock> clock_;
};

// The parts of the text WithRetrySummary appends to a message:
// "... [stubkit: <explanation>; <n> attempts over <elapsed>]".
struct SummaryText {
  std::string explanation;
  int attempts = -1;
};

std::optional<SummaryText> ParseSummaryText(absl::string_view text) {
  const size_t open = text.rfind("[stubkit: ");
  if (open == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = text.substr(open + 10);
  const size_t close = rest.rfind(']');
  if (close != absl::string_view::npos) rest = rest.substr(0, close);
  SummaryText parsed;
  // The count follows the last "; ": explanations may hold "; " themselves.
  const size_t last = rest.rfind("; ");
  absl::string_view tail =
      last == absl::string_view::npos ? "" : rest.substr(last + 2);
  const size_t space = tail.find(' ');
  int attempts = 0;
  if (space != absl::string_view::npos &&
      absl::SimpleAtoi(tail.substr(0, space), &attempts) &&
      absl::StartsWith(tail.substr(space), " attempt")) {
    parsed.attempts = attempts;
    rest = rest.substr(0, last);
  }
  parsed.explanation = std::string(rest);
  return parsed;
}

// One run of the loop with every wait drawn at `draw`.
struct Path {
  std::vector<nanoseconds> starts;  // from the call's start
  std::vector<nanoseconds> waits;
  ExplainedStop stop;
  bool capped = false;  // stopped following at max_attempts
  std::optional<nanoseconds> end;
  nanoseconds min_attempt_time{0};
};

// Above the call's own layer: the fake clock and the pinned draw, and
// nothing that reaches outside (observers, metrics, logs, hooks, the
// caller's shared throttle and budget).
Options Isolated(const OptionsView& options, std::shared_ptr<FakeClock> clock,
                 std::shared_ptr<WaitRecorder> sleeper, double draw,
                 std::shared_ptr<RetryThrottle> throttle,
                 std::shared_ptr<RetryBudget> budget,
                 std::shared_ptr<CancellationToken> cancel) {
  Options top = options.call();
  top.set<ClockOption>(std::move(clock))
      .set<SleeperOption>(std::move(sleeper))
      .set<BackoffPolicyOption>(internal::ExplainerDraws::Pinned(
          options.get<BackoffPolicyOption>(), draw))
      .set<RetryThrottleOption>(std::move(throttle))
      .set<RetryBudgetOption>(std::move(budget))
      .set<MetricsOption>(nullptr)
      .set<RetryObserverOption>(nullptr)
      .set<LogLevelOption>(LogLevel::kOff)
      .set<CancellationOption>(std::move(cancel))
      .set<ResponseMetadataOption>(nullptr)
      .set<ContextSetupOption>(nullptr)
      .set<FollowReconnectOption>(false);
  return top;
}

// `cut_near_deadline`: an attempt that would end within the loop's
// tolerance of its deadline (internal::ReachedDeadline) is cut by that
// deadline instead. A real attempt's deadline runs on gRPC's clocks, whose
// verdict can come that much early, and the loop takes it as the deadline's:
// an attempt that fits with microseconds to spare before the call's end may
// be its last, one short of the exact schedule. The fewest attempts follow
// that path.
absl::StatusOr<Path> Follow(const OptionsView& options,
                            const MethodInfo& method, double draw,
                            const ExplainAssumptions& assumptions,
                            std::shared_ptr<RetryThrottle> throttle,
                            std::shared_ptr<RetryBudget> budget,
                            bool cut_near_deadline = false) {
  auto clock = std::make_shared<FakeClock>();
  auto sleeper = std::make_shared<WaitRecorder>(clock);
  auto cancel = std::make_shared<CancellationToken>();
  const Options top = Isolated(options, clock, sleeper, draw,
                               std::move(throttle), std::move(budget), cancel);
  const OptionsView view(top, options.method(), options.service(),
                         options.client());
  internal::RetryLoopState state(method, view);
  if (!state.setup_status().ok()) return state.setup_status();
  const Clock::time_point start = state.start();
  Path path;
  auto attempt = [&](grpc::ClientContext&) -> absl::StatusOr<int> {
    const Clock::time_point now = clock->Now();
    path.starts.push_back(Since(start, now));
    if (static_cast<int>(path.starts.size()) >= assumptions.max_attempts) {
      path.capped = true;
      cancel->Cancel();
    }
    const Clock::time_point deadline = state.facts().attempt_deadline;
    if (deadline != Clock::time_point::max() &&
        (deadline - now <= assumptions.attempt_duration ||
         (cut_near_deadline &&
          internal::ReachedDeadline(now + assumptions.attempt_duration, now,
                                    deadline)))) {
      clock->Advance(deadline - now);
      return absl::DeadlineExceededError("the attempt's deadline passed");
    }
    clock->Advance(assumptions.attempt_duration);
    return absl::Status(assumptions.failure, "the attempt failed");
  };
  const absl::StatusOr<int> result =
      internal::RunRetryLoop<int>(state, attempt);
  path.waits = std::move(sleeper->waits);
  if (state.facts().end != Clock::time_point::max()) {
    path.end = state.facts().end - start;
  }
  path.min_attempt_time = state.facts().min_attempt_time;
  const std::optional<RetrySummary> summary = GetRetrySummary(result.status());
  if (result.ok() || !summary.has_value()) {
    return absl::InternalError("the explainer's call did not fail as planned");
  }
  path.stop.reason = summary->stop_reason;
  path.stop.attempts = summary->attempts;
  path.stop.at =
      Saturated(clock->Now()) ? nanoseconds::max() : summary->elapsed;
  if (auto text = ParseSummaryText(result.status().message())) {
    path.stop.explanation = text->explanation;
  }
  if (path.capped) {
    path.stop.explanation = absl::StrCat("not followed further: more than ",
                                         assumptions.max_attempts, " attempts");
  }
  return path;
}

// Whether `stop` came from the call's end rather than a count or an answer.
bool StoppedAtEnd(const ExplainedStop& stop) {
  return stop.reason == StopReason::kDeadline ||
         (stop.reason == StopReason::kExhausted &&
          absl::StrContains(stop.explanation,
                            internal::EndWhat(StopReason::kExhausted)));
}

void Settings(const OptionsView& options, std::vector<std::string>* out) {
  const RetryPolicy& policy = options.get<RetryPolicyOption>();
  out->push_back(absl::StrCat("retry policy: ", policy.ToString()));
  out->push_back(
      absl::StrCat("backoff: ", options.get<BackoffPolicyOption>().ToString()));
  if (const auto* t = options.find<AttemptTimeoutOption>()) {
    if (*t > nanoseconds::zero()) {
      out->push_back(absl::StrCat("attempt timeout: ", FormatDuration(*t)));
    }
  }
  if (const auto* t = options.find<TotalTimeoutOption>()) {
    if (*t > nanoseconds::zero()) {
      out->push_back(absl::StrCat("total timeout: ", FormatDuration(*t)));
    }
  }
  if (const auto* d = options.find<DeadlineOption>()) {
    if (*d != std::chrono::system_clock::time_point::max()) {
      out->push_back(absl::StrCat(
          "deadline: ", FormatDuration(*d - std::chrono::system_clock::now()),
          " from now"));
    }
  }
  if (const auto* m = options.find<MinAttemptTimeOption>()) {
    if (*m > nanoseconds::zero()) {
      out->push_back(absl::StrCat("min attempt time: ", FormatDuration(*m)));
    }
  }
}

std::string DescribeStop(const ExplainedStop& stop) {
  return absl::StrCat(stop.attempts,
                      stop.attempts == 1 ? " attempt" : " attempts",
                      ", stops at ", FormatTime(stop.at), " (",
                      ToString(stop.reason), "): ", stop.explanation);
}

// How a fresh copy of the caller's throttle or budget, alone, changes the
// median path.
void NoteAdmission(const OptionsView& options, const MethodInfo& method,
                   const ExplainAssumptions& assumptions, const Path& median,
                   std::vector<std::string>* notes) {
  auto changes = [&](const absl::StatusOr<Path>& with) -> std::string {
    if (!with.ok()) return "";
    if (with->stop.attempts == median.stop.attempts &&
        with->stop.reason == median.stop.reason) {
      return "on its own it does not change the median schedule";
    }
    return absl::StrCat("on its own it stops the median schedule after ",
                        DescribeStop(with->stop));
  };
  if (const RetryThrottle* throttle =
          options.get<RetryThrottleOption>().get()) {
    auto fresh = std::make_shared<RetryThrottle>(
        RetryThrottle::Config()
            .WithMaxTokens(throttle->max_tokens())
            .WithTokenRatio(throttle->token_ratio()));
    const std::string alone = changes(
        Follow(options, method, 0.5, assumptions, std::move(fresh), nullptr));
    notes->push_back(absl::StrCat(
        "retry throttle (max_tokens ", throttle->max_tokens(), ", token_ratio ",
        throttle->token_ratio(),
        ") is left out of the bands: its bucket is shared by every call that "
        "uses it. With a full bucket, ",
        alone,
        "; once failures of any call have taken half its tokens, the next "
        "retryable failure stops the call (retry throttled)",
        throttle->waiting_mode()
            ? ", or, in its waiting mode, waits for the backend's recovery "
              "until the call's end"
            : ""));
  }
  if (const RetryBudget* budget = options.get<RetryBudgetOption>().get()) {
    const RetryBudget::Config& config = budget->config();
    const std::string alone =
        changes(Follow(options, method, 0.5, assumptions, nullptr,
                       std::make_shared<RetryBudget>(config)));
    notes->push_back(absl::StrCat(
        "retry budget (", config.min_retries_per_second(), "/s plus ",
        config.percent_can_retry() * 100, "% of the requests over ",
        FormatDuration(config.ttl()),
        ") is left out of the bands: it is shared by every call that uses it. "
        "Fresh, ",
        alone,
        "; spent by other calls' retries, it stops the call at its next "
        "retryable failure (retry throttled)"));
  }
}

// Assumptions the explainer cannot follow.
absl::Status CheckAssumptions(const ExplainAssumptions& assumptions) {
  if (assumptions.max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Explain: max_attempts must be at least 1, got ",
                     assumptions.max_attempts));
  }
  if (assumptions.attempt_duration < nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Explain: attempt_duration must not be negative, got ",
                     FormatDuration(assumptions.attempt_duration)));
  }
  if (assumptions.failure == absl::StatusCode::kOk) {
    return absl::InvalidArgumentError(
        "Explain: the assumed failure must not be OK");
  }
  return absl::OkStatus();
}

// The paths the bands are drawn from: every wait at its shortest, median
// and longest draw; the longest with attempts cut near their deadline (see
// Follow), the fewest attempts the call can make.
struct Paths {
  Path shortest;
  Path median;
  Path longest;
};

absl::StatusOr<Paths> FollowBands(const OptionsView& options,
                                  const MethodInfo& method,
                                  const ExplainAssumptions& assumptions) {
  absl::StatusOr<Path> shortest =
      Follow(options, method, 0.0, assumptions, nullptr, nullptr);
  if (!shortest.ok()) return shortest.status();
  absl::StatusOr<Path> median =
      Follow(options, method, 0.5, assumptions, nullptr, nullptr);
  if (!median.ok()) return median.status();
  absl::StatusOr<Path> longest =
      Follow(options, method, ExponentialBackoffPolicy::kLargestDraw,
             assumptions, nullptr, nullptr, /*cut_near_deadline=*/true);
  if (!longest.ok()) return longest.status();
  return Paths{*std::move(shortest), *std::move(median), *std::move(longest)};
}

// The table's rows: the wait before each attempt (the backoff's range) and
// its start on each path. Needs `e.end` and `e.most_attempts`.
std::vector<ExplainedAttempt> AttemptRows(
    const ExponentialBackoffPolicy& backoff, const Paths& paths,
    const Explanation& e) {
  const Path& shortest = paths.shortest;
  const Path& longest = paths.longest;
  // An attempt the longest waits never reach can start as late as the
  // loop lets any attempt start: before the end, leaving the least time.
  const nanoseconds last_start =
      e.end.has_value() ? *e.end - shortest.min_attempt_time
                        : (longest.starts.empty() ? nanoseconds::zero()
                                                  : longest.starts.back());
  std::vector<ExplainedAttempt> rows;
  for (int n = 1; n <= e.most_attempts; ++n) {
    const size_t i = static_cast<size_t>(n - 1);
    ExplainedAttempt a;
    a.number = n;
    if (n > 1) {
      // The loop's wait before attempt n is its (n - 1)-th failure's:
      // retry n - 2 (retry_sources.cc; no server hints here).
      const ExponentialBackoffPolicy::DelayRange range =
          backoff.RangeFor(n - 2);
      a.shortest_wait = range.shortest;
      a.median_wait = range.median;
      a.longest_wait = range.longest;
    }
    a.earliest_start = shortest.starts[i];
    if (i < paths.median.starts.size()) a.median_start = paths.median.starts[i];
    a.always = i < longest.starts.size();
    a.latest_start =
        a.always ? longest.starts[i] : std::max(last_start, a.earliest_start);
    rows.push_back(a);
  }
  return rows;
}

// The latest the call can stop. Needs `e.end`, `e.attempts` and
// `e.more_than_followed`.
nanoseconds WorstCase(const ExponentialBackoffPolicy& backoff,
                      const Paths& paths, const Explanation& e,
                      const ExplainAssumptions& assumptions) {
  // With an end, every attempt fails by it; without one, the call stops
  // on a count, which the longest waits reach last.
  const bool at_end = StoppedAtEnd(paths.shortest.stop) ||
                      StoppedAtEnd(paths.median.stop) ||
                      StoppedAtEnd(paths.longest.stop) || paths.shortest.capped;
  // Without jitter every draw is the same: the one path is exact.
  const bool drawn = backoff.jitter().kind() != Jitter::Kind::kNone;
  nanoseconds worst_case =
      std::max(paths.longest.stop.at, paths.median.stop.at);
  if (e.end.has_value() && at_end && drawn) {
    // Any stop is some attempt's failure: no later than its latest start
    // plus its run, nor than the end.
    worst_case = *e.end;
    if (!e.more_than_followed) {
      nanoseconds latest{0};
      for (const ExplainedAttempt& a : e.attempts) {
        latest = std::max(latest, a.latest_start);
      }
      worst_case =
          std::min(*e.end, AddSaturating(latest, assumptions.attempt_duration));
    }
  }
  // Not followed to its stop: only the end, if any, bounds it.
  if (paths.longest.capped) worst_case = e.end.value_or(paths.longest.stop.at);
  return worst_case;
}

// What the bands do not show: paths not followed to their stop, streams,
// server hints and hedging.
void NoteLimits(const OptionsView& options, const MethodInfo& method,
                const ExplainAssumptions& assumptions, const Paths& paths,
                Explanation& e) {
  if (e.more_than_followed) {
    e.notes.push_back(absl::StrCat(
        "with the shortest waits more than ", assumptions.max_attempts,
        " attempts fit; the table follows ", assumptions.max_attempts));
  }
  if (paths.longest.capped) {
    e.notes.push_back(
        absl::StrCat("even the longest waits allow more than ",
                     assumptions.max_attempts, " attempts: the worst case is ",
                     e.end.has_value() ? "the call's end" : "more than shown"));
  }
  if (method.kind != RpcKind::kUnary) {
    e.notes.push_back(
        "the schedule is a unary call's: a stream's attempts are bounded by "
        "the call's own end, not the retry policy's time limit");
  }
  if (options.get<ServerHintsOption>()) {
    e.notes.push_back(absl::StrCat(
        "a server's hint (grpc-retry-pushback-ms, RetryInfo) replaces a wait, "
        "up to ",
        FormatDuration(options.get<ServerHintCeilingOption>()),
        " (ServerHintCeilingOption; a longer one stops the call), and "
        "restarts the backoff; the bands assume no hint"));
  }
  if (options.get<HedgingPolicyOption>().enabled()) {
    e.notes.push_back(
        "HedgingPolicyOption is set: the call is hedged, which this "
        "schedule of sequential retries does not describe");
  }
}

}  // namespace

absl::StatusOr<Explanation> Explain(const OptionsView& options,
                                    const MethodInfo& method,
                                    const ExplainAssumptions& assumptions) {
  if (absl::Status status = CheckAssumptions(assumptions); !status.ok()) {
    return status;
  }
  absl::StatusOr<Paths> paths = FollowBands(options, method, assumptions);
  if (!paths.ok()) return paths.status();
  const Path& shortest = paths->shortest;

  Explanation e;
  e.method = std::string(method.full_name);
  e.kind = method.kind;
  Settings(options, &e.settings);
  e.settings.push_back(absl::StrCat(
      "idempotent: ", internal::IsIdempotent(method, options) ? "yes" : "no"));
  e.end = shortest.end;
  e.shortest_waits = shortest.stop;
  e.median_waits = paths->median.stop;
  e.longest_waits = paths->longest.stop;
  e.most_attempts = static_cast<int>(shortest.starts.size());
  e.fewest_attempts = static_cast<int>(paths->longest.starts.size());
  e.more_than_followed = shortest.capped;

  const ExponentialBackoffPolicy& backoff = options.get<BackoffPolicyOption>();
  e.attempts = AttemptRows(backoff, *paths, e);
  e.worst_case = WorstCase(backoff, *paths, e, assumptions);
  NoteLimits(options, method, assumptions, *paths, e);
  NoteAdmission(options, method, assumptions, paths->median, &e.notes);
  return e;
}

namespace {

// Edits (insertions, deletions, substitutions) from `a` to `b`, ignoring
// case: "demo.keyvalue/get" is one edit from nothing that matters.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same =
          absl::ascii_tolower(static_cast<unsigned char>(a[i - 1])) ==
          absl::ascii_tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] =
          std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Says that a service config's file has no entry for `service`/`name`, with
// the closest name it has.
std::string NotInServiceConfig(const std::string& service,
                               const std::string& name,
                               const MethodOptionsOption::Type* entries,
                               bool keep_stubkit_defaults) {
  std::string out = absl::StrCat(
      "the service config has no entry for ", service, "/", name,
      " (nor for its service, nor a {} one for every method), so ",
      keep_stubkit_defaults ? "the client's own options apply"
                            : "the call is not retried, as under gRPC");
  std::vector<std::string> names;
  if (entries != nullptr) {
    for (const auto& [key, options] : *entries) names.push_back(key);
  }
  if (names.empty()) {
    absl::StrAppend(&out,
                    "; the file names no method at all (its keys are "
                    "camelCase: \"methodConfig\", \"name\", \"service\", "
                    "\"method\")");
    return out;
  }
  std::sort(names.begin(), names.end());
  const std::string wanted = absl::StrCat(service, "/", name);
  const std::string* closest = nullptr;
  size_t best = 0;
  for (const std::string& key : names) {
    // A service's key against the service, a method's against the method.
    const size_t d = EditDistance(
        key.find('/') == std::string::npos ? service : wanted, key);
    if (closest == nullptr || d < best) {
      closest = &key;
      best = d;
    }
  }
  absl::StrAppend(&out, ". Did you mean ", *closest, "? The file names ");
  constexpr size_t kListed = 12;
  for (size_t i = 0; i < names.size() && i < kListed; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", names[i]);
  }
  if (names.size() > kListed) {
    absl::StrAppend(&out, " and ", names.size() - kListed, " more");
  }
  return out;
}

// When no option says whether the method is idempotent, the settings say
// what the explanation assumed.
void NoteAssumedIdempotency(const OptionsView& options,
                            const std::string& full_name,
                            const ExplainAssumptions& assumptions,
                            Explanation& e) {
  const auto* by_name = options.find<IdempotencyMapOption>();
  if (options.find<IdempotencyOption>() != nullptr ||
      (by_name != nullptr && by_name->find(full_name) != by_name->end())) {
    return;
  }
  e.idempotency_assumed = true;
  for (std::string& s : e.settings) {
    if (absl::StartsWith(s, "idempotent: ")) {
      s = absl::StrCat(
          "idempotent: unknown, assumed ",
          assumptions.idempotency == Idempotency::kIdempotent ? "yes" : "no",
          " (no option sets it, and a method's name does not say what its "
          "proto declares)");
    }
  }
}

// A method of `service` that `entries` name one or two edits away from
// `name`, or null.
const std::string* CloseMethod(const MethodOptionsOption::Type& entries,
                               const std::string& service,
                               const std::string& name) {
  const std::string* closest = nullptr;
  size_t best = 3;
  for (const auto& [key, unused] : entries) {
    if (key.size() <= service.size() + 1 || !absl::StartsWith(key, service) ||
        (key[service.size()] != '/' && key[service.size()] != '.')) {
      continue;
    }
    const size_t d =
        EditDistance(name, absl::string_view(key).substr(service.size() + 1));
    if (d < best) {
      closest = &key;
      best = d;
    }
  }
  return closest;
}

// What the client's entries say of the method: a service config that does
// not name it, a close name, or no entry at all.
void NoteEntries(const Options& client, const std::string& service,
                 const std::string& name, const std::string& full_name,
                 bool named, Explanation& e) {
  // A service config's options (ServiceConfig::ToOptions) say which
  // services the file names, and whether it has a {} entry.
  const auto* imported = client.find<internal::ImportedServicesOption>();
  if (!named && imported != nullptr && *imported != nullptr &&
      !(*imported)->has_default) {
    e.not_in_service_config = true;
    e.notes.insert(
        e.notes.begin(),
        NotInServiceConfig(service, name, client.find<MethodOptionsOption>(),
                           (*imported)->keep_stubkit_defaults));
  } else if (const auto* entries = client.find<MethodOptionsOption>();
             entries != nullptr && entries->count(service) != 0 &&
             entries->count(full_name) == 0 &&
             entries->count(absl::StrCat(service, "/", name)) == 0) {
    // A misspelt method of a service the file also names as a whole gets
    // the service-wide entry, as in the running client; say so when the
    // file names a method of that service one or two edits away.
    if (const std::string* closest = CloseMethod(*entries, service, name)) {
      e.notes.insert(
          e.notes.begin(),
          absl::StrCat("the file has no entry of its own for ", service, "/",
                       name, ", so its entry for the whole service ", service,
                       " applies; did you mean ", *closest, "?"));
    }
  } else if (!named && client.has<MethodOptionsOption>()) {
    e.notes.insert(
        e.notes.begin(),
        absl::StrCat("no MethodOptionsOption entry (no service config entry) "
                     "names ",
                     full_name, " or ", service,
                     ": the client's own options apply"));
  }
}

}  // namespace

namespace internal {

absl::StatusOr<NamedMethod> ResolveNamedMethod(const Options& client,
                                               absl::string_view method) {
  size_t split = method.find('/');
  if (split == absl::string_view::npos) split = method.rfind('.');
  if (split == absl::string_view::npos || split == 0 ||
      split + 1 >= method.size() ||
      method.substr(split + 1).find_first_of("./") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("Explain: \"", method,
                     "\" is not a method name (\"package.Service.Method\" or "
                     "\"package.Service/Method\")"));
  }
  NamedMethod m;
  m.service = std::string(method.substr(0, split));
  m.name = std::string(method.substr(split + 1));
  m.full_name = absl::StrCat(m.service, ".", m.name);
  // The entries that can concern this method, as a client of a service
  // with only this method would see them; the rest would be refused as
  // naming no method of it. No warnings: the explainer is not a client.
  m.lower = client;
  m.lower.set<LogLevelOption>(LogLevel::kOff);
  if (const auto* entries = client.find<MethodOptionsOption>()) {
    MethodOptionsOption::Type kept;
    for (const std::string& key :
         {m.service, m.full_name, absl::StrCat(m.service, "/", m.name)}) {
      auto it = entries->find(key);
      if (it != entries->end()) kept.insert(*it);
    }
    m.named = !kept.empty();
    m.lower.set<MethodOptionsOption>(std::move(kept));
  }
  return m;
}

std::string XmlEscape(absl::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace internal

absl::StatusOr<Explanation> Explain(const Options& client,
                                    absl::string_view method,
                                    const Options& call,
                                    const ExplainAssumptions& assumptions) {
  absl::StatusOr<internal::NamedMethod> m =
      internal::ResolveNamedMethod(client, method);
  if (!m.ok()) return m.status();
  const internal::MethodOptionsTable table(m->lower, m->service, {m->name});
  const MethodInfo info{m->full_name, RpcKind::kUnary, assumptions.idempotency,
                        0};
  const internal::MethodCallOptions view = table.View(info, call, m->lower);
  absl::StatusOr<Explanation> e = Explain(view, info, assumptions);
  if (!e.ok()) return e;
  NoteAssumedIdempotency(view, m->full_name, assumptions, *e);
  NoteEntries(client, m->service, m->name, m->full_name, m->named, *e);
  return e;
}

std::string Explanation::ToTable() const {
  std::string out = absl::StrCat("method: ", method, "\n");
  for (const std::string& s : settings) absl::StrAppend(&out, s, "\n");
  absl::StrAppend(&out, "\n",
                  absl::StrFormat("%7s  %-32s  %s\n", "attempt",
                                  "wait before: min / median / max",
                                  "starts at: earliest / median / latest"));
  auto row = [&](const ExplainedAttempt& a) {
    const std::string wait =
        a.number == 1 ? "-"
                      : absl::StrCat(FormatTime(a.shortest_wait), " / ",
                                     FormatTime(a.median_wait), " / ",
                                     FormatTime(a.longest_wait));
    const std::string start = absl::StrCat(
        FormatTime(a.earliest_start), " / ",
        a.median_start.has_value() ? FormatTime(*a.median_start) : "-", " / ",
        a.always ? "" : "<", FormatTime(a.latest_start));
    absl::StrAppend(&out,
                    absl::StrFormat("%7d  %-32s  %s%s\n", a.number, wait, start,
                                    a.always ? "" : "  (some draws)"));
  };
  // A long schedule keeps its head and its tail.
  constexpr size_t kHead = 20;
  constexpr size_t kTail = 5;
  for (size_t i = 0; i < attempts.size(); ++i) {
    if (attempts.size() > kHead + kTail + 1 && i == kHead) {
      absl::StrAppend(&out, absl::StrFormat("%7s  (%d more)\n", "...",
                                            attempts.size() - kHead - kTail));
      i = attempts.size() - kTail;
    }
    row(attempts[i]);
  }
  absl::StrAppend(&out, "\nattempts: ");
  if (fewest_attempts == most_attempts && !more_than_followed) {
    absl::StrAppend(&out, fewest_attempts, " on every draw\n");
  } else {
    absl::StrAppend(&out, fewest_attempts, " to ", most_attempts,
                    more_than_followed ? "+" : "", "\n");
  }
  absl::StrAppend(&out, "shortest waits: ", DescribeStop(shortest_waits), "\n");
  absl::StrAppend(&out, "median waits:   ", DescribeStop(median_waits), "\n");
  absl::StrAppend(&out, "longest waits:  ", DescribeStop(longest_waits), "\n");
  if (end.has_value()) {
    absl::StrAppend(&out, "call's end: ", FormatTime(*end), "\n");
  }
  absl::StrAppend(&out, "worst case: a failing call takes up to ",
                  FormatTime(worst_case), "\n");
  if (!notes.empty()) {
    absl::StrAppend(&out, "notes:\n");
    for (const std::string& n : notes) absl::StrAppend(&out, "- ", n, "\n");
  }
  return out;
}

namespace {}  // namespace

namespace {

// A round step for an axis over `span` nanoseconds in about `ticks` steps:
// 1, 2 or 5 × 10^k below a minute; whole minutes, hours and days above
// (2m, not 1m40s), so every tick's label is a round time.
double TickStep(double span, int ticks) {
  const double raw = span / ticks;
  constexpr double kMinute = 60e9, kHour = 3600e9, kDay = 86400e9;
  if (raw < kMinute) {
    double step = 1;  // 1 ns
    while (true) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m * step >= raw) return m * step;
      }
      step *= 10;
    }
  }
  for (double s :
       {kMinute, 2 * kMinute, 5 * kMinute, 10 * kMinute, 15 * kMinute,
        30 * kMinute, kHour, 2 * kHour, 3 * kHour, 6 * kHour, 12 * kHour}) {
    if (s >= raw) return s;
  }
  double days = 1;
  while (true) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * days * kDay >= raw) return m * days * kDay;
    }
    days *= 10;
  }
}

// The chart: one row of bands per attempt above a time axis from 0 to
// `span`, then a line of text per label.
struct Chart {
  static constexpr double kLeft = 70, kRight = 30, kRow = 18, kWidth = 760;
  static constexpr double kLine = 16;  // a line of text below the axis
  double top;                          // of the first row
  double axis;
  nanoseconds span;

  double X(nanoseconds t) const {
    const double plot = kWidth - kLeft - kRight;
    return kLeft + plot * static_cast<double>(t.count()) /
                       static_cast<double>(span.count());
  }
};

// A marker under the axis.
struct Label {
  nanoseconds at;
  std::string colour;
  std::string text;
  bool beyond;  // the call's end, past the chart's right edge
};

// The call's end and the worst case; the axis ends at `span`.
std::vector<Label> ChartLabels(const Explanation& e, nanoseconds span) {
  std::vector<Label> labels;
  const bool end_drawn = e.end.has_value() && *e.end <= span;
  if (end_drawn) {
    labels.push_back({*e.end, "#c53030",
                      absl::StrCat("call's end ", FormatTime(*e.end)), false});
  }
  if (!e.end.has_value() || e.worst_case != *e.end) {
    labels.push_back({e.worst_case, "#dd6b20",
                      absl::StrCat("worst case ", FormatTime(e.worst_case)),
                      false});
  }
  if (e.end.has_value() && !end_drawn) {
    labels.push_back({*e.end, "#c53030",
                      absl::StrCat("call's end ", FormatTime(*e.end),
                                   ", beyond the chart →"),
                      true});
  }
  return labels;
}

// Round ticks: 0, step, 2 step, ... within the axis (in doubles: the
// span may be nanoseconds::max()).
std::string SvgTicks(const Chart& chart) {
  std::string out;
  const double span_ns = static_cast<double>(chart.span.count());
  const double step = TickStep(span_ns, 5);
  for (double t = 0; t <= span_ns * (1 + 1e-12); t += step) {
    if (t >= 0x1.0p63) break;  // not a nanoseconds value
    const nanoseconds at(static_cast<int64_t>(t));
    const double x = chart.X(at);
    absl::StrAppend(
        &out,
        absl::StrFormat("<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                        "stroke=\"#ddd\"/>\n"
                        "<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        x, chart.top - 6, x, chart.axis, x,
                        chart.axis + Chart::kLine, XmlEscape(FormatTime(at))));
  }
  return out;
}

// Attempt `a`'s band in row `i`: earliest to latest start, median marked.
std::string SvgRow(const Chart& chart, const ExplainedAttempt& a, int i) {
  const double y = chart.top + Chart::kRow * i;
  const double x0 = chart.X(a.earliest_start);
  const double w = std::max(2.0, chart.X(a.latest_start) - x0);
  std::string out = absl::StrFormat(
      "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">"
      "attempt %d</text>\n"
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
      "height=\"%.0f\" fill=\"%s\" stroke=\"#2b6cb0\"%s/>\n",
      Chart::kLeft - 6, y + 12, a.number, x0, y + 3, w, Chart::kRow - 6,
      a.always ? "#90cdf4" : "#e2e8f0",
      a.always ? "" : " stroke-dasharray=\"3,2\"");
  if (a.median_start.has_value()) {
    const double m = chart.X(*a.median_start);
    absl::StrAppend(&out,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                                    "y2=\"%.1f\" stroke=\"#1a365d\" "
                                    "stroke-width=\"2\"/>\n",
                                    m, y + 1, m, y + Chart::kRow - 1));
  }
  return out;
}

// A label on its own line (`line`) under the axis, with its marker.
std::string SvgLabel(const Chart& chart, const Label& label, double line) {
  if (label.beyond) {
    return absl::StrFormat(
        "<text class=\"label\" x=\"%.0f\" y=\"%.0f\" "
        "fill=\"%s\" text-anchor=\"end\">%s</text>\n",
        Chart::kWidth - Chart::kRight, line, label.colour,
        XmlEscape(label.text));
  }
  // The line from the top of the bands to the axis; the label under
  // it, ending at the line (or starting there, near the left edge).
  const double at = chart.X(label.at);
  const bool right_of_line = at - Chart::kLeft < 6.5 * label.text.size();
  return absl::StrFormat(
      "<line class=\"marker\" x1=\"%.1f\" y1=\"%.0f\" "
      "x2=\"%.1f\" y2=\"%.0f\" stroke=\"%s\" "
      "stroke-dasharray=\"5,3\"/>\n"
      "<text class=\"label\" x=\"%.1f\" y=\"%.0f\" "
      "fill=\"%s\" text-anchor=\"%s\">%s</text>\n",
      at, chart.top - 6, at, chart.axis, label.colour,
      right_of_line ? at + 3 : at - 3, line, label.colour,
      right_of_line ? "start" : "end", XmlEscape(label.text));
}

}  // namespace

std::string Explanation::ToSvg() const {
  constexpr int kMaxRows = 40;
  const bool stream = kind != RpcKind::kUnary;
  const int rows = std::min<int>(static_cast<int>(attempts.size()), kMaxRows);
  Chart chart;
  // A stream's note takes a line under the title.
  chart.top = stream ? 54 : 40;
  chart.span = worst_case;
  for (int i = 0; i < rows; ++i) {
    chart.span =
        std::max(chart.span, attempts[static_cast<size_t>(i)].latest_start);
  }
  // The axis ends with the schedule: an end far beyond it would squeeze
  // every band into a corner, so it is named instead.
  if (chart.span <= nanoseconds::zero()) chart.span = nanoseconds(1);
  chart.axis = chart.top + Chart::kRow * rows + 8;
  // Below the axis: the ticks' line, then one line per label, so that no
  // label crosses another or a marker's line (which ends at the axis).
  const std::vector<Label> labels = ChartLabels(*this, chart.span);
  const bool more = static_cast<int>(attempts.size()) > rows;
  const double height =
      chart.axis +
      Chart::kLine * (1 + static_cast<double>(labels.size()) + (more ? 1 : 0)) +
      12;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"18\" font-size=\"13\">%s: when each attempt "
      "starts (earliest to latest, median marked)</text>\n",
      Chart::kWidth, height, Chart::kLeft, XmlEscape(method));
  if (stream) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "<text class=\"note\" x=\"%.0f\" y=\"36\" fill=\"#744210\">"
                  "A stream: drawn as a unary call's schedule. A stream's "
                  "attempts are bounded by the call's own end, not the "
                  "retry policy's time limit.</text>\n",
                  Chart::kLeft));
  }
  absl::StrAppend(&out, SvgTicks(chart));
  for (int i = 0; i < rows; ++i) {
    absl::StrAppend(&out, SvgRow(chart, attempts[static_cast<size_t>(i)], i));
  }
  double line = chart.axis + 2 * Chart::kLine;
  for (const Label& label : labels) {
    absl::StrAppend(&out, SvgLabel(chart, label, line));
    line += Chart::kLine;
  }
  if (more) {
    absl::StrAppend(
        &out, absl::StrFormat("<text x=\"%.0f\" y=\"%.0f\">(%d more attempts "
                              "not drawn)</text>\n",
                              Chart::kLeft, line,
                              static_cast<int>(attempts.size()) - rows));
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

// ---- WhyNot ----

namespace {

struct Case {
  absl::string_view marker;  // in the explanation; empty: any
  StopReason reason;
  absl::string_view why;
  absl::string_view change;
};

// Most specific first: the first case whose marker the explanation holds
// (and whose reason matches, when the reason is known) answers.
constexpr Case kCases[] = {
    {"MinAttemptTimeOption", StopReason::kDeadline,
     "less time was left before the call's end than MinAttemptTimeOption "
     "asks of an attempt",
     "a smaller MinAttemptTimeOption, or more time for the call "
     "(TotalTimeoutOption, DeadlineOption)"},
    {"MinAttemptTimeOption", StopReason::kExhausted,
     "less time was left before the retry policy's time limit than "
     "MinAttemptTimeOption asks of an attempt",
     "a smaller MinAttemptTimeOption, or a longer RetryPolicy::LimitedTime"},
    {"NestedRetryOption", StopReason::kExhausted,
     "the request this call serves is itself a retry, and the layer above "
     "retries it: stubkit retries at one layer only",
     "NestedRetryOption(NestedRetry::kAsUsual) to retry at this layer too "
     "(beware of multiplying retries across layers)"},
    {"retry policy exhausted", StopReason::kExhausted,
     "every attempt failed with a retryable code until the retry policy's "
     "count of failures was spent",
     "a larger RetryPolicy::LimitedErrorCount(n), or RetryPolicy::"
     "LimitedTime(d) to bound retries by time; in a service config, "
     "retryPolicy.maxAttempts (counted at most 5, as gRPC does, unless "
     "ServiceConfigImport::max_attempts is raised)"},
    {"would pass the retry policy's time limit", StopReason::kExhausted,
     "the next backoff wait would have ended after the retry policy's time "
     "limit, so stubkit stopped instead of waiting",
     "a longer RetryPolicy::LimitedTime(d), or shorter waits "
     "(BackoffPolicyOption: its maximum delay)"},
    {"the retry policy's time limit", StopReason::kExhausted,
     "the retry policy's time limit (RetryPolicy::LimitedTime) ran out",
     "a longer RetryPolicy::LimitedTime(d); in a service config without "
     "maxAttempts, the method's timeout"},
    {"would pass the call's deadline", StopReason::kDeadline,
     "the next backoff wait would have ended after the call's deadline or "
     "total timeout, so stubkit stopped instead of waiting",
     "more time for the call (TotalTimeoutOption, DeadlineOption; a service "
     "config's timeout), or shorter waits (BackoffPolicyOption: its "
     "maximum delay)"},
    {"the call's deadline", StopReason::kDeadline,
     "the call's own deadline or total timeout ran out (TotalTimeoutOption, "
     "DeadlineOption, a service config's timeout, or the deadline of the "
     "server call it serves)",
     "more time for the call: TotalTimeoutOption or DeadlineOption (a "
     "service config's methodConfig.timeout); an AttemptTimeoutOption "
     "shorter than the total lets a slow attempt be retried in time"},
    {"is not a retryable code", StopReason::kPermanentError,
     "the status code is not one of the retry policy's retryable codes, so "
     "it was not retried",
     "RetryPolicy::WithRetryableCodes (or WithRetryableIf) to add the code, "
     "if its failures pass on a retry; in a service config, "
     "retryPolicy.retryableStatusCodes"},
    {"is not idempotent", StopReason::kNonIdempotent,
     "the method is not idempotent, and stubkit never repeats a call that "
     "could take effect twice",
     "if repeating it is safe: IdempotencyOption(Idempotency::kIdempotent) "
     "for the call, IdempotencyMapOption for the client, or "
     "idempotency_level in the proto"},
    {"writes queued while the stream was waiting to reopen",
     StopReason::kNotResumable,
     "an async client or bidi stream was waiting to reopen, with no attempt "
     "able to send, and a Write would have queued more than 4 MiB: the "
     "call ended instead of retrying, as gRPC's own retries do when a "
     "call's writes outgrow their buffer",
     "write at the pace the server answers or acknowledges (a live stream's "
     "queue has no bound; 4 MiB is the most that waits for a reopen), or "
     "write less while the stream is down"},
    {"cannot be replayed", StopReason::kNotResumable,
     "a client or bidi stream broke after more writes than its replay "
     "buffer keeps (256 KiB), or after a response, so reopening it could "
     "not send the server what it had already seen",
     "a resume hook for the method (its ResumeOption) that writes, through "
     "its ResumeWriter, what restores the server's view on the new stream"},
    {"not resumed", StopReason::kNotResumable,
     "the stream broke after delivering messages, and reopening it would "
     "deliver them again",
     "a resume hook for the method (its ResumeOption) that rewrites the "
     "request to continue where the stream broke"},
    {"hedging budget", StopReason::kThrottled,
     "the adaptive hedging budget had no hedge left, so the call waited for "
     "its first attempt, and that attempt failed",
     "AdaptiveHedgingOption: a larger max_extra_load or "
     "min_hedges_per_second; or a retry policy, for failures hedging does "
     "not cover"},
    {"retry budget", StopReason::kThrottled,
     "the retry budget shared by the client's calls had no retry left",
     "RetryBudgetOption: a larger percent_can_retry or min_retries_per_second"
     ", or a longer ttl"},
    {"did not recover", StopReason::kThrottled,
     "the retry throttle's waiting mode waited for the backend to recover "
     "until the call's end",
     "more time for the call, or find why the backend stayed down"},
    {"token bucket", StopReason::kThrottled,
     "the retry throttle's token bucket was at or below half: calls sharing "
     "it failed often lately",
     "RetryThrottleOption: more max_tokens or a larger token_ratio (a "
     "service config's retryThrottling), or its waiting mode "
     "(WithWaitForRecovery) to wait for recovery instead of stopping"},
    {"longer than", StopReason::kServerRefused,
     "the server asked for a wait longer than ServerHintCeilingOption",
     "a larger ServerHintCeilingOption, if such waits are acceptable"},
    {"said not to retry", StopReason::kServerRefused,
     "the server said not to retry (a negative or unparseable "
     "grpc-retry-pushback-ms)",
     "nothing on the client should override it; ServerHintsOption(false) "
     "would ignore server hints altogether"},
    {"hedged attempts failed", StopReason::kExhausted,
     "every hedged attempt failed",
     "a larger HedgingPolicy max_attempts, or more non-fatal codes"},
    {"", StopReason::kCancelled, "the caller cancelled the call",
     "nothing: the cancel was the caller's (CancellationOption)"},
    {"", StopReason::kInvalidArgument,
     "the options were invalid, so nothing was sent",
     "fix the option the message names"},
    {"", StopReason::kSuccess, "the call did not fail", "nothing"},
};

StopAdvice Advise(std::optional<StopReason> reason,
                  absl::string_view explanation, int attempts) {
  StopAdvice advice;
  advice.attempts = attempts;
  for (const Case& c : kCases) {
    if (reason.has_value() && c.reason != *reason) continue;
    if (!c.marker.empty() && !absl::StrContains(explanation, c.marker)) {
      continue;
    }
    if (c.marker.empty() && !reason.has_value()) {
      // Only the payload's reason picks these: "cancelled", say, is too
      // short to find in free text.
      if (!(c.reason == StopReason::kCancelled && explanation == "cancelled") &&
          !(c.reason == StopReason::kInvalidArgument &&
            absl::StrContains(explanation, "invalid options"))) {
        continue;
      }
    }
    advice.reason = c.reason;
    advice.why = std::string(c.why);
    advice.change = std::string(c.change);
    break;
  }
  if (advice.why.empty()) {
    advice.reason = reason.value_or(StopReason::kSuccess);
    advice.why = absl::StrCat("stubkit stopped (", ToString(advice.reason),
                              "): ", explanation);
    advice.change = "see docs/retry-semantics.md for this stop";
  }
  if (!explanation.empty()) {
    absl::StrAppend(&advice.why, " [stubkit said: ", explanation, "]");
  }
  return advice;
}

}  // namespace

std::string StopAdvice::ToString() const {
  std::string out = absl::StrCat("stopped: ", stubkit::ToString(reason));
  if (attempts >= 0) {
    absl::StrAppend(&out, ", after ", attempts,
                    attempts == 1 ? " attempt" : " attempts");
  }
  absl::StrAppend(&out, "\nwhy: ", why, "\nto change it: ", change, "\n");
  return out;
}

StopAdvice WhyNot(const absl::Status& status) {
  if (status.ok()) return Advise(StopReason::kSuccess, "", -1);
  const std::optional<RetrySummary> summary = GetRetrySummary(status);
  const std::optional<SummaryText> text = ParseSummaryText(status.message());
  if (!summary.has_value() && !text.has_value()) {
    StopAdvice advice;
    advice.why = absl::StrCat(
        internal::StatusCodeName(static_cast<int>(status.code())),
        " carries no stubkit summary: it did not come from a stubkit retry "
        "loop, which adds one to every status it returns");
    advice.change = "call through a stubkit client or RetryLoop";
    return advice;
  }
  std::optional<StopReason> reason;
  if (summary.has_value()) reason = summary->stop_reason;
  return Advise(
      reason, text.has_value() ? text->explanation : "",
      summary.has_value() ? summary->attempts : (text ? text->attempts : -1));
}

absl::StatusOr<StopAdvice> WhyNot(absl::string_view text) {
  std::optional<StopReason> reason;
  int attempts = -1;
  // absl::Status::ToString() prints the payload: "stop=<id> attempts=<n>".
  const size_t stop = text.find("stop=");
  if (stop != absl::string_view::npos) {
    absl::string_view id = text.substr(stop + 5);
    id = id.substr(0, id.find(' '));
    for (int i = 0; i <= static_cast<int>(StopReason::kServerRefused); ++i) {
      if (ToIdentifier(static_cast<StopReason>(i)) == id) {
        reason = static_cast<StopReason>(i);
      }
    }
  }
  const std::optional<SummaryText> summary = ParseSummaryText(text);
  if (!summary.has_value() && !reason.has_value()) {
    return absl::InvalidArgumentError(
        "WhyNot: the text holds no stubkit summary (a failed call's message "
        "ends in \"[stubkit: ...; N attempts over T]\")");
  }
  if (summary.has_value()) attempts = summary->attempts;
  return Advise(reason, summary.has_value() ? summary->explanation : "",
                attempts);
}

}  // namespace stubkit

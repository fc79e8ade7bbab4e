// Copyright 2026 The stubkit Authors.
//
// Randomized scenarios of the retry throttle's waiting mode: up to 40
// concurrent calls (async, and one sync call on the driver; unary calls,
// and server, client and bidi streams) share one throttle while a fake
// backend goes down once or twice and recovers. Fake
// clock and timer (SimScheduler), no gRPC call, no real waiting. Each run
// is checked against sim_waiting_model.h and the call-level invariants.
//
//   build/tests/simulation/stubkit_waiting_simulation_test
//   STUBKIT_SIM_WAIT_SCENARIOS=5000 ...   # more (default 300)
//   STUBKIT_SIM_SEED=<n> ...              # replay one seed, with its trace

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/async_streaming.h"
#include "stubkit/internal/engine/async_stream_operation.h"
#include "stubkit/internal/engine/stream_retry.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/streaming.h"
#include "tests/simulation/sim_budget_model.h"
#include "tests/simulation/sim_fakes.h"
#include "tests/simulation/sim_seeds.h"
#include "tests/simulation/sim_waiting_model.h"

namespace stubkit {
namespace sim {

// The transport's RetryInfo payloads (defined by simulation_test.cc for
// its scripts): this suite's scripts carry none.
std::string SerializedStatusWithRetryInfo(InfoHint, int64_t) { return ""; }

namespace {

constexpr MethodInfo kGet{"sim.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};
constexpr MethodInfo kCreate{"sim.Service.Create", RpcKind::kUnary,
                             Idempotency::kNonIdempotent};

// Issue 40: the stream drivers wait in the throttle as unary calls do (a
// reopen is a retry). Their methods, idempotent or not, and resume hooks
// that are never set (the streams fail before their one message).
enum class WKind { kUnary, kServerStream, kClientStream, kBidiStream };
constexpr const char* kWKindNames[] = {"unary", "server stream",
                                       "client stream", "bidi stream"};
const MethodInfo& MethodOf(WKind kind, bool idempotent) {
  static constexpr MethodInfo kMethods[3][2] = {
      {{"sim.Service.Tail", RpcKind::kServerStreaming,
        Idempotency::kNonIdempotent},
       {"sim.Service.Tail", RpcKind::kServerStreaming,
        Idempotency::kIdempotent}},
      {{"sim.Service.Upload", RpcKind::kClientStreaming,
        Idempotency::kNonIdempotent},
       {"sim.Service.Upload", RpcKind::kClientStreaming,
        Idempotency::kIdempotent}},
      {{"sim.Service.Chat", RpcKind::kBidiStreaming,
        Idempotency::kNonIdempotent},
       {"sim.Service.Chat", RpcKind::kBidiStreaming,
        Idempotency::kIdempotent}}};
  if (kind == WKind::kUnary) return idempotent ? kGet : kCreate;
  return kMethods[static_cast<int>(kind) - 1][idempotent ? 1 : 0];
}
struct WResume {
  using Type = ResumeHook<Msg, Msg>;
  static Type Default() { return nullptr; }
};
struct WStreamResume {
  using Type = StreamResumeHook<Msg, Msg>;
  static Type Default() { return nullptr; }
};

struct WCall {
  int id = 0;
  bool sync = false;
  WKind kind = WKind::kUnary;
  milliseconds start{0};
  bool idempotent = true;
  bool count_policy = false;
  int max_retries = 3;
  milliseconds max_time{1800000};
  milliseconds total_timeout{0};  // 0: none
  milliseconds initial{100};
  bool cancel = false;
  milliseconds cancel_at{0};
  milliseconds latency{5};
};

// The backend's latency per attempt (issue 44): the call's own, constant;
// the hedging study's mixture (98 % in 1.5-2.5 ms, 2 % in 100-200 ms); a
// lognormal of median the call's latency and p99 10x it (capped at 20x);
// or the mixture whose tail grows with the attempts in flight (a queue).
enum class Backend { kConstant, kMixture, kLognormal, kQueueTail };
constexpr const char* kBackendNames[] = {"constant", "mixture", "lognormal",
                                         "tail grows with the queue"};

struct WScenario {
  uint64_t seed = 0;
  Backend backend = Backend::kConstant;
  double max_tokens = 10;
  double ratio = 0.1;
  milliseconds interval{1000};
  int probes = 1;
  double release_ratio = 0.5;
  bool adaptive = false;  // the release: kAdaptive, else kProportional
  // A RetryBudget shared by every call beside the throttle: a retry needs
  // both, and a waiting call the throttle lets go waits on until the
  // budget has a retry for it.
  bool budget = false;
  budget_model::Params budget_params;
  bool cancel_inline = true;
  // The timer may fire a wait (a throttle poll, a backoff) inside
  // `Schedule` (sim_fakes.h, FireInline); derived from the seed without
  // drawing from its generator, so that older seeds keep their scenarios.
  bool fire_inline = false;
  std::vector<std::pair<milliseconds, milliseconds>> outages;
  std::vector<WCall> calls;
};

WScenario Make(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto ms = [&](int lo, int hi) {
    return milliseconds(lo + pick(hi - lo + 1));
  };
  WScenario s;
  s.seed = seed;
  s.max_tokens = std::vector<double>{2, 4, 10, 2.5}[pick(4)];
  s.ratio = std::vector<double>{0.1, 0.5, 1}[pick(3)];
  s.interval = std::vector<milliseconds>{milliseconds(100), milliseconds(1000),
                                         milliseconds(5000)}[pick(3)];
  s.probes = 1 + pick(3);
  s.cancel_inline = pick(2) == 0;
  s.fire_inline = ((seed * 0x9E3779B97F4A7C15ull) >> 61) % 2 == 0;
  const milliseconds first = ms(0, 3000);
  const milliseconds length = ms(500, 40000);
  s.outages.push_back({first, first + length});
  if (pick(3) == 0) {
    const milliseconds second = s.outages[0].second + ms(200, 10000);
    s.outages.push_back({second, second + ms(500, 20000)});
  }
  const milliseconds horizon = s.outages.back().second + milliseconds(5000);
  const int n = 5 + pick(36);
  for (int i = 0; i < n; ++i) {
    WCall c;
    c.id = i;
    c.sync = i == 0 && pick(2) == 0;
    c.start = ms(0, static_cast<int>(horizon.count()));
    c.idempotent = pick(8) != 0;
    c.count_policy = pick(6) == 0;
    c.max_retries = 1 + pick(5);
    c.max_time = std::vector<milliseconds>{
        milliseconds(2000), milliseconds(15000), milliseconds(60000),
        milliseconds(1800000), milliseconds(1800000)}[pick(5)];
    if (pick(6) == 0) c.total_timeout = ms(500, 30000);
    c.initial = std::vector<milliseconds>{milliseconds(10), milliseconds(100),
                                          milliseconds(1000)}[pick(3)];
    if (pick(7) == 0) {
      c.cancel = true;
      c.cancel_at = c.start + ms(0, 20000);
    }
    c.latency = ms(1, 20);
    s.calls.push_back(c);
  }
  // Drawn last: the rest of each seed's scenario stays as it was.
  s.release_ratio = std::vector<double>{0.5, 0.75, 0.25, 1}[pick(4)];
  s.adaptive = pick(2) == 0;
  s.budget = pick(3) == 0;
  s.budget_params.ttl = std::vector<milliseconds>{
      milliseconds(100), milliseconds(2000), milliseconds(10000)}[pick(3)];
  s.budget_params.min_retries_per_second =
      std::vector<double>{0, 0.5, 5}[pick(3)];
  s.budget_params.percent_can_retry = std::vector<double>{0.1, 0.5, 1}[pick(3)];
  // Issue 40: about a third of the calls are streams, of each kind, drawn
  // from a generator of their own (the rest of the scenario stays).
  std::mt19937_64 kinds(seed * 0xBF58476D1CE4E5B9ull + 0x40);
  for (WCall& c : s.calls) {
    const int k = static_cast<int>(kinds() % 9);
    c.kind = k < 6 ? WKind::kUnary : static_cast<WKind>(k - 5);
  }
  // Issue 44: the backend's shape, from a generator of its own too.
  std::mt19937_64 shapes(seed * 0x94D049BB133111EBull + 0x44);
  s.backend = static_cast<Backend>(shapes() % 4);
  return s;
}

std::string Describe(const WScenario& s) {
  std::string out = absl::StrCat(
      "scenario ", s.seed, ": throttle(", s.max_tokens, ", ", s.ratio,
      ", interval ", s.interval.count(), " ms, probes ", s.probes,
      s.adaptive ? ", adaptive release"
                 : absl::StrCat(", release_ratio ", s.release_ratio),
      ")",
      s.budget ? absl::StrCat(", budget(", s.budget_params.ttl.count(), " ms, ",
                              s.budget_params.min_retries_per_second, "/s, ",
                              s.budget_params.percent_can_retry, ")")
               : std::string(),
      ", cancel ", s.cancel_inline ? "inline" : "deferred",
      s.fire_inline ? ", timer fires inline" : "", ", backend ",
      kBackendNames[static_cast<int>(s.backend)], "; outages");
  for (const auto& [from, to] : s.outages) {
    absl::StrAppend(&out, " [", from.count(), ", ", to.count(), ") ms");
  }
  absl::StrAppend(&out, "\n");
  for (const WCall& c : s.calls) {
    absl::StrAppend(
        &out, "  call ", c.id, c.sync ? " sync " : " async ",
        kWKindNames[static_cast<int>(c.kind)], " at ", c.start.count(), " ms",
        c.idempotent ? "" : " non-idempotent",
        c.count_policy ? absl::StrCat(" count(", c.max_retries, ")")
                       : absl::StrCat(" time(", c.max_time.count(), " ms)"),
        c.total_timeout.count() > 0
            ? absl::StrCat(" total ", c.total_timeout.count(), " ms")
            : "",
        " initial ", c.initial.count(), " ms, latency ", c.latency.count(),
        " ms",
        c.cancel ? absl::StrCat(", cancel at ", c.cancel_at.count(), " ms")
                 : "",
        "\n");
  }
  return out;
}

struct AttemptLog {
  TimePoint start;
  TimePoint end;
  bool admitted = false;  // left the throttle's wait for it
  bool down = false;      // the throttle said down when it started
  bool ok = false;
};

struct CallLog {
  std::vector<AttemptLog> attempts;
  std::vector<AttemptEvent> events;  // observer (status and method dropped)
  int completions = 0;
  TimePoint start;
  TimePoint end;
  absl::Status status;
  bool waited = false;  // some event had WaitReason::kThrottle
  // Streams: the messages read (server, bidi), the response (client).
  int messages = 0;
  int64_t response = -1;
};

std::map<std::string, int> g_coverage;

SimScheduler::Options SchedulerOptions(const WScenario& s) {
  SimScheduler::Options o;
  o.cancel_inline = s.cancel_inline;
  o.fire_inline = s.fire_inline;
  o.inline_prerun = false;  // its sync call starts in an event
  o.preempt_seed = s.seed;
  o.max_steps = 3000000;
  return o;
}

class Runner {
 public:
  explicit Runner(const WScenario& s)
      : s_(s),
        sched_(std::make_shared<SimScheduler>(SchedulerOptions(s))),
        transport_(std::make_unique<SimTransport>(sched_.get())) {
    RetryThrottle::WaitForRecovery waiting;
    waiting.probe_interval = s.interval;
    waiting.probes = s.probes;
    waiting.release_ratio = s.release_ratio;
    waiting.release =
        s.adaptive ? RetryThrottle::WaitForRecovery::Release::kAdaptive
                   : RetryThrottle::WaitForRecovery::Release::kProportional;
    throttle_ =
        std::make_shared<RetryThrottle>(RetryThrottle::Config()
                                            .WithMaxTokens(s.max_tokens)
                                            .WithTokenRatio(s.ratio)
                                            .WithWaitForRecovery(waiting));
    if (s.budget) {
      budget_ = std::make_shared<RetryBudget>(
          RetryBudget::Config()
              .WithTtl(s.budget_params.ttl)
              .WithMinRetriesPerSecond(s.budget_params.min_retries_per_second)
              .WithPercentCanRetry(s.budget_params.percent_can_retry));
    }
    t0_ = sched_->Now();
    logs_.resize(s.calls.size());
  }

  std::vector<std::string> Run() {
    for (const WCall& c : s_.calls) {
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
                        " ms", a.ok ? " OK" : " failed",
                        a.admitted ? (a.down ? " (probe)" : " (released)") : "",
                        "\n");
      }
    }
    return out;
  }

 private:
  int64_t Ms(TimePoint t) const {
    return std::chrono::duration_cast<milliseconds>(t - t0_).count();
  }
  bool Down(TimePoint t) const {
    for (const auto& [from, to] : s_.outages) {
      if (t >= t0_ + from && t < t0_ + to) return true;
    }
    return false;
  }

  Options CallOptions(const WCall& c) {
    Options o;
    o.set<ClockOption>(sched_)
        .set<SleeperOption>(sched_)
        .set<AsyncSleeperOption>(sched_)
        .set<RetryThrottleOption>(throttle_)
        .set<RetryBudgetOption>(budget_)
        .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                      .WithInitialDelay(c.initial)
                                      .WithMaximumDelay(milliseconds(5000))
                                      .WithMultiplier(2.0));
    if (c.count_policy) {
      o.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(c.max_retries));
    } else {
      o.set<RetryPolicyOption>(RetryPolicy::LimitedTime(c.max_time));
    }
    if (c.total_timeout.count() > 0) {
      o.set<TotalTimeoutOption>(c.total_timeout);
    }
    if (c.cancel) o.set<CancellationOption>(tokens_[c.id]);
    CallLog* log = &logs_[c.id];
    o.set<RetryObserverOption>([log](const AttemptEvent& e) {
      AttemptEvent copy = e;
      copy.method = {};
      if (e.wait_reason == WaitReason::kThrottle) log->waited = true;
      log->events.push_back(std::move(copy));
    });
    return o;
  }

  // The latency of attempt `index` of call `c`, of the scenario's backend:
  // drawn from a generator of the seed, call and attempt, so a run repeats.
  milliseconds Latency(const WCall& c, size_t index) {
    std::mt19937_64 rng(s_.seed ^ (static_cast<uint64_t>(c.id) << 32) ^
                        (index * 0x9E3779B97F4A7C15ull));
    std::uniform_real_distribution<double> unit(0, 1);
    const TimePoint now = sched_->Now();
    milliseconds latency = c.latency;
    switch (s_.backend) {
      case Backend::kConstant:
        break;
      case Backend::kMixture:
      case Backend::kQueueTail: {
        double tail = 0.02;
        if (s_.backend == Backend::kQueueTail) {
          const auto running = std::count_if(
              due_.begin(), due_.end(), [now](TimePoint t) { return t > now; });
          tail = std::min(0.6, tail + 0.05 * static_cast<double>(running));
        }
        latency =
            milliseconds(unit(rng) < tail ? 100 + rng() % 101 : 2 + rng() % 2);
        break;
      }
      case Backend::kLognormal: {
        std::lognormal_distribution<double> draw(
            std::log(static_cast<double>(c.latency.count())),
            std::log(10.0) / 2.326);
        latency = milliseconds(std::clamp<int64_t>(std::llround(draw(rng)), 1,
                                                   20 * c.latency.count()));
        break;
      }
    }
    due_.push_back(now + latency);
    return latency;
  }
  // The longest latency `Latency` can draw for `c`.
  nanoseconds Slowest(const WCall& c) const {
    switch (s_.backend) {
      case Backend::kConstant:
        return c.latency;
      case Backend::kLognormal:
        return 20 * c.latency;
      default:
        return milliseconds(200);
    }
  }

  // Begins an attempt: whether it left the throttle's wait is what the
  // observer said about the attempt before it.
  AttemptLog* Begin(int id) {
    CallLog& log = logs_[id];
    AttemptLog a;
    a.start = sched_->Now();
    a.admitted = !log.events.empty() &&
                 log.events.back().wait_reason == WaitReason::kThrottle;
    a.down = throttle_->down();
    log.attempts.push_back(a);
    return &log.attempts.back();
  }

  void Complete(int id, const absl::Status& status) {
    CallLog& log = logs_[id];
    ++log.completions;
    log.end = sched_->Now();
    log.status = status;
  }

  void StartCall(const WCall& c) {
    const MethodInfo& method = c.idempotent ? kGet : kCreate;
    logs_[c.id].start = sched_->Now();
    if (c.kind != WKind::kUnary) return StartStream(c);
    if (c.sync) {
      const Options call = CallOptions(c);
      const Options none;
      absl::StatusOr<int> r = RetryLoop<int>(
          method, OptionsView(call, none),
          [this, &c](grpc::ClientContext&) -> absl::StatusOr<int> {
            const size_t index = logs_[c.id].attempts.size();
            const bool fail = Down(Begin(c.id)->start);
            // The other calls run meanwhile.
            sched_->RunUntil(sched_->Now() + Latency(c, index), nullptr);
            AttemptLog& a = logs_[c.id].attempts[index];
            a.end = sched_->Now();
            a.ok = !fail;
            if (fail) return absl::UnavailableError("backend down");
            return 1;
          });
      Complete(c.id, r.status());
      return;
    }
    AsyncRetryLoop<int>(
        method, CallOptions(c), Options{},
        [this, &c](grpc::ClientContext&, const OptionsView&,
                   AsyncCallback<int> done) {
          const size_t index = logs_[c.id].attempts.size();
          const bool fail = Down(Begin(c.id)->start);
          sched_->PostAt(sched_->Now() + Latency(c, index), c.id,
                         [this, &c, index, fail, done] {
                           AttemptLog& a = logs_[c.id].attempts[index];
                           a.end = sched_->Now();
                           a.ok = !fail;
                           if (fail) {
                             done(absl::UnavailableError("backend down"));
                           } else {
                             done(1);
                           }
                         });
        },
        [this, &c](absl::StatusOr<int> r) { Complete(c.id, r.status()); });
  }

  // A stream over the simulated transport (sim_fakes.h): each attempt
  // fails UNAVAILABLE, before any message, when the backend is down as it
  // starts; otherwise it answers after the call's latency: one message and
  // OK (a server or bidi stream), or OK with the count of the writes (a
  // client stream, which writes one message).
  void StartStream(const WCall& c) {
    transport_->SetScriptSource(
        c.id,
        [this, &c](int) {
          AttemptScript script;
          const size_t index = logs_[c.id].attempts.size();
          script.kind = Down(Begin(c.id)->start) ? AttemptScript::Kind::kFail
                                                 : AttemptScript::Kind::kOk;
          script.code = grpc::StatusCode::UNAVAILABLE;
          script.latency = Latency(c, index);
          return script;
        },
        1);
    const MethodInfo& method = MethodOf(c.kind, c.idempotent);
    const Options call = CallOptions(c);
    const Options none;
    const OptionsView view(call, none);
    SimTransport* t = transport_.get();
    const int id = c.id;
    CallLog* log = &logs_[c.id];
    Msg start;
    start.set_value(0);
    auto on_message = [log](const Msg&) { ++log->messages; };
    auto on_done = [this, id](absl::Status status) { Complete(id, status); };
    switch (c.kind) {
      case WKind::kServerStream: {
        if (!c.sync) {
          internal::StartAsyncServerStream<WResume, Msg, Msg>(
              method, view, start,
              [t, id](grpc::ClientContext& context, const OptionsView&,
                      const Msg& request,
                      grpc::ClientReadReactor<Msg>* reactor) {
                return t->OpenAsync(id, context, request, reactor);
              },
              on_message, on_done);
          return;
        }
        StreamReader<Msg> reader =
            internal::OpenServerStream<WResume, Msg, Msg>(
                method, view, start,
                [t, id](grpc::ClientContext& context, const OptionsView&,
                        const Msg& request) {
                  return t->OpenSync(id, context, request);
                });
        Msg m;
        while (reader.Read(&m)) on_message(m);
        return on_done(reader.Finish());
      }
      case WKind::kClientStream: {
        if (!c.sync) {
          writers_.push_back(
              internal::StartAsyncClientStream<WStreamResume, Msg, Msg>(
                  method, view,
                  [t, id](grpc::ClientContext& context, const OptionsView&,
                          Msg* response,
                          grpc::ClientWriteReactor<Msg>* reactor) {
                    return t->OpenAsyncClient(id, context, response, reactor);
                  },
                  [log, on_done](absl::StatusOr<Msg> result) {
                    if (result.ok()) log->response = result->value();
                    on_done(result.status());
                  }));
          writers_.back().Write(start);
          writers_.back().WritesDone();
          return;
        }
        StreamWriter<Msg, Msg> writer =
            internal::OpenClientStream<WStreamResume, Msg, Msg>(
                method, view,
                [t, id](grpc::ClientContext& context, const OptionsView&,
                        Msg* response) {
                  return t->OpenSyncWriter(id, context, response);
                });
        writer.Write(start);
        writer.WritesDone();
        absl::StatusOr<Msg> result = writer.Finish();
        if (result.ok()) log->response = result->value();
        return on_done(result.status());
      }
      case WKind::kBidiStream: {
        if (!c.sync) {
          writers_.push_back(
              internal::StartAsyncBidiStream<WStreamResume, Msg, Msg>(
                  method, view,
                  [t, id](grpc::ClientContext& context, const OptionsView&,
                          grpc::ClientBidiReactor<Msg, Msg>* reactor) {
                    return t->OpenAsyncBidi(id, context, reactor);
                  },
                  on_message, on_done));
          writers_.back().Write(start);
          writers_.back().WritesDone();
          return;
        }
        StreamReaderWriter<Msg, Msg> stream =
            internal::OpenBidiStream<WStreamResume, Msg, Msg>(
                method, view,
                [t, id](grpc::ClientContext& context, const OptionsView&) {
                  return t->OpenSyncBidi(id, context);
                });
        stream.Write(start);
        stream.WritesDone();
        Msg m;
        while (stream.Read(&m)) on_message(m);
        return on_done(stream.Finish());
      }
      case WKind::kUnary:
        break;
    }
  }

  // A stream's attempts as the transport saw them end.
  void EndStreamAttempts(const WCall& c, std::vector<std::string>* v) {
    if (c.kind == WKind::kUnary) return;
    CallLog& l = logs_[c.id];
    const auto& records = transport_->attempts(c.id);
    if (records.size() != l.attempts.size()) {
      v->push_back(absl::StrCat("call ", c.id, ": ", records.size(),
                                " attempts sent, ", l.attempts.size(),
                                " logged"));
      return;
    }
    for (size_t i = 0; i < records.size(); ++i) {
      l.attempts[i].end = records[i]->ended ? records[i]->end : l.end;
      l.attempts[i].ok = records[i]->ended && records[i]->status.ok();
    }
  }

  std::vector<std::string> Check() {
    std::vector<std::string> v;
    for (const WCall& c : s_.calls) EndStreamAttempts(c, &v);
    auto fail = [&](int id, const std::string& what) {
      v.push_back(absl::StrCat("call ", id, ": ", what));
    };
    if (sched_->over_budget()) v.push_back("over the step budget");
    if (throttle_->waiters() != 0) {
      v.push_back(
          absl::StrCat(throttle_->waiters(), " waiters left in the throttle"));
    }
    std::vector<waiting_model::Admission> admissions;
    std::vector<TimePoint> fresh_successes;
    std::vector<TimePoint> waited_successes;
    std::vector<TimePoint> requests, retries;  // for the budget
    for (const WCall& c : s_.calls) {
      const CallLog& l = logs_[c.id];
      if (l.completions != 1) {
        fail(c.id, absl::StrCat(l.completions, " completions"));
        continue;
      }
      const auto summary = GetRetrySummary(l.status);
      const StopReason reason =
          l.status.ok()
              ? StopReason::kSuccess
              : (summary ? summary->stop_reason : StopReason::kInvalidArgument);
      const int attempts = static_cast<int>(l.attempts.size());
      if (!c.idempotent && attempts > 1) fail(c.id, "non-idempotent, retried");
      // A stream that ends OK delivered its one message (server, bidi) or
      // its response over its one write (client).
      if (l.status.ok() && c.kind != WKind::kUnary &&
          (c.kind == WKind::kClientStream ? l.response != 1
                                          : l.messages != 1)) {
        fail(c.id, absl::StrCat(kWKindNames[static_cast<int>(c.kind)],
                                " ended OK with ", l.messages,
                                " messages, response ", l.response));
      }
      if (c.kind != WKind::kUnary) {
        ++g_coverage[absl::StrCat(kWKindNames[static_cast<int>(c.kind)],
                                  l.waited ? ", waited" : "",
                                  l.status.ok() ? ", then OK" : "")];
      }
      if (!l.status.ok() && summary && summary->attempts != attempts) {
        fail(c.id, absl::StrCat(summary->attempts, " attempts reported, ",
                                attempts, " sent"));
      }
      for (size_t i = 0; i < l.attempts.size(); ++i) {
        const AttemptLog& a = l.attempts[i];
        if (i == 0) {
          requests.push_back(a.start);
        } else {
          // Withdrawn when the throttle let it go, else at the decision.
          retries.push_back(a.admitted ? a.start : l.attempts[i - 1].end);
        }
      }
      for (const AttemptLog& a : l.attempts) {
        if (a.admitted) admissions.push_back({a.start, a.down});
        if (a.start > l.end) fail(c.id, "attempt after the call ended");
      }
      if (l.status.ok() && !l.waited) {
        fresh_successes.push_back(l.attempts.back().end);
      }
      if (l.status.ok() && l.waited) {
        waited_successes.push_back(l.attempts.back().end);
      }
      // Never past the call's own end (an attempt started before it may
      // run its latency past it: the fake transport ignores deadlines).
      nanoseconds limit = nanoseconds::max();
      if (!c.count_policy) limit = c.max_time;
      if (c.total_timeout.count() > 0) {
        limit = std::min<nanoseconds>(limit, c.total_timeout);
      }
      // The longest attempt: a server or bidi stream's OK takes two
      // latencies (its message, then its end).
      const nanoseconds longest =
          c.kind == WKind::kServerStream || c.kind == WKind::kBidiStream
              ? 2 * Slowest(c)
              : Slowest(c);
      if (limit != nanoseconds::max() && l.end > l.start + limit + longest) {
        fail(c.id, absl::StrCat("ended at ", Ms(l.end), " ms, past its end at ",
                                Ms(l.start + limit), " ms"));
      }
      // Cancelled: ends CANCELLED, promptly (a sync call notices at the end
      // of its sleep: a poll or a backoff wait).
      if (c.cancel && l.end > t0_ + c.cancel_at + longest) {
        if (reason != StopReason::kCancelled) {
          fail(c.id,
               absl::StrCat("ended after its cancel, ", ToString(reason)));
        }
        const nanoseconds slack =
            c.sync ? std::max<nanoseconds>(s_.interval, milliseconds(5000))
                   : nanoseconds(0);
        if (l.end > t0_ + c.cancel_at + longest + slack) {
          fail(c.id, "cancel not prompt");
        }
      }
      // Liveness: a call with a long time limit and nothing else to stop it
      // succeeds, however long the outage.
      // (With a budget, a call it holds back for a whole window stops.)
      const bool budget_stop =
          budget_ != nullptr && reason == StopReason::kThrottled &&
          absl::StrContains(l.status.message(), "retry budget");
      if (c.idempotent && !c.cancel && !c.count_policy &&
          c.max_time >= milliseconds(1800000) && c.total_timeout.count() == 0 &&
          !l.status.ok() && !budget_stop) {
        fail(c.id, absl::StrCat("failed: ", l.status.ToString()));
      }
      if (c.count_policy && c.total_timeout.count() == 0 && !c.cancel &&
          c.idempotent && reason != StopReason::kSuccess &&
          reason != StopReason::kExhausted && !budget_stop) {
        fail(c.id, absl::StrCat("count policy ended ", ToString(reason)));
      }
      // Coverage.
      if (l.waited) {
        ++g_coverage[l.status.ok()
                         ? "waited, then OK"
                         : absl::StrCat("waited, then ", ToString(reason))];
        if (absl::StrContains(l.status.message(),
                              "retry budget had no retry")) {
          ++g_coverage["waited, the budget held a release back"];
        }
      }
    }
    waiting_model::Params p{s_.max_tokens, s_.interval, s_.probes,
                            s_.release_ratio, s_.adaptive};
    if (std::string e = waiting_model::CheckProbes(p, admissions); !e.empty()) {
      v.push_back(e);
    }
    if (std::string e = s_.adaptive ? waiting_model::CheckAdaptiveRelease(
                                          p, admissions, waited_successes)
                                    : waiting_model::CheckRelease(
                                          p, admissions, fresh_successes);
        !e.empty()) {
      v.push_back(e);
    }
    if (budget_ != nullptr) {
      if (std::string e =
              budget_model::Check(s_.budget_params, requests, retries);
          !e.empty()) {
        v.push_back(e);
      }
      ++g_coverage["scenario with a budget"];
    }
    for (const auto& a : admissions) {
      ++g_coverage[a.down        ? "probe"
                   : s_.adaptive ? "release (adaptive)"
                                 : "release (proportional)"];
      if (!a.down && s_.adaptive) {
        ++g_coverage[absl::StrCat("release (adaptive), backend ",
                                  kBackendNames[static_cast<int>(s_.backend)])];
      }
    }
    if (sched_->inline_fired() > 0) ++g_coverage["timer fired inside Schedule"];
    return v;
  }

  const WScenario& s_;
  std::shared_ptr<SimScheduler> sched_;
  std::shared_ptr<RetryThrottle> throttle_;
  std::shared_ptr<RetryBudget> budget_;      // null: none
  std::unique_ptr<SimTransport> transport_;  // the streams'
  std::vector<AsyncStreamWriter<Msg>> writers_;
  TimePoint t0_;
  std::vector<CallLog> logs_;
  std::vector<TimePoint> due_;  // when each attempt answers
  std::map<int, std::shared_ptr<CancellationToken>> tokens_;
};

TEST(WaitingSimulation, ManyCallsShareOneThrottle) {
  const SeedSuite suite{
      "STUBKIT_SIM_WAIT_SCENARIOS",
      300,
      "stubkit_waiting_simulation_test",
      {"waited, then OK", "waited, then retry throttled",
       "waited, then cancelled", "waited, then retry policy exhausted", "probe",
       "release (adaptive)", "release (proportional)", "scenario with a budget",
       "waited, the budget held a release back", "timer fired inside Schedule",
       "server stream, waited, then OK", "client stream, waited, then OK",
       "bidi stream, waited, then OK", "release (adaptive), backend constant",
       "release (adaptive), backend mixture",
       "release (adaptive), backend lognormal",
       "release (adaptive), backend tail grows with the queue"}};
  RunSeeds<Runner>(suite, Make, Describe, g_coverage);
}

}  // namespace
}  // namespace sim
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// Scenarios: everything one simulated run does, drawn from a seed.
//
// A scenario has one foreground call of any kind and up to three background
// async calls (async unary, hedged async, async stream, async awaiter) that
// share a retry throttle with it when the scenario has one, and a retry
// budget (`ExtendBudget`, issue 29) likewise. Issue 22's
// dimensions (page ranges, awaiters, clients built from a method table or a
// service config, an inline-firing timer) are drawn by `Extend`. Each call has
// its options, a script per attempt, and maybe a cancellation (token at a
// random moment, `StreamReader::Cancel()`, or an observer that cancels from
// inside its callback). `Describe()` prints it for a failing seed.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_SCENARIO_H_
#define STUBKIT_TESTS_SIMULATION_SIM_SCENARIO_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "stubkit/backoff_policy.h"
#include "tests/simulation/sim_fakes.h"
#include "tests/simulation/sim_pending.h"

namespace stubkit {
namespace sim {

enum class CallKind {
  kSync,
  kAsync,
  kHedgedSync,
  kHedgedAsync,
  kStream,       // sync server stream
  kAsyncStream,  // async server stream
  // Issue 22's dimensions (drawn by Generator::Extend).
  kPageRange,   // a PageRange over a scripted list server, sync fetches
  kAwait,       // a sync awaiter (PollOperation) over a scripted operation
  kAsyncAwait,  // an async awaiter (AsyncAwaitOperation)
  // Issue 40's stream drivers (the StreamDrivers test, AsStreamDriver):
  // client and bidi streams, sync and async.
  kClientStream,
  kAsyncClientStream,
  kBidiStream,
  kAsyncBidiStream,
};

inline const char* KindName(CallKind k) {
  switch (k) {
    case CallKind::kSync:
      return "sync";
    case CallKind::kAsync:
      return "async";
    case CallKind::kHedgedSync:
      return "hedged-sync";
    case CallKind::kHedgedAsync:
      return "hedged-async";
    case CallKind::kStream:
      return "stream";
    case CallKind::kAsyncStream:
      return "async-stream";
    case CallKind::kPageRange:
      return "page-range";
    case CallKind::kAwait:
      return "await";
    case CallKind::kAsyncAwait:
      return "async-await";
    case CallKind::kClientStream:
      return "client-stream";
    case CallKind::kAsyncClientStream:
      return "async-client-stream";
    case CallKind::kBidiStream:
      return "bidi-stream";
    case CallKind::kAsyncBidiStream:
      return "async-bidi-stream";
  }
  return "?";
}
// Client and bidi streams: the caller writes, and a reopen replays.
inline bool IsWriteStream(CallKind k) {
  return k == CallKind::kClientStream || k == CallKind::kAsyncClientStream ||
         k == CallKind::kBidiStream || k == CallKind::kAsyncBidiStream;
}
inline bool IsClientStream(CallKind k) {
  return k == CallKind::kClientStream || k == CallKind::kAsyncClientStream;
}
inline bool IsStream(CallKind k) {
  return k == CallKind::kStream || k == CallKind::kAsyncStream ||
         IsWriteStream(k);
}
// Streams whose attempt timeout bounds only the wait for the first
// response (the establishment timer); a client stream's bounds its whole
// attempt, as a unary call's (stream_retry.h, ResumableStream).
inline bool BoundsEstablishment(CallKind k) {
  return IsStream(k) && !IsClientStream(k);
}
inline bool IsHedgedKind(CallKind k) {
  return k == CallKind::kHedgedSync || k == CallKind::kHedgedAsync;
}
inline bool IsAwaitKind(CallKind k) {
  return k == CallKind::kAwait || k == CallKind::kAsyncAwait;
}
// Completes on the thread that cancels: a token's cancel must end it at
// that fake moment.
inline bool IsAsyncKind(CallKind k) {
  return k == CallKind::kAsync || k == CallKind::kHedgedAsync ||
         k == CallKind::kAsyncStream || k == CallKind::kAsyncAwait ||
         k == CallKind::kAsyncClientStream || k == CallKind::kAsyncBidiStream;
}

// How the call's client gets its per-method and per-service layers.
enum class Built {
  kDirect,         // OptionsView's layers, set directly
  kTable,          // MethodOptionsOption, resolved by MethodOptionsTable
  kTypo,           // as kTable, plus a hand-written key naming no method
  kServiceConfig,  // a service config's JSON, ServiceConfig::ToOptions()
};

// One page of the scripted list server. Page 0 answers the request's token
// (""), page k the token "t<k>".
struct PageScript {
  int items = 0;           // item values 100 * page + 1 ..
  std::string next_token;  // "" ends the listing
};

enum class CancelKind { kNone, kToken, kReader, kReaderBeforeRead, kObserver };

struct CallSpec {
  int id = 0;
  CallKind kind = CallKind::kSync;
  milliseconds start_at{0};  // background calls start later
  // Retry policy.
  bool count_policy = false;
  int max_retries = 3;           // count policy
  milliseconds max_time{30000};  // time policy
  std::vector<grpc::StatusCode> retryable{grpc::StatusCode::UNAVAILABLE};
  // Backoff.
  milliseconds initial{100};
  milliseconds maximum{5000};
  double multiplier = 2.0;
  Jitter::Kind jitter = Jitter::Kind::kUpToInitialDelay;
  double fraction = 0.2;
  // Timeouts.
  milliseconds attempt_timeout{0};
  milliseconds total_timeout{0};
  bool deadline = false;
  milliseconds deadline_in{0};  // negative: already past
  // Idempotency: 0 unset (method default), 1 idempotent, 2 not.
  int idempotency_option = 0;
  bool method_idempotent = true;
  bool hints = true;
  bool use_throttle = false;
  bool use_budget = false;  // the scenario's RetryBudget, in the call's layer
  // Issue 28 (ExtendIncoming): the call serves an incoming call, as
  // `IncomingCall::options()` makes it: the incoming request's attempt
  // number (IncomingAttemptOption, call layer; 0: unset), what a retried
  // request's downstream call does (NestedRetryOption: -1 unset, i.e.
  // kNever; else the enum's value), and the least useful attempt time
  // (MinAttemptTimeOption; 0: unset). The inherited deadline and cancel are
  // the `deadline` and `cancel` above.
  int incoming_attempt = 0;
  int nested = -1;
  milliseconds min_attempt{0};
  // Hedging.
  int hedge_max_attempts = 3;
  milliseconds hedge_delay{50};
  std::vector<grpc::StatusCode> non_fatal{grpc::StatusCode::UNAVAILABLE};
  // Streams.
  bool resume_hook = false;
  bool hook_refuses = false;
  int stream_total = 5;
  // Client and bidi streams: the caller's writes. The first (value 0)
  // tells the bidi server where to start; the others (1001, 1002, ...)
  // only travel, and are replayed.
  int writes = 1;
  // Cancellation.
  CancelKind cancel = CancelKind::kNone;
  milliseconds cancel_at{0};
  // A token cancel instead comes right after a `Schedule` that fired its
  // wait inline returns, when the call began a newer wait meanwhile.
  bool cancel_after_inline = false;
  std::vector<AttemptScript> scripts;
  // Where each option goes among the call's, the method's, the service's and
  // the client's layers, with decoys below it that it must override
  // (simulation_test.cc, Place). Derived from the scenario's seed without
  // drawing from its generator, so that older seeds keep their scenarios.
  uint64_t layer_seed = 0;

  // How its client is built (Built above). A service config holds the
  // retry policy, the backoff and (time-limited policies) the timeout in
  // an entry for the method (level 0), its service (1) or the default
  // entry (2), with decoys in less specific entries, and maybe entries for
  // methods the client lacks (sim.Sim.Unknown, and an Operations method
  // the awaiters' client lacks).
  Built built = Built::kDirect;
  int config_level = 0;
  bool config_decoys = false;
  bool config_unknown = false;

  // Page ranges.
  std::vector<PageScript> pages;
  int repeat_at = -1;  // the page whose next token repeats one sent before

  // Awaiters: the operation is done at the `done_after`-th successful poll
  // (0: the starting call returns it done; -1: never), with an error when
  // `op_fails`.
  int done_after = -1;
  bool op_fails = false;
  milliseconds poll_initial{100};
  milliseconds poll_maximum{1000};  // nanoseconds::max() when poll_huge
  bool poll_huge = false;
  double poll_multiplier = 2.0;
  milliseconds poll_limit{5000};
  bool cancel_operation = false;
  // Async: the connection drops the starting call's callback without
  // calling it; the awaiter's future must still become ready (item 13).
  bool drop_start = false;

  bool idempotent() const {
    if (idempotency_option == 1) return true;
    if (idempotency_option == 2) return false;
    // An imported entry with a retry policy is the service owner's word
    // that the method may be repeated (as under gRPC).
    if (built == Built::kServiceConfig) return true;
    // A stream's resume hook declares it idempotent, unless an
    // IdempotencyOption says otherwise (handled above).
    if (IsStream(kind) && resume_hook) return true;
    return method_idempotent;
  }
  bool hedged() const {
    return IsHedgedKind(kind) && idempotent() && hedge_max_attempts > 1;
  }
  // The retries NestedRetryOption leaves a retry loop; -1: no such limit.
  // Hedged calls do not read it (stubkit/hedging.h).
  int nested_max_retries() const {
    if (incoming_attempt <= 1) return -1;
    switch (nested) {
      case 0:  // kAsUsual
        return -1;
      case 1:  // kOnce
        return 1;
      default:  // kNever, the default
        return 0;
    }
  }
};

struct Scenario {
  uint64_t seed = 0;
  bool cancel_inline = true;
  bool preempt = false;
  bool throttle = false;
  double throttle_max = 4;
  double throttle_ratio = 0.5;
  // A shared RetryBudget (issue 29), drawn by ExtendBudget.
  bool budget = false;
  milliseconds budget_ttl{10000};
  double budget_rate = 10;
  double budget_percent = 0.2;
  // The timer may fire a wait inside `Schedule`, before it returns, and
  // run what is due then (allowed by clock.h's contract).
  bool fire_inline = false;
  std::vector<CallSpec> calls;  // calls[0] is the foreground call
};

// Trace text only: abseil already names every code (gRPC's match absl's).
inline std::string CodeName(grpc::StatusCode c) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(c));
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  Scenario Make(uint64_t seed) {
    Scenario s;
    s.seed = seed;
    s.cancel_inline = Chance(0.5);
    s.preempt = Chance(0.5);
    s.throttle = Chance(0.4);
    s.throttle_max = Pick<double>({2, 3, 4, 10});
    s.throttle_ratio = Pick<double>({0.1, 0.5, 1.0});
    const int calls = 1 + (Chance(0.5) ? Int(0, 3) : 0);
    for (int i = 0; i < calls; ++i) {
      CallKind kind =
          i == 0
              ? Pick<CallKind>({CallKind::kSync, CallKind::kAsync,
                                CallKind::kHedgedSync, CallKind::kHedgedAsync,
                                CallKind::kStream, CallKind::kAsyncStream})
              : Pick<CallKind>({CallKind::kAsync, CallKind::kHedgedAsync,
                                CallKind::kAsyncStream});
      s.calls.push_back(MakeCall(i, kind, s.throttle));
      s.calls.back().layer_seed = seed * 0x9E3779B97F4A7C15ull + i + 1;
    }
    // An outage: every call fails alike at first, at the same moments, and
    // drains a small shared throttle together.
    if (calls > 1 && Chance(0.2)) {
      s.throttle = true;
      s.throttle_max = Pick<double>({2, 3, 4});
      const milliseconds latency = Latency();
      const int failing = Int(1, 3);
      for (CallSpec& c : s.calls) {
        c.use_throttle = true;
        c.start_at = milliseconds(0);
        for (int a = 0; a < failing && a < static_cast<int>(c.scripts.size());
             ++a) {
          c.scripts[a].kind = AttemptScript::Kind::kFail;
          c.scripts[a].code = grpc::StatusCode::UNAVAILABLE;
          c.scripts[a].latency = latency;
          c.scripts[a].messages = 0;
        }
      }
    }
    Extend(s);
    ExtendBudget(s);
    ExtendIncoming(s);
    return s;
  }

 private:
  // Issue 28: calls made while serving an incoming call. The incoming
  // request may itself be a retry; the call may carry NestedRetryOption and
  // MinAttemptTimeOption; and the incoming call's deadline and cancel reach
  // it as two more drawn inputs (a deadline that is often short, a token).
  // Unary, hedged and stream calls only: a page range or an awaiter runs its
  // own loops. A generator of its own, as in Extend.
  void ExtendIncoming(Scenario& s) {
    rng_ = std::mt19937_64(s.seed * 0xE7037ED1A0B428DBull + 0x28);
    for (CallSpec& c : s.calls) {
      const bool kind = c.kind == CallKind::kSync ||
                        c.kind == CallKind::kAsync || IsHedgedKind(c.kind) ||
                        IsStream(c.kind);
      if (!kind || !Chance(0.3)) continue;
      c.incoming_attempt = Pick<int>({1, 2, 2, 3, 5});
      c.nested = Int(-1, 2);
      if (Chance(0.6)) {
        c.min_attempt = milliseconds(Pick<int>({1, 20, 100, 700, 3000}));
      }
      if (!c.deadline && Chance(0.5)) {
        c.deadline = true;
        c.deadline_in = milliseconds(Pick<int>({150, 1000, 4000}));
      }
      if (c.cancel == CancelKind::kNone && Chance(0.15)) {
        c.cancel = CancelKind::kToken;
        c.cancel_at = milliseconds(Pick<int>({0, 10, 60, 500, 2000}));
      }
    }
  }

  // Issue 29: a retry budget shared by the unary and stream calls that
  // draw it, with windows from a few milliseconds (the scenario's times
  // slide them) to longer than any scenario, and allowances from none but
  // the share of the requests to more than any scenario spends. A generator
  // of its own, as in Extend.
  void ExtendBudget(Scenario& s) {
    rng_ = std::mt19937_64(s.seed * 0xA0761D6478BD642Full + 0x29);
    s.budget = Chance(0.35);
    s.budget_ttl = milliseconds(Pick<int>({5, 50, 300, 2000, 10000}));
    s.budget_rate = Pick<double>({0, 1, 20, 500});
    s.budget_percent = Pick<double>({0, 0.25, 0.5, 1});
    if (s.budget_rate == 0 && s.budget_percent == 0) s.budget_percent = 0.5;
    for (CallSpec& c : s.calls) {
      const bool kind = c.kind == CallKind::kSync ||
                        c.kind == CallKind::kAsync || IsHedgedKind(c.kind) ||
                        IsStream(c.kind);
      c.use_budget = s.budget && kind && Chance(0.85);
    }
  }

  // Issue 22's dimensions: an inline-firing timer, page ranges, awaiters and
  // clients built from a method table or a service config. Drawn from a
  // generator of their own after the rest, so that a seed's older draws
  // stay what they were wherever these leave a call alone.
  void Extend(Scenario& s) {
    rng_ = std::mt19937_64(s.seed * 0xD1B54A32D192ED03ull + 0x22);
    s.fire_inline = Chance(0.3);
    // Answers at once make the next attempt fail, and a newer wait begin,
    // while the fired wait's `Schedule` has not returned yet.
    const bool instant = s.fire_inline && Chance(0.8);
    for (CallSpec& c : s.calls) {
      c.cancel_after_inline = s.fire_inline && Chance(0.5);
      if (c.cancel_after_inline && c.cancel == CancelKind::kNone) {
        c.cancel = CancelKind::kToken;
        c.cancel_at = milliseconds(1800000);  // unless after an inline fire
      }
      for (AttemptScript& a : c.scripts) {
        if (instant && a.kind == AttemptScript::Kind::kFail && Chance(0.7)) {
          a.latency = milliseconds(0);
        }
      }
      const int k = Int(0, 19);
      if (c.id == 0 && k < 2) {
        MakeRange(c);
      } else if (c.id == 0 && k < 4) {
        MakeAwait(c, Chance(0.5) ? CallKind::kAwait : CallKind::kAsyncAwait);
      } else if (c.id != 0 && k < 3) {
        MakeAwait(c, CallKind::kAsyncAwait);
      }
      const int b = Int(0, 99);
      c.built = b < 55   ? Built::kDirect
                : b < 75 ? Built::kTable
                : b < 77 ? Built::kTypo
                         : Built::kServiceConfig;
      c.config_level = Int(0, 2);
      c.config_decoys = Chance(0.5);
      c.config_unknown = Chance(0.5) && ImportedUnknownMethodsOn();
      if (c.built == Built::kServiceConfig) FitServiceConfig(c);
    }
  }

  // What a service config can say: Jitter::Full, maxAttempts 2 to 5, and a
  // time-limited policy bounded by the entry's timeout (30 minutes without
  // one), which is then also the call's total timeout.
  void FitServiceConfig(CallSpec& c) {
    c.jitter = Jitter::Kind::kFull;
    if (c.count_policy) {
      c.max_retries = std::clamp(c.max_retries, 1, 4);  // maxAttempts 2..5
    } else if (c.max_time != milliseconds(1800000)) {
      if (c.total_timeout.count() <= 0 || c.total_timeout > c.max_time) {
        c.total_timeout = c.max_time;  // the entry's timeout
      }
    }
  }

  void MakeRange(CallSpec& c) {
    c.kind = CallKind::kPageRange;
    const int n = Int(1, 6);
    c.pages.clear();
    for (int p = 0; p < n; ++p) {
      PageScript page;
      page.items = Chance(0.3) ? 0 : Int(1, 3);
      page.next_token = p + 1 < n ? absl::StrCat("t", p + 1) : "";
      c.pages.push_back(page);
    }
    c.repeat_at = -1;
    if (n > 1 && Chance(0.35)) {
      // A page from 1 on names a token already sent: its own, or an
      // earlier one (a cycle).
      c.repeat_at = Int(1, n - 1);
      c.pages[c.repeat_at].next_token = absl::StrCat("t", Int(1, c.repeat_at));
      if (!RepeatedPageTokensOn()) {  // sim_pending.h
        c.pages[c.repeat_at].next_token =
            c.repeat_at + 1 < n ? absl::StrCat("t", c.repeat_at + 1) : "";
        c.repeat_at = -1;
      }
    }
    if (c.cancel == CancelKind::kObserver || c.cancel == CancelKind::kReader ||
        c.cancel == CancelKind::kReaderBeforeRead) {
      c.cancel = CancelKind::kToken;
    }
  }

  void MakeAwait(CallSpec& c, CallKind kind) {
    c.kind = kind;
    c.done_after = Chance(0.25) ? -1 : Int(0, 6);
    c.op_fails = Chance(0.3);
    c.poll_initial = milliseconds(Pick<int>({10, 100, 1000}));
    c.poll_maximum = c.poll_initial * Pick<int>({1, 4, 50});
    c.poll_multiplier = Pick<double>({1.0, 2.0});
    c.poll_limit = milliseconds(Pick<int>({500, 3000, 20000, 60000}));
    // At most about 100 polls.
    if (c.poll_limit / c.poll_maximum > 100) {
      c.poll_maximum = c.poll_limit / 100;
      c.poll_initial = std::min(c.poll_initial, c.poll_maximum);
    }
    c.poll_huge = Chance(0.15);
    c.cancel_operation = Chance(0.5);
    c.drop_start = kind == CallKind::kAsyncAwait && Chance(0.05);
    // The polls' own options: no deadline (the polling policy bounds them;
    // a total timeout bounds each poll), no hangs (a poll at the limit is one
    // attempt with no deadline), cancels by a token.
    c.deadline = false;
    for (AttemptScript& s : c.scripts) {
      if (s.kind == AttemptScript::Kind::kHang) {
        s.kind = AttemptScript::Kind::kFail;
      }
      s.messages = 0;
    }
    if (Chance(0.5)) {
      for (AttemptScript& s : c.scripts) s.kind = AttemptScript::Kind::kOk;
    }
    if (c.cancel != CancelKind::kNone) c.cancel = CancelKind::kToken;
  }

  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  int Int(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  template <typename T>
  T Pick(std::initializer_list<T> items) {
    auto it = items.begin();
    std::advance(it, Int(0, static_cast<int>(items.size()) - 1));
    return *it;
  }
  grpc::StatusCode AnyCode() {
    return static_cast<grpc::StatusCode>(Int(1, 16));
  }
  milliseconds Latency() {
    // Few distinct values, so that events of different calls often tie.
    return milliseconds(Pick<int>({0, 10, 10, 20, 50, 100, 300, 1000, 5000}));
  }

  CallSpec MakeCall(int id, CallKind kind, bool throttle) {
    CallSpec c;
    c.id = id;
    c.kind = kind;
    c.start_at =
        id == 0 ? milliseconds(0) : milliseconds(Pick<int>({0, 10, 20}));
    c.count_policy = Chance(0.5);
    c.max_retries = Int(0, 5);
    c.max_time = milliseconds(Pick<int>({200, 1000, 5000, 30000, 1800000}));
    c.retryable = {grpc::StatusCode::UNAVAILABLE};
    if (Chance(0.4)) {
      for (int n = Int(1, 3); n > 0; --n) c.retryable.push_back(AnyCode());
    }
    c.initial = milliseconds(Pick<int>({1, 10, 100, 1000}));
    c.maximum = c.initial * Pick<int>({1, 5, 50, 300});
    c.multiplier = Pick<double>({1.0, 1.5, 2.0, 3.0});
    c.jitter = Pick<Jitter::Kind>(
        {Jitter::Kind::kUpToInitialDelay, Jitter::Kind::kFull,
         Jitter::Kind::kProportional, Jitter::Kind::kNone});
    c.fraction = Pick<double>({0.1, 0.2, 0.5, 1.0});
    // Keep a time-limited call to a few hundred waits.
    if (!c.count_policy && c.max_time / c.maximum > 300) {
      c.maximum = c.max_time / 300;
      c.initial = std::min(c.initial, c.maximum);
    }
    c.idempotency_option = Pick<int>({0, 0, 1, 1, 2});
    c.method_idempotent = !Chance(0.25);
    c.hints = !Chance(0.2);
    c.use_throttle = throttle;
    if (Chance(0.35)) {
      c.attempt_timeout = milliseconds(Pick<int>({5, 30, 100, 1000}));
    }
    if (Chance(0.25)) {
      c.total_timeout = milliseconds(Pick<int>({50, 500, 3000, 20000}));
    }
    if (Chance(0.2)) {
      c.deadline = true;
      c.deadline_in = milliseconds(Pick<int>({1000, 4000, 15000}));
      if (Chance(0.2)) c.deadline_in = milliseconds(-1000);
    }
    c.hedge_max_attempts = Int(1, 4);
    c.hedge_delay = milliseconds(Pick<int>({0, 10, 50, 500}));
    c.non_fatal = {grpc::StatusCode::UNAVAILABLE};
    if (Chance(0.3)) c.non_fatal.push_back(AnyCode());
    c.resume_hook = Chance(0.6);
    c.hook_refuses = Chance(0.1);
    c.stream_total = Int(1, 8);

    // Cancellation.
    int cancel = Int(0, 9);
    if (cancel < 2) {
      c.cancel = CancelKind::kToken;
    } else if (cancel < 3) {
      c.cancel = CancelKind::kObserver;
    } else if (cancel < 4 && kind == CallKind::kStream) {
      c.cancel =
          Chance(0.3) ? CancelKind::kReaderBeforeRead : CancelKind::kReader;
    }
    c.cancel_at = milliseconds(Pick<int>({0, 5, 10, 60, 500, 2000, 20000}));

    // Scripts.
    const int attempts = Int(1, 7);
    bool unbounded_hang = false;
    bool hang_after_data = false;
    for (int a = 0; a < attempts; ++a) {
      AttemptScript s;
      int k = Int(0, 9);
      s.kind = k < 2   ? AttemptScript::Kind::kOk
               : k < 9 ? AttemptScript::Kind::kFail
                       : AttemptScript::Kind::kHang;
      s.code = Chance(0.6) ? grpc::StatusCode::UNAVAILABLE : AnyCode();
      s.latency = Latency();
      if (IsStream(kind)) {
        s.latency = milliseconds(Pick<int>({0, 10, 100, 1000, 60000}));
        s.messages = Chance(0.5) ? 0 : Int(1, 4);
      }
      if (Chance(0.3)) {
        int h = Int(0, 9);
        s.pushback = h < 6   ? Hint::kValid
                     : h < 7 ? Hint::kNegative
                     : h < 8 ? Hint::kGarbage
                             : Hint::kHuge;
        s.pushback_ms = Pick<int>({0, 1, 40, 700, 1500, 90000});
      }
      if (Chance(0.3)) {
        int h = Int(0, 9);
        s.retry_info = h < 6   ? InfoHint::kValid
                       : h < 7 ? InfoHint::kMalformed
                       : h < 8 ? InfoHint::kOversized
                               : InfoHint::kHuge;
        s.retry_info_ms = Pick<int>({0, 3, 40, 1500, 90000});
      }
      if (s.kind == AttemptScript::Kind::kHang) {
        // The attempt timeout bounds a stream only until its first message
        // (RetryLoopState::BoundEstablishment): past it, a quiet stream is
        // a healthy one.
        if (IsStream(kind) && s.messages > 0) {
          hang_after_data = true;
        } else {
          unbounded_hang = true;
        }
      }
      c.scripts.push_back(s);
    }
    // A hang must end somehow: an attempt timeout, a deadline, or a cancel.
    if ((hang_after_data ||
         (unbounded_hang && c.attempt_timeout == milliseconds(0))) &&
        c.total_timeout == milliseconds(0) && !c.deadline &&
        c.cancel != CancelKind::kToken && c.cancel != CancelKind::kReader) {
      c.cancel = CancelKind::kToken;
      c.cancel_at = milliseconds(Pick<int>({10, 500, 20000}));
    }
    return c;
  }

  std::mt19937_64 rng_;
};

// Issue 40: the stream drivers. The scenario of a seed whose foreground
// call is a server stream, run through `driver` instead (a server, client
// or bidi stream, sync or async), with every background async server
// stream run through the async driver of the same family. The scripts
// stay: a bidi stream answers as the server stream would (from the value
// of its first write), a client stream answers once, at its script's end,
// so its scripts lose their messages. The writes come from a generator of
// their own, so that the scenario's other draws stay those of the seed.
// False: the seed's foreground call is no server stream.
inline bool AsStreamDriver(Scenario& s, CallKind driver) {
  if (!IsStream(driver) || s.calls.empty() || !IsStream(s.calls[0].kind)) {
    return false;
  }
  const bool client = IsClientStream(driver);
  const bool bidi = IsWriteStream(driver) && !client;
  const CallKind async_kind = client ? CallKind::kAsyncClientStream
                              : bidi ? CallKind::kAsyncBidiStream
                                     : CallKind::kAsyncStream;
  std::mt19937_64 rng(s.seed * 0x94D049BB133111EBull + 0x40);
  for (CallSpec& c : s.calls) {
    if (!IsStream(c.kind)) continue;
    c.kind = c.id == 0 ? driver : async_kind;
    c.writes = std::uniform_int_distribution<int>(1, 3)(rng);
    if (IsAsyncKind(c.kind) && (c.cancel == CancelKind::kReader ||
                                c.cancel == CancelKind::kReaderBeforeRead)) {
      c.cancel = CancelKind::kToken;  // an async handle's Cancel(): the same
    }
    if (!client) continue;
    for (AttemptScript& a : c.scripts) a.messages = 0;
  }
  return true;
}

inline std::string Describe(const CallSpec& c) {
  std::string out = absl::StrCat(
      "  call ", c.id, " ", KindName(c.kind), " start+", c.start_at.count(),
      "ms ",
      c.count_policy ? absl::StrCat("count(", c.max_retries, ")")
                     : absl::StrCat("time(", c.max_time.count(), "ms)"),
      " codes{");
  for (auto code : c.retryable) absl::StrAppend(&out, CodeName(code), " ");
  absl::StrAppend(
      &out, "} backoff(", c.initial.count(), "ms,", c.maximum.count(), "ms,x",
      c.multiplier, ",jitter", static_cast<int>(c.jitter), ",f", c.fraction,
      ")", " attempt_to=", c.attempt_timeout.count(),
      " total_to=", c.total_timeout.count(),
      c.deadline ? absl::StrCat(" deadline_in=", c.deadline_in.count()) : "",
      " idem_opt=", c.idempotency_option, " method_idem=", c.method_idempotent,
      " hints=", c.hints, " throttle=", c.use_throttle,
      " budget=", c.use_budget);
  if (c.incoming_attempt != 0 || c.nested != -1 || c.min_attempt.count() != 0) {
    absl::StrAppend(&out, " incoming(attempt ", c.incoming_attempt, ", nested ",
                    c.nested, ", min_attempt ", c.min_attempt.count(), "ms)");
  }
  if (IsHedgedKind(c.kind)) {
    absl::StrAppend(&out, " hedge(", c.hedge_max_attempts, ",",
                    c.hedge_delay.count(), "ms) nonfatal{");
    for (auto code : c.non_fatal) absl::StrAppend(&out, CodeName(code), " ");
    absl::StrAppend(&out, "}");
  }
  if (IsStream(c.kind)) {
    absl::StrAppend(&out, " total_msgs=", c.stream_total,
                    " hook=", c.resume_hook, " refuses=", c.hook_refuses);
  }
  if (IsWriteStream(c.kind)) absl::StrAppend(&out, " writes=", c.writes);
  if (c.kind == CallKind::kPageRange) {
    absl::StrAppend(&out, " pages{");
    for (const PageScript& p : c.pages) {
      absl::StrAppend(&out, p.items, "->\"", p.next_token, "\" ");
    }
    absl::StrAppend(&out, "} repeat_at=", c.repeat_at);
  }
  if (IsAwaitKind(c.kind)) {
    absl::StrAppend(
        &out, " op(done_after=", c.done_after, " fails=", c.op_fails,
        ") polling(", c.poll_initial.count(), "ms,",
        c.poll_huge ? "max" : absl::StrCat(c.poll_maximum.count(), "ms"), ",x",
        c.poll_multiplier, ",limit ", c.poll_limit.count(),
        "ms) cancel_op=", c.cancel_operation,
        c.drop_start ? " drop_start" : "");
  }
  absl::StrAppend(&out, " built=", static_cast<int>(c.built));
  if (c.cancel_after_inline) absl::StrAppend(&out, " cancel_after_inline");
  if (c.built == Built::kServiceConfig) {
    absl::StrAppend(&out, "(level ", c.config_level,
                    " decoys=", c.config_decoys, " unknown=", c.config_unknown,
                    ")");
  }
  absl::StrAppend(&out, " cancel=", static_cast<int>(c.cancel), "@",
                  c.cancel_at.count(), "ms layers=", c.layer_seed, "\n");
  for (size_t i = 0; i < c.scripts.size(); ++i) {
    const AttemptScript& s = c.scripts[i];
    absl::StrAppend(&out, "    attempt ", i + 1, ": ",
                    s.kind == AttemptScript::Kind::kOk     ? "OK"
                    : s.kind == AttemptScript::Kind::kFail ? CodeName(s.code)
                                                           : "HANG",
                    " after ", s.latency.count(), "ms msgs=", s.messages,
                    " pushback=", static_cast<int>(s.pushback), "/",
                    s.pushback_ms,
                    " retry_info=", static_cast<int>(s.retry_info), "/",
                    s.retry_info_ms, "\n");
  }
  return out;
}

inline std::string Describe(const Scenario& s) {
  std::string out = absl::StrCat(
      "scenario seed ", s.seed, ": cancel_inline=", s.cancel_inline,
      " preempt=", s.preempt, " fire_inline=", s.fire_inline,
      " throttle=", s.throttle, "(", s.throttle_max, ",", s.throttle_ratio,
      ") budget=", s.budget, "(", s.budget_ttl.count(), "ms,", s.budget_rate,
      "/s,", s.budget_percent, ")\n");
  for (const CallSpec& c : s.calls) absl::StrAppend(&out, Describe(c));
  return out;
}

}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_SCENARIO_H_

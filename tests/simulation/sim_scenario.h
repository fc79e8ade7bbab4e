// Copyright 2026 The stubkit Authors.
//
// Scenarios: everything one simulated run does, drawn from a seed.
//
// A scenario has one foreground call of any kind and up to three background
// async calls (async unary, hedged async, async stream) that share a retry
// throttle with it when the scenario has one. Each call has its options, a
// script per attempt, and maybe a cancellation (token at a random moment,
// `StreamReader::Cancel()`, or an observer that cancels from inside its
// callback). `Describe()` prints it for a failing seed.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_SCENARIO_H_
#define STUBKIT_TESTS_SIMULATION_SIM_SCENARIO_H_

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "stubkit/backoff_policy.h"
#include "tests/simulation/sim_fakes.h"

namespace stubkit {
namespace sim {

enum class CallKind {
  kSync,
  kAsync,
  kHedgedSync,
  kHedgedAsync,
  kStream,       // sync server stream
  kAsyncStream,  // async server stream
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
  }
  return "?";
}
inline bool IsStream(CallKind k) {
  return k == CallKind::kStream || k == CallKind::kAsyncStream;
}
inline bool IsHedgedKind(CallKind k) {
  return k == CallKind::kHedgedSync || k == CallKind::kHedgedAsync;
}

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
  Jitter::Kind jitter = Jitter::Kind::kDefault;
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
  // Hedging.
  int hedge_max_attempts = 3;
  milliseconds hedge_delay{50};
  std::vector<grpc::StatusCode> non_fatal{grpc::StatusCode::UNAVAILABLE};
  // Streams.
  bool resume_hook = false;
  bool hook_refuses = false;
  int stream_total = 5;
  // Cancellation.
  CancelKind cancel = CancelKind::kNone;
  milliseconds cancel_at{0};
  std::vector<AttemptScript> scripts;
  // Where each option goes among the call's, the method's, the service's and
  // the client's layers, with decoys below it that it must override
  // (simulation_test.cc, Place). Derived from the scenario's seed without
  // drawing from its generator, so that older seeds keep their scenarios.
  uint64_t layer_seed = 0;

  bool idempotent() const {
    if (idempotency_option == 1) return true;
    if (idempotency_option == 2) return false;
    return method_idempotent;
  }
  bool hedged() const {
    return IsHedgedKind(kind) && idempotent() && hedge_max_attempts > 1;
  }
};

struct Scenario {
  uint64_t seed = 0;
  bool cancel_inline = true;
  bool preempt = false;
  bool throttle = false;
  double throttle_max = 4;
  double throttle_ratio = 0.5;
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
    return s;
  }

 private:
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
    c.jitter =
        Pick<Jitter::Kind>({Jitter::Kind::kDefault, Jitter::Kind::kFull,
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
      if (s.kind == AttemptScript::Kind::kHang) unbounded_hang = true;
      c.scripts.push_back(s);
    }
    // A hang must end somehow: an attempt timeout, a deadline, or a cancel.
    if (unbounded_hang && c.attempt_timeout == milliseconds(0) &&
        c.total_timeout == milliseconds(0) && !c.deadline &&
        c.cancel != CancelKind::kToken && c.cancel != CancelKind::kReader) {
      c.cancel = CancelKind::kToken;
      c.cancel_at = milliseconds(Pick<int>({10, 500, 20000}));
    }
    return c;
  }

  std::mt19937_64 rng_;
};

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
      " hints=", c.hints, " throttle=", c.use_throttle);
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
      " preempt=", s.preempt, " throttle=", s.throttle, "(", s.throttle_max,
      ",", s.throttle_ratio, ")\n");
  for (const CallSpec& c : s.calls) absl::StrAppend(&out, Describe(c));
  return out;
}

}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_SCENARIO_H_

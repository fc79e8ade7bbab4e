// Copyright 2026 The stubkit Authors.
//
// The executable model of the spec: what the retry loop may do after one
// failed attempt. Written from /work/shared/DESIGN.md ("Defaults", "Retry
// decision, per failed attempt", the jitter table) and the hint rules of
// issue 11 (hints replace the backoff, the longer of two wins, a hint above
// the ceiling or a refusing pushback stops with kServerRefused, nothing extends
// the call's end). It calls nothing of the code under test.
//
// Where the spec leaves an order open (several stop conditions at once) or
// the simulation cannot know a value exactly (the wall-clock deadline is
// mapped onto the fake clock at the call's start, a few microseconds of real
// time later), the model returns every allowed outcome instead of one.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_MODEL_H_
#define STUBKIT_TESTS_SIMULATION_SIM_MODEL_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "stubkit/status.h"
#include "tests/simulation/sim_fakes.h"
#include "tests/simulation/sim_scenario.h"

namespace stubkit {
namespace sim {
namespace model {

// The spec's default ceiling on honoured server hints (issue 11, item 9).
constexpr nanoseconds kHintCeiling = std::chrono::minutes(5);
// The deadline option is a wall-clock time: its image on the fake clock may
// come early by the real time between setting it and the call's start.
constexpr nanoseconds kDeadlineSlack = milliseconds(50);

struct Interval {
  nanoseconds lo{0};
  nanoseconds hi{0};
};

// The k-th (from 0) backoff wait, per DESIGN.md's jitter table.
inline Interval Backoff(const CallSpec& c, int k) {
  const double initial = static_cast<double>(nanoseconds(c.initial).count());
  const double maximum = static_cast<double>(nanoseconds(c.maximum).count());
  const double base = std::min(initial * std::pow(c.multiplier, k), maximum);
  double lo = base, hi = base;
  switch (c.jitter) {
    case Jitter::Kind::kUpToInitialDelay:  // min(base + U[0, initial], maximum)
      lo = base;
      hi = std::min(base + initial, maximum);
      break;
    case Jitter::Kind::kFull:  // U[0, base]
      lo = 0;
      hi = base;
      break;
    case Jitter::Kind::kProportional:  // base * U[1-f, 1+f], capped
      lo = std::min(base * (1 - c.fraction), maximum);
      hi = std::min(base * (1 + c.fraction), maximum);
      break;
    case Jitter::Kind::kNone:
      break;
    case Jitter::Kind::kGrpc:  // exact first, then base * U[0.8, 1.2]
      lo = k == 0 ? initial : base * 0.8;
      hi = k == 0 ? initial : base * 1.2;
      break;
  }
  // Rounding to whole nanoseconds.
  return {nanoseconds(static_cast<int64_t>(lo)) - nanoseconds(2),
          nanoseconds(static_cast<int64_t>(hi)) + nanoseconds(2)};
}

struct Hints {
  bool refuse = false;  // negative or unparseable pushback
  bool present = false;
  nanoseconds delay{0};  // the longer valid hint
  bool pushback_valid = false;
  bool retry_info_valid = false;
  nanoseconds pushback{0};
  nanoseconds retry_info{0};
};

inline Hints ReadHints(const AttemptScript& s) {
  Hints h;
  switch (s.pushback) {
    case Hint::kValid:
      h.pushback_valid = true;
      h.pushback = milliseconds(s.pushback_ms);
      break;
    case Hint::kHuge:  // 999999999999999999 ms, beyond any ceiling
      h.pushback_valid = true;
      h.pushback = nanoseconds::max();
      break;
    case Hint::kNegative:
    case Hint::kGarbage:
      h.refuse = true;
      break;
    case Hint::kNone:
      break;
  }
  switch (s.retry_info) {
    case InfoHint::kValid:
      h.retry_info_valid = true;
      h.retry_info = milliseconds(s.retry_info_ms);
      break;
    case InfoHint::kHuge:  // 10^9 s
      h.retry_info_valid = true;
      h.retry_info = std::chrono::seconds(1000000000);
      break;
    case InfoHint::kMalformed:
    case InfoHint::kOversized:
    case InfoHint::kNone:
      break;
  }
  h.present = h.pushback_valid || h.retry_info_valid;
  h.delay = std::max(h.pushback_valid ? h.pushback : nanoseconds(0),
                     h.retry_info_valid ? h.retry_info : nanoseconds(0));
  return h;
}

// A stopping point of the call and the reason it gives.
struct End {
  TimePoint lo;  // earliest the code may place it
  TimePoint hi;
  StopReason reason;
};

struct Decision {
  bool may_continue = true;
  bool may_stop = false;
  std::set<StopReason> reasons;  // allowed when stopping
  Interval wait;                 // when continuing
  std::string why;               // what the model applied, for reports
  // The wait is the server's: the backoff restarts after it (gRFC A6).
  bool hinted = false;
};

struct Inputs {
  const CallSpec* spec;
  const AttemptRecord* attempt;
  int k;                  // retried failures before this one (window)
  std::vector<End> ends;  // policy time (window, kExhausted), total, deadline
  bool throttle_refuses;  // see ThrottleRefuses
  // A stream attempt is not bounded by the retry policy's time limit
  // (RetryLoopState::UseStreamDeadlines: the policy bounds how long stubkit
  // keeps reopening it); its deadline is min(total timeout, deadline,
  // attempt timeout).
  bool stream;
  // The backoff's position: retried failures since the last wait the
  // server chose (gRFC A6: the backoff restarts after it); -1: `k`.
  int backoff_k = -1;
};

inline bool Retryable(const CallSpec& c, grpc::StatusCode code) {
  return std::find(c.retryable.begin(), c.retryable.end(), code) !=
         c.retryable.end();
}

// After failed attempt `in.attempt` (not cancelled by the caller).
inline Decision Decide(const Inputs& in) {
  const CallSpec& c = *in.spec;
  const AttemptRecord& a = *in.attempt;
  const TimePoint now = a.end;
  const grpc::StatusCode code = a.status.error_code();
  Decision d;
  auto stop = [&](StopReason reason, const std::string& why) {
    d.may_stop = true;
    d.reasons.insert(reason);
    if (!d.why.empty()) d.why += "; ";
    d.why += why;
  };
  auto must_stop = [&](StopReason reason, const std::string& why) {
    stop(reason, why);
    d.may_continue = false;
  };
  TimePoint end_lo = TimePoint::max(), end_hi = TimePoint::max();
  for (const End& e : in.ends) {
    end_lo = std::min(end_lo, e.lo);
    end_hi = std::min(end_hi, e.hi);
  }
  auto end_reasons = [&](const std::string& why) {
    for (const End& e : in.ends) {
      if (e.lo <= end_hi) stop(e.reason, why);
    }
  };

  // A server's DEADLINE_EXCEEDED that arrives within the loop's tolerance
  // of the attempt's deadline (a tenth of the attempt's budget, clamped to
  // 2..50 ms; retry_loop.cc, ReachedDeadline) is indistinguishable from the
  // deadline itself: anything goes. The model's attempt start is the fake
  // clock's; 1 ms more covers the loop reading it a moment apart.
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED && !a.by_deadline &&
      a.deadline != TimePoint::max() &&
      AddSat(now, std::clamp<nanoseconds>((a.deadline - a.start) / 10,
                                          milliseconds(2), milliseconds(50)) +
                      milliseconds(1)) >= a.deadline) {
    d.may_continue = true;
    for (StopReason r :
         {StopReason::kPermanentError, StopReason::kNonIdempotent,
          StopReason::kExhausted, StopReason::kDeadline, StopReason::kThrottled,
          StopReason::kServerRefused}) {
      stop(r, "ambiguous DEADLINE_EXCEEDED");
    }
    d.wait = {nanoseconds(0), nanoseconds::max()};
    return d;
  }
  // An attempt that ran out of its own time is retryable; one that ran
  // into the call's end ends the call. Which ends bound the attempt: all of
  // them for unary calls, all but the policy's time for streams.
  TimePoint bound_lo = TimePoint::max(), bound_hi = TimePoint::max();
  for (const End& e : in.ends) {
    if (in.stream && e.reason == StopReason::kExhausted) continue;
    bound_lo = std::min(bound_lo, e.lo);
    bound_hi = std::min(bound_hi, e.hi);
  }
  bool own_timeout = false;
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED && a.by_deadline) {
    if (a.deadline < bound_lo) {
      own_timeout = true;
      // A stream attempt's own deadline that is the policy's end (the
      // attempt timeout ran out just when the policy did) is the call's
      // end, as for a unary attempt whose deadline is that end
      // (RetryLoopState::OnFailure: "attempt_deadline_ == end_"). One that
      // ran past the policy's end is an own timeout like any other: the
      // decision table's order applies (idempotency before the policy).
      for (const End& e : in.ends) {
        if (!in.stream || e.reason != StopReason::kExhausted) continue;
        if (e.lo <= now && now <= e.hi) {
          stop(e.reason, "the attempt's deadline is the policy's end");
          if (e.lo == e.hi) {
            d.may_continue = false;
            return d;
          }
          // Within the window's uncertainty: either, as below.
        }
      }
    } else {
      // The ends it may have hit, and any end already passed (the spec does
      // not order several stop conditions at once).
      for (const End& e : in.ends) {
        const bool bounds = !in.stream || e.reason != StopReason::kExhausted;
        if ((bounds && e.lo <= bound_hi) || e.lo <= now) {
          stop(e.reason, "the attempt ran into the call's end");
        }
      }
      if (a.deadline >= bound_hi) {
        d.may_continue = false;
        return d;
      }
      own_timeout = true;  // ambiguous: either
    }
  }
  // 1. Permanent errors.
  if (!own_timeout && !Retryable(c, code)) {
    must_stop(StopReason::kPermanentError, "code not retryable");
    return d;
  }
  // 2. Idempotency.
  if (!c.idempotent()) {
    must_stop(StopReason::kNonIdempotent, "not idempotent");
    return d;
  }
  // 3. The policy (count, then time), the throttle.
  if (c.count_policy && in.k + 1 > c.max_retries) {
    must_stop(StopReason::kExhausted, "count policy exhausted");
  }
  // A request that is itself a retry upstream (issue 28): the downstream
  // call retries at most NestedRetryOption's count.
  if (c.nested_max_retries() >= 0 && in.k + 1 > c.nested_max_retries()) {
    must_stop(StopReason::kExhausted, "retry at one layer");
  }
  if (now >= end_hi) {
    end_reasons("the call's end passed");
    d.may_continue = false;
  } else if (now >= end_lo) {
    end_reasons("the call's end may have passed");
  }
  if (in.throttle_refuses) must_stop(StopReason::kThrottled, "throttle");
  // 4. The wait: the server's hint in place of the backoff.
  // Hints come with a server's answer; a deadline or a cancel has none.
  Hints h = a.by_deadline || a.by_cancel ? Hints{} : ReadHints(a.script);
  Interval backoff = Backoff(c, in.backoff_k >= 0 ? in.backoff_k : in.k);
  d.wait = backoff;
  if (c.hints) {
    if (h.refuse) must_stop(StopReason::kServerRefused, "pushback says stop");
    if (h.present) {
      if (h.delay > kHintCeiling) {
        must_stop(StopReason::kServerRefused, "hint above the ceiling");
      }
      d.wait = {h.delay, h.delay};
      d.hinted = true;
    }
  }
  // Never wait past the call's end.
  // (Checked even when another rule already stops the call: the spec does
  // not order them, so either reason is right.)
  if (end_hi != TimePoint::max()) {
    const nanoseconds room_hi = end_hi - now;
    const nanoseconds room_lo = end_lo - now;
    if (d.wait.lo >= room_hi) {
      end_reasons("the wait would pass the call's end");
      d.may_continue = false;
    } else if (d.wait.hi >= room_lo) {
      end_reasons("the wait may pass the call's end");
    }
  }
  // Nor leave the next attempt less than its least useful time
  // (MinAttemptTimeOption, issue 28) before the ends that bound it.
  const nanoseconds min_attempt = c.min_attempt;
  if (min_attempt > nanoseconds(0) && bound_hi != TimePoint::max()) {
    const nanoseconds room_hi = bound_hi - now - min_attempt;
    const nanoseconds room_lo = bound_lo - now - min_attempt;
    auto bound_reasons = [&](const std::string& why) {
      for (const End& e : in.ends) {
        if (in.stream && e.reason == StopReason::kExhausted) continue;
        if (e.lo <= bound_hi) stop(e.reason, why);
      }
    };
    if (d.wait.lo > room_hi) {
      bound_reasons("less than the minimum attempt time would be left");
      d.may_continue = false;
    } else if (d.wait.hi > room_lo) {
      bound_reasons("less than the minimum attempt time may be left");
    }
  }
  return d;
}

// The throttle step, kept apart because it needs the bucket's size: true
// when the bucket, after this failure took its token, no longer allows a
// retry.
inline bool ThrottleRefuses(int64_t milli_before, int64_t max_milli) {
  const int64_t next = std::max<int64_t>(0, milli_before - 1000);
  return !(next * 2 > max_milli);
}

}  // namespace model
}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_MODEL_H_

// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_throttle.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/base/process_random.h"

namespace stubkit {

RetryThrottle::RetryThrottle(double max_tokens, double token_ratio)
    : RetryThrottle(
          Config().WithMaxTokens(max_tokens).WithTokenRatio(token_ratio)) {}

RetryThrottle::RetryThrottle(double max_tokens, double token_ratio,
                             WaitForRecovery waiting)
    : RetryThrottle(Config()
                        .WithMaxTokens(max_tokens)
                        .WithTokenRatio(token_ratio)
                        .WithWaitForRecovery(waiting)) {}

RetryThrottle::RetryThrottle(const Config& config)
    : max_milli_(0), ratio_milli_(0), milli_tokens_(0) {
  const double max_tokens = config.max_tokens();
  const double token_ratio = config.token_ratio();
  if (!(max_tokens > 0 && max_tokens <= 1000)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle: max_tokens must be in (0, 1000], got ", max_tokens));
    return;
  }
  if (!(token_ratio > 0 && token_ratio <= max_tokens)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle: token_ratio must be in (0, max_tokens], got ",
        token_ratio));
    return;
  }
  max_milli_ = std::llround(max_tokens * 1000);
  ratio_milli_ = std::max<int64_t>(1, std::llround(token_ratio * 1000));
  milli_tokens_.store(max_milli_);
  if (!config.wait_for_recovery()) return;
  const WaitForRecovery& waiting = *config.wait_for_recovery();
  if (!(waiting.probe_interval > std::chrono::nanoseconds::zero() &&
        waiting.probe_interval <= std::chrono::hours(1))) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: probe_interval must be in (0, 1h], "
        "got ",
        internal::FormatDuration(waiting.probe_interval)));
    return;
  }
  if (!(waiting.probes >= 1 && waiting.probes <= 1000)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: probes must be in [1, 1000], got ",
        waiting.probes));
    return;
  }
  if (!(waiting.release_ratio > 0 && waiting.release_ratio <= 1)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: release_ratio must be in (0, 1], "
        "got ",
        waiting.release_ratio));
    return;
  }
  if (waiting.release != WaitForRecovery::Release::kAdaptive &&
      waiting.release != WaitForRecovery::Release::kProportional) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: release must be kAdaptive or "
        "kProportional, got ",
        static_cast<int>(waiting.release)));
    return;
  }
  waiting_ = true;
  wait_options_ = waiting;
  // Rounded up, so that no window of probe_interval holds more than
  // `probes`.
  probe_spacing_ =
      (waiting.probe_interval + std::chrono::nanoseconds(waiting.probes - 1)) /
      waiting.probes;
  // From the process's generator: a simulation's seeds replay the probes.
  random_.seed(static_cast<uint32_t>(internal::ProcessUniform01() * 0x1p32));
}

namespace {

// kAdaptive's multiplicative decrease, as CUBIC's (RFC 9438): a gentler cut
// than Reno's 0.5 keeps the pace nearer the spare capacity on average.
constexpr double kCut = 0.7;
// A queue building is an early signal, before anything fails: a gentle
// cut, as delay-based congestion control makes, keeps the server busy. A
// deep queue (the fastest recent answer k > 4.4 times the typical latency)
// cuts to 4/k of the pace, as far as kDeepQueueCut (as Gradient2 scales its
// limit by the ratio of two latencies): a queue that deep grew fast, and
// one gentle cut per round, a round being as long as its wait, would let it
// grow on until attempts time out.
constexpr double kQueueCut = 0.9;
constexpr double kDeepQueueCut = 0.5;
// The typical latency's step per probe interval, on a log scale: twice
// slower in 22 intervals (the least's window was 30-60), so that a queue
// standing for a few intervals is not taken for the backend's latency.
constexpr double kTypicalStep = 1.0 / 32;
// The highest pace: one admission per microsecond, beyond any backlog.
constexpr double kMaxPace = 1e-3;

// How many recent answers must all be slow to say a queue builds: the
// fewest k with tail_share^k under 1/1000 (2 for a steady backend or a 2 %
// tail, 5 for the lognormal), within [2, most]; one for a steady backend in
// slow start, whose pace doubles every interval.
int RunLength(double tail_share, bool slow_start, int most) {
  const int k = std::clamp(
      static_cast<int>(
          std::ceil(std::log(1e-3) / std::log(std::max(tail_share, 1e-3)))),
      2, most);
  return k == 2 && slow_start ? 1 : k;
}

// The fastest of the last `k` of `count` answers kept in the ring `recent`
// of `size`.
int64_t FastestOfLast(const int64_t* recent, int size, int64_t count, int k) {
  int64_t fastest = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < k; ++i) {
    fastest = std::min(fastest, recent[(count - i) % size]);
  }
  return fastest;
}

// A probe interval ended: the typical latency steps toward the side most
// of its `answers` were on (`votes`: above less below), and the tail's
// share moves an eighth of the way to the interval's (`slow` of them), both
// paced by time, not by answers; the counts start again.
void CloseInterval(int64_t* votes, int64_t* answers, int64_t* slow,
                   double* typical_log, double* tail_share) {
  *typical_log += *votes > 0 ? kTypicalStep : *votes < 0 ? -kTypicalStep : 0;
  *tail_share += (static_cast<double>(*slow) / static_cast<double>(*answers) -
                  *tail_share) /
                 8;
  *votes = 0;
  *answers = 0;
  *slow = 0;
}

// While learning, from the first `n` answers: the typical latency (log of
// their median) and the share over twice it, with a prior of one answer at
// 1/4 (few answers prove little).
void LearnFromFirst(const int64_t* first, int n, double* typical_log,
                    double* tail_share) {
  int64_t sorted[64];  // n is at most RetryThrottle's kFirst, 15
  n = std::min(n, 64);
  std::copy(first, first + n, sorted);
  std::nth_element(sorted, sorted + (n - 1) / 2, sorted + n);
  const int64_t median = sorted[(n - 1) / 2];
  *typical_log = std::log(static_cast<double>(median));
  const auto over = std::count_if(
      first, first + n, [median](int64_t l) { return l > 2 * median; });
  *tail_share = (static_cast<double>(over) + 0.25) / (n + 1);
}

}  // namespace

bool RetryThrottle::OnRetryableFailure() {
  return OnRetryableFailure(time_point::min(), time_point::min());
}

bool RetryThrottle::OnRetryableFailure(time_point attempt_start,
                                       time_point now) {
  int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::max<int64_t>(0, current - 1000);
  } while (!milli_tokens_.compare_exchange_weak(current, next,
                                                std::memory_order_relaxed));
  const bool allowed = next * 2 > max_milli_;
  if (!waiting_) return allowed;
  if (now != time_point::min()) {
    const int64_t at = now.time_since_epoch().count();
    int64_t newest = last_failure_at_.load(std::memory_order_relaxed);
    while (at > newest && !last_failure_at_.compare_exchange_weak(
                              newest, at, std::memory_order_relaxed)) {
    }
  }
  if (!allowed) {
    // A refused retry: the backend is down (again); the rate it proved
    // before goes.
    internal::MutexLock lock(&mu_);
    down_.store(true, std::memory_order_relaxed);
    window_start_ = time_point::min();
    window_fresh_ = 0;
    fresh_rate_ = 0;
    // The search starts again from the probe pace; slow start ends short
    // of where the pace stood.
    if (pace_ > 0) slow_start_end_ = std::max(pace_ * kCut, probe_pace());
    pace_ = 0;
    // The latencies of the last recovery say nothing of the next queue.
    recent_count_ = 0;
    return allowed;
  }
  if (adaptive() && attempt_start != time_point::min()) {
    // An overload answer while releasing: once per round, the pace gives
    // way to the new calls and the releases already sent.
    internal::MutexLock lock(&mu_);
    if (!down_.load(std::memory_order_relaxed) && pace_ > 0 &&
        attempt_start >= last_cut_) {
      pace_ = std::max(pace_ * kCut, probe_pace());
      slow_start_end_ = pace_;
      last_cut_ = now;
    }
  }
  return allowed;
}

void RetryThrottle::Recovered(bool fresh) {
  // Healthy and nobody waiting: the success path takes no lock.
  if (!down_.load(std::memory_order_relaxed) &&
      waiters_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  internal::MutexLock lock(&mu_);
  down_.store(false, std::memory_order_relaxed);
  if (fresh) ++window_fresh_;
}

void RetryThrottle::OnWaitedSuccess() {
  OnWaitedSuccess(time_point::min(), time_point::min(), time_point::max());
}

// kAdaptive's latency signal. A queue building delays every answer by the
// time it waits, the fastest ones too; a heavy tail (a slow disk, a garbage
// collection, a cache miss) makes a fraction of answers slow and leaves the
// rest as they were. So the signal is that the *fastest* of the last k
// released answers took more than twice the backend's typical latency. A
// queue makes it so after k answers; a tail that makes a share p of
// answers that slow does it by chance with odds p^k, so k is the fewest
// answers with p^k under 1/1000, p measured: 2 for a steady backend or a
// 2 % tail (the hedging study's), 5 for a lognormal whose p99 is 10x its
// p50, at most 8. A steady backend (k = 2) in slow start, whose pace
// doubles every interval, needs one: so for it this is the rule before,
// one slow answer in slow start, two in a row after it. (Twice the *least*
// latency, the rule before, sits below nearly every answer of that lognormal:
// the least of many samples of a heavy-tailed latency is far below its body.)
// The typical latency is a median: of the first 15 answers, then moved by 1/32
// (log scale) once per probe interval, up if more of the interval's answers
// were above it than below, else down. That settles on the median; a tail
// cannot drag it (a slow answer is one vote, however slow); and, paced by time
// rather than by answers, a queue building at many answers per second cannot
// drag it along either. p starts from the first 15 answers (with a prior of one
// at 1/4) and moves an eighth of the way to each interval's share of slow
// answers, not counting those a flagged queue made slow. The typical
// latency follows a lasting change of the backend (twice slower: in 22
// intervals, the pace being cut meanwhile, as the least's window of 30-60
// did). A single answer over twice the typical latency holds the pace
// (kSlow). An answer past half its attempt's time is slow too, whatever
// the typical latency: a queue may stand where the typical was never seen;
// two in a row (one in slow start) say a queue.
RetryThrottle::Answer RetryThrottle::Queueing(time_point attempt_start,
                                              time_point now,
                                              time_point attempt_deadline,
                                              double* cut) {
  *cut = kQueueCut;
  if (attempt_start == time_point::min() || now < attempt_start) {
    return Answer::kFast;
  }
  const int64_t latency = std::max<int64_t>(1, (now - attempt_start).count());
  const bool known = answers_ >= 3;
  const double typical = std::exp(typical_log_);
  recent_[answers_ % kRecent] = latency;
  recent_count_ = std::min(recent_count_ + 1, kRecent);
  // The fastest of the last k answers over twice the typical latency, k
  // the fewest whose all being that slow by chance (tail_share_^k) is under
  // 1/1000: 2 for a steady backend or a 2 % tail, 5 for the lognormal.
  const int k = RunLength(tail_share_, pace_ < slow_start_end_, kRecent);
  bool queue = false;
  if (known && recent_count_ >= k) {
    const double over =
        static_cast<double>(FastestOfLast(recent_, kRecent, answers_, k)) /
        typical;
    if (over > 2) {
      queue = true;
      *cut = std::clamp(4 / over, kDeepQueueCut, kQueueCut);
    }
  }
  const bool slow = known && static_cast<double>(latency) > 2 * typical;
  // The typical latency learns from this answer after judging it.
  if (answers_ < kFirst) {
    first_[answers_] = latency;
    LearnFromFirst(first_, static_cast<int>(answers_) + 1, &typical_log_,
                   &tail_share_);
    vote_start_ = now;
  } else {
    const double x = std::log(static_cast<double>(latency));
    votes_ += (x > typical_log_) - (x < typical_log_);
    ++interval_answers_;
    if (slow && !queue) ++interval_slow_;
    if (now - vote_start_ >= wait_options_.probe_interval) {
      CloseInterval(&votes_, &interval_answers_, &interval_slow_, &typical_log_,
                    &tail_share_);
      vote_start_ = now;
    }
  }
  ++answers_;
  const bool late =
      attempt_deadline != time_point::max() &&
      now - attempt_start > (attempt_deadline - attempt_start) / 2;
  const bool previous_late = previous_late_;
  previous_late_ = late;
  if (queue) return Answer::kQueue;
  if (late) {
    const bool slow_start = pace_ < slow_start_end_;
    return slow_start || previous_late ? Answer::kQueue : Answer::kSlow;
  }
  return slow ? Answer::kSlow : Answer::kFast;
}

void RetryThrottle::OnWaitedSuccess(time_point attempt_start, time_point now,
                                    time_point attempt_deadline) {
  if (waiting_ && adaptive()) {
    internal::MutexLock lock(&mu_);
    down_.store(false, std::memory_order_relaxed);
    double cut = kQueueCut;
    const Answer answer = Queueing(attempt_start, now, attempt_deadline, &cut);
    if (answer == Answer::kQueue) {
      // A slow answer: a queue is building. Once per round, as a failure.
      if (pace_ > 0 && attempt_start >= last_cut_) {
        // In slow start the pace may have doubled past the spare capacity
        // since the last good round: back to the pace before.
        const bool slow_start = pace_ < slow_start_end_;
        pace_ = std::max(pace_ * (slow_start ? 0.5 : cut), probe_pace());
        slow_start_end_ = pace_;
        last_cut_ = now;
        // The next cut wants answers of its own.
        recent_count_ = 0;
      }
    } else if (answer == Answer::kFast && pace_ > 0 &&
               waiters_.load(std::memory_order_relaxed) > 0) {
      // A release went through: the pace grows while calls still wait (a
      // pace not used is not proven, so it is not banked for a later
      // backlog).
      const double interval =
          static_cast<double>(wait_options_.probe_interval.count());
      pace_ += pace_ < slow_start_end_ ? 1 / interval
                                       : probe_pace() / (pace_ * interval);
      pace_ = std::min(pace_, kMaxPace);
    }
  } else if (waiting_) {
    Recovered(/*fresh=*/false);
  }
  Refill();
}

void RetryThrottle::BeginWait() {
  waiters_.fetch_add(1, std::memory_order_relaxed);
}

void RetryThrottle::EndWait() {
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

bool RetryThrottle::TryAdmit(time_point now) {
  return TryAdmit(now, [] { return true; });
}

bool RetryThrottle::TryAdmit(time_point now, absl::FunctionRef<bool()> also) {
  internal::MutexLock lock(&mu_);
  const bool down = down_.load(std::memory_order_relaxed);
  // What ReleaseSpacing may change, restored when `also` refuses.
  const time_point window_start = window_start_;
  const int64_t window_fresh = window_fresh_;
  const double fresh_rate = fresh_rate_;
  const double pace = pace_;
  const time_point last_cut = last_cut_;
  const std::chrono::nanoseconds spacing =
      down ? probe_spacing_ : ReleaseSpacing(now);
  if (last_admit_ != time_point::min() && now - last_admit_ < spacing) {
    return false;
  }
  // Down, and an attempt failed within the last spacing: the backend was
  // seen down more recently than a probe's spacing, so a probe would learn
  // nothing new.
  const int64_t newest = last_failure_at_.load(std::memory_order_relaxed);
  if (down && newest != std::numeric_limits<int64_t>::min() &&
      now.time_since_epoch().count() - newest < spacing.count()) {
    return false;
  }
  if (!also()) {
    window_start_ = window_start;
    window_fresh_ = window_fresh;
    fresh_rate_ = fresh_rate;
    pace_ = pace;
    last_cut_ = last_cut;
    return false;
  }
  last_admit_ = now;
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

std::chrono::nanoseconds RetryThrottle::ReleaseSpacing(time_point now) {
  using std::chrono::nanoseconds;
  if (window_start_ == time_point::min()) {
    // The first admission since the recovery opens R's window (successes
    // before it are not counted: fewer counted is safe for the bound) and
    // the adaptive search, at the probe pace.
    window_start_ = now;
    window_fresh_ = 0;
    if (adaptive()) {
      pace_ = probe_pace();
      last_cut_ = now;
    }
  } else if (!adaptive()) {
    // Measure R. Successes counted since window_start_ all lie in
    // [window_start_, now]; the window counts as at least probe_interval
    // long, so one early burst cannot make R large.
    const nanoseconds elapsed = std::max<nanoseconds>(
        now - window_start_, wait_options_.probe_interval);
    fresh_rate_ =
        std::max(fresh_rate_, static_cast<double>(window_fresh_) /
                                  static_cast<double>(elapsed.count()));
    if (now - window_start_ >= wait_options_.probe_interval) {
      window_start_ = now;
      window_fresh_ = 0;
    }
  }
  const double rate =
      adaptive() ? pace_ : wait_options_.release_ratio * fresh_rate_;
  // Rounded up (the pace never exceeds `rate`, but for a thousandth of a
  // nanosecond of float error); the probe pace is the floor.
  if (rate * static_cast<double>(probe_spacing_.count()) > 1) {
    return nanoseconds(static_cast<int64_t>(std::ceil(1 / rate - 1e-3)));
  }
  return probe_spacing_;
}

std::chrono::nanoseconds RetryThrottle::PollDelay() {
  const int64_t interval = wait_options_.probe_interval.count();
  internal::MutexLock lock(&mu_);
  std::uniform_int_distribution<int64_t> draw(interval / 2, interval);
  return std::chrono::nanoseconds(draw(random_));
}

void RetryThrottle::OnSuccess() {
  if (waiting_) Recovered(/*earns_credit=*/true);
  Refill();
}

void RetryThrottle::Refill() {
  int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  // The common case, a healthy backend, writes nothing.
  while (current < max_milli_) {
    int64_t next = std::min(max_milli_, current + ratio_milli_);
    if (milli_tokens_.compare_exchange_weak(current, next,
                                            std::memory_order_relaxed)) {
      return;
    }
  }
}

double RetryThrottle::release_pace() const {
  internal::MutexLock lock(&mu_);
  return pace_ * 1e9;
}

bool RetryThrottle::RetryAllowed() const {
  return milli_tokens_.load(std::memory_order_relaxed) * 2 > max_milli_;
}

double RetryThrottle::tokens() const {
  return milli_tokens_.load(std::memory_order_relaxed) / 1000.0;
}

}  // namespace stubkit

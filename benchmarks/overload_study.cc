// Copyright 2026 The stubkit Authors.
//
// The overload study (issue 29): retries can hold a server with finite
// capacity in overload after the trigger that overloaded it has gone
// (metastable failure); stubkit's admission controls are meant to let it
// recover.
//
//   overload_study --out benchmarks/results   # about 3.5 minutes, 24 runs
//   overload_study --smoke --out /tmp/ov      # a few seconds, sanity only
//
// Without --out it writes to $TEST_TMPDIR when set, else ".". --only a,b
// runs the variants named (for a quick look), --code the one queue-full
// code; --scale X changes the speed (at most 100), --queue N the queue's
// length and --probe-interval S the waiting throttle's (simulated seconds).
//
// The server, a real gRPC callback server on 127.0.0.1, has 20 workers and
// a FIFO queue of 200. A request holds a worker for 0.2 s (a timer, not
// CPU: one dispatcher thread finishes requests in time order), so its
// capacity C is 100 calls/s. A request that finds every worker busy waits
// in the queue; a full queue answers at once with UNAVAILABLE, or with
// RESOURCE_EXHAUSTED in the second scenario. A request is served even when
// its client has gone by the time it is finished (the attempt's deadline,
// read from the ServerContext, has passed, or the client cancelled it):
// that is wasted work. A full queue holds 2 s of work, more than an attempt
// may wait, which is what can keep the server busy with dead requests.
//
// 20 clients (a channel and connection each, one admission control each,
// as 20 client processes would have) offer L = 70 calls/s (70 % of C),
// spread evenly over time. Every call allows 4 attempts (3 retryable
// failures), retries UNAVAILABLE and RESOURCE_EXHAUSTED after 0.1 s
// doubling up to 1 s, gives each attempt 1 s (an attempt that times out is
// retried) and the call 60 s in all. One trigger per run, from 10 s to
// 20 s, then the same load for 60 s more:
//
//   outage         every request fails at once with UNAVAILABLE
//   capacity drop  6 of the 20 workers (30 % of C)
//
// Variants: naive (stubkit retries, no admission control), gRPC's own
// retries (the same policy as a service config on a raw stub, with
// perAttemptRecvTimeout for the attempt timeout), the token bucket
// (RetryThrottle, 10 tokens, 0.1 per success), the retry budget
// (RetryBudget: 20 %, 10 retries/s, a 10 s window; and sized for the
// fleet, as docs/throttling.md advises: 0.5 retries/s per client, so the 20
// clients' reserves add up to 10/s, a tenth of C), and the waiting
// throttle (WaitForRecovery, probe every 1 s) with the proportional release
// (kProportional, release_ratio 0.5) and with the adaptive one (kAdaptive,
// the default).
//
// Time is simulated: every duration is divided by --scale (10: a simulated
// second is 100 ms of real time), so a run's 80 s take 8 s.
//
// Per run: amplification during the trigger (attempts / calls offered in
// it), failed calls and those that failed with more than 0.5 s of their 60
// s left, the backlog B (calls started before the trigger's end and not yet
// ended then), the drain time (from the trigger's end until the backlog
// has ended and goodput is at least 90 % of the offered load over every
// 5 s window to the end of the load, its last 20 s at least), and the
// physical limit of that drain, B / (C - L): the spare capacity clearing
// the backlog, nothing wasted. A run whose goodput does not come back to
// stay is metastable.
//
// --server (issue 44) picks the service time: constant (the default, the
// control), mixture, lognormal, or changing (see Shape below); the others
// write overload_<server>.csv and overload_<server>_summary.md.
//
// Writes <out>/overload.csv (per run and simulated second: calls offered,
// attempts the server saw, calls that ended OK or failed, requests served
// for a client that had gone) and <out>/overload_summary.md, and prints
// the summary. Exits non-zero on figures that cannot be right (a call
// ended twice or never, requests unaccounted for), never on performance.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/study_output.h"
#include "stubkit/channel.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/status.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using Steady = std::chrono::steady_clock;

// The server's service time (--server; issue 44). Each keeps C near 100/s
// and its slowest requests under the 1 s attempt timeout, as an operator
// would set it:
//   constant   20 workers x 0.2 s (the control)
//   mixture    2 workers; the hedging study's mixture x 4: 98 % in 6-10 ms,
//              2 % in 0.4-0.8 s (mean 19.8 ms, C = 101/s)
//   lognormal  5 workers; median 30.7 ms, p99 = 10x p50 (mean 50 ms,
//              C = 100/s), capped at 0.9 s
//   changing   constant, but 16 of the 20 workers (C = 80/s) from 5 s to
//              20 s after the trigger's end: capacity changes during the
//              recovery
enum class Shape { kConstant, kMixture, kLognormal, kChanging };
const char* Name(Shape shape) {
  switch (shape) {
    case Shape::kMixture:
      return "mixture";
    case Shape::kLognormal:
      return "lognormal";
    case Shape::kChanging:
      return "changing";
    default:
      return "constant";
  }
}

// In simulated seconds, but for the counts.
struct Scenario {
  Shape shape = Shape::kConstant;
  double change_from = 5, change_to = 20;  // after the trigger's end
  double changed = 0.8;                    // the workers left meanwhile
  double scale = 10;                       // simulated seconds per real second
  int clients = 20;
  int workers = 20;
  double service = 0.2;  // a request holds a worker this long
  int queue = 200;
  double load = 0.7;  // offered calls / capacity
  double trigger_start = 10;
  double trigger_length = 10;
  double after = 60;           // the load goes on this long after it
  double degraded = 0.3;       // the workers left in a capacity drop
  double attempt_timeout = 1;  // each attempt's deadline
  double call_timeout = 60;    // the whole call's
  double backoff = 0.1;        // the first retry's delay; doubles up to 1 s
  double backoff_max = 1;
  double probe_interval = 1;  // the waiting throttle's
  // Goodput must stay back this long before the load ends to count as
  // recovered (a run that passes only its last windows has not).
  double sustain = 20;

  double capacity() const { return workers / mean_service(); }
  double mean_service() const {
    switch (shape) {
      case Shape::kMixture:
        return 4 * (0.98 * 0.002 + 0.02 * 0.150);
      case Shape::kLognormal:
        return 0.0307 * std::exp(0.5 * Sigma() * Sigma());
      default:
        return service;
    }
  }
  static double Sigma() { return std::log(10.0) / 2.326; }
  // A service time drawn for one request.
  double Draw(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> unit(0, 1);
    switch (shape) {
      case Shape::kMixture:
        return unit(rng) < 0.02 ? 0.4 + 0.4 * unit(rng)
                                : 0.006 + 0.004 * unit(rng);
      case Shape::kLognormal:
        return std::min(0.9, std::lognormal_distribution<double>(
                                 std::log(0.0307), Sigma())(rng));
      default:
        return service;
    }
  }
  // The workers at simulated time `sim` outside a capacity drop.
  int WorkersOutsideTrigger(double sim) const {
    if (shape == Shape::kChanging && sim >= trigger_end() + change_from &&
        sim < trigger_end() + change_to) {
      return static_cast<int>(std::lround(workers * changed));
    }
    return workers;
  }
  // The spare capacity's limit for a backlog B from the trigger's end: the
  // time T with the integral of (C(t) - L) over [end, end + T] equal to B.
  double Limit(double backlog) const {
    double cleared = 0, t = 0;
    while (cleared < backlog && t < 1e4) {
      const double c =
          WorkersOutsideTrigger(trigger_end() + t) / mean_service();
      cleared += (c - rate()) * 0.001;
      t += 0.001;
    }
    return t;
  }
  double rate() const { return load * capacity(); }
  double trigger_end() const { return trigger_start + trigger_length; }
  double end() const { return trigger_end() + after; }
};

enum class Trigger { kOutage, kCapacityDrop };
const char* Name(Trigger t) {
  return t == Trigger::kOutage ? "outage" : "capacity_drop";
}

enum class Admission {
  kNaive,
  kGrpc,
  kBucket,
  kBudget,
  kBudgetFleet,
  kWaitingProportional,
  kWaitingAdaptive,
};

struct Variant {
  const char* name;
  Admission admission;
};

constexpr Variant kVariants[] = {
    {"naive", Admission::kNaive},
    {"grpc_retries", Admission::kGrpc},
    {"token_bucket", Admission::kBucket},
    {"retry_budget", Admission::kBudget},
    {"retry_budget_fleet", Admission::kBudgetFleet},
    {"waiting_proportional", Admission::kWaitingProportional},
    {"waiting_adaptive", Admission::kWaitingAdaptive},
};

const char* CodeName(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ? "UNAVAILABLE"
                                               : "RESOURCE_EXHAUSTED";
}

std::chrono::nanoseconds Sim(double seconds, const Scenario& s) {
  return std::chrono::nanoseconds(
      static_cast<int64_t>(seconds / s.scale * 1e9));
}

// Counters per simulated second.
class Bins {
 public:
  explicit Bins(size_t n) : counts_(n) {}
  void Add(double t) {
    counts_[Index(t)].fetch_add(1, std::memory_order_relaxed);
  }
  int operator[](size_t i) const {
    return counts_[i].load(std::memory_order_relaxed);
  }
  size_t size() const { return counts_.size(); }
  int64_t Sum(size_t from, size_t to) const {
    int64_t sum = 0;
    for (size_t i = from; i < to && i < counts_.size(); ++i) sum += (*this)[i];
    return sum;
  }
  size_t Index(double t) const {
    return std::min(static_cast<size_t>(std::max(t, 0.0)), counts_.size() - 1);
  }

 private:
  std::vector<std::atomic<int>> counts_;
};

// The server with finite capacity. Requests in service are timers: the
// dispatcher thread finishes each when its service time is over and starts
// the next queued one on the freed worker.
class FiniteServer final : public EchoService::CallbackService {
 public:
  FiniteServer(const Scenario& s, Trigger trigger, grpc::StatusCode full_code)
      : s_(s),
        trigger_(trigger),
        full_code_(full_code),
        service_(Sim(s.service, s)),
        attempts_(Size(s)),
        served_(Size(s)),
        wasted_(Size(s)),
        rejected_(Size(s)),
        dispatcher_([this] { Dispatch(); }) {}

  ~FiniteServer() override { Stop(); }

  // Starts the clock: simulated time 0 is `origin`. Until then requests are
  // answered at once and not counted (the clients connecting).
  void Start(Steady::time_point origin) {
    origin_.store(origin.time_since_epoch().count());
    wake_.notify_one();
  }

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest*, EchoResponse*) override {
    // DefaultReactor() makes a new reactor each time: call it once.
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    const Steady::time_point now = Steady::now();
    const double sim = SimAt(now);
    if (sim < 0) {  // connecting before the clock starts: not counted
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    attempts_.Add(sim);
    if (trigger_ == Trigger::kOutage && InTrigger(sim)) {
      rejected_.Add(sim);
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "outage"));
      return reactor;
    }
    const std::chrono::nanoseconds service = DrawService();
    Request request{reactor, context, DeadlineOf(*context, now), now + service,
                    service};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) {  // the run is over: nothing is served any more
        rejected_.Add(sim);
        reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stopped"));
        return reactor;
      }
      if (queue_.empty() &&
          static_cast<int>(serving_.size()) < WorkersAt(now)) {
        const bool earliest =
            serving_.empty() || request.finish < serving_.top().finish;
        serving_.push(request);
        if (earliest) wake_.notify_one();
        return reactor;
      }
      if (static_cast<int>(queue_.size()) < s_.queue) {
        queue_.push_back(request);
        return reactor;
      }
    }
    rejected_.Add(sim);
    reactor->Finish(grpc::Status(full_code_, "queue full"));
    return reactor;
  }

  // Ends the dispatcher and cancels what it still holds (requests whose
  // clients have all gone: the run is over). Returns how many.
  int64_t Stop() {
    std::vector<Request> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return 0;
      stopped_ = true;
      left.assign(queue_.begin(), queue_.end());
      queue_.clear();
      while (!serving_.empty()) {
        left.push_back(serving_.top());
        serving_.pop();
      }
    }
    wake_.notify_one();
    dispatcher_.join();
    for (const Request& r : left) {
      r.reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stopped"));
    }
    return static_cast<int64_t>(left.size());
  }

  // The queue's length when the trigger ended.
  int queue_at_trigger_end() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_at_trigger_end_;
  }
  void SampleQueue() {
    std::lock_guard<std::mutex> lock(mu_);
    queue_at_trigger_end_ = static_cast<int>(queue_.size());
  }

  double SimNow() const { return SimAt(Steady::now()); }
  const Bins& attempts() const { return attempts_; }
  const Bins& served() const { return served_; }
  const Bins& wasted() const { return wasted_; }
  const Bins& rejected() const { return rejected_; }

 private:
  struct Request {
    grpc::ServerUnaryReactor* reactor;
    grpc::CallbackServerContext* context;  // valid until Finish
    Steady::time_point deadline;           // the client's
    Steady::time_point finish;             // when its service ends
    std::chrono::nanoseconds service;      // drawn at its arrival
  };
  struct LaterFinish {
    bool operator()(const Request& a, const Request& b) const {
      return a.finish > b.finish;
    }
  };

  static size_t Size(const Scenario& s) {
    return static_cast<size_t>(s.end() + s.call_timeout) + 10;
  }

  Steady::time_point origin() const {
    return Steady::time_point(Steady::duration(origin_.load()));
  }
  double SimAt(Steady::time_point t) const {
    return std::chrono::duration<double>(t - origin()).count() * s_.scale;
  }
  bool InTrigger(double sim) const {
    return sim >= s_.trigger_start && sim < s_.trigger_end();
  }

  // The client's deadline on the steady clock (gRPC hands it over on the
  // system clock); none is far away.
  static Steady::time_point DeadlineOf(const grpc::ServerContextBase& context,
                                       Steady::time_point now) {
    const auto left = context.deadline() - std::chrono::system_clock::now();
    if (left > std::chrono::hours(1)) return Steady::time_point::max();
    return now + std::chrono::duration_cast<Steady::duration>(left);
  }

  int WorkersAt(Steady::time_point t) const {
    if (trigger_ == Trigger::kCapacityDrop && InTrigger(SimAt(t))) {
      return std::max(1,
                      static_cast<int>(std::lround(s_.workers * s_.degraded)));
    }
    return s_.WorkersOutsideTrigger(SimAt(t));
  }

  std::chrono::nanoseconds DrawService() {
    if (s_.shape == Shape::kConstant || s_.shape == Shape::kChanging) {
      return service_;
    }
    std::lock_guard<std::mutex> lock(rng_mu_);
    return Sim(s_.Draw(rng_), s_);
  }

  void Dispatch() {
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<Request> done;
    while (!stopped_) {
      const Steady::time_point now = Steady::now();
      // Finish what is due, in time order; a freed worker takes the next
      // queued request at the moment it was freed, however late this
      // thread woke, so the capacity is exact.
      while (!serving_.empty() && serving_.top().finish <= now) {
        const Request r = serving_.top();
        serving_.pop();
        done.push_back(r);
        if (!queue_.empty() &&
            static_cast<int>(serving_.size()) < WorkersAt(r.finish)) {
          Request next = queue_.front();
          queue_.pop_front();
          next.finish = r.finish + next.service;
          serving_.push(next);
        }
      }
      // Workers back after a capacity drop take queued requests now.
      while (!queue_.empty() &&
             static_cast<int>(serving_.size()) < WorkersAt(now)) {
        Request next = queue_.front();
        queue_.pop_front();
        next.finish = now + next.service;
        serving_.push(next);
      }
      if (!done.empty()) {
        lock.unlock();
        for (const Request& r : done) {
          const double sim = SimAt(r.finish);
          served_.Add(sim);
          // The client has gone: its deadline passed, or it cancelled the
          // attempt (gRPC's per-attempt timeout does not travel as a
          // deadline).
          if (r.finish > r.deadline || r.context->IsCancelled()) {
            wasted_.Add(sim);
          }
          r.reactor->Finish(grpc::Status::OK);
        }
        done.clear();
        lock.lock();
        continue;
      }
      Steady::time_point next = Steady::time_point::max();
      if (!serving_.empty()) next = serving_.top().finish;
      const Steady::time_point trigger_end =
          origin() + Sim(s_.trigger_end(), s_);
      if (!queue_.empty() && now < trigger_end) {
        next = std::min(next, trigger_end);
      }
      if (next == Steady::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, next);
      }
    }
  }

  const Scenario& s_;
  const Trigger trigger_;
  const grpc::StatusCode full_code_;
  // Simulated time 0, in steady-clock ticks; far away until Start.
  std::atomic<Steady::rep> origin_{std::numeric_limits<Steady::rep>::max() / 2};
  const std::chrono::nanoseconds service_;
  Bins attempts_;  // by arrival
  Bins served_;    // by the end of service
  Bins wasted_;    // served after the client's deadline
  Bins rejected_;  // answered at once: outage or full queue
  std::mutex mu_;
  std::mutex rng_mu_;
  std::mt19937_64 rng_{44};
  std::condition_variable wake_;
  std::deque<Request> queue_;
  std::priority_queue<Request, std::vector<Request>, LaterFinish> serving_;
  bool stopped_ = false;
  int queue_at_trigger_end_ = 0;
  std::thread dispatcher_;  // last: starts once the rest is built
};

// The policy every variant shares, on the stubkit side.
Options CommonOptions(const Scenario& s) {
  return Options{}
      .set<RetryPolicyOption>(
          RetryPolicy::LimitedErrorCount(3).WithRetryableCodes(
              {grpc::StatusCode::UNAVAILABLE,
               grpc::StatusCode::RESOURCE_EXHAUSTED}))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(Sim(s.backoff, s))
                                    .WithMaximumDelay(Sim(s.backoff_max, s))
                                    .WithMultiplier(2.0))
      .set<AttemptTimeoutOption>(Sim(s.attempt_timeout, s))
      .set<TotalTimeoutOption>(Sim(s.call_timeout, s));
}

RetryThrottle::WaitForRecovery Waiting(const Scenario& s, Admission a) {
  RetryThrottle::WaitForRecovery waiting;  // the defaults, 1 s scaled
  waiting.probe_interval = Sim(s.probe_interval, s);
  using Release = RetryThrottle::WaitForRecovery::Release;
  if (a == Admission::kWaitingProportional) {
    waiting.release = Release::kProportional;
    waiting.release_ratio = 0.5;
  } else {
    waiting.release = Release::kAdaptive;
  }
  return waiting;
}

Options ClientOptions(const Scenario& s, Admission a) {
  Options options = CommonOptions(s);
  const auto bucket =
      RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1);
  switch (a) {
    case Admission::kBucket:
      options.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(bucket));
      break;
    case Admission::kBudget:
    case Admission::kBudgetFleet:
      options.set<RetryBudgetOption>(std::make_shared<RetryBudget>(
          RetryBudget::Config()
              .WithTtl(Sim(10, s))
              .WithMinRetriesPerSecond((a == Admission::kBudget ? 10 : 0.5) *
                                       s.scale)
              .WithPercentCanRetry(0.2)));
      break;
    case Admission::kWaitingProportional:
    case Admission::kWaitingAdaptive:
      options.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
          bucket.WithWaitForRecovery(Waiting(s, a))));
      break;
    default:
      break;
  }
  return options;
}

// gRPC's retries with the same policy: a service config on the channel.
// perAttemptRecvTimeout is read only with hedging's experimental switch on.
std::string GrpcServiceConfig(const Scenario& s) {
  auto real = [&](double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "\"%.6fs\"", seconds / s.scale);
    return std::string(text);
  };
  return R"({"methodConfig": [{"name": [{"service": "stubkit.testing.EchoService"}],)"
         R"( "retryPolicy": {"maxAttempts": 4, "initialBackoff": )" +
         real(s.backoff) + R"(, "maxBackoff": )" + real(s.backoff_max) +
         R"(, "backoffMultiplier": 2, "perAttemptRecvTimeout": )" +
         real(s.attempt_timeout) +
         R"(, "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}}]})";
}

struct CallRecord {
  double start = 0;  // simulated seconds
  double end = -1;
  bool ok = false;
  StopReason reason = StopReason::kSuccess;  // gRPC's: kPermanentError
  std::atomic<int> ended{0};                 // must end up 1
};

struct Result {
  std::string variant;
  Trigger trigger = Trigger::kOutage;
  grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE;
  int64_t calls = 0;
  int64_t offered_in_trigger = 0;
  int64_t attempts_in_trigger = 0;
  int64_t attempts = 0;
  int64_t served = 0;
  int64_t wasted = 0;
  int64_t rejected = 0;
  int64_t cancelled_at_stop = 0;
  int64_t ok = 0;
  int64_t failed = 0;
  int64_t failed_with_time_left = 0;
  // ... of which the count policy ran out, or the throttle or budget
  // refused a retry.
  int64_t left_exhausted = 0;
  int64_t left_throttled = 0;
  int64_t ended_twice = 0;
  int64_t backlog = 0;  // calls started before the trigger's end, open then
  int queue_at_trigger_end = 0;
  bool recovered = false;
  double goodput_back = -1;  // simulated seconds after the trigger's end
  double backlog_gone = 0;
  double drain = -1;
  double limit = 0;         // B / (C - L)
  double late_goodput = 0;  // the last `sustain`: OK calls / offered
};

// The first time from which goodput stays at >= 90 % of the offered load
// over every 5 s window up to the end of the load, if that is at least
// `sustain` before the end; -1 otherwise.
double GoodputBack(const std::vector<double>& starts,
                   const std::vector<double>& oks, double from, double end,
                   double sustain) {
  constexpr double kWindow = 5;
  constexpr double kStep = 0.1;
  auto count = [](const std::vector<double>& sorted, double a, double b) {
    return std::lower_bound(sorted.begin(), sorted.end(), b) -
           std::lower_bound(sorted.begin(), sorted.end(), a);
  };
  double back = -1;
  // Walk backwards: the answer is the earliest start of an unbroken run of
  // passing windows that reaches the end.
  for (double t = end - kWindow; t >= from - 1e-9; t -= kStep) {
    const auto offered = count(starts, t, t + kWindow);
    const auto ok = count(oks, t, t + kWindow);
    if (ok < 0.9 * static_cast<double>(offered)) break;
    back = t;
  }
  return back <= end - sustain ? back : -1;
}

Result RunOne(const Scenario& s, const Variant& v, Trigger trigger,
              grpc::StatusCode code, FILE* csv) {
  FiniteServer service(s, trigger, code);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot start the server on 127.0.0.1\n");
    std::exit(1);
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);

  std::vector<std::unique_ptr<EchoServiceClient>> clients;
  std::vector<std::unique_ptr<EchoService::Stub>> stubs;
  EchoRequest request;
  request.set_message("overload");
  for (int i = 0; i < s.clients; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // own connection
    if (v.admission == Admission::kGrpc) {
      args.SetServiceConfigJSON(GrpcServiceConfig(s));
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
      args.SetInt(GRPC_ARG_EXPERIMENTAL_ENABLE_HEDGING, 1);
      auto channel = grpc::CreateCustomChannel(
          address, grpc::InsecureChannelCredentials(), args);
      stubs.push_back(EchoService::NewStub(channel));
      // Connect before the clock starts (and check the config was taken).
      grpc::ClientContext context;
      EchoResponse response;
      const grpc::Status status =
          stubs.back()->Echo(&context, request, &response);
      if (!status.ok()) {
        std::fprintf(stderr, "gRPC client: %s\n",
                     status.error_message().c_str());
        std::exit(1);
      }
    } else {
      clients.push_back(std::make_unique<EchoServiceClient>(
          CreateChannel(address, grpc::InsecureChannelCredentials(), args),
          ClientOptions(s, v.admission)));
      const absl::StatusOr<EchoResponse> connected =
          clients.back()->Echo(request);
      if (!connected.ok()) {
        std::fprintf(stderr, "stubkit client: %s\n",
                     connected.status().ToString().c_str());
        std::exit(1);
      }
    }
  }

  const Steady::time_point origin =
      Steady::now() + std::chrono::milliseconds(20);
  service.Start(origin);
  const int64_t total = static_cast<int64_t>(std::llround(s.rate() * s.end()));
  std::vector<CallRecord> records(total);
  std::atomic<int64_t> done{0};
  auto finish = [&service, &done](CallRecord* record, bool ok,
                                  StopReason reason) {
    record->ok = ok;
    record->reason = reason;
    record->end = service.SimNow();
    record->ended.fetch_add(1, std::memory_order_relaxed);
    done.fetch_add(1, std::memory_order_release);
  };
  // The queue at the trigger's end, sampled by its own thread.
  std::thread sampler([&] {
    std::this_thread::sleep_until(origin + Sim(s.trigger_end(), s));
    service.SampleQueue();
  });
  struct GrpcCall {
    grpc::ClientContext context;
    EchoResponse response;
  };
  for (int64_t i = 0; i < total; ++i) {
    const double at = static_cast<double>(i) / s.rate();
    std::this_thread::sleep_until(origin + Sim(at, s));
    CallRecord* record = &records[i];
    record->start = at;
    if (v.admission == Admission::kGrpc) {
      auto* call = new GrpcCall;
      call->context.set_deadline(std::chrono::system_clock::now() +
                                 Sim(s.call_timeout, s));
      stubs[i % s.clients]->async()->Echo(
          &call->context, &request, &call->response,
          [call, record, &finish](grpc::Status status) {
            finish(record, status.ok(),
                   status.ok() ? StopReason::kSuccess
                               : StopReason::kPermanentError);
            delete call;
          });
    } else {
      clients[i % s.clients]->AsyncEcho(
          request, [record, &finish](absl::StatusOr<EchoResponse> r) {
            std::optional<RetrySummary> summary;
            if (!r.ok()) summary = GetRetrySummary(r.status());
            finish(record, r.ok(),
                   summary.has_value() ? summary->stop_reason
                                       : StopReason::kSuccess);
          });
    }
  }
  sampler.join();
  // Every call ends by its 60 s; give a loaded machine 5 s more.
  const Steady::time_point limit =
      Steady::now() + Sim(s.call_timeout + 5, s) + std::chrono::seconds(5);
  while (done.load(std::memory_order_acquire) < total) {
    if (Steady::now() > limit) {
      std::fprintf(stderr, "%s/%s: %lld calls never ended\n", v.name,
                   Name(trigger), static_cast<long long>(total - done.load()));
      std::_Exit(1);  // the records are still referenced by pending calls
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  Result r;
  r.variant = v.name;
  r.trigger = trigger;
  r.code = code;
  r.calls = total;
  r.cancelled_at_stop = service.Stop();
  r.queue_at_trigger_end = service.queue_at_trigger_end();
  const Bins& attempts = service.attempts();
  const size_t bins = attempts.size();
  std::vector<int> offered(bins), ok(bins), failed(bins);
  std::vector<double> starts, oks;
  const double t_end = s.trigger_end();
  for (const CallRecord& c : records) {
    const int ended = c.ended.load();
    if (ended != 1) ++r.ended_twice;
    ++offered[attempts.Index(c.start)];
    starts.push_back(c.start);
    if (c.ok) {
      ++r.ok;
      ++ok[attempts.Index(c.end)];
      oks.push_back(c.end);
    } else {
      ++r.failed;
      ++failed[attempts.Index(c.end)];
      if (c.start + s.call_timeout - c.end > 0.5) {
        ++r.failed_with_time_left;
        if (c.reason == StopReason::kExhausted) ++r.left_exhausted;
        if (c.reason == StopReason::kThrottled) ++r.left_throttled;
      }
    }
    if (c.start >= s.trigger_start && c.start < t_end) ++r.offered_in_trigger;
    if (c.start < t_end && c.end > t_end) {
      ++r.backlog;
      r.backlog_gone = std::max(r.backlog_gone, c.end - t_end);
    }
  }
  std::sort(oks.begin(), oks.end());  // starts are in order already
  const double back = GoodputBack(starts, oks, t_end, s.end(), s.sustain);
  r.recovered = back >= 0;
  if (r.recovered) {
    r.goodput_back = std::max(back - t_end, 0.0);
    r.drain = std::max(r.goodput_back, r.backlog_gone);
  }
  r.limit = s.Limit(static_cast<double>(r.backlog));
  {
    const double from = s.end() - s.sustain;
    const auto in = [&](const std::vector<double>& v) {
      return std::lower_bound(v.begin(), v.end(), s.end()) -
             std::lower_bound(v.begin(), v.end(), from);
    };
    const auto offered_late = in(starts);
    r.late_goodput = offered_late > 0 ? static_cast<double>(in(oks)) /
                                            static_cast<double>(offered_late)
                                      : 0;
  }
  const size_t first_bin = static_cast<size_t>(s.trigger_start);
  const size_t last_bin = static_cast<size_t>(t_end);
  r.attempts_in_trigger = attempts.Sum(first_bin, last_bin);
  size_t last = 0;
  for (size_t b = 0; b < bins; ++b) {
    if (offered[b] || attempts[b] || ok[b] || failed[b] ||
        service.served()[b]) {
      last = b;
    }
  }
  const char* code_name = CodeName(code);
  for (size_t b = 0; b <= last; ++b) {
    std::fprintf(csv, "%s,%s,%s,%zu,%d,%d,%d,%d,%d\n", v.name, Name(trigger),
                 code_name, b, offered[b], attempts[b], ok[b], failed[b],
                 service.wasted()[b]);
  }
  r.attempts = attempts.Sum(0, bins);
  r.served = service.served().Sum(0, bins);
  r.wasted = service.wasted().Sum(0, bins);
  r.rejected = service.rejected().Sum(0, bins);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return r;
}

std::string Seconds(double t) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", t);
  return text;
}

int Main(int argc, char** argv) {
  Scenario s;
  std::string out = bench::DefaultOutDir();
  bool smoke = false;
  std::string only;
  std::string only_code;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
      s.scale = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else if (std::strcmp(argv[i], "--code") == 0 && i + 1 < argc) {
      only_code = argv[++i];
    } else if (std::strcmp(argv[i], "--queue") == 0 && i + 1 < argc) {
      s.queue = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--probe-interval") == 0 && i + 1 < argc) {
      s.probe_interval = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
      const std::string name = argv[++i];
      if (name == "mixture") {
        s.shape = Shape::kMixture;
        s.workers = 2;
      } else if (name == "lognormal") {
        s.shape = Shape::kLognormal;
        s.workers = 5;
      } else if (name == "changing") {
        s.shape = Shape::kChanging;
      } else if (name != "constant") {
        std::fprintf(stderr,
                     "--server: constant, mixture, lognormal or "
                     "changing\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--smoke] [--out DIR] [--scale X] "
                   "[--only VARIANT,...] [--code UNAVAILABLE|"
                   "RESOURCE_EXHAUSTED] [--queue N] [--probe-interval S] "
                   "[--server constant|mixture|lognormal|changing]\n",
                   argv[0]);
      return 2;
    }
  }
  if (smoke) {
    // The same shape, a fifth of the clients and capacity, 10x faster (no
    // more: gRPC reads the 0.1 s backoff in whole milliseconds) and
    // shorter: about 4 s in all.
    s.scale = 100;
    s.clients = 4;
    s.workers = std::max(1, s.workers / 5);
    s.queue = 40;
    s.trigger_start = 5;
    s.trigger_length = 5;
    s.after = 12;
    s.sustain = 5;
  }
  // gRPC reads the service config's durations in whole milliseconds.
  if (!(s.scale > 0 && s.scale * 0.001 <= s.backoff)) {
    std::fprintf(stderr, "--scale must be in (0, %.0f]\n", s.backoff * 1000);
    return 2;
  }
  std::string csv_path;
  // The constant server's files keep their names; the others' carry theirs.
  const std::string base = s.shape == Shape::kConstant
                               ? std::string("overload")
                               : std::string("overload_") + Name(s.shape);
  FILE* csv = bench::OpenCsv(out, base + ".csv", &csv_path);
  if (csv == nullptr) return 1;
  std::fprintf(csv,
               "variant,trigger,code,second,offered,attempts,ok,failed,"
               "wasted\n");

  std::vector<Result> results;
  const grpc::StatusCode codes[] = {grpc::StatusCode::UNAVAILABLE,
                                    grpc::StatusCode::RESOURCE_EXHAUSTED};
  for (grpc::StatusCode code : codes) {
    if (smoke && code != grpc::StatusCode::UNAVAILABLE) break;
    if (!only_code.empty() && only_code != CodeName(code)) continue;
    for (Trigger trigger : {Trigger::kOutage, Trigger::kCapacityDrop}) {
      for (const Variant& v : kVariants) {
        if (!only.empty() &&
            only.find("," + std::string(v.name) + ",") == std::string::npos) {
          continue;
        }
        const Steady::time_point began = Steady::now();
        results.push_back(RunOne(s, v, trigger, code, csv));
        std::fprintf(
            stderr, "%s %s %s done in %.1f s\n", v.name, Name(trigger),
            CodeName(code),
            std::chrono::duration<double>(Steady::now() - began).count());
      }
    }
  }
  std::fclose(csv);

  char header[1024];
  std::snprintf(
      header, sizeof(header),
      "%d clients, %.0f calls/s offered against a capacity C of %.0f/s "
      "(server %s: %d workers x %.4f s on average, a queue of %d); trigger "
      "from %.0f s to %.0f s, "
      "the load until %.0f s; each call 4 attempts of <= %.0f s, %.0f s in "
      "all; one throttle or budget per client, the waiting throttle probing "
      "every %.0f s; simulated time, %.0fx faster than real\n\n",
      s.clients, s.rate(), s.capacity(), Name(s.shape), s.workers,
      s.mean_service(), s.queue, s.trigger_start, s.trigger_end(), s.end(),
      s.attempt_timeout, s.call_timeout, s.probe_interval, s.scale);
  std::string table = header;
  table +=
      "| queue full | trigger | variant | amplification in trigger | failed "
      "calls | failed with time left | wasted requests | backlog B | server "
      "queue | limit B/(C-L) | goodput back after | backlog gone after | "
      "drain | drain / limit | goodput, last " +
      Seconds(s.sustain) +
      " |\n"
      "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
      "---: | ---: | ---: | ---: | ---: |\n";
  bool sane = true;
  for (const Result& r : results) {
    const double amplification =
        r.offered_in_trigger > 0 ? static_cast<double>(r.attempts_in_trigger) /
                                       static_cast<double>(r.offered_in_trigger)
                                 : 0;
    std::string drain = "**never** (metastable)";
    std::string ratio = "-";
    std::string back = "never";
    if (r.recovered) {
      back = Seconds(r.goodput_back);
      drain = Seconds(r.drain);
      if (r.limit > 0) {
        char text[32];
        std::snprintf(text, sizeof(text), "%.2fx", r.drain / r.limit);
        ratio = text;
      }
    }
    char row[512];
    std::snprintf(
        row, sizeof(row),
        "| %s | %s | %s | %.2fx | %lld of %lld | %lld (%lld exhausted, %lld "
        "throttled) | %lld | %lld | %d | %s | %s | %s | %s | %s | %.0f%% |\n",
        CodeName(r.code), Name(r.trigger), r.variant.c_str(), amplification,
        static_cast<long long>(r.failed), static_cast<long long>(r.calls),
        static_cast<long long>(r.failed_with_time_left),
        static_cast<long long>(r.left_exhausted),
        static_cast<long long>(r.left_throttled),
        static_cast<long long>(r.wasted), static_cast<long long>(r.backlog),
        r.queue_at_trigger_end, Seconds(r.limit).c_str(), back.c_str(),
        Seconds(r.backlog_gone).c_str(), drain.c_str(), ratio.c_str(),
        100 * r.late_goodput);
    table += row;
    // Sanity, not performance: every call ended exactly once, each with at
    // least one attempt, and every request the server took was answered
    // once (served, rejected, or cancelled when the run ended).
    const bool ok = r.ended_twice == 0 && r.ok + r.failed == r.calls &&
                    r.attempts >= r.calls &&
                    r.attempts == r.served + r.rejected + r.cancelled_at_stop &&
                    r.wasted <= r.served && r.ok <= r.served &&
                    r.offered_in_trigger > 0;
    if (!ok) {
      std::fprintf(
          stderr,
          "insane: %s %s: ended != once %lld, ok %lld + failed %lld "
          "!= calls %lld, attempts %lld, served %lld, rejected "
          "%lld, cancelled %lld, wasted %lld\n",
          r.variant.c_str(), Name(r.trigger),
          static_cast<long long>(r.ended_twice), static_cast<long long>(r.ok),
          static_cast<long long>(r.failed), static_cast<long long>(r.calls),
          static_cast<long long>(r.attempts), static_cast<long long>(r.served),
          static_cast<long long>(r.rejected),
          static_cast<long long>(r.cancelled_at_stop),
          static_cast<long long>(r.wasted));
      sane = false;
    }
  }
  table +=
      "\nDrain: from the trigger's end until the calls open then have ended "
      "and goodput stays >= 90% of the offered load (5 s windows, to the "
      "end of the load, at least the last " +
      Seconds(s.sustain) +
      "); limit: the backlog B "
      "cleared by the spare capacity C - L (for the changing server, C as it "
      "changes). Server queue: its "
      "length at the trigger's end. Failed with time left: ended more than "
      "0.5 s before the call's 60 s (stubkit's stop reason: the count "
      "policy exhausted, or a retry refused).\n";
  return bench::FinishStudy(table, out, base + "_summary.md", csv_path, sane);
}

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) { return stubkit::Main(argc, argv); }

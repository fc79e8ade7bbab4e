// Copyright 2026 The stubkit Authors.
//
// The retry-storm study: what each backoff strategy does to a server that
// goes down and comes back.
//
//   retry_storm --out benchmarks/results       # about 50 s, 5 strategies
//   retry_storm --smoke --out /tmp/storm       # about 2 s, a sanity check
//
// Without --out it writes to $TEST_TMPDIR when set, else ".".
//
// A real gRPC server on 127.0.0.1 and 20 stubkit clients (one channel and
// connection each) making async calls at a fixed offered load of 40 calls
// per second, spread evenly over time. Time is simulated: every duration
// (backoff delays, the time limit, the scenario) is divided by --scale
// (10: one simulated second is 100 ms of real time), so a strategy's 90
// simulated seconds run in 9 s. The scenario, in simulated seconds:
//
//   [0, 10)    the server answers
//   [10, 13)   the server hangs: calls are held, then all fail together
//              with UNAVAILABLE at 13 (a backend that hangs, then dies)
//   [13, 50)   the server fails every call at once with UNAVAILABLE
//   [50, 90)   the server answers again
//
// Strategies: the default policy (truncated exponential, 1 s initial,
// doubling, 5 min cap, 30 min time limit) with no jitter, the default
// jitter, full jitter, proportional (+-20%) jitter, the default jitter plus
// a retry throttle (10 tokens, 0.1 per success, one per client), and the
// same throttle in waiting mode (RetryThrottle::WaitForRecovery: one probe
// per 5 simulated seconds per client; calls wait for the recovery instead
// of failing), released the default way (kAdaptive, "throttle_waiting")
// and at a fixed share (kProportional, "throttle_waiting_proportional").
// --only a,b runs only the strategies named.
//
// Then the waiting mode once more with a retry policy shorter than the
// outage (20 simulated seconds): its calls must end by their policy's end,
// with kThrottled or kExhausted, never later.
//
// Writes <out>/storm.csv (per simulated second and strategy: calls offered,
// attempts the server saw, how many of them were retries, calls that ended
// OK or failed) and <out>/storm_summary.md, and prints the summary.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "benchmarks/study_output.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using Steady = std::chrono::steady_clock;

struct Scenario {
  double scale = 10;  // simulated seconds per real second
  int clients = 20;
  double rate = 40;          // offered calls per simulated second, in all
  double outage_start = 10;  // simulated seconds
  double hang = 3;           // the first part of the outage: calls hang
  double outage_end = 50;
  double end = 90;  // calls are offered until here
};

// The server: answers, hangs or fails by the simulated time, and counts
// attempts per simulated second.
class StormService final : public EchoService::CallbackService {
 public:
  StormService(const Scenario& scenario, Steady::time_point origin)
      : scenario_(scenario),
        origin_(origin),
        attempts_(static_cast<size_t>(scenario.end) + 120),
        retries_(attempts_.size()) {}

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest*, EchoResponse*) override {
    const double now = SimNow();
    // DefaultReactor() makes a new reactor each time: call it once.
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (now < 0) {  // connecting before the clock starts: not counted
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    const size_t bin =
        std::min(static_cast<size_t>(std::max(now, 0.0)), attempts_.size() - 1);
    attempts_[bin].fetch_add(1, std::memory_order_relaxed);
    if (context->client_metadata().count(kRetryAttemptHeader) > 0) {
      retries_[bin].fetch_add(1, std::memory_order_relaxed);
    }
    if (now >= scenario_.outage_start && now < scenario_.outage_end) {
      absl::MutexLock lock(&mu_);
      if (now < scenario_.outage_start + scenario_.hang && !released_) {
        held_.push_back(reactor);
        return reactor;
      }
      reactor->Finish(Down());
      return reactor;
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // Fails every held call at once (the end of the hang).
  void Release() {
    std::vector<grpc::ServerUnaryReactor*> held;
    {
      absl::MutexLock lock(&mu_);
      released_ = true;
      held.swap(held_);
    }
    for (auto* reactor : held) reactor->Finish(Down());
  }

  double SimNow() const {
    return std::chrono::duration<double>(Steady::now() - origin_).count() *
           scenario_.scale;
  }
  int attempts(size_t bin) const { return attempts_[bin].load(); }
  int retries(size_t bin) const { return retries_[bin].load(); }
  size_t bins() const { return attempts_.size(); }

 private:
  static grpc::Status Down() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "backend down");
  }

  const Scenario& scenario_;
  const Steady::time_point origin_;
  std::vector<std::atomic<int>> attempts_;
  std::vector<std::atomic<int>> retries_;
  absl::Mutex mu_;
  std::vector<grpc::ServerUnaryReactor*> held_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

struct Strategy {
  const char* name;
  Jitter jitter;
  bool throttle;
  bool waiting = false;          // the throttle's waiting mode
  double policy_seconds = 1800;  // the retry policy's time limit
  // The waiting mode's release: kProportional, else kAdaptive (the
  // default).
  bool proportional = false;
};

struct CallRecord {
  double start = 0;  // simulated seconds
  double end = -1;
  bool ok = false;
  StopReason reason = StopReason::kSuccess;
};

struct Summary {
  std::string name;
  int64_t offered_in_outage = 0;
  int64_t attempts_in_outage = 0;
  int peak_attempts = 0;
  double backlog_clears_after = 0;  // simulated seconds after recovery
  double backlog_99_after = 0;      // 99% of the calls pending at recovery
  int64_t failed = 0;
  int64_t calls = 0;
  int64_t attempts = 0;
  bool complete = true;
  int peak_after_recovery = 0;  // attempts/s, from the recovery on
  // Failed calls by stop reason, and the latest end past a call's policy
  // end (simulated seconds; <= 0: none ended late).
  int64_t failed_throttled = 0;
  int64_t failed_exhausted = 0;
  int64_t failed_other = 0;
  double latest_past_policy = -1e9;
};

std::chrono::nanoseconds Sim(double seconds, const Scenario& s) {
  return std::chrono::nanoseconds(
      static_cast<int64_t>(seconds / s.scale * 1e9));
}

Summary RunStrategy(const Strategy& strategy, const Scenario& s, FILE* csv) {
  const Steady::time_point origin =
      Steady::now() + std::chrono::milliseconds(200);
  StormService service(s, origin);
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

  // The default policies with every duration scaled.
  const ExponentialBackoffPolicy backoff = ExponentialBackoffPolicy()
                                               .WithInitialDelay(Sim(1, s))
                                               .WithMaximumDelay(Sim(300, s))
                                               .WithMultiplier(2.0)
                                               .WithJitter(strategy.jitter);
  std::vector<std::unique_ptr<EchoServiceClient>> clients;
  for (int i = 0; i < s.clients; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // own connection
    auto options =
        Options{}.set<BackoffPolicyOption>(backoff).set<RetryPolicyOption>(
            RetryPolicy::LimitedTime(
                std::chrono::duration_cast<std::chrono::nanoseconds>(
                    Sim(strategy.policy_seconds, s))));
    if (strategy.waiting) {
      RetryThrottle::WaitForRecovery waiting;
      waiting.probe_interval = Sim(5, s);
      waiting.probes = 1;
      waiting.release =
          strategy.proportional
              ? RetryThrottle::WaitForRecovery::Release::kProportional
              : RetryThrottle::WaitForRecovery::Release::kAdaptive;
      options.set<RetryThrottleOption>(
          std::make_shared<RetryThrottle>(RetryThrottle::Config()
                                              .WithMaxTokens(10)
                                              .WithTokenRatio(0.1)
                                              .WithWaitForRecovery(waiting)));
    } else if (strategy.throttle) {
      options.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
          RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1)));
    }
    clients.push_back(std::make_unique<EchoServiceClient>(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                  args),
        std::move(options)));
  }
  EchoRequest request;
  request.set_message("storm");
  // Connect every client before the clock starts.
  for (auto& client : clients) (void)client->Echo(request);

  const int64_t total = static_cast<int64_t>(s.rate * s.end);
  std::vector<CallRecord> records(total);
  std::atomic<int64_t> done{0};
  std::thread release([&] {
    std::this_thread::sleep_until(origin + Sim(s.outage_start + s.hang, s));
    service.Release();
  });
  for (int64_t i = 0; i < total; ++i) {
    const double at = static_cast<double>(i) / s.rate;
    std::this_thread::sleep_until(origin + Sim(at, s));
    CallRecord* record = &records[i];
    record->start = service.SimNow();
    clients[i % s.clients]->AsyncEcho(
        request, [record, &service, &done](absl::StatusOr<EchoResponse> r) {
          record->ok = r.ok();
          if (!r.ok()) {
            auto summary = GetRetrySummary(r.status());
            record->reason = summary.has_value() ? summary->stop_reason
                                                 : StopReason::kPermanentError;
          }
          record->end = service.SimNow();
          done.fetch_add(1, std::memory_order_release);
        });
  }
  release.join();
  // Let the backlog drain (the longest wait is ~32 simulated seconds).
  Summary summary;
  summary.name = strategy.name;
  const Steady::time_point drain_limit =
      Steady::now() + Sim(200, s) + std::chrono::seconds(5);
  while (done.load(std::memory_order_acquire) < total) {
    if (Steady::now() > drain_limit) {
      summary.complete = false;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!summary.complete) {
    std::fprintf(stderr, "%s: %lld calls still pending\n", strategy.name,
                 static_cast<long long>(total - done.load()));
    std::_Exit(1);  // records are still referenced by pending callbacks
  }

  std::vector<int> offered(service.bins()), ok(service.bins()),
      failed(service.bins());
  auto bin = [&](double t) {
    return std::min(static_cast<size_t>(std::max(t, 0.0)), service.bins() - 1);
  };
  for (const CallRecord& r : records) {
    ++offered[bin(r.start)];
    (r.ok ? ok : failed)[bin(r.end)]++;
    if (!r.ok) {
      ++summary.failed;
      if (r.reason == StopReason::kThrottled) {
        ++summary.failed_throttled;
      } else if (r.reason == StopReason::kExhausted) {
        ++summary.failed_exhausted;
      } else {
        ++summary.failed_other;
      }
      summary.latest_past_policy =
          std::max(summary.latest_past_policy,
                   r.end - (r.start + strategy.policy_seconds));
    }
    if (r.start < s.outage_end) {
      summary.backlog_clears_after =
          std::max(summary.backlog_clears_after, r.end - s.outage_end);
    }
    if (r.start >= s.outage_start && r.start < s.outage_end) {
      ++summary.offered_in_outage;
    }
  }
  std::vector<double> pending_at_recovery;
  for (const CallRecord& r : records) {
    if (r.start < s.outage_end && r.end > s.outage_end) {
      pending_at_recovery.push_back(r.end - s.outage_end);
    }
  }
  if (!pending_at_recovery.empty()) {
    std::sort(pending_at_recovery.begin(), pending_at_recovery.end());
    summary.backlog_99_after = pending_at_recovery[static_cast<size_t>(
        0.99 * static_cast<double>(pending_at_recovery.size() - 1))];
  }
  summary.calls = total;
  size_t last = 0;
  for (size_t b = 0; b < service.bins(); ++b) {
    if (offered[b] || service.attempts(b) || ok[b] || failed[b]) last = b;
  }
  for (size_t b = 0; b <= last; ++b) {
    const int attempts = service.attempts(b);
    summary.attempts += attempts;
    if (b >= s.outage_end) {
      summary.peak_after_recovery =
          std::max(summary.peak_after_recovery, attempts);
    }
    summary.peak_attempts = std::max(summary.peak_attempts, attempts);
    if (b >= s.outage_start && b < s.outage_end) {
      summary.attempts_in_outage += attempts;
    }
    std::fprintf(csv, "%s,%zu,%d,%d,%d,%d,%d\n", strategy.name, b, offered[b],
                 attempts, service.retries(b), ok[b], failed[b]);
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return summary;
}

int Main(int argc, char** argv) {
  Scenario s;
  std::string out = bench::DefaultOutDir();
  bool smoke = false;
  std::string only;  // ",a,b,": run only these strategies
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
      s.scale = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else {
      std::fprintf(stderr,
                   "usage: %s [--smoke] [--out DIR] [--scale X] "
                   "[--only STRATEGY,...]\n",
                   argv[0]);
      return 2;
    }
  }
  if (smoke) {
    // Same shape, 40x faster and a tenth of the load: about 2 s in all.
    s.scale = 400;
    s.rate = 4;
    s.clients = 4;
  }
  if (!(s.scale > 0)) return 2;
  std::string csv_path;
  FILE* csv = bench::OpenCsv(out, "storm.csv", &csv_path);
  if (csv == nullptr) return 1;
  std::fprintf(csv, "strategy,second,offered,attempts,retries,ok,failed\n");

  const Strategy strategies[] = {
      {"no_jitter", Jitter::None(), false},
      {"default_jitter", Jitter::UpToInitialDelay(), false},
      {"full_jitter", Jitter::Full(), false},
      {"proportional_jitter", Jitter::Proportional(0.2), false},
      {"default_throttled", Jitter::UpToInitialDelay(), true},
      // The default release (kAdaptive), then kProportional (issue 44).
      {"throttle_waiting", Jitter::UpToInitialDelay(), true, true},
      {"throttle_waiting_proportional", Jitter::UpToInitialDelay(), true, true,
       1800, true},
  };
  const auto chosen = [&only](const char* name) {
    return only.empty() ||
           only.find("," + std::string(name) + ",") != std::string::npos;
  };
  std::vector<Summary> summaries;
  for (const Strategy& strategy : strategies) {
    if (!chosen(strategy.name)) continue;
    summaries.push_back(RunStrategy(strategy, s, csv));
    std::fprintf(stderr, "%s done\n", strategy.name);
  }
  // The outage outlasts this policy: waiting calls must end by its end.
  const Strategy short_policy = {"throttle_waiting_short_policy",
                                 Jitter::UpToInitialDelay(), true, true, 20};
  Summary short_summary;
  const bool run_short = chosen(short_policy.name);
  if (run_short) {
    short_summary = RunStrategy(short_policy, s, csv);
    std::fprintf(stderr, "%s done\n", short_policy.name);
  }
  std::fclose(csv);

  char header[512];
  std::snprintf(header, sizeof(header),
                "%d clients, %.0f calls/s offered; outage from %.0f s to "
                "%.0f s (hung for the first %.0f s); simulated time, "
                "%.0fx faster than real\n\n",
                s.clients, s.rate, s.outage_start, s.outage_end, s.hang,
                s.scale);
  std::string table = header;
  table +=
      "| strategy | amplification in outage | peak attempts/s | peak after "
      "recovery | backlog 99% cleared after recovery | all cleared after | "
      "failed calls | attempts / calls |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  bool sane = true;
  for (const Summary& m : summaries) {
    const double amplification =
        m.offered_in_outage > 0
            ? double(m.attempts_in_outage) / double(m.offered_in_outage)
            : 0;
    char row[256];
    std::snprintf(
        row, sizeof(row),
        "| %s | %.2fx | %d | %d (%.2fx offered) | %.1f s | %.1f s | "
        "%lld of %lld | %.2f |\n",
        m.name.c_str(), amplification, m.peak_attempts, m.peak_after_recovery,
        m.peak_after_recovery / s.rate, m.backlog_99_after,
        std::max(m.backlog_clears_after, 0.0), static_cast<long long>(m.failed),
        static_cast<long long>(m.calls), double(m.attempts) / double(m.calls));
    table += row;
    // Sanity, not performance: every call ended, the server saw at least
    // one attempt per call, and the outage made some calls retry (more
    // attempts than calls). Not the amplification inside the outage: on a
    // loaded machine the clients' threads fall behind and fewer attempts
    // than calls land in its window (0.87x seen while a build ran).
    if (!m.complete || m.attempts <= m.calls || m.offered_in_outage == 0) {
      // Which check failed, for a failure seen once under load.
      std::fprintf(stderr,
                   "insane: %s: complete %d, attempts %lld, calls %lld, "
                   "offered in outage %lld\n",
                   m.name.c_str(), m.complete ? 1 : 0,
                   static_cast<long long>(m.attempts),
                   static_cast<long long>(m.calls),
                   static_cast<long long>(m.offered_in_outage));
      sane = false;
    }
  }
  if (run_short) {
    const Summary& m = short_summary;
    char text[768];
    std::snprintf(
        text, sizeof(text),
        "\nthrottle_waiting with a %.0f s retry policy, shorter than the "
        "outage: %lld of %lld calls failed (%lld kThrottled, %lld "
        "kExhausted, %lld other); the latest failed call ended %.2f s "
        "%s its policy's end (simulated; timer and scheduling noise "
        "included)\n",
        short_policy.policy_seconds, static_cast<long long>(m.failed),
        static_cast<long long>(m.calls),
        static_cast<long long>(m.failed_throttled),
        static_cast<long long>(m.failed_exhausted),
        static_cast<long long>(m.failed_other),
        std::abs(m.failed > 0 ? m.latest_past_policy : 0.0),
        m.failed > 0 && m.latest_past_policy > 0 ? "after" : "before");
    table += text;
    // The waiting calls end at their policy's end, give or take the timer
    // thread's lag, which a loaded machine stretches to 100-200 ms. The
    // exact check is the fake-clock simulation's (tests/simulation); here
    // a second of real time only catches gross overstays.
    if (!m.complete || m.failed_other > 0 ||
        (m.failed > 0 && m.latest_past_policy > 1.0 * s.scale)) {
      std::fprintf(stderr,
                   "insane: %s: complete %d, failed other %lld, latest "
                   "past its policy %.2f s (simulated)\n",
                   short_policy.name, m.complete ? 1 : 0,
                   static_cast<long long>(m.failed_other),
                   m.latest_past_policy);
      sane = false;
    }
  }
  return bench::FinishStudy(table, out, "storm_summary.md", csv_path, sane);
}

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) { return stubkit::Main(argc, argv); }

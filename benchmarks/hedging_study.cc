// Copyright 2026 The stubkit Authors.
//
// The hedging study (issue 27): tail latency and extra load of no hedging,
// a fixed hedging delay tuned to the steady state, and adaptive hedging
// (AdaptiveHedgingOption) under a 5 % budget, against a server whose
// latency is heavy-tailed, and then while every request is 5x slower.
//
//   hedging_study --out benchmarks/results   # about 2.5 minutes
//   hedging_study --smoke --out /tmp/hedge    # a few seconds, sanity only
//
// Without --out it writes to $TEST_TMPDIR when set, else ".".
//
// A callback gRPC server on 127.0.0.1 (the EchoService test proto) answers
// each request after a drawn delay, on a timer thread of its own (no
// server thread sleeps): 98 % uniform in [1.5, 2.5] ms, 2 % uniform in
// [100, 200] ms, drawn per request, so a hedge draws again. One client
// (async calls, a callback each) offers --rate calls per second (default
// 400, spread evenly), far below what the server can answer. Each variant
// runs on its own, in this order, on a fresh channel:
//
//   none      no hedging
//   fixed     HedgingPolicy(2 attempts, delay): the delay is the p95 of the
//             latency `none` measured, i.e. tuned to the steady state
//   adaptive  HedgingPolicy(2 attempts, the same delay as the fallback) +
//             AdaptiveHedging(p97, window 5 s, delay in [1 ms, 100 ms],
//             100 samples; budget 5 % of the calls + 1/s over 1 s)
//
// Phases of one run: 3 s warm-up (not measured), --steady s (default 30)
// of steady state, then --shift-before s (5) steady, --shift s (10) with
// every request 5x slower, --shift-after s (10) steady again.
//
// Steady state, per variant: p50, p99, p99.9 of the call latency (the
// client's, issue to callback), extra load (attempts the server saw per
// call - 1), and p99.9 as a ratio to the limit: the best p99.9 a hedging
// policy can reach with that extra load x, computed from the distribution
// `none` measured (L): one hedge at the delay d with P(L > d) = x, the
// call's latency min(L1, d + L2) for independent draws, whose p99.9 is
// computed over 2,000,000 draws; x gets two standard errors of its
// measurement. (A policy that only sees how long a call
// has waited can do no better with one extra attempt per call at most:
// hedging earlier than d costs more load, later than d makes the slow
// calls slower.)
//
// Shift: per second (by the call's start), each variant's calls, extra
// load and p99. Writes <out>/hedging.csv (variant, phase, second, calls,
// extra load, p99 ms), <out>/hedging_steady.csv (variant, p50, p99, p99.9,
// extra load) and <out>/hedging_summary.md, and prints the summary.
// Exits non-zero on figures that cannot be right (a call never ended, no
// calls), never on performance. benchmarks/hedging_chart.gp draws the CSV.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/study_output.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/channel.h"
#include "stubkit/hedging.h"
#include "stubkit/metrics.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using Steady = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

struct Scenario {
  double rate = 400;  // calls per second
  double warmup = 3;
  double steady = 30;
  double shift_before = 5;
  double shift = 10;
  double shift_after = 10;
  double slowdown = 5;

  double shift_start() const { return steady + shift_before; }
  double shift_end() const { return shift_start() + shift; }
  double end() const { return shift_end() + shift_after; }
};

// Finishes server calls when they are due: one thread for all of them.
class Finisher {
 public:
  Finisher() : thread_([this] { Loop(); }) {}
  ~Finisher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void At(Steady::time_point due, grpc::ServerUnaryReactor* reactor) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      due_.push(Due{due, reactor});
    }
    cv_.notify_all();
  }
  // Waits (at most `limit`) until no call is left to finish.
  void WaitIdle(nanoseconds limit) {
    const Steady::time_point until = Steady::now() + limit;
    std::unique_lock<std::mutex> lock(mu_);
    while (!due_.empty() && Steady::now() < until) {
      lock.unlock();
      std::this_thread::sleep_for(milliseconds(10));
      lock.lock();
    }
  }

 private:
  struct Due {
    Steady::time_point when;
    grpc::ServerUnaryReactor* reactor;
    bool operator>(const Due& o) const { return when > o.when; }
  };
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_ || !due_.empty()) {
      if (due_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const Due next = due_.top();
      if (Steady::now() < next.when && !stop_) {
        cv_.wait_until(lock, next.when);
        continue;
      }
      due_.pop();
      lock.unlock();
      next.reactor->Finish(grpc::Status::OK);
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  bool stop_ = false;
  std::thread thread_;
};

// The heavy-tailed server. Counts attempts per call (the request carries
// the call's number).
class TailServer final : public EchoService::CallbackService {
 public:
  explicit TailServer(Finisher& finisher) : finisher_(finisher) {}

  void Reset(size_t calls) { attempts_ = std::vector<std::atomic<int>>(calls); }
  void set_slowdown(double factor) { slowdown_.store(factor); }
  int attempts(size_t call) const { return attempts_[call].load(); }

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest* request,
                                 EchoResponse*) override {
    const size_t call = std::strtoull(request->message().c_str(), nullptr, 10);
    if (call < attempts_.size()) attempts_[call].fetch_add(1);
    nanoseconds delay;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const bool tail = std::bernoulli_distribution(0.02)(rng_);
      const double us =
          tail ? std::uniform_real_distribution<>(1e5, 2e5)(rng_)
               : std::uniform_real_distribution<>(1.5e3, 2.5e3)(rng_);
      delay = nanoseconds(static_cast<int64_t>(us * 1e3 * slowdown_.load()));
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    finisher_.At(Steady::now() + delay, reactor);
    return reactor;
  }

 private:
  Finisher& finisher_;
  std::mutex mu_;
  std::mt19937_64 rng_{27};
  std::atomic<double> slowdown_{1};
  std::vector<std::atomic<int>> attempts_;
};

enum class Mode { kNone, kFixed, kAdaptive };

struct Variant {
  const char* name;
  Mode mode;
};

constexpr Variant kVariants[] = {
    {"none", Mode::kNone},
    {"fixed", Mode::kFixed},
    {"adaptive", Mode::kAdaptive},
};

// One call as the client saw it.
struct CallRecord {
  double start = 0;  // seconds since the measured phases began (< 0: warm-up)
  std::atomic<int64_t> latency_ns{-1};
  std::atomic<bool> ok{false};
};

struct RunResult {
  std::vector<double> steady_ms;  // latencies of the steady phase
  double steady_extra = 0;
  int64_t steady_calls = 0;
  // Per second of the shift phases: calls, extra load, p99.
  struct Second {
    int calls = 0;
    double extra = 0;
    double p99_ms = 0;
  };
  std::vector<Second> shift;
  int64_t unfinished = 0;
  int64_t failed = 0;
  int64_t refused = 0;  // hedges the budget refused
  int64_t hedges = 0;
};

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = std::min(
      v.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1);
  return v[rank];
}

Options VariantOptions(Mode mode, nanoseconds fixed_delay,
                       const std::shared_ptr<MetricsCollector>& metrics) {
  Options options;
  options.set<MetricsOption>(metrics);
  if (mode == Mode::kNone) return options;
  options.set<HedgingPolicyOption>(
      HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(fixed_delay));
  if (mode == Mode::kAdaptive) {
    options.set<AdaptiveHedgingOption>(std::make_shared<AdaptiveHedging>(
        AdaptiveHedging::Config()
            .WithPercentile(0.97)
            .WithWindow(std::chrono::seconds(5))
            .WithMinDelay(milliseconds(1))
            .WithMaxDelay(milliseconds(100))
            .WithMinSamples(100)
            .WithMaxExtraLoad(0.05)
            .WithMinHedgesPerSecond(1)
            .WithBudgetWindow(std::chrono::seconds(1))));
  }
  return options;
}

RunResult RunVariant(const Scenario& s, Mode mode, nanoseconds fixed_delay,
                     TailServer& server, Finisher& finisher,
                     const std::string& address) {
  const double total = s.warmup + s.end();
  const size_t n = static_cast<size_t>(total * s.rate);
  server.Reset(n);
  server.set_slowdown(1);
  std::vector<CallRecord> calls(n);
  auto metrics = std::make_shared<MetricsCollector>();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a fresh connection
  EchoServiceClient client(
      CreateChannel(address, grpc::InsecureChannelCredentials(), args),
      VariantOptions(mode, fixed_delay, metrics));
  std::atomic<int64_t> done{0};
  const Steady::time_point origin =
      Steady::now() + std::chrono::duration_cast<nanoseconds>(
                          std::chrono::duration<double>(s.warmup));
  const Steady::time_point first = Steady::now();
  bool shifted = false;
  for (size_t i = 0; i < n; ++i) {
    const Steady::time_point due =
        first + std::chrono::duration_cast<nanoseconds>(
                    std::chrono::duration<double>(i / s.rate));
    std::this_thread::sleep_until(due);
    const double at =
        std::chrono::duration<double>(Steady::now() - origin).count();
    if (!shifted && at >= s.shift_start()) {
      server.set_slowdown(s.slowdown);
      shifted = true;
    }
    if (shifted && at >= s.shift_end()) server.set_slowdown(1);
    calls[i].start = at;
    EchoRequest request;
    request.set_message(std::to_string(i));
    const Steady::time_point start = Steady::now();
    CallRecord* record = &calls[i];
    client.AsyncEcho(
        request, [record, start, &done](absl::StatusOr<EchoResponse> r) {
          record->latency_ns.store((Steady::now() - start).count());
          record->ok.store(r.ok());
          done.fetch_add(1);
        });
  }
  for (int i = 0; i < 1000 && done.load() < static_cast<int64_t>(n); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  // Let the losers reach the server, and end there, before counting.
  std::this_thread::sleep_for(milliseconds(300));
  finisher.WaitIdle(std::chrono::seconds(3));

  RunResult result;
  result.unfinished = static_cast<int64_t>(n) - done.load();
  int64_t steady_attempts = 0;
  std::map<int, std::vector<double>> second_ms;
  std::map<int, int64_t> second_attempts;
  for (size_t i = 0; i < n; ++i) {
    const CallRecord& c = calls[i];
    const int64_t latency = c.latency_ns.load();
    if (latency < 0) continue;
    if (!c.ok.load()) ++result.failed;
    const double ms = latency / 1e6;
    if (c.start >= 0 && c.start < s.steady) {
      result.steady_ms.push_back(ms);
      steady_attempts += server.attempts(i);
    } else if (c.start >= s.steady && c.start < s.end()) {
      const int second = static_cast<int>(c.start - s.steady);
      second_ms[second].push_back(ms);
      second_attempts[second] += server.attempts(i);
    }
  }
  result.steady_calls = static_cast<int64_t>(result.steady_ms.size());
  if (result.steady_calls > 0) {
    result.steady_extra =
        static_cast<double>(steady_attempts) / result.steady_calls - 1;
  }
  for (const auto& [second, ms] : second_ms) {
    RunResult::Second sec;
    sec.calls = static_cast<int>(ms.size());
    sec.extra = static_cast<double>(second_attempts[second]) / sec.calls - 1;
    sec.p99_ms = Quantile(ms, 0.99);
    result.shift.push_back(sec);
  }
  for (const MethodMetrics& m : metrics->Snapshot()) {
    result.refused += m.hedges_refused_by_budget;
    result.hedges += m.hedges;
  }
  return result;
}

// The best p99.9 with extra load `x` measured over `calls` calls, from the
// distribution `none` measured. The load gets its sampling error (two
// standard errors of a share measured over `calls`): a policy that hedges
// exactly the 2 % tail sits on a cliff of the limit (just below the tail's
// share, the delay must jump past the body's end to 100 ms).
double LimitP999(const std::vector<double>& measured, double x, double calls) {
  std::vector<double> sorted = measured;
  std::sort(sorted.begin(), sorted.end());
  x += 2 * std::sqrt(x * (1 - x) / calls);
  const double d = Quantile(sorted, 1 - x);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<size_t> pick(0, sorted.size() - 1);
  std::vector<double> hedged(2'000'000);
  for (double& v : hedged) {
    v = std::min(sorted[pick(rng)], d + sorted[pick(rng)]);
  }
  return Quantile(std::move(hedged), 0.999);
}

std::string Format(const char* format, double a) {
  char text[64];
  std::snprintf(text, sizeof(text), format, a);
  return text;
}

int Main(int argc, char** argv) {
  Scenario s;
  std::string out = bench::DefaultOutDir();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> double {
      return i + 1 < argc ? std::atof(argv[++i]) : 0;
    };
    if (arg == "--smoke") {
      s.rate = 200;
      s.warmup = 0.5;
      s.steady = 1;
      s.shift_before = 1;
      s.shift = 1;
      s.shift_after = 1;
    } else if (arg == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--rate") {
      s.rate = value();
    } else if (arg == "--steady") {
      s.steady = value();
    } else {
      std::fprintf(stderr,
                   "usage: hedging_study [--smoke] [--out DIR] [--rate N] "
                   "[--steady SECONDS]\n");
      return 2;
    }
  }

  Finisher finisher;
  TailServer server(finisher);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&server);
  std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
  if (grpc_server == nullptr) {
    std::fprintf(stderr, "no server\n");
    return 1;
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);

  std::string csv_path;
  FILE* csv = bench::OpenCsv(out, "hedging.csv", &csv_path);
  if (csv == nullptr) return 1;
  std::fprintf(csv, "variant,phase,second,calls,extra_load,p99_ms\n");

  std::map<std::string, RunResult> results;
  nanoseconds fixed_delay{0};
  bool sane = true;
  for (const Variant& v : kVariants) {
    std::fprintf(stderr, "hedging_study: %s\n", v.name);
    RunResult r = RunVariant(s, v.mode, fixed_delay, server, finisher, address);
    if (v.mode == Mode::kNone) {
      // Tuned to the steady state: hedge at the p95 none measured.
      fixed_delay =
          nanoseconds(static_cast<int64_t>(Quantile(r.steady_ms, 0.95) * 1e6));
    }
    if (r.unfinished > 0 || r.steady_calls == 0) sane = false;
    for (size_t i = 0; i < r.shift.size(); ++i) {
      const double second = static_cast<double>(i);
      const char* phase = second < s.shift_before             ? "before"
                          : second < s.shift_before + s.shift ? "shift"
                                                              : "after";
      std::fprintf(csv, "%s,%s,%zu,%d,%.4f,%.3f\n", v.name, phase, i,
                   r.shift[i].calls, r.shift[i].extra, r.shift[i].p99_ms);
    }
    results[v.name] = std::move(r);
  }
  std::fclose(csv);

  const RunResult& none = results["none"];
  const double none_p999 = Quantile(none.steady_ms, 0.999);
  std::string steady_path;
  FILE* steady = bench::OpenCsv(out, "hedging_steady.csv", &steady_path);
  if (steady == nullptr) return 1;
  std::fprintf(steady, "variant,p50_ms,p99_ms,p999_ms,extra_load\n");
  for (const Variant& v : kVariants) {
    const RunResult& r = results[v.name];
    std::fprintf(steady, "%s,%.3f,%.3f,%.3f,%.4f\n", v.name,
                 Quantile(r.steady_ms, 0.5), Quantile(r.steady_ms, 0.99),
                 Quantile(r.steady_ms, 0.999), r.steady_extra);
  }
  std::fclose(steady);
  std::string table = "## Steady state\n\n";
  table += "Server latency: 98 % in [1.5, 2.5] ms, 2 % in [100, 200] ms; " +
           Format("%.0f", s.rate) + " calls/s for " + Format("%.0f", s.steady) +
           " s per variant. Fixed delay (the p95 " +
           "of `none`): " + Format("%.2f", fixed_delay.count() / 1e6) +
           " ms.\n\n";
  table +=
      "| variant | p50 ms | p99 ms | p99.9 ms | extra load | p99.9 vs none "
      "| limit p99.9 ms (same load) | p99.9 / limit |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const Variant& v : kVariants) {
    const RunResult& r = results[v.name];
    const double p999 = Quantile(r.steady_ms, 0.999);
    std::string limit = "-";
    std::string ratio = "-";
    if (v.mode != Mode::kNone && r.steady_extra > 0) {
      const double l = LimitP999(none.steady_ms, r.steady_extra,
                                 static_cast<double>(r.steady_calls));
      limit = Format("%.2f", l);
      ratio = Format("%.2f", p999 / l);
    }
    table += std::string("| ") + v.name + " | " +
             Format("%.2f", Quantile(r.steady_ms, 0.5)) + " | " +
             Format("%.2f", Quantile(r.steady_ms, 0.99)) + " | " +
             Format("%.2f", p999) + " | " +
             Format("%.1f %%", r.steady_extra * 100) + " | " +
             (v.mode == Mode::kNone ? std::string("1")
                                    : Format("1/%.1f", none_p999 / p999)) +
             " | " + limit + " | " + ratio + " |\n";
  }
  table += "\n## Shift: every request " + Format("%.0f", s.slowdown) +
           "x slower from " + Format("%.0f", s.shift_before) + " s to " +
           Format("%.0f", s.shift_before + s.shift) +
           " s\n\nExtra load per second (by the call's start); the budget "
           "allows 5 % of the calls + 1/s.\n\n| second |";
  for (const Variant& v : kVariants) table += std::string(" ") + v.name + " |";
  table += " adaptive's budget |\n| ---: |";
  for (size_t i = 0; i < std::size(kVariants) + 1; ++i) table += " ---: |";
  table += "\n";
  const size_t seconds = results["adaptive"].shift.size();
  int over_budget = 0;
  for (size_t i = 0; i < seconds; ++i) {
    const bool in_shift = i >= s.shift_before && i < s.shift_before + s.shift;
    table += "| " + std::to_string(i) + (in_shift ? " (5x)" : "") + " |";
    for (const Variant& v : kVariants) {
      const auto& shift = results[v.name].shift;
      table += i < shift.size() ? Format(" %.1f %% |", shift[i].extra * 100)
                                : std::string(" - |");
    }
    const RunResult::Second& a = results["adaptive"].shift[i];
    const double budget = a.calls > 0 ? 0.05 + 1.0 / a.calls : 0;
    if (a.extra > budget) ++over_budget;
    table += Format(" %.1f %% |\n", budget * 100);
  }
  table += "\nAdaptive: " + std::to_string(results["adaptive"].hedges) +
           " hedges sent, " + std::to_string(results["adaptive"].refused) +
           " refused by the budget over the run; " +
           std::to_string(over_budget) +
           " second(s) above its budget. Failed calls: ";
  for (const Variant& v : kVariants) {
    table += std::string(v.name) + " " +
             std::to_string(results[v.name].failed) + ", ";
  }
  table.resize(table.size() - 2);
  table += ".\n";
  finisher.WaitIdle(std::chrono::seconds(3));
  grpc_server->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::seconds(1));
  return bench::FinishStudy(table, out, "hedging_summary.md", csv_path, sane);
}

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) { return stubkit::Main(argc, argv); }

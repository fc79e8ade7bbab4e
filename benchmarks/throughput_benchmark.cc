// Copyright 2026 The stubkit Authors.
//
// Throughput under concurrency: 64 async unary calls kept in flight from 2
// client threads (32 each), for a fixed number of calls, against an
// in-process server and a TCP server on 127.0.0.1. stubkit's AsyncEcho
// (callback form, default options) and the raw callback stub with the same
// 30-minute deadline run interleaved in one process, alternating which goes
// first, so that load elsewhere on the machine hits both alike.
//
//   throughput_benchmark                  # 7 repetitions of 10,000 calls
//   throughput_benchmark --calls N --repetitions R
//   throughput_benchmark --smoke          # seconds; sanity only (ctest)
//   valgrind --tool=callgrind --instr-atstart=no throughput_benchmark
//       --instructions 2000                # instructions per call
//
// Prints calls per second and p50/p99 latency (start to callback) per
// variant: the median over the repetitions, with their min-max spread, and
// stubkit's ratio to the raw stub. Wall-clock figures on a shared machine
// are noisy; the instruction counts (callgrind, every thread) are the
// deterministic companion.

#include <grpcpp/grpcpp.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using Steady = std::chrono::steady_clock;

constexpr int kThreads = 2;
constexpr int kInFlightPerThread = 32;  // 64 in all

class EchoImpl final : public EchoService::Service {
  grpc::Status Echo(grpc::ServerContext*, const EchoRequest* request,
                    EchoResponse* response) override {
    response->set_message(request->message());
    return grpc::Status::OK;
  }
};

enum Kind { kInProcess = 0, kTcp = 1 };
constexpr const char* kKindNames[] = {"inproc", "tcp"};
enum Variant { kRaw = 0, kStubkit = 1 };
constexpr const char* kVariantNames[] = {"async_raw_deadline",
                                         "async_stubkit_callback"};

struct Fixture {
  Fixture() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    if (server == nullptr || port == 0) {
      std::fprintf(stderr, "cannot start the server on 127.0.0.1\n");
      std::exit(1);
    }
    channels[kInProcess] = server->InProcessChannel(grpc::ChannelArguments());
    channels[kTcp] = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                         grpc::InsecureChannelCredentials());
    for (int kind : {kInProcess, kTcp}) {
      stubs[kind] = EchoService::NewStub(channels[kind]);
      clients[kind] = std::make_unique<EchoServiceClient>(channels[kind]);
    }
    request.set_message("hello");
  }
  EchoImpl service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channels[2];
  std::unique_ptr<EchoService::Stub> stubs[2];
  std::unique_ptr<EchoServiceClient> clients[2];
  EchoRequest request;
};

// One client thread's share: keeps kInFlightPerThread calls in flight until
// it has started `calls`, and records each call's latency in nanoseconds.
class Driver {
 public:
  Driver(Fixture& f, Kind kind, Variant variant, int calls)
      : f_(f), kind_(kind), variant_(variant), latencies_(calls) {}

  void Run() {
    const int calls = static_cast<int>(latencies_.size());
    for (int i = 0; i < calls; ++i) {
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](int* n) { return *n < kInFlightPerThread; }, &in_flight_));
        ++in_flight_;
      }
      Start(i);
    }
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &in_flight_));
  }

  int failures() const { return failures_.load(); }
  std::vector<int64_t>& latencies() { return latencies_; }

 private:
  struct RawCall {
    grpc::ClientContext context;
    EchoResponse response;
  };

  void Start(int i) {
    const Steady::time_point start = Steady::now();
    if (variant_ == kRaw) {
      auto* call = new RawCall;
      call->context.set_deadline(std::chrono::system_clock::now() +
                                 std::chrono::minutes(30));
      f_.stubs[kind_]->async()->Echo(
          &call->context, &f_.request, &call->response,
          [this, call, i, start](grpc::Status status) {
            delete call;
            Done(i, start, status.ok());
          });
    } else {
      f_.clients[kind_]->AsyncEcho(
          f_.request, [this, i, start](absl::StatusOr<EchoResponse> response) {
            Done(i, start, response.ok());
          });
    }
  }

  void Done(int i, Steady::time_point start, bool ok) {
    latencies_[i] = (Steady::now() - start).count();
    if (!ok) failures_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }

  Fixture& f_;
  const Kind kind_;
  const Variant variant_;
  std::vector<int64_t> latencies_;
  std::atomic<int> failures_{0};
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

struct Result {
  double calls_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
  int failures = 0;
};

Result RunOnce(Fixture& f, Kind kind, Variant variant, int calls) {
  std::vector<std::unique_ptr<Driver>> drivers;
  for (int t = 0; t < kThreads; ++t) {
    drivers.push_back(
        std::make_unique<Driver>(f, kind, variant, calls / kThreads));
  }
  const Steady::time_point start = Steady::now();
  std::vector<std::thread> threads;
  for (auto& driver : drivers) {
    threads.emplace_back([&driver] { driver->Run(); });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(Steady::now() - start).count();
  std::vector<int64_t> all;
  Result result;
  for (auto& driver : drivers) {
    all.insert(all.end(), driver->latencies().begin(),
               driver->latencies().end());
    result.failures += driver->failures();
  }
  // Kept, not destroyed: a callback may still be returning from Done().
  static auto* const finished = new std::vector<std::unique_ptr<Driver>>;
  for (auto& driver : drivers) {
    driver->latencies().clear();
    driver->latencies().shrink_to_fit();
    finished->push_back(std::move(driver));
  }
  std::sort(all.begin(), all.end());
  result.calls_per_second = static_cast<double>(all.size()) / seconds;
  result.p50_us = all[all.size() / 2] / 1000.0;
  result.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)] / 1000.0;
  return result;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Spread {
  double median, min, max;
};
Spread SpreadOf(const std::vector<double>& v) {
  return {Median(v), *std::min_element(v.begin(), v.end()),
          *std::max_element(v.begin(), v.end())};
}

// Runs `calls` of each variant with callgrind collecting around them only.
bool CountInstructions(Fixture& f, int calls) {
  bool ok = true;
  for (Kind kind : {kInProcess, kTcp}) {
    for (Variant variant : {kRaw, kStubkit}) {
      ok = RunOnce(f, kind, variant, 256).failures == 0 && ok;  // warm up
      const std::string name = std::string(kKindNames[kind]) + "/throughput_" +
                               kVariantNames[variant];
      CALLGRIND_ZERO_STATS;
      CALLGRIND_START_INSTRUMENTATION;
      ok = RunOnce(f, kind, variant, calls).failures == 0 && ok;
      CALLGRIND_STOP_INSTRUMENTATION;
      CALLGRIND_DUMP_STATS_AT(name.c_str());
      std::printf("counted %d calls of %s\n", calls, name.c_str());
    }
  }
  return ok;
}

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) {
  using namespace stubkit;  // NOLINT
  int calls = 10000;
  int repetitions = 7;
  int instructions = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      calls = 1000;
      repetitions = 2;
    } else if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--repetitions") == 0 && i + 1 < argc) {
      repetitions = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--instructions") == 0 && i + 1 < argc) {
      instructions = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  calls = std::max(calls / kThreads * kThreads, kThreads);
  Fixture& f = *new Fixture;  // never destroyed: calls may still return
  if (instructions > 0) return CountInstructions(f, instructions) ? 0 : 1;

  // [kind][variant] -> per repetition
  std::map<std::pair<int, int>, std::vector<Result>> results;
  for (Kind kind : {kInProcess, kTcp}) {
    RunOnce(f, kind, kRaw, 512);  // warm up: connections, threads, arenas
    RunOnce(f, kind, kStubkit, 512);
  }
  bool sane = true;
  for (int rep = 0; rep < repetitions; ++rep) {
    for (Kind kind : {kInProcess, kTcp}) {
      // Alternate which variant goes first.
      for (int k = 0; k < 2; ++k) {
        const Variant variant = static_cast<Variant>((rep + k) % 2);
        Result r = RunOnce(f, kind, variant, calls);
        if (r.failures != 0) sane = false;
        results[{kind, variant}].push_back(r);
      }
    }
  }
  std::printf(
      "\n%d calls per run, 64 in flight from %d threads, %d repetitions "
      "interleaved; medians [min-max]\n",
      calls, kThreads, repetitions);
  std::printf("| %-6s | %-22s | %-26s | %-22s | %-22s |\n", "server", "variant",
              "calls/s", "p50 us", "p99 us");
  std::printf("| --- | --- | ---: | ---: | ---: |\n");
  for (Kind kind : {kInProcess, kTcp}) {
    Spread s[2][3];
    for (Variant variant : {kRaw, kStubkit}) {
      std::vector<double> cps, p50, p99;
      for (const Result& r : results[{kind, variant}]) {
        cps.push_back(r.calls_per_second);
        p50.push_back(r.p50_us);
        p99.push_back(r.p99_us);
      }
      s[variant][0] = SpreadOf(cps);
      s[variant][1] = SpreadOf(p50);
      s[variant][2] = SpreadOf(p99);
      std::printf(
          "| %-6s | %-22s | %8.0f [%6.0f-%6.0f] | %6.0f [%5.0f-%5.0f] | "
          "%6.0f [%5.0f-%5.0f] |\n",
          kKindNames[kind], kVariantNames[variant], s[variant][0].median,
          s[variant][0].min, s[variant][0].max, s[variant][1].median,
          s[variant][1].min, s[variant][1].max, s[variant][2].median,
          s[variant][2].min, s[variant][2].max);
      if (!(s[variant][0].median > 0) || !(s[variant][2].median > 0)) {
        sane = false;
      }
    }
    std::printf("| %-6s | %-22s | %25.3fx | %21.3fx | %21.3fx |\n",
                kKindNames[kind], "stubkit / raw",
                s[kStubkit][0].median / s[kRaw][0].median,
                s[kStubkit][1].median / s[kRaw][1].median,
                s[kStubkit][2].median / s[kRaw][2].median);
  }
  if (!sane) std::fprintf(stderr, "a call failed, or insane figures\n");
  return sane ? 0 : 1;
}

// Copyright 2026 The stubkit Authors.
//
// The success-path cost of stubkit's retry loop, measured against the raw
// grpc_cpp_plugin stub in the same run on an in-process channel.
//
//   retry_loop_benchmark                 # full run, prints a ratio table
//   retry_loop_benchmark --smoke         # seconds-long sanity run (CI)
//
// Besides Google Benchmark's own table, it prints for each stubkit variant
// the median latency and CPU time as ratios to the raw stub, and the heap
// allocations per call (global operator new) over the raw stub's.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include "benchmarks/alloc_counter.h"
#include "stubkit/retry_loop.h"
#include "stubkit/testing/echo.grpc.pb.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo",
                           RpcKind::kUnary, Idempotency::kIdempotent};

class EchoImpl final : public EchoService::Service {
  grpc::Status Echo(grpc::ServerContext*, const EchoRequest* request,
                    EchoResponse* response) override {
    response->set_message(request->message());
    return grpc::Status::OK;
  }
};

// One server per process, shared by every benchmark so that all variants
// talk to the same thing.
struct Fixture {
  Fixture() {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    channel = server->InProcessChannel(grpc::ChannelArguments());
    stub = EchoService::NewStub(channel);
    request.set_message("hello");
  }
  EchoImpl service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<EchoService::Stub> stub;
  EchoRequest request;
};

Fixture& GetFixture() {
  static Fixture* const fixture = new Fixture;
  return *fixture;
}

void ReportAllocations(benchmark::State& state, uint64_t before) {
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(bench::Allocations() - before) /
      static_cast<double>(state.iterations()));
}

void BM_RawStub(benchmark::State& state) {
  Fixture& f = GetFixture();
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    grpc::ClientContext context;
    EchoResponse response;
    grpc::Status status = f.stub->Echo(&context, f.request, &response);
    if (!status.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

absl::StatusOr<EchoResponse> StubkitEcho(Fixture& f, const Options& call,
                                         const Options& client);

void BM_RawStubWithDeadline(benchmark::State& state) {
  Fixture& f = GetFixture();
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::minutes(30));
    EchoResponse response;
    grpc::Status status = f.stub->Echo(&context, f.request, &response);
    if (!status.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

void BM_RetryLoopNoDeadline(benchmark::State& state) {
  Fixture& f = GetFixture();
  const auto client =
      Options{}.set<RetryPolicyOption>(LimitedErrorCountRetryPolicy(5));
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    absl::StatusOr<EchoResponse> response = StubkitEcho(f, Options{}, client);
    if (!response.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

absl::StatusOr<EchoResponse> StubkitEcho(Fixture& f, const Options& call,
                                         const Options& client) {
  return RetryLoop<EchoResponse>(
      kEcho, OptionsView(call, client),
      [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
        EchoResponse response;
        grpc::Status status = f.stub->Echo(&context, f.request, &response);
        if (!status.ok()) return FromGrpcStatus(status);
        return response;
      });
}

void BM_RetryLoopDefaultOptions(benchmark::State& state) {
  Fixture& f = GetFixture();
  const Options client;
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    absl::StatusOr<EchoResponse> response = StubkitEcho(f, Options{}, client);
    if (!response.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

void BM_RetryLoopConfiguredClient(benchmark::State& state) {
  Fixture& f = GetFixture();
  using std::chrono::milliseconds;
  const auto client =
      Options{}
          .set<RetryPolicyOption>(LimitedErrorCountRetryPolicy(5))
          .set<BackoffPolicyOption>(ExponentialBackoffPolicy(
              milliseconds(10), milliseconds(500), 1.5, Jitter::Full()))
          .set<AttemptTimeoutOption>(std::chrono::seconds(10))
          .set<IdempotencyMapOption>(
              {{"stubkit.testing.EchoService.Append",
                Idempotency::kIdempotent}});
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    absl::StatusOr<EchoResponse> response = StubkitEcho(f, Options{}, client);
    if (!response.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

// Micro-benchmarks of the pieces the loop consults.
void BM_OptionLookupAbsent(benchmark::State& state) {
  const auto client = Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(1));
  const Options call;
  OptionsView view(call, client);
  for (auto _ : state) {
    benchmark::DoNotOptimize(&view.get<BackoffPolicyOption>());
  }
}

void BM_OptionLookupFromClient(benchmark::State& state) {
  const auto client = Options{}
                          .set<AttemptTimeoutOption>(std::chrono::seconds(1))
                          .set<RetryPolicyOption>(LimitedErrorCountRetryPolicy(2));
  const auto call = Options{}.set<TotalTimeoutOption>(std::chrono::seconds(5));
  OptionsView view(call, client);
  for (auto _ : state) {
    benchmark::DoNotOptimize(&view.get<RetryPolicyOption>());
  }
}

void BM_BackoffDelay(benchmark::State& state) {
  ExponentialBackoffPolicy policy;
  int retry = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy.DelayFor(retry));
    retry = (retry + 1) & 15;
  }
}

BENCHMARK(BM_RawStub)->UseRealTime();
BENCHMARK(BM_RawStubWithDeadline)->UseRealTime();
BENCHMARK(BM_RetryLoopDefaultOptions)->UseRealTime();
BENCHMARK(BM_RetryLoopNoDeadline)->UseRealTime();
BENCHMARK(BM_RetryLoopConfiguredClient)->UseRealTime();
BENCHMARK(BM_OptionLookupAbsent);
BENCHMARK(BM_OptionLookupFromClient);
BENCHMARK(BM_BackoffDelay);

// Collects the median (or single) runs, so ratios can be printed at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  struct Figures {
    double real_ns = 0;
    double cpu_ns = 0;
    double allocs = 0;
  };

  RatioReporter() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) errors_ = true;
      const bool aggregate = run.run_type == Run::RT_Aggregate;
      if (aggregate && run.aggregate_name != "median") continue;
      std::string name = run.run_name.function_name;
      if (!aggregate && figures_.count(name) > 0) continue;
      Figures& f = figures_[name];
      f.real_ns = run.GetAdjustedRealTime();
      f.cpu_ns = run.GetAdjustedCPUTime();
      auto allocs = run.counters.find("allocs_per_call");
      f.allocs = allocs == run.counters.end() ? 0 : allocs->second.value;
    }
  }

  // Prints each stubkit variant against the raw stub doing the same gRPC
  // work (a call with a deadline makes gRPC arm a timer, which allocates, so
  // the baseline sets the same deadline). Returns false on insane figures.
  bool PrintRatios() const {
    static constexpr std::pair<const char*, const char*> kPairs[] = {
        {"BM_RetryLoopDefaultOptions", "BM_RawStubWithDeadline"},
        {"BM_RetryLoopConfiguredClient", "BM_RawStubWithDeadline"},
        {"BM_RetryLoopNoDeadline", "BM_RawStub"},
    };
    bool sane = !errors_;
    std::printf("\n%-30s %-24s %9s %9s %12s\n", "variant", "baseline",
                "latency", "cpu", "allocs/call");
    for (const auto& [variant, baseline] : kPairs) {
      auto v = figures_.find(variant);
      auto b = figures_.find(baseline);
      if (v == figures_.end() || b == figures_.end()) continue;
      double latency = v->second.real_ns / b->second.real_ns;
      double cpu = v->second.cpu_ns / b->second.cpu_ns;
      double allocs = v->second.allocs - b->second.allocs;
      std::printf("%-30s %-24s %8.3fx %8.3fx %+12.2f\n", variant, baseline,
                  latency, cpu, allocs);
      if (!std::isfinite(latency) || latency <= 0 || !std::isfinite(cpu)) {
        sane = false;
      }
    }
    auto raw = figures_.find("BM_RawStub");
    if (raw == figures_.end() || raw->second.real_ns <= 0) sane = false;
    return sane;
  }

 private:
  std::map<std::string, Figures> figures_;
  bool errors_ = false;
};

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  static char kMinTime[] = "--benchmark_min_time=0.01";
  static char kRepetitions[] = "--benchmark_repetitions=10";
  static char kAggregates[] = "--benchmark_report_aggregates_only=true";
  bool smoke = false;
  for (auto it = args.begin() + 1; it != args.end();) {
    if (std::strcmp(*it, "--smoke") == 0) {
      smoke = true;
      it = args.erase(it);
    } else {
      ++it;
    }
  }
  if (smoke) {
    args.push_back(kMinTime);
  } else {
    args.insert(args.begin() + 1, kAggregates);
    args.insert(args.begin() + 1, kRepetitions);
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  stubkit::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  bool sane = reporter.PrintRatios();
  benchmark::Shutdown();
  return sane ? 0 : 1;
}

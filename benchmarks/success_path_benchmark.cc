// Copyright 2026 The stubkit Authors.
//
// The success-path cost of stubkit, measured in one run against the raw
// grpc_cpp_plugin stub and against gRPC's own (service config) retries, on
// an in-process channel and on TCP over 127.0.0.1.
//
//   success_path_benchmark                 # full run, prints ratio tables
//   success_path_benchmark --smoke         # seconds-long sanity run (CI)
//   success_path_benchmark --benchmark_filter=tcp/   # any Google Benchmark
//   flag
//
// Wall and CPU time are noisy on a shared machine. For a deterministic
// measure, count instructions under callgrind (benchmarks/run --instructions):
//
//   valgrind --tool=callgrind --collect-atstart=no (continued)
//       success_path_benchmark --instructions 1000
//
// runs 1000 calls of each sync and async variant with collection switched
// on around the calls only, and dumps one profile per variant; every thread
// is counted (client, server and gRPC's), and callgrind runs them one at a
// time. benchmarks/callgrind_per_call.sh turns the dumps into a table.
//
// Variants, per channel (`inproc/` or `tcp/`):
//   raw                  grpc_cpp_plugin stub, no deadline
//   raw_deadline         the same with a 30-minute deadline, which is what
//                        stubkit's default retry policy sets on every
//                        attempt; a deadline makes gRPC arm a timer, and that
//                        allocates, so this is the fair baseline for stubkit
//   grpc_retries         raw stub on a channel whose service config has a
//                        retryPolicy (in-process channels have no client
//                        channel, so gRPC ignores it there)
//   stubkit_default      generated EchoServiceClient, default options
//   stubkit_call_options the same with per-call Options built for each call
//   stubkit_decorated    logging configured but off, observer, throttle,
//                        metrics and a pass-through user stub decorator
//   stubkit_no_deadline  a count-limited retry policy: no deadline at all,
//                        compared with the raw stub without one
//   stubkit_throttle     default options plus a RetryThrottle (token bucket)
//   stubkit_budget       default options plus a RetryBudget instead: its
//                        success path (one deposit per call) against the
//                        bucket's (one load)
//   stubkit_hedge        a HedgingPolicy (2 attempts, a 10 s delay that
//                        never passes): the hedged path's success
//   stubkit_adaptive_hedge  the same plus an AdaptiveHedging whose delay is
//                        clamped to [10 s, 20 s]: every call records its
//                        latency, deposits in the budget and asks for the
//                        learned delay, and no hedge is ever sent
//   async_raw[_deadline] the callback stub, stub->async()->Echo(...); it and
//                        async_stubkit_callback wait with the same
//                        `Completion` (mutex + condition variable)
//   async_stubkit_future / async_stubkit_callback   AsyncEcho
// and micro-benchmarks of option lookup, one backoff computation and the
// retry decision.
//
// Latency is wall time per call; CPU is the whole process's CPU time per
// call (client, server and gRPC threads); allocations are global operator
// new calls per call. The tables at the end give each stubkit variant's
// ratio to the raw stub measured in the same run.

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <valgrind/callgrind.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "benchmarks/alloc_counter.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/logging.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::EchoServiceStub;
using ::stubkit::testing::EchoServiceStubDecorator;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};

// gRPC's own retries, configured as a user of raw gRPC would.
constexpr char kRetryServiceConfig[] = R"json({
  "methodConfig": [{
    "name": [{"service": "stubkit.testing.EchoService"}],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "1s",
      "maxBackoff": "300s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json";

class EchoImpl final : public EchoService::Service {
  grpc::Status Echo(grpc::ServerContext*, const EchoRequest* request,
                    EchoResponse* response) override {
    response->set_message(request->message());
    return grpc::Status::OK;
  }
};

// Does nothing but forward: the cost of one user decorator layer.
class PassThroughStub final : public EchoServiceStubDecorator {
 public:
  using EchoServiceStubDecorator::EchoServiceStubDecorator;
};

class NullSink final : public LogSink {
 public:
  void Write(absl::string_view) override {}
};

Options DecoratedOptions() {
  return Options{}
      .set<LogLevelOption>(LogLevel::kOff)
      .set<LogSinkOption>(std::make_shared<NullSink>())
      .set<RetryObserverOption>([](const AttemptEvent& event) {
        benchmark::DoNotOptimize(event.attempt);
      })
      .set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
          RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1)))
      .set<MetricsOption>(std::make_shared<MetricsCollector>())
      .set<EchoServiceClient::DecoratorsOption>(
          {[](std::shared_ptr<EchoServiceStub> child) {
            return std::make_shared<PassThroughStub>(std::move(child));
          }});
}

enum ChannelKind { kInProcess = 0, kTcp = 1 };
constexpr const char* kChannelNames[] = {"inproc", "tcp"};

struct PerChannel {
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<grpc::Channel> retry_channel;
  std::unique_ptr<EchoService::Stub> stub;
  std::unique_ptr<EchoService::Stub> retry_stub;
  std::unique_ptr<EchoServiceClient> client;
  std::unique_ptr<EchoServiceClient> decorated;
  std::unique_ptr<EchoServiceClient> no_deadline;
  std::unique_ptr<EchoServiceClient> throttled;
  std::unique_ptr<EchoServiceClient> budgeted;
  std::unique_ptr<EchoServiceClient> hedged;
  std::unique_ptr<EchoServiceClient> adaptive;
};

// 2 attempts, a hedging delay no call reaches (not even under callgrind).
Options HedgedOptions() {
  return Options{}.set<HedgingPolicyOption>(
      HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
          std::chrono::seconds(10)));
}

// One server per process, shared by every benchmark so that all variants
// talk to the same thing.
struct Fixture {
  Fixture() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    if (server == nullptr || port == 0) {
      std::fprintf(stderr, "cannot start the server on 127.0.0.1\n");
      std::exit(1);
    }
    const std::string address = "127.0.0.1:" + std::to_string(port);
    grpc::ChannelArguments plain;
    grpc::ChannelArguments retrying;
    retrying.SetServiceConfigJSON(kRetryServiceConfig);
    // Separate connections for the plain and the retrying channels.
    retrying.SetInt("stubkit.bench.retry_channel", 1);
    for (int kind : {kInProcess, kTcp}) {
      PerChannel& c = channels[kind];
      if (kind == kInProcess) {
        c.channel = server->InProcessChannel(plain);
        c.retry_channel = server->InProcessChannel(retrying);
      } else {
        c.channel = grpc::CreateCustomChannel(
            address, grpc::InsecureChannelCredentials(), plain);
        c.retry_channel = grpc::CreateCustomChannel(
            address, grpc::InsecureChannelCredentials(), retrying);
      }
      c.stub = EchoService::NewStub(c.channel);
      c.retry_stub = EchoService::NewStub(c.retry_channel);
      c.client = std::make_unique<EchoServiceClient>(c.channel);
      c.decorated =
          std::make_unique<EchoServiceClient>(c.channel, DecoratedOptions());
      // A count-limited policy sets no deadline: stubkit's own cost against
      // the raw stub without one.
      c.no_deadline = std::make_unique<EchoServiceClient>(
          c.channel,
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5)));
      c.throttled = std::make_unique<EchoServiceClient>(
          c.channel,
          Options{}.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
              RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1))));
      c.budgeted = std::make_unique<EchoServiceClient>(
          c.channel, Options{}.set<RetryBudgetOption>(
                         std::make_shared<RetryBudget>(RetryBudget::Config())));
      c.hedged =
          std::make_unique<EchoServiceClient>(c.channel, HedgedOptions());
      c.adaptive = std::make_unique<EchoServiceClient>(
          c.channel, HedgedOptions().set<AdaptiveHedgingOption>(
                         std::make_shared<AdaptiveHedging>(
                             AdaptiveHedging::Config()
                                 .WithMinDelay(std::chrono::seconds(10))
                                 .WithMaxDelay(std::chrono::seconds(20)))));
    }
    request.set_message("hello");
  }
  EchoImpl service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
  PerChannel channels[2];
  EchoRequest request;
};

Fixture& GetFixture() {
  static Fixture* const fixture = new Fixture;
  return *fixture;
}

void ReportAllocations(benchmark::State& state, uint64_t before) {
  state.counters["allocs_per_call"] =
      benchmark::Counter(static_cast<double>(bench::Allocations() - before) /
                         static_cast<double>(state.iterations()));
}

std::chrono::system_clock::time_point ThirtyMinutes() {
  return std::chrono::system_clock::now() + std::chrono::minutes(30);
}

// ---- sync ----------------------------------------------------------------

void BM_Raw(benchmark::State& state, ChannelKind kind, bool deadline,
            bool grpc_retries) {
  PerChannel& c = GetFixture().channels[kind];
  EchoService::Stub* stub = grpc_retries ? c.retry_stub.get() : c.stub.get();
  const EchoRequest& request = GetFixture().request;
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    grpc::ClientContext context;
    if (deadline) context.set_deadline(ThirtyMinutes());
    EchoResponse response;
    grpc::Status status = stub->Echo(&context, request, &response);
    if (!status.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

enum class Client {
  kDefault,
  kDecorated,
  kNoDeadline,
  kThrottle,
  kBudget,
  kHedge,
  kAdaptiveHedge
};

void BM_Stubkit(benchmark::State& state, ChannelKind kind, Client which,
                bool call_options) {
  PerChannel& c = GetFixture().channels[kind];
  EchoServiceClient& client = which == Client::kDecorated       ? *c.decorated
                              : which == Client::kNoDeadline    ? *c.no_deadline
                              : which == Client::kThrottle      ? *c.throttled
                              : which == Client::kBudget        ? *c.budgeted
                              : which == Client::kHedge         ? *c.hedged
                              : which == Client::kAdaptiveHedge ? *c.adaptive
                                                                : *c.client;
  const EchoRequest& request = GetFixture().request;
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    absl::StatusOr<EchoResponse> response =
        call_options ? client.Echo(request, Options{}.set<AttemptTimeoutOption>(
                                                std::chrono::seconds(20)))
                     : client.Echo(request);
    if (!response.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

// What the per-call `Options` of BM_Stubkit(call_options) allocates by
// itself: the part of that variant's cost the user asked for.
void BM_CallOptionsObject(benchmark::State& state) {
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    Options call =
        Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(20));
    benchmark::DoNotOptimize(call);
  }
  ReportAllocations(state, before);
}

// ---- async ---------------------------------------------------------------

// How the async callback variants (raw and stubkit alike) wait for their
// callback: the same primitive for both, so the ratio measures stubkit, not
// the harness. It was absl::Notification, also the same for both; under
// callgrind its wait and notify cost ~1,600 instructions per call in each
// variant (Debian's abseil tracks every Mutex for deadlock detection, and
// absl::Mutex spins when contended, so that part varies with thread timing).
// A plain mutex and condition variable cost ~400, never spin (glibc blocks
// in the kernel, which callgrind does not count) and allocate nothing: less
// harness in both the numerator and the denominator, and no spinning.
class Completion {
 public:
  // Notifies under the lock: the waiter may destroy this object as soon as
  // it sees done_, so nothing may touch cv_ after the lock is released.
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_one();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

void BM_AsyncRaw(benchmark::State& state, ChannelKind kind, bool deadline) {
  PerChannel& c = GetFixture().channels[kind];
  const EchoRequest& request = GetFixture().request;
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    grpc::ClientContext context;
    if (deadline) context.set_deadline(ThirtyMinutes());
    EchoResponse response;
    grpc::Status status;
    Completion done;
    c.stub->async()->Echo(&context, &request, &response,
                          [&status, &done](grpc::Status s) {
                            status = std::move(s);
                            done.Notify();
                          });
    done.Wait();
    if (!status.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

void BM_AsyncStubkitFuture(benchmark::State& state, ChannelKind kind) {
  EchoServiceClient& client = *GetFixture().channels[kind].client;
  const EchoRequest& request = GetFixture().request;
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    absl::StatusOr<EchoResponse> response = client.AsyncEcho(request).get();
    if (!response.ok()) state.SkipWithError("call failed");
    benchmark::DoNotOptimize(response);
  }
  ReportAllocations(state, before);
}

void BM_AsyncStubkitCallback(benchmark::State& state, ChannelKind kind) {
  EchoServiceClient& client = *GetFixture().channels[kind].client;
  const EchoRequest& request = GetFixture().request;
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    bool ok = false;
    Completion done;
    client.AsyncEcho(request, [&ok, &done](absl::StatusOr<EchoResponse> r) {
      ok = r.ok();
      done.Notify();
    });
    done.Wait();
    if (!ok) state.SkipWithError("call failed");
  }
  ReportAllocations(state, before);
}

// ---- micro-benchmarks ----------------------------------------------------

void BM_OptionLookup_Absent(benchmark::State& state) {
  const auto client =
      Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(1));
  const Options call;
  OptionsView view(call, client);
  for (auto _ : state) {
    benchmark::DoNotOptimize(&view.get<BackoffPolicyOption>());
  }
}

void BM_OptionLookup_FromClient(benchmark::State& state) {
  const auto client =
      Options{}
          .set<AttemptTimeoutOption>(std::chrono::seconds(1))
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2));
  const auto call = Options{}.set<TotalTimeoutOption>(std::chrono::seconds(5));
  OptionsView view(call, client);
  for (auto _ : state) {
    benchmark::DoNotOptimize(&view.get<RetryPolicyOption>());
  }
}

void BM_OptionLookup_CallOverClient(benchmark::State& state) {
  const auto client =
      Options{}
          .set<AttemptTimeoutOption>(std::chrono::seconds(1))
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2));
  const auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3));
  OptionsView view(call, client);
  for (auto _ : state) {
    benchmark::DoNotOptimize(&view.get<RetryPolicyOption>());
  }
}

void BM_BackoffDelay(benchmark::State& state) {
  ExponentialBackoffPolicy policy;  // the default jitter draws a number
  int retry = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy.DelayFor(retry));
    retry = (retry + 1) & 15;
  }
}

// Building the per-call decision state: what every call pays up front.
void BM_RetryStateSetup(benchmark::State& state) {
  const Options client;
  const Options call;
  OptionsView view(call, client);
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    internal::RetryLoopState loop(kEcho, view);
    benchmark::DoNotOptimize(loop.facts().end);
  }
  ReportAllocations(state, before);
}

// One retry decision after a retryable failure (UNAVAILABLE, idempotent,
// default policies): what a failed attempt costs besides the wait.
void BM_RetryDecision(benchmark::State& state) {
  const Options client;
  const Options call;
  OptionsView view(call, client);
  internal::RetryLoopState loop(kEcho, view);
  grpc::ClientContext context;
  loop.PrepareAttempt(context);
  const absl::Status failure = absl::UnavailableError("backend down");
  const uint64_t before = bench::Allocations();
  for (auto _ : state) {
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    if (!loop.OnFailure(failure, context, &final_status, &wait)) {
      state.SkipWithError("the loop stopped");
      break;
    }
    benchmark::DoNotOptimize(wait);
  }
  ReportAllocations(state, before);
}

void RegisterAll() {
  for (ChannelKind kind : {kInProcess, kTcp}) {
    const std::string p = std::string(kChannelNames[kind]) + "/";
    auto call = [](benchmark::internal::Benchmark* b) {
      b->UseRealTime()->MeasureProcessCPUTime();
    };
    call(benchmark::RegisterBenchmark((p + "raw").c_str(), BM_Raw, kind, false,
                                      false));
    call(benchmark::RegisterBenchmark((p + "raw_deadline").c_str(), BM_Raw,
                                      kind, true, false));
    call(benchmark::RegisterBenchmark((p + "grpc_retries").c_str(), BM_Raw,
                                      kind, false, true));
    call(benchmark::RegisterBenchmark((p + "stubkit_default").c_str(),
                                      BM_Stubkit, kind, Client::kDefault,
                                      false));
    call(benchmark::RegisterBenchmark((p + "stubkit_call_options").c_str(),
                                      BM_Stubkit, kind, Client::kDefault,
                                      true));
    call(benchmark::RegisterBenchmark((p + "stubkit_decorated").c_str(),
                                      BM_Stubkit, kind, Client::kDecorated,
                                      false));
    call(benchmark::RegisterBenchmark((p + "stubkit_no_deadline").c_str(),
                                      BM_Stubkit, kind, Client::kNoDeadline,
                                      false));
    call(benchmark::RegisterBenchmark((p + "stubkit_throttle").c_str(),
                                      BM_Stubkit, kind, Client::kThrottle,
                                      false));
    call(benchmark::RegisterBenchmark((p + "stubkit_budget").c_str(),
                                      BM_Stubkit, kind, Client::kBudget,
                                      false));
    call(benchmark::RegisterBenchmark((p + "stubkit_hedge").c_str(), BM_Stubkit,
                                      kind, Client::kHedge, false));
    call(benchmark::RegisterBenchmark((p + "stubkit_adaptive_hedge").c_str(),
                                      BM_Stubkit, kind, Client::kAdaptiveHedge,
                                      false));
    call(benchmark::RegisterBenchmark((p + "async_raw").c_str(), BM_AsyncRaw,
                                      kind, false));
    call(benchmark::RegisterBenchmark((p + "async_raw_deadline").c_str(),
                                      BM_AsyncRaw, kind, true));
    call(benchmark::RegisterBenchmark((p + "async_stubkit_future").c_str(),
                                      BM_AsyncStubkitFuture, kind));
    call(benchmark::RegisterBenchmark((p + "async_stubkit_callback").c_str(),
                                      BM_AsyncStubkitCallback, kind));
  }
  benchmark::RegisterBenchmark("micro/call_options_object",
                               BM_CallOptionsObject);
  benchmark::RegisterBenchmark("micro/option_lookup_absent",
                               BM_OptionLookup_Absent);
  benchmark::RegisterBenchmark("micro/option_lookup_from_client",
                               BM_OptionLookup_FromClient);
  benchmark::RegisterBenchmark("micro/option_lookup_call_over_client",
                               BM_OptionLookup_CallOverClient);
  benchmark::RegisterBenchmark("micro/backoff_delay", BM_BackoffDelay);
  benchmark::RegisterBenchmark("micro/retry_state_setup", BM_RetryStateSetup);
  benchmark::RegisterBenchmark("micro/retry_decision", BM_RetryDecision);
}

// Runs `calls` calls of each variant with callgrind collecting around the
// calls only; a no-op measure outside valgrind. Returns false on a failure.
bool CountInstructions(int calls) {
  Fixture& f = GetFixture();
  bool ok = true;
  for (ChannelKind kind : {kInProcess, kTcp}) {
    PerChannel& c = f.channels[kind];
    struct Variant {
      const char* name;
      std::function<bool()> call;
    };
    const Variant variants[] = {
        {"raw",
         [&] {
           grpc::ClientContext context;
           EchoResponse response;
           return c.stub->Echo(&context, f.request, &response).ok();
         }},
        {"raw_deadline",
         [&] {
           grpc::ClientContext context;
           context.set_deadline(ThirtyMinutes());
           EchoResponse response;
           return c.stub->Echo(&context, f.request, &response).ok();
         }},
        {"grpc_retries",
         [&] {
           grpc::ClientContext context;
           EchoResponse response;
           return c.retry_stub->Echo(&context, f.request, &response).ok();
         }},
        {"stubkit_default", [&] { return c.client->Echo(f.request).ok(); }},
        {"stubkit_call_options",
         [&] {
           return c.client
               ->Echo(f.request, Options{}.set<AttemptTimeoutOption>(
                                     std::chrono::seconds(20)))
               .ok();
         }},
        {"stubkit_decorated",
         [&] { return c.decorated->Echo(f.request).ok(); }},
        {"stubkit_no_deadline",
         [&] { return c.no_deadline->Echo(f.request).ok(); }},
        {"stubkit_throttle", [&] { return c.throttled->Echo(f.request).ok(); }},
        {"stubkit_budget", [&] { return c.budgeted->Echo(f.request).ok(); }},
        {"stubkit_hedge", [&] { return c.hedged->Echo(f.request).ok(); }},
        {"stubkit_adaptive_hedge",
         [&] { return c.adaptive->Echo(f.request).ok(); }},
        {"async_raw_deadline",
         [&] {
           grpc::ClientContext context;
           context.set_deadline(ThirtyMinutes());
           EchoResponse response;
           grpc::Status status;
           Completion done;
           c.stub->async()->Echo(&context, &f.request, &response,
                                 [&status, &done](grpc::Status s) {
                                   status = std::move(s);
                                   done.Notify();
                                 });
           done.Wait();
           return status.ok();
         }},
        {"async_stubkit_future",
         [&] { return c.client->AsyncEcho(f.request).get().ok(); }},
        {"async_stubkit_callback",
         [&] {
           bool result = false;
           Completion done;
           c.client->AsyncEcho(
               f.request, [&result, &done](absl::StatusOr<EchoResponse> r) {
                 result = r.ok();
                 done.Notify();
               });
           done.Wait();
           return result;
         }},
    };
    for (const Variant& v : variants) {
      for (int i = 0; i < 100; ++i) ok = v.call() && ok;  // warm up
      const std::string name = std::string(kChannelNames[kind]) + "/" + v.name;
      CALLGRIND_ZERO_STATS;
      CALLGRIND_START_INSTRUMENTATION;
      for (int i = 0; i < calls; ++i) ok = v.call() && ok;
      CALLGRIND_STOP_INSTRUMENTATION;
      CALLGRIND_DUMP_STATS_AT(name.c_str());
      std::printf("counted %d calls of %s\n", calls, name.c_str());
    }
  }
  return ok;
}

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

  const Figures* Find(const std::string& name) const {
    auto it = figures_.find(name);
    return it == figures_.end() ? nullptr : &it->second;
  }

  // Prints, per channel, every variant against the raw stub and against the
  // raw stub with the same deadline. Returns false on insane figures.
  bool PrintRatios() const {
    bool sane = !errors_;
    static constexpr std::pair<const char*, const char*> kRows[] = {
        // variant, the baseline doing the same gRPC work
        {"raw", "raw"},
        {"raw_deadline", "raw"},
        {"grpc_retries", "raw"},
        {"stubkit_default", "raw_deadline"},
        {"stubkit_call_options", "raw_deadline"},
        {"stubkit_decorated", "raw_deadline"},
        {"stubkit_no_deadline", "raw"},
        {"stubkit_throttle", "raw_deadline"},
        {"stubkit_budget", "raw_deadline"},
        {"stubkit_hedge", "raw_deadline"},
        {"stubkit_adaptive_hedge", "raw_deadline"},
        {"async_raw", "async_raw"},
        {"async_raw_deadline", "async_raw"},
        {"async_stubkit_future", "async_raw_deadline"},
        {"async_stubkit_callback", "async_raw_deadline"},
    };
    for (const char* channel : kChannelNames) {
      const std::string p = std::string(channel) + "/";
      const Figures* raw = Find(p + "raw");
      const Figures* async_raw = Find(p + "async_raw");
      if (raw == nullptr) continue;
      std::printf(
          "\n%s channel (medians; ratios to the raw stub of the same kind)\n",
          channel);
      std::printf("| %-22s | %8s | %11s | %9s | %9s | %11s | %10s |\n",
                  "variant", "latency", "vs raw", "vs same", "CPU/call",
                  "allocs/call", "vs same");
      std::printf("| %-22s | %8s | %11s | %9s | %9s | %11s | %10s |\n", "---",
                  "---:", "---:", "---:", "---:", "---:", "---:");
      for (const auto& [variant, baseline] : kRows) {
        const Figures* v = Find(p + variant);
        const Figures* b = Find(p + baseline);
        const bool async = std::strncmp(variant, "async", 5) == 0;
        const Figures* r = async ? async_raw : raw;
        if (v == nullptr || b == nullptr || r == nullptr) continue;
        const double vs_raw = v->real_ns / r->real_ns;
        const double vs_same = v->real_ns / b->real_ns;
        std::printf(
            "| %-22s | %6.1fus | %10.3fx | %8.3fx | %7.1fus | %11.2f | %+10.2f "
            "|\n",
            variant, v->real_ns / 1000, vs_raw, vs_same, v->cpu_ns / 1000,
            v->allocs, v->allocs - b->allocs);
        if (!std::isfinite(vs_raw) || vs_raw <= 0 || !std::isfinite(vs_same) ||
            v->real_ns <= 0 || v->cpu_ns <= 0 || v->allocs < 0) {
          sane = false;
        }
      }
    }
    if (const Figures* options = Find("micro/call_options_object")) {
      std::printf(
          "\nThe per-call Options object itself: %.2f allocations (compare "
          "stubkit_call_options' \"vs same\")\n",
          options->allocs);
    }
    std::printf("\n| %-34s | %8s | %11s |\n", "micro-benchmark", "time",
                "allocs/op");
    std::printf("| %-34s | %8s | %11s |\n", "---", "---:", "---:");
    for (const auto& [name, f] : figures_) {
      if (name.rfind("micro/", 0) != 0) continue;
      std::printf("| %-34s | %6.1fns | %11.2f |\n", name.c_str() + 6, f.cpu_ns,
                  f.allocs);
      if (!std::isfinite(f.cpu_ns) || f.cpu_ns <= 0) sane = false;
    }
    if (Find("inproc/raw") == nullptr && Find("tcp/raw") == nullptr &&
        figures_.empty()) {
      sane = false;
    }
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
  // Repetitions of all variants interleaved in random order, so that a
  // burst of load elsewhere on the machine does not land on one variant.
  static char kInterleave[] = "--benchmark_enable_random_interleaving=true";
  bool smoke = false;
  for (auto it = args.begin() + 1; it != args.end();) {
    if (std::strcmp(*it, "--smoke") == 0) {
      smoke = true;
      it = args.erase(it);
    } else if (std::strcmp(*it, "--instructions") == 0 &&
               it + 1 != args.end()) {
      return stubkit::CountInstructions(std::atoi(*(it + 1))) ? 0 : 1;
    } else {
      ++it;
    }
  }
  // Defaults first, so that flags on the command line win.
  if (smoke) {
    args.insert(args.begin() + 1, kMinTime);
  } else {
    args.insert(args.begin() + 1, kInterleave);
    args.insert(args.begin() + 1, kAggregates);
    args.insert(args.begin() + 1, kRepetitions);
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  stubkit::RegisterAll();
  stubkit::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  bool sane = reporter.PrintRatios();
  benchmark::Shutdown();
  if (!sane) std::fprintf(stderr, "insane figures or a failed call\n");
  return sane ? 0 : 1;
}

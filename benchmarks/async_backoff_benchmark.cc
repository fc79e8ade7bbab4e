// Copyright 2026 The stubkit Authors.
//
// What an async call costs while it waits in backoff: heap held per call
// and threads, with N calls (10,000 by default) waiting at once.
//
//   async_backoff_benchmark                 # N = 10000
//   async_backoff_benchmark --calls 2000
//   async_backoff_benchmark --smoke         # N = 200, a second or so
//
// A real gRPC server on 127.0.0.1 fails every call with UNAVAILABLE. Two
// phases, each measured from its own baseline:
//
//   raw      N callback-API calls through the grpc_cpp_plugin stub; when they
//            have failed, their ClientContexts and responses are kept: what
//            gRPC itself holds for a finished call whose context is alive.
//   stubkit  N `AsyncEcho` calls with a 60 s backoff; measured once every
//            call has failed its first attempt and sits in its wait.
//
// Heap is measured two ways: mallinfo2() (every malloc, gRPC core's
// included) and the bytes live through the global operator new (C++
// objects only). Threads come from /proc/self/status.

#include <grpcpp/grpcpp.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/alloc_counter.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;

// Fails every call at once, on gRPC's callback threads.
class FailingEcho final : public EchoService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest*, EchoResponse*) override {
    attempts.fetch_add(1, std::memory_order_relaxed);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"));
    return reactor;
  }
  std::atomic<int64_t> attempts{0};
};

int Threads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

struct Heap {
  int64_t malloc_bytes;  // in use by malloc, every caller
  int64_t new_bytes;     // live through operator new
  int threads;
};

Heap Measure() {
  // Let gRPC's and the timer's threads finish what they were doing.
  std::this_thread::sleep_for(milliseconds(300));
  struct mallinfo2 info = mallinfo2();
  return Heap{static_cast<int64_t>(info.uordblks + info.hblkhd),
              bench::LiveBytes(), Threads()};
}

bool WaitFor(const std::atomic<int64_t>& counter, int64_t target,
             std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (counter.load() < target) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

int Run(int calls) {
  FailingEcho service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot start the server on 127.0.0.1\n");
    return 1;
  }
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  auto stub = EchoService::NewStub(channel);
  EchoRequest request;
  request.set_message("hello");

  std::atomic<int64_t> waiting{0};
  std::atomic<int64_t> finished{0};
  EchoServiceClient client(
      channel,
      Options{}
          .set<BackoffPolicyOption>(
              ExponentialBackoffPolicy()
                  .WithInitialDelay(std::chrono::seconds(60))
                  .WithMaximumDelay(std::chrono::seconds(60))
                  .WithMultiplier(2.0)
                  .WithJitter(Jitter::None()))
          .set<RetryObserverOption>([&waiting](const AttemptEvent& event) {
            if (!event.final) waiting.fetch_add(1);
          }));

  // Warm up: the connection, gRPC's threads and the timer thread.
  {
    EchoServiceClient warm(
        channel,
        Options{}
            .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                          .WithInitialDelay(milliseconds(1))
                                          .WithMaximumDelay(milliseconds(1))
                                          .WithMultiplier(1.0))
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)));
    for (int i = 0; i < 20; ++i) (void)warm.AsyncEcho(request).get();
  }

  // Phase 1: gRPC's own, a finished raw call whose context is kept.
  const Heap raw_before = Measure();
  {
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts(calls);
    std::vector<EchoResponse> responses(calls);
    std::atomic<int64_t> done{0};
    // The vectors themselves are not part of a call's cost.
    const Heap vectors = Measure();
    for (int i = 0; i < calls; ++i) {
      contexts[i] = std::make_unique<grpc::ClientContext>();
      stub->async()->Echo(contexts[i].get(), &request, &responses[i],
                          [&done](grpc::Status) { done.fetch_add(1); });
    }
    if (!WaitFor(done, calls, std::chrono::seconds(60))) {
      std::fprintf(stderr, "raw calls did not finish\n");
      return 1;
    }
    const Heap raw_held = Measure();
    const double malloc_per_call =
        double(raw_held.malloc_bytes - vectors.malloc_bytes) / calls;
    const double new_per_call =
        double(raw_held.new_bytes - vectors.new_bytes) / calls;
    std::printf(
        "raw:     %d finished calls held: %8.0f B/call heap (malloc), "
        "%6.0f B/call through operator new; threads %d -> %d\n",
        calls, malloc_per_call, new_per_call, raw_before.threads,
        raw_held.threads);
    std::printf("RESULT raw_held_bytes_per_call=%.0f\n", malloc_per_call);
  }

  // Phase 2: stubkit, every call waiting in its 60 s backoff.
  const Heap before = Measure();
  for (int i = 0; i < calls; ++i) {
    client.AsyncEcho(request, [&finished](absl::StatusOr<EchoResponse>) {
      finished.fetch_add(1);
    });
  }
  if (!WaitFor(waiting, calls, std::chrono::seconds(60))) {
    std::fprintf(stderr, "only %lld of %d calls reached their backoff\n",
                 static_cast<long long>(waiting.load()), calls);
    return 1;
  }
  const Heap during = Measure();
  const double malloc_per_call =
      double(during.malloc_bytes - before.malloc_bytes) / calls;
  const double new_per_call =
      double(during.new_bytes - before.new_bytes) / calls;
  std::printf(
      "stubkit: %d calls in backoff:    %8.0f B/call heap (malloc), "
      "%6.0f B/call through operator new; threads %d -> %d\n",
      calls, malloc_per_call, new_per_call, before.threads, during.threads);
  std::printf("RESULT stubkit_waiting_bytes_per_call=%.0f\n", malloc_per_call);
  std::printf("RESULT threads_before=%d threads_during=%d\n", before.threads,
              during.threads);
  std::printf("RESULT server_attempts=%lld finished_early=%lld\n",
              static_cast<long long>(service.attempts.load()),
              static_cast<long long>(finished.load()));

  bool sane = malloc_per_call > 0 && new_per_call > 0 && finished.load() == 0 &&
              during.threads > 0 &&
              // No thread per call: a handful at most, whatever N is.
              during.threads - before.threads < 16;
  if (!sane) std::fprintf(stderr, "insane figures\n");
  std::fflush(stdout);
  // The calls would wait another minute; nothing left to measure.
  std::_Exit(sane ? 0 : 1);
}

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) {
  int calls = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      calls = 200;
    } else if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--calls N]\n", argv[0]);
      return 2;
    }
  }
  if (calls <= 0) return 2;
  return stubkit::Run(calls);
}

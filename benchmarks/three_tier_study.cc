// Copyright 2026 The stubkit Authors.
//
// The three-tier study (issue 28): retries multiply with the layers of a
// stack. Clients call tier 1, tier 1 calls tier 2, tier 2 calls the
// backend, and every hop allows 4 attempts (3 retries), so a backend that
// fails everything can see 4 x 4 x 4 = 64 attempts per client call. The
// study measures that, and what stubkit's propagation (IncomingCall,
// NestedRetryOption, Reply) makes of it.
//
//   three_tier_study --out benchmarks/results   # about 35 s, 4 runs
//   three_tier_study --smoke --out /tmp/tiers    # a few seconds, sanity only
//
// Without --out it writes to $TEST_TMPDIR when set, else ".". --only a,b
// runs the variants named; --scale X changes the speed (at most 50).
//
// Three real gRPC callback servers on 127.0.0.1 (the EchoService test
// proto): tier 1 and tier 2 answer a request by calling the next server
// through one client each; the backend answers at once, with UNAVAILABLE
// during the outage (from 5 s to 25 s) and OK otherwise. It has no
// capacity limit: the study counts attempts, it does not model overload.
// 4 clients (a channel each) offer 10 calls/s, spread evenly, for 40 s.
// Every hop (clients, tier 1, tier 2) retries UNAVAILABLE 3 times after
// 0.05 s doubling up to 0.5 s; a client call has a 30 s deadline, and a
// tier's own downstream call 30 s too unless the incoming deadline is
// propagated. Variants:
//
//   naive          stubkit retries at every hop, nothing propagated
//   grpc_retries   gRPC's own retries at every hop (service config
//                  retryPolicy, maxAttempts 4, UNAVAILABLE; raw stubs)
//   propagated     stubkit with IncomingCall at each tier: the downstream
//                  call takes incoming.options() (deadline, cancellation,
//                  the incoming attempt number; NestedRetryOption's default
//                  kNever) and a failure is answered with incoming.Reply()
//   propagated_throttle  the same with a RetryThrottle (10 tokens, 0.1 per
//                  success) on every client, the clients' and each tier's
//
// The request carries the client call's number, so the backend counts its
// attempts per client call, and each tier and the backend compare the
// deadline they see (ServerContext::deadline()) with the client's.
//
// Time is simulated: every duration is divided by --scale (5: a simulated
// second is 200 ms of real time).
//
// Per run: amplification in the outage (backend attempts / client calls
// offered in it), attempts per client call (mean and max over the calls
// that started and ended in the outage), failed client calls, the time to
// recover (from the backend's recovery until OK client calls per 1 s
// window stay at >= 90 % of the calls offered, to the end of the load),
// and the requests each server saw with a deadline later than the client
// call's. Writes <out>/three_tier.csv (per variant and simulated second:
// client calls offered, backend attempts, client calls that ended OK or
// failed) and <out>/three_tier_summary.md, and prints the summary. Exits
// non-zero on figures that cannot be right (a call ended twice or never, a
// call in the outage that never reached the backend), never on
// performance. benchmarks/three_tier_chart.gp draws the CSV.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/study_output.h"
#include "stubkit/channel.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_propagation.h"
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
using System = std::chrono::system_clock;

// In simulated seconds, but for the counts.
struct Scenario {
  double scale = 5;  // simulated seconds per real second
  int clients = 4;
  double rate = 10;  // client calls per second
  double outage_start = 5;
  double outage_length = 20;
  double after = 15;         // the load goes on this long after it
  double call_timeout = 30;  // a client call's deadline; a tier call's
  double backoff = 0.05;     // the first retry's delay, doubling
  double backoff_max = 0.5;

  double outage_end() const { return outage_start + outage_length; }
  double end() const { return outage_end() + after; }
};

enum class Mode { kNaive, kGrpc, kPropagated, kPropagatedThrottle };

struct Variant {
  const char* name;
  Mode mode;
};

constexpr Variant kVariants[] = {
    {"naive", Mode::kNaive},
    {"grpc_retries", Mode::kGrpc},
    {"propagated", Mode::kPropagated},
    {"propagated_throttle", Mode::kPropagatedThrottle},
};

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
  size_t Index(double t) const {
    return std::min(static_cast<size_t>(std::max(t, 0.0)), counts_.size() - 1);
  }

 private:
  std::vector<std::atomic<int>> counts_;
};

// Requests a server saw with a deadline later than the client call's.
// gRPC sends a deadline as a timeout (grpc-timeout) that its encoding
// rounds up, to 10 ms for 1-10 s and 100 ms for 10-100 s, and the receiver
// adds it to its own clock; so a deadline carried faithfully over `hops`
// hops may come out up to `hops` x (that precision + a few ms in transit)
// later. `beyond` counts the requests later than that allowance.
struct DeadlineCheck {
  explicit DeadlineCheck(int hops) : hops(hops) {}
  const int hops;
  std::atomic<int64_t> seen{0};
  std::atomic<int64_t> later{0};
  std::atomic<int64_t> beyond{0};
  std::atomic<int64_t> max_later_ns{0};
};

// What the servers of one run share: the clock, the client calls'
// deadlines, the backend's counts.
class Run {
 public:
  Run(const Scenario& s, int64_t calls)
      : s_(s),
        deadlines_(calls),
        per_call_(calls),
        attempts_(static_cast<size_t>(s.end() + s.call_timeout) + 10) {}

  void Start(Steady::time_point origin) {
    origin_.store(origin.time_since_epoch().count());
  }
  Steady::time_point origin() const {
    return Steady::time_point(Steady::duration(origin_.load()));
  }
  double SimNow() const {
    return std::chrono::duration<double>(Steady::now() - origin()).count() *
           s_.scale;
  }
  bool InOutage(double sim) const {
    return sim >= s_.outage_start && sim < s_.outage_end();
  }

  // The client call a request serves; -1 for the warm-up calls.
  int64_t CallOf(const EchoRequest& request) const {
    const std::string& m = request.message();
    if (m.empty() || m[0] < '0' || m[0] > '9') return -1;
    const int64_t id = std::strtoll(m.c_str(), nullptr, 10);
    return id < static_cast<int64_t>(deadlines_.size()) ? id : -1;
  }
  void SetDeadline(int64_t call, System::time_point deadline) {
    deadlines_[call].store(deadline.time_since_epoch().count(),
                           std::memory_order_release);
  }
  System::time_point DeadlineOf(int64_t call) const {
    return System::time_point(
        System::duration(deadlines_[call].load(std::memory_order_acquire)));
  }
  void Check(DeadlineCheck& check, int64_t call,
             const grpc::ServerContextBase& context) const {
    if (call < 0) return;
    check.seen.fetch_add(1, std::memory_order_relaxed);
    const int64_t later = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              context.deadline() - DeadlineOf(call))
                              .count();
    if (later <= 0) return;
    check.later.fetch_add(1, std::memory_order_relaxed);
    const auto left = context.deadline() - System::now();
    const std::chrono::milliseconds precision =
        left < std::chrono::seconds(1)     ? std::chrono::milliseconds(1)
        : left < std::chrono::seconds(10)  ? std::chrono::milliseconds(10)
        : left < std::chrono::seconds(100) ? std::chrono::milliseconds(100)
                                           : std::chrono::milliseconds(1000);
    const auto allowance =
        check.hops * (precision + std::chrono::milliseconds(5));
    if (std::chrono::nanoseconds(later) > allowance) {
      check.beyond.fetch_add(1, std::memory_order_relaxed);
    }
    int64_t max = check.max_later_ns.load(std::memory_order_relaxed);
    while (later > max && !check.max_later_ns.compare_exchange_weak(
                              max, later, std::memory_order_relaxed)) {
    }
  }

  void CountBackendAttempt(int64_t call, double sim) {
    attempts_.Add(sim);
    per_call_[call].fetch_add(1, std::memory_order_relaxed);
  }
  const Bins& attempts() const { return attempts_; }
  int per_call(int64_t call) const { return per_call_[call].load(); }

  DeadlineCheck tier1{1};
  DeadlineCheck tier2{2};
  DeadlineCheck backend{3};

 private:
  const Scenario& s_;
  std::atomic<Steady::rep> origin_{std::numeric_limits<Steady::rep>::max() / 2};
  std::vector<std::atomic<System::rep>> deadlines_;
  std::vector<std::atomic<int>> per_call_;
  Bins attempts_;  // the backend's, by arrival
};

// Fails everything during the outage; counts attempts per client call.
class Backend final : public EchoService::CallbackService {
 public:
  explicit Backend(Run& run) : run_(run) {}

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest* request,
                                 EchoResponse*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    const int64_t call = run_.CallOf(*request);
    const double sim = run_.SimNow();
    if (call < 0 || sim < 0) {  // warming up: not counted
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    run_.Check(run_.backend, call, *context);
    run_.CountBackendAttempt(call, sim);
    reactor->Finish(run_.InOutage(sim)
                        ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "outage")
                        : grpc::Status::OK);
    return reactor;
  }

 private:
  Run& run_;
};

// The policy every stubkit hop shares.
Options HopOptions(const Scenario& s, Mode mode) {
  Options options =
      Options{}
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
          .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                        .WithInitialDelay(Sim(s.backoff, s))
                                        .WithMaximumDelay(Sim(s.backoff_max, s))
                                        .WithMultiplier(2.0))
          .set<TotalTimeoutOption>(Sim(s.call_timeout, s));
  if (mode == Mode::kPropagatedThrottle) {
    options.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
        RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1)));
  }
  return options;
}

// gRPC's retries with the same policy, as a service config.
std::string GrpcServiceConfig(const Scenario& s) {
  auto real = [&](double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "\"%.6fs\"", seconds / s.scale);
    return std::string(text);
  };
  return R"({"methodConfig": [{"name": [{"service": "stubkit.testing.EchoService"}],)"
         R"( "retryPolicy": {"maxAttempts": 4, "initialBackoff": )" +
         real(s.backoff) + R"(, "maxBackoff": )" + real(s.backoff_max) +
         R"(, "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})";
}

std::shared_ptr<grpc::Channel> Channel(const std::string& address, Mode mode,
                                       const Scenario& s) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // own connection
  if (mode == Mode::kGrpc) {
    args.SetServiceConfigJSON(GrpcServiceConfig(s));
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
    return grpc::CreateCustomChannel(address,
                                     grpc::InsecureChannelCredentials(), args);
  }
  // stubkit's own retries only: gRPC's are off.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return CreateChannel(address, grpc::InsecureChannelCredentials(), args);
}

// Tier 1 or tier 2: answers by calling the next server.
class Tier final : public EchoService::CallbackService {
 public:
  Tier(const Scenario& s, Mode mode, Run& run, DeadlineCheck& check,
       const std::string& next)
      : s_(s), mode_(mode), run_(run), check_(check) {
    auto channel = Channel(next, mode, s);
    if (mode == Mode::kGrpc) {
      stub_ = EchoService::NewStub(channel);
    } else {
      client_ =
          std::make_unique<EchoServiceClient>(channel, HopOptions(s, mode));
    }
  }

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest* request,
                                 EchoResponse* response) override {
    run_.Check(check_, run_.CallOf(*request), *context);
    in_flight_.fetch_add(1);
    auto* reactor = new Reactor(this, context, response);
    reactor->Begin(*request);
    return reactor;
  }

  int in_flight() const { return in_flight_.load(); }

 private:
  class Reactor final : public grpc::ServerUnaryReactor {
   public:
    Reactor(Tier* tier, grpc::CallbackServerContext* context,
            EchoResponse* response)
        : tier_(tier), incoming_(*context, NoPolling()), response_(response) {}

    void Begin(const EchoRequest& request) {
      switch (tier_->mode_) {
        case Mode::kGrpc:
          // Nothing propagated: the tier's own deadline.
          downstream_.set_deadline(System::now() +
                                   Sim(tier_->s_.call_timeout, tier_->s_));
          tier_->stub_->async()->Echo(
              &downstream_, &request, response_,
              [this](grpc::Status status) { Finish(status); });
          break;
        case Mode::kNaive:
          tier_->client_->AsyncEcho(request,
                                    [this](absl::StatusOr<EchoResponse> r) {
                                      if (!r.ok())
                                        return Finish(ToGrpcStatus(r.status()));
                                      *response_ = *std::move(r);
                                      Finish(grpc::Status::OK);
                                    });
          break;
        case Mode::kPropagated:
        case Mode::kPropagatedThrottle:
          tier_->client_->AsyncEcho(
              request,
              [this](absl::StatusOr<EchoResponse> r) {
                if (!r.ok()) return Finish(incoming_.Reply(r.status()));
                *response_ = *std::move(r);
                Finish(grpc::Status::OK);
              },
              incoming_.options());
          break;
      }
    }

    // gRPC's thread: cancels the downstream call and its waits at once
    // (only the propagating variants pass the cancellation on).
    void OnCancel() override { incoming_.Cancel(); }
    void OnDone() override {
      Tier* tier = tier_;
      delete this;
      tier->in_flight_.fetch_sub(1);
    }

   private:
    static IncomingCall::Settings NoPolling() {
      IncomingCall::Settings settings;
      settings.poll_cancellation = false;
      return settings;
    }
    Tier* tier_;
    IncomingCall incoming_;
    EchoResponse* response_;
    grpc::ClientContext downstream_;  // gRPC's variant
  };

  const Scenario& s_;
  const Mode mode_;
  Run& run_;
  DeadlineCheck& check_;
  std::unique_ptr<EchoService::Stub> stub_;
  std::unique_ptr<EchoServiceClient> client_;
  std::atomic<int> in_flight_{0};
};

std::unique_ptr<grpc::Server> Serve(grpc::Service* service,
                                    std::string* address) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot start a server on 127.0.0.1\n");
    std::exit(1);
  }
  *address = "127.0.0.1:" + std::to_string(port);
  return server;
}

struct CallRecord {
  double start = 0;  // simulated seconds
  double end = -1;
  bool ok = false;
  std::atomic<int> ended{0};  // must end up 1
};

struct Result {
  std::string variant;
  int64_t calls = 0;
  int64_t offered_in_outage = 0;
  int64_t attempts_in_outage = 0;
  int64_t inside = 0;  // calls that started and ended in the outage
  double per_call_mean = 0;
  int per_call_max = 0;
  int64_t unreached = 0;  // calls started in the outage, no backend attempt
  int64_t ok = 0;
  int64_t failed = 0;
  int64_t failed_after = 0;  // started a second after the recovery
  int64_t offered_after = 0;
  int64_t ended_twice = 0;
  double recovery = -1;          // simulated seconds after the outage's end
  int64_t later[3] = {0, 0, 0};  // tier 1, tier 2, backend
  int64_t beyond[3] = {0, 0, 0};
  int64_t seen[3] = {0, 0, 0};
  double max_later_ms[3] = {0, 0, 0};
};

// The first time from which OK calls per 1 s window stay >= 90 % of the
// calls offered in it, up to the end of the load; -1 if never.
double Recovery(const std::vector<double>& starts,
                const std::vector<double>& oks, double from, double end) {
  constexpr double kWindow = 1;
  constexpr double kStep = 0.05;
  auto count = [](const std::vector<double>& sorted, double a, double b) {
    return std::lower_bound(sorted.begin(), sorted.end(), b) -
           std::lower_bound(sorted.begin(), sorted.end(), a);
  };
  double back = -1;
  for (double t = end - kWindow; t >= from - kWindow - 1e-9; t -= kStep) {
    const auto offered = count(starts, t, t + kWindow);
    const auto ok = count(oks, t, t + kWindow);
    if (ok < 0.9 * static_cast<double>(offered)) break;
    back = t + kWindow;  // the window's end: OK calls are back by then
  }
  return back < 0 ? -1 : std::max(back - from, 0.0);
}

Result RunOne(const Scenario& s, const Variant& v, FILE* csv) {
  const int64_t total = static_cast<int64_t>(s.rate * s.end());
  Run run(s, total);
  Backend backend(run);
  std::string backend_address, tier2_address, tier1_address;
  std::unique_ptr<grpc::Server> backend_server =
      Serve(&backend, &backend_address);
  auto tier2 =
      std::make_unique<Tier>(s, v.mode, run, run.tier2, backend_address);
  std::unique_ptr<grpc::Server> tier2_server =
      Serve(tier2.get(), &tier2_address);
  auto tier1 = std::make_unique<Tier>(s, v.mode, run, run.tier1, tier2_address);
  std::unique_ptr<grpc::Server> tier1_server =
      Serve(tier1.get(), &tier1_address);

  // The clients, connected through the chain before the clock starts.
  std::vector<std::unique_ptr<EchoServiceClient>> clients;
  std::vector<std::unique_ptr<EchoService::Stub>> stubs;
  EchoRequest warm;
  warm.set_message("warm-up");
  for (int i = 0; i < s.clients; ++i) {
    auto channel = Channel(tier1_address, v.mode, s);
    if (v.mode == Mode::kGrpc) {
      stubs.push_back(EchoService::NewStub(channel));
      grpc::ClientContext context;
      EchoResponse response;
      const grpc::Status status = stubs.back()->Echo(&context, warm, &response);
      if (!status.ok()) {
        std::fprintf(stderr, "warm-up: %s\n", status.error_message().c_str());
        std::exit(1);
      }
    } else {
      clients.push_back(
          std::make_unique<EchoServiceClient>(channel, HopOptions(s, v.mode)));
      const absl::StatusOr<EchoResponse> r = clients.back()->Echo(warm);
      if (!r.ok()) {
        std::fprintf(stderr, "warm-up: %s\n", r.status().ToString().c_str());
        std::exit(1);
      }
    }
  }

  const Steady::time_point origin =
      Steady::now() + std::chrono::milliseconds(20);
  run.Start(origin);
  std::vector<CallRecord> records(total);
  std::atomic<int64_t> done{0};
  auto finish = [&run, &done](CallRecord* record, bool ok) {
    record->ok = ok;
    record->end = run.SimNow();
    record->ended.fetch_add(1, std::memory_order_relaxed);
    done.fetch_add(1, std::memory_order_release);
  };
  struct GrpcCall {
    grpc::ClientContext context;
    EchoRequest request;
    EchoResponse response;
  };
  for (int64_t i = 0; i < total; ++i) {
    const double at = static_cast<double>(i) / s.rate;
    std::this_thread::sleep_until(origin + Sim(at, s));
    CallRecord* record = &records[i];
    record->start = at;
    const System::time_point deadline = System::now() + Sim(s.call_timeout, s);
    run.SetDeadline(i, deadline);
    EchoRequest request;
    request.set_message(std::to_string(i));
    if (v.mode == Mode::kGrpc) {
      auto* call = new GrpcCall;
      call->request = request;
      call->context.set_deadline(deadline);
      stubs[i % s.clients]->async()->Echo(
          &call->context, &call->request, &call->response,
          [call, record, &finish](grpc::Status status) {
            finish(record, status.ok());
            delete call;
          });
    } else {
      clients[i % s.clients]->AsyncEcho(
          request,
          [record, &finish](absl::StatusOr<EchoResponse> r) {
            finish(record, r.ok());
          },
          Options{}.set<DeadlineOption>(deadline));
    }
  }
  // Every call ends by its deadline; give a loaded machine 5 s more. Then
  // the tiers' own calls (which may outlive the clients') end too.
  const Steady::time_point limit =
      Steady::now() + Sim(s.call_timeout, s) + std::chrono::seconds(5);
  while (done.load(std::memory_order_acquire) < total ||
         tier1->in_flight() > 0 || tier2->in_flight() > 0) {
    if (Steady::now() > limit) {
      std::fprintf(stderr,
                   "%s: %lld client calls never ended (tier calls open: %d, "
                   "%d)\n",
                   v.name, static_cast<long long>(total - done.load()),
                   tier1->in_flight(), tier2->in_flight());
      std::_Exit(1);  // the records are still referenced by pending calls
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  Result r;
  r.variant = v.name;
  r.calls = total;
  const Bins& attempts = run.attempts();
  const size_t bins = attempts.size();
  std::vector<int> offered(bins), ok(bins), failed(bins);
  std::vector<double> starts, oks;
  int64_t inside_attempts = 0;
  for (int64_t i = 0; i < total; ++i) {
    const CallRecord& c = records[i];
    if (c.ended.load() != 1) ++r.ended_twice;
    ++offered[attempts.Index(c.start)];
    starts.push_back(c.start);
    if (c.ok) {
      ++r.ok;
      ++ok[attempts.Index(c.end)];
      oks.push_back(c.end);
    } else {
      ++r.failed;
      ++failed[attempts.Index(c.end)];
    }
    if (run.InOutage(c.start)) {
      ++r.offered_in_outage;
      if (run.per_call(i) == 0) ++r.unreached;
      if (c.end < s.outage_end()) {
        ++r.inside;
        inside_attempts += run.per_call(i);
        r.per_call_max = std::max(r.per_call_max, run.per_call(i));
      }
    }
    if (c.start >= s.outage_end() + 1) {
      ++r.offered_after;
      if (!c.ok) ++r.failed_after;
    }
  }
  std::sort(oks.begin(), oks.end());  // starts are in order already
  r.recovery = Recovery(starts, oks, s.outage_end(), s.end());
  if (r.inside > 0) {
    r.per_call_mean =
        static_cast<double>(inside_attempts) / static_cast<double>(r.inside);
  }
  for (size_t b = static_cast<size_t>(s.outage_start);
       b < static_cast<size_t>(s.outage_end()); ++b) {
    r.attempts_in_outage += attempts[b];
  }
  const DeadlineCheck* checks[3] = {&run.tier1, &run.tier2, &run.backend};
  for (int k = 0; k < 3; ++k) {
    r.seen[k] = checks[k]->seen.load();
    r.later[k] = checks[k]->later.load();
    r.beyond[k] = checks[k]->beyond.load();
    r.max_later_ms[k] = static_cast<double>(checks[k]->max_later_ns.load()) /
                        1e6 * s.scale;  // simulated
  }
  size_t last = 0;
  for (size_t b = 0; b < bins; ++b) {
    if (offered[b] || attempts[b] || ok[b] || failed[b]) last = b;
  }
  for (size_t b = 0; b <= last; ++b) {
    std::fprintf(csv, "%s,%zu,%d,%d,%d,%d\n", v.name, b, offered[b],
                 attempts[b], ok[b], failed[b]);
  }

  const auto stop = std::chrono::system_clock::now() + std::chrono::seconds(1);
  tier1_server->Shutdown(stop);
  tier2_server->Shutdown(stop);
  backend_server->Shutdown(stop);
  return r;
}

int Main(int argc, char** argv) {
  Scenario s;
  std::string out = bench::DefaultOutDir();
  bool smoke = false;
  std::string only;
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
                   "[--only VARIANT,...]\n",
                   argv[0]);
      return 2;
    }
  }
  if (smoke) {
    // The same shape, fewer calls, 4x faster and shorter: under 1 s a run.
    s.scale = 20;
    s.clients = 2;
    s.rate = 5;
    s.outage_start = 2;
    s.outage_length = 8;
    s.after = 4;
  }
  // gRPC reads the service config's durations in whole milliseconds.
  if (!(s.scale > 0 && s.scale * 0.001 <= s.backoff)) {
    std::fprintf(stderr, "--scale must be in (0, %.0f]\n", s.backoff * 1000);
    return 2;
  }
  std::string csv_path;
  FILE* csv = bench::OpenCsv(out, "three_tier.csv", &csv_path);
  if (csv == nullptr) return 1;
  std::fprintf(csv, "variant,second,offered,backend_attempts,ok,failed\n");

  std::vector<Result> results;
  for (const Variant& v : kVariants) {
    if (!only.empty() &&
        only.find("," + std::string(v.name) + ",") == std::string::npos) {
      continue;
    }
    const Steady::time_point began = Steady::now();
    results.push_back(RunOne(s, v, csv));
    std::fprintf(stderr, "%s done in %.1f s\n", v.name,
                 std::chrono::duration<double>(Steady::now() - began).count());
  }
  std::fclose(csv);

  char header[1024];
  std::snprintf(
      header, sizeof(header),
      "clients -> tier 1 -> tier 2 -> backend, 4 attempts at every hop "
      "(backoff %.2f s doubling to %.1f s); %d clients offer %.0f calls/s, "
      "each with a %.0f s deadline; the backend fails every request with "
      "UNAVAILABLE from %.0f s to %.0f s, the load goes on until %.0f s; "
      "simulated time, %.0fx faster than real\n\n",
      s.backoff, s.backoff_max, s.clients, s.rate, s.call_timeout,
      s.outage_start, s.outage_end(), s.end(), s.scale);
  std::string table = header;
  table +=
      "| variant | backend attempts / call offered in outage | attempts per "
      "call in outage, mean (max) | failed calls | recovery after outage | "
      "deadline later than the client's, beyond gRPC's rounding: tier 1 | "
      "tier 2 | backend |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  bool sane = true;
  for (const Result& r : results) {
    const double amplification =
        r.offered_in_outage > 0 ? static_cast<double>(r.attempts_in_outage) /
                                      static_cast<double>(r.offered_in_outage)
                                : 0;
    char recovery[32] = "never";
    if (r.recovery >= 0) {
      std::snprintf(recovery, sizeof(recovery), "%.2f s", r.recovery);
    }
    std::string later[3];
    for (int k = 0; k < 3; ++k) {
      char text[128];
      if (r.later[k] == 0) {
        std::snprintf(text, sizeof(text), "0 of %lld",
                      static_cast<long long>(r.seen[k]));
      } else {
        std::snprintf(text, sizeof(text), "%lld (%lld later, by <= %.0f ms)",
                      static_cast<long long>(r.beyond[k]),
                      static_cast<long long>(r.later[k]), r.max_later_ms[k]);
      }
      later[k] = text;
    }
    char row[640];
    std::snprintf(row, sizeof(row),
                  "| %s | %.2f | %.2f (%d) | %lld of %lld | %s | %s | %s | "
                  "%s |\n",
                  r.variant.c_str(), amplification, r.per_call_mean,
                  r.per_call_max, static_cast<long long>(r.failed),
                  static_cast<long long>(r.calls), recovery, later[0].c_str(),
                  later[1].c_str(), later[2].c_str());
    table += row;
    // Sanity, not performance: every call ended exactly once, every call
    // started in the outage reached the backend, every tier saw every
    // call, and calls started after the recovery mostly succeed.
    const bool ok = r.ended_twice == 0 && r.ok + r.failed == r.calls &&
                    r.offered_in_outage > 0 && r.unreached == 0 &&
                    r.attempts_in_outage >= r.offered_in_outage &&
                    r.seen[0] >= r.calls && r.seen[1] >= r.calls &&
                    r.seen[2] >= r.calls && r.offered_after > 0 &&
                    2 * r.failed_after <= r.offered_after;
    if (!ok) {
      std::fprintf(
          stderr,
          "insane: %s: ended != once %lld, ok %lld + failed %lld != "
          "calls %lld, outage: %lld offered, %lld attempts, %lld "
          "never reached the backend; seen %lld/%lld/%lld; after "
          "it %lld of %lld failed\n",
          r.variant.c_str(), static_cast<long long>(r.ended_twice),
          static_cast<long long>(r.ok), static_cast<long long>(r.failed),
          static_cast<long long>(r.calls),
          static_cast<long long>(r.offered_in_outage),
          static_cast<long long>(r.attempts_in_outage),
          static_cast<long long>(r.unreached),
          static_cast<long long>(r.seen[0]), static_cast<long long>(r.seen[1]),
          static_cast<long long>(r.seen[2]),
          static_cast<long long>(r.failed_after),
          static_cast<long long>(r.offered_after));
      sane = false;
    }
  }
  table +=
      "\nAttempts per call: the backend's attempts for each client call "
      "that started and ended in the outage. Recovery: from the backend's "
      "recovery until OK client calls per 1 s window stay >= 90% of the "
      "calls offered in it, to the end of the load. Deadline: the requests "
      "each server saw whose ServerContext::deadline() is after the client "
      "call's deadline by more than gRPC's grpc-timeout rounding allows "
      "(per hop: 10 ms for a 1-10 s timeout, 100 ms for 10-100 s, + 5 ms), "
      "then in brackets all those after it at all and by how much at most "
      "(simulated ms).\n";
  return bench::FinishStudy(table, out, "three_tier_summary.md", csv_path,
                            sane);
}

}  // namespace
}  // namespace stubkit

int main(int argc, char** argv) { return stubkit::Main(argc, argv); }

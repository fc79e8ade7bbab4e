// Copyright 2026 The stubkit Authors.
//
// The differential suite of issue 23: one service config JSON, two clients,
// one scripted server. gRPC 1.51's own retries (a grpc::Channel with the
// JSON as its service config, retries on, over TCP on 127.0.0.1, since
// in-process channels skip them) and a stubkit client built from the same
// file (`ServiceConfig::ToOptions()`, on a channel with gRPC's retries off)
// run the same script. The server records each attempt's arrival; the test
// compares the attempts, the waits between them (within a tolerance), the
// final codes and the throttle's decisions.
//
// Waits are small (10-150 ms) so the suite runs in a few seconds. The
// stubkit client draws its waits as gRPC C++ does (`Jitter::Grpc()`:
// exactly initialBackoff first, then the capped exponential times
// U[0.8, 1.2]), so both clients' waits fall in the same interval;
// `DefaultJitterIsA6sFullJitter` checks the default (A6's text).
//
// Where gRPC 1.51 departs from gRFC A6, the stubkit client is compared with
// A6's text instead and the test says so:
// - gRPC 1.51 does not hedge: a hedgingPolicy gives it one attempt;
// - its `timeout` fires early (grpc/grpc#34547: 1-2 s early, so a timeout
//   of a few hundred milliseconds fails the call before any attempt is
//   sent); the tests of the `timeout` field check only that gRPC ends with
//   DEADLINE_EXCEEDED, and hold stubkit to A6.
// One difference remains by design, and is asserted as such
// (`TimeoutInsideABackoffWait`): stubkit stops as soon as the next wait
// would cross the call's deadline and returns the last attempt's status,
// where gRPC waits for the deadline and returns DEADLINE_EXCEEDED.
//
// ctest label: differential (`ctest -L differential`).

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/validate_service_config.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "stubkit/channel.h"
#include "stubkit/logging.h"
#include "stubkit/service_config.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "stubkit/testing/echo.stubkit.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;

// One attempt's answer. After the script, attempts succeed.
struct Step {
  Step(grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE,  // NOLINT
       std::string pushback = "", int delay_ms = 0)
      : code(code), pushback(std::move(pushback)), delay_ms(delay_ms) {}
  grpc::StatusCode code;
  std::string pushback;  // grpc-retry-pushback-ms, if not empty
  int delay_ms;          // answers after this long (or when cancelled)
};

// Answers each attempt of a request (keyed by its message) from a script,
// and records when each attempt arrived.
class ScriptedService final : public EchoService::Service {
 public:
  void Script(const std::string& key, std::vector<Step> steps) {
    absl::MutexLock lock(&mu_);
    scripts_[key] = std::move(steps);
  }
  std::vector<steady_clock::time_point> arrivals(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return arrivals_[key];
  }

  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    return Handle(context, request, response);
  }
  grpc::Status Append(grpc::ServerContext* context, const EchoRequest* request,
                      EchoResponse* response) override {
    return Handle(context, request, response);
  }

 private:
  grpc::Status Handle(grpc::ServerContext* context, const EchoRequest* request,
                      EchoResponse* response) {
    Step step{grpc::StatusCode::OK};
    int attempt = 0;
    {
      absl::MutexLock lock(&mu_);
      auto& arrivals = arrivals_[request->message()];
      arrivals.push_back(steady_clock::now());
      attempt = static_cast<int>(arrivals.size());
      const auto& script = scripts_[request->message()];
      if (attempt <= static_cast<int>(script.size())) {
        step = script[attempt - 1];
      }
    }
    const auto until = steady_clock::now() + milliseconds(step.delay_ms);
    while (steady_clock::now() < until && !context->IsCancelled()) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    if (!step.pushback.empty()) {
      context->AddTrailingMetadata("grpc-retry-pushback-ms", step.pushback);
    }
    if (step.code != grpc::StatusCode::OK) {
      return grpc::Status(step.code, absl::StrCat("scripted ", attempt));
    }
    response->set_message(request->message());
    response->set_attempt(attempt);
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  std::map<std::string, std::vector<Step>> scripts_;
  std::map<std::string, std::vector<steady_clock::time_point>> arrivals_;
};

// A server of its own for each client of each scenario: gRPC keeps one
// retry throttle per server name, so a fresh port is a fresh bucket.
class Server {
 public:
  Server() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~Server() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + milliseconds(100));
    }
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  ScriptedService& service() { return service_; }

 private:
  ScriptedService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

enum class Method { kEcho, kAppend };

// One call of a scenario: its method, its script, and what A6 predicts.
struct Call {
  Method method = Method::kEcho;
  std::vector<Step> script;
  int attempts = 1;
  grpc::StatusCode code = grpc::StatusCode::OK;
  // The wait before attempt i + 2, in [lo, hi] ms; empty: not checked.
  std::vector<std::pair<int, int>> waits;
  // Hedged: attempts are sent side by side; `waits` are then the offsets
  // of each attempt (the first included) from the call's start.
  bool hedged = false;
  // The stubkit client makes the call with its future form (gRPC's always
  // blocks).
  bool async = false;
};

// What one client saw of one call.
struct Observed {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::vector<steady_clock::time_point> arrivals;
  std::string message;
  steady_clock::time_point start;  // when the client made the call
};

// Between attempts; or, `from_start`, from the call's start to each.
std::vector<int> GapsMs(const Observed& o, bool from_start) {
  std::vector<int> gaps;
  for (size_t i = from_start ? 0 : 1; i < o.arrivals.size(); ++i) {
    const auto from = from_start ? o.start : o.arrivals[i - 1];
    gaps.push_back(static_cast<int>(
        std::chrono::duration_cast<milliseconds>(o.arrivals[i] - from)
            .count()));
  }
  return gaps;
}

// Timers, thread wake-ups and the loopback add latency, never take it
// away: a small allowance below, a larger one above (CI machines are
// shared). gRPC's own retry timer gets more below: it starts from the
// time its ExecCtx cached when the poller woke, not from when the
// attempt's trailers were read, so under load (ASan on 2 cores) its
// wait measured at the server came out 4 ms short of the backoff.
constexpr int kEarlyMs = 3;
constexpr int kGrpcEarlyMs = 10;
constexpr int kLateMs = 60;

void ExpectAsPredicted(const std::string& who, const Call& call,
                       const Observed& o, int early_ms = kEarlyMs) {
  SCOPED_TRACE(who);
  EXPECT_EQ(o.code, call.code) << o.message;
  EXPECT_EQ(static_cast<int>(o.arrivals.size()), call.attempts);
  const std::vector<int> gaps = GapsMs(o, call.hedged);
  for (size_t i = 0; i < call.waits.size() && i < gaps.size(); ++i) {
    EXPECT_GE(gaps[i], call.waits[i].first - early_ms)
        << "wait " << i + 1 << ": " << absl::StrJoin(gaps, ", ") << " ms";
    EXPECT_LE(gaps[i], call.waits[i].second + kLateMs)
        << "wait " << i + 1 << ": " << absl::StrJoin(gaps, ", ") << " ms";
  }
}

EchoRequest RequestFor(const std::string& key) {
  EchoRequest request;
  request.set_message(key);
  return request;
}

// Connects before the first call: a connection made during it would
// delay its first attempt, and a timeout scenario's attempts with it.
void Connect(grpc::Channel& channel) {
  EXPECT_TRUE(channel.WaitForConnected(std::chrono::system_clock::now() +
                                       std::chrono::seconds(10)));
}

// gRPC's own retries, with `json` as the channel's service config.
// `connect`: false for a config gRPC refuses (its channel never connects).
std::vector<Observed> RunGrpc(const std::string& json,
                              const std::vector<Call>& calls,
                              bool connect = true) {
  Server server;
  EXPECT_TRUE(server.ok());
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(json);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  auto channel = grpc::CreateCustomChannel(
      server.address(), grpc::InsecureChannelCredentials(), args);
  if (connect) Connect(*channel);
  auto stub = EchoService::NewStub(channel);
  std::vector<Observed> observed;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string key = absl::StrCat("call", i);
    server.service().Script(key, calls[i].script);
    grpc::ClientContext context;
    EchoResponse response;
    const auto start = steady_clock::now();
    const grpc::Status status =
        calls[i].method == Method::kEcho
            ? stub->Echo(&context, RequestFor(key), &response)
            : stub->Append(&context, RequestFor(key), &response);
    observed.push_back(Observed{status.error_code(),
                                server.service().arrivals(key),
                                status.error_message(), start});
  }
  return observed;
}

// A stubkit client configured from the same file.
std::vector<Observed> RunStubkit(const std::string& json,
                                 const std::vector<Call>& calls,
                                 Jitter jitter = Jitter::Grpc()) {
  Server server;
  EXPECT_TRUE(server.ok());
  ServiceConfigImport how;
  how.jitter = jitter;
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(json, how);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return {};
  auto channel = stubkit::CreateChannel(server.address(),
                                        grpc::InsecureChannelCredentials());
  Connect(*channel);
  EchoServiceClient client(
      channel, config->ToOptions().set<LogLevelOption>(LogLevel::kOff));
  std::vector<Observed> observed;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string key = absl::StrCat("call", i);
    server.service().Script(key, calls[i].script);
    const auto start = steady_clock::now();
    absl::StatusOr<EchoResponse> response =
        calls[i].async                     ? (calls[i].method == Method::kEcho
                                                  ? client.AsyncEcho(RequestFor(key)).get()
                                                  : client.AsyncAppend(RequestFor(key)).get())
        : calls[i].method == Method::kEcho ? client.Echo(RequestFor(key))
                                           : client.Append(RequestFor(key));
    observed.push_back(
        Observed{static_cast<grpc::StatusCode>(response.status().code()),
                 server.service().arrivals(key),
                 std::string(response.status().message()), start});
  }
  return observed;
}

// Both clients, each call as A6 predicts (gRPC's behaviour where they
// agree).
void ExpectBothAsPredicted(const std::string& json,
                           const std::vector<Call>& calls) {
  const std::vector<Observed> grpc = RunGrpc(json, calls);
  const std::vector<Observed> stubkit = RunStubkit(json, calls);
  ASSERT_EQ(grpc.size(), calls.size());
  ASSERT_EQ(stubkit.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("call ", i));
    ExpectAsPredicted("gRPC 1.51", calls[i], grpc[i], kGrpcEarlyMs);
    ExpectAsPredicted("stubkit", calls[i], stubkit[i]);
  }
}

std::string Policy(int max_attempts, const std::string& initial,
                   const std::string& maximum, double multiplier,
                   const std::string& codes = R"(["UNAVAILABLE"])") {
  return absl::StrCat(R"("retryPolicy": {"maxAttempts": )", max_attempts,
                      R"(, "initialBackoff": ")", initial,
                      R"(", "maxBackoff": ")", maximum,
                      R"(", "backoffMultiplier": )", multiplier,
                      R"(, "retryableStatusCodes": )", codes, "}");
}

constexpr char kService[] = "stubkit.testing.EchoService";

std::string EchoEntry(const std::string& fields) {
  return absl::StrCat(R"({"name": [{"service": ")", kService,
                      R"(", "method": "Echo"}], )", fields, "}");
}
std::string ServiceEntry(const std::string& fields) {
  return absl::StrCat(R"({"name": [{"service": ")", kService, R"("}], )",
                      fields, "}");
}
std::string Config(const std::vector<std::string>& entries,
                   const std::string& extra = "") {
  return absl::StrCat(R"({"methodConfig": [)", absl::StrJoin(entries, ", "),
                      "]", extra, "}");
}

std::vector<Step> Failures(
    int n, grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE) {
  return std::vector<Step>(n, Step{code});
}

// ------------------------------------------------------------ retries

TEST(ServiceConfigDifferentialTest, RetryThenSuccess) {
  // Waits: exactly 20 ms, then min(40, 80) * U[0.8, 1.2].
  Call call;
  call.script = Failures(2);
  call.attempts = 3;
  call.waits = {{20, 20}, {32, 48}};
  ExpectBothAsPredicted(Config({EchoEntry(Policy(4, "0.020s", "0.080s", 2))}),
                        {call});
}

TEST(ServiceConfigDifferentialTest, Exhaustion) {
  Call call;
  call.script = Failures(10);
  call.attempts = 3;
  call.code = grpc::StatusCode::UNAVAILABLE;
  call.waits = {{20, 20}, {32, 48}};
  ExpectBothAsPredicted(Config({EchoEntry(Policy(3, "0.020s", "0.080s", 2))}),
                        {call});
}

TEST(ServiceConfigDifferentialTest, MethodOverServiceOverDefault) {
  // Echo has an entry of its own (4 attempts), Append gets the service's
  // (3); the default (2) covers no method of this service.
  Call echo;
  echo.script = Failures(10);
  echo.attempts = 4;
  echo.code = grpc::StatusCode::UNAVAILABLE;
  Call append = echo;
  append.method = Method::kAppend;
  append.attempts = 3;
  ExpectBothAsPredicted(
      Config({R"({"name": [{}], )" + Policy(2, "0.010s", "0.010s", 1) + "}",
              ServiceEntry(Policy(3, "0.010s", "0.010s", 1)),
              EchoEntry(Policy(4, "0.010s", "0.010s", 1))}),
      {echo, append});
}

TEST(ServiceConfigDifferentialTest, DefaultEntryWithAnEmptyName) {
  // {"service": ""} is the default, as {} is; it covers every method,
  // Append too, which is not idempotent by its proto: gRPC retries it, and
  // so does the imported config.
  Call echo;
  echo.script = Failures(1);
  echo.attempts = 2;
  echo.waits = {{10, 10}};
  Call append = echo;
  append.method = Method::kAppend;
  for (const char* name : {R"({"service": ""})", "{}"}) {
    SCOPED_TRACE(name);
    ExpectBothAsPredicted(
        Config({absl::StrCat(R"({"name": [)", name, "], ",
                             Policy(3, "0.010s", "0.010s", 1), "}")}),
        {echo, append});
  }
}

TEST(ServiceConfigDifferentialTest, MethodsTheConfigDoesNotNameAreNotRetried) {
  // A6: "unless the service owner specifies a policy in the configuration,
  // retries and hedging will not be enabled".
  Call append;
  append.method = Method::kAppend;
  append.script = Failures(1);
  append.code = grpc::StatusCode::UNAVAILABLE;
  ExpectBothAsPredicted(Config({EchoEntry(Policy(3, "0.010s", "0.010s", 1))}),
                        {append});
  // An empty config: nothing is retried.
  Call echo = append;
  echo.method = Method::kEcho;
  ExpectBothAsPredicted("{}", {echo});
}

TEST(ServiceConfigDifferentialTest, RetryableStatusCodes) {
  Call internal;
  internal.script = Failures(1, grpc::StatusCode::INTERNAL);
  internal.code = grpc::StatusCode::INTERNAL;
  ExpectBothAsPredicted(Config({EchoEntry(Policy(3, "0.010s", "0.010s", 1))}),
                        {internal});
  Call retried;
  retried.script = {Step{grpc::StatusCode::INTERNAL},
                    Step{grpc::StatusCode::UNAVAILABLE}};
  retried.attempts = 3;
  ExpectBothAsPredicted(
      Config({EchoEntry(
          Policy(3, "0.010s", "0.010s", 1, R"(["UNAVAILABLE", "INTERNAL"])"))}),
      {retried});
}

TEST(ServiceConfigDifferentialTest, NumericStatusCodesAreAStubkitExtension) {
  // gRPC C++ takes names only: with [14] its config is invalid, and its
  // calls fail; stubkit reads 14 as UNAVAILABLE (documented).
  const std::string json = Config(
      {EchoEntry(Policy(3, "0.010s", "0.010s", 1, R"(["UNAVAILABLE", 13])"))});
  Call call;
  call.script = Failures(1, grpc::StatusCode::INTERNAL);
  call.attempts = 2;
  call.waits = {{10, 10}};
  const std::vector<Observed> stubkit = RunStubkit(json, {call});
  ASSERT_EQ(stubkit.size(), 1u);
  ExpectAsPredicted("stubkit", call, stubkit[0]);
  const std::vector<Observed> grpc = RunGrpc(json, {call}, /*connect=*/false);
  ASSERT_EQ(grpc.size(), 1u);
  EXPECT_NE(grpc[0].code, grpc::StatusCode::OK) << "gRPC took numbers";
  EXPECT_TRUE(grpc[0].arrivals.empty());
}

// ------------------------------------------------------------ pushback

TEST(ServiceConfigDifferentialTest, PushbackDelay) {
  Call call;
  call.script = {Step{grpc::StatusCode::UNAVAILABLE, "150"}};
  call.attempts = 2;
  call.waits = {{150, 150}};
  ExpectBothAsPredicted(Config({EchoEntry(Policy(3, "0.010s", "0.010s", 1))}),
                        {call});
}

TEST(ServiceConfigDifferentialTest, NegativeOrUnparseablePushbackStops) {
  for (const char* value : {"-1", "abc"}) {
    SCOPED_TRACE(value);
    Call call;
    call.script = {Step{grpc::StatusCode::UNAVAILABLE, value}};
    call.code = grpc::StatusCode::UNAVAILABLE;
    ExpectBothAsPredicted(Config({EchoEntry(Policy(3, "0.010s", "0.010s", 1))}),
                          {call});
  }
}

// Issue 23 item 1. A6: "Retry in n ms. If this attempt also fails, retry
// delay will reset to initial backoff for the following retry."
TEST(ServiceConfigDifferentialTest, PushbackResetsTheBackoff) {
  // Without the reset the third wait would be 20 * 4^2 = 320 ms (x0.8-1.2).
  Call call;
  call.script = {Step{}, Step{grpc::StatusCode::UNAVAILABLE, "60"}, Step{}};
  call.attempts = 4;
  call.waits = {{20, 20}, {60, 60}, {20, 20}};
  Call async = call;
  async.async = true;
  ExpectBothAsPredicted(Config({EchoEntry(Policy(5, "0.020s", "1s", 4))}),
                        {call, async});
}

// ------------------------------------------------------------ limits

// Issue 23 item 4. A6: "higher values will be treated as equal to the
// maximum value" (5).
TEST(ServiceConfigDifferentialTest, MaxAttemptsAboveFiveCountsAsFive) {
  Call call;
  call.script = Failures(10);
  call.attempts = 5;
  call.code = grpc::StatusCode::UNAVAILABLE;
  ExpectBothAsPredicted(Config({EchoEntry(Policy(7, "0.005s", "0.005s", 1))}),
                        {call});
}

// gRPC's timeout fires early (grpc/grpc#34547): it ends with
// DEADLINE_EXCEEDED after at most the attempts A6 predicts.
void ExpectGrpcTimeoutFiresAtOrBefore(const std::string& json,
                                      const Call& call) {
  const std::vector<Observed> grpc = RunGrpc(json, {call});
  ASSERT_EQ(grpc.size(), 1u);
  EXPECT_EQ(grpc[0].code, grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LE(static_cast<int>(grpc[0].arrivals.size()), call.attempts);
}

TEST(ServiceConfigDifferentialTest, TimeoutBoundsTheWholeCall) {
  // A6: a slow attempt runs into the call's timeout: DEADLINE_EXCEEDED,
  // one attempt.
  Call call;
  call.script = {Step{grpc::StatusCode::UNAVAILABLE, "", 1000}};
  call.code = grpc::StatusCode::DEADLINE_EXCEEDED;
  const std::string json = Config({EchoEntry(
      R"("timeout": "0.150s", )" + Policy(3, "0.010s", "0.010s", 1))});
  ExpectGrpcTimeoutFiresAtOrBefore(json, call);
  const std::vector<Observed> stubkit = RunStubkit(json, {call});
  ASSERT_EQ(stubkit.size(), 1u);
  ExpectAsPredicted("stubkit, against A6", call, stubkit[0]);
}

// Issue 23 item 10, the one difference kept by design: a deadline inside a
// backoff wait. A6 (and gRPC) wait until the deadline and fail with
// DEADLINE_EXCEEDED; stubkit stops when the next wait would cross it and
// returns the last attempt's status, at once (its RetrySummary says
// kDeadline). docs/service-config.md lists it.
TEST(ServiceConfigDifferentialTest, TimeoutInsideABackoffWait) {
  const std::string json = Config({EchoEntry(
      R"("timeout": "0.250s", )" + Policy(5, "0.100s", "0.100s", 1))});
  // Attempts at 0, 100 and 180-220 ms; the next wait would pass 250 ms.
  Call call;
  call.script = Failures(10);
  call.attempts = 3;
  call.waits = {{100, 100}, {80, 120}};
  call.code = grpc::StatusCode::DEADLINE_EXCEEDED;
  ExpectGrpcTimeoutFiresAtOrBefore(json, call);
  call.code = grpc::StatusCode::UNAVAILABLE;
  const std::vector<Observed> stubkit = RunStubkit(json, {call});
  ASSERT_EQ(stubkit.size(), 1u);
  ExpectAsPredicted("stubkit", call, stubkit[0]);
}

// ------------------------------------------------------------ throttle

TEST(ServiceConfigDifferentialTest, ThrottleStopsRetries) {
  // 4 tokens; a retry needs more than 2 left after the failure is counted.
  Call call;
  call.script = Failures(10);
  call.attempts = 2;
  call.code = grpc::StatusCode::UNAVAILABLE;
  ExpectBothAsPredicted(
      Config({EchoEntry(Policy(5, "0.005s", "0.005s", 1))},
             R"(, "retryThrottling": {"maxTokens": 4, "tokenRatio": 1})"),
      {call});
}

// Issue 23 item 3. A6: only calls with a qualifying status count as
// failures for the throttle; gRPC counts nothing for a method without a
// policy. Append's failures must not switch Echo's retries off.
TEST(ServiceConfigDifferentialTest,
     AMethodWithoutAPolicyDoesNotDrainTheBucket) {
  Call append;
  append.method = Method::kAppend;
  append.script = Failures(1);
  append.code = grpc::StatusCode::UNAVAILABLE;
  Call echo;
  echo.script = Failures(1);
  echo.attempts = 2;
  ExpectBothAsPredicted(
      Config({EchoEntry(Policy(3, "0.005s", "0.005s", 1)),
              ServiceEntry(R"("timeout": "10s")")},
             R"(, "retryThrottling": {"maxTokens": 4, "tokenRatio": 1})"),
      {append, append, append, echo});
}

// ------------------------------------------------------------ jitter

// Issue 23 item 9: by default the import draws A6's waits,
// U[0, min(initialBackoff * multiplier^n, maxBackoff)], where gRPC C++
// waits exactly initialBackoff first (the tests above opt into its
// spread with Jitter::Grpc()).
TEST(ServiceConfigDifferentialTest, DefaultJitterIsA6sFullJitter) {
  Call call;
  call.script = Failures(3);
  call.attempts = 4;
  call.waits = {{0, 40}, {0, 80}, {0, 160}};
  const std::vector<Observed> stubkit =
      RunStubkit(Config({EchoEntry(Policy(5, "0.040s", "1s", 2))}), {call},
                 Jitter::Full());
  ASSERT_EQ(stubkit.size(), 1u);
  ExpectAsPredicted("stubkit, A6 jitter", call, stubkit[0]);
}

// ------------------------------------------------------------ hedging
//
// gRPC 1.51 does not hedge: with a hedgingPolicy it sends one attempt.
// The stubkit client is compared with A6's text.

std::string Hedging(int max_attempts, const std::string& delay,
                    const std::string& non_fatal = R"(["UNAVAILABLE"])") {
  return absl::StrCat(R"("hedgingPolicy": {"maxAttempts": )", max_attempts,
                      R"(, "hedgingDelay": ")", delay,
                      R"(", "nonFatalStatusCodes": )", non_fatal, "}");
}

// gRPC's one attempt, then stubkit against A6.
void ExpectHedgedAsA6Says(const std::string& json, const Call& call) {
  const std::vector<Observed> grpc = RunGrpc(json, {call});
  ASSERT_EQ(grpc.size(), 1u);
  EXPECT_EQ(grpc[0].arrivals.size(), 1u) << "gRPC 1.51 hedged";
  const std::vector<Observed> stubkit = RunStubkit(json, {call});
  ASSERT_EQ(stubkit.size(), 1u);
  ExpectAsPredicted("stubkit, against A6", call, stubkit[0]);
}

TEST(ServiceConfigDifferentialTest, HedgingDelay) {
  // Attempts at 0, 40 and 80 ms; the third answers first.
  Call call;
  call.hedged = true;
  call.script = {Step{grpc::StatusCode::UNAVAILABLE, "", 400},
                 Step{grpc::StatusCode::UNAVAILABLE, "", 400}};
  call.attempts = 3;
  call.waits = {{0, 0}, {40, 40}, {80, 80}};
  ExpectHedgedAsA6Says(Config({EchoEntry(Hedging(3, "0.040s"))}), call);
}

TEST(ServiceConfigDifferentialTest, HedgingNonFatalAndFatalCodes) {
  // A6: a non-fatal failure sends the next hedge at once.
  Call non_fatal;
  non_fatal.hedged = true;
  non_fatal.script = Failures(2);
  non_fatal.attempts = 3;
  non_fatal.waits = {{0, 0}, {0, 0}, {0, 0}};
  ExpectHedgedAsA6Says(Config({EchoEntry(Hedging(3, "1s"))}), non_fatal);
  // A fatal one ends the call.
  Call fatal;
  fatal.hedged = true;
  fatal.script = Failures(1, grpc::StatusCode::INTERNAL);
  fatal.code = grpc::StatusCode::INTERNAL;
  ExpectHedgedAsA6Says(Config({EchoEntry(Hedging(3, "1s"))}), fatal);
}

TEST(ServiceConfigDifferentialTest, HedgingMaxAttemptsAboveFiveCountsAsFive) {
  Call call;
  call.hedged = true;
  call.script = Failures(30);
  call.attempts = 5;
  call.code = grpc::StatusCode::UNAVAILABLE;
  ExpectHedgedAsA6Says(Config({EchoEntry(Hedging(20, "0s"))}), call);
}

// Issue 23 item 2. A6: pushback with a delay makes the next hedged request
// wait that long; pushback saying not to retry sends no further hedges.
TEST(ServiceConfigDifferentialTest, HedgingFollowsPushback) {
  Call delayed;
  delayed.hedged = true;
  delayed.script = {Step{grpc::StatusCode::UNAVAILABLE, "100"}};
  delayed.attempts = 2;
  delayed.waits = {{0, 0}, {100, 100}};
  Call stop;
  stop.hedged = true;
  stop.script = {Step{grpc::StatusCode::UNAVAILABLE, "-1"}};
  stop.code = grpc::StatusCode::UNAVAILABLE;
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    delayed.async = stop.async = async;
    ExpectHedgedAsA6Says(Config({EchoEntry(Hedging(3, "1s"))}), delayed);
    ExpectHedgedAsA6Says(Config({EchoEntry(Hedging(3, "0.050s"))}), stop);
  }
}

// Issue 39 item 6: files gRPC 1.51 accepts that stubkit once refused
// behave as under gRPC: "OK" among the retryable codes, a duration written
// "0.020 s", a retryPolicy beside a hedgingPolicy (gRPC retries, ignoring
// the hedging), an entry without names (it applies to nothing), a timeout
// beyond nanoseconds (none), maxTokens above 1000 with a tokenRatio above
// it.
TEST(ServiceConfigDifferentialTest, FilesGrpcAcceptedThatStubkitRefused) {
  const std::string json = Config(
      {EchoEntry(Policy(3, "0.020 s", "0.1s", 2, R"(["OK", "UNAVAILABLE"])") +
                 R"(, "hedgingPolicy": {"maxAttempts": 4})"),
       ServiceEntry(R"("timeout": "100000000000s")"),
       R"({"timeout": "0.001s", "waitForReady": true})"},
      R"(, "retryThrottling": {"maxTokens": 5000, "tokenRatio": 5000})");
  ASSERT_EQ(grpc::experimental::ValidateServiceConfigJSON(json), "");
  Call echo;
  echo.script = Failures(5);
  echo.attempts = 3;
  echo.code = grpc::StatusCode::UNAVAILABLE;
  echo.waits = {{20, 20}, {32, 48}};
  Call append;
  append.method = Method::kAppend;
  append.script = Failures(1);
  append.code = grpc::StatusCode::UNAVAILABLE;
  ExpectBothAsPredicted(json, {echo, append});
}

// ---------------------------------------------------------------------------
// Issue 39 item 6: gRPC's own validator as the oracle. Each file of the
// corpus (hand-written edge cases, and every field of a valid file swapped
// for values of other types, out of range, missing, null or duplicated) is
// judged by `grpc::experimental::ValidateServiceConfigJSON` (gRPC 1.51)
// here, and by `ParseServiceConfig`. They must agree, except where the
// case names a difference listed in docs/service-config.md ("Files gRPC
// 1.51 and stubkit judge differently"), and the list here must be the
// docs' list.

// The documented differences (labels as the docs' bullets begin).
constexpr const char* kIntegerCodes = "integer status codes";
constexpr const char* kNoMaxAttempts = "retryPolicy without maxAttempts";
constexpr const char* kRecvTimeout = "perAttemptRecvTimeout";
constexpr const char* kHedging = "hedgingPolicy";
constexpr const char* kNanMultiplier = "NaN backoffMultiplier";
constexpr const char* kSignedFraction = "signed fraction in a duration";
constexpr const char* kNotJson = "text that is not JSON";
constexpr const char* kLoadBalancing = "fields stubkit does not read";
const std::vector<std::string>& AllowedDifferences() {
  static const auto* list = new std::vector<std::string>{
      kIntegerCodes,  kNoMaxAttempts,  kRecvTimeout, kHedging,
      kNanMultiplier, kSignedFraction, kNotJson,     kLoadBalancing};
  return *list;
}

struct OracleCase {
  std::string label;
  std::string json;
  const char* allowed = nullptr;  // a documented difference, if any
};

// A valid file with one field replaced: `fields` maps a field's name to
// its JSON text; a field mapped to "" is left out.
std::string OracleFile(const std::map<std::string, std::string>& fields) {
  auto field = [&](const std::string& key, const std::string& value) {
    auto it = fields.find(key);
    const std::string& text = it == fields.end() ? value : it->second;
    return text.empty() ? std::string()
                        : absl::StrCat("\"", key, "\": ", text, ", ");
  };
  std::string retry = absl::StrCat(
      "{", field("maxAttempts", "3"), field("initialBackoff", "\"0.1s\""),
      field("maxBackoff", "\"1s\""), field("backoffMultiplier", "2"),
      field("perAttemptRecvTimeout", ""),
      field("retryableStatusCodes", "[\"UNAVAILABLE\"]"), "\"x\": 0}");
  std::string entry = absl::StrCat(
      "{", field("name", R"([{"service": "a.B", "method": "C"}])"),
      field("timeout", "\"1s\""), field("waitForReady", "true"),
      field("maxRequestMessageBytes", ""), field("hedgingPolicy", ""),
      field("retryPolicy", retry), "\"x\": 0}");
  std::string throttling = absl::StrCat(
      "{", field("maxTokens", "10"), field("tokenRatio", "0.1"), "\"x\": 0}");
  return absl::StrCat("{", field("methodConfig", "[" + entry + "]"),
                      field("retryThrottling", throttling),
                      field("loadBalancingConfig", ""), "\"x\": 0}");
}

std::vector<OracleCase> OracleCorpus() {
  std::vector<OracleCase> corpus;
  // Field -> values, each with the documented difference it may show.
  struct Value {
    std::string text;
    const char* allowed = nullptr;
  };
  const std::vector<Value> durations = {{"\"1s\""},
                                        {"\"0.100s\""},
                                        {"\"0s\""},
                                        {"\"0.0001s\""},
                                        {"\"1 s\""},
                                        {"\" 1s\""},
                                        {"\"+1s\""},
                                        {"\"-1s\""},
                                        {"\"-0.5s\""},
                                        {"\"1.s\""},
                                        {"\".5s\""},
                                        {"\"1.0000000001s\""},
                                        {"\"1S\""},
                                        {"1"},
                                        {"null"},
                                        {"\"100000000000s\""},
                                        {"\"315576000001s\""},
                                        {"\"abc\""},
                                        {"true"},
                                        {"[]"},
                                        {"\"1.-5s\"", kSignedFraction},
                                        {"\"10000000000s\""},
                                        {"\"0.0015s\""},
                                        {""}};
  const std::vector<std::pair<std::string, std::vector<Value>>> fields = {
      {"timeout", durations},
      {"initialBackoff", durations},
      {"maxBackoff", durations},
      {"maxAttempts",
       {{"2"},
        {"5"},
        {"6"},
        {"1"},
        {"0"},
        {"-1"},
        {"\"3\""},
        {"\"3 \""},
        {"3.5"},
        {"true"},
        {"null"},
        {"99999999999"},
        {"", kNoMaxAttempts}}},
      {"backoffMultiplier",
       {{"2"},
        {"0.5"},
        {"0"},
        {"-1"},
        {"\"2\""},
        {"1e400"},
        {"\"inf\""},
        {"\"NaN\"", kNanMultiplier},
        {"\"1e-50\""},
        {"\" 2 \""},
        {"true"},
        {"null"},
        {"-0.0"},
        {""}}},
      {"retryableStatusCodes",
       {{R"(["OK"])"},
        {R"(["OK", "UNAVAILABLE"])"},
        {"[14]", kIntegerCodes},
        {R"(["UNAVAILABLE", 14])", kIntegerCodes},
        {R"(["unavailable"])"},
        {"[]"},
        {R"("UNAVAILABLE")"},
        {"null"},
        {R"(["UNAVAILABLE", "UNAVAILABLE", "ABORTED"])"},
        {"[null]"},
        {""}}},
      {"perAttemptRecvTimeout",
       {{"\"1s\""},
        {"\"0s\"", kRecvTimeout},
        {"\"-1s\"", kRecvTimeout},
        {"\"abc\"", kRecvTimeout},
        {"5", kRecvTimeout}}},
      {"waitForReady", {{"false"}, {"\"true\""}, {"1"}, {"null"}, {""}}},
      {"name",
       {{R"([{"service": "a.B"}])"},
        {"[{}]"},
        {"[]"},
        {""},
        {"null"},
        {R"({"service": "a.B"})"},
        {R"(["a.B"])"},
        {R"([{"method": "C"}])"},
        {R"([{"service": 5}])"},
        {R"([{"service": "a.B", "method": null}])"},
        {R"([{"service": "a.B"}, {"service": "a.B"}])"},
        {R"([{"service": "a.B", "method": ""}, {"service": "a.B"}])"},
        {R"([{"service": "a.B", "method": "C"}, {"service": "a.B"}])"},
        {R"([{"service": "a.B", "extra": 1}])"},
        {R"([{"service": "", "method": ""}])"},
        {"[null]"}}},
      {"maxTokens",
       {{"1"},
        {"0"},
        {"5000"},
        {"4294967295"},
        {"4294967296"},
        {"-1"},
        {"1.5"},
        {"\"3\""},
        {"\"1e2\""},
        {"null"},
        {"true"},
        {""}}},
      {"tokenRatio",
       {{"2"},
        {"0.0001"},
        {"0.0019"},
        {"\"0.5\""},
        {"1e2"},
        {"-1"},
        {"\" 1\""},
        {"\"0.5.5\""},
        {"true"},
        {"null"},
        {"11"},
        {""}}},
      {"maxRequestMessageBytes",
       {{"1024"}, {"\"1024\""}, {"-1"}, {"\"abc\""}, {"4294967296"}}},
      {"hedgingPolicy",
       {{R"({"maxAttempts": 3})"},
        {R"({"maxAttempts": 3, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]})"},
        {R"({"maxAttempts": "x", "hedgingDelay": 5})", kHedging},
        {"{}", kHedging},
        {"5", kHedging},
        {"null"},
        {R"({"maxAttempts": 1})", kHedging},
        {R"({"maxAttempts": 3, "hedgingDelay": "-1s"})", kHedging}}},
      {"retryPolicy", {{"null"}, {"[]"}, {"{}"}, {"5"}}},
      {"methodConfig",
       {{"null"}, {"{}"}, {"[]"}, {"[5]"}, {"[null]"}, {"[{}]"}}},
      {"retryThrottling", {{"null"}, {"[]"}, {"{}"}, {"5"}}},
      {"loadBalancingConfig",
       {{R"([{"round_robin": {}}])"},
        {R"([{"no_such_policy": {}}])", kLoadBalancing}}},
  };
  for (const auto& [key, values] : fields) {
    for (const Value& value : values) {
      corpus.push_back(
          {absl::StrCat(key, " = ",
                        value.text.empty() ? "(absent)" : value.text),
           OracleFile({{key, value.text}}), value.allowed});
    }
  }
  // Hedging alone, without the retryPolicy.
  corpus.push_back({"hedgingPolicy alone",
                    OracleFile({{"retryPolicy", ""},
                                {"hedgingPolicy", R"({"maxAttempts": 3})"}})});
  // Hand-written: JSON syntax and the file's shape.
  const std::vector<OracleCase> hand = {
      {"empty object", "{}"},
      {"empty text", ""},
      {"whitespace", " \n\t "},
      {"a list at the top", "[]"},
      {"a number at the top", "5"},
      {"trailing comma in an object", R"({"a": 1,})"},
      {"trailing comma in a list", R"({"a": [1, 2,]})"},
      {"trailing comma after methodConfig",
       R"({"methodConfig": [{"name": [{"service": "a.B"}]},]})"},
      {"trailing comma in a name",
       R"({"methodConfig": [{"name": [{"service": "a.B",}]}]})"},
      {"trailing comma after the root", R"({},)"},
      {"empty member", R"({,})"},
      {"double comma", R"({"a": [1,, 2]})"},
      {"comment", "/* c */ {}"},
      {"line comment", "{} // c"},
      {"two roots", "{}{}"},
      {"single quotes", "{'a': 1}"},
      {"unquoted key", "{a: 1}"},
      {"lone surrogate", R"({"a": "\ud800"})"},
      {"escaped e acute", R"({"a": "\u00e9"})"},
      {"control character", "{\"a\": \"x\ty\"}"},
      {"leading zero", R"({"a": 01})"},
      {"number ending in a dot", R"({"a": 1.})"},
      {"exponent without digits", R"({"a": 1.5e})"},
      {"a lone minus", R"({"a": -})", kNotJson},
      {"bad escape", R"({"a": "\x"})"},
      {"true misspelt", R"({"a": tru})"},
      {"NaN literal", R"({"a": NaN})"},
      {"duplicate top-level key",
       R"({"methodConfig": [], "methodConfig": []})"},
      {"duplicate key in an entry",
       R"({"methodConfig": [{"name": [{}], "timeout": "1s", "timeout": "2s"}]})"},
      {"duplicate unknown key", R"({"x": 1, "x": 2})"},
      {"snake_case method_config",
       R"({"method_config": [{"name": [{"service": "a.B"}], "timeout": "1s"}]})"},
      {"snake_case retry_policy",
       R"({"methodConfig": [{"name": [{"service": "a.B"}], "retry_policy": {"maxAttempts": 3}}]})"},
      {"two default entries",
       R"({"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]})"},
      {"the same service in two entries",
       R"({"methodConfig": [{"name": [{"service": "a.B"}]}, {"name": [{"service": "a.B"}]}]})"},
      {"method and service entries",
       R"({"methodConfig": [{"name": [{"service": "a.B", "method": "C"}]}, {"name": [{"service": "a.B"}]}, {"name": [{}]}]})"},
      {"deep nesting in an unknown field",
       absl::StrCat("{\"x\": ", std::string(60, '['), std::string(60, ']'),
                    "}")},
      {"UTF-8 BOM", "\xEF\xBB\xBF{}"},
      {"invalid UTF-8", "{\"a\": \"\xC3\x28\"}"},
  };
  corpus.insert(corpus.end(), hand.begin(), hand.end());
  return corpus;
}

// The docs' list: the bullets "- **label**" under the heading "### Files
// gRPC 1.51 and stubkit judge differently".
std::vector<std::string> DocumentedDifferences() {
  std::vector<std::string> labels;
#ifdef STUBKIT_SOURCE_DIR
  std::ifstream docs(std::string(STUBKIT_SOURCE_DIR) +
                     "/docs/service-config.md");
  std::string line;
  bool in_section = false;
  while (std::getline(docs, line)) {
    if (absl::StartsWith(line, "#")) {
      in_section = absl::StrContains(
          line, "Files gRPC 1.51 and stubkit judge differently");
      continue;
    }
    if (in_section && absl::StartsWith(line, "- **")) {
      const size_t end = line.find("**", 4);
      labels.push_back(line.substr(4, end - 4));
    }
  }
#endif
  return labels;
}

TEST(ServiceConfigOracleTest, TheDocsListTheAllowedDifferences) {
#ifndef STUBKIT_SOURCE_DIR
  GTEST_SKIP() << "built without STUBKIT_SOURCE_DIR";
#endif
  std::vector<std::string> documented = DocumentedDifferences();
  std::vector<std::string> allowed = AllowedDifferences();
  std::sort(documented.begin(), documented.end());
  std::sort(allowed.begin(), allowed.end());
  EXPECT_EQ(documented, allowed);
}

TEST(ServiceConfigOracleTest, GrpcsValidatorAgrees) {
  // The validator needs gRPC's core initialized.
  grpc_init();
  const std::vector<OracleCase> corpus = OracleCorpus();
  EXPECT_GE(corpus.size(), 100u);
  int disagreements = 0;
  for (const OracleCase& c : corpus) {
    SCOPED_TRACE(absl::StrCat(c.label, "\n  ", c.json));
    const std::string grpc_error =
        grpc::experimental::ValidateServiceConfigJSON(c.json);
    const absl::StatusOr<ServiceConfig> parsed = ParseServiceConfig(c.json);
    const bool grpc_ok = grpc_error.empty();
    if (!parsed.ok()) {
      // Refused with the JSON path, or the place in a text that is not
      // JSON.
      EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_FALSE(parsed.status().message().empty());
    }
    if (grpc_ok == parsed.ok()) continue;
    ++disagreements;
    EXPECT_NE(c.allowed, nullptr)
        << "gRPC " << (grpc_ok ? "accepts" : "refuses: " + grpc_error)
        << "\n  stubkit "
        << (parsed.ok() ? std::string("accepts")
                        : "refuses: " + std::string(parsed.status().message()));
  }
  grpc_shutdown();
  // The corpus shows each documented difference at least once.
  std::set<std::string> shown;
  for (const OracleCase& c : corpus) {
    if (c.allowed != nullptr) shown.insert(c.allowed);
  }
  EXPECT_EQ(shown.size(), AllowedDifferences().size());
  std::cout << corpus.size() << " files, " << disagreements
            << " documented disagreements\n";
}

}  // namespace
}  // namespace stubkit

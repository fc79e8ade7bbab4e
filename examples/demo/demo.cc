// Copyright 2026 The stubkit Authors.
//
// stubkit demo: a generated client against a flaky key-value server.
//
// By default the program starts a KeyValue server in-process on 127.0.0.1
// (a free port) that fails calls on purpose, then calls it through the
// generated `demo::KeyValueClient` and prints a timeline of every attempt,
// every backoff wait and why each call stopped, then a summary:
//
//   stubkit_demo                       # embedded flaky server
//   stubkit_demo --time-scale=0.1      # watch the waits ten times slower
//   stubkit_demo --target=host:port    # a real demo.KeyValue server
//   stubkit_demo --metrics-port=0      # Prometheus /metrics on a free port
//                                      # (when built with stubkit::prometheus)
//   stubkit_demo --service-config=examples/demo_service_config.json
//                                      # gRPC service config rules instead of
//                                      # stubkit's defaults
//
// Time runs scaled (default 0.01: the real one-second first backoff takes
// 10 ms), so the default policies (1 s to 5 min backoff, 30 min retry limit)
// play out in a couple of seconds. Waits print in unscaled time.
//
// Exit codes: 0 when every scripted scenario behaved as stubkit promises,
// 1 when one did not (or an external server could not be reached), 2 for
// bad flags.

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "demo/key_value.stubkit.h"
#include "stubkit/clock.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_options.h"
#include "stubkit/service_config.h"
#include "stubkit/status.h"

#ifdef STUBKIT_DEMO_WITH_PROMETHEUS
#include <prometheus/exposer.h>
#include <unistd.h>

#include "stubkit/prometheus.h"
#endif

namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

// ---------------------------------------------------------------- flags ---

struct Flags {
  std::string target;  // empty: embedded server
  double time_scale = 0.01;
  double fail_rate = 0.3;    // share of calls failing with UNAVAILABLE
  double other_rate = 0.05;  // share failing with INTERNAL
  int calls = 12;
  unsigned seed = 1;
  int metrics_port = -1;       // -1: no Prometheus endpoint; 0: a free port
  std::string service_config;  // a gRPC service config file, or empty
};

constexpr char kUsage[] =
    "usage: stubkit_demo [flags]\n"
    "\n"
    "Calls a flaky key-value server through a stubkit-generated client and\n"
    "prints each attempt, each backoff wait and why each call stopped.\n"
    "\n"
    "  --target=HOST:PORT  use a running demo.KeyValue server instead of the\n"
    "                      embedded flaky one (scripted scenarios are "
    "skipped)\n"
    "  --time-scale=X      real seconds per demo second, in (0, 1]; default\n"
    "                      0.01 (a 1 s backoff wait takes 10 ms)\n"
    "  --fail-rate=P       embedded server: share of random-phase calls\n"
    "                      failing with UNAVAILABLE (retryable); default 0.3\n"
    "  --other-rate=P      embedded server: share failing with INTERNAL (not\n"
    "                      retryable); default 0.05\n"
    "  --calls=N           calls in the random phase; default 12\n"
    "  --seed=N            seed of the embedded server's failures; default 1\n"
    "  --metrics-port=N    serve Prometheus metrics on 127.0.0.1:N/metrics\n"
    "                      (0: a free port); needs a build with\n"
    "                      STUBKIT_WITH_PROMETHEUS\n"
    "  --service-config=FILE  retry by a gRPC service config's rules\n"
    "                      (methodConfig, retryThrottling) instead of\n"
    "                      stubkit's defaults (scripted scenarios are "
    "skipped)\n"
    "  --help              this text\n";

bool ParseDouble(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end != nullptr && *end == '\0';
}

bool ParseInt(const std::string& text, long* out) {
  char* end = nullptr;
  *out = std::strtol(text.c_str(), &end, 10);
  return !text.empty() && end != nullptr && *end == '\0';
}

// Returns an error message, or "" on success. `--name value` and
// `--name=value` are both accepted.
std::string ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return "";
    }
    if (arg.rfind("--", 0) != 0) return "unexpected argument '" + arg + "'";
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    static const std::vector<std::string> kKnown = {
        "target", "time-scale", "fail-rate",    "other-rate",
        "calls",  "seed",       "metrics-port", "service-config"};
    if (std::find(kKnown.begin(), kKnown.end(), name) == kKnown.end()) {
      return "unknown flag '--" + name + "'";
    }
    if (!has_value) {
      if (i + 1 >= argc) return "flag '--" + name + "' needs a value";
      value = argv[++i];
    }
    double number = 0;
    long integer = 0;
    if (name == "target") {
      if (value.empty() || value.find(':') == std::string::npos) {
        return "--target wants HOST:PORT, got '" + value + "'";
      }
      flags->target = value;
    } else if (name == "time-scale") {
      if (!ParseDouble(value, &number) || number <= 0 || number > 1) {
        return "--time-scale wants a number in (0, 1], got '" + value + "'";
      }
      flags->time_scale = number;
    } else if (name == "fail-rate" || name == "other-rate") {
      if (!ParseDouble(value, &number) || number < 0 || number > 1) {
        return "--" + name + " wants a number in [0, 1], got '" + value + "'";
      }
      (name == "fail-rate" ? flags->fail_rate : flags->other_rate) = number;
    } else if (name == "calls") {
      if (!ParseInt(value, &integer) || integer < 0 || integer > 10000) {
        return "--calls wants an integer in [0, 10000], got '" + value + "'";
      }
      flags->calls = static_cast<int>(integer);
    } else if (name == "seed") {
      if (!ParseInt(value, &integer) || integer < 0) {
        return "--seed wants a non-negative integer, got '" + value + "'";
      }
      flags->seed = static_cast<unsigned>(integer);
    } else if (name == "service-config") {
      if (value.empty()) return "--service-config wants a file name";
      flags->service_config = value;
    } else if (name == "metrics-port") {
#ifdef STUBKIT_DEMO_WITH_PROMETHEUS
      if (!ParseInt(value, &integer) || integer < 0 || integer > 65535) {
        return "--metrics-port wants a port in [0, 65535], got '" + value + "'";
      }
      flags->metrics_port = static_cast<int>(integer);
#else
      return "--metrics-port: this stubkit_demo was built without Prometheus "
             "support (configure with STUBKIT_WITH_PROMETHEUS=ON and "
             "prometheus-cpp-dev installed)";
#endif
    }
  }
  if (flags->fail_rate + flags->other_rate > 1) {
    return "--fail-rate plus --other-rate must not exceed 1";
  }
  return "";
}

// ------------------------------------------------------- flaky server ---

// A KeyValue server that fails on purpose: first the scripted codes, one per
// call, then (when random failures are on) a random share of calls.
class FlakyKeyValue final : public demo::KeyValue::Service {
 public:
  FlakyKeyValue(double fail_rate, double other_rate, unsigned seed)
      : fail_rate_(fail_rate), other_rate_(other_rate), random_(seed) {}

  void Script(std::vector<grpc::StatusCode> codes) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.assign(codes.begin(), codes.end());
  }
  void set_random_failures(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    random_failures_ = on;
  }
  int calls() const { return calls_.load(); }

  grpc::Status Get(grpc::ServerContext*, const demo::GetRequest* request,
                   demo::Entry* response) override {
    if (auto failure = Fail()) return *failure;
    std::lock_guard<std::mutex> lock(mu_);
    response->set_key(request->key());
    response->set_value(data_[request->key()]);
    return grpc::Status::OK;
  }
  grpc::Status Put(grpc::ServerContext*, const demo::PutRequest* request,
                   demo::Entry* response) override {
    if (auto failure = Fail()) return *failure;
    std::lock_guard<std::mutex> lock(mu_);
    data_[request->key()] = request->value();
    response->set_key(request->key());
    response->set_value(request->value());
    return grpc::Status::OK;
  }
  grpc::Status Increment(grpc::ServerContext*,
                         const demo::IncrementRequest* request,
                         demo::Entry* response) override {
    if (auto failure = Fail()) return *failure;
    std::lock_guard<std::mutex> lock(mu_);
    response->set_key(request->key());
    response->set_value(data_[request->key()] += request->delta());
    return grpc::Status::OK;
  }

 private:
  std::optional<grpc::Status> Fail() {
    ++calls_;
    std::lock_guard<std::mutex> lock(mu_);
    if (!script_.empty()) {
      grpc::StatusCode code = script_.front();
      script_.pop_front();
      if (code == grpc::StatusCode::OK) return std::nullopt;
      return grpc::Status(code, "injected (scripted)");
    }
    if (!random_failures_) return std::nullopt;
    double draw = std::uniform_real_distribution<double>(0, 1)(random_);
    if (draw < fail_rate_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected");
    }
    if (draw < fail_rate_ + other_rate_) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "injected");
    }
    return std::nullopt;
  }

  const double fail_rate_;
  const double other_rate_;
  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::mt19937 random_;
  std::deque<grpc::StatusCode> script_;
  bool random_failures_ = false;
  std::map<std::string, int64_t> data_;
};

// ------------------------------------------------------------ timeline ---

std::string Seconds(nanoseconds d) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3fs",
                std::chrono::duration<double>(d).count());
  return buffer;
}

// Demo time: runs `1 / scale` times faster than the steady clock, so the
// retry policy's limits and the backoff waits shrink together.
class ScaledTime : public stubkit::Clock, public stubkit::Sleeper {
 public:
  explicit ScaledTime(double scale)
      : scale_(scale), origin_(std::chrono::steady_clock::now()) {}

  time_point Now() const override {
    auto real = std::chrono::steady_clock::now() - origin_;
    return origin_ + duration_cast<time_point::duration>(real / scale_);
  }
  void SleepFor(nanoseconds wait) override {
    auto real = duration_cast<nanoseconds>(wait * scale_);
    std::printf("    wait %s before the next attempt (%s real)\n",
                Seconds(wait).c_str(), Seconds(real).c_str());
    std::this_thread::sleep_for(real);
  }

 private:
  const double scale_;
  const time_point origin_;
};

// A user decorator: prints every attempt and counts them. This is how a
// stubkit user adds per-attempt behaviour without touching the retry loop.
class TimelineStub : public demo::KeyValueStubDecorator {
 public:
  struct Counters {
    std::atomic<int> total{0};    // every attempt of every call
    std::atomic<int> in_call{0};  // attempts of the current call
  };

  TimelineStub(std::shared_ptr<demo::KeyValueStub> child,
               std::shared_ptr<Counters> counters)
      : KeyValueStubDecorator(std::move(child)),
        counters_(std::move(counters)) {}

  absl::StatusOr<demo::Entry> Get(grpc::ClientContext& context,
                                  const stubkit::OptionsView& options,
                                  const demo::GetRequest& request) override {
    return Log("Get", KeyValueStubDecorator::Get(context, options, request));
  }
  absl::StatusOr<demo::Entry> Put(grpc::ClientContext& context,
                                  const stubkit::OptionsView& options,
                                  const demo::PutRequest& request) override {
    return Log("Put", KeyValueStubDecorator::Put(context, options, request));
  }
  absl::StatusOr<demo::Entry> Increment(
      grpc::ClientContext& context, const stubkit::OptionsView& options,
      const demo::IncrementRequest& request) override {
    return Log("Increment",
               KeyValueStubDecorator::Increment(context, options, request));
  }

 private:
  absl::StatusOr<demo::Entry> Log(const char* method,
                                  absl::StatusOr<demo::Entry> result) {
    ++counters_->total;
    int attempt = ++counters_->in_call;
    if (result.ok()) {
      std::printf("  attempt %d  %-9s OK (%s = %lld)\n", attempt, method,
                  result->key().c_str(),
                  static_cast<long long>(result->value()));
    } else {
      std::printf("  attempt %d  %-9s %s: %s\n", attempt, method,
                  absl::StatusCodeToString(result.status().code()).c_str(),
                  std::string(result.status().message()).c_str());
    }
    return result;
  }

  std::shared_ptr<Counters> counters_;
};

struct Summary {
  int calls = 0;
  int attempts = 0;
  int successes = 0;
  std::map<std::string, int> errors_by_reason;
};

// Runs one call, prints how it ended, and returns its attempt count.
template <typename Call>
int Track(const char* what, TimelineStub::Counters& counters, Summary& summary,
          Call&& call, absl::Status* final_status = nullptr) {
  std::printf("%s\n", what);
  counters.in_call = 0;
  int before = counters.total.load();
  absl::Status status = call();
  int made = counters.total.load() - before;
  ++summary.calls;
  summary.attempts += made;
  if (status.ok()) {
    ++summary.successes;
    std::printf("  => OK after %d attempt%s\n", made, made == 1 ? "" : "s");
  } else {
    std::optional<stubkit::RetrySummary> retry =
        stubkit::GetRetrySummary(status);
    std::string reason =
        retry ? std::string(stubkit::ToString(retry->stop_reason))
              : "no summary";
    ++summary.errors_by_reason[reason];
    std::printf("  => %s, stopped (%s): %s\n",
                absl::StatusCodeToString(status.code()).c_str(), reason.c_str(),
                std::string(status.message()).c_str());
  }
  if (final_status != nullptr) *final_status = status;
  return made;
}

bool Expect(bool ok, const std::string& what) {
  std::printf("  check: %s ... %s\n", what.c_str(), ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  bool help = false;
  std::string error = ParseFlags(argc, argv, &flags, &help);
  if (!error.empty()) {
    std::fprintf(stderr, "stubkit_demo: %s\n\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (help) {
    std::printf("%s", kUsage);
    return 0;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // A gRPC service config, read before anything starts: a bad one is a bad
  // flag, reported with its JSON path.
  std::optional<stubkit::ServiceConfig> config;
  if (!flags.service_config.empty()) {
    absl::StatusOr<stubkit::ServiceConfig> loaded =
        stubkit::LoadServiceConfigFile(flags.service_config);
    if (!loaded.ok()) {
      std::fprintf(stderr, "stubkit_demo: --service-config: %s\n",
                   std::string(loaded.status().message()).c_str());
      return 2;
    }
    config = *std::move(loaded);
  }

  // The server: embedded and flaky, or the user's.
  std::unique_ptr<FlakyKeyValue> service;
  std::unique_ptr<grpc::Server> server;
  std::string target = flags.target;
  if (target.empty()) {
    service = std::make_unique<FlakyKeyValue>(flags.fail_rate, flags.other_rate,
                                              flags.seed);
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
    if (server == nullptr || port == 0) {
      std::fprintf(stderr, "stubkit_demo: cannot start the embedded server\n");
      return 1;
    }
    target = "127.0.0.1:" + std::to_string(port);
    std::printf("embedded flaky KeyValue server on %s\n", target.c_str());
  } else {
    std::printf("using the KeyValue server at %s\n", target.c_str());
  }
  std::printf("time scale %.4g: waits print in demo time, then real time\n\n",
              flags.time_scale);

  // Per-method metrics, served to Prometheus when asked for. Latencies are
  // measured with the client's clock, so they are in demo time.
  auto metrics = std::make_shared<stubkit::MetricsCollector>();
#ifdef STUBKIT_DEMO_WITH_PROMETHEUS
  std::unique_ptr<prometheus::Exposer> exposer;
  auto collectable = std::make_shared<stubkit::PrometheusCollectable>(metrics);
  if (flags.metrics_port >= 0) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(
          "127.0.0.1:" + std::to_string(flags.metrics_port));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stubkit_demo: cannot serve metrics: %s\n",
                   e.what());
      return 1;
    }
    exposer->RegisterCollectable(collectable);
    std::printf("metrics: http://127.0.0.1:%d/metrics\n\n",
                exposer->GetListeningPorts().at(0));
  }
#endif

  // The client: default policies (30 min limit, 1 s..5 min backoff) or the
  // service config's, demo time, and the timeline decorator.
  auto time = std::make_shared<ScaledTime>(flags.time_scale);
  auto attempts = std::make_shared<TimelineStub::Counters>();
  // The client takes the service config's rules with `ToOptions`; each
  // method's rules are printed from `OptionsFor`.
  if (config.has_value()) {
    std::printf("service config %s:\n", flags.service_config.c_str());
    for (const char* method : {"Get", "Put", "Increment"}) {
      stubkit::Options options =
          config->OptionsFor(std::string("demo.KeyValue.") + method);
      const auto timeout = options.get<stubkit::TotalTimeoutOption>();
      std::printf(
          "  %-9s %s%s\n", method,
          options.get<stubkit::RetryPolicyOption>().ToString().c_str(),
          timeout.count() > 0 ? (", timeout " + Seconds(timeout)).c_str() : "");
    }
    std::printf("\n");
  }
  demo::KeyValueClient client(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()),
      (config.has_value() ? config->ToOptions("demo.KeyValue")
                          : stubkit::Options{})
          .MergedWith(
              stubkit::Options{}
                  .set<stubkit::ClockOption>(time)
                  .set<stubkit::SleeperOption>(time)
                  .set<stubkit::MetricsOption>(metrics)
                  .set<demo::KeyValueClient::DecoratorsOption>(
                      {[attempts](std::shared_ptr<demo::KeyValueStub> child)
                           -> std::shared_ptr<demo::KeyValueStub> {
                        return std::make_shared<TimelineStub>(std::move(child),
                                                              attempts);
                      }})));
  Summary summary;
  bool ok = true;
  auto put = [&](const std::string& key, int64_t value,
                 const stubkit::Options& call = {}) {
    demo::PutRequest request;
    request.set_key(key);
    request.set_value(value);
    return client.Put(request, call).status();
  };
  auto get = [&](const std::string& key, const stubkit::Options& call = {}) {
    demo::GetRequest request;
    request.set_key(key);
    return client.Get(request, call).status();
  };
  auto increment = [&](const std::string& key, int64_t delta) {
    demo::IncrementRequest request;
    request.set_key(key);
    request.set_delta(delta);
    return client.Increment(request).status();
  };

  // The scripted scenarios check stubkit's default policies.
  if (service != nullptr && config.has_value()) {
    std::printf("scripted scenarios skipped: they check the defaults\n");
    service->set_random_failures(true);
  } else if (service != nullptr) {
    absl::Status status;
    service->Script(
        {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNAVAILABLE});
    int made = Track(
        "1. Put (idempotent) while the server is UNAVAILABLE "
        "twice: retried with backoff",
        *attempts, summary, [&] { return put("apples", 3); }, &status);
    ok &= Expect(status.ok() && made == 3, "succeeded on attempt 3");

    service->Script({grpc::StatusCode::UNAVAILABLE});
    made = Track(
        "\n2. Increment (not idempotent) hits UNAVAILABLE: never "
        "retried",
        *attempts, summary, [&] { return increment("apples", 1); }, &status);
    auto retry = stubkit::GetRetrySummary(status);
    ok &= Expect(made == 1 && retry &&
                     retry->stop_reason == stubkit::StopReason::kNonIdempotent,
                 "1 attempt, stopped as non-idempotent");

    service->Script({grpc::StatusCode::UNAVAILABLE});
    made = Track(
        "\n3. Get with a per-call RetryPolicy::LimitedErrorCount(0): the "
        "client's policy is overridden for this call only",
        *attempts, summary,
        [&] {
          return get("apples",
                     stubkit::Options{}.set<stubkit::RetryPolicyOption>(
                         stubkit::RetryPolicy::LimitedErrorCount(0)));
        },
        &status);
    retry = stubkit::GetRetrySummary(status);
    ok &= Expect(made == 1 && retry &&
                     retry->stop_reason == stubkit::StopReason::kExhausted,
                 "1 attempt, retry policy exhausted");

    service->Script({grpc::StatusCode::UNAVAILABLE});
    made = Track(
        "\n4. The same Get without the override: retried", *attempts, summary,
        [&] { return get("apples"); }, &status);
    ok &= Expect(status.ok() && made == 2, "succeeded on attempt 2");

    service->Script({grpc::StatusCode::PERMISSION_DENIED});
    made = Track(
        "\n5. Put hits PERMISSION_DENIED: not a retryable code", *attempts,
        summary, [&] { return put("pears", 1); }, &status);
    retry = stubkit::GetRetrySummary(status);
    ok &= Expect(made == 1 && retry &&
                     retry->stop_reason == stubkit::StopReason::kPermanentError,
                 "1 attempt, permanent error");

    service->set_random_failures(true);
  }

  std::printf("\n6. %d calls against random failures\n", flags.calls);
  int answered = 0;
  for (int i = 0; i < flags.calls; ++i) {
    std::string key = "key" + std::to_string(i % 3);
    absl::Status status;
    std::string what = "-- call " + std::to_string(i + 1);
    switch (i % 3) {
      case 0:
        Track((what + ": Put " + key).c_str(), *attempts, summary,
              [&] { return put(key, i); }, &status);
        break;
      case 1:
        Track((what + ": Get " + key).c_str(), *attempts, summary,
              [&] { return get(key); }, &status);
        break;
      default:
        Track((what + ": Increment " + key).c_str(), *attempts, summary,
              [&] { return increment(key, 1); }, &status);
        break;
    }
    if (status.code() != absl::StatusCode::kUnavailable &&
        status.code() != absl::StatusCode::kDeadlineExceeded) {
      ++answered;
    }
  }

  std::printf("\nsummary: %d calls, %d attempts, %d successes\n", summary.calls,
              summary.attempts, summary.successes);
  for (const auto& [reason, count] : summary.errors_by_reason) {
    std::printf("  errors (%s): %d\n", reason.c_str(), count);
  }
  if (service != nullptr) {
    // Every attempt the client made reached the server, and no more.
    ok &= Expect(service->calls() == summary.attempts,
                 "server saw " + std::to_string(service->calls()) +
                     " calls == client attempts");
  } else if (flags.calls > 0 && answered == 0) {
    std::fprintf(stderr, "stubkit_demo: the server at %s never answered\n",
                 target.c_str());
    ok = false;
  }
#ifdef STUBKIT_DEMO_WITH_PROMETHEUS
  // At a terminal, keep the endpoint up for a look; under a test or a pipe,
  // exit at once.
  if (exposer != nullptr && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
    std::printf("metrics: serving until Enter is pressed\n");
    std::getchar();
  }
#endif
  if (server != nullptr) server->Shutdown();
  std::printf("%s\n", ok ? "demo: OK" : "demo: FAILED");
  return ok ? 0 : 1;
}

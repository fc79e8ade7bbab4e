// Copyright 2026 The stubkit Authors.
//
// The retry throttle's waiting mode against a real server that is down for
// a second and then recovers, under a steady offered load of async calls
// sharing one throttle: few attempts reach the server while it is down,
// every call succeeds, and with the proportional release the waiting calls
// come back at no more than release_ratio times the rate the new load
// succeeds at. Both release modes; about 4 s of real time each.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/channel.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::TestServer;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};

// Down in [down_from, down_until) (arrival time); records each attempt.
class OutageService final : public EchoService::Service {
 public:
  struct Arrival {
    Steady::time_point at;
    bool retry;  // carries x-retry-attempt
  };

  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    const Steady::time_point now = Steady::now();
    {
      absl::MutexLock lock(&mu_);
      arrivals_.push_back(
          {now, context->client_metadata().count(kRetryAttemptHeader) > 0});
    }
    if (now >= down_from && now < down_until) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "backend down");
    }
    response->set_message(request->message());
    return grpc::Status::OK;
  }

  std::vector<Arrival> arrivals() {
    absl::MutexLock lock(&mu_);
    return arrivals_;
  }

  Steady::time_point down_from = Steady::time_point::max();
  Steady::time_point down_until = Steady::time_point::max();

 private:
  absl::Mutex mu_;
  std::vector<Arrival> arrivals_ ABSL_GUARDED_BY(mu_);
};

using Release = RetryThrottle::WaitForRecovery::Release;

class ThrottleWaitingIntegrationTest
    : public ::testing::TestWithParam<Release> {};

INSTANTIATE_TEST_SUITE_P(Modes, ThrottleWaitingIntegrationTest,
                         ::testing::Values(Release::kAdaptive,
                                           Release::kProportional),
                         [](const ::testing::TestParamInfo<Release>& info) {
                           return info.param == Release::kAdaptive
                                      ? "Adaptive"
                                      : "Proportional";
                         });

TEST_P(ThrottleWaitingIntegrationTest, OutageThenRecoveryUnderSteadyLoad) {
  constexpr double kMaxTokens = 10;
  constexpr milliseconds kProbeInterval{200};
  constexpr milliseconds kOfferEvery{20};  // 50 calls/s
  constexpr int kCalls = 115;              // 2.3 s of offered load
  constexpr milliseconds kOutageStart{300};
  constexpr milliseconds kOutageEnd{1300};

  OutageService service;
  TestServer server(&service);
  ASSERT_TRUE(server.ok());
  auto stub = std::shared_ptr<EchoService::Stub>(
      EchoService::NewStub(stubkit::CreateChannel(
          server.address(), grpc::InsecureChannelCredentials())));
  {  // connect before the clock starts
    grpc::ClientContext context;
    EchoRequest request;
    EchoResponse response;
    ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
  }

  RetryThrottle::WaitForRecovery waiting;
  waiting.probe_interval = kProbeInterval;
  waiting.probes = 1;
  waiting.release = GetParam();
  auto throttle =
      std::make_shared<RetryThrottle>(RetryThrottle::Config()
                                          .WithMaxTokens(kMaxTokens)
                                          .WithTokenRatio(0.1)
                                          .WithWaitForRecovery(waiting));
  const Options client =
      Options{}
          .set<RetryThrottleOption>(throttle)
          .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(20))
                                        .WithMaximumDelay(milliseconds(200))
                                        .WithMultiplier(2))
          .set<RetryPolicyOption>(
              RetryPolicy::LimitedTime(std::chrono::seconds(30)));

  const Steady::time_point t0 = Steady::now();
  service.down_from = t0 + kOutageStart;
  service.down_until = t0 + kOutageEnd;
  std::vector<std::future<absl::StatusOr<EchoResponse>>> results;
  auto request = std::make_shared<EchoRequest>();
  request->set_message("outage");
  for (int i = 0; i < kCalls; ++i) {
    std::this_thread::sleep_until(t0 + kOfferEvery * i);
    results.push_back(AsyncRetryLoop<EchoResponse>(
        kEcho, Options{}, client,
        [stub, request](grpc::ClientContext& context, const OptionsView&,
                        AsyncCallback<EchoResponse> done) {
          internal::StartAsyncUnary<EchoResponse>(
              [&](EchoResponse* response, auto on_done) {
                stub->async()->Echo(&context, request.get(), response,
                                    std::move(on_done));
              },
              std::move(done));
        }));
  }
  int failed = 0;
  for (auto& result : results) {
    ASSERT_EQ(result.wait_for(std::chrono::seconds(60)),
              std::future_status::ready);
    absl::StatusOr<EchoResponse> r = result.get();
    if (!r.ok()) {
      ++failed;
      ADD_FAILURE() << r.status();
    }
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(throttle->waiters(), 0);

  const std::vector<OutageService::Arrival> arrivals = service.arrivals();
  auto in = [](const OutageService::Arrival& a, Steady::time_point from,
               Steady::time_point to) { return a.at >= from && a.at < to; };
  // While down: new calls' first attempts, the retries the bucket allowed
  // before it refused (fewer than max_tokens), and at most one probe per
  // interval.
  int first_in_outage = 0, retries_in_outage = 0;
  for (const auto& a : arrivals) {
    if (!in(a, service.down_from, service.down_until)) continue;
    (a.retry ? retries_in_outage : first_in_outage)++;
  }
  const int probe_bound =
      static_cast<int>((kOutageEnd - kOutageStart) / kProbeInterval) + 1;
  std::printf("outage: %d first attempts, %d retries (bound %d)\n",
              first_in_outage, retries_in_outage,
              static_cast<int>(kMaxTokens) + probe_bound);
  EXPECT_LE(retries_in_outage, static_cast<int>(kMaxTokens) + probe_bound);
  EXPECT_GT(first_in_outage, 0);

  // After recovery, in any window of 200 ms, released retries are at most
  // release_ratio * R * 200 ms + 1, R the highest rate of new successes
  // since the recovery (over at least a probe interval). R is estimated
  // here from the new calls' arrivals, doubled: a loaded machine may report
  // successes late and in a bunch.
  const milliseconds kWindow{200};
  std::vector<Steady::time_point> fresh;
  for (const auto& a : arrivals) {
    if (!a.retry && a.at >= service.down_until - milliseconds(100)) {
      fresh.push_back(a.at);
    }
  }
  std::sort(fresh.begin(), fresh.end());
  double highest_rate = 0;  // per second
  for (size_t i = 0; i < fresh.size(); ++i) {
    for (size_t j = i; j < fresh.size(); ++j) {
      const double length =
          std::max(std::chrono::duration<double>(kProbeInterval).count(),
                   std::chrono::duration<double>(fresh[j] - fresh[i]).count());
      highest_rate = std::max(highest_rate, (j - i + 1) / length);
    }
  }
  const double release_ratio = throttle->wait_options().release_ratio;
  const int release_bound =
      static_cast<int>(release_ratio * 2 * highest_rate *
                       std::chrono::duration<double>(kWindow).count()) +
      1;
  int peak_retries = 0, peak_attempts = 0;
  for (Steady::time_point from = service.down_until;
       from < service.down_until + std::chrono::seconds(4);
       from += milliseconds(50)) {
    int retries = 0, attempts = 0;
    for (const auto& a : arrivals) {
      if (in(a, from, from + kWindow)) {
        ++attempts;
        if (a.retry) ++retries;
      }
    }
    peak_retries = std::max(peak_retries, retries);
    peak_attempts = std::max(peak_attempts, attempts);
    // The adaptive pace has no bound in the new load: it doubles every
    // probe interval while releases succeed (tests/unit's model checks it).
    if (GetParam() != Release::kProportional) continue;
    EXPECT_LE(retries, release_bound)
        << "window at +"
        << std::chrono::duration_cast<milliseconds>(from - t0).count() << " ms";
  }
  std::printf(
      "after recovery: peak %d attempts and %d retries per %lld ms (%lld "
      "offered; new calls' highest rate %.0f/s, retry bound %d)\n",
      peak_attempts, peak_retries, static_cast<long long>(kWindow.count()),
      static_cast<long long>(kWindow / kOfferEvery), highest_rate,
      release_bound);
}

}  // namespace
}  // namespace stubkit

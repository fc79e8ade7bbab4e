// Copyright 2026 The stubkit Authors.
//
// stubkit/server_propagation.h against real gRPC servers on 127.0.0.1, in a
// chain client -> middle -> backend, with the middle written against the
// sync API and against the callback API (a reactor forwarding OnCancel, or
// polled):
// the incoming deadline reaches the backend, a cancel of the client reaches
// the backend, the middle's overload reaches the client as "don't retry",
// and a retried request gets NestedRetryOption's downstream behaviour.

#include "stubkit/server_propagation.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/channel.h"
#include "stubkit/internal/api/retry_summary.h"
#include "stubkit/internal/engine/async_call.h"
#include "stubkit/retry_loop.h"
#include "stubkit/server_hints.h"
#include "stubkit/status.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::TestServer;
using ::testing::HasSubstr;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};

// Sanitizer builds are slower; the bounds scale with this (as in
// tests/reliability).
int Scale() {
  const char* env = std::getenv("STUBKIT_RELIABILITY_SLOWDOWN");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 1;
}

// The backend: fails while `outage`, hangs until cancelled while `hang`,
// and records what it saw.
class Backend final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    ++attempts;
    {
      absl::MutexLock lock(&mu_);
      deadline_ = context->deadline();
      received_ = system_clock::now();
    }
    if (hang.load()) {
      started.store(true);
      const auto give_up = steady_clock::now() + seconds(20 * Scale());
      while (!context->IsCancelled() && steady_clock::now() < give_up) {
        std::this_thread::sleep_for(milliseconds(1));
      }
      if (context->IsCancelled()) cancelled.store(true);
      return grpc::Status(grpc::StatusCode::INTERNAL, "should not be seen");
    }
    if (outage.load()) {
      return grpc::Status(static_cast<grpc::StatusCode>(outage_code.load()),
                          "backend overloaded");
    }
    response->set_message(request->message());
    response->set_attempt(attempts.load());
    return grpc::Status::OK;
  }

  // The remaining time the last request arrived with.
  nanoseconds remaining() {
    absl::MutexLock lock(&mu_);
    return deadline_ - received_;
  }
  system_clock::time_point deadline() {
    absl::MutexLock lock(&mu_);
    return deadline_;
  }

  std::atomic<int> attempts{0};
  std::atomic<bool> outage{false};
  std::atomic<int> outage_code{grpc::StatusCode::UNAVAILABLE};
  std::atomic<bool> hang{false};
  std::atomic<bool> started{false};
  std::atomic<bool> cancelled{false};

 private:
  absl::Mutex mu_;
  system_clock::time_point deadline_;
  system_clock::time_point received_;
};

// What both middles share: the downstream client's options and stub, and
// a delay before the downstream call (to see the deadline shrink).
struct MiddleConfig {
  Options client;
  std::unique_ptr<EchoService::Stub> stub;
  milliseconds delay{0};
  // The callback middle polls too, instead of forwarding OnCancel.
  bool callback_polls = false;
  // Passed to IncomingCall::options(call), and as Settings::reply.
  Options call;
  UpstreamReplyMapper reply;
  // Incoming calls seen, and the largest incoming attempt number.
  std::atomic<int> incoming_calls{0};
  std::atomic<int> max_incoming_attempt{0};
  void Saw(const IncomingCall& incoming) {
    ++incoming_calls;
    int seen = max_incoming_attempt.load();
    while (
        incoming.attempt() > seen &&
        !max_incoming_attempt.compare_exchange_weak(seen, incoming.attempt())) {
    }
  }
  // The code the last downstream call ended with, once it ended.
  std::atomic<bool> downstream_done{false};
  std::atomic<int> downstream_code{-1};
  void Ended(const absl::Status& status) {
    downstream_code.store(static_cast<int>(status.code()));
    downstream_done.store(true);
  }
};

class SyncMiddle final : public EchoService::Service {
 public:
  explicit SyncMiddle(MiddleConfig* config) : config_(*config) {}
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    IncomingCall incoming(*context,
                          IncomingCall::Settings{true, config_.reply});
    config_.Saw(incoming);
    std::this_thread::sleep_for(config_.delay);
    const Options call = incoming.options(config_.call);
    absl::StatusOr<EchoResponse> result = RetryLoop<EchoResponse>(
        kEcho, OptionsView(call, config_.client),
        [&](grpc::ClientContext& downstream) -> absl::StatusOr<EchoResponse> {
          EchoResponse r;
          grpc::Status s = config_.stub->Echo(&downstream, *request, &r);
          if (!s.ok()) return FromGrpcStatus(s);
          return r;
        });
    config_.Ended(result.status());
    if (!result.ok()) return incoming.Reply(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  }

 private:
  MiddleConfig& config_;
};

class CallbackMiddle final : public EchoService::CallbackService {
 public:
  explicit CallbackMiddle(MiddleConfig* config) : config_(*config) {}
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest* request,
                                 EchoResponse* response) override {
    return new Reactor(context, request, response, config_);
  }

 private:
  class Reactor final : public grpc::ServerUnaryReactor {
   public:
    Reactor(grpc::CallbackServerContext* context, const EchoRequest* request,
            EchoResponse* response, MiddleConfig& config)
        // The reactor forwards OnCancel: no polling, unless asked.
        : incoming_(*context, IncomingCall::Settings{config.callback_polls,
                                                     config.reply}),
          request_(*request),
          response_(response) {
      config.Saw(incoming_);
      if (config.delay == milliseconds(0)) {
        Start(config);
        return;
      }
      // Not by sleeping here: a gRPC callback thread's cached clock would
      // stand still, and the downstream call would compute its
      // grpc-timeout from the stale time. The call is not finished before
      // the thread has started the downstream call, so `this` lives.
      std::thread([this, &config] {
        std::this_thread::sleep_for(config.delay);
        Start(config);
      }).detach();
    }
    void OnCancel() override { incoming_.Cancel(); }
    void OnDone() override { delete this; }

   private:
    void Start(MiddleConfig& config) {
      EchoService::Stub* stub = config.stub.get();
      AsyncRetryLoop<EchoResponse>(
          kEcho, incoming_.options(config.call), config.client,
          [this, stub](grpc::ClientContext& downstream, const OptionsView&,
                       AsyncCallback<EchoResponse> done) {
            internal::StartAsyncUnary<EchoResponse>(
                [&](EchoResponse* r, auto on_done) {
                  stub->async()->Echo(&downstream, &request_, r,
                                      std::move(on_done));
                },
                std::move(done));
          },
          [this, &config](absl::StatusOr<EchoResponse> result) {
            config.Ended(result.status());
            if (!result.ok()) {
              Finish(incoming_.Reply(result.status()));
              return;
            }
            *response_ = *std::move(result);
            Finish(grpc::Status::OK);
          });
    }

    IncomingCall incoming_;
    const EchoRequest request_;
    EchoResponse* response_;
  };

  MiddleConfig& config_;
};

enum class MiddleKind { kSync, kCallback, kCallbackPolled };

class ServerPropagationTest : public ::testing::TestWithParam<MiddleKind> {
 protected:
  // Starts backend and middle; the middle's downstream options are
  // `middle_client` (fast backoff added).
  void Start(Options middle_client = {}) {
    backend_server_ = std::make_unique<TestServer>(&backend_);
    ASSERT_TRUE(backend_server_->ok());
    config_.stub = EchoService::NewStub(stubkit::CreateChannel(
        backend_server_->address(), grpc::InsecureChannelCredentials()));
    config_.client = FastBackoff().MergedWith(middle_client);
    config_.callback_polls = GetParam() == MiddleKind::kCallbackPolled;
    if (GetParam() == MiddleKind::kSync) {
      middle_service_ = std::make_unique<SyncMiddle>(&config_);
    } else {
      middle_service_ = std::make_unique<CallbackMiddle>(&config_);
    }
    middle_server_ = std::make_unique<TestServer>(middle_service_.get());
    ASSERT_TRUE(middle_server_->ok());
    client_stub_ = EchoService::NewStub(stubkit::CreateChannel(
        middle_server_->address(), grpc::InsecureChannelCredentials()));
    client_ = FastBackoff();
  }

  void TearDown() override {
    if (middle_server_) middle_server_->Shutdown();
    if (backend_server_) backend_server_->Shutdown();
  }

  static Options FastBackoff() {
    return Options{}
        .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                      .WithInitialDelay(milliseconds(1))
                                      .WithMaximumDelay(milliseconds(2)))
        .set<FollowReconnectOption>(false);
  }

  // A call from the client to the middle; `attempts` counts its attempts.
  absl::StatusOr<EchoResponse> Call(const Options& call, int* attempts) {
    EchoRequest request;
    request.set_message("hello");
    *attempts = 0;
    return RetryLoop<EchoResponse>(
        kEcho, OptionsView(call, client_),
        [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
          ++*attempts;
          EchoResponse r;
          grpc::Status s = client_stub_->Echo(&context, request, &r);
          if (!s.ok()) return FromGrpcStatus(s);
          return r;
        });
  }

  Backend backend_;
  MiddleConfig config_;
  std::unique_ptr<grpc::Service> middle_service_;
  std::unique_ptr<TestServer> backend_server_;
  std::unique_ptr<TestServer> middle_server_;
  std::unique_ptr<EchoService::Stub> client_stub_;
  Options client_;
};

INSTANTIATE_TEST_SUITE_P(Middles, ServerPropagationTest,
                         ::testing::Values(MiddleKind::kSync,
                                           MiddleKind::kCallback,
                                           MiddleKind::kCallbackPolled),
                         [](const ::testing::TestParamInfo<MiddleKind>& info) {
                           switch (info.param) {
                             case MiddleKind::kSync:
                               return "Sync";
                             case MiddleKind::kCallback:
                               return "Callback";
                             case MiddleKind::kCallbackPolled:
                               return "CallbackPolled";
                           }
                           return "Unknown";
                         });

TEST_P(ServerPropagationTest, DeadlineArrivesReducedByTheElapsedTime) {
  config_.delay = milliseconds(800);
  Start();
  const system_clock::time_point deadline = system_clock::now() + seconds(10);
  int attempts = 0;
  auto result = Call(Options{}.set<DeadlineOption>(deadline), &attempts);
  ASSERT_TRUE(result.ok()) << result.status();
  // gRPC sends grpc-timeout rounded up to its unit: 100 ms for timeouts of
  // seconds, so each hop may add up to 100 ms.
  const milliseconds rounding(200);
  // The same instant (one machine's clock), but for the rounding.
  EXPECT_LE(backend_.deadline(), deadline + rounding);
  EXPECT_GE(backend_.deadline(), deadline - seconds(2 * Scale()));
  // And so the backend got the client's time less the middle's 800 ms.
  EXPECT_LE(backend_.remaining(), seconds(10) - milliseconds(800) + rounding);
  EXPECT_GT(backend_.remaining(), seconds(10) - seconds(3 * Scale()));
}

// IncomingCall::options(call): of two deadlines, the earlier.
TEST_P(ServerPropagationTest, TheEarlierOfTwoDeadlinesWins) {
  const system_clock::time_point soon = system_clock::now() + seconds(3);
  const system_clock::time_point later = soon + seconds(7);
  const milliseconds rounding(200);
  config_.call.set<DeadlineOption>(soon);
  Start();
  int attempts = 0;
  ASSERT_TRUE(Call(Options{}.set<DeadlineOption>(later), &attempts).ok());
  EXPECT_LE(backend_.deadline(), soon + rounding);
  // The other way round.
  config_.call.set<DeadlineOption>(later);
  ASSERT_TRUE(Call(Options{}.set<DeadlineOption>(soon), &attempts).ok());
  EXPECT_LE(backend_.deadline(), soon + rounding);
}

// Count policies on both hops: no time limit, so no deadline anywhere.
TEST_P(ServerPropagationTest, NoIncomingDeadlineSetsNone) {
  const auto count = RetryPolicy::LimitedErrorCount(1);
  Start(Options{}.set<RetryPolicyOption>(count));
  int attempts = 0;
  auto result = Call(Options{}.set<RetryPolicyOption>(count), &attempts);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(backend_.deadline(), system_clock::time_point::max());
}

TEST_P(ServerPropagationTest, CancellingTheClientCancelsTheBackendCall) {
  backend_.hang = true;
  Start();
  auto token = std::make_shared<CancellationToken>();
  EchoRequest request;
  request.set_message("hang");
  auto shared_request = std::make_shared<EchoRequest>(request);
  EchoService::Stub* stub = client_stub_.get();
  std::future<absl::StatusOr<EchoResponse>> future =
      AsyncRetryLoop<EchoResponse>(
          kEcho, Options{}.set<CancellationOption>(token), client_,
          [stub, shared_request](grpc::ClientContext& context,
                                 const OptionsView&,
                                 AsyncCallback<EchoResponse> done) {
            internal::StartAsyncUnary<EchoResponse>(
                [&](EchoResponse* r, auto on_done) {
                  stub->async()->Echo(&context, shared_request.get(), r,
                                      std::move(on_done));
                },
                std::move(done));
          });
  const auto wait_until = steady_clock::now() + seconds(10 * Scale());
  while (!backend_.started.load() && steady_clock::now() < wait_until) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(backend_.started.load());
  token->Cancel();
  absl::StatusOr<EchoResponse> result = future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  // The backend sees its own call cancelled: the middle's poll (5 ms) or
  // OnCancel, then gRPC's cancel across the second hop.
  const auto cancelled_by = steady_clock::now() + seconds(2 * Scale());
  while (!backend_.cancelled.load() && steady_clock::now() < cancelled_by) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(backend_.cancelled.load());
  EXPECT_EQ(backend_.attempts.load(), 1);
}

// The middle waits 10 minutes to retry; the client's cancel ends that wait.
TEST_P(ServerPropagationTest, CancellingTheClientEndsTheMiddlesBackoffWait) {
  backend_.outage = true;
  Start(Options{}
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
            .set<BackoffPolicyOption>(
                ExponentialBackoffPolicy()
                    .WithInitialDelay(std::chrono::minutes(10))
                    .WithMaximumDelay(std::chrono::minutes(10))));
  auto token = std::make_shared<CancellationToken>();
  std::thread canceller([&] {
    const auto until = steady_clock::now() + seconds(10 * Scale());
    while (backend_.attempts.load() == 0 && steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    std::this_thread::sleep_for(milliseconds(20));  // into the wait
    token->Cancel();
  });
  int attempts = 0;
  const auto start = steady_clock::now();
  auto result = Call(Options{}.set<CancellationOption>(token), &attempts);
  canceller.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  const auto done_by = steady_clock::now() + seconds(2 * Scale());
  while (!config_.downstream_done.load() && steady_clock::now() < done_by) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(config_.downstream_done.load());
  EXPECT_EQ(config_.downstream_code.load(),
            static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_LT(steady_clock::now() - start, seconds(5 * Scale()));
  EXPECT_EQ(backend_.attempts.load(), 1);
}

// MinAttemptTimeOption at the middle: the 500 ms left of the client's
// deadline are less than the 1 s an attempt needs: nothing goes downstream.
TEST_P(ServerPropagationTest, TooLittleTimeLeftSendsNothingDownstream) {
  Start(Options{}.set<MinAttemptTimeOption>(seconds(1)));
  int attempts = 0;
  auto result = Call(
      Options{}.set<DeadlineOption>(system_clock::now() + milliseconds(500)),
      &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(backend_.attempts.load(), 0);
  EXPECT_EQ(config_.downstream_code.load(),
            static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("(MinAttemptTimeOption) was left"));
}

TEST_P(ServerPropagationTest, OverloadReachesTheClientAsDontRetry) {
  backend_.outage = true;
  Start(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)));
  int attempts = 0;
  auto result =
      Call(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5)),
           &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(backend_.attempts.load(), 3);
  auto summary = GetRetrySummary(result.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kServerRefused);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("the server said not to retry "
                        "(grpc-retry-pushback-ms: -1)"));
  // The middle's own message and summary ride along.
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("backend overloaded"));
}

TEST_P(ServerPropagationTest, ResourceExhaustedIsOverloadToo) {
  backend_.outage = true;
  backend_.outage_code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  Start(Options{}.set<RetryPolicyOption>(
      RetryPolicy::LimitedErrorCount(1).WithRetryableCodes(
          {grpc::StatusCode::UNAVAILABLE,
           grpc::StatusCode::RESOURCE_EXHAUSTED})));
  int attempts = 0;
  auto result =
      Call(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5)),
           &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(backend_.attempts.load(), 2);
}

TEST_P(ServerPropagationTest, OtherFailuresPassThrough) {
  backend_.outage = true;
  backend_.outage_code = grpc::StatusCode::NOT_FOUND;
  Start();
  int attempts = 0;
  auto result = Call(Options{}, &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(attempts, 1);
  auto summary = GetRetrySummary(result.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kPermanentError);
}

// A client with gRPC's own retries (gRFC A6) instead of stubkit's.
std::unique_ptr<EchoService::Stub> GrpcRetryingStub(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"methodConfig": [{
      "name": [{"service": "stubkit.testing.EchoService"}],
      "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.001s",
                      "maxBackoff": "0.002s", "backoffMultiplier": 2,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  return EchoService::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

// gRPC's retries honour the pushback -1 too: one attempt.
TEST_P(ServerPropagationTest, GrpcRetriesStopOnTheMiddlesPushback) {
  backend_.outage = true;
  Start(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1)));
  auto stub = GrpcRetryingStub(middle_server_->address());
  grpc::ClientContext context;
  context.set_deadline(system_clock::now() + seconds(10 * Scale()));
  EchoRequest request;
  EchoResponse response;
  grpc::Status status = stub->Echo(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(config_.incoming_calls.load(), 1);
  EXPECT_EQ(backend_.attempts.load(), 2);
}

// Without the pushback (a mapper that passes everything on), gRPC retries;
// its grpc-previous-rpc-attempts marks the retries, and the middle does not
// retry them (NestedRetry::kNever).
TEST_P(ServerPropagationTest, GrpcRetriesAreSeenAsRetries) {
  backend_.outage = true;
  config_.reply = [](const absl::Status& downstream) {
    return UpstreamReply{ToGrpcStatus(downstream), false};
  };
  Start(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1)));
  auto stub = GrpcRetryingStub(middle_server_->address());
  grpc::ClientContext context;
  context.set_deadline(system_clock::now() + seconds(10 * Scale()));
  EchoRequest request;
  EchoResponse response;
  grpc::Status status = stub->Echo(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(config_.incoming_calls.load(), 5);
  EXPECT_EQ(config_.max_incoming_attempt.load(), 5);
  // 2 for the first attempt, 1 for each of the 4 retries.
  EXPECT_EQ(backend_.attempts.load(), 6);
}

// The client's request says it is a retry (as a stubkit client's retries
// do); the middle's downstream policy allows 2 retries.
TEST_P(ServerPropagationTest, RetriedRequestIsNotRetriedDownstreamByDefault) {
  backend_.outage = true;
  Start(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)));
  int attempts = 0;
  auto result =
      Call(Options{}
               .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0))
               .set<MetadataOption>({{std::string(kRetryAttemptHeader), "2"}}),
           &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(backend_.attempts.load(), 1);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("is itself a retry (attempt 2 upstream)"));
}

TEST_P(ServerPropagationTest, RetriedRequestRetriesOnceDownstream) {
  backend_.outage = true;
  Start(Options{}
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2))
            .set<NestedRetryOption>(NestedRetry::kOnce));
  int attempts = 0;
  auto result =
      Call(Options{}
               .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0))
               .set<MetadataOption>({{std::string(kRetryAttemptHeader), "3"}}),
           &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(backend_.attempts.load(), 2);
}

TEST_P(ServerPropagationTest, RetriedRequestRetriesAsUsualWhenAsked) {
  backend_.outage = true;
  Start(Options{}
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2))
            .set<NestedRetryOption>(NestedRetry::kAsUsual));
  int attempts = 0;
  auto result =
      Call(Options{}
               .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0))
               .set<MetadataOption>({{std::string(kRetryAttemptHeader), "2"}}),
           &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(backend_.attempts.load(), 3);
}

// A first attempt (no header) retries as its policy says, whatever the
// option.
TEST_P(ServerPropagationTest, FirstAttemptRetriesAsUsual) {
  backend_.outage = true;
  Start(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)));
  int attempts = 0;
  auto result =
      Call(Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)),
           &attempts);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(backend_.attempts.load(), 3);
}

// Bad values fail the call before anything is sent.
// Issue 39, item 12: options(call) with a token of the call's own used to
// add a callback holding that token to the incoming call's token, for the
// incoming call's whole life: a streaming handler making a million
// downstream calls kept a million tokens. A token goes with its call now,
// and a live one is still cancelled with the incoming call.
TEST(IncomingCallTest, DownstreamTokensDoNotOutliveTheirCalls) {
  grpc::ServerContext context;
  IncomingCall incoming(context, IncomingCall::Settings{false, nullptr});
  constexpr int kCalls = 10000;
  std::vector<std::weak_ptr<CancellationToken>> ended;
  for (int i = 0; i < kCalls; ++i) {
    auto theirs = std::make_shared<CancellationToken>();
    const Options call =
        incoming.options(Options{}.set<CancellationOption>(theirs));
    EXPECT_EQ(call.get<CancellationOption>(), theirs);
    ended.push_back(theirs);
  }  // each downstream call is over: its options and its token are gone
  int kept = 0;
  for (const auto& token : ended) kept += token.expired() ? 0 : 1;
  EXPECT_EQ(kept, 0);
  // One token shared by many calls, and one call still running.
  auto shared = std::make_shared<CancellationToken>();
  for (int i = 0; i < 100; ++i) {
    incoming.options(Options{}.set<CancellationOption>(shared));
  }
  auto running = std::make_shared<CancellationToken>();
  const Options call =
      incoming.options(Options{}.set<CancellationOption>(running));
  incoming.Cancel();
  EXPECT_TRUE(shared->cancelled());
  EXPECT_TRUE(running->cancelled());
  // A call made after the cancel is cancelled at once.
  auto late = std::make_shared<CancellationToken>();
  incoming.options(Options{}.set<CancellationOption>(late));
  EXPECT_TRUE(late->cancelled());
}

TEST(ServerPropagationOptionsTest, InvalidValuesAreRefusedUnsent) {
  int attempts = 0;
  auto attempt = [&](grpc::ClientContext&) -> absl::StatusOr<int> {
    ++attempts;
    return 1;
  };
  auto bad_enum = RetryLoop<int>(
      kEcho,
      OptionsView(Options{}.set<NestedRetryOption>(static_cast<NestedRetry>(7)),
                  Options{}),
      attempt);
  EXPECT_EQ(bad_enum.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_enum.status().message()),
              HasSubstr("NestedRetryOption: not a NestedRetry value (7)"));
  auto negative = RetryLoop<int>(
      kEcho, OptionsView(Options{}.set<IncomingAttemptOption>(-1), Options{}),
      attempt);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(negative.status().message()),
              HasSubstr("IncomingAttemptOption must not be negative"));
  EXPECT_EQ(attempts, 0);
}

// The mapping, without a server.
TEST(DefaultUpstreamReplyTest, OverloadIsDontRetryAndTheRestPassesThrough) {
  auto ended = [](absl::Status status, StopReason reason) {
    return internal::WithRetrySummary(
        status, RetrySummary{reason, 3, milliseconds(5)}, "scripted");
  };
  for (StopReason reason : {StopReason::kThrottled, StopReason::kExhausted}) {
    for (absl::Status status : {absl::UnavailableError("down"),
                                absl::ResourceExhaustedError("quota")}) {
      SCOPED_TRACE(status.ToString());
      UpstreamReply reply = DefaultUpstreamReply(ended(status, reason));
      EXPECT_TRUE(reply.do_not_retry);
      EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::UNAVAILABLE);
      EXPECT_THAT(reply.status.error_message(),
                  HasSubstr(std::string(status.message())));
    }
  }
  // Throttled, or refused by the server below (a pushback -1 on INTERNAL,
  // say), whatever the code.
  for (StopReason reason :
       {StopReason::kThrottled, StopReason::kServerRefused}) {
    EXPECT_TRUE(DefaultUpstreamReply(ended(absl::InternalError("x"), reason))
                    .do_not_retry);
  }
  // Not overload: passed on as it is.
  for (const absl::Status& status :
       {ended(absl::NotFoundError("gone"), StopReason::kPermanentError),
        ended(absl::DeadlineExceededError("late"), StopReason::kDeadline),
        ended(absl::UnavailableError("down"), StopReason::kNonIdempotent),
        ended(absl::InternalError("x"), StopReason::kExhausted),
        // No retry summary: not a stubkit call's result.
        absl::UnavailableError("down")}) {
    SCOPED_TRACE(status.ToString());
    UpstreamReply reply = DefaultUpstreamReply(status);
    EXPECT_FALSE(reply.do_not_retry);
    EXPECT_EQ(static_cast<int>(reply.status.error_code()),
              static_cast<int>(status.code()));
  }
}

}  // namespace
}  // namespace stubkit

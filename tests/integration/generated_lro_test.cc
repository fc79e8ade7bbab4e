// Copyright 2026 The stubkit Authors.
//
// Generated long-running-operation awaiters (AIP-151) against a real
// in-process gRPC server that implements the long-running method
// (stubkit.testing.lro.Builder.Build) and google.longrunning.Operations.
// Polling waits are taken on a FakeClock, except in the cancellation test,
// whose sleeper waits until the test cancels.

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "google/longrunning/operations.grpc.pb.h"
#include "google/rpc/status.pb.h"
#include "stubkit/cancellation.h"
#include "stubkit/logging.h"
#include "stubkit/long_running_operation.h"
#include "stubkit/service_config.h"
#include "stubkit/status.h"
#include "stubkit/testing/lro.stubkit.h"

namespace stubkit {
namespace {

using ::google::longrunning::CancelOperationRequest;
using ::google::longrunning::GetOperationRequest;
using ::google::longrunning::Operation;
using ::stubkit::testing::lro::Builder;
using ::stubkit::testing::lro::BuilderClient;
using ::stubkit::testing::lro::BuildMetadata;
using ::stubkit::testing::lro::BuildRequest;
using ::stubkit::testing::lro::BuildResponse;
using ::testing::HasSubstr;

// What an operation started for a target does. A target names its plan.
struct Plan {
  int polls_until_done = 4;  // GetOperation calls before it reports done
  bool fail = false;         // done with an error instead of a response
  bool wrong_type = false;   // done with a BuildMetadata as the response
  int unavailable_poll = 0;  // this poll (1-based) fails UNAVAILABLE once
};

// Both services share the operations' state.
class LroServer {
 public:
  LroServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&builder_service_);
    builder.RegisterService(&operations_service_);
    server_ = builder.BuildAndStart();
  }
  ~LroServer() { server_->Shutdown(); }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                               grpc::InsecureChannelCredentials());
  }

  void SetPlan(const std::string& target, Plan plan) {
    std::lock_guard<std::mutex> lock(mu_);
    plans_[target] = plan;
  }
  int polls(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return ops_[name].polls;
  }
  int poll_calls(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return ops_[name].poll_calls;
  }
  int builds() {
    std::lock_guard<std::mutex> lock(mu_);
    return next_id_;
  }
  std::vector<std::string> cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  struct Op {
    Plan plan;
    std::string target;
    int polls = 0;       // successful GetOperation calls
    int poll_calls = 0;  // all GetOperation calls, failed ones included
    bool failed_once = false;
  };

  class BuilderImpl : public Builder::Service {
   public:
    explicit BuilderImpl(LroServer* server) : server_(server) {}
    grpc::Status Build(grpc::ServerContext*, const BuildRequest* request,
                       Operation* response) override {
      std::lock_guard<std::mutex> lock(server_->mu_);
      const std::string name =
          "operations/build-" + std::to_string(++server_->next_id_);
      Op& op = server_->ops_[name];
      op.plan = server_->plans_[request->target()];
      op.target = request->target();
      BuildMetadata metadata;
      metadata.set_percent(0);
      response->set_name(name);
      response->mutable_metadata()->PackFrom(metadata);
      return grpc::Status::OK;
    }

   private:
    LroServer* server_;
  };

  class OperationsImpl : public google::longrunning::Operations::Service {
   public:
    explicit OperationsImpl(LroServer* server) : server_(server) {}
    grpc::Status GetOperation(grpc::ServerContext*,
                              const GetOperationRequest* request,
                              Operation* response) override {
      std::lock_guard<std::mutex> lock(server_->mu_);
      auto it = server_->ops_.find(request->name());
      if (it == server_->ops_.end()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, request->name());
      }
      Op& op = it->second;
      ++op.poll_calls;
      if (op.plan.unavailable_poll == op.polls + 1 && !op.failed_once) {
        op.failed_once = true;
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "try again");
      }
      ++op.polls;
      response->set_name(request->name());
      BuildMetadata metadata;
      metadata.set_percent(100 * op.polls / op.plan.polls_until_done);
      response->mutable_metadata()->PackFrom(metadata);
      if (op.polls < op.plan.polls_until_done) return grpc::Status::OK;
      response->set_done(true);
      if (op.plan.fail) {
        google::rpc::Status* error = response->mutable_error();
        error->set_code(static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
        error->set_message("out of build machines");
        error->add_details()->PackFrom(metadata);
      } else if (op.plan.wrong_type) {
        response->mutable_response()->PackFrom(metadata);
      } else {
        BuildResponse result;
        result.set_artifact(op.target + ".tar");
        response->mutable_response()->PackFrom(result);
      }
      return grpc::Status::OK;
    }
    grpc::Status CancelOperation(grpc::ServerContext*,
                                 const CancelOperationRequest* request,
                                 google::protobuf::Empty*) override {
      std::lock_guard<std::mutex> lock(server_->mu_);
      server_->cancelled_.push_back(request->name());
      return grpc::Status::OK;
    }

   private:
    LroServer* server_;
  };

  std::mutex mu_;
  std::map<std::string, Plan> plans_;
  std::map<std::string, Op> ops_;
  std::vector<std::string> cancelled_;
  int next_id_ = 0;

  BuilderImpl builder_service_{this};
  OperationsImpl operations_service_{this};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

BuildRequest Target(const std::string& target) {
  BuildRequest request;
  request.set_target(target);
  return request;
}

class GeneratedLroTest : public ::testing::Test {
 protected:
  // Waits of 1s, 2s, 4s, 8s... between polls, on the fake clock.
  Options ClientOptions(
      std::chrono::nanoseconds time_limit = std::chrono::minutes(10)) const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<AsyncSleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::seconds(1))
                .WithMaximumDelay(std::chrono::seconds(10))
                .WithMultiplier(2.0)
                .WithJitter(Jitter::None()))
        .set<PollingPolicyOption>(
            PollingPolicy(ExponentialBackoffPolicy()
                              .WithInitialDelay(std::chrono::seconds(1))
                              .WithMaximumDelay(std::chrono::minutes(1))
                              .WithMultiplier(2.0)
                              .WithJitter(Jitter::None()),
                          time_limit));
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  LroServer server_;
};

TEST_F(GeneratedLroTest, CompletesAfterFourPolls) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  BuilderClient client(server_.Channel(), ClientOptions());
  const auto start = clock_->Now();

  absl::StatusOr<BuildResponse> result = client.AwaitBuild(Target("app"));

  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->artifact(), "app.tar");
  EXPECT_EQ(server_.polls("operations/build-1"), 4);
  // A wait before each poll: 1 + 2 + 4 + 8 seconds.
  EXPECT_EQ(clock_->Now() - start, std::chrono::seconds(15));
}

// Captures what a client logs.
class LinesSink : public LogSink {
 public:
  void Write(absl::string_view line) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// Issue 22 item 1: a service config naming a method the awaiter's
// operations client lacks (google.longrunning.Operations/ListOperations)
// once turned every poll into INVALID_ARGUMENT. gRPC never looks such an
// entry up: the polls run, and the client says once what it ignored.
TEST_F(GeneratedLroTest, ConfigNamingAMethodTheOperationsClientLacks) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  server_.SetPlan("again", Plan{});
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(R"({
      "methodConfig": [{
        "name": [
          {"service": "google.longrunning.Operations",
           "method": "ListOperations"},
          {"service": "google.longrunning.Operations",
           "method": "GetOperation"},
          {"service": "stubkit.testing.lro.Builder", "method": "Build"}],
        "timeout": "60s"}]})");
  ASSERT_TRUE(config.ok()) << config.status();
  auto sink = std::make_shared<LinesSink>();
  BuilderClient client(
      server_.Channel(),
      ClientOptions().MergedWith(config->ToOptions()).set<LogSinkOption>(sink));

  absl::StatusOr<BuildResponse> result = client.AwaitBuild(Target("app"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(server_.polls("operations/build-1"), 4);
  absl::StatusOr<BuildResponse> async =
      client.AsyncAwaitBuild(Target("again")).get();
  ASSERT_TRUE(async.ok()) << async.status();
  EXPECT_EQ(server_.polls("operations/build-2"), 4);
  // One line, from the operations client, however many polls.
  EXPECT_THAT(sink->lines(),
              ::testing::ElementsAre(HasSubstr(
                  "google.longrunning.Operations/ListOperations); ignored")));
}

TEST_F(GeneratedLroTest, AsyncCompletesAfterFourPollsOnTheTimer) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  BuilderClient client(server_.Channel(), ClientOptions());
  const auto start = clock_->Now();

  absl::StatusOr<BuildResponse> result =
      client.AsyncAwaitBuild(Target("app")).get();

  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->artifact(), "app.tar");
  EXPECT_EQ(server_.polls("operations/build-1"), 4);
  // The waits went through the AsyncSleeper (the fake clock), not a thread.
  EXPECT_EQ(clock_->Now() - start, std::chrono::seconds(15));
}

TEST_F(GeneratedLroTest, EachPollIsRetriedUnderTheRetryPolicy) {
  ASSERT_TRUE(server_.ok());
  Plan plan;
  plan.unavailable_poll = 2;
  server_.SetPlan("app", plan);
  BuilderClient client(server_.Channel(), ClientOptions());
  const auto start = clock_->Now();

  absl::StatusOr<BuildResponse> result = client.AwaitBuild(Target("app"));

  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(server_.polls("operations/build-1"), 4);
  EXPECT_EQ(server_.poll_calls("operations/build-1"), 5);
  // The polling waits, and one retry backoff of 1s.
  EXPECT_EQ(clock_->Now() - start, std::chrono::seconds(16));
}

TEST_F(GeneratedLroTest, FailedOperationKeepsCodeMessageAndDetails) {
  ASSERT_TRUE(server_.ok());
  Plan plan;
  plan.fail = true;
  server_.SetPlan("app", plan);
  BuilderClient client(server_.Channel(), ClientOptions());

  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    absl::StatusOr<BuildResponse> result =
        async ? client.AsyncAwaitBuild(Target("app")).get()
              : client.AwaitBuild(Target("app"));

    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(result.status().message(), "out of build machines");
    std::optional<std::string> details = GetErrorDetails(result.status());
    ASSERT_TRUE(details.has_value());
    google::rpc::Status error;
    ASSERT_TRUE(error.ParseFromString(*details));
    EXPECT_EQ(error.message(), "out of build machines");
    ASSERT_EQ(error.details_size(), 1);
    BuildMetadata metadata;
    ASSERT_TRUE(error.details(0).UnpackTo(&metadata));
    EXPECT_EQ(metadata.percent(), 100);
    // The details survive the trip back to a grpc::Status.
    EXPECT_EQ(ToGrpcStatus(result.status()).error_details(), *details);
  }
}

TEST_F(GeneratedLroTest, ResponseOfAnotherTypeNamesBothTypes) {
  ASSERT_TRUE(server_.ok());
  Plan plan;
  plan.wrong_type = true;
  server_.SetPlan("app", plan);
  BuilderClient client(server_.Channel(), ClientOptions());

  absl::StatusOr<BuildResponse> result = client.AwaitBuild(Target("app"));

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(),
              HasSubstr("stubkit.testing.lro.BuildMetadata"));
  EXPECT_THAT(result.status().message(),
              HasSubstr("'stubkit.testing.lro.BuildResponse'"));
}

TEST_F(GeneratedLroTest, PollingTimesOutAndIsResumedByName) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  // Polls after 1s and 3s; the next wait (4s) would end after the 5s limit,
  // so it is cut: the last poll comes at the limit (issue 22 item 7).
  BuilderClient client(server_.Channel(),
                       ClientOptions(std::chrono::seconds(5)));

  absl::StatusOr<BuildResponse> result = client.AwaitBuild(Target("app"));

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(result.status().message(), HasSubstr("operations/build-1"));
  EXPECT_THAT(result.status().message(), HasSubstr("after 3 polls"));
  std::optional<std::string> name = GetOperationName(result.status());
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(*name, "operations/build-1");
  EXPECT_EQ(server_.polls(*name), 3);

  // Resumed with a longer limit: the poll made at once (the 4th) reports
  // done.
  const auto resumed = clock_->Now();
  result = client.AwaitBuildByName(
      *name, Options{}.set<PollingPolicyOption>(
                 PollingPolicy(ExponentialBackoffPolicy()
                                   .WithInitialDelay(std::chrono::seconds(1))
                                   .WithMaximumDelay(std::chrono::minutes(1))
                                   .WithMultiplier(2.0)
                                   .WithJitter(Jitter::None()),
                               std::chrono::hours(1))));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->artifact(), "app.tar");
  EXPECT_EQ(server_.polls(*name), 4);
  EXPECT_EQ(clock_->Now() - resumed, std::chrono::seconds(0));
}

TEST_F(GeneratedLroTest, AsyncPollingTimesOutAndIsResumedByName) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  BuilderClient client(server_.Channel(),
                       ClientOptions(std::chrono::seconds(5)));

  absl::StatusOr<BuildResponse> result =
      client.AsyncAwaitBuild(Target("app")).get();

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  std::optional<std::string> name = GetOperationName(result.status());
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(server_.polls(*name), 3);

  result = client
               .AsyncAwaitBuildByName(
                   *name, Options{}.set<PollingPolicyOption>(PollingPolicy(
                              ExponentialBackoffPolicy()
                                  .WithInitialDelay(std::chrono::seconds(1))
                                  .WithMaximumDelay(std::chrono::minutes(1))
                                  .WithMultiplier(2.0)
                                  .WithJitter(Jitter::None()),
                              std::chrono::hours(1))))
               .get();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(server_.polls(*name), 4);
}

TEST_F(GeneratedLroTest, ResumingAnUnknownOperationReturnsTheServersError) {
  ASSERT_TRUE(server_.ok());
  BuilderClient client(server_.Channel(), ClientOptions());

  absl::StatusOr<BuildResponse> result =
      client.AwaitBuildByName("operations/none");

  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(GetOperationName(result.status()), "operations/none");
}

TEST_F(GeneratedLroTest, InvalidPollingPolicyIsRefused) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  BuilderClient client(server_.Channel(),
                       ClientOptions(std::chrono::seconds(0)));

  absl::StatusOr<BuildResponse> result = client.AwaitBuild(Target("app"));

  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("time_limit"));
  result = client.AsyncAwaitBuild(Target("app")).get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  // Refused before the starting call (issue 22 item 7): no operation was
  // created only to be left unawaited.
  EXPECT_EQ(server_.builds(), 0);
}

// A sleeper that says when the polling loop starts to wait, and waits
// (sync: on the token, on the real clock; async: until cancelled), so a test
// can cancel exactly during a polling wait.
class WaitingSleeper : public Sleeper, public AsyncSleeper {
 public:
  explicit WaitingSleeper(std::shared_ptr<CancellationToken> token)
      : token_(std::move(token)) {}

  void SleepFor(std::chrono::nanoseconds duration) override {
    Signal(duration);
    token_->WaitFor(duration);
  }
  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = std::move(done);
    }
    Signal(duration);
    return 7;
  }
  void Cancel(uint64_t id) override {
    std::function<void(bool)> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (id != 7) return;
      done = std::move(pending_);
      pending_ = nullptr;
    }
    if (done) done(false);
  }

  std::chrono::nanoseconds WaitForWaiting() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return waiting_; });
    return wait_;
  }

 private:
  void Signal(std::chrono::nanoseconds duration) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = true;
    wait_ = duration;
    cv_.notify_all();
  }

  std::shared_ptr<CancellationToken> token_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool waiting_ = false;
  std::chrono::nanoseconds wait_{0};
  std::function<void(bool)> pending_;
};

TEST(GeneratedLroCancelTest, CancellationStopsPolling) {
  for (bool cancel_operation : {false, true}) {
    for (bool async : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "cancel_operation " << cancel_operation << " async "
                   << async);
      LroServer server;
      ASSERT_TRUE(server.ok());
      BuilderClient client(server.Channel());
      auto token = std::make_shared<CancellationToken>();
      auto sleeper = std::make_shared<WaitingSleeper>(token);
      const auto start = std::chrono::steady_clock::now();
      std::chrono::nanoseconds cancelled_wait{0};
      std::thread canceller([&] {
        cancelled_wait = sleeper->WaitForWaiting();
        token->Cancel();
      });
      const Options options =
          Options{}
              .set<CancellationOption>(token)
              .set<CancelOperationOnCancelOption>(cancel_operation)
              .set<SleeperOption>(sleeper)
              .set<AsyncSleeperOption>(sleeper)
              .set<PollingPolicyOption>(
                  PollingPolicy(ExponentialBackoffPolicy()
                                    .WithInitialDelay(std::chrono::minutes(10))
                                    .WithMaximumDelay(std::chrono::minutes(10))
                                    .WithMultiplier(2.0)
                                    .WithJitter(Jitter::None()),
                                std::chrono::hours(1)));
      absl::StatusOr<BuildResponse> result =
          async ? client.AsyncAwaitBuild(Target("app"), options).get()
                : client.AwaitBuild(Target("app"), options);
      canceller.join();

      EXPECT_EQ(cancelled_wait, std::chrono::minutes(10));
      EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
      EXPECT_EQ(GetOperationName(result.status()), "operations/build-1");
      // Far sooner than the 10-minute wait it cancelled.
      EXPECT_LT(std::chrono::steady_clock::now() - start,
                std::chrono::minutes(1));
      EXPECT_EQ(server.polls("operations/build-1"), 0);
      if (cancel_operation) {
        EXPECT_THAT(server.cancelled(),
                    ::testing::ElementsAre("operations/build-1"));
        EXPECT_THAT(result.status().message(),
                    HasSubstr("CancelOperation was sent"));
      } else {
        EXPECT_THAT(server.cancelled(), ::testing::IsEmpty());
        EXPECT_THAT(result.status().message(),
                    HasSubstr("the operation itself was not cancelled"));
      }
    }
  }
}

TEST_F(GeneratedLroTest, ClientFromAConnectionNeedsTheOperationsConnection) {
  ASSERT_TRUE(server_.ok());
  server_.SetPlan("app", Plan{});
  auto connection =
      stubkit::testing::lro::MakeBuilderConnection(server_.Channel());

  BuilderClient without(connection, ClientOptions());
  absl::StatusOr<BuildResponse> result = without.AwaitBuild(Target("app"));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              HasSubstr("OperationsConnectionOption"));
  EXPECT_EQ(without.AsyncAwaitBuild(Target("app")).get().status().code(),
            absl::StatusCode::kFailedPrecondition);

  BuilderClient with(
      connection,
      ClientOptions().set<BuilderClient::OperationsConnectionOption>(
          google::longrunning::MakeOperationsConnection(server_.Channel())));
  result = with.AwaitBuild(Target("app"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->artifact(), "app.tar");
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// The long-running-operation polling loops (stubkit/internal/
// operation_poller.h) over a fake Operations client: the result of a done
// operation, the polling policy's waits and time limit, on a FakeClock.
// tests/integration/generated_lro_test.cc runs them through generated code
// against a real server.

#include "stubkit/internal/entry/operation_poller.h"

#include <gmock/gmock.h>
#include <google/protobuf/any.pb.h>
#include <google/protobuf/empty.pb.h>
#include <google/protobuf/wrappers.pb.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stubkit/long_running_operation.h"
#include "stubkit/status.h"

namespace stubkit {
namespace {

using ::google::protobuf::Empty;
using ::google::protobuf::StringValue;
using ::testing::HasSubstr;

// The members of google.rpc.Status and google.longrunning.Operation the
// loops use.
struct FakeError {
  int code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string SerializeAsString() const { return "details:" + message_; }
  int code_ = 0;
  std::string message_;
};

struct FakeOperation {
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  bool done() const { return done_; }
  bool has_error() const { return has_error_; }
  const FakeError& error() const { return error_; }
  bool has_response() const { return has_response_; }
  const google::protobuf::Any& response() const { return response_; }

  std::string name_;
  bool done_ = false;
  bool has_error_ = false;
  FakeError error_;
  bool has_response_ = false;
  google::protobuf::Any response_;
};

struct FakeRequest {
  void set_name(std::string value) { name = std::move(value); }
  std::string name;
};
struct FakeGetRequest : FakeRequest {};
struct FakeCancelRequest : FakeRequest {};

// Answers GetOperation from a script; records the times of the polls.
class FakeOperationsClient {
 public:
  explicit FakeOperationsClient(std::shared_ptr<FakeClock> clock)
      : clock_(std::move(clock)) {}

  absl::StatusOr<FakeOperation> GetOperation(const FakeGetRequest&,
                                             const Options& call) {
    polls.push_back(clock_->Now());
    poll_calls.push_back(call);
    if (on_poll) on_poll();
    if (script.empty()) return FakeOperation{};
    absl::StatusOr<FakeOperation> next = script.front();
    script.pop_front();
    return next;
  }
  void AsyncGetOperation(const FakeGetRequest& request,
                         AsyncCallback<FakeOperation> done,
                         const Options& call) {
    done(GetOperation(request, call));
  }
  absl::StatusOr<Empty> CancelOperation(const FakeCancelRequest&,
                                        const Options&) {
    ++cancels;
    return Empty();
  }
  void AsyncCancelOperation(const FakeCancelRequest& request,
                            AsyncCallback<Empty> done, const Options& call) {
    done(CancelOperation(request, call));
  }

  std::deque<absl::StatusOr<FakeOperation>> script;
  std::function<void()> on_poll;
  std::vector<Clock::time_point> polls;
  std::vector<Options> poll_calls;
  int cancels = 0;

 private:
  std::shared_ptr<FakeClock> clock_;
};

FakeOperation Running() {
  FakeOperation op;
  op.name_ = "operations/7";
  return op;
}

FakeOperation DoneWith(const std::string& value) {
  FakeOperation op = Running();
  op.done_ = true;
  op.has_response_ = true;
  StringValue response;
  response.set_value(value);
  op.response_.PackFrom(response);
  return op;
}

class OperationPollerTest : public ::testing::Test {
 protected:
  OperationPollerTest()
      : client_options_(Options{}
                            .set<ClockOption>(clock_)
                            .set<SleeperOption>(clock_)
                            .set<AsyncSleeperOption>(clock_)
                            .set<PollingPolicyOption>(PollingPolicy(
                                ExponentialBackoffPolicy()
                                    .WithInitialDelay(std::chrono::seconds(1))
                                    .WithMaximumDelay(std::chrono::seconds(4))
                                    .WithMultiplier(2.0)
                                    .WithJitter(Jitter::None()),
                                std::chrono::seconds(20)))) {}

  template <typename Response>
  absl::StatusOr<Response> Await(absl::StatusOr<FakeOperation> started,
                                 bool async = false) {
    const OptionsView view(call_, client_options_);
    if (!async) {
      return internal::PollOperation<Response>(client_, view, call_, "pkg.S.M",
                                               std::move(started));
    }
    auto shared = std::shared_ptr<FakeOperationsClient>(
        &client_, [](FakeOperationsClient*) {});
    auto [future, start] =
        internal::AsyncAwaitOperation<Response>(shared, view, call_, "pkg.S.M");
    start(std::move(started));
    return future.get();
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FakeOperationsClient client_{clock_};
  Options call_;
  Options client_options_;
};

TEST_F(OperationPollerTest, WaitsFollowTheBackoffBeforeEachPoll) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    client_.polls.clear();
    client_.script = {Running(), Running(), Running(), Running(),
                      DoneWith("ok")};
    const auto start = clock_->Now();
    absl::StatusOr<StringValue> result = Await<StringValue>(Running(), async);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->value(), "ok");
    std::vector<std::chrono::nanoseconds> at;
    for (auto poll : client_.polls) at.push_back(poll - start);
    // 1, 2, 4, then capped at 4 seconds.
    EXPECT_THAT(at, ::testing::ElementsAre(
                        std::chrono::seconds(1), std::chrono::seconds(3),
                        std::chrono::seconds(7), std::chrono::seconds(11),
                        std::chrono::seconds(15)));
  }
}

// Issue 22, item 7: the time limit is an upper bound, with a last poll at
// the limit (the wait before it cut short), and every poll's retries end at
// the limit.
TEST_F(OperationPollerTest, TheLastPollComesAtTheLimit) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    client_.polls.clear();
    client_.poll_calls.clear();
    client_.script.clear();  // never done
    const auto start = clock_->Now();
    absl::StatusOr<StringValue> result = Await<StringValue>(Running(), async);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
    // Polls at 1, 3, 7, 11, 15, 19 s, and the last at the limit, 20 s.
    ASSERT_EQ(client_.polls.size(), 7u);
    EXPECT_EQ(client_.polls.back() - start, std::chrono::seconds(20));
    EXPECT_EQ(clock_->Now() - start, std::chrono::seconds(20));
    EXPECT_THAT(result.status().message(),
                HasSubstr("pkg.S.M: operation operations/7 is not done after "
                          "7 polls"));
    EXPECT_EQ(GetOperationName(result.status()), "operations/7");
    // The poll at 19 s may retry for the 1 s left; the one at 20 s not at
    // all.
    EXPECT_EQ(client_.poll_calls[5].get<TotalTimeoutOption>(),
              std::chrono::seconds(1));
    EXPECT_EQ(client_.poll_calls[6].get<RetryPolicyOption>().max_failures(), 0);
  }
}

// A per-call total timeout shorter than what is left of the limit stays.
TEST_F(OperationPollerTest, APollKeepsTheCallsShorterTotalTimeout) {
  call_ = Options{}.set<TotalTimeoutOption>(std::chrono::seconds(2));
  client_.poll_calls.clear();
  client_.script = {Running(), DoneWith("ok")};
  ASSERT_TRUE(Await<StringValue>(Running()).ok());
  ASSERT_EQ(client_.poll_calls.size(), 2u);
  EXPECT_EQ(client_.poll_calls[0].get<TotalTimeoutOption>(),
            std::chrono::seconds(2));
}

// The same timeout set for the client (or a method, a service, a service
// config's `timeout`) is not in the call's own options, which are all a
// poll carries to the Operations client: each poll must get it in its own,
// or its retries run under the Operations client's options, past the
// polling limit (found by the simulation suite, seed 4081).
TEST_F(OperationPollerTest, APollKeepsAShorterTotalTimeoutFromAnyLayer) {
  client_options_.set<TotalTimeoutOption>(std::chrono::seconds(2));
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    client_.poll_calls.clear();
    client_.script = {Running(), DoneWith("ok")};
    ASSERT_TRUE(Await<StringValue>(Running(), async).ok());
    ASSERT_EQ(client_.poll_calls.size(), 2u);
    for (const Options& poll : client_.poll_calls) {
      EXPECT_EQ(poll.get<TotalTimeoutOption>(), std::chrono::seconds(2));
    }
  }
}

// Issue 22, item 7: a backoff that reaches nanoseconds::max() (accepted by
// validation) used to overflow `elapsed + wait`, so the awaiter slept for
// centuries (sync) or scheduled a timer that never fired (async).
TEST_F(OperationPollerTest, AnEndlessBackoffStillStopsAtTheLimit) {
  client_options_.set<PollingPolicyOption>(
      PollingPolicy(ExponentialBackoffPolicy()
                        .WithInitialDelay(std::chrono::seconds(1))
                        .WithMaximumDelay(std::chrono::nanoseconds::max())
                        .WithMultiplier(2.0)
                        .WithJitter(Jitter::None()),
                    std::chrono::seconds(20)));
  ASSERT_TRUE(client_options_.get<PollingPolicyOption>().status().ok());
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    client_.polls.clear();
    client_.script.clear();
    const auto start = clock_->Now();
    absl::StatusOr<StringValue> result = Await<StringValue>(Running(), async);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
    std::vector<std::chrono::nanoseconds> at;
    for (auto poll : client_.polls) at.push_back(poll - start);
    EXPECT_THAT(at, ::testing::ElementsAre(
                        std::chrono::seconds(1), std::chrono::seconds(3),
                        std::chrono::seconds(7), std::chrono::seconds(15),
                        std::chrono::seconds(20)));
  }
}

// Issue 22, item 7: an invalid polling policy is refused before the
// starting call creates an operation that nobody would await.
TEST_F(OperationPollerTest, AnInvalidPolicyIsRefusedBeforeTheStart) {
  client_options_.set<PollingPolicyOption>(PollingPolicy(
      ExponentialBackoffPolicy(), std::chrono::seconds(0)));
  const OptionsView view(call_, client_options_);
  int starts = 0;
  absl::StatusOr<StringValue> sync = internal::PollOperation<StringValue>(
      client_, view, call_, "pkg.S.M",
      [&starts]() -> absl::StatusOr<FakeOperation> {
        ++starts;
        return Running();
      });
  EXPECT_EQ(sync.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sync.status().message(), HasSubstr("time_limit"));
  EXPECT_EQ(starts, 0);

  auto shared = std::shared_ptr<FakeOperationsClient>(
      &client_, [](FakeOperationsClient*) {});
  auto [future, start] = internal::AsyncAwaitOperation<StringValue>(
      shared, view, call_, "pkg.S.M");
  EXPECT_EQ(start, nullptr);  // the generated code then starts nothing
  EXPECT_EQ(future.get().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(OperationPollerTest, DoneAtOnceNeedsNoPoll) {
  absl::StatusOr<StringValue> result = Await<StringValue>(DoneWith("now"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->value(), "now");
  EXPECT_TRUE(client_.polls.empty());
}

TEST_F(OperationPollerTest, AFailedStartIsReturnedAsIs) {
  absl::StatusOr<StringValue> result =
      Await<StringValue>(absl::UnavailableError("down"));
  EXPECT_EQ(result.status(), absl::UnavailableError("down"));
  EXPECT_TRUE(client_.polls.empty());
}

TEST_F(OperationPollerTest, AFailedPollCarriesTheOperationName) {
  client_.script = {absl::PermissionDeniedError("no")};
  absl::StatusOr<StringValue> result = Await<StringValue>(Running());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(result.status().message(), "no");
  EXPECT_EQ(GetOperationName(result.status()), "operations/7");
}

TEST_F(OperationPollerTest, ErrorsKeepCodeMessageAndDetails) {
  FakeOperation failed = Running();
  failed.done_ = true;
  failed.has_error_ = true;
  failed.error_.code_ = static_cast<int>(absl::StatusCode::kAborted);
  failed.error_.message_ = "conflict";
  absl::StatusOr<StringValue> result = Await<StringValue>(failed);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(result.status().message(), "conflict");
  EXPECT_EQ(GetErrorDetails(result.status()), "details:conflict");

  // An error without a failure code is no success.
  failed.error_.code_ = 0;
  result = Await<StringValue>(failed);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(result.status().message(), HasSubstr("failed with code 0"));
}

TEST_F(OperationPollerTest, ResponseTypeIsChecked) {
  absl::StatusOr<Empty> result = Await<Empty>(DoneWith("x"));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(),
              HasSubstr("type 'type.googleapis.com/google.protobuf.StringValue'"
                        ", but the method's operation_info declares "
                        "'google.protobuf.Empty'"));
}

TEST_F(OperationPollerTest, AMissingResponseIsEmptyOnlyForEmpty) {
  FakeOperation done = Running();
  done.done_ = true;
  EXPECT_TRUE(Await<Empty>(done).ok());
  absl::StatusOr<StringValue> result = Await<StringValue>(done);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(),
              HasSubstr("neither a response nor an error"));
}

TEST_F(OperationPollerTest, AnAlreadyCancelledTokenStopsBeforeWaiting) {
  for (bool cancel_operation : {false, true}) {
    for (bool async : {false, true}) {
      client_.cancels = 0;
      auto token = std::make_shared<CancellationToken>();
      token->Cancel();
      call_ = Options{}
                  .set<CancellationOption>(token)
                  .set<CancelOperationOnCancelOption>(cancel_operation);
      const auto start = clock_->Now();
      absl::StatusOr<StringValue> result = Await<StringValue>(Running(), async);
      EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
      EXPECT_EQ(clock_->Now(), start);
      EXPECT_EQ(client_.cancels, cancel_operation ? 1 : 0);
    }
  }
}

// A poll in flight when the token is cancelled fails with CANCELLED; the
// operation is then cancelled as if a wait had been.
TEST_F(OperationPollerTest, ACancelledPollStillCancelsTheOperation) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    client_.cancels = 0;
    auto token = std::make_shared<CancellationToken>();
    client_.on_poll = [token] { token->Cancel(); };
    client_.script = {absl::CancelledError("attempt cancelled")};
    call_ = Options{}
                .set<CancellationOption>(token)
                .set<CancelOperationOnCancelOption>(true);
    absl::StatusOr<StringValue> result = Await<StringValue>(Running(), async);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
    EXPECT_THAT(result.status().message(),
                HasSubstr("CancelOperation was sent"));
    EXPECT_EQ(client_.cancels, 1);
  }
}

TEST(PollingPolicyTest, DefaultsAndValidation) {
  PollingPolicy policy;
  EXPECT_EQ(policy.time_limit(), std::chrono::minutes(30));
  EXPECT_EQ(policy.backoff().initial_delay(), std::chrono::seconds(1));
  EXPECT_EQ(policy.backoff().maximum_delay(), std::chrono::minutes(5));
  EXPECT_EQ(policy.backoff().multiplier(), 2.0);
  EXPECT_TRUE(policy.status().ok());
  EXPECT_THAT(PollingPolicy(ExponentialBackoffPolicy(), std::chrono::seconds(0))
                  .status()
                  .message(),
              HasSubstr("time_limit must be positive"));
  EXPECT_EQ(PollingPolicy(ExponentialBackoffPolicy()
                              .WithInitialDelay(std::chrono::seconds(0))
                              .WithMaximumDelay(std::chrono::seconds(1))
                              .WithMultiplier(2),
                          std::chrono::seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(policy.ToString(), HasSubstr("time limit"));
}

TEST(PollCallOptionsTest, PollsDropIdempotencyAndCancelDropsTheToken) {
  const Options call =
      Options{}
          .set<IdempotencyOption>(Idempotency::kNonIdempotent)
          .set<CancellationOption>(std::make_shared<CancellationToken>())
          .set<AttemptTimeoutOption>(std::chrono::seconds(3));
  const Options poll = internal::PollCallOptions(call);
  EXPECT_FALSE(poll.has<IdempotencyOption>());
  EXPECT_NE(poll.get<CancellationOption>(), nullptr);
  EXPECT_EQ(poll.get<AttemptTimeoutOption>(), std::chrono::seconds(3));
  const Options cancel = internal::CancelCallOptions(call);
  EXPECT_EQ(cancel.get<CancellationOption>(), nullptr);
  EXPECT_TRUE(cancel.has<CancellationOption>());
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// Per-attempt context settings (stubkit/call_options.h) seen by a real
// server, through generated clients: authority, compression, call
// credentials, the setup hook and wait-for-ready, for sync, async, hedged
// and streaming calls.

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/retry_observer.h"
#include "stubkit/testing/echo.stubkit.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

// gRPC 1.51's test-only accessor (src/core/lib/surface/call_test_only.h,
// exported by libgrpc): the compression algorithm of the call's incoming
// messages.
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(
    grpc_call* call);

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::EchoServiceStub;
using ::stubkit::testing::EchoServiceStubDecorator;
using ::stubkit::testing::Item;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;

// What the server saw of one attempt.
struct Seen {
  std::string method;
  std::string authority;
  std::multimap<std::string, std::string> metadata;
  double deadline_in_seconds = 0;  // from when the server saw the call
  // The algorithm of the request's `grpc-encoding` (gRPC strips the header
  // from the metadata it hands over).
  grpc_compression_algorithm compression = GRPC_COMPRESS_NONE;
};

class Recorder {
 public:
  void Record(const std::string& method, grpc::ServerContext* context) {
    Seen seen;
    seen.method = method;
    grpc::string_ref authority = context->ExperimentalGetAuthority();
    seen.authority.assign(authority.data(), authority.size());
    for (const auto& [key, value] : context->client_metadata()) {
      seen.metadata.emplace(std::string(key.data(), key.size()),
                            std::string(value.data(), value.size()));
    }
    seen.compression =
        grpc_call_test_only_get_compression_algorithm(context->c_call());
    seen.deadline_in_seconds =
        std::chrono::duration<double>(context->deadline() -
                                      std::chrono::system_clock::now())
            .count();
    absl::MutexLock lock(&mu_);
    seen_.push_back(std::move(seen));
  }
  std::vector<Seen> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    seen_.clear();
  }

 private:
  absl::Mutex mu_;
  std::vector<Seen> seen_;
};

// Echo answers after recording; each response carries initial and trailing
// metadata naming the message. `fail_first` attempts per message fail with
// `fail_code` and a message holding "RST_STREAM".
class RecordingEchoService final : public EchoService::Service {
 public:
  explicit RecordingEchoService(Recorder* recorder) : recorder_(recorder) {}
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    recorder_->Record("Echo", context);
    int attempt;
    {
      absl::MutexLock lock(&mu_);
      attempt = ++attempts_[request->message()];
    }
    context->AddInitialMetadata("x-initial", "i-" + request->message());
    context->AddTrailingMetadata("x-trailing", "t-" + request->message() + "-" +
                                                   std::to_string(attempt));
    if (attempt == 1 && request->message().rfind("hang-first", 0) == 0) {
      // Until the client cancels it (a hedge won), then CANCELLED.
      while (!context->IsCancelled()) {
        std::this_thread::sleep_for(milliseconds(5));
      }
      return grpc::Status::CANCELLED;
    }
    if (attempt <= request->fail_first()) {
      return grpc::Status(
          static_cast<grpc::StatusCode>(request->fail_code()),
          "stream reset: RST_STREAM, attempt " + std::to_string(attempt));
    }
    response->set_message(request->message());
    response->set_attempt(attempt);
    return grpc::Status::OK;
  }

 private:
  Recorder* recorder_;
  absl::Mutex mu_;
  std::map<std::string, int> attempts_;
};

class RecordingStreamService final : public StreamService::Service {
 public:
  explicit RecordingStreamService(Recorder* recorder) : recorder_(recorder) {}
  grpc::Status Range(grpc::ServerContext* context, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    recorder_->Record("Range", context);
    context->AddInitialMetadata("x-initial", "range");
    context->AddTrailingMetadata("x-trailing", "range-end");
    for (int i = 0; i < request->count(); ++i) {
      Item item;
      item.set_value(request->start() + i);
      writer->Write(item);
    }
    return grpc::Status::OK;
  }
  grpc::Status Sum(grpc::ServerContext* context,
                   grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    recorder_->Record("Sum", context);
    Item item;
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    return grpc::Status::OK;
  }
  grpc::Status Double(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    recorder_->Record("Double", context);
    Item item;
    while (stream->Read(&item)) {
      item.set_value(item.value() * 2);
      stream->Write(item);
    }
    return grpc::Status::OK;
  }

 private:
  Recorder* recorder_;
};

// Both services on one server, at `address` (e.g. "127.0.0.1:0" or
// "unix:/tmp/x") with `credentials`.
class Server {
 public:
  Server(Recorder* recorder, const std::string& address,
         std::shared_ptr<grpc::ServerCredentials> credentials =
             grpc::InsecureServerCredentials())
      : echo_(recorder), streams_(recorder) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, std::move(credentials), &port_);
    builder.RegisterService(&echo_);
    builder.RegisterService(&streams_);
    server_ = builder.BuildAndStart();
  }
  ~Server() {
    if (server_ != nullptr) server_->Shutdown();
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }

 private:
  RecordingEchoService echo_;
  RecordingStreamService streams_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

Options FastRetries() {
  return Options{}
      .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(milliseconds(1))
                                    .WithMaximumDelay(milliseconds(5))
                                    .WithMultiplier(2.0));
}

Options Hedged(Options options) {
  return options.set<HedgingPolicyOption>(
      HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(milliseconds(50)));
}

// Makes one call of every form with `options`; returns the statuses.
std::vector<absl::Status> CallEveryForm(EchoServiceClient& echo,
                                        StreamServiceClient& streams,
                                        const Options& options) {
  std::vector<absl::Status> results;
  EchoRequest request;
  request.set_message("sync");
  results.push_back(echo.Echo(request, options).status());
  request.set_message("async");
  results.push_back(echo.AsyncEcho(request, options).get().status());
  request.set_message("hedged");
  results.push_back(echo.Echo(request, Hedged(options)).status());
  request.set_message("hedged-async");
  results.push_back(echo.AsyncEcho(request, Hedged(options)).get().status());

  RangeRequest range;
  range.set_count(2);
  StreamReader<Item> reader = streams.Range(range, options);
  Item item;
  while (reader.Read(&item)) {
  }
  results.push_back(reader.Finish());

  std::promise<absl::Status> async_range;
  streams.AsyncRange(
      range, [](const Item&) {},
      [&async_range](absl::Status status) { async_range.set_value(status); },
      options);
  results.push_back(async_range.get_future().get());

  StreamWriter<Item, SumResponse> sum = streams.Sum(options);
  item.set_value(3);
  sum.Write(item);
  results.push_back(sum.Finish().status());

  StreamReaderWriter<Item, Item> doubler = streams.Double(options);
  doubler.Write(item);
  doubler.WritesDone();
  while (doubler.Read(&item)) {
  }
  results.push_back(doubler.Finish());
  return results;
}

class CallControlsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.ok()); }
  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(server_.port()),
                               grpc::InsecureChannelCredentials());
  }

  Recorder recorder_;
  Server server_{&recorder_, "127.0.0.1:0"};
};

TEST_F(CallControlsTest, SettingsAndHookReachTheServerInEveryForm) {
  EchoServiceClient echo(Channel(), FastRetries());
  StreamServiceClient streams(Channel(), FastRetries());
  std::atomic<int> hook_runs{0};
  auto options =
      Options{}
          .set<AuthorityOption>("controls.example")
          .set<CompressionOption>(GRPC_COMPRESS_GZIP)
          .set<WaitForReadyOption>(true)
          .set<ContextSetupOption>([&hook_runs](grpc::ClientContext& context) {
            ++hook_runs;
            EXPECT_TRUE(AddMetadata(context, "x-hook", "ran").ok());
          });
  for (const absl::Status& status : CallEveryForm(echo, streams, options)) {
    EXPECT_TRUE(status.ok()) << status;
  }
  const std::vector<Seen> seen = recorder_.seen();
  // 8 forms; a hedged call may have sent its hedge too.
  ASSERT_GE(seen.size(), 8u);
  EXPECT_EQ(hook_runs.load(), static_cast<int>(seen.size()));
  for (const Seen& attempt : seen) {
    SCOPED_TRACE(attempt.method);
    EXPECT_EQ(attempt.authority, "controls.example");
    auto hook = attempt.metadata.find("x-hook");
    ASSERT_NE(hook, attempt.metadata.end());
    EXPECT_EQ(hook->second, "ran");
    EXPECT_EQ(attempt.compression, GRPC_COMPRESS_GZIP);
  }
}

TEST_F(CallControlsTest, WithoutOptionsTheChannelDefaultsApply) {
  EchoServiceClient echo(Channel(), FastRetries());
  StreamServiceClient streams(Channel(), FastRetries());
  // Null credentials and a null hook mean unset.
  auto options =
      Options{}.set<CallCredentialsOption>(nullptr).set<ContextSetupOption>(
          nullptr);
  for (const absl::Status& status : CallEveryForm(echo, streams, options)) {
    EXPECT_TRUE(status.ok()) << status;
  }
  const std::vector<Seen> seen = recorder_.seen();
  ASSERT_GE(seen.size(), 8u);
  const std::string channel_authority =
      "127.0.0.1:" + std::to_string(server_.port());
  for (const Seen& attempt : seen) {
    SCOPED_TRACE(attempt.method);
    EXPECT_EQ(attempt.authority, channel_authority);
    EXPECT_EQ(attempt.metadata.count("x-hook"), 0u);
    EXPECT_EQ(attempt.metadata.count("authorization"), 0u);
    EXPECT_EQ(attempt.compression, GRPC_COMPRESS_NONE);
  }
}

// The hook runs last: a deadline it sets replaces stubkit's on the wire, for
// unary calls and for streams (whose deadline stubkit sets after preparing
// the attempt).
TEST_F(CallControlsTest, TheHooksDeadlineWins) {
  EchoServiceClient echo(Channel(), FastRetries());
  StreamServiceClient streams(Channel(), FastRetries());
  auto options = Options{}.set<TotalTimeoutOption>(seconds(60));
  CallEveryForm(echo, streams, options);
  std::vector<Seen> seen = recorder_.seen();
  ASSERT_GE(seen.size(), 8u);
  for (const Seen& attempt : seen) {
    SCOPED_TRACE(attempt.method);
    EXPECT_LT(attempt.deadline_in_seconds, 61);  // stubkit's
  }
  recorder_.Clear();

  options.set<ContextSetupOption>([](grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::hours(1));
  });
  for (const absl::Status& status : CallEveryForm(echo, streams, options)) {
    EXPECT_TRUE(status.ok()) << status;
  }
  seen = recorder_.seen();
  ASSERT_GE(seen.size(), 8u);
  for (const Seen& attempt : seen) {
    SCOPED_TRACE(attempt.method);
    EXPECT_GT(attempt.deadline_in_seconds, 600);  // the hook's
  }
}

bool HasEntry(const std::multimap<std::string, std::string>& map,
              const std::string& key, const std::string& value) {
  auto [begin, end] = map.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    if (it->second == value) return true;
  }
  return false;
}

TEST_F(CallControlsTest, ResponseMetadataOfTheFinalAttempt) {
  EchoServiceClient echo(Channel(), FastRetries());
  StreamServiceClient streams(Channel(), FastRetries());
  const std::string peer_prefix = "ipv4:127.0.0.1:";
  struct Case {
    std::string message;
    bool hedged;
    bool async;
  };
  for (const Case& c :
       {Case{"sync", false, false}, Case{"async", false, true},
        Case{"hedged", true, false}, Case{"hedged-async", true, true}}) {
    SCOPED_TRACE(c.message);
    auto received = std::make_shared<ResponseMetadata>();
    Options options = Options{}.set<ResponseMetadataOption>(received);
    if (c.hedged) options = Hedged(options);
    EchoRequest request;
    request.set_message(c.message);
    request.set_fail_first(1);  // UNAVAILABLE (hedged: a non-fatal code)
    request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
    absl::StatusOr<EchoResponse> response =
        c.async ? echo.AsyncEcho(request, options).get()
                : echo.Echo(request, options);
    ASSERT_TRUE(response.ok()) << response.status();
    ASSERT_EQ(response->attempt(), 2);
    // The second attempt's (the winner's), not the first's.
    EXPECT_TRUE(
        HasEntry(received->initial_metadata, "x-initial", "i-" + c.message));
    EXPECT_TRUE(HasEntry(received->trailing_metadata, "x-trailing",
                         "t-" + c.message + "-2"));
    EXPECT_EQ(received->peer.rfind(peer_prefix, 0), 0u) << received->peer;
  }

  // A failure: the last failed attempt's trailers.
  for (bool hedged : {false, true}) {
    SCOPED_TRACE(hedged ? "hedged failure" : "failure");
    auto received = std::make_shared<ResponseMetadata>();
    Options options = FastRetries().set<ResponseMetadataOption>(received);
    // A hedge only after a failure, so the server numbers them in order.
    if (hedged) {
      options.set<HedgingPolicyOption>(
          HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
              std::chrono::hours(1)));
    }
    EchoRequest request;
    request.set_message(hedged ? "hedged-fails" : "fails");
    request.set_fail_first(100);
    request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
    absl::StatusOr<EchoResponse> response = echo.Echo(request, options);
    ASSERT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
    const int attempts = GetRetrySummary(response.status())->attempts;
    EXPECT_TRUE(
        HasEntry(received->trailing_metadata, "x-trailing",
                 "t-" + request.message() + "-" + std::to_string(attempts)))
        << "after " << attempts << " attempts";
    EXPECT_EQ(received->peer.rfind(peer_prefix, 0), 0u) << received->peer;
  }

  // A hedged loser that ends after the winner (cancelled) leaves the
  // winner's metadata in place: the sync call returns only once the loser
  // is done too.
  {
    auto received = std::make_shared<ResponseMetadata>();
    EchoRequest request;
    request.set_message("hang-first");
    absl::StatusOr<EchoResponse> response = echo.Echo(
        request, Options{}
                     .set<ResponseMetadataOption>(received)
                     .set<HedgingPolicyOption>(
                         HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
                             milliseconds(20))));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->attempt(), 2);
    EXPECT_TRUE(
        HasEntry(received->trailing_metadata, "x-trailing", "t-hang-first-2"));
  }

  // Server streams, sync and async: at the end.
  auto received = std::make_shared<ResponseMetadata>();
  Options options = Options{}.set<ResponseMetadataOption>(received);
  RangeRequest range;
  range.set_count(2);
  StreamReader<Item> reader = streams.Range(range, options);
  Item item;
  while (reader.Read(&item)) {
  }
  ASSERT_TRUE(reader.Finish().ok());
  EXPECT_TRUE(HasEntry(received->initial_metadata, "x-initial", "range"));
  EXPECT_TRUE(HasEntry(received->trailing_metadata, "x-trailing", "range-end"));
  EXPECT_EQ(received->peer.rfind(peer_prefix, 0), 0u) << received->peer;

  auto async_received = std::make_shared<ResponseMetadata>();
  std::promise<absl::Status> done;
  streams.AsyncRange(
      range, [](const Item&) {},
      [&done](absl::Status status) { done.set_value(status); },
      Options{}.set<ResponseMetadataOption>(async_received));
  ASSERT_TRUE(done.get_future().get().ok());
  EXPECT_TRUE(HasEntry(async_received->initial_metadata, "x-initial", "range"));
  EXPECT_TRUE(
      HasEntry(async_received->trailing_metadata, "x-trailing", "range-end"));
}

// Answers its first `answer` attempts itself, without gRPC (UNAVAILABLE, or
// a response when `ok`), and passes the others to the server.
class AnsweringEchoStub : public EchoServiceStubDecorator {
 public:
  AnsweringEchoStub(std::shared_ptr<EchoServiceStub> child, int answer, bool ok)
      : EchoServiceStubDecorator(std::move(child)), answer_(answer), ok_(ok) {}

  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    if (answered_.fetch_add(1) < answer_) return Answer(request);
    return EchoServiceStubDecorator::Echo(context, options, request);
  }
  void AsyncEcho(grpc::ClientContext& context, const OptionsView& options,
                 const EchoRequest& request,
                 AsyncCallback<EchoResponse> done) override {
    if (answered_.fetch_add(1) < answer_) {
      done(Answer(request));
      return;
    }
    EchoServiceStubDecorator::AsyncEcho(context, options, request,
                                        std::move(done));
  }

 private:
  absl::StatusOr<EchoResponse> Answer(const EchoRequest& request) const {
    if (!ok_) return absl::UnavailableError("answered by the decorator");
    EchoResponse response;
    response.set_message(request.message());
    return response;
  }

  const int answer_;
  const bool ok_;
  std::atomic<int> answered_{0};
};

// An attempt a decorator answered created no gRPC call: its response
// metadata is empty, and reading it does not trip gRPC's assertion on
// initial metadata never asked for; an attempt that reached the server has
// it, in the same call.
TEST_F(CallControlsTest, ResponseMetadataOfAnAttemptADecoratorAnswered) {
  const std::string peer_prefix = "ipv4:127.0.0.1:";
  auto answering = [](int answer, bool ok) {
    return Options{}.set<EchoServiceClient::DecoratorsOption>(
        {[answer, ok](std::shared_ptr<EchoServiceStub> child)
             -> std::shared_ptr<EchoServiceStub> {
          return std::make_shared<AnsweringEchoStub>(std::move(child), answer,
                                                     ok);
        }});
  };
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    const std::string message = async ? "answered-async" : "answered-sync";
    // Attempt 1 answered (UNAVAILABLE, retried), attempt 2 sent.
    EchoServiceClient echo(Channel(), answering(1, false));
    absl::Mutex mu;
    std::vector<ResponseMetadata> per_attempt;
    auto received = std::make_shared<ResponseMetadata>();
    Options options =
        FastRetries()
            .set<ResponseMetadataOption>(received)
            .set<RetryObserverOption>([&](const AttemptEvent& event) {
              absl::MutexLock lock(&mu);
              per_attempt.push_back(event.ReceivedMetadata());
            });
    EchoRequest request;
    request.set_message(message);
    absl::StatusOr<EchoResponse> response =
        async ? echo.AsyncEcho(request, options).get()
              : echo.Echo(request, options);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->attempt(), 1);  // the server's first
    absl::MutexLock lock(&mu);
    ASSERT_EQ(per_attempt.size(), 2u);
    EXPECT_TRUE(per_attempt[0].initial_metadata.empty());
    EXPECT_TRUE(per_attempt[0].trailing_metadata.empty());
    EXPECT_EQ(per_attempt[0].peer, "");
    EXPECT_TRUE(
        HasEntry(per_attempt[1].initial_metadata, "x-initial", "i-" + message));
    EXPECT_TRUE(HasEntry(per_attempt[1].trailing_metadata, "x-trailing",
                         "t-" + message + "-1"));
    EXPECT_EQ(per_attempt[1].peer.rfind(peer_prefix, 0), 0u)
        << per_attempt[1].peer;
    EXPECT_TRUE(
        HasEntry(received->initial_metadata, "x-initial", "i-" + message));
    EXPECT_TRUE(HasEntry(received->trailing_metadata, "x-trailing",
                         "t-" + message + "-1"));
    EXPECT_EQ(received->peer.rfind(peer_prefix, 0), 0u) << received->peer;
  }

  // The only attempt answered (a response): everything empty, stale values
  // cleared; the server saw nothing.
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "answered only, async" : "answered only, sync");
    EchoServiceClient echo(Channel(), answering(1, true));
    auto received = std::make_shared<ResponseMetadata>();
    received->initial_metadata.emplace("stale", "1");
    received->trailing_metadata.emplace("stale", "1");
    received->peer = "stale";
    Options options = Options{}.set<ResponseMetadataOption>(received);
    EchoRequest request;
    request.set_message(async ? "only-answered-async" : "only-answered-sync");
    absl::StatusOr<EchoResponse> response =
        async ? echo.AsyncEcho(request, options).get()
              : echo.Echo(request, options);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->message(), request.message());
    EXPECT_TRUE(received->initial_metadata.empty());
    EXPECT_TRUE(received->trailing_metadata.empty());
    EXPECT_EQ(received->peer, "");
  }
  EXPECT_EQ(recorder_.seen().size(), 2u);  // the two attempts sent above
}

// RetryPolicy::WithRetryableIf against a real server: the server's INTERNAL
// "RST_STREAM" failure is retried; without the predicate it is final.
TEST_F(CallControlsTest, RetryPredicateRetriesAChosenInternal) {
  EchoServiceClient echo(Channel());
  std::atomic<int> predicate_calls{0};
  auto policy = RetryPolicy::LimitedErrorCount(3).WithRetryableIf(
      [&predicate_calls](const absl::Status& status) {
        ++predicate_calls;
        return status.code() == absl::StatusCode::kInternal &&
               absl::StrContains(status.message(), "RST_STREAM");
      });
  auto fast = ExponentialBackoffPolicy()
                  .WithInitialDelay(milliseconds(1))
                  .WithMaximumDelay(milliseconds(5))
                  .WithMultiplier(2.0);
  auto options =
      Options{}.set<RetryPolicyOption>(policy).set<BackoffPolicyOption>(fast);
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    EchoRequest request;
    request.set_message(async ? "reset-async" : "reset-sync");
    request.set_fail_first(2);
    request.set_fail_code(grpc::StatusCode::INTERNAL);
    absl::StatusOr<EchoResponse> response =
        async ? echo.AsyncEcho(request, options).get()
              : echo.Echo(request, options);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->attempt(), 3);
  }
  EXPECT_EQ(predicate_calls.load(), 4);

  EchoRequest request;
  request.set_message("reset-no-predicate");
  request.set_fail_first(2);
  request.set_fail_code(grpc::StatusCode::INTERNAL);
  absl::StatusOr<EchoResponse> response = echo.Echo(
      request, Options{}
                   .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
                   .set<BackoffPolicyOption>(fast));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(GetRetrySummary(response.status())->attempts, 1);
}

// Call credentials need a channel secure enough to carry them: local
// credentials over a unix socket.
TEST(CallCredentialsTest, TheServerSeesTheToken) {
  const std::string path =
      "/tmp/stubkit_call_controls_" + std::to_string(::getpid()) + ".sock";
  ::unlink(path.c_str());
  Recorder recorder;
  Server server(&recorder, "unix:" + path,
                grpc::experimental::LocalServerCredentials(UDS));
  ASSERT_TRUE(server.ok());
  auto channel = grpc::CreateChannel("unix:" + path,
                                     grpc::experimental::LocalCredentials(UDS));
  EchoServiceClient echo(channel, FastRetries());
  StreamServiceClient streams(channel, FastRetries());
  auto options = Options{}.set<CallCredentialsOption>(
      grpc::AccessTokenCredentials("token-7"));
  for (const absl::Status& status : CallEveryForm(echo, streams, options)) {
    EXPECT_TRUE(status.ok()) << status;
  }
  const std::vector<Seen> seen = recorder.seen();
  ASSERT_GE(seen.size(), 8u);
  for (const Seen& attempt : seen) {
    SCOPED_TRACE(attempt.method);
    auto token = attempt.metadata.find("authorization");
    ASSERT_NE(token, attempt.metadata.end());
    EXPECT_EQ(token->second, "Bearer token-7");
  }
  ::unlink(path.c_str());
}

// gRPC refuses call credentials on an insecure channel: the attempt fails
// before it reaches the server.
TEST_F(CallControlsTest, CallCredentialsOnAnInsecureChannelFailUnsent) {
  EchoServiceClient echo(Channel(), FastRetries());
  EchoRequest request;
  request.set_message("insecure");
  absl::StatusOr<EchoResponse> response =
      echo.Echo(request, Options{}.set<CallCredentialsOption>(
                             grpc::AccessTokenCredentials("token-7")));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(response.status().message()),
              ::testing::HasSubstr("security level"));
  EXPECT_TRUE(recorder_.seen().empty());
}

// Wait-for-ready: the call starts before the server does and succeeds on
// its first attempt, instead of failing with UNAVAILABLE and retrying.
TEST(WaitForReadyTest, TheCallWaitsForTheServerInOneAttempt) {
  int port = 0;
  {
    // Picks a free port, then frees it for the server that starts later.
    Recorder unused;
    Server picker(&unused, "127.0.0.1:0");
    ASSERT_TRUE(picker.ok());
    port = picker.port();
  }
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  std::atomic<int> events{0};
  std::atomic<int> failed_attempts{0};
  auto options = Options{}
                     .set<WaitForReadyOption>(true)
                     .set<TotalTimeoutOption>(seconds(60))
                     .set<RetryObserverOption>([&](const AttemptEvent& event) {
                       ++events;
                       if (!event.status.ok()) ++failed_attempts;
                     });
  EchoServiceClient echo(channel);
  EchoRequest request;
  request.set_message("wait");
  auto call = echo.AsyncEcho(request, options);
  // The call is waiting for a connection when the server starts.
  std::this_thread::sleep_for(seconds(1));
  Recorder recorder;
  Server server(&recorder, "127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(server.ok());
  absl::StatusOr<EchoResponse> response = call.get();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 1);
  EXPECT_EQ(failed_attempts.load(), 0);
  EXPECT_EQ(events.load(), 1);  // the final event only: one attempt
  EXPECT_EQ(recorder.seen().size(), 1u);
}

// The same without wait-for-ready: the first attempt fails fast, so the test
// above would fail if the option were not applied.
TEST(WaitForReadyTest, WithoutItTheFirstAttemptFailsFast) {
  int port = 0;
  {
    Recorder unused;
    Server picker(&unused, "127.0.0.1:0");
    ASSERT_TRUE(picker.ok());
    port = picker.port();
  }
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  EchoServiceClient echo(channel);
  EchoRequest request;
  request.set_message("fail fast");
  absl::StatusOr<EchoResponse> response = echo.Echo(
      request, Options{}
                   .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0))
                   .set<TotalTimeoutOption>(seconds(60)));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace stubkit

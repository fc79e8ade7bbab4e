// Copyright 2026 The stubkit Authors.
//
// Driver parity (issue 40, item 5): one table of scenarios, run through
// every driver of a generated client (sync unary; async unary, future and
// callback; hedged, sync and async; server, client and bidi streams, sync
// and async), against one real gRPC server on 127.0.0.1 scripted to fail
// per attempt. Each driver must give the sync unary call's outcome: final
// status and retry summary, the attempts the server saw, the waits asked of
// the sleeper, the observer's events and the metrics. A driver that
// differs on purpose has an entry in Differences() that says how (a
// function that turns the sync unary outcome into this driver's, compared
// in full like any other) and why; docs/retry-semantics.md ("Driver
// parity") lists the same entries, which a test checks. An entry whose
// reason starts with "DEFECT:" is a difference with no good reason, kept
// visible until the runtime is fixed.
//
// Time is a FakeClock moved only by the sleeper, which records each wait:
// nothing here asserts a real duration. The one exception is the channel
// scenario, on the real clock because only the default sleepers follow the
// channel; its 30 s backoff would show as a call that never returns.
//
// Streams fail before their first message: until then a stream is opened
// under the same rules as a unary call (a client or bidi stream replays its
// writes), which is what makes them comparable. A break after messages goes
// to the resume hook, a different rule (docs/streaming.md), tested in
// generated_stream_resume_test.cc.

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "stubkit/cancellation.h"
#include "stubkit/channel.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_hints.h"
#include "stubkit/status.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"
#include "tests/testing/status_details.h"

namespace stubkit {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::stubkit::testing::Item;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::StreamService;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;

// How long a test waits for a call, a server attempt or a cancel before it
// fails instead of hanging. Never reached by a passing run.
constexpr auto kGiveUp = seconds(20);

// --- The server: every method fails, answers or hangs as the script says.

struct Step {
  enum class Kind { kFail, kOk, kHang };
  Kind kind = Kind::kOk;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string pushback;  // grpc-retry-pushback-ms, when not empty
  std::string details;   // grpc-status-details-bin, when not empty
  // Client and bidi streams: fail once the first write arrived (still
  // before any response), so that the failure surely follows the write.
  bool after_first_write = false;
};

Step Fail(grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE,
          std::string pushback = "") {
  Step step;
  step.kind = Step::Kind::kFail;
  step.code = code;
  step.pushback = std::move(pushback);
  return step;
}
// UNAVAILABLE with a google.rpc.RetryInfo of `seconds`.
Step FailWithRetryInfo(int64_t seconds) {
  Step step = Fail();
  step.details = stubkit::testing::StatusWithRetryInfo(seconds, 0);
  return step;
}
Step FailAfterAWrite() {
  Step step = Fail();
  step.after_first_write = true;
  return step;
}
Step Ok() { return Step{}; }
Step Hang() {
  Step step;
  step.kind = Step::Kind::kHang;
  return step;
}

// The attempts of one run, whatever the method: attempt n plays step n (the
// last step again past the end). Failures come before anything is read or
// sent, so that a stream fails before its first message.
class ScriptedStreamService final : public StreamService::Service {
 public:
  void Reset(std::vector<Step> script) {
    std::lock_guard<std::mutex> lock(mu_);
    script_ = std::move(script);
    attempts_ = 0;
    hanging_ = false;
  }
  int attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return attempts_;
  }
  // Waits until an attempt hangs; false after kGiveUp.
  bool WaitForHang() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kGiveUp, [&] { return hanging_; });
  }

  grpc::Status Get(grpc::ServerContext* context, const RangeRequest* request,
                   Item* response) override {
    if (std::optional<grpc::Status> failed = Play(context)) return *failed;
    response->set_value(request->start());
    return grpc::Status::OK;
  }
  grpc::Status Range(grpc::ServerContext* context, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    if (std::optional<grpc::Status> failed = Play(context)) return *failed;
    Item item;
    item.set_value(request->start());
    writer->Write(item);
    return grpc::Status::OK;
  }
  grpc::Status Sum(grpc::ServerContext* context,
                   grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    Item item;
    if (std::optional<grpc::Status> failed =
            Play(context, [&] { reader->Read(&item); })) {
      return *failed;
    }
    while (reader->Read(&item)) {
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    return grpc::Status::OK;
  }
  grpc::Status Double(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    Item item;
    if (std::optional<grpc::Status> failed =
            Play(context, [&] { stream->Read(&item); })) {
      return *failed;
    }
    while (stream->Read(&item)) {
      item.set_value(item.value() * 2);
      stream->Write(item);
    }
    return grpc::Status::OK;
  }

 private:
  // The attempt's step: its failure, or nullopt to answer.
  // `read_first`: reads the first write (client and bidi streams).
  std::optional<grpc::Status> Play(
      grpc::ServerContext* context,
      const std::function<void()>& read_first = nullptr) {
    Step step;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const size_t index = static_cast<size_t>(attempts_++);
      if (!script_.empty()) {
        step = script_[index < script_.size() ? index : script_.size() - 1];
      }
      if (step.kind == Step::Kind::kHang) hanging_ = true;
    }
    switch (step.kind) {
      case Step::Kind::kOk:
        return std::nullopt;
      case Step::Kind::kFail:
        if (step.after_first_write && read_first) read_first();
        if (!step.pushback.empty()) {
          context->AddTrailingMetadata(kRetryPushbackHeader, step.pushback);
        }
        return grpc::Status(step.code, "scripted failure", step.details);
      case Step::Kind::kHang:
        break;
    }
    cv_.notify_all();
    const auto give_up = std::chrono::steady_clock::now() + kGiveUp;
    while (!context->IsCancelled() &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return grpc::Status(grpc::StatusCode::ABORTED, "hung until cancelled");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Step> script_;
  int attempts_ = 0;
  bool hanging_ = false;
};

// --- Time: a FakeClock moved by a sleeper that records every wait.

// The sync and async sleeper of one run. Each wait is recorded and moves
// the clock; an async one completes inline (as FakeClock's does). Scripted:
// at wait `cancel_at` it moves half the wait and cancels the call's token
// (a cancel during a wait); at wait `late_at` it moves `late_by` more than
// asked (a wake-up late on a loaded machine). A wait of `kHeld` or more
// (the hedging delay below) is neither recorded nor run: it stays pending
// until cancelled, so that hedges go only when a failure sends them.
class ParitySleeper final : public Sleeper, public AsyncSleeper {
 public:
  static constexpr nanoseconds kHeld = hours(1);

  ParitySleeper(std::shared_ptr<FakeClock> clock,
                std::shared_ptr<CancellationToken> token)
      : clock_(std::move(clock)), token_(std::move(token)) {}

  int cancel_at = -1;
  int late_at = -1;
  nanoseconds late_by{0};

  void SleepFor(nanoseconds wait) override {
    if (Begin(wait)) token_->Cancel();
  }
  uint64_t Schedule(nanoseconds wait, std::function<void(bool)> done) override {
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = next_id_++;
    }
    if (wait >= kHeld || Begin(wait)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.emplace(id, std::move(done));
      }
      // A cancelled wait ends through Cancel(id), as a real timer's does.
      if (wait < kHeld) token_->Cancel();
      return id;
    }
    done(true);
    return id;
  }
  void Cancel(uint64_t id) override {
    std::function<void(bool)> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      done = std::move(it->second);
      pending_.erase(it);
    }
    done(false);
  }

  std::vector<nanoseconds> waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }
  // Ends the waits still pending (none, once a call ended: it cancels its
  // timers); returns how many there were.
  size_t CancelPending() {
    std::map<uint64_t, std::function<void(bool)>> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending.swap(pending_);
    }
    for (auto& [id, done] : pending) done(false);
    return pending.size();
  }

 private:
  // Records `wait` and moves the clock; true when the call is to be
  // cancelled now, in the middle of it.
  bool Begin(nanoseconds wait) {
    int index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = static_cast<int>(waits_.size());
      waits_.push_back(wait);
    }
    if (index == cancel_at) {
      clock_->Advance(wait / 2);
      return true;
    }
    clock_->Advance(index == late_at ? wait + late_by : wait);
    return false;
  }

  const std::shared_ptr<FakeClock> clock_;
  const std::shared_ptr<CancellationToken> token_;
  std::mutex mu_;
  std::vector<nanoseconds> waits_;
  std::map<uint64_t, std::function<void(bool)>> pending_;
  uint64_t next_id_ = 1;
};

// --- What a run gives, compared in full between drivers.

struct Event {
  int attempt = 0;
  absl::StatusCode code = absl::StatusCode::kOk;
  bool final = false;
  nanoseconds wait{0};
  WaitReason wait_reason = WaitReason::kNone;
  StopReason stop_reason = StopReason::kSuccess;
  bool hedge_loser = false;
  nanoseconds elapsed{0};
  nanoseconds attempt_duration{0};
  bool started_on_reconnect = false;

  bool operator==(const Event& o) const {
    return attempt == o.attempt && code == o.code && final == o.final &&
           wait == o.wait && wait_reason == o.wait_reason &&
           stop_reason == o.stop_reason && hedge_loser == o.hedge_loser &&
           elapsed == o.elapsed && attempt_duration == o.attempt_duration &&
           started_on_reconnect == o.started_on_reconnect;
  }
};

std::string Ms(nanoseconds d) {
  return absl::StrCat(std::chrono::duration<double, std::milli>(d).count(),
                      "ms");
}

std::vector<std::string> Ms(const std::vector<nanoseconds>& waits) {
  std::vector<std::string> formatted;
  for (nanoseconds wait : waits) formatted.push_back(Ms(wait));
  return formatted;
}

void PrintTo(const Event& e, std::ostream* os) {
  *os << "{attempt " << e.attempt << " " << absl::StatusCodeToString(e.code)
      << (e.final ? " final " + std::string(ToIdentifier(e.stop_reason))
                  : " wait " + Ms(e.wait) + " " +
                        std::string(ToString(e.wait_reason)))
      << (e.hedge_loser ? " loser" : "")
      << (e.started_on_reconnect ? " on reconnect" : "") << " elapsed "
      << Ms(e.elapsed) << " duration " << Ms(e.attempt_duration) << "}";
}

// The metrics of the run's one call (a fresh collector per run).
struct Metrics {
  int64_t calls = 0;
  int64_t attempts = 0;
  int64_t retries = 0;
  int64_t hedges = 0;
  std::array<int64_t, kStopReasonCount> stops{};
  double retry_delay_ms = 0;
  double latency_ms = 0;

  bool operator==(const Metrics& o) const {
    return calls == o.calls && attempts == o.attempts && retries == o.retries &&
           hedges == o.hedges && stops == o.stops &&
           retry_delay_ms == o.retry_delay_ms && latency_ms == o.latency_ms;
  }
};

void PrintTo(const Metrics& m, std::ostream* os) {
  *os << "{calls " << m.calls << ", attempts " << m.attempts << ", retries "
      << m.retries << ", hedges " << m.hedges << ", stops";
  for (int i = 0; i < kStopReasonCount; ++i) {
    if (m.stops[i] != 0) {
      *os << " " << ToIdentifier(static_cast<StopReason>(i)) << "="
          << m.stops[i];
    }
  }
  *os << ", retry delay " << m.retry_delay_ms << "ms, latency " << m.latency_ms
      << "ms}";
}

struct Outcome {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;
  std::optional<RetrySummary> summary;
  int server_attempts = 0;
  std::vector<nanoseconds> waits;
  std::vector<Event> events;
  Metrics metrics;
};

// Compares field by field, so that a failure says which one differs.
void ExpectSameOutcome(const Outcome& actual, const Outcome& expected) {
  EXPECT_EQ(actual.code, expected.code);
  EXPECT_EQ(actual.message, expected.message);
  EXPECT_EQ(actual.summary.has_value(), expected.summary.has_value());
  if (actual.summary && expected.summary) {
    EXPECT_EQ(actual.summary->stop_reason, expected.summary->stop_reason)
        << ToIdentifier(actual.summary->stop_reason) << " vs "
        << ToIdentifier(expected.summary->stop_reason);
    EXPECT_EQ(actual.summary->attempts, expected.summary->attempts);
    EXPECT_EQ(Ms(actual.summary->elapsed), Ms(expected.summary->elapsed));
  }
  EXPECT_EQ(actual.server_attempts, expected.server_attempts);
  EXPECT_EQ(Ms(actual.waits), Ms(expected.waits));
  EXPECT_EQ(actual.events, expected.events);
  EXPECT_EQ(actual.metrics, expected.metrics);
}

// --- The drivers.

enum class Driver {
  kSyncUnary,
  kAsyncUnaryFuture,
  kAsyncUnaryCallback,
  kHedgedSync,
  kHedgedAsync,
  kServerStreamSync,
  kServerStreamAsync,
  kClientStreamSync,
  kClientStreamAsync,
  kBidiStreamSync,
  kBidiStreamAsync,
};

constexpr Driver kDrivers[] = {
    Driver::kSyncUnary,          Driver::kAsyncUnaryFuture,
    Driver::kAsyncUnaryCallback, Driver::kHedgedSync,
    Driver::kHedgedAsync,        Driver::kServerStreamSync,
    Driver::kServerStreamAsync,  Driver::kClientStreamSync,
    Driver::kClientStreamAsync,  Driver::kBidiStreamSync,
    Driver::kBidiStreamAsync,
};

const char* Name(Driver driver) {
  switch (driver) {
    case Driver::kSyncUnary:
      return "sync unary";
    case Driver::kAsyncUnaryFuture:
      return "async unary (future)";
    case Driver::kAsyncUnaryCallback:
      return "async unary (callback)";
    case Driver::kHedgedSync:
      return "hedged sync";
    case Driver::kHedgedAsync:
      return "hedged async";
    case Driver::kServerStreamSync:
      return "server stream sync";
    case Driver::kServerStreamAsync:
      return "server stream async";
    case Driver::kClientStreamSync:
      return "client stream sync";
    case Driver::kClientStreamAsync:
      return "client stream async";
    case Driver::kBidiStreamSync:
      return "bidi stream sync";
    case Driver::kBidiStreamAsync:
      return "bidi stream async";
  }
  return "?";
}

bool Hedged(Driver driver) {
  return driver == Driver::kHedgedSync || driver == Driver::kHedgedAsync;
}

// One call's final status, delivered once from any thread.
class Result {
 public:
  void Set(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(status);
    ++calls_;
    cv_.notify_all();
  }
  absl::Status Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kGiveUp, [&] { return calls_ > 0; })) {
      return absl::DeadlineExceededError("TEST: the call never completed");
    }
    return calls_ == 1 ? status_ : absl::InternalError("TEST: completed twice");
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  absl::Status status_;
  int calls_ = 0;
};

// An item of `padding` bytes more.
Item MakeItem(int value, size_t padding) {
  Item item;
  item.set_value(value);
  item.set_padding(std::string(padding, 'x'));
  return item;
}

// Runs one call through `driver`; returns its final status.
// Client and bidi streams write one item of `padding` bytes.
absl::Status Call(Driver driver, StreamServiceClient& client,
                  const Options& call, size_t padding) {
  RangeRequest request;
  request.set_start(7);
  request.set_count(1);
  switch (driver) {
    case Driver::kSyncUnary:
    case Driver::kHedgedSync:
      return client.Get(request, call).status();
    case Driver::kAsyncUnaryFuture:
    case Driver::kHedgedAsync: {
      auto future = client.AsyncGet(request, call);
      if (future.wait_for(kGiveUp) != std::future_status::ready) {
        return absl::DeadlineExceededError("TEST: the call never completed");
      }
      return future.get().status();
    }
    case Driver::kAsyncUnaryCallback: {
      // Shared: a call that fails the test by never completing may still
      // complete after this returns.
      auto result = std::make_shared<Result>();
      client.AsyncGet(
          request,
          [result](absl::StatusOr<Item> item) { result->Set(item.status()); },
          call);
      return result->Wait();
    }
    case Driver::kServerStreamSync: {
      StreamReader<Item> reader = client.Range(request, call);
      Item item;
      while (reader.Read(&item)) {
      }
      return reader.Finish();
    }
    case Driver::kServerStreamAsync: {
      auto result = std::make_shared<Result>();
      client.AsyncRange(
          request, [](const Item&) {},
          [result](absl::Status status) { result->Set(std::move(status)); },
          call);
      return result->Wait();
    }
    case Driver::kClientStreamSync: {
      auto writer = client.Sum(call);
      writer.Write(MakeItem(1, padding));
      writer.WritesDone();
      return writer.Finish().status();
    }
    case Driver::kClientStreamAsync: {
      auto result = std::make_shared<Result>();
      AsyncStreamWriter<Item> writer = client.AsyncSum(
          [result](absl::StatusOr<SumResponse> response) {
            result->Set(response.status());
          },
          call);
      writer.Write(MakeItem(1, padding));
      writer.WritesDone();
      return result->Wait();
    }
    case Driver::kBidiStreamSync: {
      auto stream = client.Double(call);
      stream.Write(MakeItem(1, padding));
      stream.WritesDone();
      Item item;
      while (stream.Read(&item)) {
      }
      return stream.Finish();
    }
    case Driver::kBidiStreamAsync: {
      auto result = std::make_shared<Result>();
      AsyncStreamWriter<Item> writer = client.AsyncDouble(
          [](const Item&) {},
          [result](absl::Status status) { result->Set(std::move(status)); },
          call);
      writer.Write(MakeItem(1, padding));
      writer.WritesDone();
      return result->Wait();
    }
  }
  return absl::InternalError("TEST: unknown driver");
}

// --- The scenarios.

// What one run gets to set up: its own clock, sleeper and token.
struct RunContext {
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<ParitySleeper> sleeper;
  std::shared_ptr<CancellationToken> token;
};

struct Scenario {
  std::string name;
  std::vector<Step> script;
  // Options of the call, over the defaults of every run (BaseOptions).
  std::function<void(Options&)> options = [](Options&) {};
  // Scripts the sleeper (a cancel or a late wake during a wait).
  std::function<void(ParitySleeper&)> sleeper = [](ParitySleeper&) {};
  // The test cancels the call once the server sees a hanging attempt.
  bool cancel_in_attempt = false;
  // The call's token is cancelled before the call starts.
  bool cancel_before = false;
  // Client and bidi streams: the bytes their one write carries.
  size_t write_bytes = 0;
  // The server is down when the call starts and comes back once attempt 1
  // failed. On the real clock: a wait follows the channel only with the
  // default sleepers (docs/reconnects.md), so this run has no FakeClock and
  // records no waits; the events say what each wait was to be.
  bool channel_down = false;
  // The sync unary call's outcome, in brief (the rest is compared between
  // drivers): the stop reason (nullopt: success), the attempts, the waits.
  std::optional<StopReason> stop;
  int attempts = 0;
  std::vector<nanoseconds> waits;

  Scenario With(std::function<void(Options&)> f) const {
    Scenario copy = *this;
    copy.options = std::move(f);
    return copy;
  }
  Scenario WithSleeper(std::function<void(ParitySleeper&)> f) const {
    Scenario copy = *this;
    copy.sleeper = std::move(f);
    return copy;
  }
  Scenario Writing(size_t bytes) const {
    Scenario copy = *this;
    copy.write_bytes = bytes;
    return copy;
  }
  Scenario ChannelDown() const {
    Scenario copy = *this;
    copy.channel_down = true;
    return copy;
  }
  Scenario CancelledBefore() const {
    Scenario copy = *this;
    copy.cancel_before = true;
    return copy;
  }
  Scenario CancelledInAttempt() const {
    Scenario copy = *this;
    copy.cancel_in_attempt = true;
    return copy;
  }
  Scenario Expect(std::optional<StopReason> stop_reason, int attempt_count,
                  std::vector<nanoseconds> wait_list = {}) const {
    Scenario copy = *this;
    copy.stop = stop_reason;
    copy.attempts = attempt_count;
    copy.waits = std::move(wait_list);
    return copy;
  }
};

void PrintTo(const Scenario& scenario, std::ostream* os) {
  *os << scenario.name;
}

Scenario Make(std::string name, std::vector<Step> script) {
  Scenario scenario;
  scenario.name = std::move(name);
  scenario.script = std::move(script);
  return scenario;
}

// The options of every run: a retry policy of 4 failures, backoff 1 s, 2 s,
// 4 s, ... without jitter, and a hedging policy of as many attempts whose
// delay the sleeper holds (hedges go only when a failure sends them).
Options BaseOptions(const RunContext& run) {
  return Options{}
      .set<ClockOption>(run.clock)
      .set<SleeperOption>(run.sleeper)
      .set<AsyncSleeperOption>(run.sleeper)
      .set<CancellationOption>(run.token)
      .set<IdempotencyOption>(Idempotency::kIdempotent)
      .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(4))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(seconds(1))
                                    .WithMaximumDelay(seconds(60))
                                    .WithMultiplier(2.0)
                                    .WithJitter(Jitter::None()));
}

// For ChannelDown: the real clock and the default sleepers, and a backoff
// of 30 s that a wait following the channel ends early (a wait that did
// not would show as a test that fails its kGiveUp, not as a timing
// assertion).
Options RealTimeOptions(const RunContext& run) {
  return Options{}
      .set<CancellationOption>(run.token)
      .set<IdempotencyOption>(Idempotency::kIdempotent)
      .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(4))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(seconds(30))
                                    .WithMaximumDelay(seconds(30))
                                    .WithMultiplier(2.0)
                                    .WithJitter(Jitter::None()));
}

// In order of priority.
const std::vector<Scenario>& Scenarios() {
  static const auto* const kScenarios = new std::vector<Scenario>{
      Make("RetryableThenOk", {Fail(), Fail(), Ok()})
          .Expect(std::nullopt, 3, {seconds(1), seconds(2)}),
      Make("NonRetryable", {Fail(grpc::StatusCode::PERMISSION_DENIED), Ok()})
          .Expect(StopReason::kPermanentError, 1),
      Make("NonIdempotent", {Fail(), Ok()})
          .With([](Options& o) {
            o.set<IdempotencyOption>(Idempotency::kNonIdempotent);
          })
          .Expect(StopReason::kNonIdempotent, 1),
      Make("ExhaustedByCount", {Fail()})
          .Expect(StopReason::kExhausted, 5,
                  {seconds(1), seconds(2), seconds(4), seconds(8)}),
      // 1 + 2 + 4 s waited; the next wait, 8 s, would end past 10 s.
      Make("ExhaustedByTime", {Fail()})
          .With([](Options& o) {
            o.set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(10)));
          })
          .Expect(StopReason::kExhausted, 4,
                  {seconds(1), seconds(2), seconds(4)}),
      Make("ServerPushbackDelay",
           {Fail(grpc::StatusCode::UNAVAILABLE, "3000"), Ok()})
          .Expect(std::nullopt, 2, {seconds(3)}),
      Make("ServerPushbackDoNotRetry",
           {Fail(grpc::StatusCode::UNAVAILABLE, "-1"), Ok()})
          .Expect(StopReason::kServerRefused, 1),
      Make("ServerRetryInfoDelay", {FailWithRetryInfo(2), Ok()})
          .Expect(std::nullopt, 2, {seconds(2)}),
      // 10 minutes: past the ceiling (ServerHintCeilingOption, 5 minutes).
      Make("ServerPushbackPastTheCeiling",
           {Fail(grpc::StatusCode::UNAVAILABLE, "600000"), Ok()})
          .Expect(StopReason::kServerRefused, 1),
      // Two tokens: the first failure leaves one, half the bucket, which
      // refuses.
      Make("ThrottleRefuses", {Fail(), Ok()})
          .With([](Options& o) {
            o.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
                RetryThrottle::Config().WithMaxTokens(2).WithTokenRatio(1)));
          })
          .Expect(StopReason::kThrottled, 1),
      // The throttle's waiting mode: refused, the call waits for the
      // backend to recover, polling at a random pace (RetryThrottle::
      // PollDelay, 0.5-1 s here) but never past its end: the 100 ms left
      // make the wait, and its stop, deterministic.
      Make("ThrottleWaitsForRecovery", {Fail(), Ok()})
          .With([](Options& o) {
            RetryThrottle::WaitForRecovery waiting;
            waiting.probe_interval = seconds(1);
            o.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
                RetryThrottle::Config()
                    .WithMaxTokens(2)
                    .WithTokenRatio(1)
                    .WithWaitForRecovery(waiting)));
            o.set<TotalTimeoutOption>(milliseconds(100));
          })
          .Expect(StopReason::kThrottled, 1, {milliseconds(100)}),
      // No reserve, and half a retry per request: the first retry does
      // not fit.
      Make("BudgetRefuses", {Fail(), Ok()})
          .With([](Options& o) {
            o.set<RetryBudgetOption>(
                std::make_shared<RetryBudget>(RetryBudget::Config()
                                                  .WithMinRetriesPerSecond(0)
                                                  .WithPercentCanRetry(0.5)));
          })
          .Expect(StopReason::kThrottled, 1),
      // Cancelled half-way through the first backoff wait.
      Make("CancelDuringAWait", {Fail(), Ok()})
          .WithSleeper([](ParitySleeper& s) { s.cancel_at = 0; })
          .Expect(StopReason::kCancelled, 1, {seconds(1)}),
      // The first wait (1 s, well within the 10 s total timeout) wakes 20 s
      // late: the call's end passed during it.
      Make("DeadlinePassesDuringAWait", {Fail(), Ok()})
          .With([](Options& o) { o.set<TotalTimeoutOption>(seconds(10)); })
          .WithSleeper([](ParitySleeper& s) {
            s.late_at = 0;
            s.late_by = seconds(20);
          })
          .Expect(StopReason::kDeadline, 1, {seconds(1)}),
      // 1 + 2 s waited; the next wait, 4 s, would end past the 5 s total
      // timeout: the call stops rather than wait into its deadline.
      Make("DeadlineBeforeTheNextWait", {Fail()})
          .With([](Options& o) { o.set<TotalTimeoutOption>(seconds(5)); })
          .Expect(StopReason::kDeadline, 3, {seconds(1), seconds(2)}),
      Make("CancelDuringAnAttempt", {Hang(), Ok()})
          .CancelledInAttempt()
          .Expect(StopReason::kCancelled, 1),
      Make("CancelledBeforeTheCall", {Ok()})
          .CancelledBefore()
          .Expect(StopReason::kCancelled, 0),
      // Refused before anything is sent.
      Make("InvalidOptions", {Ok()})
          .With([](Options& o) {
            o.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(-1));
          })
          .Expect(StopReason::kInvalidArgument, 0),
      // A client or bidi stream's write past the replay buffer (256 KiB,
      // kMaxReplayBytes) before the failure; for the other drivers, whose
      // request is small, the same as a retryable failure.
      Make("RetryableAfterWritesPastTheReplayBuffer", {FailAfterAWrite(), Ok()})
          .Writing(300 * 1024)
          .Expect(std::nullopt, 2, {seconds(1)}),
      // Attempt 1 fails on the dead connection and chooses a 30 s backoff,
      // which ends as soon as the channel is ready again.
      Make("ChannelDownThenReady", {Ok()})
          .ChannelDown()
          .Expect(std::nullopt, 2),
  };
  return *kScenarios;
}

// --- The differences: how a driver's outcome differs from the sync unary
// call's, on purpose (or, "DEFECT:", not), and why. `expect` turns the sync
// unary outcome into this driver's.

struct Difference {
  Driver driver;
  const char* scenario;
  const char* what;
  const char* why;
  std::function<void(Outcome&)> expect;
};

// A hedged call's hedges went at once, with no wait: the sync unary
// outcome without its waits and with no time passed, its retries counted as
// hedges (gRPC A96).
void HedgesAtOnce(Outcome& o) {
  o.waits.clear();
  for (Event& e : o.events) {
    if (!e.final) {
      e.wait = nanoseconds(0);
      e.wait_reason = WaitReason::kNone;
    }
    e.elapsed = nanoseconds(0);
    e.attempt_duration = nanoseconds(0);
  }
  if (o.summary) o.summary->elapsed = nanoseconds(0);
  o.metrics.hedges = std::exchange(o.metrics.retries, 0);
  o.metrics.retry_delay_ms = 0;
  o.metrics.latency_ms = 0;
}

// The outcome of a hedged call whose attempts `failed` (UNAVAILABLE) each
// sent the next at once, and whose attempt after them succeeded (`ok`), or
// whose last one failed too.
Outcome HedgedAtOnce(int failed, bool ok) {
  Outcome o;
  const int attempts = ok ? failed + 1 : failed;
  for (int i = 1; i <= failed; ++i) {
    const bool last = !ok && i == failed;
    o.events.push_back(Event{
        i, absl::StatusCode::kUnavailable, last, nanoseconds(0),
        WaitReason::kNone, last ? StopReason::kExhausted : StopReason::kSuccess,
        false, nanoseconds(0), nanoseconds(0)});
  }
  o.server_attempts = attempts;
  o.metrics.calls = 1;
  o.metrics.attempts = attempts;
  o.metrics.hedges = attempts - 1;
  if (ok) {
    o.events.push_back(Event{attempts, absl::StatusCode::kOk, true});
    o.metrics.stops[static_cast<int>(StopReason::kSuccess)] = 1;
    return o;
  }
  o.code = absl::StatusCode::kUnavailable;
  o.message =
      absl::StrCat("scripted failure [stubkit: gave up: all ", attempts,
                   " hedged attempts failed; ", attempts, " attempts over 0]");
  o.summary = RetrySummary{StopReason::kExhausted, attempts, nanoseconds(0)};
  o.metrics.stops[static_cast<int>(StopReason::kExhausted)] = 1;
  return o;
}

// One attempt failed with UNAVAILABLE and the call stopped for `reason`,
// explained with `explanation`.
Outcome StoppedAtOnce(StopReason reason, const std::string& explanation) {
  Outcome o;
  o.code = absl::StatusCode::kUnavailable;
  o.message = absl::StrCat("scripted failure [stubkit: ", explanation,
                           "; 1 attempt over 0]");
  o.summary = RetrySummary{reason, 1, nanoseconds(0)};
  o.server_attempts = 1;
  o.events.push_back(Event{1, absl::StatusCode::kUnavailable, true,
                           nanoseconds(0), WaitReason::kNone, reason});
  o.metrics.calls = 1;
  o.metrics.attempts = 1;
  o.metrics.stops[static_cast<int>(reason)] = 1;
  return o;
}

// Hedging's own words for a stop the retry loop words otherwise.
std::function<void(Outcome&)> HedgingWords(std::string explanation) {
  return [explanation](Outcome& o) {
    o.message =
        absl::StrCat("scripted failure [stubkit: ", explanation, "; ",
                     o.summary ? o.summary->attempts : 0, " attempt over 0]");
  };
}

constexpr char kHedgesGoAtOnce[] =
    "gRFC A6 hedging: a non-fatal failure sends the next hedge at once, "
    "with no backoff; hedges are counted as hedges, not retries (A96)";
constexpr char kHedgesBoundedByMaxAttempts[] =
    "no backoff between hedges, so no time passes: the call ends when all "
    "max_attempts (5) hedges failed, before the time limit or deadline "
    "that stops the waiting retry loop";
constexpr char kNoWaitToInterrupt[] =
    "no backoff between hedges: there is no wait to cancel or to wake late "
    "in, and the second hedge, sent at once, succeeds";
constexpr char kHedgingExplains[] =
    "hedging decides with its own rules (hedge_decision.h: the policy's "
    "non-fatal codes, 'no more hedges') and says so in the summary";

constexpr char kHintedHedgeCounts[] =
    "the hedge after a server's hint waits it, as a retry would, but is "
    "counted as a hedge (A96); the retry delay counts only calls that "
    "retried, which a hedged call never does (metrics.h)";

// The metrics of a hedged call that waited a server's hint.
void HedgesNotRetries(Outcome& o) {
  o.metrics.hedges = std::exchange(o.metrics.retries, 0);
  o.metrics.retry_delay_ms = 0;
}

// Hedging says the retry loop's words, then that no more hedges go.
void NoMoreHedges(Outcome& o) {
  const size_t at = o.message.rfind("; ");
  if (at != std::string::npos) o.message.insert(at, ", no more hedges");
}

void ForgetRealTime(Outcome& o);

// Both hedged drivers differ alike.
void AddHedged(std::vector<Difference>& table, const char* scenario,
               const char* what, const char* why,
               std::function<void(Outcome&)> expect) {
  for (Driver driver : {Driver::kHedgedSync, Driver::kHedgedAsync}) {
    table.push_back(Difference{driver, scenario, what, why, expect});
  }
}

const std::vector<Difference>& Differences() {
  static const auto* const kDifferences = [] {
    auto* table = new std::vector<Difference>;
    AddHedged(*table, "RetryableThenOk",
              "no waits; events without waits; hedges, not retries, in the "
              "metrics; no retry delay",
              kHedgesGoAtOnce, HedgesAtOnce);
    AddHedged(*table, "NonRetryable", "the summary's explanation",
              kHedgingExplains,
              HedgingWords("hedged attempt 1 failed with PERMISSION_DENIED, "
                           "which is fatal (non-fatal: UNAVAILABLE)"));
    AddHedged(*table, "ExhaustedByCount",
              "no waits, no time passes; the summary says all 5 hedges failed",
              kHedgesGoAtOnce,
              [](Outcome& o) { o = HedgedAtOnce(5, /*ok=*/false); });
    AddHedged(*table, "ExhaustedByTime",
              "5 attempts at once (not 4 over 7 s); kExhausted as all "
              "hedges failed",
              kHedgesBoundedByMaxAttempts,
              [](Outcome& o) { o = HedgedAtOnce(5, /*ok=*/false); });
    AddHedged(*table, "ServerPushbackDelay",
              "the same 3 s wait; hedges, not retries, in the metrics, and no "
              "retry delay",
              kHintedHedgeCounts, HedgesNotRetries);
    AddHedged(*table, "ServerPushbackDoNotRetry",
              "the summary's explanation ends with 'no more hedges'",
              kHedgingExplains, NoMoreHedges);
    AddHedged(*table, "ServerRetryInfoDelay",
              "the same 2 s wait; hedges, not retries, in the metrics, and no "
              "retry delay",
              kHintedHedgeCounts, HedgesNotRetries);
    AddHedged(*table, "ServerPushbackPastTheCeiling",
              "the summary's explanation ends with 'no more hedges'",
              kHedgingExplains, NoMoreHedges);
    AddHedged(*table, "ThrottleRefuses",
              "the summary's explanation ends with 'no more hedges'",
              kHedgingExplains,
              HedgingWords("gave up: retry throttled (the client's retry "
                           "token bucket is at or below half), no more "
                           "hedges"));
    AddHedged(*table, "BudgetRefuses",
              "the summary's explanation ends with 'no more hedges'",
              kHedgingExplains,
              HedgingWords("gave up: retry budget spent (0 retries in the "
                           "last 10s for 1 request; it allows 0/s plus 50% "
                           "of the requests), no more hedges"));
    AddHedged(*table, "CancelDuringAWait",
              "succeeds at attempt 2, sent at once", kNoWaitToInterrupt,
              [](Outcome& o) { o = HedgedAtOnce(1, /*ok=*/true); });
    AddHedged(*table, "DeadlinePassesDuringAWait",
              "succeeds at attempt 2, sent at once", kNoWaitToInterrupt,
              [](Outcome& o) { o = HedgedAtOnce(1, /*ok=*/true); });
    AddHedged(*table, "DeadlineBeforeTheNextWait",
              "5 attempts at once (not 3 over 3 s); kExhausted as all "
              "hedges failed, not kDeadline",
              kHedgesBoundedByMaxAttempts,
              [](Outcome& o) { o = HedgedAtOnce(5, /*ok=*/false); });
    AddHedged(*table, "RetryableAfterWritesPastTheReplayBuffer",
              "no waits; events without waits; hedges, not retries, in the "
              "metrics; no retry delay",
              kHedgesGoAtOnce, HedgesAtOnce);
    AddHedged(*table, "ThrottleWaitsForRecovery",
              "stops at once, kThrottled (no wait for the backend's recovery)",
              "a refused hedge is not sent (A6); waiting for a recovery would "
              "defeat a hedge's purpose, its latency",
              [](Outcome& o) {
                o = StoppedAtOnce(StopReason::kThrottled,
                                  "gave up: retry throttled (the client's "
                                  "retry token bucket is at or below half), "
                                  "no more hedges");
              });
    AddHedged(
        *table, "ChannelDownThenReady",
        "all 5 hedges fail on the dead connection at once; kExhausted, "
        "nothing reached the server",
        "no backoff between hedges (A6), so nothing to end when the "
        "channel is ready again: a hedged call does not follow the "
        "channel (internal/entry/unary_call.h), and an outage longer than "
        "its hedges take outlasts it",
        [](Outcome& o) {
          o = HedgedAtOnce(5, /*ok=*/false);
          o.server_attempts = 0;
          ForgetRealTime(o);
        });
    for (Driver driver : {Driver::kClientStreamSync, Driver::kClientStreamAsync,
                          Driver::kBidiStreamSync, Driver::kBidiStreamAsync}) {
      table->push_back(Difference{
          driver, "RetryableAfterWritesPastTheReplayBuffer",
          "stops after attempt 1, kNotResumable, instead of retrying",
          "writes past the replay buffer (256 KiB, gRPC's own retry buffer) "
          "cannot be sent again: only a resume hook could reopen the stream, "
          "and there is none (docs/streaming.md)",
          [](Outcome& o) {
            o = StoppedAtOnce(StopReason::kNotResumable,
                              "not resumed: the stream cannot be replayed and "
                              "has no resume hook");
          }});
    }
    return table;
  }();
  return *kDifferences;
}

const Difference* FindDifference(Driver driver, const std::string& scenario) {
  for (const Difference& d : Differences()) {
    if (d.driver == driver && scenario == d.scenario) return &d;
  }
  return nullptr;
}

// --- The test.

// The observer's events of one run; observers may run on gRPC's and the
// timer's threads.
struct EventLog {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Event> events;

  RetryObserverOption::Type Observer() {
    return [this](const AttemptEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(Event{e.attempt, e.status.code(), e.final, e.wait,
                             e.wait_reason, e.stop_reason, e.hedge_loser,
                             e.elapsed, e.attempt_duration,
                             e.started_on_reconnect});
      cv.notify_all();
    };
  }
  bool WaitForFirst() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kGiveUp, [&] { return !events.empty(); });
  }
};

using ::stubkit::testing::RestartableServer;

// What depends on real time, in a run on the real clock: the durations,
// and the words the transport's failure and the summary's elapsed time
// have (the port, "1.2ms").
void ForgetRealTime(Outcome& o) {
  for (Event& e : o.events) {
    e.elapsed = nanoseconds(0);
    e.attempt_duration = nanoseconds(0);
  }
  if (o.summary) o.summary->elapsed = nanoseconds(0);
  o.metrics.latency_ms = 0;
  o.metrics.retry_delay_ms = 0;
  const size_t summary = o.message.find("[stubkit: ");
  if (summary != std::string::npos) o.message.erase(0, summary);
  const size_t over = o.message.rfind(" over ");
  if (over != std::string::npos)
    o.message.replace(over, std::string::npos, " over <real time>]");
}

class DriverParityTest : public ::testing::TestWithParam<Scenario> {
 protected:
  static void SetUpTestSuite() {
    service_ = new ScriptedStreamService;
    server_ = new RestartableServer(service_);
    channel_ = new std::shared_ptr<grpc::Channel>(stubkit::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
  }
  static void TearDownTestSuite() {
    delete channel_;
    delete server_;
    delete service_;
  }

  static Outcome Run(Driver driver, const Scenario& scenario) {
    RunContext run{std::make_shared<FakeClock>(), nullptr,
                   std::make_shared<CancellationToken>()};
    run.sleeper = std::make_shared<ParitySleeper>(run.clock, run.token);
    scenario.sleeper(*run.sleeper);
    auto metrics = std::make_shared<MetricsCollector>();
    auto events = std::make_shared<EventLog>();

    Options options =
        scenario.channel_down ? RealTimeOptions(run) : BaseOptions(run);
    options.set<MetricsOption>(metrics);
    options.set<RetryObserverOption>(events->Observer());
    if (Hedged(driver)) {
      options.set<HedgingPolicyOption>(
          HedgingPolicy().WithMaxAttempts(5).WithHedgingDelay(
              ParitySleeper::kHeld));
    }
    scenario.options(options);
    if (scenario.channel_down) {
      // Connected first, so that the stop breaks an established connection.
      service_->Reset({Ok()});
      EXPECT_TRUE(StreamServiceClient(*channel_).Get(RangeRequest()).ok());
      server_->Stop();
    }
    service_->Reset(scenario.script);
    if (scenario.cancel_before) run.token->Cancel();

    StreamServiceClient client(*channel_);
    // Each driver runs on a thread of its own, so that this one can cancel
    // an attempt in flight, whatever the driver blocks on.
    auto call = std::async(std::launch::async, [&] {
      return Call(driver, client, options, scenario.write_bytes);
    });
    if (scenario.cancel_in_attempt) {
      EXPECT_TRUE(service_->WaitForHang()) << "no attempt reached the server";
      run.token->Cancel();
    }
    if (scenario.channel_down) {
      // Attempt 1 failed on the dead connection; the server comes back.
      EXPECT_TRUE(events->WaitForFirst()) << "attempt 1 never ended";
      EXPECT_TRUE(server_->Restart()) << "the server did not come back";
    }
    if (call.wait_for(kGiveUp) != std::future_status::ready) {
      ADD_FAILURE() << "the call never returned";
      run.token->Cancel();
    }
    const absl::Status status = call.get();

    Outcome outcome;
    outcome.code = status.code();
    // The method's name differs by driver, by construction.
    outcome.message = absl::StrReplaceAll(
        status.message(), {{"StreamService.Range", "StreamService.<method>"},
                           {"StreamService.Sum", "StreamService.<method>"},
                           {"StreamService.Double", "StreamService.<method>"},
                           {"StreamService.Get", "StreamService.<method>"}});
    outcome.summary = GetRetrySummary(status);
    outcome.server_attempts = service_->attempts();
    outcome.waits = run.sleeper->waits();
    // A timer left behind would fire into a finished call.
    EXPECT_EQ(run.sleeper->CancelPending(), 0u) << "timers left pending";
    {
      std::lock_guard<std::mutex> lock(events->mu);
      outcome.events = events->events;
    }
    std::vector<MethodMetrics> snapshot = metrics->Snapshot();
    EXPECT_EQ(snapshot.size(), 1u);
    if (!snapshot.empty()) {
      const MethodMetrics& m = snapshot.front();
      outcome.metrics =
          Metrics{m.calls, m.attempts,           m.retries,       m.hedges,
                  m.stops, m.retry_delay_sum_ms, m.latency_sum_ms};
    }
    if (scenario.channel_down) ForgetRealTime(outcome);
    return outcome;
  }

  static ScriptedStreamService* service_;
  static RestartableServer* server_;
  static std::shared_ptr<grpc::Channel>* channel_;
};

ScriptedStreamService* DriverParityTest::service_ = nullptr;
RestartableServer* DriverParityTest::server_ = nullptr;
std::shared_ptr<grpc::Channel>* DriverParityTest::channel_ = nullptr;

TEST_P(DriverParityTest, EveryDriverGivesTheSameOutcome) {
  const Scenario& scenario = GetParam();
  ASSERT_TRUE(server_->ok());

  // The reference: the sync unary call, checked against the table's brief.
  const Outcome reference = Run(Driver::kSyncUnary, scenario);
  {
    SCOPED_TRACE("sync unary against the table");
    if (scenario.stop) {
      ASSERT_TRUE(reference.summary.has_value()) << reference.message;
      EXPECT_EQ(ToIdentifier(reference.summary->stop_reason),
                ToIdentifier(*scenario.stop));
      EXPECT_EQ(reference.summary->attempts, scenario.attempts);
    } else {
      EXPECT_EQ(reference.code, absl::StatusCode::kOk) << reference.message;
    }
    EXPECT_EQ(reference.metrics.attempts, scenario.attempts);
    // An attempt on a dead connection never reaches the server.
    if (!scenario.channel_down) {
      EXPECT_EQ(reference.server_attempts, scenario.attempts);
    }
    EXPECT_EQ(Ms(reference.waits), Ms(scenario.waits));
  }

  for (Driver driver : kDrivers) {
    if (driver == Driver::kSyncUnary) continue;
    SCOPED_TRACE(absl::StrCat(Name(driver), ", ", scenario.name));
    Outcome expected = reference;
    if (const Difference* difference = FindDifference(driver, scenario.name)) {
      SCOPED_TRACE(absl::StrCat("expected difference: ", difference->what, " (",
                                difference->why, ")"));
      difference->expect(expected);
      ExpectSameOutcome(Run(driver, scenario), expected);
    } else {
      ExpectSameOutcome(Run(driver, scenario), expected);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, DriverParityTest,
                         ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& info) {
                           return info.param.name;
                         });

// The throttle's waiting mode past its first poll, through every driver
// that waits in it (all but the hedged ones, which do not wait): the
// bucket refuses the retry, the call waits, the throttle releases it as a
// probe, and the retried call, or the reopened stream, succeeds. The wait
// is a random draw (the throttle's pace), so only what does not depend on
// it is compared.
class ThrottleReleaseTest : public DriverParityTest {};

TEST_F(ThrottleReleaseTest, EveryWaitingDriverIsReleasedAndSucceeds) {
  ASSERT_TRUE(server_->ok());
  const Scenario scenario =
      Make("ThrottleReleasesAProbe", {Fail(), Ok()}).With([](Options& o) {
        RetryThrottle::WaitForRecovery waiting;
        waiting.probe_interval = seconds(1);
        o.set<RetryThrottleOption>(
            std::make_shared<RetryThrottle>(RetryThrottle::Config()
                                                .WithMaxTokens(2)
                                                .WithTokenRatio(1)
                                                .WithWaitForRecovery(waiting)));
      });
  for (Driver driver : kDrivers) {
    if (Hedged(driver)) continue;
    SCOPED_TRACE(Name(driver));
    const Outcome outcome = Run(driver, scenario);
    EXPECT_EQ(outcome.code, absl::StatusCode::kOk) << outcome.message;
    EXPECT_EQ(outcome.server_attempts, 2);
    ASSERT_EQ(outcome.events.size(), 2u);
    EXPECT_EQ(outcome.events[0].wait_reason, WaitReason::kThrottle);
    EXPECT_EQ(outcome.events[1].code, absl::StatusCode::kOk);
    EXPECT_FALSE(outcome.waits.empty());  // it waited for the release
  }
}

// Every difference names a driver and a scenario of the tables.
TEST(DriverParityTableTest, EveryDifferenceNamesAScenario) {
  for (const Difference& d : Differences()) {
    bool found = false;
    for (const Scenario& s : Scenarios()) found |= s.name == d.scenario;
    EXPECT_TRUE(found) << d.scenario;
    EXPECT_NE(d.driver, Driver::kSyncUnary)
        << "the reference has no difference";
  }
}

// docs/retry-semantics.md ("Driver parity") lists every difference: a
// table row naming the driver and the scenario, and saying DEFECT where the
// reason does. (Bazel runs the test without the sources' path.)
TEST(DriverParityTableTest, TheDocsListEveryDifference) {
#ifndef STUBKIT_SOURCE_DIR
  GTEST_SKIP() << "STUBKIT_SOURCE_DIR is not defined";
#else
  std::ifstream file(std::string(STUBKIT_SOURCE_DIR) +
                     "/docs/retry-semantics.md");
  ASSERT_TRUE(file.is_open());
  std::vector<std::string> rows;
  bool in_section = false;
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Driver parity";
    if (in_section && line.rfind("| ", 0) == 0) rows.push_back(line);
  }
  for (const Difference& d : Differences()) {
    const std::string scenario = absl::StrCat("`", d.scenario, "`");
    const bool defect = absl::StartsWith(d.why, "DEFECT:");
    bool listed = false;
    for (const std::string& row : rows) {
      listed |= absl::StrContains(row, Name(d.driver)) &&
                absl::StrContains(row, scenario) &&
                absl::StrContains(row, "DEFECT") == defect;
    }
    EXPECT_TRUE(listed) << Name(d.driver) << ", " << d.scenario
                        << (defect ? ", as a DEFECT" : "");
  }
#endif
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// How long after a server restart a client or bidi stream delivers again
// (issue 40's target: within 0.5 s of the server serving again, every
// message exactly once). The server, benchmarks/stream_recovery_server.cc,
// serves stubkit.testing.StreamService in its own process on 127.0.0.1 (a
// picked port) and records in a ledger file what it received and when. A
// default generated StreamServiceClient over stubkit::CreateChannel, with
// the method's resume hook set, streams one item every 10 ms; after 20 of
// them the benchmark SIGKILLs the server, keeps it down (1.5 s, the issue's
// figure, and 8 s), and restarts it on the same port. "Serves" is the
// restarted server's own record of BuildAndStart returning (its port
// accepts from then on); clocks are CLOCK_MONOTONIC in both processes.
//
//   Client stream (Sum; sync: StreamWriter written on a thread; async:
//   AsyncSum): one call per restart. It has had no response, so stubkit
//   replays its writes (up to 256 KiB) on a new stream: recovery = the
//   restarted server read the first item of the replay - it served. Then
//   the call writes 20 more items, half-closes, and must be answered with
//   every item written exactly once (count and sum), and the answering
//   stream must have read 1..n in order. The hook (writes 1..n again)
//   runs only past 256 KiB of writes (--padding), the replay before.
//
//   Bidi stream (Double, answers each item with its double; sync: Write
//   then Read on a thread; async: AsyncDouble): one stream across all
//   restarts, killed once it delivered 20 more answers and caught up with
//   its writes. Once answered, a break is resumed only through the hook,
//   which writes the items after the last answer (stubkit never re-sends
//   writes made after the last response): recovery = the client received
//   the first answer from the restarted server - it served. At the end the
//   client must have received each item's answer exactly once, in order.
//   Items the killed server read but whose answer never arrived are read
//   again by the restarted one: that is the hook's contract, counted in
//   the table.
//
//   stream_recovery                  # the four streams, down 1.5 s and 8 s,
//                                    # 5 restarts each; a table on stdout
//   stream_recovery --down-ms 1500 --restarts 7
//   stream_recovery --no-follow      # FollowReconnectOption(false): each
//                                    # wait runs its full backoff (control)
//   stream_recovery --log            # LogLevel::kRetries to stderr, with
//                                    # the kills and restarts, timed
//   stream_recovery --padding 16384 --down-ms 1500
//                                    # 16 KiB items: the 20 written before
//                                    # a kill pass the 256 KiB replay
//                                    # buffer, and the client stream's hook
//                                    # restores them (at 8 s down the async
//                                    # queue would pass its 4 MiB bound)
//   stream_recovery --smoke          # 1 restart each, restarted at once
//
// Exit status: 0, or 1 when something failed (a stream ended, a message
// lost or delivered twice, a server that did not restart).

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "benchmarks/recovery_rounds.h"
#include "stubkit/async_streaming.h"
#include "stubkit/cancellation.h"
#include "stubkit/channel.h"
#include "stubkit/logging.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "stubkit/streaming.h"
#include "stubkit/testing/streams.grpc.pb.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/reliability/server_process.h"
#include "tests/reliability/tcp_proxy.h"

#ifndef STUBKIT_STREAM_RECOVERY_SERVER
#define STUBKIT_STREAM_RECOVERY_SERVER "stream_recovery_server"
#endif

namespace {

using Clock = std::chrono::steady_clock;
using stubkit::bench::AttemptLog;
using stubkit::bench::ExplainRound;
using stubkit::bench::Median;
using stubkit::bench::Ms;
using stubkit::bench::Round;
using stubkit::reliability::ServerProcess;
using stubkit::testing::Item;
using stubkit::testing::StreamServiceClient;
using stubkit::testing::SumResponse;

constexpr auto kPace = std::chrono::milliseconds(10);  // one item each
constexpr int kBeforeKill = 20;  // items streamed before each kill
constexpr int kAfter = 20;       // and after the first one delivered again
constexpr auto kGiveUp = std::chrono::seconds(180);

const Clock::time_point kStart = Clock::now();

double Since(Clock::time_point t) { return Ms(t - kStart); }
Clock::time_point FromNs(int64_t ns) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(ns)));
}

// Bytes of padding per item (--padding): past 256 KiB of writes a client
// stream can no longer be replayed, and its hook restores it.
int padding_bytes = 0;

Item MakeItem(int value) {
  Item item;
  item.set_value(value);
  if (padding_bytes > 0) item.set_padding(std::string(padding_bytes, 'x'));
  return item;
}

// kRetries lines, each with the time since the program started, so that
// they read against the kills and restarts printed with the same clock.
class TimedSink final : public stubkit::LogSink {
 public:
  void Write(absl::string_view line) override {
    std::fprintf(stderr, "[%8.1f ms] %.*s\n", Since(Clock::now()),
                 static_cast<int>(line.size()), line.data());
  }
};

// The server's ledger (see stream_recovery_server.cc), read from a byte
// offset: the records of one round or one row.
struct Record {
  char kind;
  std::string stream;
  int64_t a = 0, b = 0;  // C/B: value; E: count, sum
  int64_t ns = 0;
};

std::vector<Record> ReadLedger(const std::string& path, std::streamoff from) {
  std::vector<Record> records;
  std::ifstream in(path);
  in.seekg(from);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    Record r;
    fields >> r.kind;
    switch (r.kind) {
      case 'S':
        fields >> r.stream >> r.ns;
        break;
      case 'C':
      case 'B':
        fields >> r.stream >> r.a >> r.ns;
        break;
      case 'E':
        fields >> r.stream >> r.a >> r.b >> r.ns;
        break;
      default:
        continue;
    }
    if (fields) records.push_back(r);
  }
  return records;
}

std::streamoff LedgerSize(const std::string& path) {
  std::ifstream in(path, std::ios::ate);
  return in ? static_cast<std::streamoff>(in.tellg()) : 0;
}

struct Result {
  std::string kind;
  int down_ms = 0;
  std::vector<Round> rounds;
  int messages = 0;  // delivered and checked, each exactly once
  int reread = 0;    // items a killed server had read, read again
  int hook_runs = 0;
  int streams = 0;    // streams opened (attempts)
  std::string error;  // empty when everything was delivered exactly once
};

struct Settings {
  std::string ledger;
  int restarts = 5;
  bool follow = true;
  bool log = false;
};

// The server, killed and restarted; when the last restart served.
class Server {
 public:
  Server(const std::string& binary, int port, const std::string& ledger)
      : process_(binary, port, ledger), ledger_(ledger) {}
  bool Start() { return process_.Start(); }
  bool running() const { return process_.running(); }
  std::string address() const {
    return "127.0.0.1:" + std::to_string(process_.port());
  }
  // SIGKILL, `down`, restart; false when it did not restart. Sets `served`
  // from the restarted server's own record.
  bool Bounce(std::chrono::milliseconds down, Clock::time_point* killed,
              Clock::time_point* served) {
    const std::streamoff from = LedgerSize(ledger_);
    *killed = Clock::now();
    process_.Kill();
    std::fprintf(stderr, "[%8.1f ms] stream_recovery: server killed\n",
                 Since(*killed));
    std::this_thread::sleep_for(down);
    if (!process_.Start()) return false;
    for (const Record& r : ReadLedger(ledger_, from)) {
      if (r.kind == 'S') *served = FromNs(r.ns);
    }
    std::fprintf(stderr, "[%8.1f ms] stream_recovery: server serves again\n",
                 Since(*served));
    return true;
  }

 private:
  ServerProcess process_;
  std::string ledger_;
};

// Waits until `done` holds (polled every millisecond) or `timeout`.
bool WaitUntil(const std::function<bool()>& done, Clock::duration timeout) {
  const Clock::time_point give_up = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

stubkit::Options ClientOptions(const Settings& settings,
                               std::shared_ptr<AttemptLog> attempts) {
  stubkit::Options options =
      stubkit::Options{}
          .set<stubkit::RetryObserverOption>(
              [attempts](const stubkit::AttemptEvent& e) { attempts->Add(e); })
          .set<stubkit::FollowReconnectOption>(settings.follow);
  if (settings.log) {
    options.set<stubkit::LogLevelOption>(stubkit::LogLevel::kRetries)
        .set<stubkit::LogSinkOption>(std::make_shared<TimedSink>());
  }
  return options;
}

std::string KindName(const char* stream, bool async, bool follow) {
  std::string kind = std::string(async ? "async " : "sync ") + stream;
  if (!follow) kind += ", FollowReconnectOption(false)";
  if (padding_bytes > 0) {
    kind += ", " + std::to_string(padding_bytes) + "-byte items";
  }
  return kind;
}

// Waits for a stream that was told to stop to end; cancels it after 5 s
// (a failed run's stream may still be waiting for a server).
void EndSoon(absl::Notification& done, stubkit::CancellationToken& token) {
  if (!done.WaitForNotificationWithTimeout(absl::Seconds(5))) token.Cancel();
  done.WaitForNotification();
}

// --- Client stream: one Sum call per restart. ---

// One Sum call that streams an item every kPace until told to stop, then
// half-closes; sync on a thread of its own, or async.
class SumCall {
 public:
  SumCall(StreamServiceClient& client, bool async) {
    // Past 256 KiB of writes (--padding), the hook restores the server's
    // view: every item written so far, on the new stream.
    stubkit::Options call =
        stubkit::Options{}
            .set<stubkit::CancellationOption>(token_)
            .set<StreamServiceClient::SumResumeOption>(
                [this](const SumResponse*,
                       stubkit::ResumeWriter<Item>& writer) {
                  absl::MutexLock lock(&mu_);
                  ++hook_runs_;
                  for (int i = 1; i <= written_.load(); ++i) {
                    writer.Write(MakeItem(i));
                  }
                  return true;
                });
    if (async) {
      stubkit::AsyncStreamWriter<Item> writer = client.AsyncSum(
          [this](absl::StatusOr<SumResponse> response) {
            response_ = std::move(response);
            done_.Notify();
          },
          call);
      thread_ = std::thread([this, writer]() mutable {
        while (!stop_.load()) {
          {
            // The hook reads `written_`: it and the write it counts go
            // together.
            absl::MutexLock lock(&mu_);
            const int next = written_.load() + 1;
            written_ = next;
            if (!writer.Write(MakeItem(next))) break;
          }
          std::this_thread::sleep_for(kPace);
        }
        writer.WritesDone();
      });
      return;
    }
    thread_ = std::thread([this, &client, call] {
      stubkit::StreamWriter<Item, SumResponse> writer = client.Sum(call);
      while (!stop_.load()) {
        const int next = written_.load() + 1;
        written_ = next;
        if (!writer.Write(MakeItem(next))) break;
        std::this_thread::sleep_for(kPace);
      }
      writer.WritesDone();
      response_ = writer.Finish();
      done_.Notify();
    });
  }
  ~SumCall() {
    stop_ = true;
    EndSoon(done_, *token_);
    thread_.join();
  }
  int written() const { return written_.load(); }
  // Half-closes; the response (or the error) once the call ended.
  absl::StatusOr<SumResponse> Finish() {
    stop_ = true;
    if (!done_.WaitForNotificationWithTimeout(absl::FromChrono(kGiveUp))) {
      return absl::DeadlineExceededError("no answer within 180 s");
    }
    return response_;
  }
  int hook_runs() const { return hook_runs_.load(); }

 private:
  std::shared_ptr<stubkit::CancellationToken> token_ =
      std::make_shared<stubkit::CancellationToken>();
  absl::Mutex mu_;
  std::atomic<int> written_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> hook_runs_{0};
  absl::Notification done_;
  absl::StatusOr<SumResponse> response_;
  std::thread thread_;
};

Result MeasureClientStream(Server& server, const Settings& settings, bool async,
                           std::chrono::milliseconds down) {
  Result result;
  result.kind = KindName("client stream (Sum)", async, settings.follow);
  result.down_ms = static_cast<int>(down.count());
  auto attempts = std::make_shared<AttemptLog>();
  StreamServiceClient client(
      stubkit::CreateChannel(server.address(),
                             grpc::InsecureChannelCredentials()),
      ClientOptions(settings, attempts));
  // Warm: the channel is connected before the first kill.
  if (absl::Status s = client.Get(stubkit::testing::RangeRequest()).status();
      !s.ok()) {
    result.error = result.kind + ": warm-up Get failed: " + s.ToString();
    return result;
  }
  for (int r = 0; r < settings.restarts; ++r) {
    const std::streamoff from = LedgerSize(settings.ledger);
    auto fail = [&](const std::string& message) {
      result.error =
          result.kind + ", restart " + std::to_string(r + 1) + ": " + message;
      return result;
    };
    std::optional<SumCall> call;
    call.emplace(client, async);
    if (!WaitUntil([&] { return call->written() >= kBeforeKill; }, kGiveUp)) {
      return fail("the stream did not start");
    }
    attempts->Take();
    Clock::time_point killed, served;
    if (!server.Bounce(down, &killed, &served)) {
      return fail("the server did not restart");
    }
    // The restarted server reads the replay's first item.
    int64_t first_ns = 0;
    if (!WaitUntil(
            [&] {
              bool restarted = false;
              for (const Record& rec : ReadLedger(settings.ledger, from)) {
                if (rec.kind == 'S') restarted = true;
                if (restarted && rec.kind == 'C') {
                  first_ns = rec.ns;
                  return true;
                }
              }
              return false;
            },
            kGiveUp)) {
      return fail("the restarted server read nothing within 180 s");
    }
    const int more = call->written() + kAfter;
    if (!WaitUntil([&] { return call->written() >= more; }, kGiveUp)) {
      return fail("the stream did not go on");
    }
    const absl::StatusOr<SumResponse> response = call->Finish();
    const int n = call->written();
    result.hook_runs += call->hook_runs();
    call.reset();
    if (!response.ok()) return fail("Sum: " + response.status().ToString());
    // Exactly once: the answer counts each item written once, and the
    // answering stream read 1..n in order.
    const int64_t want_sum = static_cast<int64_t>(n) * (n + 1) / 2;
    if (response->count() != n || response->sum() != want_sum) {
      return fail("answered count " + std::to_string(response->count()) +
                  " sum " + std::to_string(response->sum()) + " for " +
                  std::to_string(n) + " items written");
    }
    const std::vector<Record> records = ReadLedger(settings.ledger, from);
    std::string answered;
    std::set<std::string> streams;
    for (const Record& rec : records) {
      if (rec.kind == 'E') answered = rec.stream;
      if (rec.kind == 'C') streams.insert(rec.stream);
    }
    std::vector<int> read;
    for (const Record& rec : records) {
      if (rec.kind != 'C') continue;
      if (rec.stream == answered) {
        read.push_back(static_cast<int>(rec.a));
      } else {
        ++result.reread;  // a killed attempt's: replayed on the next one
      }
    }
    for (int i = 0; i < static_cast<int>(read.size()); ++i) {
      if (read[i] != i + 1) {
        return fail("the answering stream read item " +
                    std::to_string(read[i]) + " in place " +
                    std::to_string(i + 1));
      }
    }
    if (static_cast<int>(read.size()) != n) {
      return fail("the answering stream read " + std::to_string(read.size()) +
                  " items of " + std::to_string(n));
    }
    result.messages += n;
    result.streams += static_cast<int>(streams.size());
    Round round;
    round.down_ms = Ms(served - killed);
    round.recovery_ms = Ms(FromNs(first_ns) - served);
    ExplainRound(attempts->Take(), served, round);
    result.rounds.push_back(round);
    std::fprintf(
        stderr,
        "stream_recovery: %s, down %d ms, restart %d: served %.0f ms "
        "after the kill; the restarted server read its first item %.1f ms "
        "after that (backoff still to wait then: %.0f ms; attempts failed "
        "after it served: %d)\n",
        result.kind.c_str(), result.down_ms, r + 1, round.down_ms,
        round.recovery_ms, round.backoff_left_ms, round.failed_after_serving);
  }
  return result;
}

// --- Bidi stream: one Double stream across all restarts. ---

// What the stream delivered: each answer's item and when it arrived (on
// the thread that delivered it).
class Answers {
 public:
  void Add(const Item& item) {
    const Clock::time_point now = Clock::now();
    absl::MutexLock lock(&mu_);
    items_.push_back(item.value() / 2);
    arrived_.push_back(now);
  }
  int size() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(items_.size());
  }
  // When the first answer after `t` arrived, if one did.
  bool FirstAfter(Clock::time_point t, Clock::time_point* at) const {
    absl::MutexLock lock(&mu_);
    for (Clock::time_point a : arrived_) {
      if (a > t) {
        *at = a;
        return true;
      }
    }
    return false;
  }
  std::vector<int> items() const {
    absl::MutexLock lock(&mu_);
    return items_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<int> items_ ABSL_GUARDED_BY(mu_);
  std::vector<Clock::time_point> arrived_ ABSL_GUARDED_BY(mu_);
};

// A Double stream that writes an item every kPace (sync: and reads its
// answer before the next) until stopped, resumed by the hook.
class DoubleStream {
 public:
  DoubleStream(StreamServiceClient& client, bool async) {
    // The items after the last answer: those the killed server never
    // answered, and (async) those still queued, which stubkit drops with
    // the broken stream.
    stubkit::Options call =
        stubkit::Options{}
            .set<stubkit::CancellationOption>(token_)
            .set<StreamServiceClient::DoubleResumeOption>(
                [this](const Item* last, stubkit::ResumeWriter<Item>& writer) {
                  absl::MutexLock lock(&mu_);
                  ++hook_runs_;
                  for (int i = last == nullptr ? 1 : last->value() / 2 + 1;
                       i <= written_; ++i) {
                    writer.Write(MakeItem(i));
                  }
                  return true;
                });
    if (async) {
      stubkit::AsyncStreamWriter<Item> writer =
          client.AsyncDouble([this](const Item& item) { answers_.Add(item); },
                             [this](absl::Status status) {
                               status_ = std::move(status);
                               done_.Notify();
                             },
                             call);
      thread_ = std::thread([this, writer]() mutable {
        while (!stop_.load()) {
          {
            absl::MutexLock lock(&mu_);
            ++written_;
            if (!writer.Write(MakeItem(written_))) break;
          }
          std::this_thread::sleep_for(kPace);
        }
        writer.WritesDone();
      });
      return;
    }
    thread_ = std::thread([this, &client, call] {
      stubkit::StreamReaderWriter<Item, Item> stream = client.Double(call);
      while (!stop_.load()) {
        int next;
        {
          absl::MutexLock lock(&mu_);
          next = ++written_;
        }
        Item answer;
        if (!stream.Write(MakeItem(next)) || !stream.Read(&answer)) break;
        answers_.Add(answer);
        std::this_thread::sleep_for(kPace);
      }
      stream.WritesDone();
      status_ = stream.Finish();
      done_.Notify();
    });
  }
  ~DoubleStream() {
    stop_ = true;
    EndSoon(done_, *token_);
    if (thread_.joinable()) thread_.join();
  }
  // Half-closes; the stream's status once it ended.
  absl::Status Finish() {
    stop_ = true;
    if (!done_.WaitForNotificationWithTimeout(absl::FromChrono(kGiveUp))) {
      return absl::DeadlineExceededError("the stream did not end in 180 s");
    }
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  const Answers& answers() const { return answers_; }
  int written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }
  int hook_runs() {
    absl::MutexLock lock(&mu_);
    return hook_runs_;
  }

 private:
  std::shared_ptr<stubkit::CancellationToken> token_ =
      std::make_shared<stubkit::CancellationToken>();
  absl::Mutex mu_;
  int written_ ABSL_GUARDED_BY(mu_) = 0;
  int hook_runs_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> stop_{false};
  Answers answers_;
  absl::Notification done_;
  absl::Status status_;
  std::thread thread_;
};

Result MeasureBidiStream(Server& server, const Settings& settings, bool async,
                         std::chrono::milliseconds down) {
  Result result;
  result.kind = KindName("bidi stream (Double)", async, settings.follow);
  result.down_ms = static_cast<int>(down.count());
  auto attempts = std::make_shared<AttemptLog>();
  StreamServiceClient client(
      stubkit::CreateChannel(server.address(),
                             grpc::InsecureChannelCredentials()),
      ClientOptions(settings, attempts));
  const std::streamoff from = LedgerSize(settings.ledger);
  DoubleStream stream(client, async);
  auto fail = [&](const std::string& message) {
    result.error = result.kind + ": " + message;
    return result;
  };
  for (int r = 0; r < settings.restarts; ++r) {
    // 20 answers more, and caught up: after a long outage the async
    // stream sends its queue in a burst, and a kill in it would find
    // hundreds of items read and not yet answered (the hook's to re-send).
    const int before = stream.answers().size() + kBeforeKill;
    if (!WaitUntil(
            [&] {
              const int answered = stream.answers().size();
              return answered >= before && answered >= stream.written() - 1;
            },
            kGiveUp)) {
      return fail("the stream did not deliver before restart " +
                  std::to_string(r + 1));
    }
    attempts->Take();
    Clock::time_point killed, served, at;
    if (!server.Bounce(down, &killed, &served)) {
      return fail("the server did not restart");
    }
    if (!WaitUntil([&] { return stream.answers().FirstAfter(served, &at); },
                   kGiveUp)) {
      return fail("no answer within 180 s of restart " + std::to_string(r + 1));
    }
    Round round;
    round.down_ms = Ms(served - killed);
    round.recovery_ms = Ms(at - served);
    ExplainRound(attempts->Take(), served, round);
    result.rounds.push_back(round);
    std::fprintf(stderr,
                 "stream_recovery: %s, down %d ms, restart %d: served %.0f ms "
                 "after the kill; the next answer arrived %.1f ms after that "
                 "(backoff still to wait then: %.0f ms; attempts failed after "
                 "it served: %d)\n",
                 result.kind.c_str(), result.down_ms, r + 1, round.down_ms,
                 round.recovery_ms, round.backoff_left_ms,
                 round.failed_after_serving);
  }
  const int last = stream.answers().size() + kAfter;
  WaitUntil([&] { return stream.answers().size() >= last; }, kGiveUp);
  const absl::Status status = stream.Finish();
  if (!status.ok()) return fail("Double: " + status.ToString());
  result.hook_runs = stream.hook_runs();
  // Exactly once: the answers are 1..n, in order, n the items written.
  const std::vector<int> items = stream.answers().items();
  const int n = stream.written();
  for (int i = 0; i < static_cast<int>(items.size()); ++i) {
    if (items[i] != i + 1) {
      return fail("answer " + std::to_string(i + 1) + " was for item " +
                  std::to_string(items[i]));
    }
  }
  if (static_cast<int>(items.size()) != n) {
    return fail(std::to_string(items.size()) + " answers for " +
                std::to_string(n) + " items written");
  }
  result.messages = n;
  // The server side: each stream read consecutive items; an item read by
  // two streams was read by a killed server that never answered it.
  std::map<std::string, std::vector<int>> by_stream;
  std::map<int, int> reads;
  for (const Record& rec : ReadLedger(settings.ledger, from)) {
    if (rec.kind != 'B') continue;
    by_stream[rec.stream].push_back(static_cast<int>(rec.a));
    ++reads[static_cast<int>(rec.a)];
  }
  for (const auto& [id, values] : by_stream) {
    for (size_t i = 1; i < values.size(); ++i) {
      if (values[i] != values[i - 1] + 1) {
        return fail("server stream " + id + " read " +
                    std::to_string(values[i]) + " after " +
                    std::to_string(values[i - 1]));
      }
    }
  }
  for (int i = 1; i <= n; ++i) {
    if (reads[i] == 0) {
      return fail("no server read item " + std::to_string(i));
    }
    result.reread += reads[i] - 1;
  }
  result.streams = static_cast<int>(by_stream.size());
  return result;
}

void PrintTable(const std::vector<Result>& results) {
  std::printf(
      "| stream | server kept down | serves again after the kill (median) | "
      "first message after it serves: median | max | backoff still to "
      "wait when it served (median) | attempts failed after it served (all "
      "restarts) | messages, each exactly once | read again after a kill | "
      "hook runs |\n");
  std::printf(
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "|\n");
  for (const Result& result : results) {
    std::vector<double> down, recovery, backoff_left;
    int failed_after_serving = 0;
    for (const Round& round : result.rounds) {
      down.push_back(round.down_ms);
      recovery.push_back(round.recovery_ms);
      backoff_left.push_back(round.backoff_left_ms);
      failed_after_serving += round.failed_after_serving;
    }
    std::printf(
        "| %s | %d ms | %.0f ms | %.1f ms | %.1f ms | %.0f ms | %d | %d | %d "
        "| %d |\n",
        result.kind.c_str(), result.down_ms, Median(down), Median(recovery),
        *std::max_element(recovery.begin(), recovery.end()),
        Median(backoff_left), failed_after_serving, result.messages,
        result.reread, result.hook_runs);
  }
}

int Usage() {
  std::fprintf(stderr,
               "usage: stream_recovery [--restarts N] [--down-ms M] "
               "[--no-follow] [--log] [--padding BYTES] [--server PATH] "
               "[--smoke]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  std::vector<int> downs = {1500, 8000};
  std::string binary = STUBKIT_STREAM_RECOVERY_SERVER;
  for (int i = 1; i < argc; ++i) {
    auto number = [&](int* out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 0 || v > 1000000) return false;
      *out = static_cast<int>(v);
      return true;
    };
    if (std::strcmp(argv[i], "--smoke") == 0) {
      settings.restarts = 1;
      downs = {0};
    } else if (std::strcmp(argv[i], "--restarts") == 0) {
      if (!number(&settings.restarts) || settings.restarts < 1) {
        return Usage();
      }
    } else if (std::strcmp(argv[i], "--down-ms") == 0) {
      int down_ms = 0;
      if (!number(&down_ms)) return Usage();
      downs = {down_ms};
    } else if (std::strcmp(argv[i], "--no-follow") == 0) {
      settings.follow = false;
    } else if (std::strcmp(argv[i], "--log") == 0) {
      settings.log = true;
    } else if (std::strcmp(argv[i], "--padding") == 0) {
      if (!number(&padding_bytes) || padding_bytes > (1 << 20)) {
        return Usage();
      }
    } else if (std::strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
      binary = argv[++i];
    } else {
      return Usage();
    }
  }
  const int port = stubkit::reliability::PickFreePort();
  char dir[] = "/tmp/stream_recovery.XXXXXX";
  if (port <= 0 || mkdtemp(dir) == nullptr) {
    std::fprintf(stderr, "stream_recovery: no free port or temp directory\n");
    return 1;
  }
  settings.ledger = std::string(dir) + "/ledger";
  Server server(binary, port, settings.ledger);
  if (!server.Start()) {
    std::fprintf(stderr, "stream_recovery: %s did not start on port %d\n",
                 binary.c_str(), port);
    std::remove(settings.ledger.c_str());
    rmdir(dir);
    return 1;
  }
  std::vector<Result> results;
  bool ok = true;
  for (int down_ms : downs) {
    const auto down = std::chrono::milliseconds(down_ms);
    for (int row = 0; row < 4 && ok; ++row) {
      const bool async = row % 2 == 1;
      results.push_back(row < 2
                            ? MeasureClientStream(server, settings, async, down)
                            : MeasureBidiStream(server, settings, async, down));
      if (!results.back().error.empty()) {
        std::fprintf(stderr, "stream_recovery: %s\n",
                     results.back().error.c_str());
        ok = false;
      } else if (!server.running() && !server.Start()) {
        std::fprintf(stderr, "stream_recovery: the server did not restart\n");
        ok = false;
      }
    }
  }
  if (ok) {
    std::printf(
        "Client and bidi streams across SIGKILL + restart of their server, "
        "default stubkit clients with the resume hook; restarts per row: "
        "%d\n\n",
        settings.restarts);
    PrintTable(results);
  }
  std::remove(settings.ledger.c_str());
  rmdir(dir);
  return ok ? 0 : 1;
}

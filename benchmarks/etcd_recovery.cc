// Copyright 2026 The stubkit Authors.
//
// How long after a server restart a stubkit client gets through again
// (issue 30 item 2). Against Debian's etcd (scripts/install-etcd.sh) on
// 127.0.0.1 (tests/etcd/etcd_process.h), for the default sync client and the
// default async client, each restart:
//
//   1. SIGKILL etcd, and at once start one Put on the client (sync: on a
//      thread; async: AsyncPut with a callback). Its attempts fail and it
//      retries under the default policy and backoff.
//   2. Restart etcd on the same ports and data directory; "serving" is the
//      first raw KV.Range that succeeds on a fresh channel with its own
//      subchannel pool (no state shared with the client), polled every 10 ms.
//   3. Recovery = when the Put returned OK - when etcd served. (It can be a
//      few ms below zero: the Put may get through before the next probe.)
//
// The clients are stubkit's defaults (stubkit::CreateChannel, default
// Options) except that Put is made idempotent with IdempotencyMapOption, as
// a user writing unique keys would: etcd's proto marks nothing idempotent,
// and a non-idempotent Put is not retried at all. One client per kind, kept
// across its restarts, as an application would.
//
//   etcd_recovery                 # sync and async; etcd restarted at once,
//                                 # after 3 s and after 8 s down; 3 restarts
//                                 # each; a markdown table on stdout
//   etcd_recovery --restarts 7
//   etcd_recovery --down-ms 2000  # only: keep etcd down 2 s, then restart
//   etcd_recovery --smoke         # 1 restart per client, restarted at once
//
// A RetryObserverOption (it only watches) explains each figure: the backoff
// wait still ahead when etcd served (the next attempt waits it out although
// etcd serves), and how many attempts failed after etcd served (the channel
// still reporting the old connection failure).
//
// Streams (issue 40), with --watch or in the default run: a default Watch
// client (sync: Watch() read on a thread; async: AsyncWatch) with the
// resume hook of docs/streaming.md (create from the last revision + 1) is
// delivering when etcd is killed. etcd restarts after the same downs
// (1.5 s in the figure: --down-ms 1500); as soon as it serves, a
// raw Put on a fresh channel writes one key, and recovery = when the watch
// delivered that key - when etcd served. Every event must arrive exactly
// once, in revision order, across all restarts.
//
//   etcd_recovery --watch --down-ms 1500   # Watch rows only
//   etcd_recovery --watch --no-follow      # the same, FollowReconnectOption
//                                          # off: each wait runs its full
//                                          # backoff (the control)
//
// Exit status: 0, 1 when something failed (a Put, a restart, an event lost
// or delivered twice), 77 when etcd is not installed.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "benchmarks/recovery_rounds.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/etcdserver/etcdserverpb/rpc.stubkit.h"
#include "stubkit/cancellation.h"
#include "stubkit/channel.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "stubkit/streaming.h"
#include "tests/etcd/etcd_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using stubkit::bench::AttemptLog;
using stubkit::bench::ExplainRound;
using stubkit::bench::Median;
using stubkit::bench::Ms;
using stubkit::bench::Round;
using stubkit::etcd::EtcdProcess;

struct Result {
  std::string kind;
  int down_ms = 0;
  std::vector<Round> rounds;
  std::string error;  // empty when every round succeeded
};

// One Put that started when etcd was killed: returns when it ends.
class PendingPut {
 public:
  PendingPut(etcdserverpb::KVClient& client, bool async, std::string key,
             std::shared_ptr<stubkit::CancellationToken> token) {
    etcdserverpb::PutRequest request;
    request.set_key(std::move(key));
    request.set_value("v");
    stubkit::Options call =
        stubkit::Options{}.set<stubkit::CancellationOption>(token);
    if (async) {
      client.AsyncPut(
          request,
          [this](absl::StatusOr<etcdserverpb::PutResponse> r) {
            end_ = Clock::now();
            status_ = r.status();
            done_.Notify();
          },
          call);
    } else {
      thread_ = std::thread([this, &client, request, call] {
        absl::StatusOr<etcdserverpb::PutResponse> r = client.Put(request, call);
        end_ = Clock::now();
        status_ = r.status();
        done_.Notify();
      });
    }
  }
  ~PendingPut() {
    done_.WaitForNotification();
    if (thread_.joinable()) thread_.join();
  }
  bool WaitFor(Clock::duration timeout) {
    return done_.WaitForNotificationWithTimeout(absl::FromChrono(timeout));
  }
  Clock::time_point end() const { return end_; }
  const absl::Status& status() const { return status_; }

 private:
  absl::Notification done_;
  Clock::time_point end_;
  absl::Status status_;
  std::thread thread_;
};

Result Measure(EtcdProcess& etcd, bool async, int restarts,
               std::chrono::milliseconds down) {
  Result result;
  result.kind = async ? "async" : "sync";
  result.down_ms = static_cast<int>(down.count());
  auto log = std::make_shared<AttemptLog>();
  etcdserverpb::KVClient client(
      stubkit::CreateChannel(etcd.address(),
                             grpc::InsecureChannelCredentials()),
      stubkit::Options{}
          .set<stubkit::IdempotencyMapOption>(
              {{"etcdserverpb.KV.Put", stubkit::Idempotency::kIdempotent}})
          .set<stubkit::RetryObserverOption>(
              [log](const stubkit::AttemptEvent& e) { log->Add(e); }));
  auto token = std::make_shared<stubkit::CancellationToken>();
  auto fail = [&](std::string message) {
    result.error = result.kind + ": " + message;
    token->Cancel();
    return result;
  };
  // Warm: the channel is connected before the first kill.
  etcdserverpb::PutRequest warm;
  warm.set_key("stubkit/recovery/warm");
  if (absl::Status s = client.Put(warm).status(); !s.ok()) {
    return fail("warm-up Put failed: " + s.ToString());
  }
  for (int r = 0; r < restarts; ++r) {
    log->Take();
    etcd.Kill();
    PendingPut put(client, async,
                   "stubkit/recovery/" + result.kind + "/" + std::to_string(r),
                   token);
    std::this_thread::sleep_for(down);
    if (!etcd.Start()) return fail(etcd.error());
    if (!put.WaitFor(std::chrono::seconds(180))) {
      return fail("the Put did not end within 180 s of the restart");
    }
    if (!put.status().ok()) return fail("Put: " + put.status().ToString());
    Round round;
    round.down_ms = Ms(etcd.served_at() - etcd.killed_at());
    round.recovery_ms = Ms(put.end() - etcd.served_at());
    ExplainRound(log->Take(), etcd.served_at(), round);
    result.rounds.push_back(round);
    std::fprintf(stderr,
                 "etcd_recovery: %s, down %d ms, restart %d: etcd served "
                 "%.0f ms after the kill, the Put got through %.0f ms after "
                 "that (backoff still to wait then: %.0f ms; attempts failed "
                 "after it served: %d)\n",
                 result.kind.c_str(), result.down_ms, r + 1, round.down_ms,
                 round.recovery_ms, round.backoff_left_ms,
                 round.failed_after_serving);
    // Settle: the next round starts from a connected, idle client.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return result;
}

// What a Watch delivered: each event's key and when it arrived (on the
// thread that delivered it), and the revision the resume hook starts from.
class WatchLog {
 public:
  void Add(const etcdserverpb::WatchResponse& response) {
    const Clock::time_point now = Clock::now();
    absl::MutexLock lock(&mu_);
    if (response.created()) created_ = true;
    for (const auto& event : response.events()) {
      keys_.push_back(event.kv().key());
      arrived_.push_back(now);
      next_ = std::max(next_, event.kv().mod_revision() + 1);
    }
  }
  int64_t next() const {
    absl::MutexLock lock(&mu_);
    return next_;
  }
  // Whether etcd confirmed the watch (a response with `created`) within
  // `timeout`: a key written before that, the watch starting from "now",
  // may never be delivered.
  bool WaitCreated(absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&created_), timeout);
  }
  // When `key` arrived, polled every millisecond (the arrival time is the
  // delivering thread's, so the poll does not blur it); false on timeout.
  bool WaitFor(const std::string& key, Clock::duration timeout,
               Clock::time_point* at) const {
    const Clock::time_point give_up = Clock::now() + timeout;
    while (Clock::now() < give_up) {
      {
        absl::MutexLock lock(&mu_);
        for (size_t i = 0; i < keys_.size(); ++i) {
          if (keys_[i] == key) {
            *at = arrived_[i];
            return true;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  std::vector<std::string> keys() const {
    absl::MutexLock lock(&mu_);
    return keys_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> keys_ ABSL_GUARDED_BY(mu_);
  std::vector<Clock::time_point> arrived_ ABSL_GUARDED_BY(mu_);
  int64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  bool created_ ABSL_GUARDED_BY(mu_) = false;
};

// As in examples/docs/streaming_watch.cc: every key under `prefix` from
// revision `start` (0: from now).
etcdserverpb::WatchRequest WatchFrom(const std::string& prefix, int64_t start) {
  etcdserverpb::WatchRequest request;
  auto& create = *request.mutable_create_request();
  create.set_key(prefix);
  std::string end = prefix;
  ++end.back();
  create.set_range_end(end);
  create.set_start_revision(start);
  return request;
}

// One Put through a raw gRPC stub on a fresh channel with its own
// subchannel pool, so that it shares no connection with the watch's.
absl::Status RawPut(const std::string& address, const std::string& key) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = etcdserverpb::KV::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value("v");
  etcdserverpb::PutResponse response;
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  // gRPC takes deadlines on the system clock only.
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  grpc::Status status = stub->Put(&context, request, &response);
  return status.ok() ? absl::OkStatus()
                     : absl::UnavailableError(status.error_message());
}

// A default Watch client with the resume hook, sync or async, delivering
// into `log` until `Stop`.
class RunningWatch {
 public:
  RunningWatch(etcdserverpb::WatchClient& client, bool async,
               const std::string& prefix, WatchLog& log)
      : log_(log) {
    if (async) {
      writer_.emplace(client.AsyncWatch(
          [this](const etcdserverpb::WatchResponse& r) { log_.Add(r); },
          [this](absl::Status status) {
            status_ = std::move(status);
            done_.Notify();
          }));
      writer_->Write(WatchFrom(prefix, 0));
      return;
    }
    stream_.emplace(client.Watch());
    stream_->Write(WatchFrom(prefix, 0));
    thread_ = std::thread([this] {
      etcdserverpb::WatchResponse response;
      while (stream_->Read(&response)) log_.Add(response);
      status_ = stream_->Finish();
      done_.Notify();
    });
  }
  // Cancels the watch; its status (CANCELLED when it was still running).
  absl::Status Stop() {
    if (writer_) writer_->Cancel();
    if (stream_) stream_->Cancel();
    done_.WaitForNotification();
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  WatchLog& log_;
  std::optional<stubkit::AsyncStreamWriter<etcdserverpb::WatchRequest>> writer_;
  std::optional<stubkit::StreamReaderWriter<etcdserverpb::WatchRequest,
                                            etcdserverpb::WatchResponse>>
      stream_;
  std::thread thread_;
  absl::Notification done_;
  absl::Status status_;
};

// Each restart: a key the watch delivers before the kill ("a<r>"), then one
// written as soon as etcd serves again ("b<r>"), whose delivery is timed.
Result MeasureWatch(EtcdProcess& etcd, bool async, int restarts,
                    std::chrono::milliseconds down, bool follow) {
  Result result;
  result.kind = async ? "async Watch" : "sync Watch";
  if (!follow) result.kind += ", FollowReconnectOption(false)";
  result.down_ms = static_cast<int>(down.count());
  const std::string prefix = "stubkit/watch-recovery/" +
                             std::string(async ? "async/" : "sync/") +
                             std::to_string(down.count()) + "/";
  auto attempts = std::make_shared<AttemptLog>();
  WatchLog log;
  etcdserverpb::WatchClient client(
      stubkit::CreateChannel(etcd.address(),
                             grpc::InsecureChannelCredentials()),
      stubkit::Options{}
          .set<etcdserverpb::WatchClient::WatchResumeOption>(
              [&log, prefix](
                  const etcdserverpb::WatchResponse* /*last*/,
                  stubkit::ResumeWriter<etcdserverpb::WatchRequest>& writer) {
                writer.Write(WatchFrom(prefix, log.next()));
                return true;
              })
          .set<stubkit::RetryObserverOption>(
              [attempts](const stubkit::AttemptEvent& e) { attempts->Add(e); })
          .set<stubkit::FollowReconnectOption>(follow));
  RunningWatch watch(client, async, prefix, log);
  std::vector<std::string> expected;
  auto fail = [&](std::string message) {
    result.error = result.kind + ": " + message;
    watch.Stop().IgnoreError();  // the error above says what failed
    return result;
  };
  // The first key must not be written before etcd created the watch.
  if (!log.WaitCreated(absl::Seconds(30))) {
    return fail("etcd did not confirm the watch");
  }
  for (int r = 0; r < restarts; ++r) {
    // The watch is established and has delivered: a resume needs the hook.
    const std::string before = prefix + "a" + std::to_string(r);
    if (absl::Status s = RawPut(etcd.address(), before); !s.ok()) {
      return fail("Put before the kill: " + s.ToString());
    }
    expected.push_back(before);
    Clock::time_point at;
    if (!log.WaitFor(before, std::chrono::seconds(30), &at)) {
      return fail("the watch did not deliver " + before);
    }
    attempts->Take();
    etcd.Kill();
    std::this_thread::sleep_for(down);
    if (!etcd.Start()) return fail(etcd.error());
    const std::string after = prefix + "b" + std::to_string(r);
    if (absl::Status s = RawPut(etcd.address(), after); !s.ok()) {
      return fail("Put after the restart: " + s.ToString());
    }
    expected.push_back(after);
    if (!log.WaitFor(after, std::chrono::seconds(180), &at)) {
      return fail("the watch did not deliver " + after +
                  " within 180 s of the restart");
    }
    Round round;
    round.down_ms = Ms(etcd.served_at() - etcd.killed_at());
    round.recovery_ms = Ms(at - etcd.served_at());
    ExplainRound(attempts->Take(), etcd.served_at(), round);
    result.rounds.push_back(round);
    std::fprintf(stderr,
                 "etcd_recovery: %s, down %d ms, restart %d: etcd served "
                 "%.0f ms after the kill, the watch delivered the next event "
                 "%.0f ms after that (backoff still to wait then: %.0f ms; "
                 "attempts failed after it served: %d)\n",
                 result.kind.c_str(), result.down_ms, r + 1, round.down_ms,
                 round.recovery_ms, round.backoff_left_ms,
                 round.failed_after_serving);
  }
  const absl::Status status = watch.Stop();
  if (status.code() != absl::StatusCode::kCancelled) {
    result.error =
        result.kind + ": the watch ended early: " + status.ToString();
    return result;
  }
  // Every event exactly once, in order, across all restarts.
  if (log.keys() != expected) {
    result.error = result.kind + ": " + std::to_string(log.keys().size()) +
                   " events delivered, expected each of " +
                   std::to_string(expected.size()) + " once, in order";
  }
  return result;
}

int Usage() {
  std::fprintf(stderr,
               "usage: etcd_recovery [--restarts N] [--down-ms M] [--watch] "
               "[--no-follow] [--smoke]\n");
  return 2;
}

// A markdown table of `results` (one row each) whose recovery column is
// `what` ("first Put OK", "next event delivered").
void PrintTable(const std::vector<Result>& results, const char* what) {
  std::printf(
      "| client | etcd kept down before its restart | etcd serves again after "
      "the kill (median) | %s after etcd serves: median | min | "
      "max | backoff still to wait when etcd served (median) | attempts "
      "failed after etcd served (all restarts) |\n",
      what);
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
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
        "| %s | %d ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %d "
        "|\n",
        result.kind.c_str(), result.down_ms, Median(down), Median(recovery),
        *std::min_element(recovery.begin(), recovery.end()),
        *std::max_element(recovery.begin(), recovery.end()),
        Median(backoff_left), failed_after_serving);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int restarts = 3;
  // How long etcd stays down before its restart: none (it then serves again
  // after its own start-up, 1-2 s), 3 s and 8 s, by which times the pending
  // Put's backoff has grown and the channel has failed to reconnect a few
  // times (at 8 s the sync client's next attempt still fails after etcd
  // serves: issue 30's "cached Connection refused"). Watches: 1.5 s, issue
  // 40's figure, and 8 s.
  std::vector<int> downs = {0, 3000, 8000};
  std::vector<int> watch_downs = {1500, 8000};
  bool puts = true;
  bool follow = true;
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
      restarts = 1;
      downs = {0};
      watch_downs = {0};
    } else if (std::strcmp(argv[i], "--restarts") == 0) {
      if (!number(&restarts) || restarts < 1) return Usage();
    } else if (std::strcmp(argv[i], "--down-ms") == 0) {
      int down_ms = 0;
      if (!number(&down_ms)) return Usage();
      downs = {down_ms};
      watch_downs = {down_ms};
    } else if (std::strcmp(argv[i], "--watch") == 0) {
      puts = false;
    } else if (std::strcmp(argv[i], "--no-follow") == 0) {
      follow = false;
    } else {
      return Usage();
    }
  }
  std::string binary = stubkit::etcd::FindEtcdBinary();
  if (binary.empty()) {
    std::printf(
        "etcd_recovery: SKIPPED, etcd is not installed "
        "(scripts/install-etcd.sh)\n");
    return 77;
  }
  EtcdProcess etcd(binary);
  if (!etcd.Start()) {
    std::fprintf(stderr, "etcd_recovery: %s\n", etcd.error().c_str());
    return 1;
  }

  // Runs one row; false when it (or the restart after it) failed.
  auto run = [&](std::vector<Result>& into, Result row) {
    into.push_back(std::move(row));
    if (!into.back().error.empty()) {
      std::fprintf(stderr, "etcd_recovery: %s\n", into.back().error.c_str());
      return false;
    }
    if (!etcd.running() && !etcd.Start()) {
      std::fprintf(stderr, "etcd_recovery: %s\n", etcd.error().c_str());
      return false;
    }
    return true;
  };
  std::vector<Result> put_results, watch_results;
  for (int down_ms : puts ? downs : std::vector<int>{}) {
    for (bool async : {false, true}) {
      if (!run(put_results, Measure(etcd, async, restarts,
                                    std::chrono::milliseconds(down_ms)))) {
        return 1;
      }
    }
  }
  for (int down_ms : watch_downs) {
    for (bool async : {false, true}) {
      if (!run(watch_results,
               MeasureWatch(etcd, async, restarts,
                            std::chrono::milliseconds(down_ms), follow))) {
        return 1;
      }
    }
  }

  if (!put_results.empty()) {
    std::printf(
        "Recovery after SIGKILL + restart of etcd, default stubkit clients "
        "(Put idempotent); restarts per row: %d\n\n",
        restarts);
    PrintTable(put_results, "first Put OK");
    std::printf("\n");
  }
  std::printf(
      "A delivering Watch (default client, the resume hook) across SIGKILL + "
      "restart of etcd; every event exactly once; restarts per row: %d\n\n",
      restarts);
  PrintTable(watch_results, "next event delivered");
  return 0;
}

// Copyright 2026 The stubkit Authors.
//
// The real-server suite, unary calls: the generated etcdserverpb::KVClient
// against Debian's etcd (not written here), which the test starts on
// 127.0.0.1 (tests/etcd/etcd_process.h), then kills with SIGKILL and
// restarts on the same ports and data directory three times while two
// threads write with sync Puts and one keeps 8 async Puts in flight.
//
// The clients use stubkit's default options (retry policy, backoff, no
// attempt timeout, default channel), except:
//   - etcd's proto marks nothing idempotent; Put and Range are made
//     idempotent for the client with IdempotencyMapOption, as a user whose
//     keys are unique (each Put writes a new key once) would: a Put applied
//     twice writes the same value again;
//   - every 4th call carries TotalTimeoutOption(1s), so that some calls run
//     into their deadline during an outage;
//   - every call carries a CancellationOption token, cancelled only when the
//     test fails half-way, so that its threads end instead of retrying for
//     the default policy's 30 minutes.
// Checked: every Put that returned OK is present with its value afterwards
// (one Range); no call failed while its policy had time left (calls without
// a timeout all succeed; those with one fail only with the stop reason
// kDeadline: at the deadline, or earlier when the next backoff wait would
// cross it, as specified); no call ended after its deadline. About 10-20 s
// on 2 cores (each restart waits at most 40 s for every writer to get
// through again); each restart's recovery is printed as "ETCD ..." lines
// (benchmarks/etcd_recovery measures it properly).

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "etcd/etcdserver/etcdserverpb/rpc.stubkit.h"
#include "gtest/gtest.h"
#include "stubkit/cancellation.h"
#include "stubkit/channel.h"
#include "stubkit/retry_options.h"
#include "stubkit/status.h"
#include "tests/etcd/etcd_process.h"

namespace stubkit {
namespace etcd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kShortTimeout = seconds(1);

// Sanitizer builds are slower; the slack scales with this.
int Scale() {
  const char* env = std::getenv("STUBKIT_RELIABILITY_SLOWDOWN");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 1;
}

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

Options IdempotentKv() {
  return Options{}.set<IdempotencyMapOption>(
      {{"etcdserverpb.KV.Put", Idempotency::kIdempotent},
       {"etcdserverpb.KV.Range", Idempotency::kIdempotent}});
}

class EtcdKvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string binary = FindEtcdBinary();
    if (binary.empty()) {
      GTEST_SKIP() << "etcd is not installed: scripts/install-etcd.sh "
                      "installs Debian's etcd-server (or set "
                      "STUBKIT_ETCD_BINARY)";
    }
    etcd_ = std::make_unique<EtcdProcess>(binary);
    ASSERT_TRUE(etcd_->Start()) << etcd_->error();
  }

  std::unique_ptr<EtcdProcess> etcd_;
};

// The generated client against the real server, no faults: Put, then Range
// reads it back.
TEST_F(EtcdKvTest, PutThenRange) {
  etcdserverpb::KVClient client(::stubkit::CreateChannel(
      etcd_->address(), grpc::InsecureChannelCredentials()));
  etcdserverpb::PutRequest put;
  put.set_key("stubkit/hello");
  put.set_value("world");
  absl::StatusOr<etcdserverpb::PutResponse> put_result = client.Put(put);
  ASSERT_TRUE(put_result.ok()) << put_result.status();

  etcdserverpb::RangeRequest range;
  range.set_key("stubkit/hello");
  absl::StatusOr<etcdserverpb::RangeResponse> got = client.Range(range);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 1);
  EXPECT_EQ(got->kvs(0).value(), "world");
}

struct CallRecord {
  std::string key;
  std::string value;
  bool sync = true;
  bool short_timeout = false;
  Clock::time_point start;
  Clock::time_point end;
  absl::Status status;
};

// The writers: kSyncThreads threads of sync Puts, and one thread keeping
// kAsyncInFlight callback AsyncPuts in flight. Stop() (also run by the
// destructor, e.g. after a failed ASSERT) ends them; Abort() cancels what is
// in flight first.
class Writers {
 public:
  static constexpr int kSyncThreads = 2;
  static constexpr int kAsyncInFlight = 8;

  explicit Writers(etcdserverpb::KVClient client)
      : client_(std::move(client)),
        token_(std::make_shared<CancellationToken>()) {
    for (int t = 0; t < kSyncThreads; ++t) {
      threads_.emplace_back([this, t] { SyncLoop(t); });
    }
    threads_.emplace_back([this] { AsyncLoop(); });
  }
  ~Writers() {
    if (!threads_.empty()) Abort();
  }

  void Stop() {
    stop_ = true;
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }
  void Abort() {
    stop_ = true;
    token_->Cancel();
    Stop();
  }

  // True once every writer (each sync thread, the async one) completed a
  // Put successfully that it had started at or after `since`.
  bool AllSucceededSince(Clock::time_point since) {
    absl::MutexLock lock(&mu_);
    for (const auto& [writer, last_ok_start] : last_ok_start_) {
      if (last_ok_start < since) return false;
    }
    return static_cast<int>(last_ok_start_.size()) == kSyncThreads + 1;
  }
  // Every call so far, in the order they ended.
  std::vector<CallRecord> records() {
    absl::MutexLock lock(&mu_);
    return records_;
  }

 private:
  Options CallOptions(int n) {
    Options call = Options{}.set<CancellationOption>(token_);
    if (n % 4 == 3) call.set<TotalTimeoutOption>(kShortTimeout);
    return call;
  }

  void Record(int writer, CallRecord record) {
    absl::MutexLock lock(&mu_);
    if (record.status.ok()) {
      auto& last = last_ok_start_[writer];
      last = std::max(last, record.start);
    }
    records_.push_back(std::move(record));
  }

  void SyncLoop(int t) {
    for (int i = 0; !stop_; ++i) {
      CallRecord record;
      record.key = "stubkit/sync" + std::to_string(t) + "/" + std::to_string(i);
      record.value = "v" + std::to_string(i);
      record.short_timeout = (i % 4 == 3);
      etcdserverpb::PutRequest request;
      request.set_key(record.key);
      request.set_value(record.value);
      record.start = Clock::now();
      absl::StatusOr<etcdserverpb::PutResponse> r =
          client_.Put(request, CallOptions(i));
      record.end = Clock::now();
      record.status = r.status();
      Record(t, std::move(record));
    }
  }

  void AsyncLoop() {
    const int writer = kSyncThreads;
    for (int batch = 0; !stop_; ++batch) {
      absl::Mutex batch_mu;
      int pending = kAsyncInFlight;
      for (int j = 0; j < kAsyncInFlight; ++j) {
        int i = batch * kAsyncInFlight + j;
        auto record = std::make_shared<CallRecord>();
        record->key = "stubkit/async/" + std::to_string(i);
        record->value = "v" + std::to_string(i);
        record->sync = false;
        record->short_timeout = (i % 4 == 3);
        etcdserverpb::PutRequest request;
        request.set_key(record->key);
        request.set_value(record->value);
        record->start = Clock::now();
        client_.AsyncPut(
            request,
            [this, record, &batch_mu,
             &pending](absl::StatusOr<etcdserverpb::PutResponse> r) {
              record->end = Clock::now();
              record->status = r.status();
              Record(writer, std::move(*record));
              absl::MutexLock lock(&batch_mu);
              --pending;
            },
            CallOptions(i));
      }
      absl::MutexLock lock(&batch_mu);
      batch_mu.Await(absl::Condition(
          +[](int* p) { return *p == 0; }, &pending));
    }
  }

  etcdserverpb::KVClient client_;
  std::shared_ptr<CancellationToken> token_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::vector<CallRecord> records_ ABSL_GUARDED_BY(mu_);
  std::map<int, Clock::time_point> last_ok_start_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

TEST_F(EtcdKvTest, AcknowledgedPutsSurviveKillAndRestart) {
  constexpr int kRestarts = 3;
  const auto slack = milliseconds(250) * Scale();

  etcdserverpb::KVClient client(
      ::stubkit::CreateChannel(etcd_->address(),
                               grpc::InsecureChannelCredentials()),
      IdempotentKv());
  Writers writers(client);

  // The fault script, on this thread (etcd_process.h: the thread that
  // starts etcd must outlive it).
  std::this_thread::sleep_for(seconds(1));
  for (int round = 0; round < kRestarts; ++round) {
    etcd_->Kill();
    std::this_thread::sleep_for(milliseconds(300));
    ASSERT_TRUE(etcd_->Start()) << etcd_->error();
    Clock::time_point served = etcd_->served_at();
    std::printf("ETCD restart %d: down %.0f ms, serving %.0f ms after spawn\n",
                round + 1, Ms(served - etcd_->killed_at()),
                Ms(served - etcd_->started_at()));
    // Next round once every writer got a Put through again (bounded: the
    // final checks say whether anything went wrong).
    Clock::time_point give_up = Clock::now() + seconds(40);
    while (!writers.AllSucceededSince(served) && Clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    std::printf(
        "ETCD restart %d: every writer through %.0f ms after etcd "
        "served again\n",
        round + 1, Ms(Clock::now() - served));
    std::this_thread::sleep_for(milliseconds(500));
  }
  writers.Stop();

  std::vector<CallRecord> records = writers.records();
  int sync_ok = 0, async_ok = 0, deadline_failures = 0;
  int early_deadline_stops = 0;
  std::vector<std::string> wrong_failures, late;
  std::map<std::string, std::string> acknowledged;
  for (const CallRecord& r : records) {
    Clock::duration took = r.end - r.start;
    if (r.status.ok()) {
      (r.sync ? sync_ok : async_ok)++;
      acknowledged[r.key] = r.value;
    } else if (std::optional<RetrySummary> summary = GetRetrySummary(r.status);
               r.short_timeout && summary &&
               summary->stop_reason == StopReason::kDeadline) {
      // Its policy had no time left: the deadline ended it, or the next
      // backoff wait would have crossed it (stubkit then stops at once,
      // with the last attempt's status).
      ++(took >= kShortTimeout ? deadline_failures : early_deadline_stops);
    } else {
      wrong_failures.push_back(r.key + " after " + std::to_string(Ms(took)) +
                               " ms: " + r.status.ToString());
    }
    if (r.short_timeout && took > kShortTimeout + slack) {
      late.push_back(r.key + " took " + std::to_string(Ms(took)) + " ms");
    }
  }
  std::printf(
      "ETCD puts: %d sync ok, %d async ok; short-timeout calls stopped by "
      "their deadline: %d at it, %d before it (the next wait would cross "
      "it); %zu wrong failures, %zu late\n",
      sync_ok, async_ok, deadline_failures, early_deadline_stops,
      wrong_failures.size(), late.size());
  EXPECT_GT(sync_ok, 0);
  EXPECT_GT(async_ok, 0);
  EXPECT_TRUE(wrong_failures.empty())
      << wrong_failures.size() << " calls failed with time left, e.g. "
      << wrong_failures.front();
  EXPECT_TRUE(late.empty())
      << late.size() << " calls ended after their deadline, e.g. "
      << late.front();

  // Every acknowledged Put is there, with its value.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  etcdserverpb::KVClient reader(
      ::stubkit::CreateChannel(etcd_->address(),
                               grpc::InsecureChannelCredentials(), args),
      IdempotentKv());
  etcdserverpb::RangeRequest range;
  range.set_key("stubkit/");
  range.set_range_end("stubkit0");  // every key with the prefix "stubkit/"
  absl::StatusOr<etcdserverpb::RangeResponse> stored =
      reader.Range(range, Options{}.set<TotalTimeoutOption>(seconds(30)));
  ASSERT_TRUE(stored.ok()) << stored.status();
  std::map<std::string, std::string> present;
  for (const auto& kv : stored->kvs()) present[kv.key()] = kv.value();
  int lost = 0;
  std::string example;
  for (const auto& [key, value] : acknowledged) {
    auto it = present.find(key);
    if (it == present.end() || it->second != value) {
      if (lost++ == 0) example = key;
    }
  }
  std::printf("ETCD acknowledged %zu, present %zu, lost %d\n",
              acknowledged.size(), present.size(), lost);
  EXPECT_EQ(lost, 0) << "e.g. " << example;
  EXPECT_EQ(etcd_->kills(), kRestarts);
}

}  // namespace
}  // namespace etcd
}  // namespace stubkit

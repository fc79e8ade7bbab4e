// Copyright 2026 The stubkit Authors.
//
// The real-server suite, bidi streams that resume: the generated
// etcdserverpb::WatchClient and LeaseClient against Debian's etcd, which the
// test starts on 127.0.0.1 (tests/etcd/etcd_process.h), kills with SIGKILL
// and restarts on the same ports and data directory.
//
//   - A Watch with the resume hook of docs/streaming.md (a create request
//     from the revision after the last event handled) sees every Put made
//     before and after the restart exactly once, in order.
//   - A LeaseKeepAlive whose hook writes a keep-alive for the lease keeps
//     the lease alive across a restart shorter than its TTL, and for more
//     than two TTLs after it.
//
// Each test takes a few seconds (mostly etcd's restart); every stream
// carries a TotalTimeoutOption, so that a bug fails the test instead of
// hanging it.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "etcd/etcdserver/etcdserverpb/rpc.stubkit.h"
#include "gtest/gtest.h"
#include "stubkit/channel.h"
#include "stubkit/retry_options.h"
#include "stubkit/status.h"
#include "tests/etcd/etcd_process.h"

namespace stubkit {
namespace etcd {
namespace {

using Clock = std::chrono::steady_clock;
using etcdserverpb::WatchClient;
using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Short waits, so that a stream is back soon after etcd serves again.
Options FastBackoff() {
  return Options{}.set<BackoffPolicyOption>(
      ExponentialBackoffPolicy()
          .WithInitialDelay(milliseconds(50))
          .WithMaximumDelay(milliseconds(500))
          .WithMultiplier(2.0));
}

// As in examples/docs/streaming_watch.cc.
WatchRequest CreateFrom(const std::string& prefix, int64_t start) {
  WatchRequest request;
  auto& create = *request.mutable_create_request();
  create.set_key(prefix);
  std::string end = prefix;
  ++end.back();
  create.set_range_end(end);
  create.set_start_revision(start);
  return request;
}

class EtcdStreamTest : public ::testing::Test {
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
    channel_ = ::stubkit::CreateChannel(etcd_->address(),
                                        grpc::InsecureChannelCredentials());
  }

  // A Put retried across the restart (each key is written once).
  absl::Status Put(const std::string& key, const std::string& value,
                   int64_t lease = 0) {
    etcdserverpb::KVClient kv(channel_, FastBackoff().set<IdempotencyOption>(
                                            Idempotency::kIdempotent));
    etcdserverpb::PutRequest put;
    put.set_key(key);
    put.set_value(value);
    put.set_lease(lease);
    return kv.Put(put, Options{}.set<TotalTimeoutOption>(seconds(30))).status();
  }

  std::unique_ptr<EtcdProcess> etcd_;
  std::shared_ptr<grpc::Channel> channel_;
};

struct Seen {
  int64_t revision;
  std::string key;
};

TEST_F(EtcdStreamTest, AWatchSeesEveryEventOnceAcrossARestart) {
  const std::string prefix = "stubkit-watch/";
  constexpr int kBefore = 10;
  constexpr int kAfter = 10;

  // The docs' hook: the watcher thread is the only one to touch `next`, and
  // the hook runs on it.
  int64_t next = 1;
  int resumes = 0;
  WatchClient client(channel_,
                     FastBackoff().set<WatchClient::WatchResumeOption>(
                         [&](const WatchResponse* /*last*/,
                             ResumeWriter<WatchRequest>& writer) {
                           ++resumes;
                           writer.Write(CreateFrom(prefix, next));
                           return true;
                         }));
  auto watch = client.Watch(Options{}.set<TotalTimeoutOption>(seconds(60)));
  ASSERT_TRUE(watch.Write(CreateFrom(prefix, next)));

  absl::Mutex mu;
  std::vector<Seen> seen;
  std::thread watcher([&] {
    WatchResponse response;
    while (watch.Read(&response)) {
      absl::MutexLock lock(&mu);
      for (const auto& event : response.events()) {
        seen.push_back({event.kv().mod_revision(), event.kv().key()});
        next = event.kv().mod_revision() + 1;
      }
      if (seen.size() >= kBefore + kAfter) break;
    }
  });
  auto seen_at_least = [&](size_t n) {
    const Clock::time_point give_up = Clock::now() + seconds(30);
    while (Clock::now() < give_up) {
      {
        absl::MutexLock lock(&mu);
        if (seen.size() >= n) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  };

  for (int i = 0; i < kBefore; ++i) {
    ASSERT_TRUE(Put(prefix + std::to_string(i), "v").ok());
  }
  // The watch is established and has delivered; now etcd crashes.
  EXPECT_TRUE(seen_at_least(kBefore));
  etcd_->Kill();
  ASSERT_TRUE(etcd_->Start()) << etcd_->error();
  for (int i = kBefore; i < kBefore + kAfter; ++i) {
    ASSERT_TRUE(Put(prefix + std::to_string(i), "v").ok());
  }
  const bool all = seen_at_least(kBefore + kAfter);
  if (!all) watch.Cancel();  // ends the watcher's Read
  watcher.join();
  EXPECT_TRUE(all);

  watch.Cancel();
  absl::Status status = watch.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_GE(watch.attempts(), 2);  // reopened after the crash
  EXPECT_GE(resumes, 1);           // through the hook (joined: no race)

  absl::MutexLock lock(&mu);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kBefore + kAfter));
  for (int i = 0; i < kBefore + kAfter; ++i) {
    EXPECT_EQ(seen[i].key, prefix + std::to_string(i)) << "event " << i;
    if (i > 0) {
      EXPECT_GT(seen[i].revision, seen[i - 1].revision);
    }
  }
}

TEST_F(EtcdStreamTest, ALeaseKeepAliveOutlivesARestartShorterThanItsTtl) {
  constexpr int64_t kTtlSeconds = 4;
  etcdserverpb::LeaseClient lease(channel_, FastBackoff());
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(kTtlSeconds);
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> granted =
      lease.LeaseGrant(grant);
  ASSERT_TRUE(granted.ok()) << granted.status();
  const int64_t id = granted->id();
  ASSERT_TRUE(Put("stubkit-lease/key", "v", id).ok());

  etcdserverpb::LeaseKeepAliveRequest keep;
  keep.set_id(id);
  auto stream = lease.LeaseKeepAlive(
      Options{}
          .set<TotalTimeoutOption>(seconds(60))
          .set<etcdserverpb::LeaseClient::LeaseKeepAliveResumeOption>(
              [keep](
                  const etcdserverpb::LeaseKeepAliveResponse* /*last*/,
                  ResumeWriter<etcdserverpb::LeaseKeepAliveRequest>& writer) {
                writer.Write(keep);
                return true;
              }));

  // A keep-alive every second; the crash after the second one. Then more
  // than two TTLs: the lease lives only if keep-alives get through.
  bool restarted = false;
  Clock::time_point until = Clock::now() + seconds(60);
  for (int i = 0; Clock::now() < until; ++i) {
    ASSERT_TRUE(stream.Write(keep)) << stream.Finish();
    etcdserverpb::LeaseKeepAliveResponse response;
    ASSERT_TRUE(stream.Read(&response)) << stream.Finish();
    EXPECT_EQ(response.id(), id);
    EXPECT_GT(response.ttl(), 0) << "the lease expired, keep-alive " << i;
    if (i == 1) {
      etcd_->Kill();
      ASSERT_TRUE(etcd_->Start()) << etcd_->error();
      restarted = true;
      until = Clock::now() + seconds(2 * kTtlSeconds + 1);
    }
    std::this_thread::sleep_for(seconds(1));
  }
  EXPECT_TRUE(restarted);
  EXPECT_GE(stream.attempts(), 2);
  stream.Cancel();

  etcdserverpb::KVClient kv(channel_, FastBackoff());
  etcdserverpb::RangeRequest range;
  range.set_key("stubkit-lease/key");
  absl::StatusOr<etcdserverpb::RangeResponse> got = kv.Range(range);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->kvs_size(), 1) << "the lease expired and took the key";
}

}  // namespace
}  // namespace etcd
}  // namespace stubkit

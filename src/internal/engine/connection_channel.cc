// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/connection_channel.h"

#include <grpc/support/time.h>
#include <grpcpp/completion_queue.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/engine/async_call.h"

namespace stubkit {
namespace internal {
namespace {

// What the watcher thread finds in its completion queue.
class WatcherTag {
 public:
  virtual ~WatcherTag() = default;
  // Runs once, on the watcher thread, then the tag is deleted.
  virtual void Done() = 0;
};

// One completion queue for every connection's watch, and one thread in its
// `Next`: that thread is what polls a watched channel's connection
// attempts. Never destroyed, like the timer queue.
class ConnectivityWatcher {
 public:
  static grpc::CompletionQueue* Queue() {
    static ConnectivityWatcher* const watcher = new ConnectivityWatcher;
    return &watcher->cq_;
  }

 private:
  ConnectivityWatcher() {
    // Keeps gRPC from shutting down under the queue at exit.
    KeepGrpcInitialised();
    std::thread([this] { Run(); }).detach();
  }
  void Run() {
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
      // `ok` is false when the watch's deadline passed without a change:
      // the tag looks at the channel either way.
      WatcherTag* watch = static_cast<WatcherTag*>(tag);
      watch->Done();
      delete watch;
    }
  }

  grpc::CompletionQueue cq_;
};

struct StubkitChannels {
  Mutex mu;
  // The channel's address, to compare without locking the weak reference
  // (a lock could drop the last reference, and destroy the channel, under
  // mu); the weak reference tells a live channel from a dead one whose
  // address was reused.
  std::vector<std::pair<const void*, std::weak_ptr<grpc::Channel>>> channels
      ABSL_GUARDED_BY(mu);
};

StubkitChannels& Registry() {
  static StubkitChannels* const registry = new StubkitChannels;
  return *registry;
}

}  // namespace

bool FollowsChannel(const absl::Status& status, WaitReason reason) {
  return status.code() == absl::StatusCode::kUnavailable &&
         reason == WaitReason::kBackoff;
}

ReconnectWatchLogic::Step ReconnectWatchLogic::Join(
    uint64_t id, std::function<void()> wake, grpc_connectivity_state state,
    time_point now, bool down_at_attempt_start) {
  Step step;
  waiters_.push_back(
      Waiter{id, down_at_attempt_start || state != GRPC_CHANNEL_READY,
             std::move(wake)});
  Observe(state, now, step);
  if (!armed_ && !waiters_.empty() && state != GRPC_CHANNEL_SHUTDOWN) {
    armed_ = true;
    step.arm = true;
  }
  return step;
}

std::function<void()> ReconnectWatchLogic::Leave(uint64_t id) {
  auto it = std::find_if(waiters_.begin(), waiters_.end(),
                         [id](const Waiter& w) { return w.id == id; });
  if (it == waiters_.end()) return nullptr;
  std::function<void()> wake = std::move(it->wake);
  waiters_.erase(it);
  return wake;
}

ReconnectWatchLogic::Step ReconnectWatchLogic::OnWatchEnded(
    grpc_connectivity_state state, time_point now) {
  Step step;
  armed_ = false;
  Observe(state, now, step);
  // A shut-down channel never changes again: the waits run out.
  if (!waiters_.empty() && state != GRPC_CHANNEL_SHUTDOWN) {
    armed_ = true;
    step.arm = true;
  }
  return step;
}

void ReconnectWatchLogic::Observe(grpc_connectivity_state state, time_point now,
                                  Step& step) {
  if (state == GRPC_CHANNEL_READY) {
    // Only waits that saw the channel down: one whose attempt failed on a
    // ready channel keeps its backoff.
    auto ready =
        std::stable_partition(waiters_.begin(), waiters_.end(),
                              [](const Waiter& w) { return !w.saw_not_ready; });
    for (auto it = ready; it != waiters_.end(); ++it) {
      step.wake.push_back(std::move(it->wake));
    }
    waiters_.erase(ready, waiters_.end());
    return;
  }
  for (Waiter& w : waiters_) w.saw_not_ready = true;
  if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && !waiters_.empty() &&
      (!probed_ || now - last_probe_ >= probe_interval_)) {
    probed_ = true;
    last_probe_ = now;
    step.reset_backoff = true;
  }
}

class ConnectionChannel::Watch : public WatcherTag {
 public:
  explicit Watch(std::shared_ptr<ConnectionChannel> owner)
      : owner_(std::move(owner)) {}
  void Done() override { owner_->OnWatchEnded(); }

 private:
  std::shared_ptr<ConnectionChannel> owner_;
};

std::shared_ptr<ConnectionChannel> ConnectionChannel::Make(
    std::shared_ptr<grpc::ChannelInterface> channel) {
  if (channel == nullptr) return nullptr;
  // A channel that is not a client channel (an in-process one, from
  // grpc::Server::InProcessChannel) answers SHUTDOWN from the start, and
  // gRPC logs an error each time it is asked. Asked once, here: such a
  // connection has nothing to follow back and no gRPC retries to warn
  // about, so its calls run as over a stub (one line from gRPC per
  // connection, none per call).
  if (channel->GetState(false) == GRPC_CHANNEL_SHUTDOWN) return nullptr;
  return std::make_shared<ConnectionChannel>(std::move(channel));
}

ConnectionChannel::ConnectionChannel(
    std::shared_ptr<grpc::ChannelInterface> channel)
    : channel_(std::move(channel)),
      grpc_channel_(dynamic_cast<grpc::Channel*>(channel_.get())) {}

uint64_t ConnectionChannel::Join(std::function<void()> wake,
                                 bool down_at_attempt_start) {
  // The kick: an IDLE channel (its connection dropped) starts to connect.
  const grpc_connectivity_state state = channel_->GetState(true);
  const auto now = std::chrono::steady_clock::now();
  ReconnectWatchLogic::Step step;
  uint64_t id;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    step = logic_.Join(id, std::move(wake), state, now, down_at_attempt_start);
  }
  Apply(std::move(step), state);
  return id;
}

void ConnectionChannel::Leave(uint64_t id) {
  std::function<void()> dropped;  // destroyed after the lock is released
  MutexLock lock(&mu_);
  dropped = logic_.Leave(id);
}

void ConnectionChannel::OnWatchEnded() {
  const grpc_connectivity_state state = channel_->GetState(true);
  const auto now = std::chrono::steady_clock::now();
  ReconnectWatchLogic::Step step;
  {
    MutexLock lock(&mu_);
    step = logic_.OnWatchEnded(state, now);
  }
  Apply(std::move(step), state);
}

void ConnectionChannel::Apply(ReconnectWatchLogic::Step step,
                              grpc_connectivity_state state) {
  if (step.reset_backoff && grpc_channel_ != nullptr) {
    grpc::experimental::ChannelResetConnectionBackoff(grpc_channel_);
  }
  for (auto& wake : step.wake) wake();
  step.wake.clear();  // what the callbacks captured goes here, unlocked
  if (step.arm) Arm(state);
}

void ConnectionChannel::Arm(grpc_connectivity_state last) {
  // On the monotonic clock: the deadline is relative to gRPC's own now.
  const gpr_timespec deadline = gpr_time_add(
      gpr_now(GPR_CLOCK_MONOTONIC),
      gpr_time_from_nanos(
          std::chrono::nanoseconds(kReconnectProbeInterval).count(),
          GPR_TIMESPAN));
  channel_->NotifyOnStateChange(last, deadline, ConnectivityWatcher::Queue(),
                                new Watch(shared_from_this()));
}

void ConnectionChannel::CheckGrpcRetriesSlow(const OptionsView& options,
                                             absl::string_view method,
                                             bool attempt_ok) {
  if (grpc_channel_ == nullptr || IsStubkitChannel(grpc_channel_)) {
    grpc_retries_checked_.store(true, std::memory_order_release);
    return;
  }
  // Empty until the channel has resolved: look again after the next
  // attempt, unless this one got through (then there is no config) or the
  // channel never resolves.
  std::string json = grpc_channel_->GetServiceConfigJSON();
  if (json.empty() && !attempt_ok &&
      grpc_retries_checks_.fetch_add(1, std::memory_order_relaxed) < 16) {
    return;
  }
  if (grpc_retries_checked_.exchange(true, std::memory_order_acq_rel)) return;
  if (!ServiceConfigRetries(json)) return;
  WriteConfigWarning(
      options.client(),
      absl::StrCat(
          "stubkit: ", method,
          ": the channel's service config turns on gRPC's own retries "
          "(retryPolicy or hedgingPolicy), under stubkit's: each stubkit "
          "attempt may be several on the wire, and stubkit's counts and "
          "idempotency rules no longer describe what the server sees. Make "
          "the channel with stubkit::CreateChannel (or set "
          "GRPC_ARG_ENABLE_RETRIES to 0), or import the config with "
          "stubkit::ServiceConfig instead (docs/service-config.md)"));
}

void RememberStubkitChannel(const std::shared_ptr<grpc::Channel>& channel) {
  if (channel == nullptr) return;
  StubkitChannels& registry = Registry();
  MutexLock lock(&registry.mu);
  auto& channels = registry.channels;
  channels.erase(
      std::remove_if(channels.begin(), channels.end(),
                     [](const auto& entry) { return entry.second.expired(); }),
      channels.end());
  channels.emplace_back(channel.get(), channel);
}

bool IsStubkitChannel(const grpc::ChannelInterface* channel) {
  StubkitChannels& registry = Registry();
  MutexLock lock(&registry.mu);
  for (const auto& [address, weak] : registry.channels) {
    // A grpc::Channel is a ChannelInterface at the same address (its first
    // base); compare as the derived type to be sure.
    if (address == static_cast<const void*>(
                       dynamic_cast<const grpc::Channel*>(channel)) &&
        !weak.expired()) {
      return true;
    }
  }
  return false;
}

bool ServiceConfigRetries(const std::string& json) {
  for (const char* key : {"\"retryPolicy\"", "\"retry_policy\"",
                          "\"hedgingPolicy\"", "\"hedging_policy\""}) {
    if (json.find(key) != std::string::npos) return true;
  }
  return false;
}

}  // namespace internal
}  // namespace stubkit

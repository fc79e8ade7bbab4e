// Copyright 2026 The stubkit Authors.

#include "stubkit/server_propagation.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/retry_options.h"
#include "stubkit/server_hints.h"
#include "stubkit/status.h"

namespace stubkit {
namespace {

// gRPC's own retries (gRFC A6) send the number of attempts before this one.
constexpr char kPreviousAttemptsHeader[] = "grpc-previous-rpc-attempts";
// More than any retry policy sends; a larger value is not a count.
constexpr int kMaxAttempt = 1000000;

// Polls the `IsCancelled()` of the server calls whose downstream calls
// follow them, all on one thread, and cancels their tokens. The thread
// starts with the first watch and sleeps while nothing is watched.
class CancelPoller {
 public:
  static constexpr std::chrono::milliseconds kInterval{5};

  static CancelPoller& Get() {
    static CancelPoller* const poller = new CancelPoller();  // never destroyed
    return *poller;
  }

  // Returns 0 when the poller's thread cannot start (then nothing polls).
  uint64_t Watch(const grpc::ServerContextBase* context,
                 std::shared_ptr<CancellationToken> token)
      ABSL_LOCKS_EXCLUDED(mu_) {
    internal::MutexLock lock(&mu_);
    if (!started_) {
      try {
        std::thread([this] { Run(); }).detach();
      } catch (const std::system_error&) {
        return 0;
      }
      started_ = true;
    }
    const uint64_t id = next_id_++;
    watched_.emplace(id, Watched{context, std::move(token)});
    wake_.NotifyOne();
    return id;
  }

  // After it returns, the context of `id` is not read again: a poll in
  // progress holds the lock.
  void Unwatch(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    internal::MutexLock lock(&mu_);
    watched_.erase(id);
  }

 private:
  struct Watched {
    const grpc::ServerContextBase* context;
    std::shared_ptr<CancellationToken> token;
  };

  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::shared_ptr<CancellationToken>> cancelled;
    for (;;) {
      {
        internal::MutexLock lock(&mu_);
        wake_.Wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !watched_.empty();
        });
        for (auto it = watched_.begin(); it != watched_.end();) {
          // gRPC's own lock only; no user code.
          if (it->second.context->IsCancelled()) {
            cancelled.push_back(std::move(it->second.token));
            watched_.erase(it++);
          } else {
            ++it;
          }
        }
      }
      // Unlocked: a token's callbacks may complete async calls here.
      for (auto& token : cancelled) token->Cancel();
      cancelled.clear();
      std::this_thread::sleep_for(kInterval);
    }
  }

  internal::Mutex mu_;
  internal::CondVar wake_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, Watched> watched_ ABSL_GUARDED_BY(mu_);
};

// The value of `key` in the client's metadata as a count, or -1.
int ReadCount(const grpc::ServerContextBase& context, absl::string_view key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return -1;
  int value = 0;
  if (!absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                        &value) ||
      value < 0) {
    return -1;
  }
  return std::min(value, kMaxAttempt);
}

// The incoming request's attempt number, from either retry header (the
// larger, should a stubkit client sit on a channel with gRPC's retries).
int IncomingAttempt(const grpc::ServerContextBase& context) {
  int attempt = 1;
  const int stubkit_attempt = ReadCount(context, kRetryAttemptHeader);
  if (stubkit_attempt > 0) attempt = stubkit_attempt;
  const int previous = ReadCount(context, kPreviousAttemptsHeader);
  if (previous > 0) {
    attempt = std::max(attempt, std::min(previous + 1, kMaxAttempt));
  }
  return attempt;
}

}  // namespace

UpstreamReply DefaultUpstreamReply(const absl::Status& downstream) {
  UpstreamReply reply;
  std::optional<RetrySummary> summary = GetRetrySummary(downstream);
  const bool overloaded =
      !downstream.ok() && summary.has_value() &&
      (summary->stop_reason == StopReason::kThrottled ||
       summary->stop_reason == StopReason::kServerRefused ||
       (summary->stop_reason == StopReason::kExhausted &&
        (downstream.code() == absl::StatusCode::kUnavailable ||
         downstream.code() == absl::StatusCode::kResourceExhausted)));
  if (overloaded) {
    reply.status = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string(downstream.message()));
    reply.do_not_retry = true;
    return reply;
  }
  reply.status = ToGrpcStatus(downstream);
  return reply;
}

grpc::Status ReplyUpstream(grpc::ServerContextBase& context,
                           const absl::Status& downstream,
                           const UpstreamReplyMapper& mapper) {
  UpstreamReply reply =
      mapper ? mapper(downstream) : DefaultUpstreamReply(downstream);
  if (reply.do_not_retry) {
    context.AddTrailingMetadata(kRetryPushbackHeader, "-1");
  }
  return std::move(reply.status);
}

// The tokens downstream calls brought to options(call), held weakly: a
// token goes with its call. One callback on the incoming call's token
// cancels those alive; one per call, holding its token, grew for the
// incoming call's whole life (issue 39, item 12).
struct IncomingCall::Downstream {
  internal::Mutex mu;
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  std::vector<std::weak_ptr<CancellationToken>> tokens ABSL_GUARDED_BY(mu);
  // Expired entries are dropped when the list reaches this size, which
  // then doubles the live count: amortised O(1), bounded by the live ones.
  size_t sweep_at ABSL_GUARDED_BY(mu) = 16;

  void Cancel() {
    std::vector<std::weak_ptr<CancellationToken>> tokens;
    {
      internal::MutexLock lock(&mu);
      cancelled = true;
      tokens.swap(this->tokens);
    }
    for (const auto& weak : tokens) {
      if (auto token = weak.lock()) token->Cancel();
    }
  }

  // False when the incoming call is already cancelled: the caller cancels
  // `token` itself, outside the lock.
  bool Add(const std::shared_ptr<CancellationToken>& token) {
    internal::MutexLock lock(&mu);
    if (cancelled) return false;
    if (tokens.size() >= sweep_at) {
      tokens.erase(
          std::remove_if(tokens.begin(), tokens.end(),
                         [](const auto& weak) { return weak.expired(); }),
          tokens.end());
      sweep_at = std::max<size_t>(16, 2 * tokens.size());
    }
    // A token shared by many calls needs one entry.
    for (const auto& weak : tokens) {
      if (!weak.owner_before(token) && !token.owner_before(weak)) return true;
    }
    tokens.push_back(token);
    return true;
  }
};

IncomingCall::IncomingCall(grpc::ServerContextBase& context, Settings settings)
    : context_(context),
      token_(std::make_shared<CancellationToken>()),
      downstream_(std::make_shared<Downstream>()),
      reply_(std::move(settings.reply)),
      attempt_(IncomingAttempt(context)) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    options_.set<DeadlineOption>(deadline);
  }
  options_.set<CancellationOption>(token_);
  options_.set<IncomingAttemptOption>(attempt_);
  token_->AddCallback([downstream = downstream_] { downstream->Cancel(); });
  if (settings.poll_cancellation) {
    watch_ = CancelPoller::Get().Watch(&context_, token_);
  }
}

IncomingCall::~IncomingCall() {
  if (watch_ != 0) CancelPoller::Get().Unwatch(watch_);
}

Options IncomingCall::options(const Options& call) const {
  Options merged = options_.MergedWith(call);
  if (const auto* theirs = call.find<DeadlineOption>()) {
    if (const auto* ours = options_.find<DeadlineOption>()) {
      merged.set<DeadlineOption>(std::min(*theirs, *ours));
    }
  }
  if (const auto* theirs = call.find<CancellationOption>()) {
    if (*theirs != nullptr && *theirs != token_ && !downstream_->Add(*theirs)) {
      (*theirs)->Cancel();
    }
  }
  return merged;
}

grpc::Status IncomingCall::Reply(const absl::Status& downstream) const {
  return ReplyUpstream(context_, downstream, reply_);
}

}  // namespace stubkit

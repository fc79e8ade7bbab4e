// Copyright 2026 The stubkit Authors.
//
// Long-running operations (AIP-151): how generated `AwaitFoo` methods poll.
//
// For an rpc `Foo` that returns `google.longrunning.Operation` and declares
// `google.longrunning.operation_info`, the generated client has
//
//   absl::StatusOr<Response> AwaitFoo(const FooRequest&, const Options& = {});
//   std::future<absl::StatusOr<Response>> AsyncAwaitFoo(const FooRequest&,
//                                                       const Options& = {});
//   absl::StatusOr<Response> AwaitFooByName(const std::string& operation,
//                                           const Options& = {});
//   std::future<...> AsyncAwaitFooByName(const std::string&, const Options&);
//
// They start `Foo` (retried as usual), then poll `GetOperation` on the same
// channel, each poll a call under the retry rules, waiting as the
// `PollingPolicyOption` says (async: on the timer, never a thread). A done
// operation's `response` or `error` is the result; the policy's time limit
// gives DEADLINE_EXCEEDED, from which `GetOperationName` recovers the name:
//
//   using namespace std::chrono_literals;
//   auto r = client.AwaitCreateBook(request, stubkit::Options{}
//       .set<stubkit::PollingPolicyOption>(stubkit::PollingPolicy(
//           stubkit::ExponentialBackoffPolicy().WithInitialDelay(500ms),
//           2h)));
//   if (!r.ok() && stubkit::GetOperationName(r.status())) {
//     r = client.AwaitCreateBookByName(*stubkit::GetOperationName(r.status()));
//   }
//
// Results, defaults, cancellation: docs/long-running-operations.md.
#ifndef STUBKIT_LONG_RUNNING_OPERATION_H_
#define STUBKIT_LONG_RUNNING_OPERATION_H_

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/backoff_policy.h"

namespace stubkit {

// How long to wait between polls, and for how long to poll at all.
//
// Defaults: the seeds' truncated exponential backoff (first wait 1 s plus
// up to 1 s of jitter, doubling, capped at 5 min) and a time limit of 30
// minutes, counted from the first poll's wait (after the starting call
// returned). Before each wait the loop checks that the wait ends within the
// limit; when it would not, polling stops with DEADLINE_EXCEEDED.
class PollingPolicy {
 public:
  static constexpr std::chrono::minutes kDefaultTimeLimit{30};

  PollingPolicy()
      : PollingPolicy(ExponentialBackoffPolicy(), kDefaultTimeLimit) {}
  // The n-th wait (n from 0) is `backoff.DelayFor(n)`; `time_limit` must be
  // positive.
  PollingPolicy(ExponentialBackoffPolicy backoff,
                std::chrono::nanoseconds time_limit);

  const ExponentialBackoffPolicy& backoff() const { return backoff_; }
  std::chrono::nanoseconds time_limit() const { return time_limit_; }
  // OK, or InvalidArgument naming the bad field.
  absl::Status status() const;
  std::string ToString() const;

 private:
  ExponentialBackoffPolicy backoff_;
  std::chrono::nanoseconds time_limit_;
};

struct PollingPolicyOption {
  using Type = PollingPolicy;
  static Type Default() { return PollingPolicy(); }
};

// When true, cancelling an awaited operation through its
// `CancellationOption` also calls `Operations.CancelOperation` (once, best
// effort, without the cancelled token) before the awaiter returns
// CANCELLED. Default false: only the client stops polling.
struct CancelOperationOnCancelOption {
  using Type = bool;
  static Type Default() { return false; }
};

inline constexpr absl::string_view kOperationNamePayloadKey =
    "stubkit/OperationName";

// The name of the operation an awaiter stopped polling, if `status` came
// from one after the operation was started: resume with `AwaitFooByName`.
std::optional<std::string> GetOperationName(const absl::Status& status);

}  // namespace stubkit

#endif  // STUBKIT_LONG_RUNNING_OPERATION_H_

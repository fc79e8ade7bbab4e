// Copyright 2026 The stubkit Authors.
//
// The one check of a call's options, before anything is sent: every call
// and stream, through `RetryLoopState`. Not API.

#ifndef STUBKIT_INTERNAL_VALIDATE_OPTIONS_H_
#define STUBKIT_INTERNAL_VALIDATE_OPTIONS_H_

#include "absl/status/status.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/options.h"
#include "stubkit/retry_policy.h"

namespace stubkit {
namespace internal {

// The first invalid option, as the status to fail the call with (the
// caller adds that nothing was sent); OK when all are valid. A call that may
// be retried passes the policies it will use (read once, by the caller) and
// is checked against every option; a stream that is opened once and never
// replayed passes null for both and is checked only against the options it
// reads: the call controls, the timeouts and the metadata.
absl::Status ValidateOptions(const OptionsView& options,
                             const RetryPolicy* retry_policy,
                             const ExponentialBackoffPolicy* backoff_policy);

// No layer of `options` sets anything (a client built with default options,
// called without per-call options): every lookup would find nothing, so
// `ValidateOptions` and the per-call set-up may skip theirs (~15
// instructions each under callgrind, issue 40).
inline bool NothingSet(const OptionsView& options) {
  return options.call().empty() &&
         (options.method() == nullptr || options.method()->empty()) &&
         (options.service() == nullptr || options.service()->empty()) &&
         options.client().empty();
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_VALIDATE_OPTIONS_H_

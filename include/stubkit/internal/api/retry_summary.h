// Copyright 2026 The stubkit Authors.
//
// How the retry loops attach a RetrySummary (stubkit/status.h) to the status
// they return. Not API.

#ifndef STUBKIT_INTERNAL_RETRY_SUMMARY_H_
#define STUBKIT_INTERNAL_RETRY_SUMMARY_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// Returns `status` with the summary appended to its message and attached as a
// payload. Code and existing payloads are kept.
absl::Status WithRetrySummary(const absl::Status& status,
                              const RetrySummary& summary,
                              absl::string_view explanation);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_RETRY_SUMMARY_H_

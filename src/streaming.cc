// Copyright 2026 The stubkit Authors.

#include "stubkit/streaming.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "stubkit/internal/metadata.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;
using WallTime = std::chrono::system_clock::time_point;

WallTime AddSaturating(WallTime base, nanoseconds delta) {
  auto step = std::chrono::duration_cast<WallTime::duration>(delta);
  if (step >= WallTime::max() - base) return WallTime::max();
  return base + step;
}

}  // namespace

WallTime StreamCallDeadline(const OptionsView& options) {
  WallTime end = options.get<DeadlineOption>();
  nanoseconds total = options.get<TotalTimeoutOption>();
  if (total > nanoseconds::zero()) {
    end = std::min(end, AddSaturating(std::chrono::system_clock::now(), total));
  }
  return end;
}

void SetStreamAttemptDeadline(grpc::ClientContext& context, WallTime call_end,
                              const OptionsView& options) {
  WallTime end = call_end;
  nanoseconds attempt = options.get<AttemptTimeoutOption>();
  if (attempt > nanoseconds::zero()) {
    end =
        std::min(end, AddSaturating(std::chrono::system_clock::now(), attempt));
  }
  // Overrides whatever the retry loop set: gRPC reads the deadline only when
  // the call starts, and max() means "none".
  context.set_deadline(end);
}

absl::Status ApplyStreamOptions(grpc::ClientContext& context,
                                const OptionsView& options,
                                const MethodInfo& method) {
  if (options.get<AttemptTimeoutOption>() < nanoseconds::zero() ||
      options.get<TotalTimeoutOption>() < nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat(method.full_name,
                     ": AttemptTimeoutOption and TotalTimeoutOption must not "
                     "be negative; nothing was sent"));
  }
  const auto* metadata = options.find<MetadataOption>();
  if (metadata != nullptr) {
    // gRPC would abort the process on it when the stream starts.
    absl::Status invalid = ValidateMetadata(*metadata);
    if (!invalid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(method.full_name, ": MetadataOption: ",
                       invalid.message(), "; nothing was sent"));
    }
  }
  SetStreamAttemptDeadline(context, StreamCallDeadline(options), options);
  if (metadata != nullptr) {
    for (const auto& [key, value] : *metadata) context.AddMetadata(key, value);
  }
  return absl::OkStatus();
}

absl::Status NullStreamError(const MethodInfo& method) {
  return absl::InternalError(
      absl::StrCat(method.full_name, ": the stub returned no stream"));
}

absl::Status EarlyFinishError(const MethodInfo& method) {
  return absl::CancelledError(absl::StrCat(
      method.full_name, ": Finish() was called before the stream ended"));
}

}  // namespace internal
}  // namespace stubkit

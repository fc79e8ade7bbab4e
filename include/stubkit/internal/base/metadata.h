// Copyright 2026 The stubkit Authors.
//
// Metadata validation: catch what gRPC would abort on.
//
// gRPC 1.51 validates outgoing metadata only when a call starts, and there a
// bad key or value trips `GPR_CODEGEN_ASSERT` and aborts the process. stubkit
// checks the same rules first and turns a violation into INVALID_ARGUMENT
// naming the key, before anything is sent:
//
//   absl::Status s = stubkit::internal::ValidateMetadata("X-Tenant", "blue");
//   // INVALID_ARGUMENT: metadata key 'X-Tenant': ... lowercase ...
//
// `MetadataOption` is checked when a call is set up; what a decorator or
// the setup hook adds goes through `stubkit::AddMetadata`
// (stubkit/call_options.h), which checks it the same way. Nothing checks
// what is added with `grpc::ClientContext::AddMetadata` directly.
//
// Not public API: the runtime calls it.

#ifndef STUBKIT_INTERNAL_METADATA_H_
#define STUBKIT_INTERNAL_METADATA_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace stubkit {
namespace internal {

// The rules of gRPC's `validate_metadata`, plus the reserved prefix:
//   - a key is non-empty and made of [a-z0-9-_.] only (no uppercase);
//   - a key does not start with "grpc-" (reserved for gRPC itself);
//   - a value of a key not ending in "-bin" holds bytes 0x20..0x7E only;
//     "-bin" values are arbitrary bytes.
absl::Status ValidateMetadata(absl::string_view key, absl::string_view value);

// Every entry of `metadata`; the first violation.
absl::Status ValidateMetadata(
    const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_METADATA_H_

// Copyright 2026 The stubkit Authors.

#include "stubkit/call_options.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/base/metadata.h"

namespace stubkit {

absl::Status AddMetadata(grpc::ClientContext& context, absl::string_view key,
                         absl::string_view value) {
  absl::Status status = internal::ValidateMetadata(key, value);
  if (status.ok()) context.AddMetadata(std::string(key), std::string(value));
  return status;
}

namespace internal {

absl::Status ValidateCallOptions(const OptionsView& options) {
  if (const auto* algorithm = options.find<CompressionOption>()) {
    // ClientContext::set_compression_algorithm aborts on an unknown one.
    if (*algorithm < GRPC_COMPRESS_NONE ||
        *algorithm >= GRPC_COMPRESS_ALGORITHMS_COUNT) {
      return absl::InvalidArgumentError(
          absl::StrCat("CompressionOption: not a grpc_compression_algorithm (",
                       static_cast<int>(*algorithm), ")"));
    }
  }
  if (const auto* authority = options.find<AuthorityOption>()) {
    if (authority->empty()) {
      return absl::InvalidArgumentError(
          "AuthorityOption must not be empty; unset it to use the channel's "
          "authority");
    }
    for (char c : *authority) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte <= 0x20 || byte >= 0x7f) {
        return absl::InvalidArgumentError(
            absl::StrCat("AuthorityOption holds byte ", static_cast<int>(byte),
                         "; an authority is printable ASCII without spaces"));
      }
    }
  }
  return absl::OkStatus();
}

void ApplyCallOptions(grpc::ClientContext& context,
                      const OptionsView& options) {
  // One lookup each; nothing is allocated unless an option is set.
  if (const bool* wait_for_ready = options.find<WaitForReadyOption>()) {
    context.set_wait_for_ready(*wait_for_ready);
  }
  if (const auto* algorithm = options.find<CompressionOption>()) {
    context.set_compression_algorithm(*algorithm);
  }
  if (const auto* authority = options.find<AuthorityOption>()) {
    context.set_authority(*authority);
  }
  if (const auto* credentials = options.find<CallCredentialsOption>()) {
    if (*credentials != nullptr) context.set_credentials(*credentials);
  }
}

void RunContextSetup(grpc::ClientContext& context, const OptionsView& options) {
  if (const auto* setup = options.find<ContextSetupOption>()) {
    if (*setup) (*setup)(context);
  }
}

namespace {

void CopyMap(const std::multimap<grpc::string_ref, grpc::string_ref>& from,
             std::multimap<std::string, std::string>* to) {
  to->clear();
  for (const auto& [key, value] : from) {
    to->emplace(std::string(key.data(), key.size()),
                std::string(value.data(), value.size()));
  }
}

}  // namespace

void CopyResponseMetadata(const grpc::ClientContext& context,
                          ResponseMetadata* out) {
  // GetServerInitialMetadata asserts unless gRPC asked for initial metadata
  // on this context, a private flag. Two public facts stand in (gRPC 1.51):
  // - peer() is empty while no call was created on the context, and not
  //   once one was (the address, else the channel's target, else
  //   "unknown"; were it empty, stubkit would only copy less).
  // - Every call has asked by the time stubkit copies, which is only once
  //   an attempt is over: BlockingUnaryCall and the callback unary call ask
  //   before they return (their early return after SendMessagePtr is dead
  //   code: it always returns OK, serializing later); a callback stream
  //   asks when its reactor is created or at StartCall, both before
  //   OnDone; a sync stream at its first Read or at Finish(), and stubkit
  //   copies after Finish().
  // A context without a call (a mock, a decorator that answered) has none.
  out->peer = context.peer();
  if (out->peer.empty()) {
    out->initial_metadata.clear();
  } else {
    CopyMap(context.GetServerInitialMetadata(), &out->initial_metadata);
  }
  CopyMap(context.GetServerTrailingMetadata(), &out->trailing_metadata);
}

}  // namespace internal
}  // namespace stubkit

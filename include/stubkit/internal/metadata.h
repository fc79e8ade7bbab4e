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
// `MetadataOption` is checked when a call is set up; whatever a decorator
// added to an attempt's context is checked by the generated gRPC stub, the
// bottom layer, through `ValidateOutgoingMetadata`.
//
// Not public API: generated code and the runtime call it.

#ifndef STUBKIT_INTERNAL_METADATA_H_
#define STUBKIT_INTERNAL_METADATA_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <memory>
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

// Everything `context` will send as initial metadata, as added by stubkit
// and by any decorator. OK when all of it is legal. Allocates nothing.
absl::Status ValidateOutgoingMetadata(const grpc::ClientContext& context,
                                      absl::string_view method_full_name);

// Whether gRPC asked for the server's initial metadata on `context`, so that
// `GetServerInitialMetadata()` may be called (it asserts otherwise). gRPC
// asks when a unary call starts and when a stream first reads or finishes;
// once that call is over, the map is complete (empty if none came). False
// for a context no gRPC call used (a mock, a decorator that answered).
bool InitialMetadataRequested(const grpc::ClientContext& context);

// gRPC status form of the above, for the generated stub's stream openers.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Stream stand-ins for an attempt refused before it was sent: reading yields
// nothing, writing fails, `Finish()` returns `status`.
template <typename Response>
class RefusedClientReader final : public grpc::ClientReaderInterface<Response> {
 public:
  explicit RefusedClientReader(grpc::Status status)
      : status_(std::move(status)) {}
  grpc::Status Finish() override { return status_; }
  bool NextMessageSize(uint32_t* size) override {
    *size = 0;
    return false;
  }
  bool Read(Response* /*msg*/) override { return false; }
  void WaitForInitialMetadata() override {}

 private:
  grpc::Status status_;
};

template <typename Request>
class RefusedClientWriter final : public grpc::ClientWriterInterface<Request> {
 public:
  explicit RefusedClientWriter(grpc::Status status)
      : status_(std::move(status)) {}
  grpc::Status Finish() override { return status_; }
  bool Write(const Request& /*msg*/, grpc::WriteOptions /*options*/) override {
    return false;
  }
  bool WritesDone() override { return false; }

 private:
  grpc::Status status_;
};

template <typename Request, typename Response>
class RefusedClientReaderWriter final
    : public grpc::ClientReaderWriterInterface<Request, Response> {
 public:
  explicit RefusedClientReaderWriter(grpc::Status status)
      : status_(std::move(status)) {}
  grpc::Status Finish() override { return status_; }
  bool NextMessageSize(uint32_t* size) override {
    *size = 0;
    return false;
  }
  bool Read(Response* /*msg*/) override { return false; }
  void WaitForInitialMetadata() override {}
  bool Write(const Request& /*msg*/, grpc::WriteOptions /*options*/) override {
    return false;
  }
  bool WritesDone() override { return false; }

 private:
  grpc::Status status_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_METADATA_H_

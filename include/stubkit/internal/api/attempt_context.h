// Copyright 2026 The stubkit Authors.
//
// What the drivers take from an attempt's grpc::ClientContext once it
// started, besides its status: the server's trailers, read for the retry or
// hedging decision after a failure (`ServerTrailers`), and a cancel
// (`CancelAttempt`, every TryCancel stubkit sends). Both pass through here so
// that a test transport that plays attempts without a gRPC call (the
// simulation's, tests/simulation/sim_fakes.h) can hand the decision its
// scripted trailers and see each cancel, through an `AttemptTap`, instead of
// reaching into the context's private members. The decision itself takes the
// trailers as plain data.
//
// With no tap installed (every program but such a test) this is gRPC's own
// reads and TryCancel, plus one atomic load on a failure or a cancel; the
// success path of a call reads nothing here.

#ifndef STUBKIT_INTERNAL_ATTEMPT_CONTEXT_H_
#define STUBKIT_INTERNAL_ATTEMPT_CONTEXT_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/string_ref.h>

#include <map>

namespace stubkit {
namespace internal {

using ServerTrailerMap = std::multimap<grpc::string_ref, grpc::string_ref>;

// Test only: stands in for what gRPC would have put in a context that never
// started a gRPC call. Its functions may run on any thread.
class AttemptTap {
 public:
  virtual ~AttemptTap() = default;
  // The trailers of `context`'s ended attempt, alive while `context` is;
  // null: the context's own.
  virtual const ServerTrailerMap* Trailers(
      const grpc::ClientContext& context) = 0;
  // `context` was just cancelled (after its TryCancel).
  virtual void Cancelled(const grpc::ClientContext& context) = 0;
};

// Installs `tap` for the whole process (null: none). Test only: set it
// before the calls it serves start and clear it after they ended.
void SetAttemptTap(AttemptTap* tap);

// The trailers the server of `context`'s failed attempt sent: the tap's, or
// `context.GetServerTrailingMetadata()`. Alive while `context` is.
const ServerTrailerMap* ServerTrailers(const grpc::ClientContext& context);

// `context.TryCancel()`, then tells the tap.
void CancelAttempt(grpc::ClientContext& context);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ATTEMPT_CONTEXT_H_

// Copyright 2026 The stubkit Authors.
//
// Per-attempt context settings and response metadata.
//
// stubkit gives every attempt a fresh `grpc::ClientContext`, so the knobs a
// raw gRPC user sets on a context are options here. Each applies to every
// attempt: sync, async and hedged calls, server streams (each attempt and
// each resume) and client and bidi streams (their one context). Set them
// for a whole client or for one call, like any other option:
//
//   auto one_call = stubkit::Options{}
//       .set<stubkit::WaitForReadyOption>(true)
//       .set<stubkit::CompressionOption>(GRPC_COMPRESS_GZIP)
//       .set<stubkit::AuthorityOption>("shard-7.example.com")
//       .set<stubkit::CallCredentialsOption>(
//           grpc::AccessTokenCredentials(token))
//       .set<stubkit::ContextSetupOption>([](grpc::ClientContext& context) {
//         context.set_fail_fast(false);  // anything else ClientContext has
//       });
//
// Each option's default and meaning: docs/options.md (the table); what
// bad values give: docs/reliability.md. The setup hook, checked metadata
// (`AddMetadata`) and response metadata are described at their
// declarations below.

#ifndef STUBKIT_CALL_OPTIONS_H_
#define STUBKIT_CALL_OPTIONS_H_

#include <grpc/compression.h>
#include <grpcpp/client_context.h>
#include <grpcpp/security/credentials.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/options.h"

namespace stubkit {

// `ClientContext::set_wait_for_ready` for every attempt. Set (true or
// false) it is explicit and overrides the channel's service config; unset,
// gRPC's default applies (fail fast).
//
// Wait-for-ready and retries: with `WaitForReadyOption(true)` an attempt
// that finds no ready connection waits for one instead of failing at once
// with UNAVAILABLE, so a server that is starting (or reconnecting) costs no
// retry. The wait is still bounded by the attempt's deadline: the call's
// end (`DeadlineOption`, `TotalTimeoutOption`, the retry policy's time
// limit) and `AttemptTimeoutOption`. An attempt that runs out of its
// attempt timeout while waiting is retried as usual; one that reaches the
// call's end ends the call with DEADLINE_EXCEEDED.
struct WaitForReadyOption {
  using Type = bool;
  static Type Default() { return false; }
};

// `ClientContext::set_compression_algorithm` for every attempt. Unset, the
// channel's default applies. A value outside `grpc_compression_algorithm`
// is INVALID_ARGUMENT (gRPC would abort the process on it).
struct CompressionOption {
  using Type = grpc_compression_algorithm;
  static Type Default() { return GRPC_COMPRESS_NONE; }
};

// `ClientContext::set_authority` (the `:authority` sent) for every attempt.
// Unset, the channel's. Empty, or holding bytes outside printable ASCII, is
// INVALID_ARGUMENT.
struct AuthorityOption {
  using Type = std::string;
  static Type Default() { return {}; }
};

// `ClientContext::set_credentials` for every attempt, e.g. a per-call OAuth
// token. Null means unset. gRPC sends call credentials only on a channel
// whose security level allows them (TLS, local credentials); on an
// insecure channel gRPC 1.51 fails the attempt with UNAUTHENTICATED ("does
// not have a sufficient security level") without reaching the server.
struct CallCredentialsOption {
  using Type = std::shared_ptr<grpc::CallCredentials>;
  static Type Default() { return nullptr; }
};

// A hook run on each attempt's context after stubkit set its own: the
// deadline, `MetadataOption`, the retry header and the options above.
// What it sets wins for that attempt; in particular, a deadline it sets
// replaces stubkit's on the wire (for streams too: it runs after the
// stream's deadline). stubkit still decides with its own computed
// deadline: whether a DEADLINE_EXCEEDED was the attempt timeout (retried)
// or the call's end (final), and when the call is over. It runs on the
// thread that starts the attempt, with no stubkit lock held (for a hedged
// call, possibly on several threads at once, each with its own attempt's
// context); it must not block, and must not start or cancel the call. To
// add metadata, it calls `stubkit::AddMetadata` (below), never
// `context.AddMetadata`: a key or value stubkit refuses is simply not
// added, the hook sees the INVALID_ARGUMENT, and the attempt goes on
// without it. Null means unset.
struct ContextSetupOption {
  using Type = std::function<void(grpc::ClientContext&)>;
  static Type Default() { return nullptr; }
};

// Adds `key: value` to the metadata `context` will send, checked as
// `MetadataOption` is: a key is non-empty, made of [a-z0-9-_.] only and
// does not start with "grpc-"; the value of a key not ending in "-bin" is
// printable ASCII. Otherwise INVALID_ARGUMENT naming the key, and nothing
// is added. The checked form of `grpc::ClientContext::AddMetadata`, on
// which gRPC aborts the process instead; the route for decorators and the
// setup hook alike. A decorator returns that status as the attempt's (a
// sync stream method: a stream whose `Finish()` returns it), so the attempt
// fails unsent and, INVALID_ARGUMENT not being retryable, the call ends:
//
//   absl::StatusOr<demo::GetResponse> Get(grpc::ClientContext& context,
//                                         const stubkit::OptionsView& options,
//                                         const demo::GetRequest& request)
//       override {
//     absl::Status added = stubkit::AddMetadata(context, "x-tenant", tenant_);
//     if (!added.ok()) return added;
//     return FooStubDecorator::Get(context, options, request);
//   }
//
// `grpc::ClientContext::AddMetadata` is gRPC's own and checks nothing: gRPC
// 1.51 aborts the process when a call starts with an illegal key (such as
// `X-Tenant`) or value on it, and stubkit does not look at what was added
// that way.
[[nodiscard]] absl::Status AddMetadata(grpc::ClientContext& context,
                                       absl::string_view key,
                                       absl::string_view value);

// What one attempt received besides its response.
struct ResponseMetadata {
  std::multimap<std::string, std::string> initial_metadata;   // headers
  std::multimap<std::string, std::string> trailing_metadata;  // trailers
  std::string peer;  // ClientContext::peer(), e.g. "ipv4:127.0.0.1:5000"
};

// Set to a `std::shared_ptr<ResponseMetadata>`, the call fills it with what
// its final attempt received, whether it succeeded or failed (for a hedged
// call: the winning attempt, or the last to fail; for a stream: the last
// attempt, at its end, that is once `Read` returned false or at `Finish()`
// for a client or bidi stream):
//
//   auto received = std::make_shared<stubkit::ResponseMetadata>();
//   auto response = client.Echo(request, stubkit::Options{}.set<
//       stubkit::ResponseMetadataOption>(received));
//   received->trailing_metadata.find("x-served-by");
//
// Read it once the call has returned (async: once its callback ran); use
// one object per call. Client and bidi streams fill it at `Finish()`. An
// attempt that created no gRPC call (a mocked or decorated stub that
// answered itself) leaves the initial metadata, and the peer, empty. When
// the option is unset (null) nothing is copied or allocated.
//
// gRPC asserts (aborts) when initial metadata is read from a context on
// which it never asked for any, and keeps that flag private, so stubkit
// reads initial metadata from a context exactly when it has a call
// (`peer()` is not empty): every gRPC call asks for it by the time it is
// finished, and stubkit copies only from finished attempts. A stub,
// decorator or `RetryLoop` attempt that creates a gRPC call on the
// attempt's context itself must therefore finish it (a unary call
// returned, a stream's `Finish()` or reactor's `OnDone`) before the
// attempt ends.
struct ResponseMetadataOption {
  using Type = std::shared_ptr<ResponseMetadata>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_CALL_OPTIONS_H_

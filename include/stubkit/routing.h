// Copyright 2026 The stubkit Authors.
//
// Request routing headers (AIP-4222). For a unary or server-streaming
// method with a `google.api.routing` annotation, or else with a
// `google.api.http` rule whose path has variables, a generated client adds
// `x-goog-request-params` to each attempt, built from that attempt's
// request: `key=value` pairs joined by `&`, keys and values percent-encoded
// (every byte but A-Z a-z 0-9 - . _ ~), e.g.
//
//   x-goog-request-params: name=projects%2Fp%2Ftopics%2Ft
//
// Methods without those annotations get nothing. Turn the header off for a
// client or a call (e.g. a server that is not Google's rejects it, or you
// set your own through MetadataOption):
//
//   auto options = stubkit::Options{}.set<stubkit::RoutingHeaderOption>(false);
//
// docs/api-conventions.md has the rules for building the value.

#ifndef STUBKIT_ROUTING_H_
#define STUBKIT_ROUTING_H_

namespace stubkit {

// Whether generated clients send `x-goog-request-params`. Default: true.
struct RoutingHeaderOption {
  using Type = bool;
  static Type Default() { return true; }
};

}  // namespace stubkit

#endif  // STUBKIT_ROUTING_H_

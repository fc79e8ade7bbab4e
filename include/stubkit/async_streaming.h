// Copyright 2026 The stubkit Authors.
//
// Async server streaming with retried opening and hook-driven resume.
//
// The async counterpart of `StreamReader`: messages are pushed to a callback
// as they arrive (the next read starts when it returns), and the end of the
// stream to another. Opening is retried like a unary call until the first
// message; after that, a retryable break is resumed only through the
// method's resume hook (`SClient::MResumeOption`), which rewrites the request
// from the last message. Each resumption is a retry (retryable code,
// idempotent call, backoff waited on the timer), and the callback sees every
// message once. As for `StreamReader`, a break that followed at least one
// message restarts the retry policy (time limit and error count) and the
// backoff, so a stream read for hours can still resume; the whole life of
// the stream, resumes included, is bounded only by `TotalTimeoutOption` or
// `DeadlineOption`, counted from the stream's open.
//
//   client.AsyncRange(request,
//       [](const Item& item) { Use(item); },           // each message
//       [](absl::Status status) { Done(status); },     // once, at the end
//       stubkit::Options{}.set<ItemsClient::RangeResumeOption>(hook));
//
// Built on gRPC's callback API (`grpc::ClientReadReactor`); no thread waits.

#ifndef STUBKIT_ASYNC_STREAMING_H_
#define STUBKIT_ASYNC_STREAMING_H_

#include <functional>

#include "absl/status/status.h"

namespace stubkit {

// Receives each message of an async server stream.
template <typename Response>
using MessageCallback = std::function<void(const Response&)>;
using DoneCallback = std::function<void(absl::Status)>;

}  // namespace stubkit

#endif  // STUBKIT_ASYNC_STREAMING_H_

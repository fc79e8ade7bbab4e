// Copyright 2026 The stubkit Authors.
//
// The operation behind an async server stream (`AsyncServerStreamOperation`).
// Not API: see stubkit/async_streaming.h.

#ifndef STUBKIT_INTERNAL_ASYNC_STREAMING_H_
#define STUBKIT_INTERNAL_ASYNC_STREAMING_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "stubkit/async_streaming.h"
#include "stubkit/internal/async_retry_loop.h"
#include "stubkit/internal/streaming.h"
#include "stubkit/streaming.h"

namespace stubkit {
namespace internal {

// Opens one attempt: hands `reactor` to the grpc_cpp_plugin
// `async()->M(&context, &request, reactor)` and returns OK, or returns why
// it could not (the reactor is then untouched). The operation starts it.
template <typename Request, typename Response>
using AsyncStreamOpener = std::function<absl::Status(
    grpc::ClientContext&, const OptionsView&, const Request&,
    grpc::ClientReadReactor<Response>*)>;

template <typename ResumeTag, typename Request, typename Response>
class AsyncServerStreamOperation final : public AsyncRetryOperationBase {
 public:
  AsyncServerStreamOperation(const MethodInfo& method, Options call,
                             Options client, const Request& request,
                             AsyncStreamOpener<Request, Response> open,
                             MessageCallback<Response> on_message,
                             DoneCallback on_done)
      : AsyncRetryOperationBase(method, std::move(call), std::move(client)),
        request_(request),
        open_(std::move(open)),
        on_message_(std::move(on_message)),
        on_done_(std::move(on_done)) {
    state().UseStreamDeadlines();
  }

 private:
  // One attempt's reactor. gRPC calls OnDone last; it deletes itself then.
  class Reactor final : public grpc::ClientReadReactor<Response> {
   public:
    explicit Reactor(std::shared_ptr<AsyncServerStreamOperation> operation)
        : operation_(std::move(operation)) {}

    void Begin() {
      this->StartRead(&message_);
      this->StartCall();
    }
    void OnReadDone(bool ok) override {
      if (!ok) return;  // the stream ended; OnDone follows
      operation_->OnMessage(message_);
      this->StartRead(&message_);
    }
    void OnDone(const grpc::Status& status) override {
      operation_->OnAttemptDone(FromGrpcStatus(status));
      delete this;
    }

   private:
    std::shared_ptr<AsyncServerStreamOperation> operation_;
    Response message_;
  };

  void ConfigureAttempt(grpc::ClientContext& /*context*/) override {
    received_in_attempt_ = false;
    if (resume_pending_) state().CountResume();  // for the summary
    resume_pending_ = false;
  }

  void StartAttempt(grpc::ClientContext& context,
                    const OptionsView& options) override {
    auto* reactor =
        new Reactor(std::static_pointer_cast<AsyncServerStreamOperation>(
            shared_from_this()));
    absl::Status opened = open_(context, options, request_, reactor);
    if (!opened.ok()) {
      delete reactor;
      OnAttemptDone(opened);
      return;
    }
    reactor->Begin();
  }

  void OnMessage(const Response& message) {
    received_in_attempt_ = true;
    if (hook() != nullptr) last_ = message;
    on_message_(message);
  }

  bool MayRetry(const absl::Status& /*status*/) override {
    if (!received_in_attempt_) return true;  // still opening
    // Data reached the caller: only the hook may resume, from `last_`.
    // Not resumed still goes through OnFailure, for the retry summary, the
    // observer and the metrics.
    const ResumeHook<Request, Response>* resume = hook();
    if (resume == nullptr) {
      state().ForbidRepeat(kNoResumeHook);
    } else if (!(*resume)(last_, request_)) {
      state().ForbidRepeat(kResumeDeclined);
    } else {
      // The stream made progress: the policy and backoff start again.
      state().RestartPolicy();
      resume_pending_ = true;
    }
    return true;
  }

  void Deliver(absl::Status status) override {
    DoneCallback done = std::move(on_done_);
    done(std::move(status));
  }

  const ResumeHook<Request, Response>* hook() const {
    const auto* hook = options().template find<ResumeTag>();
    return hook != nullptr && *hook ? hook : nullptr;
  }

  Request request_;
  AsyncStreamOpener<Request, Response> open_;
  MessageCallback<Response> on_message_;
  DoneCallback on_done_;
  Response last_;
  bool received_in_attempt_ = false;
  bool resume_pending_ = false;  // the next attempt is the hook's
};

template <typename ResumeTag, typename Request, typename Response>
void StartAsyncServerStream(const MethodInfo& method,
                            const OptionsView& options, const Request& request,
                            AsyncStreamOpener<Request, Response> open,
                            MessageCallback<Response> on_message,
                            DoneCallback on_done) {
  auto operation = std::make_shared<
      AsyncServerStreamOperation<ResumeTag, Request, Response>>(
      method, options.call(), CopyLowerLayers(options), request,
      std::move(open), std::move(on_message), std::move(on_done));
  operation->Start();
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ASYNC_STREAMING_H_

// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/async_call.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>

#include <utility>

#include "stubkit/cancellation.h"
#include "stubkit/internal/api/timer_queue.h"

namespace stubkit {
namespace internal {

namespace {

// Holds one reference on gRPC's shared callback completion queue for the
// life of the process.
//
// The evidence (gRPC 1.51.1, Debian 12): without this, releasing an async
// operation inline at the end of its gRPC callback made ASan report a double
// free in grpc_cq_internal_unref on a thread started by libgrpc++
// (tests/integration/generated_async_test.cc, DestroyingTheClientMidFlight*,
// in 1 of about 30 repetitions). The operation holds the last references
// to the channel when the client was destroyed mid-flight (its context and
// its stub). In 1.51, with the default epoll poller
// (grpc_iomgr_run_in_background() is false), every grpc::Channel takes its
// callback queue from CompletionQueue::CallbackAlternativeCQ(): one queue
// for the process, reference-counted by channel, served by 2-16 "nexting"
// threads. ~Channel calls ReleaseCallbackAlternativeCQ(); when the count
// reaches 0 it shuts the queue down, joins the nexting threads and deletes
// the queue (src/cpp/common/completion_queue_cc.cc). Done from a callback,
// that is on a nexting thread: it cannot join itself, and it goes on
// polling the deleted queue when the callback returns.
//
// So the hazard is only the last channel of the process being destroyed
// on a nexting thread. A channel of our own that never goes away keeps
// the count above 0: it takes its reference in CallbackCQ(), called when a
// callback call is created on it. The call below is created and never
// started (nothing is sent; the target is never resolved), and everything
// is kept for the life of the process. This replaced a hop of every
// operation's last release to the timer thread (a process-wide lock and
// thread on every call's success path); same test, 60 repetitions, clean.
void KeepCallbackQueueReferenced() {
  struct Keeper {
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateChannel("unix:/dev/null/stubkit-callback-queue-keeper",
                            grpc::InsecureChannelCredentials());
    grpc::GenericStub stub{channel};
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    grpc::ClientUnaryReactor reactor;
  };
  static Keeper* const keeper = new Keeper;  // never destroyed
  keeper->stub.PrepareUnaryCall(&keeper->context,
                                "/stubkit.internal.CallbackQueueKeeper/Never",
                                grpc::StubOptions(), &keeper->request,
                                &keeper->response, &keeper->reactor);
}

}  // namespace

void KeepGrpcInitialised() {
  static const bool kInitialised = [] {
    grpc_init();
    KeepCallbackQueueReferenced();
    return true;
  }();
  (void)kInitialised;
}

AsyncCallBase::AsyncCallBase(const MethodInfo& method, Options call,
                             Options client)
    : call_((KeepGrpcInitialised(), std::move(call))),
      client_(std::move(client)),
      view_(call_, client_),
      state_(method, view_),
      sleeper_owner_(view_.get<AsyncSleeperOption>()),
      sleeper_(sleeper_owner_ != nullptr ? sleeper_owner_.get()
                                         : &DefaultAsyncSleeper()) {}

AsyncCallBase::~AsyncCallBase() = default;

uint64_t AsyncCallBase::AddCancelCallback() {
  // A weak reference: the token may outlive the operation.
  std::weak_ptr<AsyncCallBase> weak = weak_from_this();
  return state_.cancellation()->AddCallback([weak] {
    if (auto self = weak.lock()) self->OnCancel();
  });
}

void AsyncCallBase::RemoveCancelCallback(uint64_t registration) {
  state_.cancellation()->RemoveCallback(registration);
}

}  // namespace internal
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// The cancel behind the `AsyncStreamReader` an async server stream returns.
// Not API: see stubkit/async_streaming.h.

#ifndef STUBKIT_INTERNAL_ASYNC_STREAM_CANCEL_H_
#define STUBKIT_INTERNAL_ASYNC_STREAM_CANCEL_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "stubkit/cancellation.h"
#include "stubkit/internal/api/stream_handles.h"

namespace stubkit {
namespace internal {

// A token of the stream's own, set as the call's `CancellationOption`: the
// handle's `Cancel()` cancels it, and so does the user's token (if any),
// from `Link()` until `Unlink()`, as for the async write streams.
class AsyncStreamCancel final : public AsyncStreamReaderImpl {
 public:
  explicit AsyncStreamCancel(std::shared_ptr<CancellationToken> user_token)
      : user_token_(std::move(user_token)) {}
  AsyncStreamCancel(const AsyncStreamCancel&) = delete;
  AsyncStreamCancel& operator=(const AsyncStreamCancel&) = delete;

  const std::shared_ptr<CancellationToken>& token() const { return token_; }

  // Chains the user's token to the stream's; before the stream starts (a
  // token already cancelled cancels the stream's at once).
  void Link() {
    if (user_token_ == nullptr) return;
    user_callback_ =
        user_token_->AddCallback([token = token_] { token->Cancel(); });
  }
  // Unchains it once the stream ended, so that a long-lived user token
  // keeps no callback per ended stream.
  void Unlink() {
    if (user_token_ != nullptr && user_callback_ != 0) {
      user_token_->RemoveCallback(user_callback_);
    }
  }

  void Cancel() override { token_->Cancel(); }

 private:
  const std::shared_ptr<CancellationToken> token_ =
      std::make_shared<CancellationToken>();
  const std::shared_ptr<CancellationToken> user_token_;
  uint64_t user_callback_ = 0;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ASYNC_STREAM_CANCEL_H_

// Copyright 2026 The stubkit Authors.
//
// The interfaces behind the stream handles of stubkit/streaming.h and
// stubkit/async_streaming.h (each handle owns one), a reader over canned
// responses and the fake streams of tests. Not API: a test fakes a stream
// with `stubkit::MakeStreamReader`, `MakeStreamWriter`,
// `MakeStreamReaderWriter`, `MakeAsyncStreamWriter` or a generated mock.

#ifndef STUBKIT_INTERNAL_STREAM_HANDLES_H_
#define STUBKIT_INTERNAL_STREAM_HANDLES_H_

#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace stubkit {
namespace internal {

// The moving parts behind the stream handles; implement them to fake a
// stream in a test.
template <typename Response>
class StreamReaderImpl {
 public:
  virtual ~StreamReaderImpl() = default;
  virtual bool Read(Response* response) = 0;
  virtual absl::Status Finish() = 0;
  virtual void Cancel() {}
  virtual int attempts() const { return 1; }
};

template <typename Request, typename Response>
class StreamWriterImpl {
 public:
  virtual ~StreamWriterImpl() = default;
  virtual bool Write(const Request& request) = 0;
  virtual bool WritesDone() = 0;
  virtual absl::StatusOr<Response> Finish() = 0;
  virtual void Cancel() {}
  virtual int attempts() const { return 1; }
};

template <typename Request, typename Response>
class StreamReaderWriterImpl {
 public:
  virtual ~StreamReaderWriterImpl() = default;
  virtual bool Read(Response* response) = 0;
  virtual bool Write(const Request& request) = 0;
  virtual bool WritesDone() = 0;
  virtual absl::Status Finish() = 0;
  virtual void Cancel() {}
  virtual int attempts() const { return 1; }
};

template <typename Response>
class FinishedStreamReader : public StreamReaderImpl<Response> {
 public:
  FinishedStreamReader(std::vector<Response> responses, absl::Status status)
      : responses_(std::move(responses)), status_(std::move(status)) {}
  bool Read(Response* response) override {
    if (next_ >= responses_.size()) return false;
    *response = responses_[next_++];
    return true;
  }
  absl::Status Finish() override { return status_; }

 private:
  std::vector<Response> responses_;
  std::size_t next_ = 0;
  absl::Status status_;
};

// The write side of the fake streams (MakeStreamWriter,
// MakeStreamReaderWriter, MakeAsyncStreamWriter): accepts the first
// `accepted` writes into `log` (if not null), then is broken. `Log` is
// stubkit::FakeStreamLog<Request>. Not thread-safe: the async fake locks.
template <typename Request, typename Log>
class FakeWrites {
 public:
  FakeWrites(Log* log, std::size_t accepted) : log_(log), accepted_(accepted) {}

  bool Write(Request request) {
    if (cancelled_ || writes_done_ || broken_) return false;
    if (written_ == accepted_) {
      broken_ = true;
      return false;
    }
    ++written_;
    if (log_ != nullptr) log_->writes.push_back(std::move(request));
    return true;
  }
  bool WritesDone() {
    if (cancelled_ || writes_done_ || broken_) return false;
    writes_done_ = true;
    if (log_ != nullptr) log_->writes_done = true;
    return true;
  }
  // True the first time.
  bool Cancel() {
    if (log_ != nullptr) log_->cancelled = true;
    const bool first = !cancelled_;
    cancelled_ = true;
    return first;
  }
  bool cancelled() const { return cancelled_; }

 private:
  Log* log_;
  std::size_t accepted_;
  std::size_t written_ = 0;
  bool broken_ = false;
  bool writes_done_ = false;
  bool cancelled_ = false;
};

template <typename Request, typename Response, typename Log>
class FakeStreamWriter : public StreamWriterImpl<Request, Response> {
 public:
  FakeStreamWriter(absl::StatusOr<Response> result, Log* log,
                   std::size_t accepted)
      : result_(std::move(result)), writes_(log, accepted) {}
  bool Write(const Request& request) override { return writes_.Write(request); }
  bool WritesDone() override { return writes_.WritesDone(); }
  absl::StatusOr<Response> Finish() override {
    if (writes_.cancelled()) return absl::CancelledError("cancelled");
    return result_;
  }
  void Cancel() override { writes_.Cancel(); }

 private:
  absl::StatusOr<Response> result_;
  FakeWrites<Request, Log> writes_;
};

template <typename Request, typename Response, typename Log>
class FakeStreamReaderWriter
    : public StreamReaderWriterImpl<Request, Response> {
 public:
  FakeStreamReaderWriter(std::vector<Response> responses, absl::Status status,
                         Log* log, std::size_t accepted)
      : responses_(std::move(responses)),
        status_(std::move(status)),
        writes_(log, accepted) {}
  bool Read(Response* response) override {
    if (writes_.cancelled() || next_ >= responses_.size()) return false;
    *response = responses_[next_++];
    return true;
  }
  bool Write(const Request& request) override { return writes_.Write(request); }
  bool WritesDone() override { return writes_.WritesDone(); }
  absl::Status Finish() override {
    if (writes_.cancelled()) return absl::CancelledError("cancelled");
    return status_;
  }
  void Cancel() override { writes_.Cancel(); }

 private:
  std::vector<Response> responses_;
  std::size_t next_ = 0;
  absl::Status status_;
  FakeWrites<Request, Log> writes_;
};

// Behind `AsyncStreamReader`: an async server stream's cancel.
class AsyncStreamReaderImpl {
 public:
  virtual ~AsyncStreamReaderImpl() = default;
  virtual void Cancel() = 0;
};

template <typename Request>
class AsyncStreamWriterImpl {
 public:
  virtual ~AsyncStreamWriterImpl() = default;
  virtual bool Write(Request request) = 0;
  virtual bool WritesDone() = 0;
  virtual void Cancel() = 0;
};

// Any thread may write, so it locks; `on_cancel` runs outside the lock.
template <typename Request, typename Log>
class FakeAsyncStreamWriter : public AsyncStreamWriterImpl<Request> {
 public:
  FakeAsyncStreamWriter(Log* log, std::size_t accepted,
                        std::function<void()> on_cancel)
      : writes_(log, accepted), on_cancel_(std::move(on_cancel)) {}
  bool Write(Request request) override {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_.Write(std::move(request));
  }
  bool WritesDone() override {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_.WritesDone();
  }
  void Cancel() override {
    std::function<void()> on_cancel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (writes_.Cancel()) on_cancel = std::move(on_cancel_);
    }
    if (on_cancel) on_cancel();
  }

 private:
  std::mutex mu_;
  FakeWrites<Request, Log> writes_;
  std::function<void()> on_cancel_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_STREAM_HANDLES_H_

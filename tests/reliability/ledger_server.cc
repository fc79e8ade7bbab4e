// Copyright 2026 The stubkit Authors.
//
// The process-fault suite's server: a stubkit.reliability.Ledger service in
// its own process, killed and restarted by the tests.
//
//   ledger_server --port=<port> --ledger=<file>
//
// Every applied operation is one line appended to the ledger file with a
// single write(2) before the response is sent ("P <key> <value>" for Put,
// "A <op_id>" for Append), so the file survives SIGKILL and tells the tests
// exactly what was applied, and how often. A restarted server reads the file
// back. It prints "READY <port>" when it serves, and exits 2 on bad flags
// and 3 when the port cannot be bound.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "stubkit/reliability/ledger.grpc.pb.h"

namespace {

using stubkit::reliability::AppendRequest;
using stubkit::reliability::AppendResponse;
using stubkit::reliability::Ledger;
using stubkit::reliability::PutRequest;
using stubkit::reliability::PutResponse;
using stubkit::reliability::SlowRequest;
using stubkit::reliability::SlowResponse;
using stubkit::reliability::WatchEvent;
using stubkit::reliability::WatchRequest;

// Sleeps up to `ms`, returning early when the client went away.
void SleepUnlessCancelled(grpc::ServerContext* context, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end && !context->IsCancelled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

class LedgerService final : public Ledger::Service {
 public:
  explicit LedgerService(const std::string& path) {
    std::ifstream in(path);
    std::string kind, a, b;
    while (in >> kind) {
      if (kind == "P" && in >> a >> b) {
        values_[a] = b;
      } else if (kind == "A" && in >> a) {
        ++sequence_;
      }
    }
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  bool ok() const { return fd_ >= 0; }

  grpc::Status Put(grpc::ServerContext* context, const PutRequest* request,
                   PutResponse*) override {
    if (request->delay_ms() > 0) {
      SleepUnlessCancelled(context, request->delay_ms());
    }
    absl::MutexLock lock(&mu_);
    if (!Record("P " + request->key() + " " + request->value())) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "ledger write failed");
    }
    values_[request->key()] = request->value();
    return grpc::Status::OK;
  }

  grpc::Status Append(grpc::ServerContext* context,
                      const AppendRequest* request,
                      AppendResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      if (!Record("A " + request->op_id())) {
        return grpc::Status(grpc::StatusCode::INTERNAL, "ledger write failed");
      }
      response->set_sequence(++sequence_);
    }
    if (request->delay_after_apply_ms() > 0) {
      SleepUnlessCancelled(context, request->delay_after_apply_ms());
    }
    return grpc::Status::OK;
  }

  grpc::Status Slow(grpc::ServerContext* context, const SlowRequest* request,
                    SlowResponse*) override {
    SleepUnlessCancelled(context, request->sleep_ms());
    return grpc::Status::OK;
  }

  grpc::Status Watch(grpc::ServerContext* context,
                     const WatchRequest* request,
                     grpc::ServerWriter<WatchEvent>* writer) override {
    for (int i = 0; i < request->count(); ++i) {
      if (i > 0) SleepUnlessCancelled(context, request->interval_ms());
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      WatchEvent event;
      event.set_number(request->first() + i);
      if (!writer->Write(event)) return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }

 private:
  bool Record(const std::string& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::string line = entry + "\n";
    return write(fd_, line.data(), line.size()) ==
           static_cast<ssize_t>(line.size());
  }

  absl::Mutex mu_;
  int fd_ = -1;
  int64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> values_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string ledger;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--port=", 0) == 0) {
      port = std::atoi(arg.c_str() + 7);
    } else if (arg.rfind("--ledger=", 0) == 0) {
      ledger = arg.substr(9);
    } else {
      std::fprintf(stderr, "ledger_server: unknown flag '%s'\n", argv[i]);
      return 2;
    }
  }
  if (port <= 0 || ledger.empty()) {
    std::fprintf(stderr, "usage: ledger_server --port=<port> --ledger=<file>\n");
    return 2;
  }
  LedgerService service(ledger);
  if (!service.ok()) {
    std::fprintf(stderr, "ledger_server: cannot open %s\n", ledger.c_str());
    return 2;
  }
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port),
                           grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound != port) {
    std::fprintf(stderr, "ledger_server: cannot listen on port %d\n", port);
    return 3;
  }
  std::printf("READY %d\n", port);
  std::fflush(stdout);
  server->Wait();  // until killed
  return 0;
}

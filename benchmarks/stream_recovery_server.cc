// Copyright 2026 The stubkit Authors.
//
// stream_recovery's server: stubkit.testing.StreamService
// (protos/stubkit/testing/streams.proto) in its own process, which the
// benchmark kills with SIGKILL and restarts on the same port
// (tests/reliability/server_process.h starts it).
//
//   stream_recovery_server --port=<port> --ledger=<file>
//
// It appends one line per event to the ledger with a single write(2), so
// that the file survives SIGKILL and says what each server process
// received, and when (steady_clock nanoseconds: CLOCK_MONOTONIC, the
// benchmark's clock too):
//
//   S <pid> <ns>                  serving (after BuildAndStart)
//   C <stream> <value> <ns>       Sum (client stream) read an item
//   E <stream> <count> <sum> <ns> Sum answered OK
//   B <stream> <value> <ns>       Double (bidi) read an item (then answers
//                                 it with its double)
//
// <stream> is "<pid>.<n>", one per call. It prints "READY <port>" when it
// serves, and exits 2 on bad flags and 3 when the port cannot be bound.

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "stubkit/testing/streams.grpc.pb.h"

namespace {

using stubkit::testing::Item;
using stubkit::testing::RangeRequest;
using stubkit::testing::SumResponse;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Ledger {
 public:
  explicit Ledger(const std::string& path)
      : fd_(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                 0644)) {}
  bool ok() const { return fd_ >= 0; }
  // One write(2) per line: O_APPEND keeps lines whole across threads.
  void Record(const std::string& line) {
    const std::string out = line + " " + std::to_string(NowNs()) + "\n";
    if (write(fd_, out.data(), out.size()) < 0) {
      std::perror("stream_recovery_server: ledger");
    }
  }

 private:
  int fd_;
};

class Service final : public stubkit::testing::StreamService::Service {
 public:
  explicit Service(Ledger& ledger) : ledger_(ledger) {}

  grpc::Status Sum(grpc::ServerContext*, grpc::ServerReader<Item>* reader,
                   SumResponse* response) override {
    const std::string stream = NewStream();
    Item item;
    while (reader->Read(&item)) {
      ledger_.Record("C " + stream + " " + std::to_string(item.value()));
      response->set_sum(response->sum() + item.value());
      response->set_count(response->count() + 1);
    }
    ledger_.Record("E " + stream + " " + std::to_string(response->count()) +
                   " " + std::to_string(response->sum()));
    return grpc::Status::OK;
  }

  grpc::Status Double(grpc::ServerContext*,
                      grpc::ServerReaderWriter<Item, Item>* stream) override {
    const std::string id = NewStream();
    Item item;
    while (stream->Read(&item)) {
      ledger_.Record("B " + id + " " + std::to_string(item.value()));
      item.set_value(item.value() * 2);
      if (!stream->Write(item)) break;
    }
    return grpc::Status::OK;
  }

  // The benchmark's warm-up call.
  grpc::Status Get(grpc::ServerContext*, const RangeRequest* request,
                   Item* item) override {
    item->set_value(request->start());
    return grpc::Status::OK;
  }

 private:
  std::string NewStream() {
    return std::to_string(getpid()) + "." + std::to_string(++streams_);
  }

  Ledger& ledger_;
  std::atomic<int> streams_{0};
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--port=", 0) == 0) {
      port = std::atoi(arg.c_str() + 7);
    } else if (arg.rfind("--ledger=", 0) == 0) {
      path = arg.substr(9);
    } else {
      std::fprintf(stderr, "stream_recovery_server: unknown flag '%s'\n",
                   argv[i]);
      return 2;
    }
  }
  if (port <= 0 || path.empty()) {
    std::fprintf(stderr,
                 "usage: stream_recovery_server --port=<port> "
                 "--ledger=<file>\n");
    return 2;
  }
  Ledger ledger(path);
  if (!ledger.ok()) {
    std::fprintf(stderr, "stream_recovery_server: cannot open %s\n",
                 path.c_str());
    return 2;
  }
  Service service(ledger);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port),
                           grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound != port) {
    std::fprintf(stderr, "stream_recovery_server: cannot listen on port %d\n",
                 port);
    return 3;
  }
  ledger.Record("S " + std::to_string(getpid()));
  std::printf("READY %d\n", port);
  std::fflush(stdout);
  server->Wait();  // until killed
  return 0;
}

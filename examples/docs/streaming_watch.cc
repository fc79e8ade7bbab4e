// docs/streaming.md: etcd's Watch kept across restarts of etcd, each event
// handled once. A complete program: it watches the keys under
// "stubkit-demo/" on the etcd at argv[1] (default localhost:2379) from
// revision 1 and prints every event, until it has printed argv[2] of them
// (default 10). Built where etcd's protos are installed
// (scripts/install-etcd.sh); tests/etcd/etcd_stream_test.cc runs the same
// hook against an etcd it kills and restarts.
#include <grpcpp/security/credentials.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "etcd/etcdserver/etcdserverpb/rpc.stubkit.h"
#include "stubkit/channel.h"

using etcdserverpb::WatchClient;
using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;

// A request that watches the keys under `prefix` from revision `start`.
WatchRequest CreateFrom(const std::string& prefix, int64_t start) {
  WatchRequest request;
  auto& create = *request.mutable_create_request();
  create.set_key(prefix);
  std::string end = prefix;
  ++end.back();  // the range end of every key under the prefix
  create.set_range_end(end);
  create.set_start_revision(start);
  return request;
}

int main(int argc, char** argv) {
  const std::string address = argc > 1 ? argv[1] : "localhost:2379";
  const int wanted = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::string prefix = "stubkit-demo/";

  int64_t next = 1;  // the revision after the last event handled
  // After a break, the new stream starts where this program is: the hook
  // runs on the thread that reads, between two Reads.
  WatchClient client(
      stubkit::CreateChannel(address, grpc::InsecureChannelCredentials()),
      stubkit::Options{}.set<WatchClient::WatchResumeOption>(
          [&](const WatchResponse* /*last*/,
              stubkit::ResumeWriter<WatchRequest>& writer) {
            writer.Write(CreateFrom(prefix, next));
            return true;  // false: report the break instead
          }));

  stubkit::StreamReaderWriter<WatchRequest, WatchResponse> watch =
      client.Watch();
  watch.Write(CreateFrom(prefix, next));
  WatchResponse response;
  int printed = 0;
  while (printed < wanted && watch.Read(&response)) {
    for (const auto& event : response.events()) {
      std::cout << event.kv().mod_revision() << " " << event.kv().key() << "\n";
      next = event.kv().mod_revision() + 1;
      ++printed;
    }
  }
  if (printed < wanted) {  // the stream ended: not resumable, or gave up
    std::cerr << watch.Finish() << "\n";
    return 1;
  }
  watch.Cancel();  // done watching
  return 0;
}

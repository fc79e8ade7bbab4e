// The README's quick start: a complete program with a generated client of
// demo.KeyValue (protos/demo/key_value.proto). It needs a KeyValue server
// at the address given (default localhost:50051); without one, each call
// retries UNAVAILABLE until its 20-second budget is spent.
#include <chrono>
#include <iostream>
#include <optional>

#include "demo/key_value.stubkit.h"  // generated: the client
#include "stubkit/stubkit.h"         // the runtime: options, channel, summary

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  // gRPC's own retries off, so that stubkit's are the only layer.
  auto channel = stubkit::CreateChannel(argc > 1 ? argv[1] : "localhost:50051",
                                        grpc::InsecureChannelCredentials());

  // Client-wide configuration; everything has a default.
  demo::KeyValueClient client(
      channel,
      stubkit::Options{}
          .set<stubkit::RetryPolicyOption>(
              stubkit::RetryPolicy::LimitedTime(20s))
          .set<stubkit::BackoffPolicyOption>(stubkit::ExponentialBackoffPolicy()
                                                 .WithInitialDelay(200ms)
                                                 .WithMaximumDelay(5s)
                                                 .WithMultiplier(2.0)));

  demo::PutRequest put;  // Put is IDEMPOTENT in the proto: retried
  put.set_key("answer");
  put.set_value(42);
  absl::StatusOr<demo::Entry> stored = client.Put(put);

  demo::GetRequest get;
  get.set_key("answer");
  // Per-call override, layered over the client's options for this call only.
  absl::StatusOr<demo::Entry> entry = client.Get(
      get, stubkit::Options{}.set<stubkit::AttemptTimeoutOption>(2s));
  if (!stored.ok() || !entry.ok()) {
    const absl::Status& status = stored.ok() ? entry.status() : stored.status();
    // The code and message are gRPC's or the server's; stubkit appends a
    // summary, e.g. "failed to connect to all addresses [stubkit: gave up:
    // the retry policy's time limit was reached; 9 attempts over 20.1s]".
    std::cerr << status.message() << "\n";
    std::optional<stubkit::RetrySummary> summary =
        stubkit::GetRetrySummary(status);
    if (summary) std::cerr << summary->attempts << " attempts\n";
    return 1;
  }
  std::cout << entry->key() << " = " << entry->value() << "\n";
  return 0;
}

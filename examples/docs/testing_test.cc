// docs/testing.md: testing code that uses a generated client, with no
// server and no network. The code under test takes a demo::KeyValueClient
// (protos/demo/key_value.proto) and a stubkit::testing::StreamServiceClient
// (protos/stubkit/testing/streams.proto).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "demo/key_value.stubkit_mock.h"  // brings in the client and stubkit
#include "stubkit/testing/streams.stubkit_mock.h"

// --- The code under test. ---------------------------------------------------

// The value of `key`, or `fallback` when the service cannot answer.
int64_t ValueOr(demo::KeyValueClient client, const std::string& key,
                int64_t fallback) {
  demo::GetRequest request;
  request.set_key(key);
  absl::StatusOr<demo::Entry> entry = client.Get(request);
  return entry.ok() ? entry->value() : fallback;
}

// The sum of a server stream, or -1 when it broke.
int64_t SumRange(stubkit::testing::StreamServiceClient client, int count) {
  stubkit::testing::RangeRequest request;
  request.set_count(count);
  stubkit::StreamReader<stubkit::testing::Item> reader = client.Range(request);
  int64_t sum = 0;
  stubkit::testing::Item item;
  while (reader.Read(&item)) sum += item.value();
  return reader.Finish().ok() ? sum : -1;
}

// --- The tests.
// ---------------------------------------------------------------

using ::testing::_;
using ::testing::ByMove;
using ::testing::Return;

// A mock connection replaces everything below the client: the retry loop
// too. Each EXPECT_CALL is one whole call, as the code under test sees it.
TEST(KeyValueTest, MockConnection) {
  auto connection =
      std::make_shared<demo::stubkit_mocks::MockKeyValueConnection>();
  demo::Entry entry;
  entry.set_value(42);
  EXPECT_CALL(*connection, Get(_, _))
      .WillOnce(Return(entry))
      .WillOnce(Return(absl::UnavailableError("down")));

  demo::KeyValueClient client(connection);
  EXPECT_EQ(ValueOr(client, "answer", -1), 42);
  EXPECT_EQ(ValueOr(client, "answer", -1), -1);
}

// A mock stub replaces one attempt; the real retry loop runs above it. A
// FakeClock as clock and sleepers makes the backoff waits instant and exact.
TEST(KeyValueTest, MockStubUnderTheRealRetryLoop) {
  auto stub = std::make_shared<demo::stubkit_mocks::MockKeyValueStub>();
  demo::Entry entry;
  entry.set_value(7);
  EXPECT_CALL(*stub, Get(_, _, _))
      .WillOnce(Return(absl::UnavailableError("restarting")))
      .WillOnce(Return(absl::UnavailableError("restarting")))
      .WillOnce(Return(entry));

  auto clock = std::make_shared<stubkit::FakeClock>();
  const auto start = clock->Now();
  stubkit::Options options =
      stubkit::Options{}
          .set<stubkit::ClockOption>(clock)
          .set<stubkit::SleeperOption>(clock)        // sync calls' waits
          .set<stubkit::AsyncSleeperOption>(clock);  // async calls' waits
  demo::KeyValueClient client(demo::MakeKeyValueConnection(stub, options),
                              options);

  EXPECT_EQ(ValueOr(client, "k", -1), 7);
  // Two backoff waits passed on the fake clock, none in real time.
  EXPECT_GT(clock->Now() - start, std::chrono::seconds(1));
}

// MakeStreamReader gives a mock connection's stream method a reader over
// canned responses, ending with a status (ByMove: a reader is move-only).
TEST(StreamTest, MakeStreamReader) {
  using stubkit::testing::Item;
  auto connection = std::make_shared<
      stubkit::testing::stubkit_mocks::MockStreamServiceConnection>();
  std::vector<Item> items(3);
  for (int i = 0; i < 3; ++i) items[i].set_value(i + 1);
  EXPECT_CALL(*connection, Range(_, _))
      .WillOnce(Return(ByMove(stubkit::MakeStreamReader(items))))
      .WillOnce(Return(ByMove(stubkit::MakeStreamReader<Item>(
          {}, absl::UnavailableError("broken")))));

  stubkit::testing::StreamServiceClient client(connection);
  EXPECT_EQ(SumRange(client, 3), 1 + 2 + 3);
  EXPECT_EQ(SumRange(client, 3), -1);
}

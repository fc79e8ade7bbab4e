// docs/testing.md: testing code that uses a generated client, with no
// server and no network. The code under test takes a demo::KeyValueClient
// (protos/demo/key_value.proto) and a stubkit::testing::StreamServiceClient
// (protos/stubkit/testing/streams.proto).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "demo/key_value.stubkit_mock.h"  // brings in the client
#include "stubkit/clock.h"
#include "stubkit/streaming.h"
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

// The resume hook of `SumFrom`'s stream: continue after the last item seen.
bool ResumeAfter(const stubkit::testing::Item& last,
                 stubkit::testing::RangeRequest& request) {
  const int end = request.start() + request.count();
  request.set_start(last.value() + 1);
  request.set_count(end - request.start());
  return true;
}

// The sum of the items [start, start + count), across breaks.
int64_t SumFrom(stubkit::testing::StreamServiceClient client, int start,
                int count) {
  stubkit::testing::RangeRequest request;
  request.set_start(start);
  request.set_count(count);
  stubkit::StreamReader<stubkit::testing::Item> reader = client.Range(
      request,
      stubkit::Options{}
          .set<stubkit::testing::StreamServiceClient::RangeResumeOption>(
              ResumeAfter));
  int64_t sum = 0;
  stubkit::testing::Item item;
  while (reader.Read(&item)) sum += item.value();
  return reader.Finish().ok() ? sum : -1;
}

// Uploads the values; the server's sum, or -1 when the stream failed.
int64_t Upload(stubkit::testing::StreamServiceClient client,
               const std::vector<int>& values) {
  stubkit::StreamWriter<stubkit::testing::Item, stubkit::testing::SumResponse>
      writer = client.Sum();
  for (int value : values) {
    stubkit::testing::Item item;
    item.set_value(value);
    if (!writer.Write(item)) break;  // broken: Finish says why
  }
  writer.WritesDone();
  absl::StatusOr<stubkit::testing::SumResponse> response = writer.Finish();
  return response.ok() ? response->sum() : -1;
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

// MakeStreamWriter fakes a client stream: it records what the code wrote
// and answers `Finish()` with a canned result. (MakeStreamReaderWriter and
// MakeAsyncStreamWriter fake the bidi and async streams the same way.)
TEST(StreamTest, MakeStreamWriter) {
  using stubkit::testing::Item;
  using stubkit::testing::SumResponse;
  auto connection = std::make_shared<
      stubkit::testing::stubkit_mocks::MockStreamServiceConnection>();
  stubkit::FakeStreamLog<Item> log;  // what Upload wrote
  SumResponse response;
  response.set_sum(6);
  EXPECT_CALL(*connection, Sum(_))
      .WillOnce(Return(
          ByMove(stubkit::MakeStreamWriter<Item, SumResponse>(response, &log))))
      // The stream breaks after one write.
      .WillOnce(Return(ByMove(stubkit::MakeStreamWriter<Item, SumResponse>(
          absl::UnavailableError("broken"), nullptr, /*accepted=*/1))));

  stubkit::testing::StreamServiceClient client(connection);
  EXPECT_EQ(Upload(client, {1, 2, 3}), 6);
  ASSERT_EQ(log.writes.size(), 3u);
  EXPECT_EQ(log.writes[2].value(), 3);
  EXPECT_TRUE(log.writes_done);
  EXPECT_EQ(Upload(client, {1, 2, 3}), -1);
}

// One attempt's stream, as gRPC's stub returns it: `values`, then `status`.
class CannedReader
    : public grpc::ClientReaderInterface<stubkit::testing::Item> {
 public:
  CannedReader(std::vector<int> values, grpc::Status status)
      : values_(std::move(values)), status_(std::move(status)) {}
  bool Read(stubkit::testing::Item* item) override {
    if (next_ == values_.size()) return false;
    item->set_value(values_[next_++]);
    return true;
  }
  grpc::Status Finish() override { return status_; }
  bool NextMessageSize(uint32_t* size) override {
    *size = 0;
    return next_ < values_.size();
  }
  void WaitForInitialMetadata() override {}

 private:
  std::vector<int> values_;
  std::size_t next_ = 0;
  grpc::Status status_;
};

// A resume hook runs in the real retry loop over a mock stub: the first
// stream breaks after 1 2 3, the hook rewrites the request, and the second
// stream continues from 4. The FakeClock makes the backoff wait between
// them instant, and shows it happened.
TEST(StreamTest, ResumeHookUnderAFakeClock) {
  using stubkit::testing::RangeRequest;
  auto stub = std::make_shared<
      stubkit::testing::stubkit_mocks::MockStreamServiceStub>();
  std::vector<int> starts;  // the request of each attempt
  EXPECT_CALL(*stub, Range(_, _, _))
      .WillOnce([&starts](grpc::ClientContext&, const stubkit::OptionsView&,
                          const RangeRequest& request) {
        starts.push_back(request.start());
        return std::make_unique<CannedReader>(
            std::vector<int>{1, 2, 3},
            grpc::Status(grpc::StatusCode::UNAVAILABLE, "server restarting"));
      })
      .WillOnce([&starts](grpc::ClientContext&, const stubkit::OptionsView&,
                          const RangeRequest& request) {
        starts.push_back(request.start());
        EXPECT_EQ(request.count(), 2);  // what is left of 1..5
        return std::make_unique<CannedReader>(std::vector<int>{4, 5},
                                              grpc::Status::OK);
      });

  auto clock = std::make_shared<stubkit::FakeClock>();
  const auto start = clock->Now();
  stubkit::Options options = stubkit::Options{}
                                 .set<stubkit::ClockOption>(clock)
                                 .set<stubkit::SleeperOption>(clock);
  stubkit::testing::StreamServiceClient client(
      stubkit::testing::MakeStreamServiceConnection(stub, options), options);

  EXPECT_EQ(SumFrom(client, 1, 5), 1 + 2 + 3 + 4 + 5);  // each item once
  EXPECT_EQ(starts, (std::vector<int>{1, 4}));
  // One backoff wait (the default: 1 s plus up to 1 s of jitter), on the
  // fake clock only.
  EXPECT_GE(clock->Now() - start, std::chrono::seconds(1));
  EXPECT_LE(clock->Now() - start, std::chrono::seconds(2));
}

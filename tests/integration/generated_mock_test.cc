// Copyright 2026 The stubkit Authors.
//
// How a user tests their own code with the generated mocks: no server, no
// network. `MockEchoServiceConnection` replaces the whole connection;
// `MockEchoServiceStub` replaces one attempt, under the real retry loop.
// Both live in the package's nested `stubkit_mocks` namespace.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stubkit/clock.h"
#include "stubkit/retry_options.h"
#include "stubkit/testing/echo.stubkit_mock.h"
#include "stubkit/testing/streams.stubkit_mock.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::Item;
using ::stubkit::testing::MakeEchoServiceConnection;
using ::stubkit::testing::RangeRequest;
using ::stubkit::testing::StreamServiceClient;
using ::stubkit::testing::SumResponse;
using ::stubkit::testing::stubkit_mocks::MockEchoServiceConnection;
using ::stubkit::testing::stubkit_mocks::MockEchoServiceStub;
using ::stubkit::testing::stubkit_mocks::MockStreamServiceConnection;
using ::testing::_;
using ::testing::ByMove;
using ::testing::Return;

// --- The user's code under test. -------------------------------------------

// Greets through the echo service, falling back to a default when the
// service is down.
std::string Greet(EchoServiceClient client, const std::string& name) {
  EchoRequest request;
  request.set_message("hello " + name);
  absl::StatusOr<EchoResponse> response = client.Echo(request);
  if (!response.ok()) return "hello (offline)";
  return response->message();
}

int SumRange(StreamServiceClient client, int start, int count) {
  RangeRequest request;
  request.set_start(start);
  request.set_count(count);
  auto reader = client.Range(request);
  int sum = 0;
  Item item;
  while (reader.Read(&item)) sum += item.value();
  return reader.Finish().ok() ? sum : -1;
}

// --- The user's tests. -----------------------------------------------------

TEST(GeneratedMockTest, UserCodeWithMockConnection) {
  auto connection = std::make_shared<MockEchoServiceConnection>();
  EchoResponse response;
  response.set_message("hello ada");
  EXPECT_CALL(*connection, Echo(_, _))
      .WillOnce([&](const OptionsView& options, const EchoRequest& request) {
        EXPECT_EQ(request.message(), "hello ada");
        // The client's options reach the connection through the view.
        EXPECT_TRUE(options.has<AttemptTimeoutOption>());
        return response;
      })
      .WillOnce(Return(absl::UnavailableError("down")));

  EchoServiceClient client(
      connection, Options{}.set<AttemptTimeoutOption>(std::chrono::seconds(1)));
  EXPECT_EQ(Greet(client, "ada"), "hello ada");
  EXPECT_EQ(Greet(client, "ada"), "hello (offline)");
}

// Issue 22, item 13: a mocked AsyncEcho with no action never calls its
// callback; the future form must then fail the test, not hang it.
TEST(GeneratedMockTest, AMockThatDropsTheCallbackFailsTheFuture) {
  auto connection = std::make_shared<MockEchoServiceConnection>();
  EXPECT_CALL(*connection, AsyncEcho(_, _, _)).Times(1);  // no action
  EchoServiceClient client(connection);
  auto future = client.AsyncEcho(EchoRequest());
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  absl::StatusOr<EchoResponse> result = future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("destroyed without being called"));
}

TEST(GeneratedMockTest, UserCodeWithMockStreamingConnection) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  EXPECT_CALL(*connection, Range(_, _))
      .WillOnce([](const OptionsView&, const RangeRequest& request) {
        std::vector<Item> items(request.count());
        for (int i = 0; i < request.count(); ++i) {
          items[i].set_value(request.start() + i);
        }
        return MakeStreamReader(std::move(items));
      })
      .WillOnce([](const OptionsView&, const RangeRequest&) {
        return MakeStreamReader<Item>({}, absl::UnavailableError("down"));
      });
  StreamServiceClient client(connection);
  EXPECT_EQ(SumRange(client, 1, 4), 1 + 2 + 3 + 4);
  EXPECT_EQ(SumRange(client, 1, 4), -1);
}

TEST(GeneratedMockTest, MockStubUnderTheRealRetryLoop) {
  auto stub = std::make_shared<MockEchoServiceStub>();
  EchoResponse ok;
  ok.set_message("third time");
  EXPECT_CALL(*stub, Echo(_, _, _))
      .WillOnce(Return(absl::UnavailableError("1")))
      .WillOnce(Return(absl::UnavailableError("2")))
      .WillOnce(Return(ok));
  auto clock = std::make_shared<FakeClock>();
  Options options =
      Options{}
          .set<ClockOption>(clock)
          .set<SleeperOption>(clock)
          .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3));
  EchoServiceClient client(MakeEchoServiceConnection(stub, options), options);

  absl::StatusOr<EchoResponse> response = client.Echo(EchoRequest{});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->message(), "third time");
}

// Issue 39, item 19: fakes of the other stream handles.

// The user's code: uploads `count` items, returns the server's sum or -1.
int Upload(StreamServiceClient client, int count) {
  auto writer = client.Sum();
  for (int i = 1; i <= count; ++i) {
    Item item;
    item.set_value(i);
    if (!writer.Write(item)) break;
  }
  writer.WritesDone();
  absl::StatusOr<SumResponse> response = writer.Finish();
  return response.ok() ? static_cast<int>(response->sum()) : -1;
}

TEST(GeneratedMockTest, MakeStreamWriterRecordsTheWrites) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  FakeStreamLog<Item> log;
  SumResponse response;
  response.set_sum(6);
  EXPECT_CALL(*connection, Sum(_))
      .WillOnce(
          Return(ByMove(MakeStreamWriter<Item, SumResponse>(response, &log))));
  StreamServiceClient client(connection);
  EXPECT_EQ(Upload(client, 3), 6);
  ASSERT_EQ(log.writes.size(), 3u);
  EXPECT_EQ(log.writes[2].value(), 3);
  EXPECT_TRUE(log.writes_done);
  EXPECT_FALSE(log.cancelled);
}

TEST(GeneratedMockTest, MakeStreamWriterBreaksAfterTheAcceptedWrites) {
  FakeStreamLog<Item> log;
  auto writer = MakeStreamWriter<Item, SumResponse>(
      absl::UnavailableError("broken"), &log, 2);
  EXPECT_TRUE(writer.Write(Item()));
  EXPECT_TRUE(writer.Write(Item()));
  EXPECT_FALSE(writer.Write(Item()));  // the break
  EXPECT_FALSE(writer.Write(Item()));
  EXPECT_FALSE(writer.WritesDone());
  EXPECT_EQ(writer.Finish().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log.writes.size(), 2u);
  EXPECT_FALSE(log.writes_done);
  EXPECT_EQ(writer.attempts(), 1);
}

TEST(GeneratedMockTest, AFakeStreamWriterCancelledFinishesCancelled) {
  FakeStreamLog<Item> log;
  auto writer = MakeStreamWriter<Item, SumResponse>(SumResponse(), &log);
  EXPECT_TRUE(writer.Write(Item()));
  writer.Cancel();
  EXPECT_FALSE(writer.Write(Item()));
  EXPECT_FALSE(writer.WritesDone());
  EXPECT_EQ(writer.Finish().status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(log.cancelled);
  EXPECT_EQ(log.writes.size(), 1u);
  // Without a log, it only answers.
  auto quiet = MakeStreamWriter<Item, SumResponse>(SumResponse());
  EXPECT_TRUE(quiet.Write(Item()));
  EXPECT_TRUE(quiet.WritesDone());
  EXPECT_FALSE(quiet.WritesDone());  // once
  EXPECT_TRUE(quiet.Finish().ok());
}

TEST(GeneratedMockTest, MakeStreamReaderWriterReadsAndRecords) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  FakeStreamLog<Item> log;
  std::vector<Item> responses(2);
  responses[0].set_value(2);
  responses[1].set_value(4);
  EXPECT_CALL(*connection, Double(_))
      .WillOnce(Return(ByMove(MakeStreamReaderWriter<Item, Item>(
          responses, absl::UnavailableError("gone"), &log))));
  StreamServiceClient client(connection);
  auto stream = client.Double();
  Item item;
  item.set_value(1);
  EXPECT_TRUE(stream.Write(item));
  EXPECT_TRUE(stream.WritesDone());
  std::vector<int> read;
  while (stream.Read(&item)) read.push_back(item.value());
  EXPECT_THAT(read, ::testing::ElementsAre(2, 4));
  EXPECT_EQ(stream.Finish().code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(log.writes.size(), 1u);
  EXPECT_EQ(log.writes[0].value(), 1);
  EXPECT_TRUE(log.writes_done);

  auto cancelled = MakeStreamReaderWriter<Item, Item>(responses);
  cancelled.Cancel();
  EXPECT_FALSE(cancelled.Read(&item));
  EXPECT_FALSE(cancelled.Write(item));
  EXPECT_EQ(cancelled.Finish().code(), absl::StatusCode::kCancelled);
}

TEST(GeneratedMockTest, MakeAsyncStreamWriterRecordsAndCancelsOnce) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  FakeStreamLog<Item> log;
  std::vector<absl::Status> done_calls;
  EXPECT_CALL(*connection, AsyncDouble(_, _, _))
      .WillOnce([&log](const OptionsView&, MessageCallback<Item> on_message,
                       StreamDoneCallback on_done) {
        Item first;
        first.set_value(10);
        on_message(first);  // as the server would
        return MakeAsyncStreamWriter<Item>(&log, kAllWrites, [on_done] {
          on_done(absl::CancelledError("cancelled"));
        });
      });
  StreamServiceClient client(connection);
  std::vector<int> read;
  auto stream = client.AsyncDouble(
      [&read](const Item& item) { read.push_back(item.value()); },
      [&done_calls](absl::Status status) { done_calls.push_back(status); });
  // Writes from two threads are all kept.
  std::thread other([stream]() mutable {
    for (int i = 0; i < 100; ++i) stream.Write(Item());
  });
  for (int i = 0; i < 100; ++i) stream.Write(Item());
  other.join();
  stream.Cancel();
  stream.Cancel();
  EXPECT_FALSE(stream.Write(Item()));
  EXPECT_FALSE(stream.WritesDone());
  EXPECT_THAT(read, ::testing::ElementsAre(10));
  EXPECT_EQ(log.writes.size(), 200u);
  EXPECT_TRUE(log.cancelled);
  ASSERT_EQ(done_calls.size(), 1u);
  EXPECT_EQ(done_calls[0].code(), absl::StatusCode::kCancelled);

  FakeStreamLog<Item> limited_log;
  auto limited = MakeAsyncStreamWriter<Item>(&limited_log, 1);
  EXPECT_TRUE(limited.Write(Item()));
  EXPECT_FALSE(limited.Write(Item()));
  EXPECT_FALSE(limited.WritesDone());
  limited.Cancel();  // no on_cancel: recorded only
  EXPECT_TRUE(limited_log.cancelled);
}

// Issue 39, item 16: the mock connection's AsyncRange returns a handle; by
// default one of no stream, whose Cancel does nothing.
TEST(GeneratedMockTest, AMockAsyncServerStreamReturnsAHandle) {
  auto connection = std::make_shared<MockStreamServiceConnection>();
  EXPECT_CALL(*connection, AsyncRange(_, _, _, _)).Times(1);
  StreamServiceClient client(connection);
  AsyncStreamReader<Item> stream = client.AsyncRange(
      RangeRequest(), [](const Item&) {}, [](absl::Status) {});
  stream.Cancel();
}

}  // namespace
}  // namespace stubkit

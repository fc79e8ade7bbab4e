// Copyright 2026 The stubkit Authors.
//
// internal::ReplayBuffer, the writes a client or bidi stream sends again
// when it reopens: kept while an attempt is being opened, dropped by its
// first response or past kMaxReplayBytes (then only the hook may reopen),
// replaced by the resume hook's messages.

#include "stubkit/internal/engine/replay_buffer.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Not a protobuf message: its ReplaySize is its own size, 64 KiB, so that
// four fill the buffer.
struct Block {
  int id = 0;
  char padding[64 * 1024 - sizeof(int)] = {};
};
static_assert(sizeof(Block) * 4 == kMaxReplayBytes);

std::vector<int> Ids(const ReplayBuffer<Block>& buffer) {
  std::vector<int> ids;
  for (const Block& block : buffer.messages()) ids.push_back(block.id);
  return ids;
}

Block B(int id) {
  Block block;
  block.id = id;
  return block;
}

TEST(ReplayBufferTest, KeepsWritesInOrderWhileOpening) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  buffer.Keep(B(1));
  buffer.Keep(B(2));
  EXPECT_TRUE(buffer.replayable());
  EXPECT_THAT(Ids(buffer), ElementsAre(1, 2));
}

TEST(ReplayBufferTest, FirstResponseEstablishesAndDropsWrites) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  buffer.Keep(B(1));
  EXPECT_TRUE(buffer.Establish());
  EXPECT_FALSE(buffer.Establish());  // only the attempt's first
  buffer.Keep(B(2));                 // established: not kept
  EXPECT_FALSE(buffer.replayable());
  EXPECT_THAT(Ids(buffer), IsEmpty());
}

TEST(ReplayBufferTest, NewAttemptIsBeingOpenedAgain) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  EXPECT_TRUE(buffer.Establish());
  buffer.StartAttempt();
  EXPECT_TRUE(buffer.replayable());
  buffer.Keep(B(3));
  EXPECT_THAT(Ids(buffer), ElementsAre(3));
  EXPECT_TRUE(buffer.Establish());
}

TEST(ReplayBufferTest, KeepsUpToTheLimitAndDropsAllPastIt) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  for (int id = 1; id <= 4; ++id) buffer.Keep(B(id));  // exactly the limit
  EXPECT_TRUE(buffer.replayable());
  EXPECT_THAT(Ids(buffer), ElementsAre(1, 2, 3, 4));
  buffer.Keep(B(5));
  EXPECT_FALSE(buffer.replayable());
  EXPECT_THAT(Ids(buffer), IsEmpty());
  buffer.Keep(B(6), 1);  // past the limit once: nothing more is kept
  EXPECT_THAT(Ids(buffer), IsEmpty());
  // A new attempt does not make the dropped writes replayable.
  buffer.StartAttempt();
  EXPECT_FALSE(buffer.replayable());
}

TEST(ReplayBufferTest, CountsTheSizeItIsGiven) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  buffer.Keep(B(1), kMaxReplayBytes - 1);
  buffer.Keep(B(2), 1);
  EXPECT_THAT(Ids(buffer), ElementsAre(1, 2));
  buffer.Keep(B(3), 1);
  EXPECT_FALSE(buffer.replayable());
}

TEST(ReplayBufferTest, HookMessagesAreTheNextReplay) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  buffer.Keep(B(1));
  EXPECT_TRUE(buffer.Establish());
  buffer.Restore({B(7), B(8)});
  EXPECT_THAT(Ids(buffer), ElementsAre(7, 8));
  buffer.StartAttempt();
  EXPECT_TRUE(buffer.replayable());
  buffer.Keep(B(9));  // the caller's, after the hook's
  EXPECT_THAT(Ids(buffer), ElementsAre(7, 8, 9));
}

TEST(ReplayBufferTest, RestoreClearsAnOverflowAndCountsItsMessages) {
  ReplayBuffer<Block> buffer;
  buffer.StartAttempt();
  for (int id = 1; id <= 5; ++id) buffer.Keep(B(id));
  ASSERT_FALSE(buffer.replayable());
  buffer.Restore({B(1), B(2), B(3), B(4)});  // the limit, in all
  buffer.StartAttempt();
  EXPECT_TRUE(buffer.replayable());
  EXPECT_THAT(Ids(buffer), ElementsAre(1, 2, 3, 4));
  buffer.Keep(B(5));  // passes the limit with the hook's messages
  EXPECT_FALSE(buffer.replayable());
  EXPECT_THAT(Ids(buffer), IsEmpty());
}

}  // namespace
}  // namespace internal
}  // namespace stubkit

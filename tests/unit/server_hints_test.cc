// Copyright 2026 The stubkit Authors.

#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "stubkit/internal/base/hint_parsing.h"
#include "tests/testing/status_details.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using Kind = RetryInfoHint::Kind;

TEST(PushbackTest, NonNegativeIntegersAreWaits) {
  for (auto [text, ms] : {std::pair<const char*, int64_t>{"0", 0},
                          {"250", 250},
                          {" 1500 ", 1500},
                          {"9223372036854", 9223372036854},
                          // Leading zeros do not count towards the size.
                          {"0000000000000000000000250", 250}}) {
    Pushback p = ParsePushback(text);
    EXPECT_EQ(p.kind, Pushback::Kind::kWait) << text;
    EXPECT_EQ(p.delay, milliseconds(ms)) << text;
  }
}

// Found by tests/fuzz/pushback_fuzzer: 18 digits of milliseconds overflowed
// the conversion to nanoseconds (undefined behaviour; in practice a wrapped,
// possibly negative wait). Beyond ~292 years the wait saturates.
TEST(PushbackTest, HugeValuesSaturateInsteadOfOverflowing) {
  // Any length: every non-negative integer is a wait (docs/throttling.md,
  // "Server hints"), so 19 digits and more saturate too instead of meaning
  // "stop".
  for (const char* text :
       {"9223372036855", "999999999999999999", "9999999999999999999",
        "99999999999999999999999999", "18446744073709551616"}) {
    Pushback p = ParsePushback(text);
    EXPECT_EQ(p.kind, Pushback::Kind::kWait) << text;
    EXPECT_EQ(p.delay, nanoseconds::max()) << text;
  }
}

TEST(PushbackTest, NegativeOrGarbageMeansDoNotRetry) {
  for (const char* text :
       {"-1", "-250", "", " ", "abc", "12abc", "1.5", "+5", "0x10", "1e3",
        "1 2", "12-", "- 1", "99999999999999999999999999x"}) {
    EXPECT_EQ(ParsePushback(text).kind, Pushback::Kind::kDoNotRetry) << text;
  }
  // Embedded NULs are garbage too.
  EXPECT_EQ(ParsePushback(absl::string_view("12\0", 3)).kind,
            Pushback::Kind::kDoNotRetry);
}

TEST(RetryInfoTest, FindsTheDelay) {
  RetryInfoHint hint =
      ParseRetryInfoDelay(testing::StatusWithRetryInfo(2, 500000000));
  EXPECT_EQ(hint.kind, Kind::kDelay);
  EXPECT_EQ(hint.delay, milliseconds(2500));
}

TEST(RetryInfoTest, SkipsOtherDetails) {
  std::string other = testing::Any("type.googleapis.com/google.rpc.DebugInfo",
                                   std::string("\x0a\x03"
                                               "abc",
                                               5));
  RetryInfoHint hint =
      ParseRetryInfoDelay(testing::StatusWithRetryInfo(1, 0, other));
  EXPECT_EQ(hint.kind, Kind::kDelay);
  EXPECT_EQ(hint.delay, seconds(1));
}

TEST(RetryInfoTest, NoRetryInfoIsAbsent) {
  std::string status;
  testing::AppendTag(&status, 1, 0);
  testing::AppendVarint(&status, 14);
  testing::AppendBytes(&status, 2, "down");
  EXPECT_EQ(ParseRetryInfoDelay(status).kind, Kind::kAbsent);
  EXPECT_EQ(ParseRetryInfoDelay("").kind, Kind::kAbsent);
}

TEST(RetryInfoTest, MalformedBytesAreRejected) {
  std::string valid = testing::StatusWithRetryInfo(3, 0);
  // Every truncation of a valid message is either malformed or, cut before
  // the RetryInfo starts, simply absent; never a wrong delay.
  for (size_t n = 0; n < valid.size(); ++n) {
    RetryInfoHint hint = ParseRetryInfoDelay(valid.substr(0, n));
    EXPECT_NE(hint.kind, Kind::kDelay) << "prefix " << n;
  }
  EXPECT_EQ(
      ParseRetryInfoDelay("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff").kind,
      Kind::kMalformed);
  EXPECT_EQ(ParseRetryInfoDelay(std::string("\x1a\x7f", 2)).kind,
            Kind::kMalformed);  // length past the end
  EXPECT_EQ(ParseRetryInfoDelay(std::string("\x00", 1)).kind,
            Kind::kMalformed);  // field 0
  EXPECT_EQ(ParseRetryInfoDelay(std::string("\x0b", 1)).kind,
            Kind::kMalformed);  // group start
}

TEST(RetryInfoTest, OutOfRangeDelaysAreRejected) {
  EXPECT_EQ(ParseRetryInfoDelay(testing::StatusWithRetryInfo(-1, 0)).kind,
            Kind::kMalformed);
  EXPECT_EQ(ParseRetryInfoDelay(testing::StatusWithRetryInfo(0, -5)).kind,
            Kind::kMalformed);
  EXPECT_EQ(
      ParseRetryInfoDelay(testing::StatusWithRetryInfo(0, 1000000000)).kind,
      Kind::kMalformed);
  EXPECT_EQ(
      ParseRetryInfoDelay(testing::StatusWithRetryInfo(315576000001, 0)).kind,
      Kind::kMalformed);
  // The largest legal Duration saturates rather than overflowing.
  RetryInfoHint huge =
      ParseRetryInfoDelay(testing::StatusWithRetryInfo(315576000000, 0));
  EXPECT_EQ(huge.kind, Kind::kDelay);
  EXPECT_EQ(huge.delay, nanoseconds::max());
}

TEST(RetryInfoTest, OversizedDetailsAreNotDecoded) {
  std::string padding(kMaxStatusDetailsBytes, 'x');
  std::string status;
  testing::AppendBytes(&status, 2, padding);
  status += testing::StatusWithRetryInfo(1, 0);
  EXPECT_EQ(ParseRetryInfoDelay(status).kind, Kind::kMalformed);
}

}  // namespace
}  // namespace internal
}  // namespace stubkit

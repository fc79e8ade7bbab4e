// Copyright 2026 The stubkit Authors.
//
// The service config's JSON reader: RFC 8259 accepted, everything else
// refused with a line and column, duplicates kept for the reader to name.

#include "stubkit/internal/base/json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace internal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<JsonValue> value = ParseJson(text);
  EXPECT_FALSE(value.ok()) << text;
  if (value.ok()) return "";
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(value.status().message());
}

TEST(JsonTest, ReadsEveryKindInOrder) {
  absl::StatusOr<JsonValue> value = ParseJson(
      " {\"a\": [1, -2.5e3, \"x\", true, false, null, {}, []], \"b\": 0}\n");
  ASSERT_TRUE(value.ok()) << value.status();
  ASSERT_EQ(value->kind(), JsonValue::Kind::kObject);
  ASSERT_EQ(value->members().size(), 2u);
  EXPECT_EQ(value->members()[0].first, "a");
  EXPECT_EQ(value->members()[1].first, "b");
  const JsonValue* a = value->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->kind(), JsonValue::Kind::kArray);
  const auto& e = a->elements();
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(e[0].number_value(), 1);
  EXPECT_EQ(e[0].text(), "1");
  EXPECT_EQ(e[1].number_value(), -2500);
  EXPECT_EQ(e[1].text(), "-2.5e3");  // as written
  EXPECT_EQ(e[2].text(), "x");
  EXPECT_TRUE(e[3].bool_value());
  EXPECT_FALSE(e[4].bool_value());
  EXPECT_TRUE(e[5].is_null());
  EXPECT_EQ(e[6].kind(), JsonValue::Kind::kObject);
  EXPECT_EQ(e[7].kind(), JsonValue::Kind::kArray);
  EXPECT_EQ(value->Find("c"), nullptr);
}

TEST(JsonTest, KeepsDuplicateKeysForTheReaderToName) {
  absl::StatusOr<JsonValue> value = ParseJson(R"({"k": 1, "j": 0, "k": 2})");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->CountOf("k"), 2);
  EXPECT_EQ(value->CountOf("j"), 1);
  EXPECT_EQ(value->Find("k")->number_value(), 2);  // the last
}

TEST(JsonTest, DecodesEscapesAndUtf8) {
  absl::StatusOr<JsonValue> value =
      ParseJson(R"(["\"\\\/\b\f\n\r\t", "\u00e9\u20ac\ud83d\ude00", "é€😀"])");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->elements()[0].text(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(value->elements()[1].text(), "é€😀");
  EXPECT_EQ(value->elements()[2].text(), "é€😀");
}

TEST(JsonTest, RefusesWhatRfc8259Refuses) {
  EXPECT_EQ(ErrorOf(""), "line 1, column 1: unexpected end of text, expected "
                         "a value");
  EXPECT_THAT(ErrorOf("{\"a\": [1,\n 2"),
              StartsWith("line 2, column 3: expected ',' or ']'"));
  EXPECT_THAT(ErrorOf("[1,]"), StartsWith("line 1, column 4: expected a value"));
  EXPECT_THAT(ErrorOf("{\"a\": 1,}"),
              StartsWith("line 1, column 9: expected a key"));
  EXPECT_THAT(ErrorOf("{a: 1}"), HasSubstr("expected a key in double quotes"));
  EXPECT_THAT(ErrorOf("{\"a\" 1}"), HasSubstr("expected ':'"));
  EXPECT_THAT(ErrorOf("[1] [2]"), HasSubstr("expected the end of the text"));
  EXPECT_THAT(ErrorOf("// comment\n{}"), HasSubstr("expected a value"));
  EXPECT_THAT(ErrorOf("[NaN]"), HasSubstr("expected a value"));
  EXPECT_THAT(ErrorOf("[Infinity]"), HasSubstr("expected a value"));
  EXPECT_THAT(ErrorOf("[tru]"), HasSubstr("expected a value"));
  EXPECT_THAT(ErrorOf("[01]"), HasSubstr("expected ',' or ']'"));
  EXPECT_THAT(ErrorOf("[-]"), HasSubstr("expected a digit"));
  EXPECT_THAT(ErrorOf("[1.]"), HasSubstr("expected a digit after '.'"));
  EXPECT_THAT(ErrorOf("[1e]"), HasSubstr("expected a digit in the exponent"));
  EXPECT_THAT(ErrorOf("[+1]"), HasSubstr("expected a value"));
  EXPECT_THAT(ErrorOf("[\"abc"), HasSubstr("unterminated string"));
  EXPECT_THAT(ErrorOf("[\"a\nb\"]"),
              HasSubstr("a control character in a string must be escaped"));
  EXPECT_THAT(ErrorOf(R"(["\x41"])"), HasSubstr("unknown escape"));
  EXPECT_THAT(ErrorOf(R"(["\u12"])"), HasSubstr("four hex digits"));
  EXPECT_THAT(ErrorOf(R"(["\ud83d"])"), HasSubstr("without its low half"));
  EXPECT_THAT(ErrorOf(R"(["\ude00"])"), HasSubstr("without its high half"));
}

TEST(JsonTest, RefusesInvalidUtf8) {
  for (const char* bad : {"[\"\xff\"]", "[\"\xc3\"]", "[\"\xc0\xaf\"]",
                          "[\"\xe0\x80\xaf\"]", "[\"\xed\xa0\x80\"]",
                          "[\"\xf4\x90\x80\x80\"]", "[\"\x80\"]"}) {
    EXPECT_THAT(ErrorOf(bad), HasSubstr("invalid UTF-8")) << bad;
  }
}

TEST(JsonTest, RefusesDeepNestingInsteadOfOverflowingTheStack) {
  std::string deep(100000, '[');
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nested deeper than 64 levels"));
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  EXPECT_THAT(ErrorOf("[" + ok + "]"), HasSubstr("nested deeper"));
}

// Issue 39 item 6: gRPC 1.51's reader takes a number beyond a double's
// range (it keeps the text); so does this one, as +-infinity.
TEST(JsonTest, ANumberBeyondADoubleKeepsItsTextAndReadsAsInfinity) {
  absl::StatusOr<JsonValue> value = ParseJson("[1e400, -1e400]");
  ASSERT_TRUE(value.ok()) << value.status();
  ASSERT_EQ(value->elements().size(), 2u);
  EXPECT_EQ(value->elements()[0].text(), "1e400");
  EXPECT_EQ(value->elements()[0].number_value(),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(value->elements()[1].number_value(),
            -std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace internal
}  // namespace stubkit

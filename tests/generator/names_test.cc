// Copyright 2026 The stubkit Authors.
//
// The generator's naming and comment helpers (src/generator/names.h).

#include "src/generator/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace stubkit {
namespace generator {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

TEST(NamesTest, KeywordsIncludeCpp20AndMacros) {
  EXPECT_TRUE(IsCppKeyword("delete"));
  EXPECT_TRUE(IsCppKeyword("co_await"));
  EXPECT_TRUE(IsCppKeyword("requires"));
  EXPECT_TRUE(IsCppKeyword("and_eq"));
  EXPECT_TRUE(IsCppKeyword("NULL"));
  EXPECT_FALSE(IsCppKeyword("Delete"));
  EXPECT_FALSE(IsCppKeyword("Get"));
  EXPECT_FALSE(IsCppKeyword(""));
}

// protoc's own rule, not the language's: what protoc 3.21 renames, and
// what it leaves (C++20 keywords, other macros); later releases rename
// more.
TEST(NamesTest, ProtobufKeywordsFollowProtocsRelease) {
  for (const char* renamed : {"delete", "and", "NULL", "constexpr", "nullptr",
                              "decltype", "thread_local", "xor_eq"}) {
    EXPECT_TRUE(IsProtobufKeyword(renamed, 21)) << renamed;
    EXPECT_TRUE(IsProtobufKeyword(renamed, 22)) << renamed;
  }
  for (const char* cpp20 :
       {"concept", "requires", "co_await", "co_return", "co_yield", "char8_t",
        "consteval", "constinit", "char16_t", "char32_t"}) {
    EXPECT_FALSE(IsProtobufKeyword(cpp20, 21)) << cpp20;
    EXPECT_TRUE(IsProtobufKeyword(cpp20, 22)) << cpp20;
  }
  EXPECT_FALSE(IsProtobufKeyword("assert", 22));
  EXPECT_TRUE(IsProtobufKeyword("assert", 23));
  for (const char* kept : {"errno", "major", "minor", "offsetof", "null"}) {
    EXPECT_FALSE(IsProtobufKeyword(kept, 21)) << kept;
    EXPECT_FALSE(IsProtobufKeyword(kept, 30)) << kept;
  }
}

TEST(NamesTest, GrpcAndStubkitReservedNames) {
  EXPECT_TRUE(CollidesWithGrpc("Stub"));
  EXPECT_TRUE(CollidesWithGrpc("experimental_async"));
  EXPECT_FALSE(CollidesWithGrpc("stub"));
  EXPECT_TRUE(CollidesWithStubkitMembers("options_"));
  EXPECT_TRUE(CollidesWithStubkitMembers("child"));
  EXPECT_FALSE(CollidesWithStubkitMembers("options"));
}

TEST(NamesTest, PackageToNamespace) {
  EXPECT_EQ(PackageToNamespace("a.b.c"), "::a::b::c");
  EXPECT_EQ(PackageToNamespace("solo"), "::solo");
  EXPECT_EQ(PackageToNamespace(""), "");
  EXPECT_THAT(PackageParts("a.b.c"), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(PackageParts("").empty());
}

TEST(NamesTest, FileStemAndIncludeGuard) {
  EXPECT_EQ(FileStem("foo/bar.proto"), "foo/bar");
  EXPECT_EQ(FileStem("foo/bar.protodevel"), "foo/bar.protodevel");
  EXPECT_EQ(IncludeGuard("foo/bar-baz.stubkit.h"),
            "STUBKIT_GENERATED_FOO_BAR_BAZ_STUBKIT_H_");
}

TEST(NamesTest, GeneratedNames) {
  EXPECT_THAT(
      GeneratedTopLevelNames("Echo"),
      ElementsAre("EchoMethods", "EchoStub", "EchoStubDecorator",
                  "EchoGrpcStub", "EchoConnection", "MakeEchoConnection",
                  "EchoClient", "EchoConnectionImpl"));
  EXPECT_THAT(GeneratedMockNames("Echo"),
              ElementsAre("MockEchoStub", "MockEchoConnection"));
  EXPECT_THAT(GeneratedTopLevelNames("Echo"), Contains("EchoClient"));
  EXPECT_STREQ(kMockNamespace, "stubkit_mocks");
}

TEST(FormatCommentTest, PrefixesEachLineAndKeepsBlankOnes) {
  EXPECT_EQ(FormatComment(" First line.\n\n Second.\n", "  "),
            "  // First line.\n"
            "  //\n"
            "  // Second.\n");
}

TEST(FormatCommentTest, AddsASpaceOnlyWhenTheLineHasNone) {
  EXPECT_EQ(FormatComment("tight\n  indented\n", ""),
            "// tight\n"
            "//  indented\n");
}

TEST(FormatCommentTest, DropsTrailingBlankLinesAndWhitespace) {
  EXPECT_EQ(FormatComment(" text \t\r\n\n  \n", ""), "// text\n");
  EXPECT_EQ(FormatComment("", ""), "");
  EXPECT_EQ(FormatComment("\n\n", ""), "");
}

TEST(FormatCommentTest, DropsTrailingBackslashesThatWouldSpliceLines) {
  // A "// ...\" line continues onto the next line of code.
  EXPECT_EQ(FormatComment(" path C:\\dir\\\n next\n", ""),
            "// path C:\\dir\n"
            "// next\n");
  EXPECT_EQ(FormatComment(" \\ \\\n", ""), "//\n");
}

}  // namespace
}  // namespace generator
}  // namespace stubkit

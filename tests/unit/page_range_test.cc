// Copyright 2026 The stubkit Authors.
//
// PageRange over a scripted fetcher: lazy fetches, every item once and in
// order, empty pages with a token, errors as the last element, and the
// tokens a caller resumes from.

#include "stubkit/page_range.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace stubkit {
namespace {

using Range = PageRange<int>;

// Serves `pages` by token; records the tokens asked for.
struct Script {
  std::map<std::string, absl::StatusOr<Range::Page>> pages;
  std::vector<std::string> asked;

  Range::Fetcher Fetcher() {
    return [this](const std::string& token) -> absl::StatusOr<Range::Page> {
      asked.push_back(token);
      auto it = pages.find(token);
      if (it == pages.end()) return absl::NotFoundError("no page " + token);
      return it->second;
    };
  }
};

std::vector<int> Collect(Range& range, absl::Status* last = nullptr) {
  std::vector<int> items;
  for (const absl::StatusOr<int>& item : range) {
    if (!item.ok()) {
      if (last != nullptr) *last = item.status();
      continue;
    }
    items.push_back(*item);
  }
  return items;
}

TEST(PageRangeTest, EveryItemOnceInOrderThroughEmptyPagesWithATokenToo) {
  Script script;
  script.pages[""] = Range::Page{{1, 2}, "a"};
  script.pages["a"] = Range::Page{{}, "b"};  // empty, not the end
  script.pages["b"] = Range::Page{{}, "c"};
  script.pages["c"] = Range::Page{{3}, ""};
  Range range("", script.Fetcher());
  EXPECT_EQ(Collect(range), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(script.asked, (std::vector<std::string>{"", "a", "b", "c"}));
  EXPECT_EQ(range.next_page_token(), "");
  // A single pass: nothing more, and no more fetches.
  EXPECT_EQ(range.begin(), range.end());
  EXPECT_EQ(script.asked.size(), 4u);
}

TEST(PageRangeTest, FetchesLazily) {
  Script script;
  script.pages["start"] = Range::Page{{1}, "next"};
  script.pages["next"] = Range::Page{{2}, ""};
  Range range("start", script.Fetcher());
  EXPECT_TRUE(script.asked.empty());
  EXPECT_EQ(range.page_token(), "start");
  EXPECT_EQ(range.next_page_token(), "start");
  auto it = range.begin();
  EXPECT_TRUE(script.asked.empty());
  ASSERT_NE(it, range.end());
  EXPECT_EQ(**it, 1);
  EXPECT_EQ(script.asked, std::vector<std::string>{"start"});
  ++it;  // advancing alone fetches nothing
  EXPECT_EQ(script.asked.size(), 1u);
  EXPECT_EQ(range.page_token(), "start");
  EXPECT_EQ(range.next_page_token(), "next");
  ASSERT_NE(it, range.end());
  EXPECT_EQ(**it, 2);
  EXPECT_EQ(range.page_token(), "next");
  EXPECT_EQ(range.next_page_token(), "");
}

TEST(PageRangeTest,
     AnErrorIsTheLastElementAndKeepsTheTokenOfThePageThatFailed) {
  Script script;
  script.pages[""] = Range::Page{{1, 2}, "a"};
  script.pages["a"] = absl::UnavailableError("down");
  Range range("", script.Fetcher());
  absl::Status last;
  int elements = 0;
  for (const auto& item : range) {
    ++elements;
    if (!item.ok()) last = item.status();
  }
  EXPECT_EQ(elements, 3);
  EXPECT_EQ(last, absl::UnavailableError("down"));
  // Resuming from it fetches the failed page again.
  EXPECT_EQ(range.next_page_token(), "a");
  EXPECT_EQ(script.asked, (std::vector<std::string>{"", "a"}));
}

TEST(PageRangeTest, ResumesFromEitherToken) {
  Script script;
  script.pages[""] = Range::Page{{1, 2, 3}, "p2"};
  script.pages["p2"] = Range::Page{{4, 5}, ""};
  Range first("", script.Fetcher());
  auto it = first.begin();
  ASSERT_EQ(**it, 1);
  ++it;
  ASSERT_EQ(**it, 2);
  // Stopped in the middle of the first page: page_token() repeats it,
  // next_page_token() goes on after it.
  Range again(first.page_token(), script.Fetcher());
  EXPECT_EQ(Collect(again), (std::vector<int>{1, 2, 3, 4, 5}));
  Range after(first.next_page_token(), script.Fetcher());
  EXPECT_EQ(Collect(after), (std::vector<int>{4, 5}));
}

TEST(PageRangeTest, SkippingAnItemNotLookedAtStillSkipsIt) {
  Script script;
  script.pages[""] = Range::Page{{1, 2}, ""};
  Range range("", script.Fetcher());
  auto it = range.begin();
  ++it;  // 1, never dereferenced
  ASSERT_NE(it, range.end());
  EXPECT_EQ(**it, 2);
  ++it;
  EXPECT_EQ(it, range.end());
}

TEST(PageRangeTest, MovableAndOutlivesNothing) {
  Script script;
  script.pages[""] = Range::Page{{7}, ""};
  Range range("", script.Fetcher());
  Range moved = std::move(range);
  EXPECT_EQ(Collect(moved), std::vector<int>{7});
}

}  // namespace
}  // namespace stubkit

// Copyright 2026 The stubkit Authors.
//
// PageRange over a scripted fetcher: lazy fetches, every item once and in
// order, empty pages with a token, errors as the last element, the tokens
// a caller resumes from, a repeated token ending the range, and the page
// limit.

#include "stubkit/page_range.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"

namespace stubkit {
namespace {

using Range = PageRange<int>;

// Serves `pages` by token; records the tokens asked for. Stops a range
// that would never end (the defect of a repeated token) after 100 pages.
struct Script {
  std::map<std::string, absl::StatusOr<Range::Page>> pages;
  std::vector<std::string> asked;

  Range::Fetcher Fetcher() {
    return [this](const std::string& token) -> absl::StatusOr<Range::Page> {
      asked.push_back(token);
      if (asked.size() > 100) return absl::AbortedError("looped");
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

// Each element of `range`, as the item or "error".
std::vector<std::string> Elements(Range& range, absl::Status* last) {
  std::vector<std::string> elements;
  for (const absl::StatusOr<int>& item : range) {
    if (item.ok()) {
      elements.push_back(std::to_string(*item));
    } else {
      elements.push_back("error");
      *last = item.status();
    }
  }
  return elements;
}

// A server answering an empty page with the token it was sent: without
// the check, `it == end` fetched for ever.
TEST(PageRangeTest, AnEmptyPageRepeatingItsTokenEndsTheRange) {
  Script script;
  script.pages[""] = Range::Page{{1}, "same"};
  script.pages["same"] = Range::Page{{}, "same"};
  Range range("", script.Fetcher());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last), (std::vector<std::string>{"1", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal) << last;
  EXPECT_EQ(last.message(),
            "the server repeated page token \"same\" after 2 pages: the range "
            "sent it for page 2 already, and a listing that repeats a token "
            "never ends; the range stops here, after every item received");
  EXPECT_EQ(script.asked, (std::vector<std::string>{"", "same"}));
  // Resumption still tells the truth: the page after the last one fetched.
  EXPECT_EQ(range.page_token(), "same");
  EXPECT_EQ(range.next_page_token(), "same");
  EXPECT_EQ(range.begin(), range.end());
  EXPECT_EQ(script.asked.size(), 2u);
}

// With items, the same items came back for ever; now each page's items
// are delivered once, then the error.
TEST(PageRangeTest, APageWithItemsRepeatingItsTokenEndsTheRange) {
  Script script;
  script.pages["start"] = Range::Page{{1, 2}, "start"};
  Range range("start", script.Fetcher());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"1", "2", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal) << last;
  EXPECT_TRUE(absl::StrContains(last.message(), "\"start\" after 1 page:"))
      << last;
  EXPECT_TRUE(absl::StrContains(last.message(), "sent it for page 1")) << last;
  EXPECT_EQ(script.asked, std::vector<std::string>{"start"});
}

TEST(PageRangeTest, ACycleOfTokensEndsTheRange) {
  Script script;
  script.pages[""] = Range::Page{{1}, "A"};
  script.pages["A"] = Range::Page{{2}, "B"};
  script.pages["B"] = Range::Page{{3}, "A"};
  Range range("", script.Fetcher());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"1", "2", "3", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal) << last;
  EXPECT_TRUE(absl::StrContains(last.message(),
                                "\"A\" after 3 pages: the range sent it for "
                                "page 2 already"))
      << last;
  EXPECT_EQ(script.asked, (std::vector<std::string>{"", "A", "B"}));
  EXPECT_EQ(range.page_token(), "B");
  EXPECT_EQ(range.next_page_token(), "A");
}

TEST(PageRangeTest, ALongTokenIsShortenedAndEscapedInTheError) {
  Script script;
  const std::string token = std::string(100, 'x') + "\n";
  script.pages[""] = Range::Page{{}, "\x01"};
  script.pages["\x01"] = Range::Page{{}, token};
  script.pages[token] = Range::Page{{}, "\x01"};
  Range range("", script.Fetcher());
  absl::Status last;
  Elements(range, &last);
  EXPECT_TRUE(absl::StrContains(last.message(), "token \"\\x01\" after 3"))
      << last;

  Script looping;
  looping.pages[""] = Range::Page{{}, token};
  looping.pages[token] = Range::Page{{}, token};
  Range again("", looping.Fetcher());
  Elements(again, &last);
  EXPECT_TRUE(absl::StrContains(
      last.message(), "token \"" + std::string(64, 'x') + "...\" after 2"))
      << last;
}

// A token equal to the one a resumed listing started from is a cycle too.
TEST(PageRangeTest, TheStartingTokenCountsAsSent) {
  Script script;
  script.pages["p"] = Range::Page{{1}, "q"};
  script.pages["q"] = Range::Page{{2}, "p"};
  Range range("p", script.Fetcher());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"1", "2", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal);
}

TEST(PageRangeTest, MaxPagesEndsALongerListingAndItResumes) {
  Script script;
  script.pages[""] = Range::Page{{1}, "a"};
  script.pages["a"] = Range::Page{{2}, "b"};
  script.pages["b"] = Range::Page{{3}, ""};
  Range range("", script.Fetcher(), /*max_pages=*/2);
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"1", "2", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_EQ(last.message(),
            "the range fetched 2 pages, its PageRangeMaxPagesOption, and the "
            "listing goes on; resume from next_page_token() to continue");
  EXPECT_EQ(script.asked, (std::vector<std::string>{"", "a"}));
  ASSERT_EQ(range.next_page_token(), "b");
  Range rest(range.next_page_token(), script.Fetcher(), 2);
  EXPECT_EQ(Elements(rest, &last), std::vector<std::string>{"3"});
}

TEST(PageRangeTest, MaxPagesIsNoErrorWhenTheListingEndsWithinIt) {
  Script script;
  script.pages[""] = Range::Page{{1}, "a"};
  script.pages["a"] = Range::Page{{2}, ""};
  Range range("", script.Fetcher(), 2);
  EXPECT_EQ(Collect(range), (std::vector<int>{1, 2}));
}

TEST(PageRangeTest, NegativeMaxPagesFetchesNothing) {
  Script script;
  script.pages[""] = Range::Page{{1}, ""};
  Range range("", script.Fetcher(), -1);
  absl::Status last;
  EXPECT_EQ(Elements(range, &last), std::vector<std::string>{"error"});
  EXPECT_EQ(last.code(), absl::StatusCode::kInvalidArgument) << last;
  EXPECT_TRUE(script.asked.empty());
}

}  // namespace
}  // namespace stubkit

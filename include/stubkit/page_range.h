// Copyright 2026 The stubkit Authors.
//
// PageRange<T>: the items of a paginated list method (AIP-158) as one input
// range of `absl::StatusOr<T>`. A generated client has, for each
// paginated method ListFoos (docs/api-conventions.md says which are),
//
//   stubkit::PageRange<Foo> ListFoosRange(ListFoosRequest request,
//                                         const stubkit::Options& call = {});
//
//   for (const absl::StatusOr<Foo>& foo : client.ListFoosRange(request)) {
//     if (!foo.ok()) return foo.status();  // the last element
//     Use(*foo);
//   }
//
// Pages are fetched lazily, each by one ordinary call of ListFoos under the
// normal retry rules. Every item is delivered once, in the server's order;
// only an empty `next_page_token` ends the listing, and an error (a failed
// fetch, a repeated page token, `PageRangeMaxPagesOption`,
// `PageRangeTotalTimeoutOption`) is the range's last element.
// `next_page_token()` resumes a listing after the pages fetched so far,
// `page_token()` repeats the current page.
//
// A range is a single pass over the listing: `begin()` returns an iterator
// at the current position, not at the start. It is movable, not copyable,
// and not safe to use from several threads at once. The range owns what
// its fetches need (a copy of the client and of the call's options), so it
// may outlive the client it came from. The details: docs/api-conventions.md
// ("Paginated ranges").

#ifndef STUBKIT_PAGE_RANGE_H_
#define STUBKIT_PAGE_RANGE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace stubkit {

// The most pages a generated `MRange` fetches; one more page needed ends the
// range with RESOURCE_EXHAUSTED. 0: no limit (the default); negative:
// INVALID_ARGUMENT, and nothing is sent.
struct PageRangeMaxPagesOption {
  using Type = std::int64_t;
  static Type Default() { return 0; }
};

// The life of a generated `MRange`, from its first fetch, on the call's
// clock (`ClockOption`): a page needed later ends the range with
// DEADLINE_EXCEEDED, and each page's call ends by then (its
// `TotalTimeoutOption` is capped at what is left). 0: no limit (the
// default); negative: INVALID_ARGUMENT, and nothing is sent.
struct PageRangeTotalTimeoutOption {
  using Type = std::chrono::nanoseconds;
  static Type Default() { return Type::zero(); }
};

template <typename T>
class PageRange {
  // Declared before the iterator names it (clang requires it; GCC did not).
  struct State;

 public:
  // One page as the fetcher returns it.
  struct Page {
    std::vector<T> items;
    std::string next_page_token;
  };
  // Fetches the page `page_token` names ("" for the first).
  using Fetcher = std::function<absl::StatusOr<Page>(const std::string&)>;

  // `max_pages`: see PageRangeMaxPagesOption.
  PageRange(std::string page_token, Fetcher fetch, std::int64_t max_pages = 0)
      : state_(std::make_unique<State>()) {
    state_->page_token = page_token;
    state_->next_page_token = std::move(page_token);
    state_->fetch = std::move(fetch);
    state_->max_pages = max_pages;
  }

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = absl::StatusOr<T>;
    using difference_type = std::ptrdiff_t;
    using pointer = value_type*;
    using reference = value_type&;

    iterator() = default;

    // Fetches when the current item is not there yet.
    reference operator*() const { return *state_->Current(); }
    pointer operator->() const { return state_->Current(); }
    iterator& operator++() {
      state_->Advance();
      return *this;
    }
    // Input iterators need only `it++` to work; the old position is gone.
    void operator++(int) { state_->Advance(); }

    // An iterator is at the end when its range has no more items (which
    // may need a fetch to tell).
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.AtEnd() == b.AtEnd();
    }
    friend bool operator!=(const iterator& a, const iterator& b) {
      return !(a == b);
    }

   private:
    friend class PageRange;
    explicit iterator(State* state) : state_(state) {}
    bool AtEnd() const {
      return state_ == nullptr || state_->Current() == nullptr;
    }

    State* state_ = nullptr;
  };

  iterator begin() { return iterator(state_.get()); }
  iterator end() { return iterator(); }

  // See the top of this file.
  const std::string& page_token() const { return state_->page_token; }
  const std::string& next_page_token() const { return state_->next_page_token; }

 private:
  struct State {
    // The current item, fetching pages until there is one; nullptr at the
    // end.
    absl::StatusOr<T>* Current() {
      while (!current.has_value()) {
        if (done) return nullptr;
        if (position < items.size()) {
          current.emplace(std::move(items[position++]));
          break;
        }
        if (pages > 0 && next_page_token.empty()) {
          done = true;
          return nullptr;
        }
        absl::Status refused = Refusal();
        absl::StatusOr<Page> page =
            refused.ok() ? fetch(next_page_token)
                         : absl::StatusOr<Page>(std::move(refused));
        if (!page.ok()) {
          // The error is the last element: the range ends after it.
          current.emplace(std::move(page).status());
          done = true;
          break;
        }
        ++pages;
        page_token = std::move(next_page_token);
        next_page_token = std::move(page->next_page_token);
        items = std::move(page->items);
        position = 0;
      }
      return &*current;
    }

    // Why the next page must not be fetched; OK when it may. Records the
    // token it is about to send.
    absl::Status Refusal() {
      if (max_pages < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("PageRangeMaxPagesOption must not be negative (is ",
                         max_pages, "); no page was fetched"));
      }
      const auto sent_for = sent.find(next_page_token);
      if (sent_for != sent.end()) {
        return absl::InternalError(absl::StrCat(
            "the server repeated page token \"", Shorten(next_page_token),
            "\" after ", pages, pages == 1 ? " page" : " pages",
            ": the range sent it for page ", sent_for->second,
            " already, and a listing that repeats a token never ends; the "
            "range stops here, after every item received"));
      }
      if (max_pages > 0 && pages >= max_pages) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the range fetched ", pages, pages == 1 ? " page" : " pages",
            ", its PageRangeMaxPagesOption, and the listing goes on; "
            "resume from next_page_token() to continue"));
      }
      sent.emplace(next_page_token, pages + 1);
      return absl::OkStatus();
    }

    // Tokens are opaque and may be long: the start of one, escaped.
    static std::string Shorten(const std::string& token) {
      constexpr std::size_t kShown = 64;
      if (token.size() <= kShown) return absl::CHexEscape(token);
      return absl::StrCat(absl::CHexEscape(token.substr(0, kShown)), "...");
    }

    void Advance() {
      // Past an item not looked at yet: it has to be there to be skipped.
      if (!current.has_value()) Current();
      current.reset();
    }

    Fetcher fetch;
    std::string page_token;
    std::string next_page_token;
    std::vector<T> items;
    std::size_t position = 0;
    std::optional<absl::StatusOr<T>> current;
    // Pages fetched so far.
    std::int64_t pages = 0;
    std::int64_t max_pages = 0;
    // Every token sent, with the number of the page it fetched.
    std::unordered_map<std::string, std::int64_t> sent;
    bool done = false;
  };

  std::unique_ptr<State> state_;
};

}  // namespace stubkit

#endif  // STUBKIT_PAGE_RANGE_H_

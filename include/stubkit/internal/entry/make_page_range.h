// Copyright 2026 The stubkit Authors.
//
// What a generated `ListFoosRange` is made of (see stubkit/page_range.h):
//
//   return ::stubkit::internal::MakePageRange<Foo>(
//       ::std::move(request), call, method_options_.View(FooMethods::kList,
//       call, options_), [client = *this](const auto& page_request,
//                        const ::stubkit::Options& page_call) {
//         return client.ListFoos(page_request, page_call);
//       },
//       [](auto& response) { return response.mutable_foos(); });
//
// Each page is an ordinary call of the client's unary method, so retries,
// per-call options, observers and decorators apply to it unchanged. The
// range's own bounds (PageRangeMaxPagesOption, PageRangeTotalTimeoutOption)
// are read once, from the method's effective options when the range is
// made.
//
// Not public API.

#ifndef STUBKIT_INTERNAL_MAKE_PAGE_RANGE_H_
#define STUBKIT_INTERNAL_MAKE_PAGE_RANGE_H_

#include <google/protobuf/map.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "stubkit/clock.h"
#include "stubkit/options.h"
#include "stubkit/page_range.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {

// The items of a repeated field, moved out of the response that holds them.
template <typename T, typename Container>
std::vector<T> TakeItems(Container& container) {
  std::vector<T> items;
  items.reserve(static_cast<size_t>(container.size()));
  for (auto& item : container) items.push_back(T(std::move(item)));
  return items;
}

// A map's entries as std::pair<K, V>, in the map's (unspecified) order.
template <typename T, typename K, typename V>
std::vector<T> TakeItems(google::protobuf::Map<K, V>& map) {
  std::vector<T> items;
  items.reserve(map.size());
  for (auto& entry : map)
    items.emplace_back(entry.first, std::move(entry.second));
  return items;
}

// PageRangeTotalTimeoutOption of one range: the clock starts at the first
// page; each page's call is given what is left as its TotalTimeoutOption
// (or keeps its own, when shorter).
class PageRangeClock {
 public:
  explicit PageRangeClock(const OptionsView& options)
      : limit_(options.get<PageRangeTotalTimeoutOption>()),
        call_timeout_(options.get<TotalTimeoutOption>()),
        clock_(options.get<ClockOption>()) {}

  // Before page number `page` (from 1): OK, with `call` bounded by the time
  // left, or the error that ends the range instead.
  absl::Status BeforePage(std::int64_t page, Options& call) {
    if (limit_ == std::chrono::nanoseconds::zero()) return absl::OkStatus();
    if (limit_ < std::chrono::nanoseconds::zero()) {
      return absl::InvalidArgumentError(
          absl::StrCat("PageRangeTotalTimeoutOption must not be negative (is ",
                       limit_.count(), "ns); no page was fetched"));
    }
    const Clock::time_point now =
        clock_ != nullptr ? clock_->Now() : std::chrono::steady_clock::now();
    if (page == 1) {
      // No overflow for a huge limit: the end is at most the clock's last.
      end_ = limit_ < Clock::time_point::max() - now ? now + limit_
                                                     : Clock::time_point::max();
    }
    if (now >= end_) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the range's PageRangeTotalTimeoutOption (", limit_.count(),
          "ns) ran out after ", page - 1, page == 2 ? " page" : " pages",
          "; resume from next_page_token() to continue"));
    }
    std::chrono::nanoseconds left = end_ - now;
    // A negative TotalTimeoutOption stays, for the call to report.
    if (call_timeout_ != std::chrono::nanoseconds::zero() &&
        call_timeout_ < left) {
      left = call_timeout_;
    }
    call.set<TotalTimeoutOption>(left);
    return absl::OkStatus();
  }

 private:
  std::chrono::nanoseconds limit_;
  std::chrono::nanoseconds call_timeout_;
  std::shared_ptr<Clock> clock_;
  Clock::time_point end_;
};

// `call(request, page_call)` fetches a page; `items(response)` points at
// its items. `page_call` is `call_options`, bounded by
// PageRangeTotalTimeoutOption when that is set; `options` are the method's
// effective options.
template <typename T, typename Request, typename Call, typename Items>
PageRange<T> MakePageRange(Request request, Options call_options,
                           const OptionsView& options, Call call, Items items) {
  std::string first = request.page_token();
  return PageRange<T>(
      std::move(first),
      [request = std::move(request), page_call = std::move(call_options),
       clock = PageRangeClock(options), call = std::move(call),
       items = std::move(items),
       fetches = std::int64_t{0}](const std::string& page_token) mutable
      -> absl::StatusOr<typename PageRange<T>::Page> {
        absl::Status bounded = clock.BeforePage(++fetches, page_call);
        if (!bounded.ok()) return bounded;
        request.set_page_token(page_token);
        auto response = call(static_cast<const Request&>(request),
                             static_cast<const Options&>(page_call));
        if (!response.ok()) return std::move(response).status();
        typename PageRange<T>::Page page;
        page.items = TakeItems<T>(*items(*response));
        page.next_page_token = std::move(*response->mutable_next_page_token());
        return page;
      },
      options.get<PageRangeMaxPagesOption>());
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_MAKE_PAGE_RANGE_H_

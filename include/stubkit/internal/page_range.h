// Copyright 2026 The stubkit Authors.
//
// What a generated `ListFoosRange` is made of (see stubkit/page_range.h):
//
//   return ::stubkit::internal::MakePageRange<Foo>(
//       ::std::move(request),
//       [client = *this, call](const ListFoosRequest& page_request) {
//         return client.ListFoos(page_request, call);
//       },
//       [](ListFoosResponse& response) { return response.mutable_foos(); });
//
// Each page is an ordinary call of the client's unary method, so retries,
// per-call options, observers and decorators apply to it unchanged.
//
// Not public API.

#ifndef STUBKIT_INTERNAL_PAGE_RANGE_H_
#define STUBKIT_INTERNAL_PAGE_RANGE_H_

#include <google/protobuf/map.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "stubkit/page_range.h"

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

// `call(request)` fetches a page; `items(response)` points at its items.
template <typename T, typename Request, typename Call, typename Items>
PageRange<T> MakePageRange(Request request, Call call, Items items) {
  std::string first = request.page_token();
  return PageRange<T>(
      std::move(first),
      [request = std::move(request), call = std::move(call),
       items = std::move(items)](const std::string& page_token) mutable
      -> absl::StatusOr<typename PageRange<T>::Page> {
        request.set_page_token(page_token);
        auto response = call(static_cast<const Request&>(request));
        if (!response.ok()) return std::move(response).status();
        typename PageRange<T>::Page page;
        page.items = TakeItems<T>(*items(*response));
        page.next_page_token = std::move(*response->mutable_next_page_token());
        return page;
      });
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_PAGE_RANGE_H_

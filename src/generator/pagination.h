// Copyright 2026 The stubkit Authors.
//
// Paginated list methods (AIP-158): which unary methods get a
// `MRange(request, call)` returning `::stubkit::PageRange<Item>` in SClient,
// and its printing. A method is paginated when
//   - its request has a singular `string page_token` and a singular integer
//     `page_size` (or `max_results`);
//   - its response has a singular `string next_page_token`;
//   - its response has a repeated field: the items. With several, the one
//     with the lowest field number. A map is paged as std::pair<K, V>.
// A service with a method named `MRange` next to a paginated `M` is
// refused. Its unit in the printers is PaginationConvention()
// (convention.h).

#ifndef STUBKIT_SRC_GENERATOR_PAGINATION_H_
#define STUBKIT_SRC_GENERATOR_PAGINATION_H_

#include <google/protobuf/descriptor.h>

#include <string>

#include "src/generator/names.h"

namespace stubkit {
namespace generator {

struct PaginationModel {
  bool paginated = false;
  std::string item_type;    // "::pkg::Foo", "::std::string", "::std::pair<...>"
  std::string items_field;  // the C++ accessor, "foos"
};

// The pagination of `method`; `paginated` false when it is not.
// `protoc_release` names the items' accessor (see ProtobufFieldName).
PaginationModel DetectPagination(
    const google::protobuf::MethodDescriptor* method,
    int protoc_release = kDefaultProtocRelease);

}  // namespace generator
}  // namespace stubkit

#endif  // STUBKIT_SRC_GENERATOR_PAGINATION_H_

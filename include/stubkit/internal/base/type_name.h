// Copyright 2026 The stubkit Authors.
//
// The name of a request type, for messages. Not API.

#ifndef STUBKIT_INTERNAL_TYPE_NAME_H_
#define STUBKIT_INTERNAL_TYPE_NAME_H_

#include <google/protobuf/message.h>

#include <string>
#include <type_traits>

namespace stubkit {
namespace internal {

template <typename T>
std::string TypeNameOf() {
  if constexpr (std::is_base_of_v<google::protobuf::Message, T>) {
    return T::descriptor()->full_name();
  } else {
    return "a non-proto type";
  }
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_TYPE_NAME_H_

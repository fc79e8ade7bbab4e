// Copyright 2026 The stubkit Authors.
//
// The identity and the default of an option type, for stubkit/options.h.
// Not API.

#ifndef STUBKIT_INTERNAL_OPTION_KEY_H_
#define STUBKIT_INTERNAL_OPTION_KEY_H_

namespace stubkit {
namespace internal {

// One distinct address per option type; comparing addresses is the cheapest
// type identity available without RTTI.
template <typename T>
struct OptionKey {
  static constexpr char kTag = 0;
};

template <typename T>
const void* KeyOf() {
  return &OptionKey<T>::kTag;
}

// Built once, never destroyed: defaults outlive every static that reads them.
template <typename T>
const typename T::Type& DefaultOf() {
  static const auto* const kDefault = new typename T::Type(T::Default());
  return *kDefault;
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_OPTION_KEY_H_

// Copyright 2026 The stubkit Authors.

#include "stubkit/options.h"

#include <algorithm>

#include "stubkit/internal/api/options_layers.h"

namespace stubkit {

void Options::Put(const void* key, std::shared_ptr<const void> value) {
  for (Entry& entry : entries_) {
    if (entry.key == key) {
      entry.value = std::move(value);
      return;
    }
  }
  entries_.push_back(Entry{key, std::move(value)});
}

void Options::Erase(const void* key) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [key](const Entry& e) { return e.key == key; }),
                 entries_.end());
}

Options Options::MergedWith(const Options& overrides) const {
  Options merged = *this;
  for (const Entry& entry : overrides.entries_) {
    merged.Put(entry.key, entry.value);
  }
  return merged;
}

Options internal::CopyLowerLayers(const OptionsView& options) {
  if (options.method() == nullptr && options.service() == nullptr) {
    return options.client();
  }
  Options merged = options.client();
  if (options.service() != nullptr) {
    merged = merged.MergedWith(*options.service());
  }
  if (options.method() != nullptr) {
    merged = merged.MergedWith(*options.method());
  }
  return merged;
}

}  // namespace stubkit

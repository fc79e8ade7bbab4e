// Copyright 2026 The stubkit Authors.
//
// Options kept past the call that gave them. Not API.

#ifndef STUBKIT_INTERNAL_OPTIONS_LAYERS_H_
#define STUBKIT_INTERNAL_OPTIONS_LAYERS_H_

#include "stubkit/options.h"

namespace stubkit {
namespace internal {

// The layers below the call's as one `Options`, for operations that keep a
// copy (async, hedged, streams): the client's when there is no per-method
// or per-service layer (a cheap copy), else them merged over it.
Options CopyLowerLayers(const OptionsView& options);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_OPTIONS_LAYERS_H_

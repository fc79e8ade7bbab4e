// Copyright 2026 The stubkit Authors.
//
// Deprecated (2026-11-27, removed before 1.0): the stub decorator types
// moved to a header named for them (docs/options.md, "Renamed in 0.x").
// Include that one instead:
//
//   #include "stubkit/decorator.h"

#ifndef STUBKIT_CLIENT_SUPPORT_H_
#define STUBKIT_CLIENT_SUPPORT_H_

#include "stubkit/decorator.h"  // IWYU pragma: export

#endif  // STUBKIT_CLIENT_SUPPORT_H_

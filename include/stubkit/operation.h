// Copyright 2026 The stubkit Authors.
//
// Deprecated (2026-11-27, removed before 1.0): long-running operation
// polling (`PollingPolicy`, `GetOperationName`) moved to a header named for
// it (docs/options.md, "Renamed in 0.x"). Include that one instead:
//
//   #include "stubkit/long_running_operation.h"

#ifndef STUBKIT_OPERATION_H_
#define STUBKIT_OPERATION_H_

#include "stubkit/long_running_operation.h"  // IWYU pragma: export

#endif  // STUBKIT_OPERATION_H_

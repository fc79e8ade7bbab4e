// Copyright 2026 The stubkit Authors.
//
// The whole public API of the stubkit runtime in one include: options and
// policies, channels, statuses, clocks and sleepers (with FakeClock for
// tests), cancellation, hedging, throttling, observers, logging, metrics,
// streams, page ranges, long-running operations and service configs.
//
// ```cpp
// #include "stubkit/stubkit.h"
//
// #include <chrono>
//
// stubkit::Options ClientOptions() {
//   using namespace std::chrono_literals;
//   return stubkit::Options{}
//       .set<stubkit::RetryPolicyOption>(
//           stubkit::RetryPolicy::LimitedTime(std::chrono::minutes(10)))
//       .set<stubkit::AttemptTimeoutOption>(2s);
// }
// ```
//
// A generated header (`foo.stubkit.h`) includes only what it names; a file
// that sets options includes their headers, or this one. Not included, each
// with a library of its own: stubkit/explain.h, the policy explainer
// (stubkit::explain), and stubkit/prometheus.h, the Prometheus export
// (stubkit::prometheus, which needs prometheus-cpp). Each option's header:
// docs/options.md.

#ifndef STUBKIT_STUBKIT_H_
#define STUBKIT_STUBKIT_H_

#include "stubkit/adaptive_hedging.h"        // IWYU pragma: export
#include "stubkit/async_callback.h"          // IWYU pragma: export
#include "stubkit/async_retry_loop.h"        // IWYU pragma: export
#include "stubkit/async_streaming.h"         // IWYU pragma: export
#include "stubkit/backoff_policy.h"          // IWYU pragma: export
#include "stubkit/call_options.h"            // IWYU pragma: export
#include "stubkit/cancellation.h"            // IWYU pragma: export
#include "stubkit/channel.h"                 // IWYU pragma: export
#include "stubkit/clock.h"                   // IWYU pragma: export
#include "stubkit/decorator.h"               // IWYU pragma: export
#include "stubkit/hedging.h"                 // IWYU pragma: export
#include "stubkit/logging.h"                 // IWYU pragma: export
#include "stubkit/long_running_operation.h"  // IWYU pragma: export
#include "stubkit/method.h"                  // IWYU pragma: export
#include "stubkit/method_options.h"          // IWYU pragma: export
#include "stubkit/metrics.h"                 // IWYU pragma: export
#include "stubkit/options.h"                 // IWYU pragma: export
#include "stubkit/page_range.h"              // IWYU pragma: export
#include "stubkit/retry_budget.h"            // IWYU pragma: export
#include "stubkit/retry_loop.h"              // IWYU pragma: export
#include "stubkit/retry_observer.h"          // IWYU pragma: export
#include "stubkit/retry_options.h"           // IWYU pragma: export
#include "stubkit/retry_policy.h"            // IWYU pragma: export
#include "stubkit/retry_throttle.h"          // IWYU pragma: export
#include "stubkit/routing.h"                 // IWYU pragma: export
#include "stubkit/server_hints.h"            // IWYU pragma: export
#include "stubkit/server_propagation.h"      // IWYU pragma: export
#include "stubkit/service_config.h"          // IWYU pragma: export
#include "stubkit/status.h"                  // IWYU pragma: export
#include "stubkit/streaming.h"               // IWYU pragma: export

#endif  // STUBKIT_STUBKIT_H_

// Uses the installed stubkit::explain: the schedule of a call allowed two
// retries, and why a failed call stopped. Exits 0 when the explainer says
// three attempts, stopped by the retry policy, and WhyNot gives advice.

#include <iostream>

#include "absl/status/status.h"
#include "stubkit/explain.h"
#include "stubkit/options.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"
#include "stubkit/status.h"

int main() {
  const stubkit::Options client =
      stubkit::Options{}.set<stubkit::RetryPolicyOption>(
          stubkit::RetryPolicy::LimitedErrorCount(2));
  absl::StatusOr<stubkit::Explanation> e =
      stubkit::Explain(client, "greeter.Greeter.SayHello");
  if (!e.ok()) {
    std::cerr << e.status() << "\n";
    return 1;
  }
  std::cout << e->ToTable();
  if (e->fewest_attempts != 3 || e->most_attempts != 3 ||
      e->longest_waits.reason != stubkit::StopReason::kExhausted) {
    return 1;
  }
  const stubkit::StopAdvice advice =
      stubkit::WhyNot(absl::UnavailableError("backend down"));
  std::cout << advice.ToString() << "\n";
  return advice.why.empty() ? 1 : 0;
}

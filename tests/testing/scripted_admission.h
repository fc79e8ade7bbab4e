// Copyright 2026 The stubkit Authors.
//
// ScriptedAdmission: an admission source (stubkit/internal/retry_decision.h)
// for decision table tests. It admits or refuses as scripted, never changes
// its mind, and counts the failures it is told of, so that a row can check
// which rule asked it.
//
//   ScriptedAdmission admission(/*admit=*/false, /*may_wait=*/true);
//   DecideAfterFailure(status, facts, policy, &admission, waits);
//   EXPECT_EQ(admission.failures_seen, 1);

#ifndef STUBKIT_TESTS_TESTING_SCRIPTED_ADMISSION_H_
#define STUBKIT_TESTS_TESTING_SCRIPTED_ADMISSION_H_

#include <string>

#include "stubkit/internal/retry_decision.h"

namespace stubkit {
namespace testing {

class ScriptedAdmission final : public internal::AdmissionSource {
 public:
  explicit ScriptedAdmission(bool admit, bool may_wait = false)
      : admit_(admit), may_wait_(may_wait) {}
  bool OnRetryableFailure() override {
    ++failures_seen;
    return admit_;
  }
  bool Admits() const override { return admit_; }
  bool MayWait() const override { return may_wait_; }
  std::string Refusal() const override { return "gave up: scripted refusal"; }
  int failures_seen = 0;

 private:
  bool admit_;
  bool may_wait_;
};

}  // namespace testing
}  // namespace stubkit

#endif  // STUBKIT_TESTS_TESTING_SCRIPTED_ADMISSION_H_

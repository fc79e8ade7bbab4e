// Copyright 2026 The stubkit Authors.
//
// ScriptedAdmission: an admission source
// (stubkit/internal/engine/retry_decision.h) for decision table tests. It
// admits or refuses as scripted, never changes its mind, and counts the
// failures it is told of and the takes, so that a row can check which rule
// asked it. `take` false plays a shared budget that another call emptied
// between the admission and the take.
//
//   ScriptedAdmission admission(/*admit=*/false, /*may_wait=*/true);
//   RunRetryDecision(status, facts, policy, &admission, waits);
//   EXPECT_EQ(admission.failures_seen, 1);
//   EXPECT_EQ(admission.takes, 0);

#ifndef STUBKIT_TESTS_TESTING_SCRIPTED_ADMISSION_H_
#define STUBKIT_TESTS_TESTING_SCRIPTED_ADMISSION_H_

#include <string>

#include "stubkit/internal/engine/retry_decision.h"

namespace stubkit {
namespace testing {

class ScriptedAdmission final : public internal::AdmissionSource {
 public:
  explicit ScriptedAdmission(bool admit, bool may_wait = false,
                             bool take = true)
      : admit_(admit), may_wait_(may_wait), take_(take) {}
  bool OnRetryableFailure() override {
    ++failures_seen;
    return admit_;
  }
  bool Admits() const override { return admit_; }
  bool MayWait() const override { return may_wait_; }
  std::string Refusal() const override { return "gave up: scripted refusal"; }
  bool Take() override {
    ++takes;
    return take_;
  }
  int failures_seen = 0;
  int takes = 0;

 private:
  bool admit_;
  bool may_wait_;
  bool take_;
};

}  // namespace testing
}  // namespace stubkit

#endif  // STUBKIT_TESTS_TESTING_SCRIPTED_ADMISSION_H_

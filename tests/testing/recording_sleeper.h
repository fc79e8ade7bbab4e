// Copyright 2026 The stubkit Authors.
//
// RecordingSleeper: a Sleeper for tests on a FakeClock that records each
// wait a retry loop asks for and advances the clock by it, so that a policy
// of minutes runs in microseconds.
//
//   auto clock = std::make_shared<FakeClock>();
//   auto sleeper = std::make_shared<RecordingSleeper>(clock);
//   Options{}.set<ClockOption>(clock).set<SleeperOption>(sleeper);
//   ...
//   EXPECT_THAT(sleeper->waits, ElementsAre(seconds(1), seconds(2)));

#ifndef STUBKIT_TESTS_TESTING_RECORDING_SLEEPER_H_
#define STUBKIT_TESTS_TESTING_RECORDING_SLEEPER_H_

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "stubkit/clock.h"

namespace stubkit {
namespace testing {

class RecordingSleeper : public Sleeper {
 public:
  explicit RecordingSleeper(std::shared_ptr<FakeClock> clock)
      : clock_(std::move(clock)) {}
  void SleepFor(std::chrono::nanoseconds wait) override {
    waits.push_back(wait);
    clock_->Advance(wait);
  }
  std::vector<std::chrono::nanoseconds> waits;

 private:
  std::shared_ptr<FakeClock> clock_;
};

}  // namespace testing
}  // namespace stubkit

#endif  // STUBKIT_TESTS_TESTING_RECORDING_SLEEPER_H_

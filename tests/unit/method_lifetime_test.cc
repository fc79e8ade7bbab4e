// Copyright 2026 The stubkit Authors.
//
// A `MethodInfo` may be a local, as the raw-stub example in
// docs/generated-code.md shows: an async call must not keep a reference to it
// after the caller returns.

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"

namespace stubkit {
namespace {

// Holds every wait until the test fires it.
class HeldSleeper : public AsyncSleeper {
 public:
  uint64_t Schedule(std::chrono::nanoseconds,
                    std::function<void(bool)> done) override {
    waits_.push_back(std::move(done));
    return waits_.size();
  }
  void Cancel(uint64_t) override {}
  void FireAll() {
    std::vector<std::function<void(bool)>> waits;
    waits.swap(waits_);
    for (auto& done : waits) done(true);
  }

 private:
  std::vector<std::function<void(bool)>> waits_;
};

struct Seen {
  std::vector<std::string> methods;
  absl::Status result;
};

// Starts a call whose MethodInfo lives in this frame only.
__attribute__((noinline)) void StartWithLocalMethod(
    const std::shared_ptr<HeldSleeper>& sleeper,
    const std::shared_ptr<Seen>& seen) {
  const MethodInfo local{"test.Local.Method", RpcKind::kUnary,
                         Idempotency::kIdempotent};
  auto options =
      Options{}
          .set<AsyncSleeperOption>(sleeper)
          .set<RetryObserverOption>([seen](const AttemptEvent& event) {
            seen->methods.emplace_back(event.method);
          });
  auto attempts = std::make_shared<int>(0);
  AsyncRetryLoop<int>(
      local, options, Options{},
      [attempts](grpc::ClientContext&, const OptionsView&,
                 AsyncCallback<int> done) {
        if ((*attempts)++ == 0) {
          done(absl::UnavailableError("down"));
        } else {
          done(42);
        }
      },
      [seen](absl::StatusOr<int> result) { seen->result = result.status(); });
}

// Reuses the stack the previous frame had.
__attribute__((noinline)) void ScribbleOverTheStack() {
  volatile char scratch[4096];
  for (size_t i = 0; i < sizeof(scratch); ++i) scratch[i] = static_cast<char>(0xA5);
}

TEST(MethodLifetimeTest, AsyncCallOutlivesALocalMethodInfo) {
  auto sleeper = std::make_shared<HeldSleeper>();
  auto seen = std::make_shared<Seen>();
  StartWithLocalMethod(sleeper, seen);  // attempt 1 fails; the wait is held
  ScribbleOverTheStack();
  sleeper->FireAll();  // attempt 2 succeeds, long after the frame ended
  ASSERT_TRUE(seen->result.ok()) << seen->result;
  ASSERT_EQ(seen->methods.size(), 2u);
  EXPECT_EQ(seen->methods[0], "test.Local.Method");
  EXPECT_EQ(seen->methods[1], "test.Local.Method");
}

}  // namespace
}  // namespace stubkit

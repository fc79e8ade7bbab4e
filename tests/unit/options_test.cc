// Copyright 2026 The stubkit Authors.

#include "stubkit/options.h"

#include <chrono>
#include <string>
#include <type_traits>

#include "gtest/gtest.h"
#include "stubkit/internal/api/options_layers.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct NameOption {
  using Type = std::string;
  static Type Default() { return "anonymous"; }
};
struct CountOption {
  using Type = int;
  static Type Default() { return 7; }
};

// `set<T>` accepts only values convertible to `T::Type`.
template <typename O, typename T, typename V, typename = void>
struct CanSet : std::false_type {};
template <typename O, typename T, typename V>
struct CanSet<O, T, V,
              std::void_t<decltype(std::declval<O&>().template set<T>(
                  std::declval<V>()))>> : std::true_type {};

static_assert(CanSet<Options, NameOption, std::string>::value);
static_assert(!CanSet<Options, NameOption, std::vector<int>>::value);
static_assert(!CanSet<Options, RetryPolicyOption, int>::value);
static_assert(!CanSet<Options, BackoffPolicyOption, RetryPolicy>::value);

TEST(OptionsTest, UnsetOptionsReturnDefaults) {
  Options options;
  EXPECT_TRUE(options.empty());
  EXPECT_FALSE(options.has<NameOption>());
  EXPECT_EQ(options.find<NameOption>(), nullptr);
  EXPECT_EQ(options.get<NameOption>(), "anonymous");
  EXPECT_EQ(options.get<CountOption>(), 7);
}

TEST(OptionsTest, SetChainsAndGetReturnsTheValue) {
  auto options = Options{}.set<NameOption>("alice").set<CountOption>(3);
  EXPECT_TRUE(options.has<NameOption>());
  EXPECT_EQ(options.get<NameOption>(), "alice");
  EXPECT_EQ(options.get<CountOption>(), 3);
  EXPECT_EQ(options.size(), 2);
}

// On a temporary, set and unset return a value: a reference bound to the
// result keeps it alive (a new user's `const Options& o =
// Options{}.set<T>(v);` dangled when they returned Options&&; ASan saw it).
static_assert(std::is_same_v<decltype(Options{}.set<CountOption>(1)), Options>);
static_assert(
    std::is_same_v<decltype(Options{}.unset<CountOption>()), Options>);
static_assert(
    std::is_same_v<decltype(std::declval<Options&>().set<CountOption>(1)),
                   Options&>);

TEST(OptionsTest, AReferenceToAChainedTemporaryStaysValid) {
  const Options& options = Options{}.set<NameOption>("bob").set<CountOption>(4);
  EXPECT_EQ(options.get<NameOption>(), "bob");
  EXPECT_EQ(options.get<CountOption>(), 4);
  const Options& unset = Options{}.set<CountOption>(4).unset<CountOption>();
  EXPECT_EQ(unset.get<CountOption>(), 7);
}

TEST(OptionsTest, SetReplacesAndUnsetRestoresDefault) {
  Options options;
  options.set<CountOption>(1).set<CountOption>(2);
  EXPECT_EQ(options.get<CountOption>(), 2);
  EXPECT_EQ(options.size(), 1);
  options.unset<CountOption>();
  EXPECT_FALSE(options.has<CountOption>());
  EXPECT_EQ(options.get<CountOption>(), 7);
}

TEST(OptionsTest, CopiesAreIndependent) {
  auto original = Options{}.set<CountOption>(1);
  Options copy = original;
  copy.set<CountOption>(2);
  EXPECT_EQ(original.get<CountOption>(), 1);
  EXPECT_EQ(copy.get<CountOption>(), 2);
}

TEST(OptionsTest, ViewLayersCallOverClientOverDefaults) {
  auto client = Options{}.set<NameOption>("client").set<CountOption>(1);
  auto call = Options{}.set<CountOption>(2);
  OptionsView view(call, client);
  EXPECT_EQ(view.get<CountOption>(), 2);        // call wins
  EXPECT_EQ(view.get<NameOption>(), "client");  // client fills in
  EXPECT_EQ(view.get<AttemptTimeoutOption>(), milliseconds(0));  // default
  EXPECT_FALSE(view.has<AttemptTimeoutOption>());
  // The view reads in place: the client's value is the very same object.
  EXPECT_EQ(&view.get<NameOption>(), client.find<NameOption>());
}

TEST(OptionsTest, ViewLayersCallOverMethodOverServiceOverClient) {
  auto client = Options{}
                    .set<NameOption>("client")
                    .set<CountOption>(1)
                    .set<AttemptTimeoutOption>(milliseconds(1));
  auto service = Options{}.set<NameOption>("service").set<CountOption>(2);
  auto method = Options{}.set<NameOption>("method");
  auto call = Options{};
  OptionsView view(call, &method, &service, client);
  EXPECT_EQ(view.get<NameOption>(), "method");
  EXPECT_EQ(view.get<CountOption>(), 2);
  EXPECT_EQ(view.get<AttemptTimeoutOption>(), milliseconds(1));
  // In place: the method's value is the very same object.
  EXPECT_EQ(&view.get<NameOption>(), method.find<NameOption>());
  auto override_all = Options{}.set<NameOption>("call");
  EXPECT_EQ(
      OptionsView(override_all, &method, &service, client).get<NameOption>(),
      "call");
  // Null layers are skipped.
  EXPECT_EQ(OptionsView(call, nullptr, &service, client).get<NameOption>(),
            "service");
  EXPECT_EQ(OptionsView(call, &method, nullptr, client).get<CountOption>(), 1);

  // What async operations keep: the lower layers merged, the call's apart.
  Options lower = internal::CopyLowerLayers(view);
  EXPECT_EQ(lower.get<NameOption>(), "method");
  EXPECT_EQ(lower.get<CountOption>(), 2);
  EXPECT_EQ(lower.get<AttemptTimeoutOption>(), milliseconds(1));
  EXPECT_EQ(
      internal::CopyLowerLayers(OptionsView(call, client)).get<NameOption>(),
      "client");
}

TEST(OptionsTest, MergedWithPrefersOverrides) {
  auto base = Options{}.set<NameOption>("base").set<CountOption>(1);
  auto merged = base.MergedWith(Options{}.set<CountOption>(5));
  EXPECT_EQ(merged.get<NameOption>(), "base");
  EXPECT_EQ(merged.get<CountOption>(), 5);
  EXPECT_EQ(base.get<CountOption>(), 1);
}

TEST(OptionsTest, TheDesignDefaults) {
  Options options;
  const RetryPolicy& retry = options.get<RetryPolicyOption>();
  EXPECT_EQ(retry.time_limit(), std::chrono::minutes(30));
  EXPECT_EQ(retry.max_failures(), RetryPolicy::kUnlimitedFailures);
  EXPECT_TRUE(retry.retryable_codes().contains(grpc::StatusCode::UNAVAILABLE));
  const ExponentialBackoffPolicy& backoff = options.get<BackoffPolicyOption>();
  EXPECT_EQ(backoff.initial_delay(), seconds(1));
  EXPECT_EQ(backoff.maximum_delay(), std::chrono::minutes(5));
  EXPECT_EQ(backoff.multiplier(), 2.0);
  EXPECT_EQ(backoff.jitter().kind(), Jitter::Kind::kUpToInitialDelay);
  EXPECT_TRUE(options.get<RetryAttemptHeaderOption>());
}

}  // namespace
}  // namespace stubkit

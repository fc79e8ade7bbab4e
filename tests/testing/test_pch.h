// Copyright 2026 The stubkit Authors.
//
// The headers precompiled once per build tree for the test executables
// (STUBKIT_TEST_PCH in tests/CMakeLists.txt): most test files parse gRPC,
// protobuf, gtest/gMock, abseil and stubkit's public API, which costs more
// than their own code. Only headers nearly every test uses belong here;
// none may depend on a macro a test defines. Not included by any file: the
// build passes it first on each test's command line.

#ifndef STUBKIT_TESTS_TESTING_TEST_PCH_H_
#define STUBKIT_TESTS_TESTING_TEST_PCH_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "stubkit/stubkit.h"

#endif  // STUBKIT_TESTS_TESTING_TEST_PCH_H_

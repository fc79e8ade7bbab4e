// Copyright 2026 The stubkit Authors.
//
// Shared helpers for stubkit's libFuzzer targets (tests/fuzz/*_fuzzer.cc).
//
// FUZZ_CHECK(cond) aborts with the failed condition, so libFuzzer (or the
// corpus replay driver in normal builds) reports it as a crash.
// FuzzInput consumes the fuzzer's bytes as typed values; once the bytes run
// out every read returns zero / empty, so each input is a valid program.

#ifndef STUBKIT_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define STUBKIT_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define FUZZ_CHECK(cond)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__,    \
                   __LINE__, #cond);                                       \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

namespace stubkit {
namespace fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return size_ == 0; }
  size_t remaining() const { return size_; }

  uint8_t Byte() {
    if (size_ == 0) return 0;
    uint8_t b = *data_;
    ++data_;
    --size_;
    return b;
  }
  template <typename T>
  T Integral() {
    T value{};
    size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    if (n == 0) return value;  // data_ may be null
    std::memcpy(&value, data_, n);
    data_ += n;
    size_ -= n;
    return value;
  }
  double Double() { return Integral<double>(); }
  bool Bool() { return (Byte() & 1) != 0; }
  // A length-prefixed string of at most `max` bytes.
  std::string String(size_t max) {
    size_t n = Integral<uint16_t>() % (max + 1);
    if (n > size_) n = size_;
    if (n == 0) return std::string();
    std::string s(reinterpret_cast<const char*>(data_), n);
    data_ += n;
    size_ -= n;
    return s;
  }
  std::string Rest() {
    if (size_ == 0) return std::string();
    std::string s(reinterpret_cast<const char*>(data_), size_);
    data_ += size_;
    size_ = 0;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace fuzz
}  // namespace stubkit

#endif  // STUBKIT_TESTS_FUZZ_FUZZ_SUPPORT_H_

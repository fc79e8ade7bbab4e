// Copyright 2026 The stubkit Authors.
//
// Options: a typed bag of configuration values.
//
// Each option is a small tag type that names its value type and its default.
// Setting an option with a value of the wrong type is a compile error.
//
//   struct AttemptTimeoutOption {
//     using Type = std::chrono::nanoseconds;
//     static Type Default() { return Type::zero(); }
//   };
//
//   auto options = stubkit::Options{}
//       .set<stubkit::RetryPolicyOption>(stubkit::RetryPolicy::LimitedErrorCount(3))
//       .set<stubkit::AttemptTimeoutOption>(2s);
//   options.has<stubkit::AttemptTimeoutOption>();  // true
//   options.get<stubkit::BackoffPolicyOption>();   // unset: the default
//
// A client keeps one `Options`; each call may pass its own. The call's
// effective options are an `OptionsView`: the call's options over the
// client's (and its per-method and per-service entries, see
// `MethodOptionsOption` below) over the defaults, looked up in place
// without copying any of them.
//
//   stubkit::OptionsView effective(call_options, client_options);
//   effective.get<stubkit::AttemptTimeoutOption>();
//
// Copying an `Options` is cheap: values are immutable and shared. Every
// option, its header and default: docs/options.md.

#ifndef STUBKIT_OPTIONS_H_
#define STUBKIT_OPTIONS_H_

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "stubkit/internal/api/option_key.h"

namespace stubkit {
class Options {
 public:
  Options() = default;

  // Sets option `T`, replacing any earlier value.
  template <typename T>
  Options& set(typename T::Type value) & {
    Put(internal::KeyOf<T>(),
        std::make_shared<const typename T::Type>(std::move(value)));
    return *this;
  }
  // On a temporary, returns a new value rather than a reference to the
  // temporary, so that `const Options& o = Options{}.set<T>(v);` keeps the
  // options alive instead of dangling.
  template <typename T>
  Options set(typename T::Type value) && {
    set<T>(std::move(value));
    return std::move(*this);
  }

  // Removes option `T`, so that `get<T>()` returns the default again.
  template <typename T>
  Options& unset() & {
    Erase(internal::KeyOf<T>());
    return *this;
  }
  template <typename T>
  Options unset() && {
    unset<T>();
    return std::move(*this);
  }

  template <typename T>
  bool has() const {
    return Find(internal::KeyOf<T>()) != nullptr;
  }

  // The value of `T`, or nullptr when it is not set.
  template <typename T>
  const typename T::Type* find() const {
    return static_cast<const typename T::Type*>(Find(internal::KeyOf<T>()));
  }

  // The value of `T`, or `T::Default()` when it is not set.
  template <typename T>
  const typename T::Type& get() const {
    const typename T::Type* value = find<T>();
    return value != nullptr ? *value : internal::DefaultOf<T>();
  }

  bool empty() const { return entries_.empty(); }
  int size() const { return static_cast<int>(entries_.size()); }

  // Returns `overrides` layered over `*this`: every option set in
  // `overrides` wins. Allocates; `OptionsView` is the copy-free lookup.
  Options MergedWith(const Options& overrides) const;

 private:
  struct Entry {
    const void* key;
    std::shared_ptr<const void> value;
  };

  const void* Find(const void* key) const {
    // A linear scan beats hashing for the handful of options a client sets.
    for (const Entry& entry : entries_) {
      if (entry.key == key) return entry.value.get();
    }
    return nullptr;
  }
  void Put(const void* key, std::shared_ptr<const void> value);
  void Erase(const void* key);

  std::vector<Entry> entries_;
};

// The effective options of one call: `call` over `method` over `service`
// over `client` over defaults (a null layer is skipped). Holds pointers; every
// `Options` must outlive the view.
class OptionsView {
 public:
  OptionsView(const Options& call, const Options& client)
      : call_(&call), client_(&client) {}
  OptionsView(const Options& call, const Options* method,
              const Options* service, const Options& client)
      : call_(&call), method_(method), service_(service), client_(&client) {}

  template <typename T>
  const typename T::Type* find() const {
    if (const auto* value = call_->find<T>()) return value;
    if (method_ != nullptr) {
      if (const auto* value = method_->find<T>()) return value;
    }
    if (service_ != nullptr) {
      if (const auto* value = service_->find<T>()) return value;
    }
    return client_->find<T>();
  }

  template <typename T>
  bool has() const {
    return find<T>() != nullptr;
  }

  template <typename T>
  const typename T::Type& get() const {
    const typename T::Type* value = find<T>();
    return value != nullptr ? *value : internal::DefaultOf<T>();
  }

  const Options& call() const { return *call_; }
  // The per-method and per-service layers (see `MethodOptionsOption`), or
  // null.
  const Options* method() const { return method_; }
  const Options* service() const { return service_; }
  const Options& client() const { return *client_; }

 private:
  const Options* call_;
  const Options* method_ = nullptr;
  const Options* service_ = nullptr;
  const Options* client_;
};

// Options for one method or one whole service, set inside a client's
// options. Keys are full names: "package.Service.Method" for a method,
// "package.Service" for every method of a service. A call's effective
// options are the call's, over its method's, over its service's, over the
// client's, over the defaults:
//
//   auto client_options = stubkit::Options{}
//       .set<stubkit::AttemptTimeoutOption>(2s)
//       .set<stubkit::MethodOptionsOption>({
//           {"demo.Foo", stubkit::Options{}.set<
//                stubkit::TotalTimeoutOption>(10min)},
//           {"demo.Foo.Upload", stubkit::Options{}.set<
//                stubkit::IdempotencyOption>(stubkit::Idempotency::kIdempotent)},
//       });
//
// Entries are looked up in place, never copied per call. A generated client
// resolves its own entries once, when it is built (see
// stubkit/method_options.h):
//   - "pkg.Service" and "pkg.Service.Method" (or gRPC's spelling,
//     "pkg.Service/Method") of its own service apply;
//   - a key of its own service naming a method it does not have (a typo,
//     "demo.Foo.Uplaod") is refused: every call of that client fails with
//     INVALID_ARGUMENT naming the key, before anything is sent; entries
//     made by `ServiceConfig::ToOptions()` are ignored instead, with one
//     log line per client, as gRPC ignores them;
//   - keys of other services are ignored, since one options object (a
//     whole service config, say) may serve the clients of several services;
//     "demo.Foo.Bar" is taken for a service, not a typo, when other keys
//     lie under it ("demo.Foo.Bar.Baz", "demo.Foo.Bar/Baz");
//   - an entry holding a `MethodOptionsOption` of its own is refused in the
//     same way: entries do not nest.
// Only the client's `MethodOptionsOption` counts: in a call's options it is
// ignored. Options that configure the connection rather than a call
// (`DecoratorsOption`) are read from the client's own options only.
struct MethodOptionsOption {
  using Type = std::map<std::string, Options>;
  static Type Default() { return {}; }
};

}  // namespace stubkit

#endif  // STUBKIT_OPTIONS_H_

"""The native C++ rules, under the names @rules_cc//cc:defs.bzl exports.

Bazel 4.2 implements these rules natively; the real rules_cc of that era is a
thin wrapper too. This file lets @bazel_tools load them offline.
"""

# buildifier: disable=native-cc
def cc_binary(**attrs):
    native.cc_binary(**attrs)

# buildifier: disable=native-cc
def cc_import(**attrs):
    native.cc_import(**attrs)

# buildifier: disable=native-cc
def cc_library(**attrs):
    native.cc_library(**attrs)

# buildifier: disable=native-cc
def cc_shared_library(**attrs):
    native.cc_shared_library(**attrs)

# buildifier: disable=native-cc
def cc_test(**attrs):
    native.cc_test(**attrs)

# buildifier: disable=native-cc
def cc_proto_library(**attrs):
    native.cc_proto_library(**attrs)

# buildifier: disable=native-cc
def fdo_prefetch_hints(**attrs):
    native.fdo_prefetch_hints(**attrs)

# buildifier: disable=native-cc
def fdo_profile(**attrs):
    native.fdo_profile(**attrs)

# buildifier: disable=native-cc
def cc_toolchain(**attrs):
    native.cc_toolchain(**attrs)

# buildifier: disable=native-cc
def cc_toolchain_suite(**attrs):
    native.cc_toolchain_suite(**attrs)

# buildifier: disable=native-cc
def objc_library(**attrs):
    native.objc_library(**attrs)

# buildifier: disable=native-cc
def objc_import(**attrs):
    native.objc_import(**attrs)

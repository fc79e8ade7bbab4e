"""The native Java rules, under the names @rules_java//java:defs.bzl exports.

Bazel 4.2 implements these rules natively; @bazel_tools loads them through
this file.
"""

# buildifier: disable=native-java
def java_binary(**attrs):
    native.java_binary(**attrs)

# buildifier: disable=native-java
def java_import(**attrs):
    native.java_import(**attrs)

# buildifier: disable=native-java
def java_library(**attrs):
    native.java_library(**attrs)

# buildifier: disable=native-java
def java_lite_proto_library(**attrs):
    native.java_lite_proto_library(**attrs)

# buildifier: disable=native-java
def java_proto_library(**attrs):
    native.java_proto_library(**attrs)

# buildifier: disable=native-java
def java_test(**attrs):
    native.java_test(**attrs)

# buildifier: disable=native-java
def java_package_configuration(**attrs):
    native.java_package_configuration(**attrs)

# buildifier: disable=native-java
def java_plugin(**attrs):
    native.java_plugin(**attrs)

# buildifier: disable=native-java
def java_runtime(**attrs):
    native.java_runtime(**attrs)

# buildifier: disable=native-java
def java_toolchain(**attrs):
    native.java_toolchain(**attrs)

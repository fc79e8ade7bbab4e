#!/bin/sh
# Stands in for Bazel's coverage tools, which this offline build lacks.
echo "stubkit: 'bazel coverage' is not supported by the offline build (no @remote_coverage_tools); use the CMake build with --coverage instead" >&2
exit 1

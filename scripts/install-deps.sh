#!/usr/bin/env bash
# Installs the Debian 12 packages stubkit builds with, skipping those already
# present. Safe to run again; needs root (or sudo) only when something is
# missing.
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libgrpc++-dev protobuf-compiler-grpc
  libprotobuf-dev protobuf-compiler libprotoc-dev
  libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus-cpp-dev
  clang-format-14  # tests/generator: the goldens are formatted with it
)
# Extra packages for optional suites, e.g. STUBKIT_EXTRA_PACKAGES="clang".
if [[ -n "${STUBKIT_EXTRA_PACKAGES:-}" ]]; then
  read -r -a extra <<<"${STUBKIT_EXTRA_PACKAGES}"
  packages+=("${extra[@]}")
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "${package}" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("${package}")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

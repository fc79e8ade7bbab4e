#!/usr/bin/env bash
# Installs what the real-server suite (tests/etcd, benchmarks/etcd_recovery)
# needs on top of scripts/install-deps.sh: Debian 12's etcd server (3.4) and
# the package carrying its .proto files (etcdserverpb/rpc.proto and what it
# imports: gogoproto, googleapis' annotations, mvccpb, authpb), installed
# under /usr/share/gocode/src. Safe to run again; installs only what is
# missing (apt-get update first, as install-deps.sh does).
#
#   scripts/install-etcd.sh
set -euo pipefail
cd "$(dirname "$0")/.."

STUBKIT_EXTRA_PACKAGES="${STUBKIT_EXTRA_PACKAGES:-} etcd-server golang-etcd-server-dev" \
  scripts/install-deps.sh

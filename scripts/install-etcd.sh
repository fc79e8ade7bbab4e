#!/usr/bin/env bash
# Installs what the real-server suite (tests/etcd, benchmarks/etcd_recovery)
# needs on top of scripts/install-deps.sh: Debian 12's etcd server (3.4),
# and the .proto files of its API (etcdserverpb/rpc.proto and what it
# imports: gogoproto, googleapis' annotations, mvccpb, authpb).
#
# Debian ships those protos only inside Go source packages
# (golang-etcd-server-dev, golang-github-gogo-protobuf-dev,
# golang-github-grpc-ecosystem-grpc-gateway-dev). Installing them pulls in
# about 180 Go packages: 88 s on a fresh CI machine, the longest install of
# the test command, for six small files. So this script downloads only those
# three .debs with apt-get and unpacks their .proto files, nothing else, in
# their own layout (/usr/share/gocode/src/...) under
# /usr/local/share/stubkit/etcd-protos, about 3 s. tests/etcd/
# etcd_protos.cmake reads them there, or from /usr/share/gocode/src when
# golang-etcd-server-dev is installed. Safe to run again; does only what is
# missing.
#
#   scripts/install-etcd.sh
set -euo pipefail
cd "$(dirname "$0")/.."

STUBKIT_EXTRA_PACKAGES="${STUBKIT_EXTRA_PACKAGES:-} etcd-server" \
  scripts/install-deps.sh

dest=/usr/local/share/stubkit/etcd-protos
rpc=go.etcd.io/etcd/etcdserver/etcdserverpb/rpc.proto
if [[ -f "/usr/share/gocode/src/${rpc}" || -f "${dest}/${rpc}" ]]; then
  exit 0
fi

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo=(sudo)
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/stubkit-etcd-protos.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
cd "${work}"
echo "install-etcd: unpacking etcd's protos into ${dest}" >&2
# The sandbox user (_apt) cannot write to a root-owned mktemp folder: the
# download runs as the caller, which is all it needs.
apt-get download -qq -o APT::Sandbox::User="$(id -un)" \
  golang-etcd-server-dev golang-github-gogo-protobuf-dev \
  golang-github-grpc-ecosystem-grpc-gateway-dev
mkdir unpacked
for deb in ./*.deb; do
  dpkg-deb --fsys-tarfile "${deb}" |
    tar -x -C unpacked --wildcards '*.proto'
done
if [[ ! -f "unpacked/usr/share/gocode/src/${rpc}" ]]; then
  echo "install-etcd: ${rpc} is not in the downloaded packages" >&2
  exit 1
fi
"${sudo[@]}" mkdir -p "${dest}"
"${sudo[@]}" cp -R unpacked/usr/share/gocode/src/. "${dest}/"

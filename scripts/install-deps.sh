#!/usr/bin/env bash
# Installs the Debian packages PackFS builds and tests with, only those that are missing.
# Idempotent: a machine that has them all runs no apt command at all.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config make
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libzstd-dev liblz4-dev libxxhash-dev nettle-dev libfuse3-dev fuse3 liburcu-dev
  gnuplot-nox
  # man pages from the CLI's help; make deb's dependency scan; the Python bindings and their tests
  help2man dpkg-dev pybind11-dev python3-dev python3-pytest
  squashfs-tools erofs-utils squashfuse attr e2fsprogs
  # bench/mounted_writes.sh: the peer a user would pick for a writable mount
  fuse-overlayfs
  # build --exclude's patterns are checked against git's own matcher
  git
  # remote packs: libcurl, and the servers the remote tests start on 127.0.0.1
  libcurl4-openssl-dev nginx-light docker-registry curl bc
  # a registry token service for the auth tests (signs its tokens with a key openssl makes)
  python3-cryptography openssl
  # make fuzz: libFuzzer needs clang, and clang 19 is the first whose __cpp_concepts lets
  # GCC 12's <expected> declare std::expected; llvm-19 symbolizes the sanitizers' stacks.
  clang-19 libclang-rt-19-dev llvm-19
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

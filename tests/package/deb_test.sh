#!/usr/bin/env bash
# deb_test.sh BUILD_DIR: builds the Debian package with CPack (what `make deb` does), checks its
# metadata and contents, installs it into a scratch root with dpkg --root, runs the installed
# program and reads its man page there, then removes it and checks nothing is left behind.
set -euo pipefail
export LC_ALL=C
build=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/../cli/common.sh"

cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb=$(find "$work/out" -maxdepth 1 -name 'packfs_*.deb' | head -1)
check "cpack makes packfs_VERSION_ARCH.deb" test -n "$deb"
version=$("$build/tools/cli/packfs" --version | head -1 | cut -d' ' -f2)
check "  named by the version ($version) and architecture" \
    test "$(basename "$deb")" = "packfs_${version}_$(dpkg --print-architecture).deb"
dpkg-deb --info "$deb" >"$work/info"
check "  its version is the program's" grep -q "^ Version: $version$" "$work/info"
depends=$(sed -n 's/^ Depends: //p' "$work/info" | tr -d ' ' | tr ',' '\n' | sed 's/(.*//')
for dep in libc6 libstdc++6 libzstd1 liblz4-1 libxxhash0 libnettle8 libcurl4 libfuse3-3 liburcu8; do
    check "  it depends on $dep (dpkg-shlibdeps)" grep -qxF "$dep" <<<"$depends"
done
dpkg-deb --contents "$deb" | awk '{print $6}' >"$work/contents"
for f in ./usr/bin/packfs ./usr/share/man/man1/packfs.1.gz ./usr/share/man/man1/packfs-build.1.gz \
    ./usr/share/bash-completion/completions/packfs ./usr/include/packfs/pack.hpp \
    ./usr/lib/cmake/PackFS/PackFSConfig.cmake ./usr/lib/pkgconfig/packfs.pc; do
    check "  holds $f" grep -qxF "$f" "$work/contents"
done
check "  holds libpackfs.so.$version and libpackfs-read.so.$version" \
    sh -c "grep -q '/libpackfs.so.$version\$' '$work/contents' && grep -q '/libpackfs-read.so.$version\$' '$work/contents'"

root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
# The scratch root has none of the dependencies installed (the host has them): only that check
# is waived. It has no shell either, so the maintainer scripts (ldconfig, which the host may run
# as any package install does) run outside it.
dpkg_root() { dpkg --root="$root" --force-not-root --force-script-chrootless "$@" >>"$work/dpkg.log" 2>&1; }
check "dpkg --root installs it" dpkg_root --force-depends -i "$deb"
check "  the installed packfs says its version" \
    sh -c "'$root/usr/bin/packfs' --version | head -1 | grep -qx 'packfs $version'"
mkdir -p "$work/tree/d" && echo hi >"$work/tree/d/f"
check "  and builds and reads a pack" sh -c "'$root/usr/bin/packfs' build '$work/tree' '$work/t.pack' >/dev/null &&
    '$root/usr/bin/packfs' cat '$work/t.pack' /d/f | grep -qx hi"
check "  the man page renders, with its exit status section" \
    sh -c "man -l '$root/usr/share/man/man1/packfs.1.gz' 2>/dev/null | grep -q 'EXIT STATUS'"
check "  a subcommand's page shows its options" \
    sh -c "man -l '$root/usr/share/man/man1/packfs-build.1.gz' 2>/dev/null | grep -q -- '--compress'"
check "  the Python module imports from it and reads the pack" \
    sh -c "PYTHONPATH='$root/usr/lib/python3/dist-packages' /usr/bin/python3 -c \"import packfs
assert packfs.__version__ == '$version'
with packfs.open('$work/t.pack') as t: assert t.read('/d/f') == b'hi\\\\n'\""
check "  the completion script loads and completes subcommands" \
    bash -c "source '$root/usr/share/bash-completion/completions/packfs'; COMP_WORDS=(packfs bui); COMP_CWORD=1; _packfs; [[ \" \${COMPREPLY[*]} \" == *' build '* ]]"
check "dpkg --root removes it" dpkg_root -r packfs
check "  leaving no file behind" test -z "$(find "$root/usr" -type f -o -type l 2>/dev/null)"

echo "$failures failure(s)"
[ "$failures" -eq 0 ] || { cat "$work/dpkg.log"; exit 1; }

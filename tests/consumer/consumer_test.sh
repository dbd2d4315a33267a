#!/usr/bin/env bash
# consumer_test.sh BUILD_DIR: installs the build into a scratch prefix, then builds and runs the
# programs in tests/consumer/ against it as a user's project would: with find_package(PackFS)
# (shared, then static) and with pkg-config (shared, then static). The reader-only program must
# not load OpenSSL, libcurl, libfuse or liburcu.
set -euo pipefail
export LC_ALL=C
build=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/../cli/common.sh"

prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=$(dirname "$(find "$prefix" -name 'libpackfs.so' | head -1)")
check "installs libpackfs.so and libpackfs-read.so" test -e "$libdir/libpackfs-read.so"
check "  with versioned sonames" \
    sh -c "readelf -d '$libdir/libpackfs.so' | grep -q 'SONAME.*libpackfs.so.0.1]'"
check "installs the static archives" test -e "$libdir/libpackfs.a" -a -e "$libdir/libpackfs-read.a"
check "installs the public headers" test -e "$prefix/include/packfs/pack.hpp"
check "  and nothing private" test -z "$(find "$prefix/include" -path '*/src/*' -o -name '*_impl.hpp')"
check "installs the packfs program" test -x "$prefix/bin/packfs"
check "installs the CMake package" test -e "$libdir/cmake/PackFS/PackFSConfig.cmake"
check "installs the pkg-config files" test -e "$libdir/pkgconfig/packfs-read.pc"
# The shared libraries' dynamic symbols: the public API (packfs::, not one of its internal
# namespaces such as packfs::pack::; the C API's packfs_*) and the standard library's templates
# it instantiates.
exported() {
    nm -DC --defined-only "$1" | cut -d' ' -f3- |
        sed -E 's/^(typeinfo name for|typeinfo for|vtable for|VTT for) //'
}
for lib in libpackfs.so libpackfs-read.so; do
    exported "$libdir/$lib" >"$work/$lib.symbols"
    check "$lib exports the public API" grep -q '^packfs::open_pack(' "$work/$lib.symbols"
    check "$lib exports nothing of packfs's internals" \
        sh -c "! grep -E '^packfs::[a-z_]+::' '$work/$lib.symbols'"
    check "$lib exports nothing else but the standard library's templates" \
        sh -c "! grep -v '^packfs::' '$work/$lib.symbols' | grep -v '^packfs_[a-z_]*$' | grep -v 'std::'"
done
check "libpackfs.so exports the C API" grep -qx 'packfs_read_view' "$work/libpackfs.so.symbols"
check "libpackfs-read.so does not (it is libpackfs's)" \
    sh -c "! grep -q '^packfs_' '$work/libpackfs-read.so.symbols'"

forbidden='libssl|libcrypto|libcurl|libfuse|liburcu'
runs() {  # runs "what" DIR: make_pack and read_pack in DIR round-trip the file
    local what="$1" dir="$2"
    check "$what: make_pack writes and reads back a pack" \
        sh -c "'$dir/make_pack' '$work/$what.pack' | grep -qx 'hello from a consumer'"
    check "$what: read_pack reads it through the reader library" \
        sh -c "'$dir/read_pack' '$work/$what.pack' /docs/hello.txt | grep -qx 'hello from a consumer'"
    check "$what: read_pack refuses a missing file by name" \
        sh -c "! '$dir/read_pack' '$work/$what.pack' /nope 2>'$work/err' && grep -q 'No such file' '$work/err'"
    check "$what: read_pack_c (C11, the C API) reads it too" \
        sh -c "'$dir/read_pack_c' '$work/$what.pack' /docs/hello.txt | grep -qx 'hello from a consumer'"
    check "$what: read_pack_c says why it cannot" \
        sh -c "! '$dir/read_pack_c' '$work/$what.pack' /nope 2>'$work/err' && grep -q 'open /nope: No such file' '$work/err'"
    check "$what: read_pack loads none of OpenSSL, libcurl, libfuse, liburcu" \
        sh -c "! ldd '$dir/read_pack' | grep -Eq '$forbidden'"
}

for link in shared static; do
    cmake -S "$here" -B "$work/cmake-$link" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
        -DPACKFS_LINK=$link >"$work/configure-$link.log"
    cmake --build "$work/cmake-$link" >"$work/build-$link.log"
    runs "find_package $link" "$work/cmake-$link"
done
check "find_package shared: read_pack loads libpackfs-read.so" \
    sh -c "ldd '$work/cmake-shared/read_pack' | grep -q 'libpackfs-read.so.0.1 => $libdir'"
check "find_package static: read_pack loads no libpackfs" \
    sh -c "! ldd '$work/cmake-static/read_pack' | grep -q libpackfs"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
mkdir -p "$work/pc-shared" "$work/pc-static"
check "pkg-config names the version" test "$(pkg-config --modversion packfs)" = "$("$prefix/bin/packfs" --version | head -1 | cut -d' ' -f2)"
# shellcheck disable=SC2046
gcc -std=c11 -o "$work/pc-shared/read_pack_c" "$here/read_pack.c" $(pkg-config --cflags --libs packfs) \
    -Wl,-rpath,"$libdir"
# shellcheck disable=SC2046
g++ -o "$work/pc-static/read_pack_c" -x c "$here/read_pack.c" -x none $(pkg-config --cflags packfs) \
    "$libdir/libpackfs.a" $(pkg-config --static --libs packfs | sed "s/-lpackfs\b//")
for prog in read_pack:packfs-read make_pack:packfs; do
    name=${prog%%:*} pc=${prog##*:}
    # shellcheck disable=SC2046
    g++ -std=c++23 -o "$work/pc-shared/$name" "$here/$name.cpp" $(pkg-config --cflags --libs "$pc") \
        -Wl,-rpath,"$libdir"
    # shellcheck disable=SC2046
    g++ -std=c++23 -o "$work/pc-static/$name" "$here/$name.cpp" $(pkg-config --cflags "$pc") \
        "$libdir/lib$pc.a" $(pkg-config --static --libs "$pc" | sed "s/-l$pc\b//")
done
runs "pkg-config shared" "$work/pc-shared"
runs "pkg-config static" "$work/pc-static"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]

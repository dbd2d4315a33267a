# Two versions of a tree and their packs, v2 built over v1, for the tests of packs over bases
# read remotely. Sourced after common.sh with $packfs, $here and $work set. `make_two_versions
# DIR` sets v1 and v2 (the trees, under $work) and writes DIR/v1.pack (zstd, 16 KiB chunks) and
# DIR/v2.pack over it: v2 is v1 with bytes inserted in the middle of a large file, a small
# file edited and one added.
make_two_versions() {
    local dir="$1" first
    v1="$work/v1" v2="$work/v2"
    python3 "$here/make_tree.py" "$v1" 300 11
    head -c 4000000 /dev/urandom >"$v1/large"
    cp -a "$v1" "$v2"
    python3 - "$v2/large" <<'PY'
import sys
path = sys.argv[1]
data = open(path, "rb").read()
open(path, "wb").write(data[:2000000] + b"an insertion" * 5 + data[2000000:])
PY
    first=$(cd "$v2" && find . -type f | sort | sed -n 5p)
    echo edited >>"$v2/$first"
    echo added >"$v2/added"
    mkdir -p "$dir"
    "$packfs" build --compress zstd --chunk-size 16K "$v1" "$dir/v1.pack" >/dev/null
    "$packfs" build --compress zstd --base "$dir/v1.pack" "$v2" "$dir/v2.pack" >/dev/null
}

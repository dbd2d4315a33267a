#!/usr/bin/env bash
# The pack commands end to end: build a host tree into packs (raw, zstd, lz4:9), read them back
# with ls, stat, cat, info, extract them and compare the result with the source (bytes, modes,
# owners, nanosecond mtimes, links, xattrs), verify clean and damaged packs, diff packs, and
# check the exit codes (0 ok, 1 failed, 2 usage). Every check fails the test when wrong.
set -euo pipefail
export LC_ALL=C  # names sort as bytes, as packfs sorts them
packfs="$1"
work=$(mktemp -d)
trap 'chmod -R u+rwx "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
source "$(dirname "$0")/common.sh"
set_xattr() {  # set_xattr FILE NAME VALUE
    if command -v setfattr >/dev/null; then
        setfattr -n "$2" -v "$3" "$1"
    else
        python3 -c 'import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())' \
            "$1" "$2" "$3"
    fi
}

# --- the source tree ----------------------------------------------------------------------
src="$work/src"
mkdir -p "$src/docs/deep/er" "$src/ro" "$src/empty_dir"
printf 'hello, pack\n' > "$src/hello.txt"
: > "$src/empty"
head -c 3000000 /dev/urandom > "$src/docs/random.bin"  # over 1 MiB: cat and extract slice it
python3 -c 'import sys; sys.stdout.write("compressible line\n" * 200000)' > "$src/docs/text.txt"
cp "$src/docs/text.txt" "$src/docs/deep/er/copy.txt"  # a duplicate: dedup
printf 'x' > "$src/docs/deep/er/one"
ln -s ../hello.txt "$src/docs/link"
ln -s /nonexistent/target "$src/dangling"
ln "$src/hello.txt" "$src/docs/hard"  # a hard link
mkfifo "$src/fifo"
# Names and sizes at the edges: a 255-byte name, a name that is not UTF-8, a 40-level path,
# files either side of the 64-byte inline limit, the 4 KiB page and the 64 KiB block.
long_name=$(printf 'n%.0s' $(seq 255))
printf 'long\n' > "$src/$long_name"
printf 'latin-1\n' > "$src/caf"$'\xe9'
deep="$src/deep"
for i in $(seq 40); do deep="$deep/d$i"; done
mkdir -p "$deep"
printf 'bottom\n' > "$deep/leaf"
for n in 63 64 65 4095 4096 4097 65535 65536 65537; do head -c "$n" /dev/urandom > "$src/edge_$n"; done
set_xattr "$src/hello.txt" user.color blue
set_xattr "$src/docs" user.kind "a directory"
printf 'read only\n' > "$src/ro/file"
chmod 0444 "$src/ro/file"
chmod 0555 "$src/ro"  # a read-only directory that extract must still fill
if [ "$(id -u)" -eq 0 ]; then
    chown 1234:5678 "$src/docs/deep/er/one"  # before chmod: chown clears setuid
    mknod "$src/null" c 1 3
fi
chmod 4755 "$src/docs/deep/er/one"
touch -h -d '2001-02-03 04:05:06.123456789' "$src/docs/deep/er/one"
touch -d '2010-10-10 10:10:10.987654321' "$src/docs/deep"

# --- build ----------------------------------------------------------------------------------
check "build raw" "$packfs" build "$src" raw.pack
check "build zstd" "$packfs" build --compress zstd --block-size 64K "$src" zstd.pack
# A command that opens no URL loads no network library (libcurl is loaded with the first URL).
LD_DEBUG=libs "$packfs" info zstd.pack >/dev/null 2>"$work/ld.log" || true
check "  a local command loads no libcurl" test "$(grep -c 'libcurl' "$work/ld.log")" -eq 0
check "  (the loader's log is there to look at)" grep -q 'libzstd' "$work/ld.log"
check "build --format 2" "$packfs" build --format 2 --compress zstd "$src" v2.pack
check "info names format version 2" bash -c "'$packfs' info v2.pack | grep -q 'pack format version 2'"
check "verify a format 2 pack" "$packfs" verify v2.pack
expect_code "--format takes 1 or 2" 2 "$packfs" build --format 3 "$src" v3.pack
# Layouts: walk is the default, inodes the other; both hold the same tree; format 1 has no walk.
check "build --layout walk is the default" bash -c "'$packfs' build --layout walk '$src' walk.pack && cmp walk.pack raw.pack"
check "build --layout inodes" "$packfs" build --layout inodes "$src" inodes.pack
check "  holds the same tree" "$packfs" diff raw.pack inodes.pack
check "  laid out otherwise" bash -c "! cmp -s raw.pack inodes.pack"
expect_code "--layout walk needs --format 2" 2 "$packfs" build --layout walk --format 1 "$src" x.pack
expect_code "--layout takes walk or inodes" 2 "$packfs" build --layout bfs "$src" x.pack
check "build lz4:9 --json" bash -c "'$packfs' build --json --compress lz4:9 '$src' lz4.pack > build.json"
check "build --json is JSON with the counts" python3 - <<'PY'
import json
b = json.load(open("build.json"))
s = b["stats"]
assert b["compression"] == "lz4" and b["level"] == 9, b
assert s["regular_files"] == 19 and s["hard_links"] == 1 and s["symlinks"] == 2, s  # 7 + 2 odd names + the deep leaf + 9 edge sizes
assert s["unique_bytes"] < s["file_bytes"], s  # the duplicate was stored once
assert s["data_bytes"] < s["stream_bytes"], s  # the text compressed
assert len(s["digest"]) == 64, s
PY

# --- convert --------------------------------------------------------------------------------
# A converted pack is byte-identical to a fresh build of the same tree in the target format,
# whichever way, whatever the codec and recorded times.
check "build --format 1" "$packfs" build --format 1 --compress zstd "$src" v1.pack
check "convert 1 -> 2" "$packfs" convert v1.pack v1to2.pack
check "  same bytes as a fresh format 2 build" cmp v2.pack v1to2.pack
check "convert 2 -> 1" "$packfs" convert --format 1 v2.pack v2to1.pack
check "  same bytes as a fresh format 1 build" cmp v1.pack v2to1.pack
check "build --keep-times all, both formats" bash -c "'$packfs' build --format 1 --keep-times all '$src' all1.pack && '$packfs' build --keep-times all '$src' all2.pack" >/dev/null
check "convert keeps all times (1 -> 2)" "$packfs" convert all1.pack all1to2.pack
check "  same bytes" cmp all2.pack all1to2.pack
check "convert keeps all times (2 -> 1)" "$packfs" convert --format 1 all2.pack all2to1.pack
check "  same bytes" cmp all1.pack all2to1.pack
cp raw.pack inplace.pack
check "convert in place with another codec" "$packfs" convert --compress lz4:9 inplace.pack inplace.pack
check "  reads back the same tree" "$packfs" diff raw.pack inplace.pack
check "  in the new codec" bash -c "'$packfs' info inplace.pack | grep -q 'compression lz4'"
# Compressed metadata: the default of a compressed format 2 pack; --metadata raw keeps it raw,
# convert keeps what IN has unless told, and both answer the same tree.
check "info says the metadata is compressed" bash -c "'$packfs' info v2.pack | grep -q 'metadata compressed'"
check "build --metadata raw" "$packfs" build --metadata raw --compress zstd "$src" v2raw.pack
check "  info says nothing of it" bash -c "! '$packfs' info v2raw.pack | grep -q 'metadata compressed'"
check "  a larger pack" test "$(stat -c %s v2raw.pack)" -gt "$(stat -c %s v2.pack)"
check "  the same tree" "$packfs" diff v2.pack v2raw.pack
check "convert keeps raw metadata" "$packfs" convert v2raw.pack v2raw2.pack
check "  same bytes" cmp v2raw.pack v2raw2.pack
check "convert --metadata compressed" "$packfs" convert --metadata compressed v2raw.pack v2c.pack
check "  same bytes as the default build" cmp v2.pack v2c.pack
check "info --json names it" bash -c "'$packfs' info --json v2.pack | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j[\"compressed_metadata\"] is True and j[\"metadata_inflated_bytes\"] > j[\"stats\"][\"metadata_bytes\"] - 8 * 64, j'"
expect_code "--metadata takes compressed or raw" 2 "$packfs" build --metadata zip --compress zstd "$src" x.pack
expect_code "convert --format takes 1 or 2" 2 "$packfs" convert --format 3 v1.pack x.pack
expect_code "convert of a missing pack" 1 "$packfs" convert "$work/nope.pack" x.pack
check "  names it" grep -q 'nope.pack: No such file or directory' "$work/last.err"
expect_code "convert of a file that is no pack" 1 "$packfs" convert "$src/hello.txt" x.pack
check "  leaves no output" test ! -e x.pack

# --- ls, stat, cat ----------------------------------------------------------------------
for pack in raw.pack zstd.pack lz4.pack; do
    check "$pack: ls -l -R" bash -c "'$packfs' ls -l -R $pack > ls.txt"
    check "$pack: ls shows the link target" grep -q ' link -> ../hello.txt$' ls.txt
    check "$pack: ls shows the mode string" grep -q '^-rwsr-xr-x .* one$' ls.txt
    check "$pack: ls has a header per directory" grep -q '^/docs/deep/er:$' ls.txt
    check "$pack: ls shows the fifo" grep -q '^prw-.* fifo$' ls.txt
    check "$pack: ls names sorted" bash -c "'$packfs' ls $pack /docs | sort -c"
    check "$pack: cat big file" bash -c "'$packfs' cat $pack /docs/random.bin | cmp - '$src/docs/random.bin'"
    check "$pack: cat through a symlink" bash -c "'$packfs' cat $pack /docs/link | cmp - '$src/hello.txt'"
    check "$pack: cat two files" bash -c \
        "'$packfs' cat $pack /hello.txt /docs/text.txt | cmp - <(cat '$src/hello.txt' '$src/docs/text.txt')"
    check "$pack: cat empty file" bash -c "[ -z \"\$('$packfs' cat $pack /empty)\" ]"
done
check "stat shows type, mode, size and xattrs" bash -c "'$packfs' stat raw.pack /hello.txt > stat.txt"
check "stat: regular file" grep -q 'regular file' stat.txt
check "stat: mode" grep -q '(0644/-rw-r--r--)' stat.txt
check "stat: links" grep -q 'Links: 2' stat.txt
check "stat: xattr names" grep -q '^Xattrs: user.color$' stat.txt
check "stat: nanosecond mtime" bash -c "'$packfs' stat raw.pack /docs/deep/er/one | grep -q '^Modify: 2001-02-03 .*\.123456789 '"
check "stat --json" bash -c "'$packfs' stat --json raw.pack /docs/link | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s[\"type\"] == \"symlink\" and s[\"target\"] == \"../hello.txt\", s
assert s[\"mode_string\"] == \"lrwxrwxrwx\", s'"
check "cat | head ends quietly" bash -c "set -o pipefail; '$packfs' cat raw.pack /docs/text.txt 2>err.txt | head -c 10 > /dev/null; [ ! -s err.txt ]"

# --- extract and compare with the source --------------------------------------------------
compare_trees() {  # compare_trees A B: bytes, types, modes, owners, mtimes, links, xattrs
    # diff -r cannot compare fifos or devices (it says so); anything else it says is a fail.
    local said
    said=$(diff -r --no-dereference "$1" "$2" 2>&1 |
        grep -v -e ' is a fifo while file ' -e ' is a character special file while file ' || true)
    [ -z "$said" ] || { echo "$said"; return 1; }
    python3 - "$1" "$2" <<'PY'
import os, stat, sys
a_root, b_root = sys.argv[1], sys.argv[2]

def describe(root):
    out, inodes = {}, {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [""] + dirnames + filenames:
            path = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.relpath(path, root)
            if rel in out:
                continue
            st = os.lstat(path)
            xattrs = {n: os.getxattr(path, n, follow_symlinks=False)
                      for n in os.listxattr(path, follow_symlinks=False)}
            out[rel] = dict(mode=oct(st.st_mode), uid=st.st_uid, gid=st.st_gid,
                            nlink=st.st_nlink, mtime_ns=st.st_mtime_ns,
                            size=st.st_size if not stat.S_ISDIR(st.st_mode) else None,
                            rdev=st.st_rdev, xattrs=xattrs,
                            target=os.readlink(path) if stat.S_ISLNK(st.st_mode) else None)
            inodes.setdefault(st.st_ino, []).append(rel)
    links = sorted(sorted(v) for v in inodes.values() if len(v) > 1)
    return out, links

a, a_links = describe(a_root)
b, b_links = describe(b_root)
bad = [f"{rel}: {a.get(rel)} != {b.get(rel)}" for rel in sorted(set(a) | set(b)) if a.get(rel) != b.get(rel)]
if a_links != b_links:
    bad.append(f"hard links {a_links} != {b_links}")
for line in bad:
    print("  differs:", line)
sys.exit(1 if bad else 0)
PY
}
for pack in raw.pack zstd.pack lz4.pack v2.pack; do
    out="$work/out-${pack%.pack}"
    check "$pack: extract" "$packfs" extract "$pack" "$out"
    check "$pack: extracted tree equals the source" compare_trees "$src" "$out"
done
check "extract --json into a new nested dir" bash -c "'$packfs' extract --json raw.pack '$work/new/nested' | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r[\"ok\"] and r[\"hard_links\"] == 1 and r[\"errors\"] == [], r'"
expect_code "extract into a non-empty directory" 1 "$packfs" extract raw.pack "$work/out-raw"
check "  and says why" grep -q 'not empty' "$work/last.err"

# --- verify -------------------------------------------------------------------------------
for pack in raw.pack zstd.pack lz4.pack; do
    expect_code "$pack: verify" 0 "$packfs" verify "$pack"
    check "$pack: verify prints OK and the digest" grep -q "^OK $pack [0-9a-f]\{64\}$" "$work/last.out"
done
# Damage one byte of random.bin's content in the raw pack's data region (which starts at
# 4096): find its bytes in the pack, and flip one.
cp raw.pack bad.pack
python3 - "$src/docs/random.bin" <<'PY'
import sys
needle = open(sys.argv[1], "rb").read()[:4096]
data = bytearray(open("bad.pack", "rb").read())
at = data.find(needle, 4096)
assert at >= 4096, "random.bin's bytes not found in the raw pack"
data[at + 1000] ^= 0xFF
open("bad.pack", "wb").write(data)
PY
expect_code "verify a damaged pack" 1 "$packfs" verify bad.pack
check "  names the damaged file" grep -q '/docs/random.bin' "$work/last.out"
check "verify --json lists the problem" bash -c "'$packfs' verify --json bad.pack | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert not r[\"ok\"] and any(p[\"where\"] == \"/docs/random.bin\" for p in r[\"problems\"]), r'"
head -c 100 /dev/urandom > junk.pack
expect_code "verify a file that is not a pack" 1 "$packfs" verify junk.pack
check "  with the error message" grep -q '^packfs: .*junk.pack' "$work/last.err"

# --- info -----------------------------------------------------------------------------------
check "info" bash -c "'$packfs' info raw.pack | grep -q 'dedup saved'"
check "info --json matches what build reported" bash -c "'$packfs' info --json lz4.pack > info.json"
check "  figures" python3 - <<'PY'
import json
info = json.load(open("info.json"))
built = json.load(open("build.json"))["stats"]
assert info["compression"] == "lz4" and info["format_version"] >= 1, info
for key, value in built.items():
    assert info["stats"][key] == value, (key, info["stats"][key], value)
PY

# --- diff -----------------------------------------------------------------------------------
expect_code "diff of packs of one tree" 0 "$packfs" diff raw.pack zstd.pack
check "  prints nothing" test ! -s "$work/last.out"
chmod u+w "$src/ro"
printf 'changed\n' > "$src/hello.txt"
rm "$src/empty"
printf 'new\n' > "$src/ro/new"
"$packfs" build "$src" changed.pack > /dev/null
expect_code "diff of packs that differ" 1 "$packfs" diff raw.pack changed.pack
check "  M /hello.txt (content...)" grep -q '^M /hello.txt (content' "$work/last.out"
check "  - /empty" grep -q '^- /empty$' "$work/last.out"
check "  + /ro/new" grep -q '^+ /ro/new$' "$work/last.out"
check "diff --json" bash -c "'$packfs' diff --json raw.pack changed.pack | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert not r[\"identical\"] and {\"change\": \"-\", \"path\": \"/empty\"} in r[\"changes\"], r'"

# --- exit codes -----------------------------------------------------------------------------
expect_code "unknown option is a usage error" 2 "$packfs" ls --bogus raw.pack
expect_code "missing argument is a usage error" 2 "$packfs" cat raw.pack
expect_code "bad --compress value" 2 "$packfs" build --compress brotli "$src" x.pack
check "  names the bad value" grep -q 'brotli' "$work/last.err"
expect_code "bad --compress level" 2 "$packfs" build --compress zstd:99 "$src" x.pack
expect_code "bad --block-size" 2 "$packfs" build --block-size 3000 "$src" x.pack
expect_code "missing SOURCE" 1 "$packfs" ls "$work/nope.pack"
check "  names it" grep -q 'nope.pack: No such file or directory' "$work/last.err"
expect_code "missing SRC of build" 1 "$packfs" build "$work/nosrc" x.pack
expect_code "a directory as SOURCE is served (tests/cli/dir_cli_test.sh)" 0 "$packfs" ls "$src"
expect_code "a fifo as SOURCE" 1 "$packfs" ls "$src/fifo"
check "  says what a SOURCE must be" grep -q 'neither a pack file nor a directory' "$work/last.err"
expect_code "bad PATH" 1 "$packfs" stat raw.pack /no/such
check "  names it" grep -q '/no/such: No such file or directory' "$work/last.err"
expect_code "cat of a directory" 1 "$packfs" cat raw.pack /docs
check "--json errors are JSON" bash -c "'$packfs' ls --json raw.pack /nope | python3 -c '
import json, sys
e = json.load(sys.stdin)[\"error\"]
assert e[\"code\"] == \"ENOENT\" and e[\"path\"] == \"/nope\", e'"

# --- holes: packs store them in nothing, extract keeps them ---------------------------------
# A 1 GiB file with one byte written (and a 64 MiB one with two) packs into under 1 MiB, raw or
# compressed: the build finds the source's holes with SEEK_HOLE and stores blocks of zeros as
# holes. Extract writes no aligned 4 KiB block of zeros, so each file extracts into a few KiB on
# disk, byte for byte the same, from the pack and from the directory (SEEK_DATA on the host).
sparse_src="$work/sparse-src"
mkdir -p "$sparse_src"
printf 'a' | dd of="$sparse_src/sparse" bs=1 seek=$((64 << 20)) conv=notrunc status=none
printf 'b' | dd of="$sparse_src/sparse" bs=1 seek=5000 conv=notrunc status=none
printf 'c' | dd of="$sparse_src/gig" bs=1 seek=$((1 << 29)) conv=notrunc status=none
truncate -s 1G "$sparse_src/gig"
check "build a pack of sparse files" "$packfs" build "$sparse_src" "$work/sparse.pack"
check "build a zstd pack of sparse files" "$packfs" build --compress zstd "$sparse_src" "$work/sparse-z.pack"
for pack in "$work/sparse.pack" "$work/sparse-z.pack"; do
    bytes=$(stat -c %s "$pack")
    check "  $(basename "$pack"): $bytes bytes for 1.06 GiB of files" test "$bytes" -lt $((1 << 20))
    check "  info says it has holes" bash -c "'$packfs' info '$pack' | grep -q 'with holes'"
    check "  verify passes" "$packfs" verify "$pack"
done
for source in "$work/sparse.pack" "$work/sparse-z.pack" "$sparse_src"; do
    rm -rf "$work/sparse-out"
    check "extract $(basename "$source") with sparse files" "$packfs" extract "$source" "$work/sparse-out"
    for f in sparse gig; do
        check "  $f: the same bytes" cmp "$sparse_src/$f" "$work/sparse-out/$f"
        kib=$(du -k "$work/sparse-out/$f" | cut -f1)
        check "  $f: holes kept ($kib KiB on disk)" test "$kib" -le 64
    done
done

# ---- build --exclude and --exclude-from ----
ex="$work/ex_src"
mkdir -p "$ex/usr/bin" "$ex/usr/local/lib" "$ex/obj/sub" "$ex/logs"
printf 'bin\n' > "$ex/usr/bin/tool"
printf 'local\n' > "$ex/usr/local/lib/x.so"
printf 'o\n' > "$ex/obj/sub/a.o"
printf 'c\n' > "$ex/obj/a.c"
printf 'l\n' > "$ex/logs/run.log"
printf 'k\n' > "$ex/logs/keep.log"
printf '# build products\n*.o\n\n/logs/*.log\n' > "$work/ex.list"
check "build --exclude -e --exclude-from" bash -c "'$packfs' build --json -e /usr/local --exclude-from '$work/ex.list' \
    --exclude '!keep.log' '$ex' '$work/ex.pack' > '$work/ex.json'"
check "  the pack holds exactly what was not excluded" bash -c "
    '$packfs' extract '$work/ex.pack' '$work/ex_out' && cd '$work/ex_out' &&
    got=\$(find . -mindepth 1 | sort | tr '\n' ' ') &&
    [ \"\$got\" = './logs ./logs/keep.log ./obj ./obj/a.c ./obj/sub ./usr ./usr/bin ./usr/bin/tool ' ] ||
    { echo \"got: \$got\"; exit 1; }"
check "  --json counts what was left out" python3 -c "
import json; s = json.load(open('$work/ex.json'))['stats']
assert s['excluded'] == 3, s"
check "  the text report says so" bash -c "'$packfs' build -e '*.o' '$ex' '$work/ex3.pack' | grep -q '^  excluded  1 entry'"
expect_code "a malformed pattern is a usage error" 2 "$packfs" build -e 'a/../b' "$ex" "$work/x.pack"
check "  naming the pattern" grep -q "a/../b" "$work/last.err"
printf 'ok\nbad\\\n' > "$work/bad.list"
expect_code "a malformed pattern file is a usage error" 2 "$packfs" build --exclude-from "$work/bad.list" "$ex" "$work/x.pack"
check "  naming the file and line" grep -q "bad.list:2" "$work/last.err"
expect_code "a missing pattern file" 1 "$packfs" build --exclude-from "$work/none.list" "$ex" "$work/x.pack"
check "  named" grep -q "none.list" "$work/last.err"
expect_code "OUT inside SRC is refused" 2 "$packfs" build "$ex" "$ex/obj/self.pack"
check "  and the message says how to exclude it" grep -q -- "--exclude /obj/self.pack" "$work/last.err"
expect_code "OUT that is SRC itself" 2 "$packfs" build "$ex" "$ex/"
check "  says so" grep -q "is $ex/* itself" "$work/last.err"
check "OUT inside SRC is fine when excluded" "$packfs" build -e /obj/self.pack "$ex" "$ex/obj/self.pack"
check "  and it is not in the pack" bash -c "! '$packfs' stat '$ex/obj/self.pack' /obj/self.pack >/dev/null 2>&1"
check "OUT inside an excluded directory of SRC" "$packfs" build -e 'obj/' "$ex" "$ex/obj/sub/self.pack"
rm -f "$ex/obj/self.pack" "$ex/obj/sub/self.pack"

# ---- packs built over bases (--chunk-size, --base) ----
# v1 cut into chunks; v2 over v1 after an edit in the middle of a large file and in a small
# one; v3 over v2. Each reads exactly through every command; each stores about what changed;
# a base moved away is named, and found again with --base.
vers="$work/versions"
mkdir -p "$vers/tree/d"
head -c 3000000 /dev/urandom >"$vers/tree/big"
for i in $(seq 30); do head -c $((100 + i * 97)) /dev/urandom >"$vers/tree/d/small$i"; done
echo hello >"$vers/tree/hello"
mkdir -p "$vers/bases"
check "build --chunk-size 16K" "$packfs" build --compress zstd --chunk-size 16K "$vers/tree" "$vers/bases/v1.pack"
cp -a "$vers/tree" "$vers/tree1"
python3 - "$vers/tree/big" <<'PY'
import sys
path = sys.argv[1]
data = open(path, "rb").read()
open(path, "wb").write(data[:1500000] + b"inserted" * 10 + data[1500000:])
PY
echo more >>"$vers/tree/d/small3"
rm "$vers/tree/d/small7"
cp -a "$vers/tree" "$vers/tree2"
check "build --base v1" "$packfs" build --compress zstd --base "$vers/bases/v1.pack" "$vers/tree" "$vers/bases/v2.pack" --json
"$packfs" build --compress zstd --base "$vers/bases/v1.pack" "$vers/tree" "$vers/bases/v2.pack" --json >"$vers/v2.json"
check "  stores a small part of the tree (the edited chunk, the small files)" python3 -c "
import json; s = json.load(open('$vers/v2.json'))['stats']
assert s['data_bytes'] < 200000 and s['base_bytes'] > 2900000, s"
echo third >"$vers/tree/d/new"
check "build --base v2 (v1 found beside it)" "$packfs" build --compress zstd --base "$vers/bases/v2.pack" "$vers/tree" "$vers/bases/v3.pack"
for v in 1 2 3; do
    t="$vers/tree$v"; [ "$v" = 3 ] && t="$vers/tree"
    rm -rf "$vers/x$v"
    check "v$v: extract gives the tree" "$packfs" extract "$vers/bases/v$v.pack" "$vers/x$v"
    check "  byte for byte" diff -r "$t" "$vers/x$v"
    check "v$v: cat of the large file" sh -c "'$packfs' cat '$vers/bases/v$v.pack' /big | cmp -s - '$t/big'"
    check "v$v: verify" "$packfs" verify "$vers/bases/v$v.pack"
done
"$packfs" info "$vers/bases/v3.pack" >"$vers/info.out"
check "info names the bases" grep -q "base      v2.pack (sha256:" "$vers/info.out"
check "  all of them" grep -q "base      v1.pack (sha256:" "$vers/info.out"
check "diff of v2 against v3 finds the new file" sh -c "'$packfs' diff '$vers/bases/v2.pack' '$vers/bases/v3.pack' | grep -q '/d/new'"
mkdir -p "$vers/moved"
mv "$vers/bases/v1.pack" "$vers/moved/"
expect_code "a base moved away: the pack is refused" 1 "$packfs" cat "$vers/bases/v3.pack" /big
check "  naming the base" grep -q "v1.pack" "$work/last.err"
check "  and saying how to give it" grep -q -- "--base" "$work/last.err"
check "given with --base, it reads" sh -c "'$packfs' cat --base '$vers/moved/v1.pack' '$vers/bases/v3.pack' /big | cmp -s - '$vers/tree/big'"
check "  and verifies" "$packfs" verify --base "$vers/moved/v1.pack" "$vers/bases/v3.pack"
mv "$vers/moved/v1.pack" "$vers/bases/"
check "a pack named relative to the working directory finds its bases beside it" \
    sh -c "cd '$vers/bases' && '$packfs' cat v3.pack /big | cmp -s - '$vers/tree/big'"
# store verify: every pack of the directory with its bases; a damaged base fails it and the packs
# over it, by name.
"$packfs" store verify "$vers/bases" >"$vers/sv.out"
check "store verify of v1..v3" grep -q "3 packs, 3 verified, 0 failed" "$vers/sv.out"
rm -rf "$vers/damaged" && cp -a "$vers/bases" "$vers/damaged"
python3 - "$vers/damaged/v1.pack" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[600] ^= 0x40  # in the data region (it starts at 512)
open(path, "wb").write(bytes(data))
PY
expect_code "store verify with a damaged base" 1 "$packfs" store verify "$vers/damaged"
check "  names it" grep -q "FAILED $vers/damaged/v1.pack" "$work/last.out"
rm "$vers/damaged/v1.pack"
expect_code "store verify with a base gone" 1 "$packfs" store verify "$vers/damaged"
check "  names the pack and its base" sh -c "grep -q 'FAILED $vers/damaged/v2.pack' '$work/last.out' && grep -q \"('v1.pack') is not found\" '$work/last.out'"
"$packfs" build --compress zstd --no-files-cache --base "$vers/bases/v2.pack" "$vers/tree" "$work/nfc.pack" --json >"$work/nfc.json"
check "build --no-files-cache reads every file" python3 -c "
import json; assert json.load(open('$work/nfc.json'))['stats']['unchanged_files'] == 0"
# store gc: keeps the packs given and their bases, removes the other packs, touches no other file.
cp "$vers/bases/v2.pack" "$vers/bases/stray.pack"
echo "not a pack" >"$vers/bases/notes.txt"
"$packfs" store gc --dry-run "$vers/bases" "$vers/bases/v3.pack" >"$vers/gc.out"
check "store gc --dry-run lists what would go" grep -q "would remove $vers/bases/stray.pack" "$vers/gc.out"
check "  and removes nothing" test -f "$vers/bases/stray.pack"
check "store gc keeping v3" "$packfs" store gc "$vers/bases" "$vers/bases/v3.pack"
check "  removes the pack no kept pack names" test ! -e "$vers/bases/stray.pack"
check "  keeps v3's bases" sh -c "test -f '$vers/bases/v1.pack' && test -f '$vers/bases/v2.pack'"
check "  and files that are no packs" test -f "$vers/bases/notes.txt"
check "  v3 still reads" sh -c "'$packfs' cat '$vers/bases/v3.pack' /big | cmp -s - '$vers/tree/big'"
check "store gc keeping v2 removes v3" sh -c "'$packfs' store gc '$vers/bases' '$vers/bases/v2.pack' && test ! -e '$vers/bases/v3.pack' && test -f '$vers/bases/v1.pack'"
expect_code "store gc of a pack whose base is gone" 1 sh -c "mv '$vers/bases/v1.pack' '$vers/v1.away' && '$packfs' store gc '$vers/bases' '$vers/bases/v2.pack'"
check "  names the base and touches nothing" sh -c "test -f '$vers/bases/v2.pack'"
expect_code "--chunk-size must be a power of two" 2 "$packfs" build --chunk-size 3K "$vers/tree" "$work/x.pack"
expect_code "--base needs format 2" 2 "$packfs" build --format 1 --base "$vers/bases/v2.pack" "$vers/tree" "$work/x.pack"

# ---- version and help ----
check "--version names the version and the formats" bash -c "'$packfs' --version | head -1 | grep -qE '^packfs [0-9]+\.[0-9]+\.[0-9]+$' &&
    '$packfs' --version | grep -q '^pack format: reads 1-2, writes 1-2'"
check "help SUBCOMMAND is that subcommand's help" \
    bash -c "'$packfs' help ls | grep -q '^Usage: packfs ls ' && diff <('$packfs' help ls | tail -n +3) <('$packfs' ls --help | tail -n +3)"
check "help of a nested subcommand" bash -c "'$packfs' help volume init | grep -q '^Usage: packfs volume init '"
check "help alone is the program's help" bash -c "'$packfs' help | grep -q '^Usage: packfs \[OPTIONS\] SUBCOMMAND'"
check "help of no such subcommand: exit 2 and why" \
    bash -c "'$packfs' help nope 2>err; [ \$? -eq 2 ] && grep -q 'packfs has no subcommand nope' err"
check "every SOURCE-reading command's help says which SOURCEs it takes" bash -c "
    for s in ls stat cat extract diff; do '$packfs' help \$s | grep -q 'volume or directory' || exit 1; done"

if [ "$failures" -ne 0 ]; then
    echo "pack cli: $failures check(s) failed"
    exit 1
fi
echo "pack cli ok"

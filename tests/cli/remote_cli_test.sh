#!/usr/bin/env bash
# Remote packs (docs/REMOTE.md) through the packfs tool and a mount, against a real nginx this
# script starts on 127.0.0.1 at a free port (tests/support/nginx.sh):
# - every command that takes a SOURCE answers for the URL exactly what it answers for the local
#   pack (ls -lR, stat, cat, extract, verify, info, diff), raw and zstd;
# - what is fetched, counted from nginx's access log: ls -lR is the header and the metadata
#   (two requests, no data block); a 4 KiB file is one block more; a warm open with the digest
#   pinned is no request at all;
# - integrity: a wrong pinned digest, a block changed on the server (EIO naming the block and
#   both digests, nothing cached, a read works again once the server has the right bytes), a
#   truncated blob, a pack without block digests;
# - failures: 404, 500 (EIO at the timeout), a stalled transfer (EIO at the timeout), a blob
#   truncated under a mount (416: EIO at once, reads work again when it is whole), the
#   server stopped under a mount (uncached reads fail at once, cached ones still work, reads
#   work again when it is back), a mount's daemon SIGKILLed while filling the cache then
#   remounted (only verified blocks served);
# - registries: push to a real OCI registry (docker-registry), then every command by tag and by
#   digest, a mount, pull (checked byte for byte), a wrong manifest digest, a missing repository,
#   a pack without block digests refused by push;
# - a trace recorded by one mount (--record-trace) prefetched by the next (--prefetch), which
#   then reads those files with the server gone;
# - the cache: two mounts of one pack fetch each block once between them; a bound prunes the
#   least recently used pack not in use, and one in use evicts its own blocks;
#   `packfs cache ls|prune|clear`; a relative --cache of a daemonized mount is the caller's.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
source "$here/../support/nginx.sh"
source "$here/../support/registry.sh"
cleanup_all() {
    local status=$?
    stop_nginx || true
    stop_registry || true
    (exit $status)
    fuse_cleanup
}
fuse_setup
trap cleanup_all EXIT
export XDG_CACHE_HOME="$work/xdg"  # the default cache, for every command below

# ---- the tree: small and large files, a compressible one, links, a sparse file --------------
src="$work/src"
mkdir -p "$src/a/b" "$src/c" "$src/empty dir"
head -c 4096 /dev/urandom >"$src/a/four-k"
head -c 1500000 /dev/urandom >"$src/a/b/random"
seq 1 400000 >"$src/c/numbers"
printf 'hello\n' >"$src/small"
: >"$src/empty"
ln "$src/small" "$src/c/small hard"
ln -s ../small "$src/a/link"
truncate -s 3M "$src/sparse"
printf 'end' | dd of="$src/sparse" bs=1 seek=3000000 conv=notrunc status=none
touch -d '2020-01-02 03:04:05.123456789' "$src/a/four-k"

www="$work/www"
mkdir -p "$www/slow"
"$packfs" build "$src" "$www/raw.pack" >/dev/null
"$packfs" build --compress zstd --block-size 64K "$src" "$www/zstd.pack" >/dev/null
raw_digest=$("$packfs" info --json "$www/raw.pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["digest"])')
start_nginx "$www" "$work/nginx" '
    location = /err500.pack { return 500; }
    location /slow/ { alias '"$www"'/; limit_rate_after 200k; limit_rate 2k; }
    location /private/ {
        alias '"$www"'/;
        if ($http_authorization != "Bearer s3cret") { return 401; }
    }'

# ---- 1. every command: the URL answers as the local pack does -----------------------------
same() {  # same WHAT CMD...: the command's stdout for the local pack and for its URL agree
    local what="$1" kind="$2"
    shift 2
    "$packfs" "$@" "$www/$kind.pack" "${extra[@]}" >"$work/local.out" 2>&1 || true
    "$packfs" "$@" "$NGINX_URL/$kind.pack" "${extra[@]}" >"$work/remote.out" 2>&1 || true
    sed -i "s#$NGINX_URL/$kind.pack#PACK#g; s#$www/$kind.pack#PACK#g" "$work/local.out" "$work/remote.out"
    check "$kind: $what answers the same by URL" cmp -s "$work/local.out" "$work/remote.out"
    if ! cmp -s "$work/local.out" "$work/remote.out"; then diff "$work/local.out" "$work/remote.out" | head -20 || true; fi
}
for kind in raw zstd; do
    extra=(/); same "ls -lR" "$kind" ls -l -R
    for p in /a/four-k /a/b/random /c/numbers /small /empty /a/link /sparse /a /; do
        extra=("$p"); same "stat $p" "$kind" stat
    done
    for p in /a/four-k /a/b/random /c/numbers /small /sparse; do
        extra=("$p"); same "cat $p" "$kind" cat
    done
    extra=(); same "verify" "$kind" verify
    extra=(); same "info" "$kind" info
    check "$kind: diff of the local pack and its URL finds nothing" \
        "$packfs" diff "$www/$kind.pack" "$NGINX_URL/$kind.pack"
    rm -rf "$work/x-local" "$work/x-remote"
    "$packfs" extract "$www/$kind.pack" "$work/x-local" >/dev/null
    "$packfs" extract "$NGINX_URL/$kind.pack" "$work/x-remote" >/dev/null
    check "$kind: extract by URL gives the same tree" diff -r "$work/x-local" "$work/x-remote"
    check "$kind: extract by URL keeps the hole" \
        test "$(du -k "$work/x-remote/sparse" | cut -f1)" -lt 100
done
# The metadata fetched by block as it is used (--metadata-whole 0), whatever its size.
extra=(/); same "ls -lR, the metadata fetched by block" zstd --metadata-whole 0 ls -l -R
extra=(); same "verify, the metadata fetched by block" zstd --metadata-whole 0 verify
# One connection (every request in turn) reads the same; 0 or more than 64 are refused.
extra=(/); same "ls -lR, one connection" zstd --connections 1 ls -l -R
expect_code "--connections 0 is refused" 2 "$packfs" --connections 0 ls "$NGINX_URL/zstd.pack" /
expect_code "--connections 65 is refused" 2 "$packfs" --connections 65 ls "$NGINX_URL/zstd.pack" /
expect_code "--metadata-whole wants a size" 2 "$packfs" --metadata-whole lots ls "$NGINX_URL/zstd.pack" /
# --readahead: 0 (no readahead, no walk prefetch) and a size read the same; a non-size is refused.
extra=(/a/b/random); same "cat, --readahead 0" zstd --readahead 0 cat
extra=(/a/b/random); same "cat, --readahead 64K" zstd --readahead 64K cat
expect_code "--readahead wants a size" 2 "$packfs" --readahead -1 ls "$NGINX_URL/zstd.pack" /
check "  naming the option" grep -q -- "--readahead" "$work/last.err"

# A server that wants a token: --header sends it (or @FILE, one a line), never logs it.
check "--header: a private URL lists as the local pack does" sh -c \
    "'$packfs' --header 'Authorization: Bearer s3cret' ls -l -R '$NGINX_URL/private/zstd.pack' / >'$work/private.out' &&
     '$packfs' ls -l -R '$www/zstd.pack' / | cmp -s - '$work/private.out'"
printf 'X-Unused: 1\r\n\nAuthorization: Bearer s3cret\n' >"$work/headers"
check "--header @FILE reads them from the file" \
    "$packfs" --header "@$work/headers" cat "$NGINX_URL/private/zstd.pack" /small
check "--header: pull sends it too" \
    "$packfs" --header "Authorization: Bearer s3cret" pull "$NGINX_URL/private/zstd.pack" "$work/private.pack"
check "  and the pulled pack is the served one" cmp -s "$work/private.pack" "$www/zstd.pack"
expect_code "without the token: refused" 1 "$packfs" --cache none ls "$NGINX_URL/private/zstd.pack" /
check "  naming the server's answer" grep -q "401" "$work/last.err"
expect_code "a wrong token: refused" 1 "$packfs" --cache none --header "Authorization: Bearer nope" \
    ls "$NGINX_URL/private/zstd.pack" /
check "  and the token is in no message" sh -c "! grep -q nope '$work/last.err' '$work/last.out'"
expect_code "--header with an oci:// reference is refused" 1 "$packfs" --header "A: b" ls "oci://127.0.0.1:9/r/p:t" /
check "  saying why" grep -q "request headers are for http(s) URLs" "$work/last.err"
expect_code "--header without a colon is refused" 2 "$packfs" --header Bearer ls "$NGINX_URL/zstd.pack" /
expect_code "--header @FILE that cannot be read is refused" 2 "$packfs" --header @/nonexistent ls "$NGINX_URL/zstd.pack" /

# ---- 2. what is fetched --------------------------------------------------------------------
reset_nginx_log
"$packfs" --cache "$work/c1" ls -l -R "$NGINX_URL/zstd.pack" / >/dev/null
check "ls -lR fetched the header and the metadata: two requests" \
    test "$(nginx_requests /zstd.pack)" -eq 2
check "the first is the 512-byte header" grep -q '^GET /zstd.pack 206 512 "bytes=0-511"' "$NGINX_DIR/access.log"
reset_nginx_log
"$packfs" --cache "$work/c1" cat "$NGINX_URL/zstd.pack" /a/four-k >/dev/null
# The metadata is in the cache now: the header (to learn which pack the URL holds) and one block.
check "a 4 KiB file: the header and one block (2 requests)" test "$(nginx_requests /zstd.pack)" -eq 2
block_bytes=$(awk '$2 == "/zstd.pack" && $5 != "\"bytes=0-511\"" { print $4 }' "$NGINX_DIR/access.log")
check "that block is at most the 64 KiB block size ($block_bytes bytes)" test "${block_bytes:-0}" -le 65536 -a "${block_bytes:-0}" -gt 0
reset_nginx_log
"$packfs" --cache "$work/c1" cat "$NGINX_URL/raw.pack#sha256:$raw_digest" /small >/dev/null || true
"$packfs" --cache "$work/c1" ls "$NGINX_URL/raw.pack#sha256:$raw_digest" / >/dev/null
reset_nginx_log
check "warm and pinned: cat works" "$packfs" --cache "$work/c1" cat "$NGINX_URL/raw.pack#sha256:$raw_digest" /small
check "warm and pinned: no request at all" test "$(nginx_requests /raw.pack)" -eq 0

# ---- 3. integrity --------------------------------------------------------------------------
check "--digest pins like the fragment" \
    "$packfs" --cache "$work/c2" --digest "$raw_digest" ls "$NGINX_URL/raw.pack" /
expect_code "a wrong --digest is refused" 1 \
    "$packfs" --cache "$work/c2" --digest "sha256:$(printf '%064d' 0)" ls "$NGINX_URL/raw.pack" /
expect_code "a wrong pinned digest is refused" 1 \
    "$packfs" --cache "$work/c2" ls "$NGINX_URL/raw.pack#sha256:$(printf '%064d' 0)" /
check "  naming the digest" grep -q "image digest" "$work/last.err"
cp "$www/raw.pack" "$www/bad.pack"
# A byte of /a/b/random's data changed (found by its content in the pack).
offset=$(python3 -c "import sys; d=open('$www/raw.pack','rb').read(); print(d.index(open('$src/a/b/random','rb').read()[:64]) + 100000)")
printf '\xff' | dd of="$www/bad.pack" bs=1 seek="$offset" conv=notrunc status=none
expect_code "a block changed on the server: EIO" 1 \
    "$packfs" --cache "$work/c3" --timeout 5 cat "$NGINX_URL/bad.pack" /a/b/random
check "  the log names the block and both digests" grep -q "does not match its digest: expected" "$work/last.err"
cache_file="$work/c3/$raw_digest.pack"
check "  the bad bytes are not in the cache" \
    test "$(dd if="$cache_file" bs=1 skip="$offset" count=1 status=none | od -An -tx1 | tr -d ' ')" != ff
cp "$www/raw.pack" "$www/bad.pack"
check "  once the server has the right bytes the read works" \
    sh -c "'$packfs' --cache '$work/c3' cat '$NGINX_URL/bad.pack' /a/b/random | cmp -s - '$src/a/b/random'"
head -c 100000 "$www/raw.pack" >"$www/short.pack"
expect_code "a truncated blob is refused" 1 "$packfs" --cache "$work/c3" ls "$NGINX_URL/short.pack" /
check "  as a pack of the wrong size" grep -q "file size" "$work/last.err"
"$packfs" build --no-block-digests "$src" "$www/nodigests.pack" >/dev/null
expect_code "a pack without block digests is refused" 1 "$packfs" ls "$NGINX_URL/nodigests.pack" /
check "  saying how to fix it" grep -q "packfs convert" "$work/last.err"

# ---- 4. failures ---------------------------------------------------------------------------
expect_code "404" 1 "$packfs" ls "$NGINX_URL/missing.pack" /
LD_DEBUG=libs "$packfs" ls "$NGINX_URL/missing.pack" / >/dev/null 2>"$work/ld.log" || true
check "  a URL loads libcurl, when it is opened" grep -q 'libcurl' "$work/ld.log"
check "  is 'No such file'" grep -qi "no such file" "$work/last.err"
start=$(date +%s.%N)
expect_code "500 answers: EIO at the timeout" 1 "$packfs" --timeout 2 ls "$NGINX_URL/err500.pack" /
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
check "  within the 2 s timeout + 1 s ($elapsed s)" test "$(echo "$elapsed < 3.5" | bc)" -eq 1
start=$(date +%s.%N)
expect_code "a stalled transfer: EIO at the timeout" 1 \
    "$packfs" --cache "$work/c4" --timeout 2 cat "$NGINX_URL/slow/raw.pack" /a/b/random
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
check "  within the 2 s timeout + 1.5 s ($elapsed s)" test "$(echo "$elapsed < 3.5" | bc)" -eq 1

# A mount, in the foreground so that its log is ours; the server stopped underneath it.
mnt="$work/mnt"
mkdir -p "$mnt"
"$packfs" --cache "$work/c5" --timeout 3 mount -f "$NGINX_URL/raw.pack" "$mnt" 2>"$work/mount.log" &
track_pid $!
wait_for is_mounted "$mnt"
check "mounted: a file read before the server goes" cmp -s "$mnt/a/b/random" "$src/a/b/random"
stop_nginx
start=$(date +%s.%N)
check "server down: an uncached read fails" sh -c "! cat '$mnt/c/numbers' >/dev/null 2>&1"
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
check "  at once (connection refused: $elapsed s)" test "$(echo "$elapsed < 2" | bc)" -eq 1
check "server down: cached data still reads" cmp -s "$mnt/a/b/random" "$src/a/b/random"
check "server down: the mount is still up" is_mounted "$mnt"
"$NGINX_BIN" -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"
wait_for curl -s -o /dev/null "$NGINX_URL/raw.pack"
check "server back: the read works again" cmp -s "$mnt/c/numbers" "$src/c/numbers"
check "server back: the whole tree reads as the source" diff -r "$src" "$mnt"
check "the daemon logged the refused connection" grep -q "connection refused" "$work/mount.log"
do_umount "$mnt"

# A blob cut short under a mount: reads past its new end get 416, those before it a size that
# is no longer the pack's; both EIO at once, and reads work again once the blob is whole.
cp "$www/raw.pack" "$www/shrink.pack"
mkdir -p "$work/m5"
"$packfs" --cache "$work/c12" --timeout 5 mount -f "$NGINX_URL/shrink.pack" "$work/m5" 2>"$work/shrink.log" &
track_pid $!
wait_for is_mounted "$work/m5"
truncate -s 8192 "$www/shrink.pack"
start=$(date +%s.%N)
check "blob truncated on the server: a read fails" sh -c "! cat '$work/m5/c/numbers' >/dev/null 2>&1"
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
check "  at once ($elapsed s)" test "$(echo "$elapsed < 2" | bc)" -eq 1
check "  the daemon logged the 416 or the new size" grep -qE "HTTP 416|the resource is now" "$work/shrink.log"
cp "$www/raw.pack" "$www/shrink.pack"
check "  the blob whole again: the read works" cmp -s "$work/m5/c/numbers" "$src/c/numbers"
do_umount "$work/m5"

# ---- 5. the cache --------------------------------------------------------------------------
# Two mounts of one pack, read at the same time: each block fetched once between them.
reset_nginx_log
mkdir -p "$work/m1" "$work/m2"
do_mount "$NGINX_URL/zstd.pack" "$work/m1" --cache "$work/c6"
do_mount "$NGINX_URL/zstd.pack" "$work/m2" --cache "$work/c6"
(cd "$work/m1" && find . -type f -exec cat {} + >/dev/null) &
(cd "$work/m2" && find . -type f -exec cat {} + >/dev/null) &
wait
check "two mounts: both read the tree" diff -r "$src" "$work/m2"
dupes=$(awk '$2 == "/zstd.pack" && $5 != "\"bytes=0-511\"" { print $5 }' "$NGINX_DIR/access.log" | sort | uniq -d | wc -l)
check "two mounts: no range fetched twice" test "$dupes" -eq 0
overlap=$(awk '$2 == "/zstd.pack" && $5 ~ /bytes=[0-9]+-[0-9]+/ && $5 != "\"bytes=0-511\"" {
    gsub(/"|bytes=/, "", $5); split($5, r, "-"); print r[1], r[2] }' "$NGINX_DIR/access.log" |
    sort -n | awk 'NR > 1 && $1 <= last { n++ } { if ($2 > last) last = $2 } END { print n + 0 }')
check "two mounts: no byte fetched twice ($overlap overlaps)" test "$overlap" -eq 0
do_umount "$work/m1"
do_umount "$work/m2"

# A daemon killed while it fills the cache (reading through the slow location), then a mount
# of the same pack: every block it serves was checked.
"$packfs" --cache "$work/c7" mount -f "$NGINX_URL/slow/raw.pack" "$work/m1" 2>/dev/null &
killed=$!
track_pid $killed
wait_for is_mounted "$work/m1"
(cat "$work/m1/a/b/random" >/dev/null 2>&1 &)
sleep 1
kill -9 $killed
wait_for sh -c "! kill -0 $killed 2>/dev/null"
fusermount3 -uz "$work/m1" 2>/dev/null || umount -l "$work/m1"
do_mount "$NGINX_URL/raw.pack" "$work/m2" --cache "$work/c7"
check "after a SIGKILL mid-fill, the remount reads every file right" diff -r "$src" "$work/m2"
do_umount "$work/m2"

# A bound: opening the zstd pack with a 1-byte bound prunes the raw pack, not in use.
"$packfs" --cache "$work/c8" cat "$NGINX_URL/raw.pack" /c/numbers >/dev/null
"$packfs" --cache "$work/c8" --cache-size 1 cat "$NGINX_URL/zstd.pack" /small >/dev/null
"$packfs" --cache "$work/c8" cache ls --json >"$work/ls.json"
check "a bound prunes the least recently used pack not in use" \
    python3 -c "import json; d = json.load(open('$work/ls.json')); assert len(d['packs']) == 1, d"
check "cache ls names the pack left" grep -q "\"size\": $(stat -c %s "$www/zstd.pack")" "$work/ls.json"
# A bound below what one pack in use reads: it evicts its own blocks as it goes.
check "a pack read past the bound reads right" sh -c \
    "'$packfs' --cache '$work/c9' --cache-size 300000 cat '$NGINX_URL/raw.pack' /a/b/random | cmp -s - '$src/a/b/random'"
"$packfs" --cache "$work/c9" cache ls --json >"$work/ls.json"
check "and keeps under its bound by evicting blocks (1.5 MB read, 300 kB bound)" \
    python3 -c "import json; d = json.load(open('$work/ls.json')); assert d['packs'][0]['cached_bytes'] <= 300000 * 9 // 8, d"
do_mount "$NGINX_URL/raw.pack" "$work/m1" --cache "$work/c8"
"$packfs" --cache "$work/c8" cache clear >/dev/null
"$packfs" --cache "$work/c8" cache ls --json >"$work/ls.json"
check "cache clear keeps the pack a mount has open" \
    python3 -c "import json; d = json.load(open('$work/ls.json')); assert [p['in_use'] for p in d['packs']] == [True], d"
do_umount "$work/m1"
# umount returns once the daemon has exited, so its cache file is let go already.
"$packfs" --cache "$work/c8" cache clear >/dev/null
check "and removes it once it is closed (umount waited for the daemon)" test -z "$(ls "$work/c8")"
# A relative --cache names the directory beside the caller, though the daemon serves from /.
mkdir -p "$work/here"
(cd "$work/here" && do_mount "$NGINX_URL/raw.pack" "$work/m1" --cache c10)
check "a mount with a relative --cache reads" cmp -s "$work/m1/a/b/random" "$src/a/b/random"
do_umount "$work/m1"
"$packfs" --cache "$work/here/c10" cache ls --json >"$work/ls.json"
check "  and caches the pack's blocks under the caller's directory" \
    python3 -c "import json; d = json.load(open('$work/ls.json')); assert len(d['packs']) == 1 and d['packs'][0]['cached_bytes'] > 0, d"
check "  not under /" test ! -e /c10

# ---- 6. an OCI registry --------------------------------------------------------------------
start_registry "$work/registry"
for kind in raw zstd; do
    ref=$("$packfs" push "$www/$kind.pack" "oci://$REGISTRY/packs/$kind:v1")
    check "$kind: push prints the reference by digest" \
        sh -c "echo '$ref' | grep -qE '^oci://$REGISTRY/packs/$kind@sha256:[0-9a-f]{64}\$'"
    check "$kind: a second push gives the same digest" \
        test "$("$packfs" push "$www/$kind.pack" "oci://$REGISTRY/packs/$kind:v1")" = "$ref"
    for source in "oci://$REGISTRY/packs/$kind:v1" "$ref"; do
        "$packfs" ls -l -R "$www/$kind.pack" / >"$work/local.out"
        "$packfs" ls -l -R "$source" / >"$work/remote.out"
        check "$kind: ls -lR of $source" cmp -s "$work/local.out" "$work/remote.out"
        check "$kind: cat by reference" \
            sh -c "'$packfs' cat '$source' /a/b/random | cmp -s - '$src/a/b/random'"
    done
    check "$kind: verify by reference" "$packfs" verify "$ref"
    check "$kind: diff of the local pack and the reference finds nothing" \
        "$packfs" diff "$www/$kind.pack" "$ref"
    rm -f "$work/pulled.pack"
    check "$kind: pull by reference" "$packfs" pull "$ref" "$work/pulled.pack"
    check "  gives the pushed file byte for byte" cmp -s "$work/pulled.pack" "$www/$kind.pack"
done
rm -f "$work/pulled.pack"
check "pull of an http URL" "$packfs" pull "$NGINX_URL/raw.pack#sha256:$raw_digest" "$work/pulled.pack"
check "  byte for byte" cmp -s "$work/pulled.pack" "$www/raw.pack"
# On a terminal (script(1) gives it one) pull shows the bytes moved; off one it shows nothing.
script -qec "'$packfs' pull '$NGINX_URL/raw.pack' '$work/pulled-tty.pack'" /dev/null >"$work/tty.out"
check "pull on a terminal shows its progress (bytes of the total)" \
    grep -qE "pull: .+ of .+ \(1?[0-9]?[0-9]%\)" "$work/tty.out"
check "  and erases it" grep -q "$NGINX_URL/raw.pack -> " "$work/tty.out"
"$packfs" pull "$NGINX_URL/raw.pack" "$work/pulled-pipe.pack" 2>"$work/pipe.err" >/dev/null
check "pull off a terminal shows no progress" test ! -s "$work/pipe.err"
expect_code "pull with a wrong digest leaves nothing" 1 \
    "$packfs" pull "$NGINX_URL/raw.pack#sha256:$(printf '%064d' 0)" "$work/nothing.pack"
expect_code "pull with a malformed digest is refused before any transfer" 1 \
    "$packfs" pull "$NGINX_URL/raw.pack#sha256:not-hex" "$work/nothing.pack"
check "  saying so" sh -c "'$packfs' pull '$NGINX_URL/raw.pack' '$work/nothing.pack' --digest 12ab 2>&1 | grep -q 'not 64 hex digits'"
check "  (no file, no temporary)" sh -c "! ls '$work' | grep -q nothing.pack"
mkdir -p "$work/m3"
do_mount "oci://$REGISTRY/packs/zstd:v1" "$work/m3"
check "a mount of a registry reference reads the tree" diff -r "$src" "$work/m3"
do_umount "$work/m3"
good=$("$packfs" push "$www/raw.pack" "oci://$REGISTRY/packs/raw:v1")
expect_code "a reference whose manifest digest does not match is refused" 1 \
    "$packfs" ls "${good%@*}@sha256:$(printf '%064d' 0)" /
expect_code "a repository that does not exist" 1 "$packfs" ls "oci://$REGISTRY/nothing/here:v1" /
check "  is 'No such file'" grep -qi "no such" "$work/last.err"
expect_code "push of a pack without block digests is refused" 1 \
    "$packfs" push "$www/nodigests.pack" "oci://$REGISTRY/packs/nodigests:v1"
expect_code "a malformed reference is refused" 1 "$packfs" ls "oci://$REGISTRY/UPPER:v1" /
check "  naming the rule" grep -q "lower-case" "$work/last.err"
# Offline (docs/REMOTE.md): the mount above read every block of zstd:v1 into the default cache,
# so with the registry stopped the reference (by tag, and by manifest digest) still reads, from
# the cached copy of the pack it named when last reached, with a notice; one never read fails.
zstd_ref=$("$packfs" push "$www/zstd.pack" "oci://$REGISTRY/packs/zstd:v1")
"$packfs" ls "$zstd_ref" / >/dev/null
stop_registry
"$packfs" ls -l -R "$www/zstd.pack" / >"$work/local.out"
for source in "oci://$REGISTRY/packs/zstd:v1" "$zstd_ref"; do
    "$packfs" ls -l -R "$source" / >"$work/offline.out" 2>"$work/offline.err"
    check "registry stopped: ls -lR of $source reads the cached copy" \
        cmp -s "$work/local.out" "$work/offline.out"
    check "  saying so" grep -q "registry cannot be reached.*cached copy" "$work/offline.err"
done
rm -rf "$work/offline-x"
check "registry stopped: extract by tag gives the tree" \
    "$packfs" extract "oci://$REGISTRY/packs/zstd:v1" "$work/offline-x"
check "  byte for byte" diff -r "$src" "$work/offline-x"
do_mount "oci://$REGISTRY/packs/zstd:v1" "$work/m3"
check "registry stopped: a mount by tag reads the tree" diff -r "$src" "$work/m3"
do_umount "$work/m3"
expect_code "registry stopped: a reference never read fails" 1 \
    "$packfs" ls "oci://$REGISTRY/packs/raw-never:v1" /
check "  saying why" grep -qi "refused" "$work/last.err"

# A registry that asks for credentials (htpasswd: HTTP Basic, as the registry's 401 says).
python3 -c 'import crypt; print("packer:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
    >"$work/htpasswd" 2>/dev/null
start_registry "$work/registry-auth" "auth:
  htpasswd:
    realm: packfs-test
    path: $work/htpasswd"
expect_code "auth: push without credentials is refused" 1 \
    "$packfs" push "$www/zstd.pack" "oci://$REGISTRY/private/zstd:v1"
check "  as a permission error" grep -qi "permission denied" "$work/last.err"
expect_code "auth: a wrong password is refused" 1 env PACKFS_REGISTRY_AUTH=packer:wrong \
    "$packfs" push "$www/zstd.pack" "oci://$REGISTRY/private/zstd:v1"
private=$(PACKFS_REGISTRY_AUTH=packer:s3cret "$packfs" push "$www/zstd.pack" "oci://$REGISTRY/private/zstd:v1")
check "auth: push with credentials names the pack by digest" \
    sh -c "echo '$private' | grep -qE '^oci://$REGISTRY/private/zstd@sha256:[0-9a-f]{64}\$'"
PACKFS_REGISTRY_AUTH=packer:s3cret "$packfs" ls -lR "$private" / >"$work/ls.private" 2>&1 || true
"$packfs" ls -lR "$www/zstd.pack" / >"$work/ls.local"
check "auth: ls with credentials answers as the local pack" cmp -s "$work/ls.private" "$work/ls.local"
expect_code "auth: reading without credentials is refused" 1 "$packfs" ls "$private" /
mkdir -p "$work/m6"
PACKFS_REGISTRY_AUTH=packer:s3cret do_mount "oci://$REGISTRY/private/zstd:v1" "$work/m6" \
    --cache "$work/c13"
check "auth: a mount with credentials reads the tree" diff -r "$src" "$work/m6"
do_umount "$work/m6"
stop_registry

# A registry that hands out Bearer tokens (its token auth; tests/support/token_server.py
# issues them, signed by a certificate the registry trusts, to Basic credentials).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/token.key" -out "$work/token.pem" \
    -days 2 -subj "/CN=packfs-test-tokens" >/dev/null 2>&1
python3 "$here/../support/token_server.py" --cert "$work/token.pem" --key "$work/token.key" \
    --issuer packfs-test-issuer --service packfs-test-registry --user packer:s3cret \
    --count-file "$work/tokens" >"$work/token.port" 2>"$work/token.err" &
token_pid=$!
track_pid $token_pid
wait_for test -s "$work/token.port"
start_registry "$work/registry-token" "auth:
  token:
    realm: http://127.0.0.1:$(cat "$work/token.port")/token
    service: packfs-test-registry
    issuer: packfs-test-issuer
    rootcertbundle: $work/token.pem"
expect_code "tokens: push without credentials is refused" 1 \
    "$packfs" push "$www/raw.pack" "oci://$REGISTRY/private/raw:v1"
check "  as a permission error" grep -qi "permission denied" "$work/last.err"
tokened=$(PACKFS_REGISTRY_AUTH=packer:s3cret "$packfs" push "$www/raw.pack" "oci://$REGISTRY/private/raw:v1")
check "tokens: push with credentials names the pack by digest" \
    sh -c "echo '$tokened' | grep -qE '^oci://$REGISTRY/private/raw@sha256:[0-9a-f]{64}\$'"
check "  through tokens from the token service" test "$(cat "$work/tokens" 2>/dev/null || echo 0)" -ge 1
PACKFS_REGISTRY_AUTH=packer:s3cret "$packfs" cat "$tokened" /c/numbers >"$work/numbers.token" 2>&1 || true
check "tokens: cat with credentials reads the file" cmp -s "$work/numbers.token" "$src/c/numbers"
expect_code "tokens: reading without credentials is refused" 1 "$packfs" ls "$tokened" /
mkdir -p "$work/m7"
PACKFS_REGISTRY_AUTH=packer:s3cret do_mount "$tokened" "$work/m7" --cache "$work/c14"
check "tokens: a mount with credentials reads the tree" diff -r "$src" "$work/m7"
do_umount "$work/m7"
# Tokens revoked under a mount (the registry restarted on its port trusting a new key, the token
# service signing with it): the next uncached read is refused, authenticates again and works.
mkdir -p "$work/m8"
PACKFS_REGISTRY_AUTH=packer:s3cret "$packfs" --cache "$work/c15" mount -f "$tokened" "$work/m8" \
    2>"$work/m8.log" &
track_pid $!
wait_for is_mounted "$work/m8"
check "tokens: a file read before the revocation" cmp -s "$work/m8/small" "$src/small"
stop_registry
kill "$token_pid" 2>/dev/null || true
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/token2.key" -out "$work/token2.pem" \
    -days 2 -subj "/CN=packfs-test-tokens-2" >/dev/null 2>&1
python3 "$here/../support/token_server.py" --cert "$work/token2.pem" --key "$work/token2.key" \
    --issuer packfs-test-issuer --service packfs-test-registry --user packer:s3cret \
    >"$work/token2.port" 2>"$work/token2.err" &
token_pid=$!
track_pid $token_pid
wait_for test -s "$work/token2.port"
sed -i -e "s|realm: .*|realm: http://127.0.0.1:$(cat "$work/token2.port")/token|" \
    -e "s|rootcertbundle: .*|rootcertbundle: $work/token2.pem|" "$work/registry-token/config.yml"
docker-registry serve "$work/registry-token/config.yml" >"$work/registry-token/registry2.log" 2>&1 &
REGISTRY_PID=$!
wait_for curl -s -o /dev/null "http://$REGISTRY/v2/"
check "tokens revoked: an uncached read through the mount still works" \
    cmp -s "$work/m8/c/numbers" "$src/c/numbers"
check "  after authenticating again (the daemon says so)" grep -q "authenticated again" "$work/m8.log"
do_umount "$work/m8"
stop_registry
kill "$token_pid" 2>/dev/null || true

# ---- 7. a recorded trace, then a prefetch from it --------------------------------------------
mkdir -p "$work/m4"
do_mount "$NGINX_URL/raw.pack" "$work/m4" --cache "$work/c10" --record-trace "$work/trace"
cat "$work/m4/c/numbers" "$work/m4/a/four-k" >/dev/null
cat "$work/m4/c/numbers" >/dev/null
do_umount "$work/m4"
check "the trace lists the files opened, once each, in the order first opened" \
    test "$(cat "$work/trace")" = "$(printf '/c/numbers\n/a/four-k')"
reset_nginx_log
do_mount "$NGINX_URL/raw.pack" "$work/m4" --cache "$work/c11" --prefetch "$work/trace"
# The prefetch is done once /c/numbers' last block was fetched (the file ends the biggest run).
numbers_size=$(stat -c %s "$src/c/numbers")
prefetched() { test "$(nginx_bytes /raw.pack)" -gt "$numbers_size"; }
check "a mount with --prefetch fetches the listed files by itself" wait_for prefetched
sleep 0.5
stop_nginx
check "  which then read with the server gone" cmp -s "$work/m4/c/numbers" "$src/c/numbers"
check "  (and the other one)" cmp -s "$work/m4/a/four-k" "$src/a/four-k"
check "  while a file not listed does not" sh -c "! cat '$work/m4/a/b/random' >/dev/null 2>&1"
do_umount "$work/m4"
expect_code "--prefetch of a missing list fails the mount, saying so" 1 \
    "$packfs" mount "$NGINX_URL/raw.pack" "$work/m4" --prefetch "$work/no-such-list"

echo "remote_cli_test: $failures failure(s)"
[ "$failures" -eq 0 ]

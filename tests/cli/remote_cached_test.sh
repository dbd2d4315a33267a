#!/usr/bin/env bash
# A remote pack whose every block is in the cache (docs/REMOTE.md "The cache", "Failure"),
# against a real nginx this script starts on 127.0.0.1 (tests/support/nginx.sh):
# - read whole once through the cache (an unpinned extract): the cache holds every block;
# - with the server up: a read-all pinned makes no request (extract and a mount); unpinned, one
#   (the 512-byte header: which pack the URL holds now);
# - with the server stopped: every file read unpinned by its own `packfs cat`, an extract, a
#   mount read whole: every byte right, no request, each open at once (connection refused:
#   the cached copy, with a one-line notice), no timeout waited; pinned, not even a notice;
# - a server that accepts connections and never answers: an unpinned open waits 3 s, not the
#   30 s --timeout, then reads the cached copy;
# - a URL whose server answers with another pack: that pack, not the cached one.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
source "$here/../support/nginx.sh"
staller=""
cleanup_all() {
    local status=$?
    stop_nginx || true
    [ -n "$staller" ] && kill "$staller" 2>/dev/null
    (exit $status)
    fuse_cleanup
}
fuse_setup
trap cleanup_all EXIT

src="$work/src"
python3 "$here/make_tree.py" "$src" 600 7
head -c 3000000 /dev/urandom >"$src/large"
www="$work/www"
mkdir -p "$www"
"$packfs" build --compress zstd --block-size 16K "$src" "$www/p.pack" >/dev/null
digest=$("$packfs" info --json "$www/p.pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["digest"])')
start_nginx "$www" "$work/nginx"
url="$NGINX_URL/p.pack"
cache="$work/cache"
p() { "$packfs" --cache "$cache" --timeout 30 "$@"; }
elapsed_since() { echo "$(date +%s.%N) - $1" | bc; }
below() { test "$(echo "$1 < $2" | bc)" -eq 1; }
(cd "$src" && find . -type f | sed 's#^\./##' | sort) >"$work/files"
nfiles=$(wc -l <"$work/files")

# ---- the cache filled by one read of everything ----------------------------------------------
p extract "$url" "$work/x0" >/dev/null
check "a cold extract reads the tree" diff -r --no-dereference "$src" "$work/x0"
check "  fetching from the server" test "$(nginx_requests /p.pack)" -gt 2

# ---- server up ----------------------------------------------------------------------------
reset_nginx_log
p extract "$url#sha256:$digest" "$work/x1" >/dev/null 2>"$work/x1.err"
check "pinned, every block cached: extract reads the tree" diff -r --no-dereference "$src" "$work/x1"
check "  with no request" test "$(nginx_requests /p.pack)" -eq 0
check "  and nothing on stderr" test ! -s "$work/x1.err"
do_mount "$url#sha256:$digest" "$work/m1" --cache "$cache"
check "pinned, every block cached: a mount reads the tree" diff -r --no-dereference "$src" "$work/m1"
do_umount "$work/m1"
check "  with no request" test "$(nginx_requests /p.pack)" -eq 0
p extract "$url" "$work/x2" >/dev/null
check "unpinned, every block cached: extract reads the tree" diff -r --no-dereference "$src" "$work/x2"
check "  with one request, the header's" test "$(nginx_requests /p.pack)" -eq 1
check "  (bytes 0-511)" grep -q '"bytes=0-511"' "$NGINX_DIR/access.log"

# ---- server stopped -------------------------------------------------------------------------
reset_nginx_log
stop_nginx
start=$(date +%s.%N)
bad=0
while IFS= read -r f; do
    if ! p cat "$url" "/$f" 2>>"$work/cat.err" | cmp -s - "$src/$f"; then
        echo "  differs or failed: $f"
        bad=$((bad + 1))
    fi
done <"$work/files"
elapsed=$(elapsed_since "$start")
check "server stopped: each of the $nfiles files read by its own unpinned packfs cat is right" test "$bad" -eq 0
check "  in $elapsed s: no timeout waited (under 0.5 s a file)" below "$elapsed" "$(echo "$nfiles * 0.5" | bc)"
check "  each open says once that it read the cached copy" \
    test "$(grep -c "cannot be reached (Connection refused); reading the cached copy of the pack it held when last reached (sha256:$digest)" "$work/cat.err")" -eq "$nfiles"
check "  and nothing else" test "$(wc -l <"$work/cat.err")" -eq "$nfiles"
start=$(date +%s.%N)
p extract "$url" "$work/x3" >/dev/null 2>"$work/x3.err"
elapsed=$(elapsed_since "$start")
check "server stopped: an unpinned extract reads the tree" diff -r --no-dereference "$src" "$work/x3"
check "  at once ($elapsed s)" below "$elapsed" 5
check "  with a one-line notice" test "$(wc -l <"$work/x3.err")" -eq 1
p extract "$url#sha256:$digest" "$work/x4" >/dev/null 2>"$work/x4.err"
check "server stopped: a pinned extract reads the tree" diff -r --no-dereference "$src" "$work/x4"
check "  without a word" test ! -s "$work/x4.err"
start=$(date +%s.%N)
do_mount "$url" "$work/m2" --cache "$cache" --timeout 30 --log "$work/m2.log"
check "server stopped: an unpinned mount reads the tree" diff -r --no-dereference "$src" "$work/m2"
elapsed=$(elapsed_since "$start")
check "  mounted and read whole in $elapsed s" below "$elapsed" 10
check "  its log says it read the cached copy" grep -q "reading the cached copy" "$work/m2.log"
check "  and reports no failed fetch" test "$(grep -c "" "$work/m2.log")" -eq 1
do_umount "$work/m2"
check "no request reached the server meanwhile" test ! -s "$NGINX_DIR/access.log"

# A server that takes the connection and never answers (its port listening, nothing accepted).
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); print("ready", flush=True); time.sleep(600)
' "$NGINX_PORT" >"$work/staller.out" &
staller=$!
wait_for grep -q ready "$work/staller.out"
start=$(date +%s.%N)
check "a server that never answers: an unpinned cat reads the cached copy" \
    sh -c "'$packfs' --cache '$cache' --timeout 30 cat '$url' /large 2>'$work/stall.err' | cmp -s - '$src/large'"
elapsed=$(elapsed_since "$start")
check "  after 3 s, not the 30 s timeout ($elapsed s)" below "$elapsed" 6
check "  saying so" grep -q "reading the cached copy" "$work/stall.err"
kill "$staller"
wait "$staller" 2>/dev/null || true
staller=""

# The URL now holds another pack: an unpinned open reads that one, not the cached copy.
echo changed >"$src/changed"
"$packfs" build --compress zstd "$src" "$www/p.pack" >/dev/null
"$NGINX_BIN" -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"
wait_for curl -s -o /dev/null "$url"
check "the server back with another pack at the URL: an unpinned open reads it" \
    sh -c "test \"\$('$packfs' --cache '$cache' cat '$url' /changed)\" = changed"
stop_nginx
check "  and, the server stopped again, the cached copy is that pack" \
    sh -c "test \"\$('$packfs' --cache '$cache' cat '$url' /changed 2>/dev/null)\" = changed"

echo "remote_cached_test: $failures failure(s)"
[ "$failures" -eq 0 ]

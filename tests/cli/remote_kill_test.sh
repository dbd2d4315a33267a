#!/usr/bin/env bash
# The server killed in the middle of a 1 GiB read of a remote pack, then restarted (issue 16's
# fault test), against a real nginx on 127.0.0.1:
# - the reader gets EIO within --timeout + 1 s of the kill (SIGKILL of nginx's master and
#   workers: connections reset mid-body, then refused);
# - the daemon survives: the mount answers, and data already cached still reads;
# - once nginx is back the same mount reads the whole file, byte for byte as the source: no
#   block cut short by the kill was kept (the daemon uses only blocks whose SHA-256 matched);
# - a fresh mount over the same cache (every block checked again on first use) reads it too.
# PACKFS_KILL_TEST_MIB sets the file's size (default 1024).
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/packfs-kill-test-XXXXXX)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
source "$here/../support/nginx.sh"
cleanup_all() {
    local status=$?
    stop_nginx || true
    (exit $status)
    fuse_cleanup
}
fuse_setup
trap cleanup_all EXIT
mib=${PACKFS_KILL_TEST_MIB:-1024}
timeout_s=4

# nginx killed as a crash would: master and workers, no graceful close (the master stopped
# first, or it would start new workers).
kill_nginx() {
    local master workers
    master=$(cat "$NGINX_DIR/nginx.pid")
    kill -STOP "$master"
    workers=$(pgrep -P "$master" || true)
    kill -KILL $workers "$master"
    for p in $workers "$master"; do
        while kill -0 "$p" 2>/dev/null; do sleep 0.01; done
    done
}

src="$work/src"
mkdir -p "$src/data" "$work/www"
head -c "$((mib * 1048576))" /dev/urandom >"$src/data/big"
printf 'small file\n' >"$src/small"
want=$(sha256sum <"$src/data/big")
"$packfs" build "$src" "$work/www/big.pack" >/dev/null
rm "$src/data/big"  # the checksum is the reference from here on
start_nginx "$work/www" "$work/nginx"

mnt="$work/mnt"
mkdir -p "$mnt"
"$packfs" --cache "$work/cache" --timeout "$timeout_s" mount -f "$NGINX_URL/big.pack" "$mnt" \
    2>"$work/mount.log" &
track_pid $!
wait_for is_mounted "$mnt"
check "the small file reads before the kill" grep -q "small file" "$mnt/small"

# The read, in the background; nginx killed once a quarter of the file is in the cache.
(set +e; cat "$mnt/data/big" >/dev/null 2>"$work/cat.err"; echo $? >"$work/cat.status") &
reader=$!
cache_file=""
for _ in $(seq 600); do
    cache_file=$(ls "$work/cache"/*.pack 2>/dev/null | head -1 || true)
    if [ -n "$cache_file" ] && [ "$(du -m "$cache_file" | cut -f1)" -ge $((mib / 4)) ]; then break; fi
    sleep 0.05
done
cached_at_kill=$(du -m "$cache_file" | cut -f1)
kill_nginx
killed=$(date +%s.%N)
wait "$reader" || true
elapsed=$(echo "$(date +%s.%N) - $killed" | bc)
echo "killed with $cached_at_kill MiB of $mib in the cache; the reader ended $elapsed s later"
check "killed mid-read (a quarter to all but 64 MiB cached at the kill)" \
    test "$cached_at_kill" -lt $((mib - 64))
check "the reader failed" test "$(cat "$work/cat.status")" -ne 0
check "  with EIO" grep -q "Input/output error" "$work/cat.err"
check "  within --timeout + 1 s of the kill ($elapsed s)" \
    test "$(echo "$elapsed < $timeout_s + 1" | bc)" -eq 1
check "the daemon survived: the mount is up" is_mounted "$mnt"
check "  and answers (ls, cached data)" sh -c "ls '$mnt/data' | grep -q big && grep -q 'small file' '$mnt/small'"
check "  and logged the failed fetch (the URL and byte range)" \
    grep -qE "big.pack: bytes [0-9]+-[0-9]+: " "$work/mount.log"

# Back on its port: the same mount reads the whole file right.
"$NGINX_BIN" -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"
wait_for curl -s -o /dev/null "$NGINX_URL/big.pack"
check "server back: the same mount reads the whole file, byte for byte" \
    test "$(sha256sum <"$mnt/data/big")" = "$want"
do_umount "$mnt"

# A fresh daemon over the same cache, the server gone: every block of it is checked again
# before use, and all of them are there.
stop_nginx
"$packfs" --cache "$work/cache" --timeout "$timeout_s" mount "$NGINX_URL/big.pack#sha256:$("$packfs" info --json "$work/www/big.pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["digest"])')" "$mnt"
check "a new mount over the cache, server gone: the file reads right from the cache" \
    test "$(sha256sum <"$mnt/data/big")" = "$want"
do_umount "$mnt"

# A daemon (no terminal) with --log FILE: its failed fetches go there, stamped with the time and
# its pid, and rate-limited (a server that is down fails every read; the log must not drown).
"$NGINX_BIN" -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"
wait_for curl -s -o /dev/null "$NGINX_URL/big.pack"
"$packfs" --cache "$work/cache2" --timeout "$timeout_s" mount --log "$work/daemon.log" \
    "$NGINX_URL/big.pack" "$mnt"
check "a daemon with --log reads while the server is up" grep -q "small file" "$mnt/small"
kill_nginx
failed=0
for i in $(seq 40); do
    dd if="$mnt/data/big" of=/dev/null bs=4k count=1 skip=$((i * mib * 256 / 41)) 2>/dev/null || failed=$((failed + 1))
done
check "  with the server gone, its 40 uncached reads fail" test "$failed" -eq 40
check "  and its log names the URL and byte range, stamped with the time and pid" \
    grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z packfs\[[0-9]+\]: remote: .*big\.pack: bytes [0-9]+-[0-9]+: ' \
    "$work/daemon.log"
check "  at most 10 lines for the 40 failures (rate-limited): $(wc -l <"$work/daemon.log")" \
    test "$(wc -l <"$work/daemon.log")" -le 10
do_umount "$mnt"
check "mount --log to a file it cannot open fails, naming it" \
    sh -c "! '$packfs' mount --log /nonexistent/dir/log '$work/www/big.pack' '$mnt' 2>'$work/log.err' && grep -q '/nonexistent/dir/log' '$work/log.err'"

echo "remote_kill_test: $failures failure(s)"
[ "$failures" -eq 0 ]

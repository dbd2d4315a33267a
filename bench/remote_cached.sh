#!/usr/bin/env bash
# A remote pack whose every block is in the cache against the same pack local (docs/BENCH.md
# "Remote packs", "Fully cached"): nginx on 127.0.0.1 (no emulated link: what is left is
# PackFS's own cost), a zstd pack of TREE (default /usr/include), the cache filled by one
# read-all, then each run reads everything again, alternating local / pinned / unpinned:
#   - through a mount: ls -lR, then find . -type f -print0 | xargs -0 -P 8 -n 64 cat
#   - in process: packfs extract SOURCE into a tmpfs
# and the same with nginx stopped (unpinned: the cached copy, with a notice). Requests are
# counted from nginx's access log; the page cache is left warm (both packs' files in it), or
# dropped before each read with DROP=1.
#
#   bench/remote_cached.sh PACKFS [RUNS] [TREE]      (root: it mounts FUSE)
#   BLOCK=64K bench/remote_cached.sh ...              (the pack's block size; default 128K)
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
runs=${2:-5}
tree=${3:-/usr/include}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/packfs-cached-bench-XXXXXX)
out=$(mktemp -d /dev/shm/packfs-cached-bench-XXXXXX)
source "$here/../tests/support/nginx.sh"
cleanup() {
    set +e
    mountpoint -q "$work/mnt" && "$packfs" umount "$work/mnt" >/dev/null 2>&1
    stop_nginx
    rm -rf --one-file-system "$work" "$out"
}
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { printf "%.3f", a[int((NR + 1) / 2)] }'; }
requests() { awk '$2 == "/tree.pack"' "$NGINX_DIR/access.log" | wc -l; }

mkdir -p "$work/www" "$work/mnt"
"$packfs" build --compress zstd --block-size "${BLOCK:-128K}" "$tree" "$work/www/tree.pack" >/dev/null
digest=$("$packfs" info --json "$work/www/tree.pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["digest"])')
start_nginx "$work/www" "$work/nginx"
url="$NGINX_URL/tree.pack"
local_src="$work/www/tree.pack"
pinned_src="$url#sha256:$digest"
cached() { "$packfs" --cache "$work/cache" "$@"; }

drop() { if [ "${DROP:-0}" = 1 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi; }
# mount_read NAME SOURCE: a fresh mount, ls -lR, then every file read by 8 readers; appends
# the times.
mount_read() {
    reset_nginx_log
    drop
    cached mount "$2" "$work/mnt" 2>>"$work/notices" || return 1
    local t0 t1 t2
    t0=$(now)
    ls -lR "$work/mnt" >/dev/null
    t1=$(now)
    (cd "$work/mnt" && find . -type f -print0 | xargs -0 -P 8 -n 64 cat >/dev/null)
    t2=$(now)
    # The daemon's CPU time (user + system), less noisy than the wall clock on a busy machine.
    local pid
    pid=$(pgrep -f -- "mount .*$work/mnt" | head -1)
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$pid/stat" >>"$work/cpu.mount.$1"
    "$packfs" umount "$work/mnt" >/dev/null
    echo "$t1 - $t0" | bc >>"$work/ls.$1"
    echo "$t2 - $t1" | bc >>"$work/mount.$1"
    requests >"$work/mount.$1.requests"
}
# extract_all NAME SOURCE: packfs extract into a tmpfs; appends the time.
extract_all() {
    reset_nginx_log
    rm -rf "$out/x"
    drop
    local t0 t1
    t0=$(now)
    /usr/bin/time -f "%U %S" -o "$work/time.out" "$packfs" --cache "$work/cache" extract "$2" "$out/x" >/dev/null 2>>"$work/notices" || return 1
    awk '{ print $1 + $2 }' "$work/time.out" >>"$work/cpu.extract.$1"
    t1=$(now)
    echo "$t1 - $t0" | bc >>"$work/extract.$1"
    requests >"$work/extract.$1.requests"
}

cached extract "$url" "$out/x" >/dev/null  # fills the cache (and remembers what the URL holds)
for run in $(seq "$runs"); do
    echo "[remote-cached] run $run" >&2
    for kind in local pinned unpinned; do
        case $kind in local) src=$local_src ;; pinned) src=$pinned_src ;; unpinned) src=$url ;; esac
        mount_read "$kind" "$src"
        extract_all "$kind" "$src"
    done
done
stop_nginx
: >"$work/notices"
for run in $(seq "$runs"); do
    echo "[remote-cached] server stopped, run $run" >&2
    # (A PackFS before the offline fallback fails these opens: the row says so.)
    mount_read stopped "$url" && extract_all stopped "$url" || { : >"$work/stopped.failed"; break; }
done
[ -e "$work/stopped.failed" ] || diff -r --no-dereference "$tree" "$out/x" >/dev/null ||
    echo "remote_cached: the tree extracted with the server stopped differs" >&2

ratio() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
row() {  # row LABEL NAME
    local l m e ll ml el
    local cm ce
    cm=$(median <"$work/cpu.mount.$2")
    ce=$(median <"$work/cpu.extract.$2")
    l=$(median <"$work/ls.$2")
    m=$(median <"$work/mount.$2")
    e=$(median <"$work/extract.$2")
    ll=$(median <"$work/ls.local")
    ml=$(median <"$work/mount.local")
    el=$(median <"$work/extract.local")
    echo "| $1 | $l s ($(ratio "$l" "$ll")x) | $m s ($(ratio "$m" "$ml")x) | $cm s ($(ratio "$cm" "$(median <"$work/cpu.mount.local")")x) | $(cat "$work/mount.$2.requests") | $e s ($(ratio "$e" "$el")x) | $ce s ($(ratio "$ce" "$(median <"$work/cpu.extract.local")")x) | $(cat "$work/extract.$2.requests") |"
}
echo "remote_cached: zstd ${BLOCK:-128K} pack of $tree ($(stat -c %s "$work/www/tree.pack") bytes), medians of $runs runs, DROP=${DROP:-0}"
echo "| source | mount: ls -lR | then read-all (8 readers) | daemon CPU | requests | packfs extract | its CPU | requests |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
row "local pack" local
row "URL, digest pinned, every block cached" pinned
row "URL, unpinned, every block cached" unpinned
if [ -e "$work/stopped.failed" ]; then
    echo "| URL, unpinned, nginx stopped | the open fails: $(grep -m1 -v '^packfs: remote:' "$work/notices" || true) |"
else
    row "URL, unpinned, nginx stopped" stopped
fi
[ -e "$work/stopped.failed" ] || echo "notices with the server stopped: $(wc -l <"$work/notices") for $((2 * runs)) opens; e.g.: $(head -1 "$work/notices")"

#!/usr/bin/env bash
# Remote packs against a full pull (docs/REMOTE.md, docs/BENCH.md "Remote packs"): nginx on
# 127.0.0.1 serving a pack of /usr/share + /usr/include, reached through bench/link_emulator.py
# (delay and bandwidth; this machine's kernel has no tc netem), the client a `packfs mount`.
#
#   bench/remote_compare.sh PACKFS [RUNS]      (root: it bind-mounts the tree and mounts FUSE)
#   BLOCK=16K bench/remote_compare.sh ...      (the pack's block size; default 64K)
#   LAYOUT=walk bench/remote_compare.sh ...    (packfs build --layout; default inodes)
#   FIGURES=CD bench/remote_compare.sh ...     (only these figures; default ABCDE; D needs C)
#   READERS=1 bench/remote_compare.sh ...      (C's readers at once; default 8)
#   C_DIRECT=1 bench/remote_compare.sh ...     (C on plain loopback: straight to nginx, no link
#                                               emulator; also `packfs extract` of the URL)
#
# Figures (each the median of RUNS runs, default 3; the cache emptied before each cold run):
#   A. 20 ms RTT: mount + first `ls -lR`, against a pull (curl of the whole pack through the
#      same link) + a local mount + `ls -lR`.
#   B. 20 ms RTT: read 1% of the files (a seeded random choice, 16 readers at once), against
#      the pull; bytes fetched (nginx's log) against metadata + bytes read.
#   C. 5 ms RTT, 200 Mbit/s: read every file (tar of the mount, 8 files at once), against
#      curl of the whole pack through the same link.
#   D. warm: ls -lR and read-all of a fresh mount over a full cache (digest pinned: no request),
#      against the same pack mounted locally.
#   E. 0 ms: 8 mounts of the pack at once, each reading everything: ranges fetched twice.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/packfs-remote-bench-XXXXXX)
source "$here/../tests/support/nginx.sh"
emulator_pid=""
cleanup() {
    set +e
    [ -n "$emulator_pid" ] && kill "$emulator_pid" 2>/dev/null
    for m in $(awk -v w="$work" 'index($5, w "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        "$packfs" umount "$m" >/dev/null 2>&1 || umount -l "$m"
    done
    stop_nginx
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
log() { echo "[remote-bench] $*" >&2; }
figures=${FIGURES:-ABCDE}
want() { [[ $figures == *"$1"* ]]; }
want D && ! want C && { echo "remote_compare: figure D reads the cache C fills: FIGURES=CD" >&2; exit 2; }

# ---- the tree and its pack ------------------------------------------------------------------
mkdir -p "$work/tree/share" "$work/tree/include" "$work/www"
mount --bind /usr/share "$work/tree/share"
mount --bind /usr/include "$work/tree/include"
log "building the pack of /usr/share + /usr/include"
"$packfs" build --compress zstd --block-size "${BLOCK:-64K}" --layout "${LAYOUT:-inodes}" "$work/tree" "$work/www/tree.pack" >"$work/build.out"
umount "$work/tree/share" "$work/tree/include"
pack_bytes=$(stat -c %s "$work/www/tree.pack")
digest=$("$packfs" info --json "$work/www/tree.pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["digest"])')
meta_bytes=$("$packfs" info --json "$work/www/tree.pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["metadata_bytes"])')
start_nginx "$work/www" "$work/nginx"
link() {  # link RTT_MS RATE_MBIT: the emulator in front of nginx; sets LINK_URL
    [ -n "$emulator_pid" ] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null || true
    local port
    port=$(free_port)
    python3 "$here/link_emulator.py" --listen "$port" --upstream "127.0.0.1:$NGINX_PORT" \
        --rtt-ms "$1" --rate-mbit "$2" >"$work/emulator.out" 2>&1 &
    emulator_pid=$!
    for _ in $(seq 50); do grep -q ready "$work/emulator.out" 2>/dev/null && break; sleep 0.1; done
    LINK_URL="http://127.0.0.1:$port/tree.pack"
}
mnt="$work/mnt"
mkdir -p "$mnt" "$work/local"
remote_mount() { "$packfs" --cache "$work/cache" mount "$1" "$mnt"; }
drop() { "$packfs" umount "$mnt" >/dev/null; sync; echo 3 >/proc/sys/vm/drop_caches; }
fetched_bytes() { awk '$2 == "/tree.pack" { s += $4 } END { print s + 0 }' "$NGINX_DIR/access.log"; }
fetched_requests() { awk '$2 == "/tree.pack"' "$NGINX_DIR/access.log" | wc -l; }

# The 1% of files B reads, and their bytes.
(cd /usr && find share include -type f -size +0 | sort | awk 'BEGIN { srand(42) } rand() < 0.01') >"$work/sample"
sample_bytes=$(cd /usr && tr '\n' '\0' <"$work/sample" | xargs -0 stat -c %s | awk '{ s += $1 } END { print s }')

# ---- A and B: 20 ms, without a bandwidth cap (suffix 0) and at 200 Mbit/s (suffix 200) ----
ab() {
    local rate="$1"
    link 20 "$rate"
    : >"$work/A.remote.$rate"; : >"$work/A.pull.$rate"; : >"$work/B.remote.$rate"; : >"$work/B.fetched.$rate"; : >"$work/pull.$rate"
    for run in $(seq "$runs"); do
        log "A/B at $rate Mbit/s, run $run"
        rm -rf "$work/cache"; reset_nginx_log
        t0=$(now); remote_mount "$LINK_URL"; ls -lR "$mnt" >/dev/null; t1=$(now)
        echo "$t1 - $t0" | bc >>"$work/A.remote.$rate"; echo "$(fetched_requests) requests, $(fetched_bytes) bytes" >"$work/A.fetched.$rate"
        drop
        t0=$(now); curl -s -o "$work/pulled.pack" "$LINK_URL"; t1=$(now)
        echo "$t1 - $t0" | bc >>"$work/pull.$rate"
        "$packfs" mount "$work/pulled.pack" "$work/local"; ls -lR "$work/local" >/dev/null; t2=$(now)
        echo "$t2 - $t0" | bc >>"$work/A.pull.$rate"
        "$packfs" umount "$work/local"; rm -f "$work/pulled.pack"
        rm -rf "$work/cache"; reset_nginx_log
        t0=$(now); remote_mount "$LINK_URL"
        (cd "$mnt" && tr '\n' '\0' <"$work/sample" | xargs -0 -P 16 -n 4 cat >/dev/null); t1=$(now)
        echo "$t1 - $t0" | bc >>"$work/B.remote.$rate"; fetched_bytes >>"$work/B.fetched.$rate"
        drop
    done
}
if want A || want B; then
    ab 0
    ab 200
fi

# ---- C: 5 ms, 200 Mbit/s -------------------------------------------------------------------
if want C; then
if [ -n "${C_DIRECT:-}" ]; then LINK_URL="http://127.0.0.1:$NGINX_PORT/tree.pack"; else link 5 200; fi
: >"$work/C.remote"; : >"$work/C.curl"; : >"$work/C.extract"
for run in $(seq "$runs"); do
    log "C run $run"
    t0=$(now); curl -s -o /dev/null "$LINK_URL"; t1=$(now)
    echo "$t1 - $t0" | bc >>"$work/C.curl"
    rm -rf "$work/cache"; reset_nginx_log
    t0=$(now); remote_mount "$LINK_URL"
    (cd "$mnt" && find . -type f -print0 | xargs -0 -P "${READERS:-8}" -n 64 cat >/dev/null); t1=$(now)
    echo "$t1 - $t0" | bc >>"$work/C.remote"; echo "$(fetched_bytes)" >"$work/C.fetched"
    if [ -n "${C_DIRECT:-}" ]; then  # in process: no FUSE, the tree written to tmpfs
        rm -rf /dev/shm/packfs-remote-extract "$work/cache2"
        t0=$(now); "$packfs" --cache "$work/cache2" extract "$LINK_URL" /dev/shm/packfs-remote-extract
        t1=$(now); echo "$t1 - $t0" | bc >>"$work/C.extract"
        rm -rf /dev/shm/packfs-remote-extract "$work/cache2"
    fi
    [ "$run" = "$runs" ] || drop
done
"$packfs" umount "$mnt" >/dev/null
fi

# ---- D: warm (the cache C filled), against the local pack ------------------------------------
readall() { (cd "$1" && find . -type f -print0 | xargs -0 -P 8 -n 64 cat >/dev/null); }
if want D; then
: >"$work/D.ls.remote"; : >"$work/D.ls.local"; : >"$work/D.read.remote"; : >"$work/D.read.local"
for run in $(seq "$runs"); do
    log "D run $run"
    reset_nginx_log
    sync; echo 3 >/proc/sys/vm/drop_caches
    remote_mount "$LINK_URL#sha256:$digest"
    t0=$(now); ls -lR "$mnt" >/dev/null; t1=$(now); readall "$mnt"; t2=$(now)
    echo "$t1 - $t0" | bc >>"$work/D.ls.remote"; echo "$t2 - $t1" | bc >>"$work/D.read.remote"
    echo "$(fetched_requests)" >"$work/D.requests"
    "$packfs" umount "$mnt" >/dev/null
    sync; echo 3 >/proc/sys/vm/drop_caches
    "$packfs" mount "$work/www/tree.pack" "$work/local"
    t0=$(now); ls -lR "$work/local" >/dev/null; t1=$(now); readall "$work/local"; t2=$(now)
    echo "$t1 - $t0" | bc >>"$work/D.ls.local"; echo "$t2 - $t1" | bc >>"$work/D.read.local"
    "$packfs" umount "$work/local"
done
fi

# ---- E: 8 mounts at once, 0 ms -------------------------------------------------------------
if want E; then
link 0 0
rm -rf "$work/cache"; reset_nginx_log
for i in $(seq 8); do mkdir -p "$work/m$i"; "$packfs" --cache "$work/cache" mount "$LINK_URL" "$work/m$i"; done
t0=$(now)
readers=()
for i in $(seq 8); do readall "$work/m$i" & readers+=($!); done
wait "${readers[@]}"  # not the emulator, which never ends
t1=$(now)
for i in $(seq 8); do "$packfs" umount "$work/m$i"; done
twice=$(awk '$2 == "/tree.pack" && $5 ~ /bytes=/ && $5 != "\"bytes=0-511\"" { gsub(/"|bytes=/, "", $5); split($5, r, "-"); print r[1], r[2] }' \
    "$NGINX_DIR/access.log" | sort -n | awk 'NR > 1 && $1 <= last { n++ } { if ($2 > last) last = $2 } END { print n + 0 }')
e_bytes=$(fetched_bytes)
fi

mib() { echo "scale=1; $1 / 1048576" | bc; }
twice=${twice:-}; e_bytes=${e_bytes:-0}  # set -u: E's, when E did not run
# The rows of the figures run (the others' files do not exist: their errors are dropped).
c_link="5 ms RTT, 200 Mbit/s"
[ -z "${C_DIRECT:-}" ] || c_link="plain loopback"
only_wanted() {
    while IFS= read -r line; do
        case "$line" in
        "| "[A-E]". "*) if want "${line:2:1}"; then echo "$line"; fi ;;
        *) echo "$line" ;;
        esac
    done
}
{ cat <<EOF
remote_compare: pack of /usr/share + /usr/include, zstd ${BLOCK:-64K} blocks, ${LAYOUT:-inodes} layout: $(mib "$pack_bytes") MiB,
metadata $(mib "$meta_bytes") MiB; $(wc -l <"$work/sample") sampled files of $(mib "$sample_bytes") MiB; medians of $runs runs
| figure | PackFS remote | anchor | ratio |
| --- | --- | --- | --- |
| A. mount + ls -lR, 20 ms RTT | $(median <"$work/A.remote.0") s ($(cat "$work/A.fetched.0")) | pull + mount + ls -lR $(median <"$work/A.pull.0") s (pull alone $(median <"$work/pull.0") s) | $(echo "scale=1; $(median <"$work/A.pull.0") / $(median <"$work/A.remote.0")" | bc)x faster |
| A. the same at 200 Mbit/s | $(median <"$work/A.remote.200") s | $(median <"$work/A.pull.200") s (pull alone $(median <"$work/pull.200") s) | $(echo "scale=1; $(median <"$work/A.pull.200") / $(median <"$work/A.remote.200")" | bc)x faster |
| B. read 1% of the files, 20 ms RTT, 16 readers | $(median <"$work/B.remote.0") s, $(mib "$(median <"$work/B.fetched.0")") MiB fetched | pull $(median <"$work/pull.0") s; metadata + 1.5x read = $(mib "$((meta_bytes + sample_bytes * 3 / 2))") MiB | $(echo "scale=1; $(median <"$work/pull.0") / $(median <"$work/B.remote.0")" | bc)x faster |
| B. the same at 200 Mbit/s | $(median <"$work/B.remote.200") s, $(mib "$(median <"$work/B.fetched.200")") MiB fetched | pull $(median <"$work/pull.200") s | $(echo "scale=1; $(median <"$work/pull.200") / $(median <"$work/B.remote.200")" | bc)x faster |
| C. read every file, $c_link | $(median <"$work/C.remote") s ($(mib "$(cat "$work/C.fetched")") MiB fetched) | curl of the pack $(median <"$work/C.curl") s | $(echo "scale=2; $(median <"$work/C.curl") / $(median <"$work/C.remote")" | bc)x curl's throughput |
$([ -s "$work/C.extract" ] && echo "| C. packfs extract of the URL, plain loopback | $(median <"$work/C.extract") s | curl of the pack $(median <"$work/C.curl") s | $(echo "scale=2; $(median <"$work/C.curl") / $(median <"$work/C.extract")" | bc)x curl's throughput |")
| D. warm ls -lR | $(median <"$work/D.ls.remote") s ($(cat "$work/D.requests") requests) | local pack $(median <"$work/D.ls.local") s | $(echo "scale=2; $(median <"$work/D.ls.remote") / $(median <"$work/D.ls.local")" | bc)x local |
| D. warm read-all | $(median <"$work/D.read.remote") s | local pack $(median <"$work/D.read.local") s | $(echo "scale=2; $(median <"$work/D.read.remote") / $(median <"$work/D.read.local")" | bc)x local |
| E. 8 mounts at once, read-all, 0 ms | $(echo "$t1 - $t0" | bc) s, $(mib "$e_bytes") MiB fetched | pack $(mib "$pack_bytes") MiB | $twice ranges fetched twice |
EOF
} 2>/dev/null | only_wanted

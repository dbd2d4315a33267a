#!/usr/bin/env bash
# Remote packs with large metadata (docs/REMOTE.md "Latency", docs/BENCH.md "Metadata by block"):
# the metadata fetched whole at open against fetched by block as it is used, for two packs of
# N and 4N empty files (their metadata is all there is), served by nginx on 127.0.0.1 through
# bench/link_emulator.py at 20 ms RTT and 200 Mbit/s. Each command is a fresh `packfs` process
# with no cache (--cache none), so every run is cold.
#
#   bench/remote_metadata.sh PACKFS [RUNS] [N]     (RUNS default 3, N default 100000)
#
# Figures, medians of RUNS, with the requests and bytes nginx served:
#   stat: `packfs stat URL PATH` of one file: the open and one lookup.
#   ls -lR: `packfs ls -l -R URL /`: the open and every entry.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
runs=${2:-3}
n=${3:-100000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/packfs-remote-meta-XXXXXX)
source "$here/../tests/support/nginx.sh"
emulator_pid=""
cleanup() {
    set +e
    [ -n "$emulator_pid" ] && kill "$emulator_pid" 2>/dev/null
    stop_nginx
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
log() { echo "[remote-meta-bench] $*" >&2; }

# ---- the trees and their packs: N and 4N empty files, 1000 to a directory ------------------
mkdir -p "$work/www"
for count in "$n" $((4 * n)); do
    log "a tree of $count files"
    tree="$work/tree-$count"
    python3 - "$tree" "$count" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
for d in range((count + 999) // 1000):
    path = os.path.join(root, f"directory-{d:05d}")
    os.makedirs(path)
    for f in range(min(1000, count - d * 1000)):
        open(os.path.join(path, f"entry-{f:04d}-of-a-directory.txt"), "w").close()
PY
    "$packfs" build --compress zstd "$tree" "$work/www/p$count.pack" >/dev/null
    rm -rf "$tree"
done
start_nginx "$work/www" "$work/nginx"
port=$(free_port)
python3 "$here/link_emulator.py" --listen "$port" --upstream "127.0.0.1:$NGINX_PORT" \
    --rtt-ms 20 --rate-mbit 200 >"$work/emulator.out" 2>&1 &
emulator_pid=$!
for _ in $(seq 50); do grep -q ready "$work/emulator.out" 2>/dev/null && break; sleep 0.1; done

served() {  # served PACK: "requests bytes" nginx served of it
    awk -v p="/$1" '$2 == p { r++; s += $4 } END { print r + 0, s + 0 }' "$NGINX_DIR/access.log"
}
mib() { echo "scale=2; $1 / 1048576" | bc; }

rows=()
for count in "$n" $((4 * n)); do
    pack="p$count.pack"
    url="http://127.0.0.1:$port/$pack"
    stored=$("$packfs" info --json "$work/www/$pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["metadata_bytes"])')
    target="/directory-$(printf %05d $((count / 2000)))/entry-0421-of-a-directory.txt"
    for mode in whole block; do
        whole=$([ "$mode" = whole ] && echo 64G || echo 0)
        for what in stat ls; do
            : >"$work/times"
            for run in $(seq "$runs"); do
                log "$count files, metadata $mode, $what, run $run"
                reset_nginx_log
                t0=$(now)
                if [ "$what" = stat ]; then
                    "$packfs" --cache none --metadata-whole "$whole" stat "$url" "$target" >/dev/null
                else
                    "$packfs" --cache none --metadata-whole "$whole" ls -l -R "$url" / >/dev/null
                fi
                t1=$(now)
                echo "$t1 - $t0" | bc >>"$work/times"
            done
            read -r requests bytes < <(served "$pack")
            rows+=("| $count files ($(mib "$stored") MiB metadata) | $what | $mode | $(median <"$work/times") s | $requests | $(mib "$bytes") MiB |")
        done
    done
done
cat <<EOF
remote_metadata: packs of N and 4N empty files, zstd; 20 ms RTT, 200 Mbit/s; medians of $runs cold runs
| pack | command | metadata | time | requests | fetched |
| --- | --- | --- | --- | --- | --- |
EOF
printf '%s\n' "${rows[@]}"

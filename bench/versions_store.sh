#!/usr/bin/env bash
# Packs that share (docs/BENCH.md "Packs that share"): ten versions of a tree as a chain of packs,
# each built over the one before (`packfs build --base`), against self-contained packs, casync
# and borg stores of the same versions.
#
#   bench/versions_store.sh PACKFS VERSIONS [ROUNDS] [WORK]
#
# VERSIONS holds v0 .. vN (bench/make_versions.py makes them from a tree). All zstd (the pack's
# default level), 64 KiB chunks and blocks. Prints:
#   - the store: v0 self-contained and chunked, then each vK over v(K-1), summed, against one
#     self-contained pack of v0; casync's and borg's stores of all versions (their defaults),
#     when PEERS=1 (slow: minutes);
#   - the build of the last version over the one before against a full build of it (ROUNDS
#     alternated runs, medians);
#   - a read of every file of the last version through a fresh mount, page cache warm, the
#     chain's pack against the self-contained one (ROUNDS alternated, medians).
set -euo pipefail
packfs=$(realpath "$1")
versions=$(realpath "$2")
rounds=${3:-3}
work=${4:-/var/tmp/versions-store}
mkdir -p "$work"
last=$(ls -d "$versions"/v* | sed 's|.*/v||' | sort -n | tail -1)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
size() { stat -c %s "$1"; }

echo "== store: v0 .. v$last" >&2
rm -f "$work"/*.pack
"$packfs" build --compress zstd "$versions/v0" "$work/whole-v0.pack" >/dev/null
"$packfs" build --compress zstd --chunk-size 64K "$versions/v0" "$work/v0.pack" >/dev/null
total=$(size "$work/v0.pack")
for k in $(seq 1 "$last"); do
    "$packfs" build --compress zstd --base "$work/v$((k - 1)).pack" "$versions/v$k" "$work/v$k.pack" >/dev/null
    total=$((total + $(size "$work/v$k.pack")))
    echo "v$k: $(size "$work/v$k.pack") bytes" >&2
done
whole=$(size "$work/whole-v0.pack")
printf "| store | bytes | / one self-contained pack |\n| --- | --- | --- |\n"
printf "| one self-contained zstd pack of v0 | %d | 1.000 |\n" "$whole"
printf "| v0 chunked (self-contained) | %d | %.3f |\n" "$(size "$work/v0.pack")" "$(echo "$(size "$work/v0.pack") / $whole" | bc -l)"
printf "| packfs: v0 + v1..v%d each over the one before | %d | %.3f |\n" "$last" "$total" "$(echo "$total / $whole" | bc -l)"
if [ "${PEERS:-0}" = 1 ]; then
    rm -rf "$work/casync" "$work/borg"
    mkdir -p "$work/casync"
    for k in $(seq 0 "$last"); do
        casync make --store="$work/casync/store" "$work/casync/v$k.caidx" "$versions/v$k" >/dev/null
    done
    export BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
    borg init -e none "$work/borg" >/dev/null
    for k in $(seq 0 "$last"); do (cd "$versions/v$k" && borg create "$work/borg::v$k" .); done
    ca=$(du -sb "$work/casync/store" | cut -f1)
    bo=$(du -sb "$work/borg" | cut -f1)
    printf "| casync make, its defaults (64 KiB average chunks) | %d | %.3f |\n" "$ca" "$(echo "$ca / $whole" | bc -l)"
    printf "| borg create, its defaults (lz4; chunks of ~2 MiB average, cut per file) | %d | %.3f |\n" "$bo" "$(echo "$bo / $whole" | bc -l)"
fi

echo "== build of v$last: over v$((last - 1)) against whole" >&2
over=() full=()
for r in $(seq "$rounds"); do
    s=$(now); "$packfs" build --compress zstd --base "$work/v$((last - 1)).pack" "$versions/v$last" "$work/again.pack" >/dev/null; e=$(now)
    over+=("$(echo "$e - $s" | bc)")
    s=$(now); "$packfs" build --compress zstd --chunk-size 64K "$versions/v$last" "$work/full.pack" >/dev/null; e=$(now)
    full+=("$(echo "$e - $s" | bc)")
done
o=$(printf "%s\n" "${over[@]}" | median); f=$(printf "%s\n" "${full[@]}" | median)
printf "\n| build of v%d | seconds (median of %d) |\n| --- | --- |\n" "$last" "$rounds"
printf "| over v%d | %.2f |\n| whole | %.2f |\n| ratio | %.3f |\n" "$((last - 1))" "$o" "$f" "$(echo "$o / $f" | bc -l)"

echo "== read every file of v$last through a mount, warm" >&2
mnt="$work/mnt"
mkdir -p "$mnt"
read_all() {  # PACK: seconds for find | xargs cat through a fresh mount (after one warm-up)
    "$packfs" mount "$1" "$mnt"
    (cd "$mnt" && find . -type f -print0 | xargs -0 cat >/dev/null)
    local s e
    s=$(now)
    (cd "$mnt" && find . -type f -print0 | xargs -0 cat >/dev/null)
    e=$(now)
    "$packfs" umount "$mnt"
    echo "$e - $s" | bc
}
chain=() alone=()
for r in $(seq "$rounds"); do
    chain+=("$(read_all "$work/v$last.pack")")
    alone+=("$(read_all "$work/full.pack")")
done
c=$(printf "%s\n" "${chain[@]}" | median); a=$(printf "%s\n" "${alone[@]}" | median)
printf "\n| read-all of v%d, warm, through a mount | seconds (median of %d) |\n| --- | --- |\n" "$last" "$rounds"
printf "| built over v%d | %.3f |\n| self-contained | %.3f |\n| ratio | %.3f |\n" "$((last - 1))" "$c" "$a" "$(echo "$c / $a" | bc -l)"

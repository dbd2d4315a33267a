#!/usr/bin/env bash
# Cold reads of packs through a mount, one pack against another (block sizes, codecs, builds of
# packfs): per round and pack, a fresh `packfs mount` with the page cache dropped before and
# after it, then a random read of the files LIST names (NUL-separated, relative to the mount;
# each opened and read whole, by fuse_compare.sh's readlist helper when --readlist names it, else
# by `xargs -0 cat`), and again for a read of every file (`find | xargs cat`). Prints one line per run (wall seconds, the daemon's CPU seconds) and the medians.
# Run as root (drop_caches); not part of `make test`.
#
#   bench/cold_reads.sh [--packfs PATH] [--rounds N] [--readlist PATH] LIST PACK...
#
# The figures in docs/BENCH.md ("Compressed packs through a mount") used the list and the helper
# fuse_compare.sh leaves in its work directory (WORK/real.rand, WORK/bin/readlist) and packs built
# from its tree with `--block-size 32K/64K/128K`.
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
packfs=${PACKFS:-$here/../build/tools/cli/packfs}
rounds=3
readlist=""
while [ $# -gt 0 ]; do
  case "$1" in
    --packfs) packfs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --readlist) readlist=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: $0 [--packfs PATH] [--rounds N] LIST PACK..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "cold_reads: needs root (drop_caches)" >&2; exit 2; }
list=$(realpath "$1"); shift
mnt=$(mktemp -d)
results=$(mktemp)
trap 'mountpoint -q "$mnt" && "$packfs" umount "$mnt"; rmdir "$mnt"; rm -f "$results"' EXIT
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
daemon_cpu() {  # the CPU seconds of the daemon serving $mnt
  local p
  for p in $(pgrep -x packfs || true); do
    if tr '\0' '\n' < "/proc/$p/cmdline" 2>/dev/null | grep -qxF "$mnt"; then
      awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$p/stat"; return
    fi
  done
  echo "?"
}
for ((r = 0; r < rounds; r++)); do
  for pack in "$@"; do
    for w in random all; do
      drop; "$packfs" mount "$pack" "$mnt"; drop
      t0=$EPOCHREALTIME
      if [ "$w" = random ] && [ -n "$readlist" ]; then "$readlist" "$mnt" "$list"
      elif [ "$w" = random ]; then (cd "$mnt" && xargs -0 cat < "$list" > /dev/null)
      else find "$mnt" -type f -print0 | xargs -0 cat > /dev/null; fi
      t1=$EPOCHREALTIME
      cpu=$(daemon_cpu)
      "$packfs" umount "$mnt"
      secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
      echo "$(basename "$pack") $w ${secs} s, daemon CPU ${cpu} s"
      printf '%s\t%s\t%s\n' "$(basename "$pack")" "$w" "$secs" >> "$results"
    done
  done
done
echo "medians of $rounds:"
sort -k1,1 -k2,2 -k3,3n "$results" | awk -F'\t' '
  { k = $1 " " $2; v[k, ++n[k]] = $3 }
  END { for (k in n) printf "  %s %.3f s\n", k, v[k, int((n[k] + 1) / 2)] }' | sort

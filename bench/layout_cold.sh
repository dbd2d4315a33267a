#!/usr/bin/env bash
# Cold whole-tree reads of a pack in each layout (docs/BENCH.md, "Layout"): a raw and a zstd
# pack of TREE built with `--layout inodes` and `--layout walk` (the default), each mounted with
# `packfs mount`, against the kernel's erofs (loop mounts of `mkfs.erofs` images, uncompressed
# and lz4hc: its only codecs). Per round, target and workload: `sync; echo 3 >
# /proc/sys/vm/drop_caches`, a fresh mount, the workload timed, the unmount:
#   find-cat  `find MNT -type f -print0 | xargs -0 cat > /dev/null`
#   tar       `tar -C MNT -cf - . | cat > /dev/null` (GNU tar writing to /dev/null itself
#             reads no file contents, so its archive goes through a pipe)
# Rounds alternate the targets' order (round 2 reversed, ...). Prints every run and then the
# medians [min-max]; the raw runs are in WORK/results.tsv. Run by hand as root; not a test.
#
#   bench/layout_cold.sh PACKFS TREE [WORK] [ROUNDS]
#
# PACKFS   the packfs binary (copy it somewhere stable if another build may replace it)
# TREE     the tree to pack (e.g. a Linux source tree)
# WORK     scratch directory (default /var/tmp/packfs-layout-cold): packs, images, mount points
# ROUNDS   default 3
# TARGETS  (environment) a subset, space-separated, of the default
#          "raw-inodes raw-walk zstd-inodes zstd-walk erofs erofs-lz4hc"
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
tree=$(realpath "$2")
work=${3:-/var/tmp/packfs-layout-cold}
rounds=${4:-3}
read -r -a targets <<< "${TARGETS:-raw-inodes raw-walk zstd-inodes zstd-walk erofs erofs-lz4hc}"
[ "$(id -u)" = 0 ] || { echo "layout_cold.sh: needs root (mounts, drop_caches)" >&2; exit 2; }
mkdir -p "$work/mnt"
mnt="$work/mnt"
results="$work/results.tsv"
: > "$results"

unmount() {
    mountpoint -q "$mnt" || return 0
    case "$1" in
        erofs*) umount "$mnt" ;;
        *) "$packfs" umount "$mnt" ;;
    esac
}
trap 'unmount ${current:-x} 2>/dev/null || umount -l "$mnt" 2>/dev/null || true' EXIT

# The images, built once (rebuilt when missing).
for t in "${targets[@]}"; do
    img="$work/$t.img"
    [ -s "$img" ] && continue
    case "$t" in
        raw-inodes) "$packfs" build --layout inodes "$tree" "$img" > /dev/null ;;
        raw-walk) "$packfs" build --layout walk "$tree" "$img" > /dev/null ;;
        zstd-inodes) "$packfs" build --compress zstd --layout inodes "$tree" "$img" > /dev/null ;;
        zstd-walk) "$packfs" build --compress zstd --layout walk "$tree" "$img" > /dev/null ;;
        erofs) mkfs.erofs --quiet "$img" "$tree" ;;
        erofs-lz4hc) mkfs.erofs --quiet -zlz4hc "$img" "$tree" ;;
        *) echo "layout_cold.sh: unknown target $t" >&2; exit 2 ;;
    esac
    echo "built $t: $(stat -c %s "$img") bytes" >&2
done

mount_target() {
    case "$1" in
        erofs*) mount -t erofs -o loop,ro "$work/$1.img" "$mnt" ;;
        *) "$packfs" mount "$work/$1.img" "$mnt" ;;
    esac
}
run() {  # WORKLOAD
    case "$1" in
        find-cat) find "$mnt" -type f -print0 | xargs -0 cat > /dev/null ;;
        tar) tar -C "$mnt" -cf - . | cat > /dev/null ;;
    esac
}

for ((r = 1; r <= rounds; r++)); do
    order=("${targets[@]}")
    if ((r % 2 == 0)); then
        order=()
        for ((i = ${#targets[@]} - 1; i >= 0; i--)); do order+=("${targets[i]}"); done
    fi
    for t in "${order[@]}"; do
        for w in find-cat tar; do
            sync
            echo 3 > /proc/sys/vm/drop_caches
            current=$t
            mount_target "$t"
            start=$EPOCHREALTIME
            run "$w"
            end=$EPOCHREALTIME
            unmount "$t"
            current=
            s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
            printf '%s\t%s\t%s\t%s\n' "$t" "$w" "$r" "$s" | tee -a "$results"
        done
    done
done

echo
echo "median [min-max] of $rounds cold runs, seconds"
printf '%-12s %-24s %-24s\n' target find-cat tar
for t in "${targets[@]}"; do
    line=$(printf '%-12s' "$t")
    for w in find-cat tar; do
        cell=$(awk -F'\t' -v t="$t" -v w="$w" '$1 == t && $2 == w { print $4 }' "$results" | sort -n |
            awk '{ v[NR] = $1 } END { printf "%.2f [%.2f-%.2f]", v[int((NR + 1) / 2)], v[1], v[NR] }')
        line+=$(printf ' %-24s' "$cell")
    done
    echo "$line"
done

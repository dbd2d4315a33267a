#!/usr/bin/env bash
# Cold whole-tree reads of a pack in each layout (docs/BENCH.md, "Layout"): a raw and a zstd
# pack of TREE built with `--layout inodes` and `--layout walk` (the default), each mounted with
# `packfs mount`, against the kernel's erofs (loop mounts of `mkfs.erofs` images, uncompressed
# and lz4hc: its only codecs). Per round, target and workload: `sync; echo 3 >
# /proc/sys/vm/drop_caches`, a fresh mount, the workload timed, the unmount:
#   find-cat  `find MNT -type f -print0 | xargs -0 cat > /dev/null`
#   tar       `tar -C MNT -cf - . | cat > /dev/null` (GNU tar writing to /dev/null itself
#             reads no file contents, so its archive goes through a pipe)
# Rounds alternate the targets' order (round 2 reversed, ...). Each run also records the read
# requests (bios) and bytes its processes (the FUSE daemon included) sent to the disk under
# WORK or to erofs's loop device, from a cgroup v1 blkio group holding the script (only what
# the group issues: another job on the disk does not count). Prints every run and then the
# medians [min-max]; the raw runs are in WORK/results.tsv. Run by hand as root.
#
#   [TARGETS=...] [THROTTLE="IOPS MBPS"] bench/layout_cold.sh PACKFS TREE [WORK] [ROUNDS]
#
# PACKFS   the packfs binary (copy it somewhere stable if another build may replace it)
# TREE     the tree to pack (e.g. a Linux source tree)
# WORK     scratch directory (default /var/tmp/packfs-layout-cold): packs, images, mount points
# ROUNDS   default 3
# TARGETS  (environment) a subset, space-separated, of the default
#          "raw-inodes raw-walk zstd-inodes zstd-walk erofs erofs-lz4hc"
# THROTTLE (environment) caps the runs' reads at IOPS requests and MBPS MiB a second, e.g.
#          "1000 200", through that group, on WORK's disk and on erofs's loop device
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
disk=$(basename "$(df --output=source "$work" | tail -1)")
[ -r "/sys/class/block/$disk/dev" ] || { echo "layout_cold.sh: $work is on no block device" >&2; exit 2; }
blkio=/sys/fs/cgroup/blkio/packfs-layout-cold
[ -d /sys/fs/cgroup/blkio ] || { echo "layout_cold.sh: needs cgroup v1 blkio" >&2; exit 2; }
mkdir -p "$blkio"
echo $$ > "$blkio/cgroup.procs"
# A rule on a device turns the group's accounting on there: without THROTTLE one that never binds.
iops=1000000000 mbps=
[ -z "${THROTTLE:-}" ] || read -r iops mbps <<< "$THROTTLE"
throttle() {  # MAJ:MIN
    echo "$1 $iops" > "$blkio/blkio.throttle.read_iops_device"
    [ -z "$mbps" ] || echo "$1 $((mbps << 20))" > "$blkio/blkio.throttle.read_bps_device"
}
throttle "$(cat "/sys/class/block/$disk/dev")"
issued() {  # FILE: the group's reads, summed over its devices
    awk '$2 == "Read" { n += $3 } END { printf "%.0f\n", n }' "$blkio/$1"
}

loop=
unmount() {
    mountpoint -q "$mnt" || return 0
    case "$1" in
        erofs*) umount "$mnt"; losetup -d "$loop" 2>/dev/null || true ;;
        *) "$packfs" umount "$mnt" ;;
    esac
}
cleanup() {
    unmount "${current:-x}" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
    echo $$ > /sys/fs/cgroup/blkio/cgroup.procs
    rmdir "$blkio" 2>/dev/null || true
}
trap cleanup EXIT

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
        erofs*)
            loop=$(losetup -f --show -r "$work/$1.img")
            throttle "$(cat "/sys/class/block/$(basename "$loop")/dev")"
            mount -t erofs -o ro "$loop" "$mnt"
            ;;
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
            reads=$(issued blkio.throttle.io_serviced)
            bytes=$(issued blkio.throttle.io_service_bytes)
            start=$EPOCHREALTIME
            run "$w"
            end=$EPOCHREALTIME
            reads=$(($(issued blkio.throttle.io_serviced) - reads))
            bytes=$(($(issued blkio.throttle.io_service_bytes) - bytes))
            unmount "$t"
            current=
            s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$w" "$r" "$s" "$reads" $((bytes >> 20)) |
                tee -a "$results"
        done
    done
done

median() {  # TARGET WORKLOAD FIELD FORMAT: the median [min-max] of a column
    awk -F'\t' -v t="$1" -v w="$2" -v f="$3" '$1 == t && $2 == w { print $f }' "$results" |
        sort -n | awk -v fmt="$4" '{ v[NR] = $1 }
            END { printf fmt " [" fmt "-" fmt "]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
echo
echo "median [min-max] of $rounds cold runs${THROTTLE:+, reads capped at $THROTTLE}: seconds; read requests"
printf '%-12s %-22s %-22s %-22s %-22s\n' target find-cat "  reads" tar "  reads"
for t in "${targets[@]}"; do
    printf '%-12s %-22s %-22s %-22s %-22s\n' "$t" "$(median "$t" find-cat 4 %.2f)" \
        "$(median "$t" find-cat 5 %d)" "$(median "$t" tar 4 %.2f)" "$(median "$t" tar 5 %d)"
done

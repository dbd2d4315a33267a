#!/usr/bin/env bash
# The FUSE driver's read-only mounts against the peers (record results as docs/BENCH.md
# does): `packfs mount PACK` against squashfuse, the kernel's squashfs and erofs (loop
# mounts) and the source directory itself, on two trees: a realistic one (a copy of
# /usr/share and /usr/include, made once in the work directory and reused) and a synthetic
# one (20,000 files of 128 bytes, 200 dirs x 100 files). Separately, a read-write PackFS
# volume against a host directory: create N empty files in one directory, then `rm -rf` it,
# at N = 250,000 and 1,000,000 (durability explicit; batch, the default, at 5,000 and 20,000).
# Run by hand as root (mounts, loop devices, drop_caches); not part of `make test`.
#
#   bench/fuse_compare.sh [--packfs PATH] [--runs N] [--volume-runs N] [--work DIR]
#                         [--source DIR]... [--fresh-tree] [--quick] [--only ITEMS]
#                         [--volume-sizes N,N] [--batch-sizes N,N] [--volume-peers LIST]
#                         [--append] [--report-only] [--compressed]
#
# --packfs       the packfs binary (default build/tools/cli/packfs beside this script, or
#                $PACKFS); copy it somewhere stable first if another build may replace it
# --runs         rounds of every read-only figure (default 3), interleaved: round 1 in the
#                order below, round 2 reversed, and so on; each figure is the median [min-max]
# --volume-runs  rounds of the volume section (default 1: a million creates take minutes)
# --work         scratch directory (default ${TMPDIR:-/tmp}/packfs-fuse-compare): trees,
#                images, mount points, results.tsv
# --source       directories copied into the realistic tree (default /usr/share /usr/include)
# --fresh-tree   copy the realistic tree again
# --quick        smaller everything: /usr/include only, 2,000 synthetic files (20 x 100), 2,000
#                random reads, volume sizes 25,000 and 100,000
# --only         comma-separated: peers (packfs, squashfuse, squashfs, erofs, dir) and/or
#                sections (real, synth, big, volume); a kind left out means all of that kind.
#                `big` is the mount time of 4x trees (synthetic 80,000 files; the realistic
#                tree four times over, as hard links); `volume` the create/rm section
# --volume-sizes N of the volume with durability explicit and the host directory (default
#                250000,1000000)
# --batch-sizes  N of the volume with durability batch, the default of `packfs volume init`,
#                and the host directory (default 5000,20000): in batch mode one thread alone
#                pays an fdatasync per mutation (docs/VOLUME.md), 0.1 to 2 ms each on this
#                VM's disk, so a million serial creates would take from minutes to over half
#                an hour
# --volume-peers the volume section's peers (default vol-batch,vol-explicit,host)
# --append       keep the rows of results.tsv from an earlier run (e.g. one --only section)
# --report-only  print the tables again from WORK/results.tsv
# --compressed   every image compressed, as a user who wants small images builds them: the
#                pack with zstd (`packfs build --compress zstd`, 64 KiB blocks, the default), a second pack
#                with lz4 (peer packfs-lz4), squashfs with zstd (mksquashfs -comp zstd, for the
#                kernel and squashfuse), erofs with lz4hc (mkfs.erofs -zlz4hc); results in
#                WORK/results-compressed.tsv, images and trees shared with the raw runs
#
# Without --compressed every image is uncompressed (packfs build; mksquashfs -noI -noId -noD
# -noF -noX; mkfs.erofs), so the figures compare the filesystems and not the codecs. Per tree, round and
# peer there are three mounts, one per workload, each preceded by `sync; echo 3 >
# /proc/sys/vm/drop_caches` and followed by another drop, then the workload cold and at once
# warm:
#   ls -lR     `ls -lR MNT > /dev/null`
#   read-all   `find MNT -type f -print0 | xargs -0 cat > /dev/null`
#   random     a fixed shuffled list of 20,000 regular files of at most 64 KiB (all files for
#              the synthetic tree), each opened and read whole by a small C helper (or
#              `xargs -0 cat` if there is no C compiler), the same for every peer
# "mount" is the wall time of the mount command (a FUSE daemon returns once the mount is
# usable) with the image's pages dropped (the tools' binaries are read back in first);
# "mount warm" three more mounts with the image cached.
# "peak RSS" is VmHWM of the FUSE daemon (packfs, squashfuse) after the random workload plus
# an untimed ls -lR and read-all in the same mount; beside it RssAnon and RssFile at that
# point (a daemon that maps its image counts the mapped page-cache pages it touched as RSS).
# "requests per file" (PackFS only, first round, untimed): a mount with the request log on
# (`packfs mount -d`), the page cache dropped, then read-all (its listing included) or the
# random workload; every request the daemon got, over the files read. The source directory has no mount: its
# cold runs only follow the drop.
# Volume section: `packfs volume init` + `packfs mount`; the C helper creates f0000000.. with
# open(O_CREAT|O_EXCL) + close in one directory, then `rm -rf`; "settle" is `sync` for the host
# directory and `packfs umount` (which waits until the journal is synced) for the volume.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
packfs=${PACKFS:-$here/../build/tools/cli/packfs}
runs=3
vol_runs=1
work=${TMPDIR:-/tmp}/packfs-fuse-compare
sources=()
fresh=0
quick=0
only=""
vol_sizes_arg=""
vol_peers_arg="vol-batch,vol-explicit,host"
batch_sizes_arg=""
append=0
report_only=0
compressed=0

die() { echo "fuse_compare: $*" >&2; exit 2; }
note() { echo "$*" >&2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --packfs) packfs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --volume-runs) vol_runs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --source) sources+=("$2"); shift 2 ;;
    --fresh-tree) fresh=1; shift ;;
    --quick) quick=1; shift ;;
    --only) only=$2; shift 2 ;;
    --volume-sizes) vol_sizes_arg=$2; shift 2 ;;
    --volume-peers) vol_peers_arg=$2; shift 2 ;;
    --batch-sizes) batch_sizes_arg=$2; shift 2 ;;
    --append) append=1; shift ;;
    --report-only) report_only=1; shift ;;
    --compressed) compressed=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive number"
[[ "$vol_runs" =~ ^[1-9][0-9]*$ ]] || die "--volume-runs must be a positive number"
if [ ${#sources[@]} -eq 0 ]; then
  if [ "$quick" = 1 ]; then sources=(/usr/include); else sources=(/usr/share /usr/include); fi
fi
if [ "$quick" = 1 ]; then
  synth_dirs=20; rand_n=2000; vol_sizes=(25000 100000); batch_sizes=(1000 4000); qsuffix=-quick
else
  synth_dirs=200; rand_n=20000; vol_sizes=(250000 1000000); batch_sizes=(5000 20000); qsuffix=""
fi
[ -n "$vol_sizes_arg" ] && vol_sizes=(${vol_sizes_arg//,/ })
[ -n "$batch_sizes_arg" ] && batch_sizes=(${batch_sizes_arg//,/ })
synth_files=100   # per directory
synth_size=128

all_peers=(packfs squashfuse squashfs erofs dir)
[ "$compressed" = 0 ] || all_peers=(packfs packfs-lz4 squashfuse squashfs erofs)
all_sections=(real synth big volume)
peers=(); sections=()
for item in ${only//,/ }; do
  if [[ " ${all_peers[*]} " == *" $item "* ]]; then peers+=("$item")
  elif [[ " ${all_sections[*]} " == *" $item "* ]]; then sections+=("$item")
  else die "--only: unknown peer or section '$item' (peers: ${all_peers[*]}; sections: ${all_sections[*]})"
  fi
done
[ ${#peers[@]} -gt 0 ] || peers=("${all_peers[@]}")
[ ${#sections[@]} -gt 0 ] || sections=("${all_sections[@]}")
has_section() { [[ " ${sections[*]} " == *" $1 "* ]]; }

mkdir -p "$work"
work=$(cd "$work" && pwd)
results=$work/results.tsv
[ "$compressed" = 0 ] || results=$work/results-compressed.tsv
zsuffix=""   # the images' names
[ "$compressed" = 0 ] || zsuffix=-z
mnt_root=$work/mnt
images=$work/images
bin=$work/bin

# --- the tools --------------------------------------------------------------------------
if [ "$report_only" = 0 ]; then
  [ "$(id -u)" = 0 ] || die "needs root (loop mounts, FUSE mounts, /proc/sys/vm/drop_caches)"
  [ -x "$packfs" ] || die "no packfs binary at $packfs (build it, or pass --packfs)"
  packfs=$(cd "$(dirname "$packfs")" && pwd)/$(basename "$packfs")
  "$packfs" mount --help >/dev/null 2>&1 || die "$packfs has no 'mount' subcommand (built without FUSE?)"
  [ -c /dev/fuse ] || die "/dev/fuse is missing (modprobe fuse), so no FUSE mount can work"
  kernel_fs() { grep -qw "$1" /proc/filesystems || modprobe "$1" 2>/dev/null; }
  missing=()
  usable=()
  for p in "${peers[@]}"; do
    why=""
    case "$p" in
      squashfuse) command -v squashfuse >/dev/null || why="squashfuse (apt install squashfuse)"
                  command -v mksquashfs >/dev/null || why="${why:+$why, }mksquashfs (squashfs-tools)" ;;
      squashfs) command -v mksquashfs >/dev/null || why="mksquashfs (squashfs-tools)"
                kernel_fs squashfs || why="${why:+$why, }the kernel's squashfs"
                command -v losetup >/dev/null || why="${why:+$why, }losetup" ;;
      erofs) command -v mkfs.erofs >/dev/null || why="mkfs.erofs (erofs-utils)"
             kernel_fs erofs || why="${why:+$why, }the kernel's erofs"
             command -v losetup >/dev/null || why="${why:+$why, }losetup" ;;
    esac
    if [ -n "$why" ]; then missing+=("$p: needs $why"); else usable+=("$p"); fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    note "fuse_compare: skipping peers whose tools are missing:"
    for m in "${missing[@]}"; do note "  $m"; done
  fi
  peers=("${usable[@]}")
  [[ " ${peers[*]} " == *" packfs "* ]] || note "fuse_compare: packfs is not among the peers: no ratios"
  cc=$(command -v cc || command -v gcc || true)
  [ -n "$cc" ] || note "fuse_compare: no C compiler: random reads use xargs -0 cat, creates use xargs touch"
fi

# --- cleanup: every mount this script made ----------------------------------------------
pid_of_mount() {  # MNT: the pid of the FUSE daemon whose command line names MNT
  local p c
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    c=$( { tr '\0' '\n' < "$p/cmdline"; } 2>/dev/null) || continue
    case "$c" in *packfs*|*squashfuse*) ;; *) continue ;; esac
    if grep -qxF "$1" <<< "$c"; then echo "${p#/proc/}"; return 0; fi
  done
  return 1
}
wait_gone() {  # PID: wait up to 10 s for the process to exit
  local i
  for ((i = 0; i < 1000; i++)); do [ -d "/proc/$1" ] || return 0; sleep 0.01; done
  note "  warning: process $1 still alive 10 s after its unmount"
}
cleanup() {
  local m pid img
  [ -d "$mnt_root" ] || return 0
  for m in "$mnt_root"/*; do
    [ -d "$m" ] || continue
    if mountpoint -q "$m"; then
      pid=$(pid_of_mount "$m" || true)
      umount "$m" 2>/dev/null || fusermount -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
      [ -n "$pid" ] && wait_gone "$pid"
    fi
  done
  for img in "$images"/*; do
    [ -f "$img" ] || continue
    losetup -j "$img" 2>/dev/null | cut -d: -f1 | while read -r dev; do losetup -d "$dev" || true; done
  done
}
[ "$report_only" = 1 ] || trap cleanup EXIT
trap 'exit 130' INT TERM

# --- helpers ------------------------------------------------------------------------------
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.6f", b - a}'; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$results"; }   # TREE PEER METRIC ROUND VALUE
info() { awk -F'\t' -v t="$1" -v k="$2" '$1 == t && $2 == "info" && $3 == k {v = $5} END {print v}' "$results"; }
rounds_order() {  # round index -> the items in this round's order
  local r=$1; shift
  if [ $((r % 2)) = 0 ]; then printf '%s\n' "$@"; else printf '%s\n' "$@" | tac; fi
}

build_helpers() {
  mkdir -p "$bin"
  [ -n "$cc" ] || return 0
  cat > "$bin/readlist.c" <<'EOF'
/* readlist BASE LIST: chdir(BASE), then open, read whole and close every NUL-separated
 * relative path of LIST. Exit 1 if any file could not be read. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char** argv) {
    if (argc != 3) { fprintf(stderr, "usage: readlist BASE LIST\n"); return 2; }
    FILE* f = fopen(argv[2], "r");
    if (!f) { perror(argv[2]); return 2; }
    static char buf[1 << 16];
    char* line = NULL; size_t cap = 0; ssize_t n; long files = 0, bad = 0;
    if (chdir(argv[1]) != 0) { perror(argv[1]); return 2; }
    while ((n = getdelim(&line, &cap, '\0', f)) > 0) {
        if (line[n - 1] == '\0') n--;
        if (n == 0) continue;
        int fd = open(line, O_RDONLY);
        if (fd < 0) { bad++; continue; }
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0) {}
        if (r < 0) bad++;
        close(fd);
        files++;
    }
    if (bad) { fprintf(stderr, "readlist: %ld of %ld files failed\n", bad, files + bad); return 1; }
    return 0;
}
EOF
  cat > "$bin/mkfiles.c" <<'EOF'
/* mkfiles DIR N: mkdir DIR, then N empty files f0000000.. in it (open O_CREAT|O_EXCL, close). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char** argv) {
    if (argc != 3) { fprintf(stderr, "usage: mkfiles DIR N\n"); return 2; }
    long n = atol(argv[2]);
    if (mkdir(argv[1], 0755) != 0) { perror(argv[1]); return 1; }
    int dir = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (dir < 0) { perror(argv[1]); return 1; }
    char name[32];
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "f%07ld", i);
        int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) { perror(name); return 1; }
        close(fd);
    }
    return 0;
}
EOF
  "$cc" -O2 -o "$bin/readlist" "$bin/readlist.c"
  "$cc" -O2 -o "$bin/mkfiles" "$bin/mkfiles.c"
}
read_list() {  # BASE LIST
  if [ -x "$bin/readlist" ]; then "$bin/readlist" "$1" "$2"
  else (cd "$1" && xargs -0 cat < "$2" > /dev/null); fi
}
make_files() {  # DIR N
  if [ -x "$bin/mkfiles" ]; then "$bin/mkfiles" "$1" "$2"
  else mkdir "$1" && seq -f "$1/f%07g" 0 $(($2 - 1)) | xargs -n 10000 touch; fi
}

# --- trees --------------------------------------------------------------------------------
real_tree=$work/real$qsuffix
synth_tree=$work/synth$qsuffix
synth4_tree=$work/synth4$qsuffix
real4_tree=$work/real4$qsuffix
tree_path() {
  case "$1" in real) echo "$real_tree" ;; synth) echo "$synth_tree" ;;
    synth4) echo "$synth4_tree" ;; real4) echo "$real4_tree" ;; esac
}
make_real() {
  local stamp="${sources[*]}"
  if [ "$fresh" = 1 ] || [ ! -f "$real_tree.done" ] || [ "$(cat "$real_tree.done")" != "$stamp" ]; then
    rm -rf "$real_tree" "$real_tree.done"
    mkdir -p "$real_tree"
    for s in "${sources[@]}"; do
      note "copying $s into $real_tree/$(basename "$s") ..."
      cp -a "$s" "$real_tree/$(basename "$s")"
    done
    echo "$stamp" > "$real_tree.done"
  fi
}
make_synth() {  # DIR NDIRS: NDIRS x 100 files of 128 bytes, every file different
  local dir=$1 nd=$2 stamp="$2 x $synth_files x $synth_size" d f
  [ -f "$dir.done" ] && [ "$(cat "$dir.done")" = "$stamp" ] && return 0
  note "making $dir ($nd x $synth_files files of $synth_size bytes) ..."
  rm -rf "$dir" "$dir.done"
  for ((d = 0; d < nd; d++)); do
    mkdir -p "$dir/d$d"
    for ((f = 0; f < synth_files; f++)); do
      printf '%-127s\n' "synthetic file $f of directory $d" > "$dir/d$d/f$f"
    done
  done
  echo "$stamp" > "$dir.done"
}
make_real4() {  # the realistic tree four times over, as hard links
  local stamp="4 x $(cat "$real_tree.done")" i
  [ -f "$real4_tree.done" ] && [ "$(cat "$real4_tree.done")" = "$stamp" ] && return 0
  note "making $real4_tree (4 hard-linked copies of $real_tree) ..."
  rm -rf "$real4_tree" "$real4_tree.done"
  mkdir -p "$real4_tree"
  for i in 0 1 2 3; do cp -al "$real_tree" "$real4_tree/copy$i"; done
  echo "$stamp" > "$real4_tree.done"
}
describe_tree() {  # TREE: one line of counts, also recorded as info rows
  local t=$1 dir entries files dirs links bytes
  dir=$(tree_path "$t")
  entries=$(find "$dir" -mindepth 1 | wc -l)
  files=$(find "$dir" -type f | wc -l)
  dirs=$(find "$dir" -mindepth 1 -type d | wc -l)
  links=$(find "$dir" -type l | wc -l)
  bytes=$(find "$dir" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
  record "$t" info entries 0 "$entries"; record "$t" info files 0 "$files"
  record "$t" info dirs 0 "$dirs"; record "$t" info symlinks 0 "$links"; record "$t" info bytes 0 "$bytes"
}

# --- images and mounts --------------------------------------------------------------------
needs_image() {  # PEER -> the image kind, or nothing
  case "$1" in packfs) echo pack ;; packfs-lz4) echo pack-lz4 ;; squashfuse|squashfs) echo sqfs ;;
    erofs) echo erofs ;; esac
}
build_images() {  # TREE
  local t=$1 dir kinds=() k p t0 t1 img
  dir=$(tree_path "$t")
  for p in "${peers[@]}"; do
    k=$(needs_image "$p"); [ -n "$k" ] && [[ " ${kinds[*]-} " != *" $k "* ]] && kinds+=("$k")
  done
  mkdir -p "$images"
  for k in ${kinds[@]+"${kinds[@]}"}; do
    img=$images/$t$zsuffix.$k
    rm -f "$img"
    t0=$(now)
    local z=()
    case "$k" in
      pack) [ "$compressed" = 0 ] || z=(--compress zstd)
            "$packfs" build "${z[@]}" "$dir" "$img" ;;
      pack-lz4) "$packfs" build --compress lz4 "$dir" "$img" ;;
      sqfs) # every synthetic file differs, and mksquashfs's duplicate check is quadratic in
            # files of one size (76 s for 80,000 files of 128 bytes): skip it there
            local dup=(); case "$t" in synth*) dup=(-no-duplicates) ;; esac
            z=(-noI -noId -noD -noF -noX); [ "$compressed" = 0 ] || z=(-comp zstd)
            mksquashfs "$dir" "$img" "${z[@]}" "${dup[@]}" -noappend -quiet -no-progress ;;
      erofs) [ "$compressed" = 0 ] || z=(-zlz4hc)
             mkfs.erofs --quiet "${z[@]}" "$img" "$dir" ;;
    esac > "$work/last.log" 2>&1 || { cat "$work/last.log" >&2; die "building the $k image of $t failed"; }
    t1=$(now)
    record "$t" "$k" image-bytes 0 "$(stat -c %s "$img")"
    record "$t" "$k" image-build-s 0 "$(elapsed "$t0" "$t1")"
    note "  $t: $k image $(stat -c %s "$img") bytes in $(elapsed "$t0" "$t1") s"
  done
}
where() {  # PEER TREE -> the directory the workloads run in
  if [ "$1" = dir ]; then tree_path "$2"; else echo "$mnt_root/$1"; fi
}
mount_peer() {  # PEER TREE
  local m=$mnt_root/$1
  case "$1" in
    packfs) "$packfs" mount "$images/$2$zsuffix.pack" "$m" ;;
    packfs-lz4) "$packfs" mount "$images/$2$zsuffix.pack-lz4" "$m" ;;
    squashfuse) squashfuse "$images/$2$zsuffix.sqfs" "$m" ;;
    squashfs) mount -t squashfs -o loop,ro "$images/$2$zsuffix.sqfs" "$m" ;;
    erofs) mount -t erofs -o loop,ro "$images/$2$zsuffix.erofs" "$m" ;;
    dir) ;;
  esac
}
umount_peer() {  # PEER
  local m=$mnt_root/$1 pid=""
  case "$1" in
    dir) return 0 ;;
    packfs|packfs-lz4) pid=$(pid_of_mount "$m" || true); "$packfs" umount "$m" ;;
    squashfuse) pid=$(pid_of_mount "$m" || true); umount "$m" ;;
    *) umount "$m" ;;
  esac
  [ -z "$pid" ] || wait_gone "$pid"
}
status_kb() {  # PEER FIELD: a kB field of its daemon's /proc/PID/status
  local pid
  pid=$(pid_of_mount "$mnt_root/$1") || return 1
  awk -v f="$2:" '$1 == f {print $2}' "/proc/$pid/status"
}
hwm_kb() { status_kb "$1" VmHWM; }  # PEER: VmHWM of its daemon, in kB
warm_tools() {  # the mount commands' binaries and libraries back in the page cache
  "$packfs" --help > /dev/null 2>&1 || true
  squashfuse --help > /dev/null 2>&1 || true
  mount --version > /dev/null 2>&1 || true
}
timed_mount() {  # PEER TREE ROUND METRIC: mount, record its wall time
  local t0 t1
  warm_tools
  t0=$(now)
  mount_peer "$1" "$2" || die "mounting $2 with $1 failed"
  t1=$(now)
  [ "$1" = dir ] || record "$2" "$1" "$4" "$3" "$(elapsed "$t0" "$t1")"
}
workload() {  # NAME DIR LIST
  case "$1" in
    lsR) ls -lR "$2" > /dev/null ;;
    cat) find "$2" -type f -print0 | xargs -0 -r cat > /dev/null ;;
    rand) read_list "$2" "$3" ;;
  esac
}
timed_workload() {  # TREE PEER ROUND NAME DIR LIST
  local t0 t1 rc=0
  t0=$(now)
  workload "$4" "$5" "$6" || rc=$?
  t1=$(now)
  [ "$rc" = 0 ] || note "  warning: $4 on $2 exited with $rc"
  record "$1" "$2" "$4-$7" "$3" "$(elapsed "$t0" "$t1")"
  printf ' %s-%s %.3f' "$4" "$7" "$(elapsed "$t0" "$t1")" >&2
}

# Requests per file (PackFS peers): a mount with the request log on, the workload cold, the
# requests it took over the files it read. Untimed (the log slows the daemon).
count_requests() {  # TREE PEER WORKLOAD LIST FILES
  local m=$mnt_root/$2 log=$work/requests.log img n0 n1
  case "$2" in packfs) img=$images/$1$zsuffix.pack ;; packfs-lz4) img=$images/$1$zsuffix.pack-lz4 ;; *) return 0 ;; esac
  drop
  "$packfs" mount -d "$img" "$m" 2> "$log" &
  for ((n0 = 0; n0 < 200; n0++)); do mountpoint -q "$m" && break; sleep 0.05; done
  mountpoint -q "$m" || { cat "$log" >&2; die "mounting $img with the request log failed"; }
  n0=$(grep -ac "opcode: " "$log" || true)
  workload "$3" "$m" "$4" || note "  warning: $3 on $2 (request log) failed"
  n1=$(grep -ac "opcode: " "$log" || true)
  "$packfs" umount "$m"
  wait
  record "$1" "$2" "req-$3" 0 "$(awk -v n=$((n1 - n0)) -v f="$5" 'BEGIN {printf "%.4f", n / f}')"
}

# --- the read-only section: one tree ------------------------------------------------------
run_tree() {  # TREE
  local t=$1 dir list r p w m kb i
  dir=$(tree_path "$t")
  list=$work/$t$qsuffix.rand
  find "$dir" -type f -size -65k -printf '%P\0' | sort -z |
    shuf -z -n "$rand_n" --random-source=<(yes 20000) > "$list"
  record "$t" info random-files 0 "$(tr -cd '\0' < "$list" | wc -c)"
  build_images "$t"
  note "$t: ${peers[*]}; $runs rounds, interleaved"
  for ((r = 0; r < runs; r++)); do
    while read -r p; do
      m=$(where "$p" "$t")
      mkdir -p "$mnt_root/$p"
      printf '  round %d %s:' $((r + 1)) "$p" >&2
      for w in lsR cat rand; do
        drop
        timed_mount "$p" "$t" "$r" mount
        if [ "$r" = 0 ] && [ "$w" = lsR ]; then   # once: the peer shows the whole tree
          i=$(find "$m" -mindepth 1 | wc -l)
          [ "$i" = "$(awk -F'\t' -v t="$t" '$1 == t && $3 == "entries" {print $5; exit}' "$results")" ] ||
            note "  warning: $p shows $i entries of $t"
        fi
        drop
        timed_workload "$t" "$p" "$r" "$w" "$m" "$list" cold
        timed_workload "$t" "$p" "$r" "$w" "$m" "$list" warm
        if [ "$w" = rand ] && kb=$(hwm_kb "$p"); then
          record "$t" "$p" rss-rand-kb "$r" "$kb"
          workload lsR "$m" ""; workload cat "$m" ""
          record "$t" "$p" rss-kb "$r" "$(hwm_kb "$p")"
          record "$t" "$p" rss-anon-kb "$r" "$(status_kb "$p" RssAnon)"
          record "$t" "$p" rss-file-kb "$r" "$(status_kb "$p" RssFile)"
        fi
        umount_peer "$p"
      done
      for i in 1 2 3; do timed_mount "$p" "$t" "$r" mount-warm; umount_peer "$p"; done
      if [ "$r" = 0 ]; then
        count_requests "$t" "$p" cat "" "$(info "$t" files)"
        count_requests "$t" "$p" rand "$list" "$(info "$t" random-files)"
      fi
      echo >&2
    done < <(rounds_order "$r" "${peers[@]}")
  done
}

# Mount time at N and 4N entries: the images of the big trees, mounted 3 times a round.
run_big() {  # TREE
  local t=$1 r p i
  build_images "$t"
  note "$t: mount time; $runs rounds, interleaved"
  for ((r = 0; r < runs; r++)); do
    while read -r p; do
      [ "$p" = dir ] && continue
      mkdir -p "$mnt_root/$p"
      for i in 1 2 3; do
        drop
        timed_mount "$p" "$t" "$r" mount
        umount_peer "$p"
        timed_mount "$p" "$t" "$r" mount-warm
        umount_peer "$p"
      done
    done < <(rounds_order "$r" "${peers[@]}")
  done
}

# --- the volume section -------------------------------------------------------------------
run_volume() {
  local vpeers=() n r p d t0 t1 t2 t3 m=$mnt_root/volume vol=$work/volume host=$work/host kb
  for p in ${vol_peers_arg//,/ }; do
    case "$p" in vol-batch|vol-explicit|host) vpeers+=("$p") ;;
      *) die "--volume-peers: unknown peer '$p' (vol-batch, vol-explicit, host)" ;; esac
  done
  mkdir -p "$m"
  local sizes=($(printf '%s\n' "${batch_sizes[@]}" "${vol_sizes[@]}" | sort -nu)) here=()
  note "volume: ${vpeers[*]}; vol-batch at N = ${batch_sizes[*]}, vol-explicit at ${vol_sizes[*]}, host at both; $vol_runs rounds, interleaved"
  for n in "${sizes[@]}"; do
    here=()
    for p in "${vpeers[@]}"; do
      case "$p" in
        vol-batch) [[ " ${batch_sizes[*]} " == *" $n "* ]] && here+=("$p") ;;
        vol-explicit) [[ " ${vol_sizes[*]} " == *" $n "* ]] && here+=("$p") ;;
        host) here+=("$p") ;;
      esac
    done
    [ ${#here[@]} -gt 0 ] || continue
    for ((r = 0; r < vol_runs; r++)); do
      while read -r p; do
        rm -rf "$vol" "$host"
        if [ "$p" = host ]; then
          mkdir -p "$host"; d=$host/d
        else
          local dur=${p#vol-}
          "$packfs" volume init --durability "$dur" "$vol" > /dev/null
          "$packfs" mount "$vol" "$m" || die "mounting the volume failed"
          d=$m/d
        fi
        sync
        printf '  N=%d round %d %s:' "$n" $((r + 1)) "$p" >&2
        t0=$(now)
        make_files "$d" "$n" || die "creating $n files in $d failed"
        t1=$(now)
        rm -rf "$d"
        t2=$(now)
        kb=""
        if [ "$p" = host ]; then sync; else kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$(pid_of_mount "$m")/status"); "$packfs" umount "$m"; fi
        t3=$(now)
        record volume "$p" "create-$n" "$r" "$(elapsed "$t0" "$t1")"
        record volume "$p" "rm-$n" "$r" "$(elapsed "$t1" "$t2")"
        record volume "$p" "settle-$n" "$r" "$(elapsed "$t2" "$t3")"
        [ -z "$kb" ] || record volume "$p" "rss-kb-$n" "$r" "$kb"
        note " create $(elapsed "$t0" "$t1") s, rm -rf $(elapsed "$t1" "$t2") s, settle $(elapsed "$t2" "$t3") s"
      done < <(rounds_order "$r" "${here[@]}")
    done
  done
  rm -rf "$vol" "$host"
}

# --- run ----------------------------------------------------------------------------------
if [ "$report_only" = 0 ]; then
  start=$(now)
  [ "$append" = 1 ] || : > "$results"
  record run info start 0 "$(date -u '+%Y-%m-%d %H:%M UTC') load $(cut -d' ' -f1-3 /proc/loadavg)"
  record run info packfs 0 "$packfs"
  build_helpers
  if has_section real || { has_section big && [ "$quick" = 0 ]; }; then make_real; fi
  if has_section real; then describe_tree real; run_tree real; fi
  if has_section synth; then make_synth "$synth_tree" "$synth_dirs"; describe_tree synth; run_tree synth; fi
  if has_section big; then
    has_section synth || { make_synth "$synth_tree" "$synth_dirs"; describe_tree synth; }
    make_synth "$synth4_tree" $((synth_dirs * 4)); describe_tree synth4; run_big synth4
    has_section synth || run_big synth
    if [ "$quick" = 0 ]; then
      make_real4; describe_tree real4; run_big real4
      has_section real || { describe_tree real; run_big real; }
    fi
    rm -f "$images"/synth4.* "$images"/real4.*
  fi
  if has_section volume; then run_volume; fi
  record run info end 0 "$(date -u '+%Y-%m-%d %H:%M UTC') load $(cut -d' ' -f1-3 /proc/loadavg)"
  record run info wall-s 0 "$(elapsed "$start" "$(now)")"
fi

# --- report -------------------------------------------------------------------------------
[ -s "$results" ] || die "no results in $results"
stat_of() {  # TREE PEER METRIC: "median min max" over the rounds
  awk -F'\t' -v t="$1" -v p="$2" -v k="$3" '$1 == t && $2 == p && $3 == k {print $5}' "$results" | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) exit; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
         printf "%s %s %s\n", m, v[1], v[NR]}'
}
med() { local v _a _b; read -r v _a _b < <(stat_of "$@") || true; echo "${v:-}"; }
fmt() {  # UNIT MEDIAN MIN MAX
  awk -v u="$1" -v m="$2" -v lo="$3" -v hi="$4" 'BEGIN {
    if (u == "ms") printf "%.1f ms [%.1f-%.1f]", m * 1000, lo * 1000, hi * 1000
    else if (u == "MiB") printf "%.1f MiB [%.1f-%.1f]", m / 1024, lo / 1024, hi / 1024
    else if (u == "n") printf "%.2f", m
    else if (m < 10) printf "%.3f s [%.3f-%.3f]", m, lo, hi
    else printf "%.1f s [%.1f-%.1f]", m, lo, hi }'
}
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}' || echo "-"; }
present_peers() {  # TREE: the peers with rows for TREE, in the usual order
  local p
  for p in "${all_peers[@]}" vol-batch vol-explicit host; do
    awk -F'\t' -v t="$1" -v p="$p" '$1 == t && $2 == p {f = 1; exit} END {exit !f}' "$results" && echo "$p"
  done
  return 0
}
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
# The ratio columns: PackFS over each peer (and the lz4 pack over erofs's lz4hc).
ratio_pairs=(packfs:erofs packfs:squashfuse packfs:squashfs packfs:dir packfs-lz4:erofs)
has_pair() { [[ " ${ps[*]} " == *" ${1#*:} "* ]] && [[ " ${ps[*]} " == *" ${1%:*} "* ]]; }

echo
wall=$(awk -F'\t' '$1 == "run" && $3 == "wall-s" {s += $5} END {printf "%dm%02ds", s / 60, s % 60}' "$results")
invocations=$(awk -F'\t' '$1 == "run" && $3 == "wall-s"' "$results" | wc -l)
echo "fuse_compare: $(awk -F'\t' '$1 == "run" && $3 == "start" {print $5; exit}' "$results") -> $(info run end); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); kernel $(uname -r); wall $wall ($invocations invocation(s))"
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
echo "tools: $(info run packfs) | squashfuse $(pkg_version squashfuse) | squashfs-tools $(pkg_version squashfs-tools) | erofs-utils $(pkg_version erofs-utils); $(if [ "$compressed" = 1 ]; then echo "images compressed: pack zstd, pack-lz4 lz4, squashfs zstd, erofs lz4hc"; else echo "every image uncompressed"; fi)"
echo "cells: median [min-max] over the rounds; ratio columns: PackFS median over the peer's median"
for t in real synth; do
  ps=($(present_peers "$t"))
  [ ${#ps[@]} -gt 0 ] || continue
  rounds=$(awk -F'\t' -v t="$t" '$1 == t && $3 == "lsR-cold" && $4 + 1 > r {r = $4 + 1} END {print r + 0}' "$results")
  echo
  echo "### $t tree: $(info "$t" entries) entries ($(info "$t" files) files, $(info "$t" dirs) dirs, $(info "$t" symlinks) symlinks), $(mib "$(info "$t" bytes)"); $rounds rounds; random = $(info "$t" random-files) files"
  echo
  hdr="| figure |"; sep="| --- |"
  for p in "${ps[@]}"; do hdr="$hdr $p |"; sep="$sep --- |"; done
  for pair in "${ratio_pairs[@]}"; do
    has_pair "$pair" && { hdr="$hdr ${pair%:*}/${pair#*:} |"; sep="$sep --- |"; }
  done
  echo "$hdr"; echo "$sep"
  for row in "mount:mount:ms" "mount-warm:mount, image cached:ms" "lsR-cold:ls -lR cold:s" "lsR-warm:ls -lR warm:s" \
             "cat-cold:read-all cold:s" "cat-warm:read-all warm:s" "rand-cold:random read cold:s" \
             "rand-warm:random read warm:s" "rss-kb:daemon peak RSS (VmHWM):MiB" \
             "rss-anon-kb:daemon RSS at the end, anonymous:MiB" "rss-file-kb:daemon RSS at the end, file pages (mapped image):MiB" \
             "req-cat:requests per file, read-all cold:n" "req-rand:requests per file, random read cold:n"; do
    k=${row%%:*}; rest=${row#*:}; label=${rest%%:*}; unit=${rest##*:}
    awk -F'\t' -v t="$t" -v k="$k" '$1 == t && $3 == k {f = 1; exit} END {exit !f}' "$results" || continue
    line="| $label |"
    for p in "${ps[@]}"; do
      if read -r m lo hi < <(stat_of "$t" "$p" "$k"); then line="$line $(fmt "$unit" "$m" "$lo" "$hi") |"; else line="$line - |"; fi
    done
    for pair in "${ratio_pairs[@]}"; do
      has_pair "$pair" || continue
      line="$line $(ratio "$(med "$t" "${pair%:*}" "$k")" "$(med "$t" "${pair#*:}" "$k")") |"
    done
    echo "$line"
  done
  echo
  echo "image sizes: $(for k in pack pack-lz4 sqfs erofs; do s=$(med "$t" "$k" image-bytes); [ -n "$s" ] && printf '%s %s; ' "$k" "$(mib "$s")"; done)"
done

if awk -F'\t' '$1 == "synth4" || $1 == "real4" {f = 1; exit} END {exit !f}' "$results"; then
  echo
  echo "### mount time at N and 4N entries (image pages dropped before each mount; warm in parentheses)"
  echo
  ps=($(present_peers synth4))
  hdr="| tree | entries |"; sep="| --- | --- |"
  for p in "${ps[@]}"; do hdr="$hdr $p |"; sep="$sep --- |"; done
  echo "$hdr"; echo "$sep"
  for pair in "synth synth4" "real real4"; do
    set -- $pair
    for t in "$1" "$2"; do
      [ -n "$(med "$t" "${ps[0]}" mount)" ] || continue
      line="| $t | $(info "$t" entries) |"
      for p in "${ps[@]}"; do
        read -r m lo hi < <(stat_of "$t" "$p" mount) || { line="$line - |"; continue; }
        line="$line $(fmt ms "$m" "$lo" "$hi") ($(awk -v v="$(med "$t" "$p" mount-warm)" 'BEGIN {printf "%.1f", v * 1000}')) |"
      done
      echo "$line"
    done
    if [ -n "$(med "$2" "${ps[0]}" mount)" ] && [ -n "$(med "$1" "${ps[0]}" mount)" ]; then
      line="| $2 / $1 | |"
      for p in "${ps[@]}"; do line="$line $(ratio "$(med "$2" "$p" mount)" "$(med "$1" "$p" mount)") |"; done
      echo "$line"
    fi
  done
fi

if awk -F'\t' '$1 == "volume" {f = 1; exit} END {exit !f}' "$results"; then
  ps=($(present_peers volume))
  sizes=($(awk -F'\t' '$1 == "volume" && $3 ~ /^create-/ {sub(/^create-/, "", $3); if (!s[$3]++) print $3}' "$results" | sort -n))
  echo
  echo "### volume vs host directory: N empty files in one directory, then rm -rf; $(awk -F'\t' '$1 == "volume" && $4 + 1 > r {r = $4 + 1} END {print r + 0}' "$results") round(s)"
  echo "(vol-batch: durability batch, the default; vol-explicit: durable at fsync/sync only; settle = packfs umount, which waits for the journal, or sync for the host)"
  echo
  echo "| N | peer | create | rm -rf | settle | daemon peak RSS |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for n in "${sizes[@]}"; do
    for p in "${ps[@]}"; do
      [ -n "$(med volume "$p" "create-$n")" ] || continue
      line="| $n | $p |"
      for k in create rm settle; do
        if read -r m lo hi < <(stat_of volume "$p" "$k-$n"); then line="$line $(fmt s "$m" "$lo" "$hi") |"; else line="$line - |"; fi
      done
      kb=$(med volume "$p" "rss-kb-$n"); line="$line ${kb:+$(awk -v k="$kb" 'BEGIN {printf "%.1f MiB", k / 1024}')} |"
      echo "$line"
    done
  done
  echo
  echo "| ratio | create | rm -rf | per create | per unlink |"
  echo "| --- | --- | --- | --- | --- |"
  for p in "${ps[@]}"; do  # each peer's largest over its smallest N (N vs 4N)
    own=($(awk -F'\t' -v p="$p" '$1 == "volume" && $2 == p && $3 ~ /^create-/ {sub(/^create-/, "", $3); if (!s[$3]++) print $3}' "$results" | sort -n))
    [ ${#own[@]} -ge 1 ] || continue
    n2=${own[${#own[@]} - 1]}; n1=${own[0]}  # N vs 4N where the peer has both
    [[ " ${own[*]} " == *" $((n2 / 4)) "* ]] && n1=$((n2 / 4))
    per() { awk -v t="$1" -v n="$2" 'BEGIN {printf "%.1f us", t / n * 1e6}'; }
    [ "$n1" = "$n2" ] || echo "| $p: $n2 / $n1 | $(ratio "$(med volume "$p" "create-$n2")" "$(med volume "$p" "create-$n1")") | $(ratio "$(med volume "$p" "rm-$n2")" "$(med volume "$p" "rm-$n1")") | $(per "$(med volume "$p" "create-$n2")" "$n2") at $n2 | $(per "$(med volume "$p" "rm-$n2")" "$n2") at $n2 |"
  done
  for p in vol-batch vol-explicit; do
    [[ " ${ps[*]} " == *" $p "* ]] && [[ " ${ps[*]} " == *" host "* ]] || continue
    for n in "${sizes[@]}"; do
      [ -n "$(med volume "$p" "create-$n")" ] && [ -n "$(med volume host "create-$n")" ] || continue
      echo "| $p / host at $n | $(ratio "$(med volume "$p" "create-$n")" "$(med volume host "create-$n")") | $(ratio "$(med volume "$p" "rm-$n")" "$(med volume host "rm-$n")") | | |"
    done
  done
fi

# The targets of the FUSE driver, where this run has what they compare.
verdict() { if awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; then echo met; else echo MISSED; fi; }
target() {  # LABEL PACKFS-MEDIAN PEER-MEDIAN FACTOR
  [ -n "$2" ] && [ -n "$3" ] || return 0
  echo "  $1: $(ratio "$2" "$3") (limit ${4}x): $(verdict "$2" "$(awk -v b="$3" -v f="$4" 'BEGIN {print b * f}')")"
}
echo
echo "targets:"
for t in real synth; do
  [ -n "$(med "$t" packfs lsR-warm)" ] || continue
  target "$t: ls -lR warm <= 1.1x erofs" "$(med "$t" packfs lsR-warm)" "$(med "$t" erofs lsR-warm)" 1.1
  target "$t: ls -lR cold <= 1.0x erofs" "$(med "$t" packfs lsR-cold)" "$(med "$t" erofs lsR-cold)" 1.0
  target "$t: read-all warm <= 1.2x erofs" "$(med "$t" packfs cat-warm)" "$(med "$t" erofs cat-warm)" 1.2
  mt=$(med "$t" packfs mount)
  echo "  $t: mount < 20 ms: $(awk -v v="$mt" 'BEGIN {printf "%.1f ms", v * 1000}'): $(verdict "$mt" 0.02)"
  target "$t: peak RSS <= squashfuse" "$(med "$t" packfs rss-kb)" "$(med "$t" squashfuse rss-kb)" 1.0
  if [ "$compressed" = 1 ]; then  # a zstd pack against the kernel's compressed images
    target "$t: read-all cold, zstd <= 0.8x squashfs zstd" "$(med "$t" packfs cat-cold)" "$(med "$t" squashfs cat-cold)" 0.8
    target "$t: read-all cold, lz4 <= 1.1x erofs lz4hc" "$(med "$t" packfs-lz4 cat-cold)" "$(med "$t" erofs cat-cold)" 1.1
    target "$t: random read cold, zstd <= 1.2x erofs lz4hc" "$(med "$t" packfs rand-cold)" "$(med "$t" erofs rand-cold)" 1.2
    target "$t: peak RSS <= 64 MiB" "$(med "$t" packfs rss-kb)" 65536 1.0
  else
    target "$t: read-all cold <= 1.0x erofs" "$(med "$t" packfs cat-cold)" "$(med "$t" erofs cat-cold)" 1.0
  fi
done
for p in vol-batch vol-explicit; do  # at the largest N both the volume and the host have
  for n in $(awk -F'\t' -v p="$p" '$1 == "volume" && $2 == p && $3 ~ /^rm-/ {sub(/^rm-/, "", $3); if (!s[$3]++) print $3}' "$results" | sort -rn); do
    [ -n "$(med volume host "rm-$n")" ] || continue
    target "$p: rm -rf of $n files <= host" "$(med volume "$p" "rm-$n")" "$(med volume host "rm-$n")" 1.0
    break
  done
done

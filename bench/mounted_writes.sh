#!/usr/bin/env bash
# Mounted writes at real scale (docs/BENCH.md, "Mounted writes"): what a user does first with a
# writable mount, timed on the host directory and beside it on a volume mount, a host-directory
# mount and fuse-overlayfs (the peer a user would pick instead), all on the same filesystem, in
# one run, rounds alternated, medians with min and max and the ratio to the host.
#
#   bench/mounted_writes.sh [options]
#     --packfs BIN      the packfs to measure (default: build/tools/cli/packfs)
#     --tar FILE        the tarball to unpack (default: Debian's linux-source-6.1, decompressed
#                       once; without it a generated tree of 84,000 files, tests/cli/make_tree.py)
#     --dir DIR         where everything lives (default /var/tmp/packfs-mounted-writes)
#     --loop SIZE       make DIR a fresh ext4 (journaled, the defaults) on a loop device of SIZE
#                       (e.g. 24G; root only), so every target sits on the same new filesystem
#     --rounds N        rounds of each step (default 3)
#     --copy REL        the subtree `cp -a` copies (default: the tarball's arch/ or its top)
#     --targets LIST    of host,volume,hostdir,overlayfs (default: all)
#     --git DIR         also: cp -a DIR in, git init, add, commit, then git status (default
#                       /usr/include; "" skips)
#     --writers N       also: N writers, each create + 4 KiB write + fsync, 200 files each
#                       (default 64; 0 skips)
#     --empty N         also: rm -rf of N empty files, made beforehand (a volume's from a pack
#                       built from them, the host's by a loop); 0 (the default) skips
#
# Each step is made durable before its clock stops: syncfs of the host directory (sync -f), of
# the host-directory mount's and fuse-overlayfs's underlying directory, and `packfs sync` of a
# volume mount (the kernel passes no sync to a FUSE daemon). The steps: unpack (tar x), read
# back every file (tar c | cat) right after, and again (warm), copy a subtree (cp -a), remove
# everything (rm -rf).
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
packfs="$here/../build/tools/cli/packfs"
tarball=""
dir=/var/tmp/packfs-mounted-writes
loop_size=""
rounds=3
copy_rel=""
targets="host,volume,hostdir,overlayfs"
git_src=/usr/include
writers=64
empty_files=0
while [ $# -gt 0 ]; do
    case "$1" in
        --packfs) packfs="$2"; shift 2 ;;
        --tar) tarball="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        --loop) loop_size="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --copy) copy_rel="$2"; shift 2 ;;
        --targets) targets="$2"; shift 2 ;;
        --git) git_src="$2"; shift 2 ;;
        --writers) writers="$2"; shift 2 ;;
        --empty) empty_files="$2"; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "unknown option $1 (--help)" >&2; exit 2 ;;
    esac
done
packfs=$(realpath "$packfs")
writers_bin=$(dirname "$packfs")/../../bench/packfs_fsync_writers
say() { echo "$*" >&2; }
die() { say "mounted_writes: $*"; exit 1; }
[ -x "$packfs" ] || die "no packfs at $packfs (build it, or --packfs BIN)"
IFS=, read -r -a target_list <<<"$targets"
for t in "${target_list[@]}"; do
    case "$t" in host|volume|hostdir|overlayfs) ;; *) die "unknown target $t" ;; esac
    if [ "$t" = overlayfs ] && ! command -v fuse-overlayfs >/dev/null; then
        die "fuse-overlayfs is missing (scripts/install-deps.sh installs it)"
    fi
done

# ---- the place ----
mkdir -p "$dir"
loopdev=""
cleanup() {
    set +e
    for m in "$dir"/m-*; do
        [ -d "$m" ] || continue
        if grep -q " $m " /proc/self/mountinfo; then
            case "$m" in *overlayfs) fusermount3 -u "$m" ;; *) "$packfs" umount "$m" ;; esac
        fi
    done >/dev/null 2>&1
    if [ -n "$loopdev" ]; then
        umount "$dir" && losetup -d "$loopdev"
    fi
}
trap cleanup EXIT
if [ -n "$loop_size" ]; then
    [ "$(id -u)" -eq 0 ] || die "--loop needs root"
    image="$dir.img"
    rm -f "$image"
    truncate -s "$loop_size" "$image"
    mkfs.ext4 -q -F "$image"
    loopdev=$(losetup --direct-io=on -f --show "$image")
    mount "$loopdev" "$dir"
fi
say "filesystem: $(df -T "$dir" | awk 'NR==2 { print $2 " on " $1 }'), $(findmnt -no OPTIONS --target "$dir")"

# ---- the tarball ----
if [ -z "$tarball" ]; then
    if [ -f /usr/src/linux-source-6.1.tar.xz ]; then
        tarball=/var/tmp/packfs-linux-source-6.1.tar
        if [ ! -f "$tarball" ]; then
            say "decompressing /usr/src/linux-source-6.1.tar.xz once into $tarball"
            xz -dc /usr/src/linux-source-6.1.tar.xz >"$tarball.tmp" && mv "$tarball.tmp" "$tarball"
        fi
    else
        tarball=/var/tmp/packfs-generated-84000.tar
        if [ ! -f "$tarball" ]; then
            say "no linux-source-6.1: generating 84,000 files into $tarball"
            rm -rf "$tarball.d" && python3 "$here/../tests/cli/make_tree.py" "$tarball.d" 84000 1
            tar -C "$tarball.d" --format=posix -cf "$tarball" . && rm -rf "$tarball.d"
        fi
    fi
fi
tar -tf "$tarball" >"$dir/.listing"
entries=$(wc -l <"$dir/.listing")
top=$(sed -n 1p "$dir/.listing" | cut -d/ -f1)
[ "$top" = . ] && top=$(sed -n 2p "$dir/.listing" | cut -d/ -f2)
if [ -z "$copy_rel" ]; then
    if grep -q "^$top/arch/" "$dir/.listing"; then copy_rel="$top/arch"; else copy_rel="$top"; fi
fi
rm -f "$dir/.listing"
say "tarball: $tarball ($entries entries, $(($(stat -c %s "$tarball") >> 20)) MiB); cp -a copies $copy_rel"

# ---- the targets: where each writes, and what makes it durable ----
root_of() { echo "$dir/m-$1"; }  # where the steps run
under_of() { case "$1" in hostdir) echo "$dir/hd" ;; overlayfs) echo "$dir/ofs/upper" ;; *) echo "" ;; esac; }
setup_target() {
    local t="$1" m
    m=$(root_of "$t")
    case "$t" in
        host) rm -rf "$m" && mkdir -p "$m" ;;
        volume)
            rm -rf "$dir/vol" && mkdir -p "$m"
            "$packfs" volume init "$dir/vol" >/dev/null
            "$packfs" mount "$dir/vol" "$m" ;;
        hostdir)
            rm -rf "$dir/hd" && mkdir -p "$dir/hd" "$m"
            "$packfs" mount "$dir/hd" "$m" ;;
        overlayfs)
            rm -rf "$dir/ofs" && mkdir -p "$dir/ofs/lower" "$dir/ofs/upper" "$dir/ofs/work" "$m"
            fuse-overlayfs -o "lowerdir=$dir/ofs/lower,upperdir=$dir/ofs/upper,workdir=$dir/ofs/work" "$m" ;;
    esac
}
teardown_target() {
    local t="$1" m
    m=$(root_of "$t")
    case "$t" in
        host) rm -rf "$m" ;;
        volume|hostdir) "$packfs" umount "$m" ;;
        overlayfs) fusermount3 -u "$m" ;;
    esac
}
make_durable() {
    case "$1" in
        host) sync -f "$(root_of host)" ;;
        volume) "$packfs" sync "$(root_of volume)" ;;
        *) sync -f "$(under_of "$1")" ;;
    esac
}

# ---- timing ----
declare -A samples  # "step target" -> "t1 t2 ..."
now() { date +%s.%N; }
record() { samples["$1 $2"]+="$3 "; }
timed_step() {  # timed_step STEP TARGET COMMAND...: the command then make_durable, timed
    local step="$1" t="$2" t0 t1
    shift 2
    t0=$(now)
    "$@"
    make_durable "$t"
    t1=$(now)
    record "$step" "$t" "$(echo "$t1 - $t0" | bc)"
    say "  $step on $t: $(echo "$t1 - $t0" | bc) s"
}
median_of() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
min_of() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
max_of() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }

unpack() { tar -C "$1" -xf "$tarball"; }
read_back() { tar -C "$1" -cf - . | cat >/dev/null; }
copy_subtree() { cp -a "$1/$copy_rel" "$1/copy"; }
remove_all() { rm -rf "$1"/*; }

for round in $(seq 1 "$rounds"); do
    say "round $round of $rounds"
    for t in "${target_list[@]}"; do
        setup_target "$t"
        m=$(root_of "$t")
        sync
        timed_step unpack "$t" unpack "$m"
        timed_step read "$t" read_back "$m"
        timed_step "read again" "$t" read_back "$m"
        timed_step copy "$t" copy_subtree "$m"
        timed_step rm "$t" remove_all "$m"
        teardown_target "$t"
        # ext4 looks for a free inode past recently deleted ones; let the next unpack start
        # from a settled filesystem.
        sync && sleep 2
    done
done

if [ -n "$git_src" ] && [ -d "$git_src" ]; then
    command -v git >/dev/null || die "git is missing"
    say "git: cp -a $git_src, init, add, commit; then git status"
    export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench \
        GIT_COMMITTER_EMAIL=bench@localhost GIT_CONFIG_NOSYSTEM=1 HOME="$dir"
    git_round() {
        local m="$1"
        cp -a "$git_src" "$m/repo" && git -C "$m/repo" init -q && git -C "$m/repo" add -A &&
            git -C "$m/repo" commit -qm import
    }
    for round in $(seq 1 "$rounds"); do
        for t in "${target_list[@]}"; do
            setup_target "$t"
            m=$(root_of "$t")
            timed_step "git import" "$t" git_round "$m"
            git -C "$m/repo" status >/dev/null  # the first one writes the index's stat cache
            for i in 1 2 3; do
                t0=$(now); git -C "$m/repo" status >/dev/null; t1=$(now)
                record "git status" "$t" "$(echo "$t1 - $t0" | bc)"
            done
            say "  git status on $t: ${samples["git status $t"]}"
            teardown_target "$t"
            sync && sleep 2
        done
    done
fi

if [ "$writers" -gt 0 ]; then
    [ -x "$writers_bin" ] || die "no $writers_bin (build the bench target packfs_fsync_writers)"
    for round in $(seq 1 "$rounds"); do
        for t in "${target_list[@]}"; do
            setup_target "$t"
            m=$(root_of "$t")
            line=$("$writers_bin" "$m" "$writers" 200)
            say "  $writers writers on $t: $line"
            record "$writers writers (files/s)" "$t" "$(echo "$line" | sed -E 's/.*: ([0-9]+) files\/s.*/\1/')"
            teardown_target "$t"
            sync && sleep 2
        done
    done
fi

make_empty() {  # make_empty DIR N: N empty files in directories of 1,000
    python3 - "$1" "$2" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for d in range((n + 999) // 1000):
    os.makedirs(os.path.join(root, f"d{d}"), exist_ok=True)
    for i in range(min(1000, n - d * 1000)):
        os.close(os.open(os.path.join(root, f"d{d}", f"e{i}"), os.O_CREAT | os.O_WRONLY, 0o644))
EOF
}
if [ "$empty_files" -gt 0 ]; then
    say "rm -rf of $empty_files empty files (made beforehand)"
    # The volume's start from a pack of them (made once, without a mount); the host's are made
    # anew each round (a copy beside the source would need twice the inodes).
    make_empty "$dir/empty-src" "$empty_files"
    "$packfs" build "$dir/empty-src" "$dir/empty.pack" >/dev/null
    rm -rf "$dir/empty-src"
    for round in $(seq 1 "$rounds"); do
        for t in host volume; do
            [[ ",$targets," == *",$t,"* ]] || continue
            m=$(root_of "$t")
            if [ "$t" = host ]; then
                rm -rf "$m" && make_empty "$m" "$empty_files" && sync
            else
                rm -rf "$dir/vol" && mkdir -p "$m"
                "$packfs" volume init "$dir/vol" --from "$dir/empty.pack" >/dev/null
                "$packfs" mount "$dir/vol" "$m"
            fi
            timed_step "rm -rf of $empty_files empty files" "$t" rm -rf "$m/"*
            [ "$t" = volume ] && "$packfs" umount "$m"
            sync && sleep 2
        done
    done
    rm -f "$dir/empty.pack"
fi

# ---- the table ----
echo
echo "Mounted writes: $(basename "$tarball") ($entries entries), $rounds rounds, $(nproc) CPUs, $(uname -r)"
echo "filesystem: $(df -T "$dir" | awk 'NR==2 { print $2 }'); medians (min-max) in seconds (files/s for the writers:"
echo "higher is better there); ratio = median / host's"
echo
printf '| step |'; for t in "${target_list[@]}"; do printf ' %s |' "$t"; done; echo
printf '| --- |'; for t in "${target_list[@]}"; do printf ' --- |'; done; echo
for step in unpack read "read again" copy rm "git import" "git status" "$writers writers (files/s)" "rm -rf of $empty_files empty files"; do
    [ -n "${samples["$step host"]:-}${samples["$step volume"]:-}" ] || continue
    host_median=$(echo "${samples["$step host"]:-}" | median_of)
    printf '| %s |' "$step"
    for t in "${target_list[@]}"; do
        s="${samples["$step $t"]:-}"
        if [ -z "$s" ]; then printf ' - |'; continue; fi
        med=$(echo "$s" | median_of)
        cell="$(printf '%.3g' "$med") ($(printf '%.3g' "$(echo "$s" | min_of)")-$(printf '%.3g' "$(echo "$s" | max_of)"))"
        if [ "$t" != host ] && [ -n "$host_median" ]; then
            cell+=", $(echo "scale=2; $med / $host_median" | bc)x"
        fi
        printf ' %s |' "$cell"
    done
    echo
done

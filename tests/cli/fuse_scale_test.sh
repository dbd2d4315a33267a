#!/usr/bin/env bash
# Mounts at the scale users work at (DESIGN §7, §10, §12). A generated tarball of 20,000 files
# (make_tree.py: deep and wide, hard links, symlinks, modes, the sizes of a source tree) is
# unpacked with tar into a mounted volume and into a mounted host directory, both with the
# defaults; made durable (packfs sync), unmounted and mounted again, then read back exact (the
# bytes, and names, types, modes, sizes, link counts, link targets, mtimes with ns), removed
# with rm -rf, unmounted, mounted again and found empty. Then a host-directory mount under
# `prlimit --nofile=256` serves the same tree: every file listed and read, no EMFILE anywhere
# (one descriptor per object the kernel remembers would need over 20,000), and the daemon's
# descriptors stay under its limit.
# PACKFS_SCALE_FILES=N makes the tree N files instead (e.g. 200000 for a longer run).
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
fuse_setup

files=${PACKFS_SCALE_FILES:-20000}
python3 "$here/make_tree.py" "$work/src" "$files" 7
tar -C "$work/src" --format=posix -cf "$work/tree.tar" .  # posix: mtimes with ns
echo "the tree: $(find "$work/src" | wc -l) entries, $(du -s --apparent-size --block-size=1M "$work/src" | cut -f1) MiB"

# Every entry's name, type, mode, link target and mtime; a file's size and link count too
# (directories' sizes and link counts are each filesystem's own).
listing() {
    (cd "$1" && find . \( -type d -printf '%p d %m %T@\n' \) -o -printf '%p %y %m %s %n %l %T@\n' | sort)
}
listing "$work/src" >"$work/src.list"
same_tree() {  # same_tree DIR: DIR holds exactly what src does
    listing "$1" >"$work/got.list"
    if ! cmp -s "$work/src.list" "$work/got.list"; then
        diff "$work/src.list" "$work/got.list" | head -20
        return 1
    fi
    diff -r --no-dereference "$work/src" "$1" >/dev/null
}
empty() {  # the listing succeeds and is empty
    local names
    names=$(ls -A "$1") && [ -z "$names" ]
}
timed() {  # timed WHAT COMMAND...: runs it, says how long it took, answers its status
    local what="$1" t0 t1 status=0
    shift
    t0=$(date +%s.%N)
    "$@" || status=$?
    t1=$(date +%s.%N)
    echo "  $what: $(echo "$t1 - $t0" | bc) s"
    return $status
}
sync_source() {  # packfs sync: a volume's journal, a host directory's filesystem (syncfs)
    "$packfs" sync "$1"
}

unpack_case() {  # unpack_case NAME SOURCE MOUNT
    local name="$1" source="$2" mnt="$3"
    echo "-- $name"
    expect_code "  mount (defaults)" 0 do_mount "$source" "$mnt"
    check "  tar x of $files files" timed "tar x" tar -C "$mnt" -xf "$work/tree.tar"
    expect_code "  packfs sync" 0 sync_source "$mnt"
    check "  read back at once: the same tree" same_tree "$mnt"
    expect_code "  umount" 0 do_umount "$mnt"
    expect_code "  mount again" 0 do_mount "$source" "$mnt"
    check "  after the remount: the same tree, byte for byte" same_tree "$mnt"
    check "  rm -rf of everything" timed "rm -rf" rm -rf "$mnt"/*
    check "  removed: empty" empty "$mnt"
    expect_code "  packfs sync" 0 sync_source "$mnt"
    expect_code "  umount" 0 do_umount "$mnt"
    expect_code "  mount again" 0 do_mount "$source" "$mnt"
    check "  after the remount: still empty" empty "$mnt"
    expect_code "  umount" 0 do_umount "$mnt"
}

expect_code "volume init (defaults)" 0 "$packfs" volume init "$work/vol"
unpack_case "a volume" "$work/vol" "$work/vmnt"
expect_code "volume check" 0 "$packfs" volume check "$work/vol"
check "the volume's mode is the default, explicit" grep -q "explicit" <("$packfs" volume status "$work/vol")

mkdir "$work/host"
unpack_case "a host directory" "$work/host" "$work/hmnt"

# ---- a host-directory mount of the tree within 256 descriptors ----
echo "-- a host directory under prlimit --nofile=256"
mkdir "$work/lmnt"
expect_code "mount under prlimit --nofile=256" 0 prlimit --nofile=256 "$packfs" mount "$work/src" "$work/lmnt" --log "$work/lmnt.log"
track_pid "$(daemon_pid "$work/lmnt")"
daemon=$(daemon_pid "$work/lmnt")
check "  the daemon's limit is 256" grep -qE '^Max open files +256 +256' "/proc/$daemon/limits"
check "  find" timed "find" bash -c 'find "$1" >"$2" 2>"$3"' _ "$work/lmnt" "$work/find.out" "$work/find.err"
check "  find listed every entry" test "$(wc -l <"$work/find.out")" -eq "$(find "$work/src" | wc -l)"
check "  find said nothing" test ! -s "$work/find.err"
check "  diff -r" timed "diff -r (every file read)" bash -c 'diff -r --no-dereference "$1" "$2" >"$3" 2>&1' _ "$work/src" "$work/lmnt" "$work/diff.out"
check "  every file read, every byte the same" test ! -s "$work/diff.out"
check "  names, types, modes, sizes, links, mtimes the same" same_tree "$work/lmnt"
check "  ls -lR" timed "ls -lR" bash -c 'ls -lR "$1" >/dev/null 2>"$2"' _ "$work/lmnt" "$work/ls.err"
check "  ls -lR said nothing" test ! -s "$work/ls.err"
fds=$(ls "/proc/$daemon/fd" | wc -l)
echo "  the daemon holds $fds descriptors"
check "  the daemon holds under 256 descriptors" test "$fds" -lt 256
check "  no 'Too many open files' anywhere" bash -c '! grep -qi "too many open files" "$@"' _ \
    "$work/find.err" "$work/diff.out" "$work/ls.err" "$work/lmnt.log"
expect_code "  umount" 0 do_umount "$work/lmnt"

echo "fuse scale: $failures failure(s)"
exit $((failures > 0))

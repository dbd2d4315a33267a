#!/usr/bin/env bash
# packfs mount and umount, their exit codes and messages: a missing mountpoint, a file, an
# existing mount point, a missing source, a garbage file, a volume mounted twice (locked), an
# unknown -o option, an option packfs sets itself (usage, exit 2). The daemon's end: SIGTERM,
# SIGINT and fusermount3 -u each unmount, the daemon exits, and the volume's writes made before
# survive a remount. `packfs umount` of a non-mount and of a tmpfs fails clearly; -f stays in
# the foreground, prints its ready line and returns 0 once unmounted.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
fuse_setup

mkdir -p "$work/src/d" "$work/m"
printf 'hello\n' >"$work/src/hello"
"$packfs" build "$work/src" "$work/p.pack" >/dev/null
"$packfs" volume init "$work/vol" --from "$work/src" --durability batch >/dev/null
head -c 10000 /dev/urandom >"$work/garbage"
: >"$work/afile"
says() {  # says "what" REGEX: the last command's stderr matches
    check "$1" grep -qE -- "$2" "$work/last.err"
}
no_mount() {  # nothing of ours is mounted at MNT and no daemon serves it
    check "  no mount left at $(basename "$1")" bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$1"
    check "  no daemon left" test -z "$(daemon_pid "$1")"
}

# ---- refusals ----
expect_code "mount on a missing mountpoint" 1 "$packfs" mount "$work/p.pack" "$work/nowhere"
says "  packfs: mount PATH: No such file or directory" "^packfs: mount $work/nowhere: No such file or directory$"
expect_code "mount on a file" 1 "$packfs" mount "$work/p.pack" "$work/afile"
says "  packfs: mount PATH: Not a directory" "^packfs: mount $work/afile: Not a directory$"
expect_code "mount of a missing source" 1 "$packfs" mount "$work/missing.pack" "$work/m"
says "  packfs: open PATH: No such file or directory" "^packfs: open $work/missing.pack: No such file or directory$"
no_mount "$work/m"
expect_code "mount of a garbage file as a pack" 1 "$packfs" mount "$work/garbage" "$work/m"
says "  packfs: ... PATH: not a pack" "^packfs: [a-z_ ]+ $work/garbage: .*not a pack"
no_mount "$work/m"
expect_code "mount with an unknown -o option" 1 "$packfs" mount -o bogus_option "$work/p.pack" "$work/m"
says "  names the option" "bogus_option"
says "  packfs: mount ...: an option libfuse does not know" "^packfs: mount .*: an option libfuse does not know"
no_mount "$work/m"
expect_code "mount -o default_permissions (packfs sets it: usage)" 2 \
    "$packfs" mount -o default_permissions "$work/p.pack" "$work/m"
says "  says so" "set by packfs mount"
expect_code "mount -o fsname=x (usage)" 2 "$packfs" mount -o ro,fsname=x "$work/p.pack" "$work/m"
expect_code "mount --compact-at nonsense (usage)" 2 "$packfs" mount --compact-at 12Q "$work/vol" "$work/m"
no_mount "$work/m"
expect_code "mount without a mountpoint (usage)" 2 "$packfs" mount "$work/p.pack"

expect_code "mount PACK" 0 do_mount "$work/p.pack" "$work/m"
check "  usable as soon as mount returned" grep -qx hello "$work/m/hello"
expect_code "mount again on the same mount point" 1 "$packfs" mount "$work/p.pack" "$work/m"
says "  packfs: mount PATH: already a mount point" "^packfs: mount $work/m: already a mount point"
check "  still one mount there" test "$(grep -c " $work/m " /proc/self/mountinfo)" -eq 1
expect_code "  packfs umount" 0 do_umount "$work/m"
no_mount "$work/m"

expect_code "mount VOLUME" 0 do_mount "$work/vol" "$work/m"
expect_code "mount the same volume a second time, elsewhere (locked)" 1 do_mount "$work/vol" "$work/m2"
says "  packfs: open volume PATH ...: the volume is open in another process" \
    "^packfs: open volume $work/vol.*: the volume is open in another process"
no_mount "$work/m2"
expect_code "  packfs umount the first" 0 do_umount "$work/m"
no_mount "$work/m"
expect_code "  now the volume mounts elsewhere" 0 do_mount "$work/vol" "$work/m2"
expect_code "  packfs umount" 0 do_umount "$work/m2"

# ---- packfs umount of what is not ours ----
expect_code "umount a directory that is no mount point" 1 "$packfs" umount "$work/src"
says "  packfs: umount PATH: not a mount point" "^packfs: umount $work/src: not a mount point$"
expect_code "umount a missing path" 1 "$packfs" umount "$work/nowhere"
says "  packfs: umount PATH: No such file or directory" "^packfs: umount $work/nowhere: No such file or directory$"
mkdir "$work/tmpfs"
if mount -t tmpfs tmpfs "$work/tmpfs" 2>/dev/null; then
    expect_code "umount a tmpfs (not a packfs mount)" 1 "$packfs" umount "$work/tmpfs"
    says "  packfs: umount PATH: not a packfs mount (it is tmpfs)" \
        "^packfs: umount $work/tmpfs: not a packfs mount \(it is tmpfs\)$"
    check "  the tmpfs is still mounted" grep -q " $work/tmpfs " /proc/self/mountinfo
    umount "$work/tmpfs"
else
    echo "skipped: mounting a tmpfs is not permitted (umount of a non-packfs mount)"
fi

# ---- the daemon's end: signals and fusermount3 -u ----
n=0
end_case() {  # end_case "how" COMMAND-taking-the-daemon-pid-and-mountpoint
    local how="$1" stop="$2"
    n=$((n + 1))
    local mnt="$work/sig$n"
    echo "-- $how"
    expect_code "mount VOLUME" 0 do_mount "$work/vol" "$mnt"
    local pid
    pid=$(daemon_pid "$mnt")
    check "  the daemon found ($pid)" test -n "$pid"
    mkdir -p "$mnt/by $n"
    printf 'written before %s\n' "$how" >"$mnt/by $n/file"
    head -c 100000 /dev/urandom >"$work/payload.$n"
    cp "$work/payload.$n" "$mnt/by $n/payload"
    expect_code "  $how" 0 $stop "$pid" "$mnt"
    check "  the mount is gone" wait_for bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$mnt"
    check "  the daemon exited" wait_for bash -c '[ ! -d /proc/$1 ] || [ "$(cut -d" " -f3 /proc/$1/stat)" = Z ]' _ "$pid"
    check "  the volume is released (not locked)" \
        wait_for bash -c '"$1" volume status "$2" >/dev/null && flock -n "$2/LOCK" true' _ "$packfs" "$work/vol"
    expect_code "  volume check" 0 "$packfs" volume check "$work/vol"
    expect_code "  remount" 0 do_mount "$work/vol" "$mnt"
    check "  the writes made before are there" \
        bash -c 'grep -qx "written before $3" "$1/by $2/file"' _ "$mnt" "$n" "$how"
    check "  byte for byte" cmp "$work/payload.$n" "$mnt/by $n/payload"
    expect_code "  packfs umount" 0 do_umount "$mnt"
}
by_sigterm() { kill -TERM "$1"; }
by_sigint() { kill -INT "$1"; }
by_fusermount() { fusermount3 -u "$2"; }
end_case "SIGTERM to the daemon" by_sigterm
end_case "SIGINT to the daemon" by_sigint
if command -v fusermount3 >/dev/null; then
    end_case "fusermount3 -u" by_fusermount
else
    echo "skipped: no fusermount3"
fi

# ---- umount of a busy mount, and --lazy ----
expect_code "mount VOLUME" 0 do_mount "$work/vol" "$work/m"
# A holder: opens a file of the mount, reads it again after a while, then lets go.
( exec 7<"$work/m/hello"; touch "$work/held"; sleep 1.5; cat <&7 >"$work/held.out" ) &
holder=$!
track_pid $holder
wait_for test -e "$work/held"
expect_code "packfs umount of a busy mount (a file held open)" 1 do_umount "$work/m"
says "  says busy and offers --lazy" "^packfs: umount $work/m: busy.*--lazy"
check "  still mounted" grep -q " $work/m " /proc/self/mountinfo
expect_code "packfs umount --lazy (returns at once)" 0 \
    timeout 60 "$packfs" umount --lazy "$work/m"
check "  detached" bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$work/m"
wait $holder || true
check "  the file held open still read after the detach" grep -qx hello "$work/held.out"
# The holder's close reaches the daemon after `wait` returns; the daemon then syncs and exits.
check "  the daemon let go of the volume (within 20 s of the holder's close)" \
    wait_for flock -n "$work/vol/LOCK" true
no_mount "$work/m"

# ---- -f: the foreground ----
mkdir -p "$work/fg"
"$packfs" mount -f "$work/vol" "$work/fg" >"$work/fg.out" 2>"$work/fg.err" &
fg=$!
track_pid $fg
check "-f: prints its ready line" \
    wait_for grep -q "^packfs: $work/vol mounted on $work/fg (volume, read-write, batch durability)$" "$work/fg.err"
check "  serves the mount" grep -qx hello "$work/fg/hello"
sleep 1
check "  still in the foreground a second later" kill -0 $fg
check "  it is the daemon (it serves the mount point)" test "$(daemon_pid "$work/fg")" = "$fg"
printf 'from the foreground mount\n' >"$work/fg/fg file"
expect_code "  packfs umount" 0 do_umount "$work/fg"
check "  -f returned 0 once unmounted" wait $fg
check "  and printed nothing more" test "$(wc -l <"$work/fg.err")" -eq 1 -a ! -s "$work/fg.out"
expect_code "  the write is in the volume" 0 "$packfs" cat "$work/vol" "/fg file"
check "  the bytes" grep -qx 'from the foreground mount' "$work/last.out"
mkdir -p "$work/fg2"
"$packfs" mount -f "$work/p.pack" "$work/fg2" 2>"$work/fg2.err" &
fg=$!
track_pid $fg
check "-f of a pack: ready line" wait_for grep -q "mounted on $work/fg2 (pack, read-only)" "$work/fg2.err"
kill -TERM $fg
check "  SIGTERM: -f returns 0" wait $fg
no_mount "$work/fg2"

if [ "$failures" -ne 0 ]; then
    echo "fuse lifecycle: $failures failure(s)"
    exit 1
fi
echo "fuse lifecycle ok"

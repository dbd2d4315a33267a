#!/usr/bin/env bash
# A mounted volume (packfs mount VOLUME MNT, read-write, journaled), with ordinary tools:
# cp -a a tree in, mv of files and directories across directories (and over an existing
# file), rm -rf of a subtree, ln, ln -s, touch -d, truncate up and down, appends, chmod,
# setfattr; the same commands applied to a plain directory (the reference) give the same tree,
# live and after umount and a remount (diff -r, and names, types, modes, sizes, nlinks, owners,
# mtimes with ns). `packfs volume compact` while mounted and written to by a background loop:
# nothing lost, the new generation shown by `volume status` after umount. A writer that
# fsyncs and is SIGKILLed together with the daemon, in durability always, batch and explicit:
# after cleaning the dead mount and remounting, what was fsync'd is there byte for byte.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
fuse_setup

# ---- a tree to copy in: every mtime in the past (the ops below renew what they touch) ----
tree="$work/tree"
mkdir -p "$tree/sub one/deeper" "$tree/sub two/x" "$tree/empty" "$tree/ünï dir"
head -c 200000 /dev/urandom >"$tree/big"
head -c 4097 /dev/urandom >"$tree/sub one/f 4097"
head -c 65536 /dev/urandom >"$tree/sub one/deeper/f 65536"
printf 'one\n' >"$tree/one"
printf 'two\n' >"$tree/two"
printf 'three\n' >"$tree/three"
printf 'to be cut down to ten bytes\n' >"$tree/cut"
printf 'grows\n' >"$tree/grow"
printf 'first line\n' >"$tree/appended"
printf 'x\n' >"$tree/sub two/x/in x"
: >"$tree/empty file"
printf '日本語\n' >"$tree/ünï dir/ファイル"
ln "$tree/one" "$tree/sub one/one hard"
ln -s one "$tree/link to one"
ln -s "sub one/deeper" "$tree/link to dir"
ln -s nowhere "$tree/dangling"
chmod 0600 "$tree/two"
chmod 0755 "$tree/three"
chmod 04755 "$tree/big"
chmod 0700 "$tree/sub two"
setfattr -n user.color -v blue "$tree/one"
setfattr -n user.d -v dir "$tree/sub one"
i=0
while IFS= read -r -d '' p; do
    i=$((i + 1))
    touch -h -d "2012-03-0$((i % 9 + 1)) 08:00:00.$(printf '%09d' $((i * 104729)))" "$p"
done < <(find "$tree" -depth -print0)
if [ "$(id -u)" -eq 0 ]; then chown -h 1234:5678 "$tree/two" "$tree/dangling"; fi

# The commands, applied to a root: the mount or the reference directory.
apply_ops() {
    local r="$1"
    touch "$work/stamp"
    sleep 0.01
    cp -a "$tree/." "$r/tree"
    mkdir -p "$r/a/b" "$r/c"
    mv "$r/tree/three" "$r/a/b/three moved"                 # a file across directories
    mv "$r/tree/sub one" "$r/c/sub one moved"               # a directory across directories
    mv "$r/c/sub one moved/deeper" "$r/a/deeper moved"      # and one out of it again
    mv "$r/tree/two" "$r/tree/one"                          # over an existing file (a hard link)
    mv "$r/tree/ünï dir" "$r/ünï dir renamed"
    rm -rf "$r/tree/sub two"                                # a subtree
    ln "$r/tree/big" "$r/c/big hard"
    ln "$r/c/big hard" "$r/a/b/big hard 2"
    ln -s "../tree/big" "$r/c/big sym"
    ln -s "/absolute/nowhere" "$r/c/abs sym"
    touch -d '2005-06-07 08:09:10.111213141' "$r/tree/grow"
    truncate -s 300000 "$r/tree/grow"                       # up: a hole
    truncate -s 10 "$r/tree/cut"                            # down
    truncate -s 0 "$r/tree/empty file"
    truncate -s 5000 "$r/tree/empty file"
    printf 'second line\n' >>"$r/tree/appended"
    for i in $(seq 1 40); do printf 'log line %d\n' "$i" >>"$r/log"; done
    head -c 70000 "$tree/big" >>"$r/tree/appended"
    printf 'new\n' >"$r/new file"
    chmod 0640 "$r/new file"
    chmod 0711 "$r/a"
    setfattr -n user.added -v "later" "$r/new file"
    setfattr -n user.via -v link "$r/tree/link to one"      # through the link: on "one"
    setfattr -x user.d "$r/c/sub one moved"
    mkdir "$r/made/" && rmdir "$r/made"
    mkdir -p "$r/p/q/r" && touch "$r/p/q/r/s" && rm -rf "$r/p/q"
    # What the commands renewed gets one fixed mtime, on both sides alike (find -newer on the
    # mount is tested by this as well); the rest kept the tree's.
    find "$r" -newer "$work/stamp" -print0 | xargs -0 -r touch -h -d '2024-02-02 02:02:02.020202020'
    touch -d '2023-01-01 00:00:00.5' "$r/tree/cut"
}

meta() {  # names, types, modes, sizes (not of directories), nlinks, owners, mtimes (ns)
    (cd "$1" && find . -print0 | sort -z | xargs -0 stat -c '%F|%n|%a|%s|%h|%u|%g|%y') |
        awk -F'|' -v OFS='|' '$1 == "directory" { $4 = "-" } { print }'
}
xattrs_of() {
    (cd "$1" && getfattr -R -P -h -d -e hex . 2>&1) |
        awk '/^# file: / { f = substr($0, 9); next } /^$/ { next } { print f " :: " $0 }' | sort
}
same_tree() {  # same_tree "what" REF ROOT
    check "$1: diff -r" timeout 120 diff -r --no-dereference "$2" "$3"
    meta "$2" >"$work/meta.ref"
    meta "$3" >"$work/meta.got"
    check "$1: names, types, modes, sizes, nlinks, owners, mtimes" diff "$work/meta.ref" "$work/meta.got"
    check "$1: xattrs" diff <(xattrs_of "$2") <(xattrs_of "$3")
}

ref="$work/ref"
mkdir "$ref"
apply_ops "$ref"
expect_code "volume init (batch)" 0 "$packfs" volume init "$work/vol" --durability batch
mnt="$work/mnt"
expect_code "mount VOLUME" 0 do_mount "$work/vol" "$mnt"
check "  mounted read-write, type fuse.packfs" \
    grep -qE "^[0-9]+ [0-9]+ [0-9:]+ / $mnt rw,.* - fuse\\.packfs $work/vol " /proc/self/mountinfo
check "  the volume is locked by the daemon (compact asks it)" test -n "$(daemon_pid "$mnt")"
expect_code "cp -a, mv, rm -rf, ln, ln -s, touch -d, truncate, >>, chmod, setfattr on the mount" 0 \
    timeout 120 bash -c "$(declare -f apply_ops); work='$work'; tree='$tree'; set -e; apply_ops '$mnt'"
same_tree "live mount vs reference" "$ref" "$mnt"
# cp -a creates each file 0700 and then hands the mode over as system.posix_acl_access: a
# filesystem without ACLs must refuse that xattr (EOPNOTSUPP) so that cp falls back to chmod.
check "  cp -a kept the modes (a 0755 file is 0755, a 0644 one 0644)" \
    test "$(stat -c %a "$mnt/a/b/three moved")" = 755 -a "$(stat -c %a "$mnt/tree/cut")" = 644
check "  no system.posix_acl_* xattr stored as a plain one" \
    bash -c '! getfattr -R -h -d -m "^system\.posix_acl" "$1" 2>/dev/null | grep -q posix_acl' _ "$mnt"
check "  hard links: one inode, nlink 3" \
    test "$(stat -c '%i %h' "$mnt/tree/big")" = "$(stat -c '%i %h' "$mnt/a/b/big hard 2")" \
    -a "$(stat -c %h "$mnt/c/big hard")" = 3
check "  truncate up reads zeros past the old end" \
    cmp -s <(tail -c 1000 "$mnt/tree/grow") <(head -c 1000 /dev/zero)
check "  df on the mount works (statfs)" df "$mnt"

expect_code "packfs umount" 0 do_umount "$mnt"
check "  the mount is gone" bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$mnt"
check "  the volume is released (the daemon has exited)" test -z "$(daemon_pid "$mnt")"
expect_code "  volume check" 0 "$packfs" volume check "$work/vol"
expect_code "  packfs diff REF VOLUME (unmounted)" 0 "$packfs" diff "$ref" "$work/vol"
expect_code "remount" 0 do_mount "$work/vol" "$mnt"
same_tree "after remount" "$ref" "$mnt"

# ---- compaction while mounted and written to ----
gen_before=$("$packfs" volume status --json "$work/vol" | sed -n 's/.*"generation": \([0-9]*\).*/\1/p')
rm -f "$work/stop"
mkdir "$mnt/busy"
(
    i=0
    while [ ! -e "$work/stop" ]; do
        i=$((i + 1))
        printf 'line %d\n' "$i" >>"$mnt/busy/log" || { echo "writer: append $i failed"; exit 1; }
        if [ $((i % 50)) -eq 0 ]; then : >"$mnt/busy/file $i"; fi
    done
    echo "$i" >"$work/written"
) &
writer=$!
track_pid $writer
wait_for test -s "$mnt/busy/log" || true
sleep 0.3
expect_code "volume compact while mounted and written to" 0 "$packfs" volume compact "$work/vol"
check "  says it went through the mount, into the next generation" \
    grep -q "mounted on $mnt) into generation $((gen_before + 1))" "$work/last.out"
sleep 0.3
expect_code "volume compact again, still written to" 0 "$packfs" volume compact "$work/vol"
check "  generation $((gen_before + 2))" grep -q "into generation $((gen_before + 2))" "$work/last.out"
sleep 0.3
touch "$work/stop"
check "the writer finished without an error" wait $writer
written=$(cat "$work/written" 2>/dev/null || echo 0)
echo "  the writer appended $written lines"
check "  every appended line is there, in order" cmp -s <(seq 1 "$written" | sed 's/^/line /') "$mnt/busy/log"
check "  every file it made is there" \
    test "$(ls "$mnt/busy" | grep -c '^file ')" -eq $((written / 50))
# The reference gets what the writer made, as it is on the mount; both roots one mtime.
cp -a "$mnt/busy" "$ref/busy"
touch -d '2024-03-03 03:03:03.3' "$ref" "$mnt"
same_tree "after compactions" "$ref" "$mnt"
expect_code "packfs umount" 0 do_umount "$mnt"
expect_code "  volume status" 0 "$packfs" volume status "$work/vol"
check "  shows generation $((gen_before + 2))" grep -qE "generation +$((gen_before + 2))\$" "$work/last.out"
check "  the old generations' files are gone" \
    test ! -e "$work/vol/pack.$gen_before" -a ! -e "$work/vol/pack.$((gen_before + 1))"
expect_code "  volume check" 0 "$packfs" volume check "$work/vol"
expect_code "remount after the compactions" 0 do_mount "$work/vol" "$mnt"
same_tree "after compactions and a remount" "$ref" "$mnt"
expect_code "packfs umount" 0 do_umount "$mnt"

# ---- auto-compaction is on by default: a journal never grows far past 256 MiB ----
# 320 MiB of overwrites of one 1 MiB file on a fresh volume (a tiny pack, so the 256 MiB floor
# decides): the daemon compacts by itself once, and the journal left is what came after.
json_field() { "$packfs" volume status --json "$1" | sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p"; }
expect_code "volume init (auto-compaction)" 0 "$packfs" volume init "$work/autovol"
expect_code "  mount with the default --compact-at (auto)" 0 do_mount "$work/autovol" "$work/amnt"
head -c 1048576 /dev/urandom >"$work/mib"
for i in $(seq 1 320); do
    dd if="$work/mib" of="$work/amnt/f" bs=1M conv=notrunc status=none
done
check "  the file is whole" cmp "$work/mib" "$work/amnt/f"
expect_code "  packfs umount" 0 do_umount "$work/amnt"
auto_gen=$(json_field "$work/autovol" generation)
auto_journal=$(json_field "$work/autovol" journal_bytes)
echo "  generation $auto_gen, journal $auto_journal bytes"
check "  it compacted by itself (generation 2 or more)" test "$auto_gen" -ge 2
check "  the journal is under the 256 MiB threshold" test "$auto_journal" -lt $((256 << 20))
expect_code "  remount" 0 do_mount "$work/autovol" "$work/amnt"
check "  the file is whole after the remount" cmp "$work/mib" "$work/amnt/f"
expect_code "  packfs umount" 0 do_umount "$work/amnt"

# ---- crash survival: SIGKILL the writer and the daemon, then remount ----
head -c 300000 /dev/urandom >"$work/payload.1"
head -c 200000 /dev/urandom >"$work/payload.2"
head -c 5000 /dev/urandom >"$work/payload.3"
gone() { [ ! -d "/proc/$1" ] || [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
crash_case() {
    local durability="$1"
    local vol="$work/crash-$durability" cm="$work/cmnt-$durability" ready="$work/ready-$durability"
    echo "-- durability $durability"
    expect_code "volume init --durability $durability" 0 "$packfs" volume init "$vol" --durability "$durability"
    expect_code "  mount" 0 do_mount "$vol" "$cm"
    # The writer: a new directory and file (sync FILE fsyncs it), another file by dd
    # conv=fsync, an existing file rewritten and fsync'd; then it says so and writes on
    # without syncing until it is killed.
    printf 'old content, longer than the new one\n' >"$cm/rewritten"
    (
        set -e
        mkdir -p "$cm/d/e"
        cp "$work/payload.1" "$cm/d/e/synced by sync"
        sync "$cm/d/e/synced by sync"
        dd if="$work/payload.2" of="$cm/d/dd conv=fsync" bs=64k conv=fsync status=none
        cp "$work/payload.3" "$cm/rewritten"
        sync "$cm/rewritten"                    # coreutils: fsync on an O_RDONLY descriptor
        touch "$ready"
        i=0
        while :; do i=$((i + 1)); printf 'unsynced %d\n' "$i" >>"$cm/unsynced"; done
    ) &
    local writer=$!
    track_pid $writer
    check "  the writer fsync'd and is ready" wait_for test -e "$ready"
    local daemon
    daemon=$(daemon_pid "$cm")
    check "  the daemon found by its mount point ($daemon)" test -n "$daemon"
    sleep 0.2
    kill -9 $writer $daemon 2>/dev/null || true
    wait $writer 2>/dev/null || true
    check "  the daemon is dead" wait_for gone "$daemon"
    check "  the mount is dead (ENOTCONN)" bash -c '! stat "$1" >/dev/null 2>&1' _ "$cm"
    fusermount3 -uz "$cm" 2>/dev/null || umount -l "$cm"
    check "  the dead mount is cleaned" bash -c '! grep -q " $1 " /proc/self/mountinfo' _ "$cm"
    expect_code "  remount" 0 do_mount "$vol" "$cm"
    check "  sync FILE: the bytes are there" cmp "$work/payload.1" "$cm/d/e/synced by sync"
    check "  dd conv=fsync: the bytes are there" cmp "$work/payload.2" "$cm/d/dd conv=fsync"
    check "  rewritten, then fsync'd by sync FILE (a read-only fd): the new bytes, and only those" cmp "$work/payload.3" "$cm/rewritten"
    if [ -e "$cm/unsynced" ]; then
        check "  what was not synced is a clean prefix of what was written" \
            bash -c 'n=$(wc -l <"$1"); cmp -s "$1" <(seq 1 "$n" | sed "s/^/unsynced /")' _ "$cm/unsynced"
    fi
    expect_code "  packfs umount" 0 do_umount "$cm"
    expect_code "  volume check" 0 "$packfs" volume check "$vol"
}
crash_case always
crash_case batch
crash_case explicit

# ---- explicit mode's loss window: the commit interval, and packfs sync ----
# A mkdir + mv never fsync'd survives a SIGKILL of the daemon made after the default commit
# interval (5 s); with the interval off, `packfs sync MNT` is what makes them survive.
kill_daemon() {  # SIGKILL the daemon serving MNT and clean the dead mount
    local daemon
    daemon=$(daemon_pid "$1")
    check "  the daemon found by its mount point ($daemon)" test -n "$daemon"
    kill -9 "$daemon" 2>/dev/null || true
    check "  the daemon is dead" wait_for gone "$daemon"
    fusermount3 -uz "$1" 2>/dev/null || umount -l "$1"
}
window_case() {  # window_case NAME MOUNT-OPTIONS... ; then the body syncs or waits
    local vol="$work/window-$1" wm="$work/wmnt-$1"
    expect_code "volume init --durability explicit ($1)" 0 "$packfs" volume init "$vol" --durability explicit
    shift
    expect_code "  mount $*" 0 do_mount "$vol" "$wm" "$@"
    mkdir "$wm/made" && touch "$wm/made/x" && mv "$wm/made" "$wm/moved"
}
window_case interval
sleep 6
kill_daemon "$work/wmnt-interval"
expect_code "  remount" 0 do_mount "$work/window-interval" "$work/wmnt-interval"
check "  the un-fsynced mkdir + mv survived (commit interval 5 s)" test -e "$work/wmnt-interval/moved/x"
expect_code "  packfs umount" 0 do_umount "$work/wmnt-interval"
window_case sync --commit-interval 0
expect_code "  packfs sync MNT" 0 "$packfs" sync "$work/wmnt-sync"
kill_daemon "$work/wmnt-sync"
expect_code "  remount" 0 do_mount "$work/window-sync" "$work/wmnt-sync"
check "  the mkdir + mv made before packfs sync survived" test -e "$work/wmnt-sync/moved/x"
expect_code "  packfs umount" 0 do_umount "$work/wmnt-sync"
# -o sync (a volume made in explicit mode, mounted in batch mode): each change durable when it
# returns, so a SIGKILL right after the mkdir + mv, with no sync and the interval not passed,
# keeps them (in explicit mode they would still be in the daemon's memory).
window_case osync -o sync
kill_daemon "$work/wmnt-osync"
expect_code "  remount" 0 do_mount "$work/window-osync" "$work/wmnt-osync"
check "  the mkdir + mv made on a -o sync mount survived at once" test -e "$work/wmnt-osync/moved/x"
expect_code "  packfs umount" 0 do_umount "$work/wmnt-osync"
# The defaults: a volume made without --durability is explicit, and a mount of it keeps the
# commit interval (the interval case above); without an fsync, a SIGKILL at once may lose the
# mkdir + mv but never half of them.
expect_code "volume init (defaults)" 0 "$packfs" volume init "$work/window-defaults"
check "  explicit by default" grep -q "durability   explicit" <("$packfs" volume status "$work/window-defaults")
expect_code "  mount" 0 do_mount "$work/window-defaults" "$work/wmnt-defaults"
mkdir "$work/wmnt-defaults/made" && touch "$work/wmnt-defaults/made/x" && mv "$work/wmnt-defaults/made" "$work/wmnt-defaults/moved"
kill_daemon "$work/wmnt-defaults"
expect_code "  remount" 0 do_mount "$work/window-defaults" "$work/wmnt-defaults"
check "  the mkdir + mv are there whole or not at all" bash -c \
    '{ [ -e "$1/moved/x" ] && [ ! -e "$1/made" ]; } || { [ ! -e "$1/moved" ] && [ ! -e "$1/made" ]; }' _ "$work/wmnt-defaults"
expect_code "  packfs umount" 0 do_umount "$work/wmnt-defaults"
expect_code "packfs sync of a path on another filesystem (syncfs)" 0 "$packfs" sync "$work"
expect_code "packfs sync of a missing path" 1 "$packfs" sync "$work/missing"

# ---- sparse files round trip through a mounted volume and a mounted host directory ----
# The same sparse files made in each and in a plain directory (the reference): `du` sees the
# holes, SEEK_DATA finds the data, and `cp --sparse=always` and `tar -S` out of the mount and
# back keep the bytes and the holes.
expect_code "volume init (sparse)" 0 "$packfs" volume init "$work/svol"
expect_code "  mount the volume" 0 do_mount "$work/svol" "$work/smnt"
mkdir -p "$work/shost" "$work/sref"
expect_code "  mount a host directory" 0 do_mount "$work/shost" "$work/hmnt"
make_sparse() {
    local r="$1"
    printf 'a' | dd of="$r/one" bs=1 seek=$((100 << 20)) conv=notrunc status=none
    truncate -s 50M "$r/two"
    printf 'middle' | dd of="$r/two" bs=1 seek=$((20 << 20)) conv=notrunc status=none
    head -c 70000 /dev/zero >"$r/zeros"   # written zeros: data, not a hole
}
first_data() {
    python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); print(os.lseek(fd,0,os.SEEK_DATA))" "$1"
}
for root in "$work/sref" "$work/smnt" "$work/hmnt"; do make_sparse "$root"; done
for root in "$work/smnt" "$work/hmnt"; do
    name=$(basename "$root")
    for f in one two zeros; do
        check "  $name/$f: the same bytes as the reference" cmp "$work/sref/$f" "$root/$f"
    done
    kib=$(du -k "$root/one" | cut -f1)
    check "  $name: du sees the holes of a 100 MiB file ($kib KiB)" test "$kib" -le 256
    at=$(first_data "$root/one")
    check "  $name: SEEK_DATA skips the hole ($at)" test "$at" -ge $((99 << 20))
    rm -rf "$work/sout" && mkdir "$work/sout"
    check "  $name: cp --sparse=always out" cp --sparse=always "$root/one" "$root/two" "$work/sout/"
    for f in one two; do
        check "  $name: cp'd $f the same" cmp "$work/sref/$f" "$work/sout/$f"
        kib=$(du -k "$work/sout/$f" | cut -f1)
        check "  $name: cp'd $f kept its holes ($kib KiB)" test "$kib" -le 256
    done
    check "  $name: tar -S out" tar -C "$root" -S -cf "$work/s.tar" one two zeros
    mkdir -p "$root/back"
    check "  $name: tar -S back in" tar -C "$root/back" -xf "$work/s.tar"
    for f in one two zeros; do
        check "  $name: untarred $f the same" cmp "$work/sref/$f" "$root/back/$f"
    done
    kib=$(du -k "$root/back/one" | cut -f1)
    check "  $name: untarred one kept its holes ($kib KiB)" test "$kib" -le 256
done
expect_code "  packfs umount (volume)" 0 do_umount "$work/smnt"
expect_code "  packfs umount (host directory)" 0 do_umount "$work/hmnt"
expect_code "  remount the volume" 0 do_mount "$work/svol" "$work/smnt"
check "  after the remount: one the same" cmp "$work/sref/one" "$work/smnt/back/one"
kib=$(du -k "$work/smnt/back/one" | cut -f1)
check "  after the remount: still its holes ($kib KiB)" test "$kib" -le 256
expect_code "  packfs umount" 0 do_umount "$work/smnt"
rm -rf "$work/sref" "$work/shost" "$work/sout" "$work/s.tar"

# ---- copies share chunks: cp (copy_file_range) of a 192 MiB file moves no data ----
# The daemon's memory and the journal grow by metadata only; the copy and the source then
# change apart, and both survive a remount (the clone record replayed) and a compaction.
# `cp --reflink=always` asks for FICLONE, which the kernel does not pass to FUSE: it fails
# with EOPNOTSUPP (a plain `cp` or `cp --reflink=auto` shares).
expect_code "volume init (reflink)" 0 "$packfs" volume init "$work/rvol"
expect_code "  mount" 0 do_mount "$work/rvol" "$work/rmnt"
head -c $((192 << 20)) /dev/urandom >"$work/r256"
cp "$work/r256" "$work/rmnt/big"
rpid=$(daemon_pid "$work/rmnt" | head -1)
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
rss_before=$(rss_kib "$rpid")
journal_bytes() { stat -c %s "$work/rvol"/journal* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
# The copy's last records may still be pending (explicit mode writes them out in the
# background, or at an fsync): an fsync puts them in the journal before it is measured.
python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$work/rmnt/big"
journal_before=$(journal_bytes)
ms=$(python3 -c "
import os, sys, time
src = os.open(sys.argv[1], os.O_RDONLY)
dst = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t = time.perf_counter(); n = 0
while True:
    k = os.copy_file_range(src, dst, 1 << 30)
    if k == 0: break
    n += k
print('%.1f' % ((time.perf_counter() - t) * 1e3)); assert n == 192 << 20, n
" "$work/rmnt/big" "$work/rmnt/copy")
rss_after=$(rss_kib "$rpid")
journal_after=$(journal_bytes)
echo "  copy_file_range of 192 MiB (under the 256 MiB auto-compaction floor): $ms ms, daemon RSS $rss_before -> $rss_after KiB, journal $journal_before -> $journal_after bytes"
check "  the copy is the same" cmp "$work/r256" "$work/rmnt/copy"
check "  the daemon grew by under 16 MiB" test $((rss_after - rss_before)) -lt 16384
check "  the journal grew by under 64 KiB" test $((journal_after - journal_before)) -lt 65536
check "  cp shares too" cp "$work/rmnt/big" "$work/rmnt/cp-copy"
check "  cp's copy is the same" cmp "$work/r256" "$work/rmnt/cp-copy"
expect_code "  cp --reflink=always: the kernel sends FUSE no FICLONE" 1 cp --reflink=always "$work/rmnt/big" "$work/rmnt/always"
printf 'changed' | dd of="$work/rmnt/copy" bs=1 seek=100000 conv=notrunc status=none
cp "$work/r256" "$work/r256-changed"
printf 'changed' | dd of="$work/r256-changed" bs=1 seek=100000 conv=notrunc status=none
check "  a write to the copy shows in the copy" cmp "$work/r256-changed" "$work/rmnt/copy"
check "  and not in the source" cmp "$work/r256" "$work/rmnt/big"
expect_code "  packfs umount" 0 do_umount "$work/rmnt"
expect_code "  remount" 0 do_mount "$work/rvol" "$work/rmnt"
check "  after the remount: the source" cmp "$work/r256" "$work/rmnt/big"
check "  the changed copy" cmp "$work/r256-changed" "$work/rmnt/copy"
check "  cp's copy" cmp "$work/r256" "$work/rmnt/cp-copy"
expect_code "  packfs umount" 0 do_umount "$work/rmnt"
rm -f "$work/r256" "$work/r256-changed"

if [ "$failures" -ne 0 ]; then
    echo "fuse volume: $failures failure(s)"
    exit 1
fi
echo "fuse volume ok"

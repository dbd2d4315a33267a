#!/usr/bin/env bash
# Reproducible builds (DESIGN §8): the same tree packs to the same bytes after every file of it
# was read, from a `cp -a` copy, from a copy made in reverse creation order, with 1 and with
# 8 jobs, raw and zstd; a build moves no atime of a file or directory of its source, on ext4
# mounted strictatime (where every read would: the test shows that too); --keep-times all
# records atimes; --clamp-mtime and SOURCE_DATE_EPOCH clamp, and a malformed one is refused.
#
# Needs root and a loop device for the strictatime ext4 (mkfs.ext4 from e2fsprogs): without
# them the test fails saying so, it does not pass silently.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mnt="$work/mnt"
cleanup() {
    mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
source "$here/common.sh"

# --- an ext4 mounted strictatime: every read moves an atime --------------------------------
mkdir "$mnt"
if [ "$(id -u)" -ne 0 ]; then
    echo "FAIL: needs root, to mount an ext4 image with strictatime"
    exit 1
fi
if ! command -v mkfs.ext4 >/dev/null; then
    echo "FAIL: mkfs.ext4 is missing (scripts/install-deps.sh installs e2fsprogs)"
    exit 1
fi
truncate -s 96M ext4.img
mkfs.ext4 -q -F -O ^has_journal ext4.img
if ! mount -o loop,strictatime ext4.img "$mnt" 2> mount.err; then
    echo "FAIL: cannot loop-mount an ext4 image: $(cat mount.err)"
    exit 1
fi

# --- the tree: every kind of entry, made in one order ---------------------------------------
src="$mnt/src"
mkdir -p "$src/a/deep/er" "$src/b" "$src/empty"
printf 'hello\n' > "$src/hello.txt"
: > "$src/zero"
head -c 300000 /dev/urandom > "$src/a/random.bin"
python3 -c 'import sys; sys.stdout.write("a compressible line\n" * 20000)' > "$src/a/text.txt"
cp "$src/a/text.txt" "$src/a/deep/er/copy.txt"  # a duplicate: dedup
for i in $(seq 1 60); do printf 'file %d\n' "$i" > "$src/b/f$i"; done
ln "$src/hello.txt" "$src/a/hard"
ln -s ../hello.txt "$src/a/rel"
ln -s /nowhere "$src/dangling"
mkfifo "$src/fifo"
printf 'bytes' > "$src/$(printf 'latin1-\xe9')"
chmod 0750 "$src/a/deep"
chmod 0600 "$src/b/f1"
chown 1000:100 "$src/b/f2"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.color", b"blue"); os.setxattr(sys.argv[2], "user.z", b"\0\1")' \
    "$src/hello.txt" "$src/a"
touch -h -m -d '2001-02-03 04:05:06.123456789' "$src/a/rel"
touch -m -d '2001-02-03 04:05:06.987654321' "$src/b/f3"
# Old atimes everywhere but symlinks (Linux moves a symlink's atime on readlink, with no way to
# ask it not to: documented in pack.hpp), so a read is seen. The list of paths is made once
# (listing a directory moves its atime) and the atimes are read with lstat, which does not.
(cd "$src" && find . ! -type l | sort > "$work/paths")
(cd "$src" && xargs -d '\n' touch -a -d '2000-01-01 00:00:00.5' -- < "$work/paths")
atimes() {
    python3 -c 'import os, sys
for p in open(sys.argv[2], "rb").read().splitlines():
    print(repr(p), os.lstat(os.path.join(os.fsencode(sys.argv[1]), p)).st_atime_ns)' "$src" "$work/paths"
}

atimes > atimes.before
check "build" "$packfs" build -j 2 "$src" a.pack --json > a.json
atimes > atimes.after
check "a build moves no atime of a file or directory of its source" diff atimes.before atimes.after

find "$src" -type f -exec cat {} + > /dev/null
ls -lR "$src" > /dev/null
atimes > atimes.read
check "reading the tree moved atimes (strictatime in effect, so the check above can fail)" \
    bash -c "! diff -q atimes.before atimes.read > /dev/null"
check "built again after every file was read: the same bytes" \
    bash -c "'$packfs' build -j 2 '$src' b.pack > /dev/null && cmp a.pack b.pack"

cp -a "$src" "$mnt/copy"
check "a cp -a copy, 1 job: the same bytes" \
    bash -c "'$packfs' build -j 1 '$mnt/copy' c1.pack > /dev/null && cmp a.pack c1.pack"
check "a cp -a copy, 8 jobs: the same bytes" \
    bash -c "'$packfs' build -j 8 '$mnt/copy' c8.pack > /dev/null && cmp a.pack c8.pack"

# A copy made entry by entry in reverse order (other inode numbers, other on-disk directory
# order), times, owners, modes and xattrs set afterwards, deepest directory last.
python3 - "$src" "$mnt/reverse" <<'PY'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
entries = []
for root, dirs, files in os.walk(src):
    for name in dirs + files:
        entries.append(os.path.relpath(os.path.join(root, name), src))
entries.sort(reverse=True)
os.mkdir(dst)
dirs = [e for e in entries if os.path.isdir(os.path.join(src, e)) and not os.path.islink(os.path.join(src, e))]
for d in sorted(dirs, reverse=True):
    os.makedirs(os.path.join(dst, d), exist_ok=True)
linked = {}
for e in entries:
    s, d = os.path.join(src, e), os.path.join(dst, e)
    st = os.lstat(s)
    if e in dirs:
        continue
    if st.st_nlink > 1 and st.st_ino in linked:
        os.link(linked[st.st_ino], d)
        continue
    if os.path.islink(s):
        os.symlink(os.readlink(s), d)
    elif os.path.stat.S_ISFIFO(st.st_mode):
        os.mkfifo(d)
    else:
        with open(s, "rb") as i, open(d, "wb") as o:
            o.write(i.read())
    linked[st.st_ino] = d
for e in entries + [""]:
    s, d = os.path.join(src, e), os.path.join(dst, e)
    st = os.lstat(s)
    for name in os.listxattr(s, follow_symlinks=False):
        os.setxattr(d, name, os.getxattr(s, name, follow_symlinks=False), follow_symlinks=False)
    os.chown(d, st.st_uid, st.st_gid, follow_symlinks=False)
    if not os.path.islink(s):
        os.chmod(d, st.st_mode & 0o7777)
# Times last, deepest first, so making an entry does not move its directory's mtime after.
for e in sorted(entries, key=lambda p: -p.count("/")) + [""]:
    st = os.lstat(os.path.join(src, e))
    os.utime(os.path.join(dst, e), ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
PY
check "a copy made in reverse order, 8 jobs: the same bytes" \
    bash -c "'$packfs' build -j 8 '$mnt/reverse' r.pack > /dev/null && cmp a.pack r.pack"
check "zstd, the tree with 1 job and the reverse copy with 8: the same bytes" \
    bash -c "'$packfs' build -j 1 --compress zstd:9 --block-size 16K '$src' z1.pack > /dev/null &&
             '$packfs' build -j 8 --compress zstd:9 --block-size 16K '$mnt/reverse' z8.pack > /dev/null &&
             cmp z1.pack z8.pack"

check "format 2, the tree with 1 job and the reverse copy with 8: the same bytes" \
    bash -c "'$packfs' build --format 2 -j 1 '$src' v2a.pack > /dev/null &&
             '$packfs' build --format 2 -j 8 '$mnt/reverse' v2b.pack > /dev/null &&
             cmp v2a.pack v2b.pack"

# --- what is recorded ---------------------------------------------------------------------
stat_json() { "$packfs" stat --json "$1" "$2"; }
check "by default a reader sees atime = ctime = mtime" bash -c "'$packfs' stat --json a.pack /hello.txt | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s[\"atime\"] == s[\"mtime\"] == s[\"ctime\"], s'"
check "--keep-times all records the source's atime" bash -c "
  '$packfs' build --keep-times all '$mnt/copy' all.pack > /dev/null &&
  ! cmp -s a.pack all.pack &&
  '$packfs' stat --json all.pack /b/f3 | python3 -c '
import json, sys, os
s = json.load(sys.stdin)
st = os.stat(\"$mnt/copy/b/f3\")
assert s[\"atime\"] == {\"sec\": st.st_atime_ns // 10**9, \"nsec\": st.st_atime_ns % 10**9}, s
assert s[\"atime\"] != s[\"mtime\"], s'"

touch -m -d '@4102444800' "$src/b/f4"  # 2100: in the future
check "--clamp-mtime records later times as the clamp" bash -c "
  '$packfs' build --clamp-mtime 1700000000 '$src' clamp.pack > /dev/null &&
  '$packfs' stat --json clamp.pack /b/f4 | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s[\"mtime\"] == {\"sec\": 1700000000, \"nsec\": 0}, s' &&
  '$packfs' stat --json clamp.pack /b/f3 | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s[\"mtime\"] == {\"sec\": 981173106, \"nsec\": 987654321}, s'"
check "SOURCE_DATE_EPOCH clamps the same way: the same bytes" \
    bash -c "SOURCE_DATE_EPOCH=1700000000 '$packfs' build '$src' sde.pack > /dev/null && cmp clamp.pack sde.pack"
check "--clamp-mtime wins over SOURCE_DATE_EPOCH" \
    bash -c "SOURCE_DATE_EPOCH=5 '$packfs' build --clamp-mtime 1700000000 '$src' both.pack > /dev/null && cmp clamp.pack both.pack"
expect_code "a malformed SOURCE_DATE_EPOCH is a usage error" 2 \
    env SOURCE_DATE_EPOCH=yesterday "$packfs" build "$src" bad.pack
check "... naming it" grep -q "SOURCE_DATE_EPOCH='yesterday'" "$work/last.err"
expect_code "a malformed --clamp-mtime is a usage error" 2 "$packfs" build --clamp-mtime 1.5 "$src" bad.pack
expect_code "--keep-times takes mtime or all" 2 "$packfs" build --keep-times some "$src" bad.pack
check "no pack is left by the refused builds" test ! -e bad.pack

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "reproducible builds ok"

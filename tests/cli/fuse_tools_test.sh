#!/usr/bin/env bash
# Ordinary tools against a mounted pack (packfs mount PACK MNT, read-only) of a generated tree:
# random names (spaces, unicode, a leading dash), nested and empty directories, sizes 0 to
# ~300 KiB with the 4095/4096/4097/65536 boundaries, duplicates, symlinks (relative, dangling,
# absolute, long), hard links, a fifo, a directory of 2000 entries, modes 0600/0755/04755/
# 02755/01777/0444, owners (as root), mtimes with nanoseconds and user.* xattrs. Through the
# mount: ls -lR, find, stat -c of every entry, cat of every file, cp -a out, tar c | tar x,
# diff -r and getfattr -d all agree with the source; writes fail with EROFS. A pack with no
# xattrs at all: getfattr -d prints nothing. A host directory mounted read-write: a symlink
# pointing out of it is not followed out through the mount, and writes land in the directory.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
fuse_setup

seed="${FUSE_TEST_SEED:-$(( $(date +%s) % 32768 ))}"
echo "seed $seed (FUSE_TEST_SEED=$seed reruns this tree)"
RANDOM=$seed

# ---- the generated tree ----
src="$work/src"
mkdir -p "$src"
head -c 400000 /dev/urandom >"$work/pool"
fragments=("plain" "with space" "ünïcödé" "日本語" "emoji 🎉" "-dash" "dot.ted" "quote'd"
           "x" "UPPER" "a  b" "tab	in" "semi;colon" "brace{}" "€uro" "~tilde" "%pct")
rname() { name="${fragments[RANDOM % ${#fragments[@]}]} $RANDOM"; }  # into $name (no subshell:
                                                                        # it would repeat RANDOM)
# make_file PATH SIZE: SIZE bytes, random (from the pool, at a random offset) or zeros
make_file() {
    if [ "$2" -eq 0 ]; then
        : >"$1"
    elif [ $((RANDOM % 4)) -eq 0 ]; then
        head -c "$2" /dev/zero >"$1"
    else
        head -c $((RANDOM * 3 % 90000 + $2)) "$work/pool" | tail -c "$2" >"$1"
    fi
}
dirs=("$src")
for i in $(seq 1 24); do
    parent="${dirs[RANDOM % ${#dirs[@]}]}"
    rname
    d="$parent/$name dir"  # (a file's name never ends so: no clash)
    mkdir -p "$d"
    dirs+=("$d")
done
files=()
for size in 0 1 63 64 65 4095 4096 4097 65535 65536 65537 131072 131073 307200; do
    rname
    f="${dirs[RANDOM % ${#dirs[@]}]}/size $size $name"
    make_file "$f" "$size"
    files+=("$f")
done
for i in $(seq 1 90); do
    case $((RANDOM % 3)) in
        0) size=$((RANDOM % 200)) ;;
        1) size=$((RANDOM % 20000)) ;;
        *) size=$((RANDOM * 9 % 307200)) ;;
    esac
    rname
    f="${dirs[RANDOM % ${#dirs[@]}]}/$name"
    make_file "$f" "$size"
    files+=("$f")
done
cp "${files[7]}" "$src/duplicate of 4097"            # same content, another inode
printf 'hidden\n' >"$src/.dotfile"
mkdir -p "$src/empty" "$src/nested/empty/deeper" "$src/nested/only-empty"
# a wide directory: 2000 entries, most empty, some small
wide="$src/wide dir"
mkdir "$wide"
for i in $(seq 1 2000); do
    if [ $((i % 10)) -eq 0 ]; then printf 'entry %d\n' "$i" >"$wide/entry $i ü"; else : >"$wide/entry $i ü"; fi
done
# links
mkdir "$src/links"
ln -s "../${files[0]#"$src/"}" "$src/links/to a file"
ln -s "../nested" "$src/links/to a dir"
ln -s "does/not/exist" "$src/links/dangling"
ln -s "/nonexistent/absolute/target" "$src/links/absolute"
ln -s "$(printf 'long/%.0s' $(seq 1 50))end" "$src/links/long target"
ln -s "日本語 target" "$src/links/ünï link"
ln "${files[5]}" "$src/links/hard 1"
ln "${files[5]}" "$src/nested/hard 2"
ln "$src/.dotfile" "$src/empty/../hard dot"
mkfifo "$src/fifo.p"
# modes
chmod 0600 "${files[1]}"
chmod 0755 "${files[2]}"
chmod 04755 "${files[3]}"
chmod 02755 "${files[4]}"
chmod 0444 "${files[8]}"
chmod 0700 "$src/nested/only-empty"
chmod 01777 "$src/empty"
chmod 0750 "${dirs[1]}"
# owners (only root can give files away)
if [ "$(id -u)" -eq 0 ]; then
    chown 1234:5678 "${files[9]}" "${dirs[2]}"
    chown -h 4321:8765 "$src/links/dangling"
    chown 0:5678 "${files[10]}"
fi
# xattrs: user.* only (what an unprivileged user may set too)
setfattr -n user.color -v red "${files[0]}"
setfattr -n user.empty -v "" "${files[0]}"
setfattr -n user.bin -v 0x00ff00fe "${files[11]}"
setfattr -n user.long -v "$(head -c 3000 /dev/zero | tr '\0' 'v')" "${files[12]}"
setfattr -n user.dir -v "on a directory" "$src/nested"
setfattr -n user.space -v "a value with spaces" "$src/wide dir/entry 7 ü"
setfattr -n "user.ünï" -v "日本語" "$src/.dotfile"
# mtimes (ns), symlinks included; directories last, for creating entries moves theirs
touch -d '2001-09-09 01:46:40.123456789' "${files[0]}"
touch -d '1999-12-31 23:59:59.999999999' "${files[1]}"
touch -d '1970-01-01 00:00:01' "${files[2]}"
touch -d '2038-01-19 03:14:08.5' "${files[3]}"
touch -h -d '2010-10-10 10:10:10.101010101' "$src/links/to a file"
touch -h -d '2011-11-11 11:11:11.111111111' "$src/links/dangling"
n=0
while IFS= read -r -d '' d; do
    n=$((n + 1))
    touch -d "2015-05-0$((n % 9 + 1)) 12:34:56.$(printf '%09d' $((n * 7919)))" "$d"
done < <(find "$src" -depth -type d -print0)

"$packfs" build "$src" "$work/src.pack" >/dev/null
"$packfs" build --compress zstd:3 --block-size 16K "$src" "$work/zstd.pack" >/dev/null
echo "tree: $(find "$src" | wc -l) entries, $(du -sk "$src" | cut -f1) KiB"

mnt="$work/mnt"
expect_code "mount PACK" 0 do_mount "$work/src.pack" "$mnt"
check "  usable at once (mount returned)" test -d "$mnt/wide dir"
check "  mounted read-only, type fuse.packfs" \
    grep -qE "^[0-9]+ [0-9]+ [0-9:]+ / $mnt ro,.* - fuse\.packfs $work/src\.pack " /proc/self/mountinfo

# ---- ls -lR ----
# What legitimately differs: "total" (blocks) lines and a directory's size (the host's is its
# block size, a pack's the number of entries), and so the width of the size column.
ls_lr() {
    (cd "$1" && timeout 120 ls -lRA --time-style=+%Y-%m-%dT%H:%M:%S.%N .) |
        awk '/^total [0-9]+$/ { next } /^d/ { $5 = "-" } { print }' | tr -s ' '
}
ls_lr "$src" >"$work/ls.src"
ls_lr "$mnt" >"$work/ls.mnt"
check "ls -lRA: same listing (modes, links, owners, sizes, mtimes, link targets)" \
    diff "$work/ls.src" "$work/ls.mnt"
check "  (the listing is whole: 2000 wide entries)" test "$(grep -c ' entry [0-9]* ü$' "$work/ls.mnt")" -eq 2000

# ---- find ----
(cd "$src" && find . -printf '%y %p\n' | sort) >"$work/find.src"
(cd "$mnt" && timeout 120 find . -printf '%y %p\n' | sort) >"$work/find.mnt"
check "find: same entries, same types" diff "$work/find.src" "$work/find.mnt"

# ---- stat -c of every entry ----
stat_all() {  # type, mode, size (not of directories), nlink, uid, gid, mtime with ns
    (cd "$1" && find . -print0 | sort -z |
        timeout 120 xargs -0 stat -c '%F|%n|%a|%s|%h|%u|%g|%y') |
        awk -F'|' -v OFS='|' '$1 == "directory" { $4 = "-" } { print }'
}
stat_all "$src" >"$work/stat.src"
stat_all "$mnt" >"$work/stat.mnt"
check "stat -c of every entry: type, mode, size, nlink, uid, gid, mtime (ns)" \
    diff "$work/stat.src" "$work/stat.mnt"
check "  the mount reports 04755, 02755 and 01777" \
    bash -c 'grep -q "|4755|" "$1" && grep -q "|2755|" "$1" && grep -q "^directory|./empty|1777|" "$1"' _ "$work/stat.mnt"
inos() { (cd "$mnt" && find . -print0 | sort -z | xargs -0 stat -c '%i %n'); }
inos >"$work/ino.1"
inos >"$work/ino.2"
check "st_ino stable across two stats of every entry" cmp -s "$work/ino.1" "$work/ino.2"
check "  hard links share one st_ino" test "$(stat -c %i "$mnt/links/hard 1")" = "$(stat -c %i "$mnt/nested/hard 2")" \
    -a "$(stat -c %i "$mnt/hard dot")" = "$(stat -c %i "$mnt/.dotfile")"
distinct_src=$(cd "$src" && find . -printf '%i\n' | sort -u | wc -l)
distinct_mnt=$(cut -d' ' -f1 "$work/ino.1" | sort -u | wc -l)
check "  as many distinct st_ino as the source has inodes ($distinct_src)" test "$distinct_src" -eq "$distinct_mnt"
check "  readdir's d_ino equals st_ino" \
    test "$(cd "$mnt/links" && find . -mindepth 1 -printf '%i %p\n' | sort)" = \
         "$(cd "$mnt/links" && find . -mindepth 1 -print0 | xargs -0 stat -c '%i %n' | sort)"

# ---- cat of every file ----
cat_all() {  # every regular file, concatenated in name order (sizes are compared above)
    (cd "$1" && find . -type f -print0 | sort -z | timeout 120 xargs -0 cat | sha256sum)
}
check "cat of every file: the same bytes (all files concatenated)" test "$(cat_all "$src")" = "$(cat_all "$mnt")"
bad=0
for f in "${files[@]:0:14}" "$src/duplicate of 4097"; do
    rel="${f#"$src/"}"
    if ! cat "$mnt/$rel" | cmp -s - "$f"; then echo "  differs: $rel"; bad=$((bad + 1)); fi
done
check "  cat of each boundary-size file (0 .. 307200) equals the source" test $bad -eq 0
check "  a read at offset 4095, across a page (dd skip)" \
    test "$(dd if="$mnt/${files[7]#"$src/"}" bs=1 skip=4090 count=10 2>/dev/null | od -An -tx1)" = \
         "$(dd if="${files[7]}" bs=1 skip=4090 count=10 2>/dev/null | od -An -tx1)"

# ---- getfattr -d ----
xattrs_all() {  # one line per (file, attribute), in name order
    (cd "$1" && timeout 120 getfattr -R -P -h -d -e hex . 2>&1) |
        awk '/^# file: / { f = substr($0, 9); next } /^$/ { next } { print f " :: " $0 }' | sort
}
xattrs_all "$src" >"$work/xattr.src"
xattrs_all "$mnt" >"$work/xattr.mnt"
check "getfattr -R -d: the same user.* attributes and values" diff "$work/xattr.src" "$work/xattr.mnt"
check "  (there are 8 of them: 7 set, one on a hard-linked file)" bash -c 'test "$(wc -l <"$1")" -eq 8 || { cat "$1"; false; }' _ "$work/xattr.mnt"
check "  getfattr -n user.color of one file" \
    test "$(getfattr --absolute-names --only-values -n user.color "$mnt/${files[0]#"$src/"}")" = red

# ---- diff -r, mount against source ----
# (GNU diff calls two fifos different whatever they are: the fifo is left to ls/stat/find.)
check "diff -r --no-dereference SOURCE MOUNT" timeout 120 diff -r --no-dereference -x fifo.p "$src" "$mnt"
check "  diff -r follows the links the same way (dereferencing)" \
    bash -c 'diff -r -x fifo.p -x dangling -x absolute -x "long target" -x "ünï link" "$1" "$2" >/dev/null' _ "$src" "$mnt"

# ---- cp -a out ----
expect_code "cp -a MOUNT/. COPY" 0 timeout 120 cp -a "$mnt/." "$work/copy"
check "  diff -r SOURCE COPY" diff -r --no-dereference -x fifo.p "$src" "$work/copy"
stat_all "$work/copy" >"$work/stat.copy"
check "  stat of every copied entry equals the source's (modes, owners, mtimes, hard links)" \
    diff "$work/stat.src" "$work/stat.copy"
xattrs_all "$work/copy" >"$work/xattr.copy"
check "  the copy's xattrs equal the source's" diff "$work/xattr.src" "$work/xattr.copy"

# ---- tar c from the mount, tar x ----
expect_code "tar c from the mount (posix format: ns mtimes, xattrs)" 0 \
    timeout 120 tar -C "$mnt" --format=posix --xattrs --xattrs-include='user.*' -cf "$work/t.tar" .
mkdir "$work/untar"
expect_code "  tar x" 0 tar -C "$work/untar" --xattrs --xattrs-include='user.*' -xpf "$work/t.tar"
check "  diff -r SOURCE EXTRACTED" diff -r --no-dereference -x fifo.p "$src" "$work/untar"
stat_all "$work/untar" >"$work/stat.untar"
check "  stat of every extracted entry equals the source's" diff "$work/stat.src" "$work/stat.untar"
xattrs_all "$work/untar" >"$work/xattr.untar"
check "  the extracted xattrs equal the source's" diff "$work/xattr.src" "$work/xattr.untar"

# ---- the zstd pack: the same bytes ----
expect_code "mount a zstd pack (16K blocks)" 0 do_mount "$work/zstd.pack" "$work/mnt.zstd"
check "  cat of every file: the same bytes" test "$(cat_all "$src")" = "$(cat_all "$work/mnt.zstd")"
check "  the same stat of every entry" diff "$work/stat.src" <(stat_all "$work/mnt.zstd")
expect_code "  packfs umount" 0 do_umount "$work/mnt.zstd"

# ---- read-only: EROFS ----
some="$mnt/${files[20]#"$src/"}"
erofs() {  # erofs "what" COMMAND...: fails, and says "Read-only file system"
    local what="$1"
    shift
    local got
    got=$(code_of "$@")
    if [ "$got" -ne 0 ] && grep -q 'Read-only file system' "$work/last.err"; then
        echo "ok: $what: EROFS"
    else
        echo "FAIL: $what: exit $got, expected a failure with 'Read-only file system'"
        cat "$work/last.out" "$work/last.err"
        failures=$((failures + 1))
    fi
}
erofs "touch a new file" touch "$mnt/new file"
erofs "append to a file" bash -c 'echo more >>"$1"' _ "$some"
erofs "truncate a file" truncate -s 0 "$some"
erofs "mkdir" mkdir "$mnt/newdir"
erofs "rm a file" rm -f "$some"
erofs "rmdir an empty dir" rmdir "$mnt/nested/empty/deeper"
erofs "mv" mv "$some" "$mnt/moved"
erofs "ln -s" ln -s x "$mnt/newlink"
erofs "ln (hard)" ln "$some" "$mnt/newhard"
erofs "chmod" chmod 0777 "$some"
erofs "touch -d an existing file" touch -d '2000-01-01' "$some"
erofs "setfattr" setfattr -n user.new -v 1 "$some"
erofs "mkfifo" mkfifo "$mnt/newfifo"
check "  nothing changed (stat of every entry)" diff "$work/stat.src" <(stat_all "$mnt")
expect_code "packfs umount the pack" 0 do_umount "$mnt"
check "  the mount is gone" bash -c '! awk -v m="$1" "\$5 == m { f = 1 } END { exit !f }" /proc/self/mountinfo' _ "$mnt"

# ---- a pack without any xattr ----
mkdir -p "$work/plain/sub"
printf 'a\n' >"$work/plain/a"
printf 'b\n' >"$work/plain/sub/b"
ln -s a "$work/plain/l"
"$packfs" build "$work/plain" "$work/plain.pack" >/dev/null
expect_code "mount a pack with no xattrs" 0 do_mount "$work/plain.pack" "$work/mnt.plain"
expect_code "  getfattr -R -d succeeds" 0 getfattr -R -d "$work/mnt.plain"
check "  and prints nothing" test ! -s "$work/last.out" -a ! -s "$work/last.err"
expect_code "  getfattr -d of one file succeeds" 0 getfattr -d "$work/mnt.plain/a"
check "  and prints nothing" test ! -s "$work/last.out" -a ! -s "$work/last.err"
expect_code "  getfattr -d a second time (the kernel was told ENOSYS)" 0 getfattr -d "$work/mnt.plain/sub/b"
check "  and prints nothing" test ! -s "$work/last.out" -a ! -s "$work/last.err"
expect_code "  packfs umount" 0 do_umount "$work/mnt.plain"

# ---- a host directory, read-write, contained ----
# Mounted at $work/mnts/hd: a relative link climbing out of the directory
# ("../outside/secret") names, seen from the mount, $work/mnts/outside/secret, which does not
# exist; from the directory itself, $work/outside/secret, which does.
host="$work/hostdir"
mkdir -p "$host/sub" "$work/outside" "$work/mnts"
printf 'the secret\n' >"$work/outside/secret"
printf 'inside\n' >"$host/inside"
ln -s ../outside/secret "$host/escape"
ln -s ../../outside/secret "$host/sub/escape deeper"
ln -s ../outside "$host/escape dir"
ln -s inside "$host/good link"
hm="$work/mnts/hd"
expect_code "mount a host directory (read-write)" 0 do_mount "$host" "$hm"
check "  mounted read-write" \
    awk -v m="$hm" '$5 == m && $6 ~ /^rw/ { f = 1 } END { exit !f }' /proc/self/mountinfo
check "  a link inside the directory is followed" test "$(cat "$hm/good link")" = inside
check "  the escaping links are links (lstat)" test "$(stat -c %F "$hm/escape")" = "symbolic link"
check "  readlink gives the target unchanged" test "$(readlink "$hm/escape")" = ../outside/secret
expect_code "  cat MOUNT/escape fails" 1 cat "$hm/escape"
check "    and shows nothing of the outside file" bash -c '! grep -q secret "$1"' _ "$work/last.out"
expect_code "  cat MOUNT/sub/escape deeper fails" 1 cat "$hm/sub/escape deeper"
check "    and shows nothing of the outside file" bash -c '! grep -q secret "$1"' _ "$work/last.out"
expect_code "  ls MOUNT/escape dir/ fails" 2 ls "$hm/escape dir/"
check "    and lists nothing of the outside" bash -c '! grep -q secret "$1"' _ "$work/last.out"
expect_code "  writing through the escaping link fails" 1 bash -c 'echo pwned >"$1"' _ "$hm/escape"
check "  the outside file is untouched" test "$(cat "$work/outside/secret")" = "the secret"
check "  no file appeared beside the mount" test ! -e "$work/mnts/outside"
expect_code "  write a new file through the mount" 0 bash -c 'printf "written through\n" >"$1/new file"' _ "$hm"
check "    it is in the directory" test "$(cat "$host/new file")" = "written through"
expect_code "  mkdir, a file in it, mv, ln -s, append, chmod" 0 bash -c '
    mkdir "$1/made" && printf "x\n" >"$1/made/f" && mv "$1/made/f" "$1/made/g" &&
    ln -s g "$1/made/l" && printf "y\n" >>"$1/made/g" && chmod 0640 "$1/made/g"' _ "$hm"
check "    all of it in the directory" test "$(cat "$host/made/g")" = "$(printf 'x\ny')" \
    -a ! -e "$host/made/f" -a "$(readlink "$host/made/l")" = g -a "$(stat -c %a "$host/made/g")" = 640
expect_code "  rm through the mount" 0 rm "$hm/inside"
check "    gone from the directory" test ! -e "$host/inside"
expect_code "  setfattr through the mount" 0 setfattr -n user.k -v v "$hm/made/g"
check "    the xattr is on the host file" test "$(getfattr --absolute-names --only-values -n user.k "$host/made/g")" = v
expect_code "  packfs umount" 0 do_umount "$hm"
check "  the outside is exactly as before" test "$(ls -A "$work/outside")" = secret

if [ "$failures" -ne 0 ]; then
    echo "fuse tools: $failures failure(s) (seed $seed)"
    exit 1
fi
echo "fuse tools ok"

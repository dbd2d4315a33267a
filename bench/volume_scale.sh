#!/bin/bash
# A mounted volume at the scale of a real tree (docs/BENCH.md, "Compaction by rebase"): a
# volume over a zstd pack of the tree, a copy of the tree untarred into it through the mount,
# its auto-compaction (which rebases the live tree), a second copy and its compaction, a find
# of everything and a `diff -r` of the first copy against the source; the daemon's RSS along
# the way.
# Usage: bench/volume_scale.sh PACKFS_BINARY WORKDIR SOURCE_DIR SOURCE_TAR
# (SOURCE_TAR: the same tree as SOURCE_DIR, as a tar; run as root: it mounts)
set -u
BIN=$1; W=$2; SRC=$3; TAR=$4
rm -rf "$W"; mkdir -p "$W/mnt"
PACK=$W.source.pack
[ -f "$PACK" ] || "$BIN" build "$SRC" "$PACK" --compress zstd >/dev/null
"$BIN" volume init --from "$PACK" "$W/vol" >/dev/null || exit 1
"$BIN" mount "$W/vol" "$W/mnt" --log "$W/log" || exit 1
PID=$(pgrep -f "mount $W/vol" | head -1)
rss() { grep -E "VmRSS|VmHWM" /proc/$PID/status | awk '{printf "%s %d MiB  ", $1, $2/1024}'; echo; }
echo "after mount: $(rss)"
mkdir "$W/mnt/copy"
t0=$(date +%s.%N)
tar -xf "$TAR" -C "$W/mnt/copy"
t1=$(date +%s.%N)
echo "untar through the mount: $(echo "$t1 - $t0" | bc) s; $(rss)"
sync
t0=$(date +%s.%N)
find "$W/mnt" -type f | wc -l
t1=$(date +%s.%N)
echo "find of both trees: $(echo "$t1 - $t0" | bc) s"
# An auto-compaction starts once the writers pause (or the journal passes 4x its threshold):
# wait for the generation to move, then for the journal to be short.
gen() { "$BIN" volume status "$W/vol" 2>/dev/null | awk '/generation/ { print $2 }'; }
t0=$(date +%s.%N)
for _ in $(seq 300); do [ "$(gen)" != 1 ] && break; sleep 1; done
t1=$(date +%s.%N)
echo "compaction seen after $(echo "$t1 - $t0" | bc) s; $(rss)"
"$BIN" volume status "$W/vol" 2>&1 | grep -E "generation|pack|journal|compacted"
# A second copy: with the first one's content handed to the pack, the daemon reuses that
# memory rather than growing by another 1.3 GB.
mkdir "$W/mnt/copy2"
t0=$(date +%s.%N)
tar -xf "$TAR" -C "$W/mnt/copy2"
t1=$(date +%s.%N)
echo "second untar: $(echo "$t1 - $t0" | bc) s; $(rss)"
for _ in $(seq 300); do [ "$(gen)" -ge 3 ] && break; sleep 1; done
echo "after its compaction: $(rss)"
"$BIN" volume status "$W/vol" 2>&1 | grep -E "generation|pack|journal|compacted"
# Reads after the rebase come from the new pack: the copy reads back equal.
t0=$(date +%s.%N)
diff -r "$SRC" "$W/mnt/copy" >/dev/null && echo "copy equal to the source after the compaction" || echo "COPY DIFFERS"
t1=$(date +%s.%N)
echo "diff -r of the copy: $(echo "$t1 - $t0" | bc) s; $(rss)"
grep -iE "compact" "$W/log" | tail -3
umount "$W/mnt"
for _ in $(seq 60); do pgrep -f "mount $W/vol" >/dev/null || break; sleep 1; done

#!/usr/bin/env bash
# Volumes from the command line, end to end: `packfs volume init` from a directory and from a
# pack, `status`, `check` and `compact`, and a volume directory as SOURCE of the read commands
# (ls, stat, cat, extract, diff). A journal with garbage at its end: `check` reports what
# recovery would drop and changes nothing; opening it read-write (compact) drops exactly that.
set -euo pipefail
export LC_ALL=C
packfs="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
source "$(dirname "$0")/common.sh"

src="$work/src"
mkdir -p "$src/docs/deep"
printf 'hello, volume\n' > "$src/hello.txt"
printf 'deep file\n' > "$src/docs/deep/file"
ln -s hello.txt "$src/alias"

expect_code "volume init --from DIR" 0 "$packfs" volume init "$work/vol" --from "$src" --durability always
check "  manifest, pack and journal" test -f "$work/vol/MANIFEST" -a -f "$work/vol/pack.1" -a -f "$work/vol/journal.1"
expect_code "volume init into a non-empty directory" 1 "$packfs" volume init "$work/vol"
check "  says why" grep -q 'not empty' "$work/last.err"
expect_code "volume init --durability bogus" 2 "$packfs" volume init "$work/v2" --durability bogus

expect_code "volume status" 0 "$packfs" volume status "$work/vol"
check "  durability" grep -q 'durability   always' "$work/last.out"
expect_code "volume status --json" 0 "$packfs" volume status --json "$work/vol"
check "  generation 1" grep -q '"generation": 1' "$work/last.out"

expect_code "ls -R VOLUME" 0 "$packfs" ls -R "$work/vol" /
check "  lists the tree" grep -q 'hello.txt' "$work/last.out"
expect_code "cat VOLUME /docs/deep/file" 0 "$packfs" cat "$work/vol" /docs/deep/file
check "  the bytes" cmp -s "$work/last.out" "$src/docs/deep/file"
expect_code "stat VOLUME /alias" 0 "$packfs" stat "$work/vol" /alias
expect_code "extract VOLUME" 0 "$packfs" extract "$work/vol" "$work/out"
check "  extracted tree equals the source" diff -r "$src" "$work/out"
expect_code "diff DIR VOLUME (same tree)" 0 "$packfs" diff "$src" "$work/vol"

expect_code "volume check (clean)" 0 "$packfs" volume check "$work/vol"
check "  OK" grep -q '^OK' "$work/last.out"

# Garbage after the journal's last record, as a torn append leaves.
printf 'torn tail, not a frame' >> "$work/vol/journal.1"
before=$(sha256sum "$work/vol/journal.1")
expect_code "volume check (torn tail)" 1 "$packfs" volume check --json "$work/vol"
check "  reports the dropped bytes" grep -q '"dropped_bytes": 22' "$work/last.out"
check "  changed nothing" test "$before" = "$(sha256sum "$work/vol/journal.1")"
expect_code "cat VOLUME with a torn tail (read-only: skipped, not cut)" 0 "$packfs" cat "$work/vol" /hello.txt
check "  still changed nothing" test "$before" = "$(sha256sum "$work/vol/journal.1")"

expect_code "volume compact" 0 "$packfs" volume compact "$work/vol"
check "  reports what recovery dropped" grep -q 'dropped 1 record' "$work/last.out"
check "  generation 2" grep -q 'generation 2' "$work/last.out"
check "  old generation gone" test ! -e "$work/vol/pack.1" -a ! -e "$work/vol/journal.1"
expect_code "volume check after compaction" 0 "$packfs" volume check "$work/vol"
expect_code "diff DIR VOLUME after compaction" 0 "$packfs" diff "$src" "$work/vol"
# A compacted pack keeps inode numbers and all times: convert keeps both, both ways.
expect_code "convert a compacted pack to format 1" 0 "$packfs" convert "$work/vol/pack.2" "$work/c1.pack" --format 1
check "  inode numbers and all times kept" grep -q 'atime, mtime and ctime; inode numbers kept' "$work/last.out"
expect_code "  and back to format 2" 0 "$packfs" convert "$work/c1.pack" "$work/c2.pack"
check "  byte-identical to the compacted pack" cmp "$work/vol/pack.2" "$work/c2.pack"

"$packfs" build "$src" "$work/src.pack" >/dev/null
expect_code "volume init --from PACK" 0 "$packfs" volume init "$work/vol2" --from "$work/src.pack"
expect_code "diff PACK VOLUME" 0 "$packfs" diff "$work/src.pack" "$work/vol2"
expect_code "volume init --from a file that is no pack" 1 "$packfs" volume init "$work/vol3" --from "$src/hello.txt"
expect_code "volume status of a plain directory" 1 "$packfs" volume status "$src"

if [ "$failures" -ne 0 ]; then
    echo "volume cli: $failures failure(s)"
    exit 1
fi
echo "volume cli ok"

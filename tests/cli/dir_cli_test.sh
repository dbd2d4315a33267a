#!/usr/bin/env bash
# A host directory as SOURCE, end to end: ls, stat, cat, extract and diff serve it through the
# dir backend, read-only and contained. A path that climbs out (../../etc/passwd) stays inside
# (paths are lexical: it is /etc/passwd of the tree), and a symlink inside the tree pointing
# out is refused (EXDEV) exactly as through the API; nothing outside is ever shown. Errors name
# the path inside the tree, never the host path.
set -euo pipefail
export LC_ALL=C
packfs="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
source "$(dirname "$0")/common.sh"

tree="$work/tree"
mkdir -p "$tree/docs/deep" "$work/outside"
printf 'hello, dir\n' > "$tree/hello.txt"
printf 'deep file\n' > "$tree/docs/deep/file"
ln -s hello.txt "$tree/alias"                      # inside: followed
ln -s ../../docs "$tree/docs/deep/up"              # climbs, but stays inside: followed
ln -s ../outside/secret.txt "$tree/out"            # relative, pointing out: EXDEV
ln -s "$work/outside/secret.txt" "$tree/abs"       # absolute: EXDEV
ln -s /proc/self/root/etc/hostname "$tree/magic"   # through a magic link: refused
printf 'TOP SECRET\n' > "$work/outside/secret.txt"

expect_code "ls DIR" 0 "$packfs" ls "$tree"
check "  lists the tree" grep -q 'hello.txt' "$work/last.out"
expect_code "cat DIR /hello.txt" 0 "$packfs" cat "$tree" /hello.txt
check "  the bytes" cmp -s "$work/last.out" "$tree/hello.txt"
expect_code "cat through a symlink inside the tree" 0 "$packfs" cat "$tree" /alias
check "  the target's bytes" cmp -s "$work/last.out" "$tree/hello.txt"
expect_code "cat through a link that climbs and stays inside" 0 "$packfs" cat "$tree" /docs/deep/up/deep/file
check "  the target's bytes" cmp -s "$work/last.out" "$tree/docs/deep/file"
expect_code "stat DIR PATH" 0 "$packfs" stat --json "$tree" /docs/deep/file
check "  size" python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["size"] == 10' "$work/last.out"

# --- escapes --------------------------------------------------------------------------------
for attempt in ../../etc/passwd ../outside/secret.txt /../../../outside/secret.txt; do
    expect_code "cat DIR $attempt stays inside the tree" 1 "$packfs" cat "$tree" "$attempt"
    check "  ENOENT inside the tree" grep -q 'No such file or directory' "$work/last.err"
    check "  shows nothing from outside" bash -c "! grep -q 'TOP SECRET\|root:' '$work/last.out'"
done
for link in out abs; do
    expect_code "cat DIR /$link (a symlink pointing out)" 1 "$packfs" cat "$tree" "/$link"
    check "  EXDEV" grep -q 'Invalid cross-device link' "$work/last.err"
    check "  names the path in the tree" grep -q "/$link" "$work/last.err"
    check "  never the host path" bash -c "! grep -q '$work' '$work/last.err'"
    check "  shows nothing from outside" bash -c "! grep -q 'TOP SECRET' '$work/last.out'"
done
expect_code "cat DIR /magic (through /proc/self/root)" 1 "$packfs" cat "$tree" /magic
check "  refused" bash -c "grep -q 'Invalid cross-device link\|Too many levels' '$work/last.err'"
expect_code "stat --json of an escaping link follows nothing" 1 "$packfs" stat --json "$tree" /out/
check "  JSON error EXDEV" python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["error"]["code"] == "EXDEV"' "$work/last.out"

# --- extract and diff: links are copied as links, never followed -----------------------------
expect_code "extract DIR" 0 "$packfs" extract "$tree" "$work/copy"
check "  the files" cmp -s "$work/copy/docs/deep/file" "$tree/docs/deep/file"
check "  a link pointing out stays a link" test -L "$work/copy/out"
check "  with its text" test "$(readlink "$work/copy/out")" = ../outside/secret.txt
check "  nothing from outside was copied" bash -c "! grep -rq 'TOP SECRET' '$work/copy'"
expect_code "build a pack of DIR" 0 "$packfs" build "$tree" "$work/tree.pack"
expect_code "diff DIR PACK: identical" 0 "$packfs" diff "$tree" "$work/tree.pack"
printf 'changed\n' > "$tree/hello.txt"
expect_code "diff DIR PACK after a change: differ" 1 "$packfs" diff "$tree" "$work/tree.pack"
check "  names the file" grep -q '/hello.txt' "$work/last.out"

if [ "$failures" -ne 0 ]; then
    echo "dir cli: $failures check(s) failed"
    exit 1
fi
echo "dir cli: all checks passed"

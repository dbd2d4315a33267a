#!/usr/bin/env bash
# A pack's daemon stays small (docs/FUSE.md, "Memory"): after every file of a generated zstd pack
# of 3,000 files (about 120 MiB of text, a pack of about 35 MiB) is read through the mount, and
# again with 8 readers at once, its peak RSS (VmHWM) is under 64 MiB and its private part
# (RssAnon) under 32 MiB: the pack's data is not read through its mapping and the
# decompressed-block cache keeps to its default bound. Every file read is compared with its
# source. The bounds are the documented ones; the daemon needs about a third of them.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
fuse_setup

# Text that compresses about 3.5 times and differs from file to file: lines drawn from a pool
# of words, files of 1 KiB to 80 KiB in 60 directories.
python3 - "$work/src" <<'EOF'
import os, random, sys
root = sys.argv[1]
rng = random.Random(38)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
         for _ in range(4000)]
for d in range(60):
    os.makedirs(f"{root}/d{d}", exist_ok=True)
for f in range(3000):
    size = rng.randint(1024, 80 * 1024)
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(words) for _ in range(12)) + f" {f}\n"
        out.append(line)
        n += len(line)
    with open(f"{root}/d{f % 60}/f{f}.txt", "w") as fh:
        fh.write("".join(out)[:size])
EOF
"$packfs" build --compress zstd "$work/src" "$work/t.pack" >/dev/null

status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

check_memory() {  # check_memory WHAT PID
    local hwm anon
    hwm=$(status_kb "$2" VmHWM)
    anon=$(status_kb "$2" RssAnon)
    echo "$1: daemon VmHWM $((hwm / 1024)) MiB, RssAnon $((anon / 1024)) MiB"
    check "$1: peak RSS ${hwm} kB <= 64 MiB" test "$hwm" -le $((64 * 1024))
    check "$1: private RSS ${anon} kB <= 32 MiB" test "$anon" -le $((32 * 1024))
}

mnt="$work/mnt"
expect_code "mount the pack" 0 do_mount "$work/t.pack" "$mnt"
pid=$(daemon_pid "$mnt")
check "one daemon serves it" test -n "$pid"
check "read-all: the mount reads as its source" diff -r "$work/src" "$mnt"
check_memory "read-all" "$pid"
do_umount "$mnt"

# 8 readers at once, each over every file in its own order, after the kernel dropped its
# pages: the daemon serves them from more worker threads.
expect_code "mount it again" 0 do_mount "$work/t.pack" "$mnt"
pid=$(daemon_pid "$mnt")
find "$mnt" -type f >"$work/list"
for r in $(seq 1 8); do
    shuf --random-source=<(yes "$r") "$work/list" | tr '\n' '\0' | xargs -0 cat >/dev/null &
    track_pid $!
done
wait
check "8 readers: the mount reads as its source" diff -r "$work/src" "$mnt"
check_memory "8 readers" "$pid"
expect_code "packfs umount" 0 do_umount "$mnt"

if [ "$failures" -ne 0 ]; then
    echo "fuse memory: $failures failure(s)"
    exit 1
fi
echo "fuse memory ok"

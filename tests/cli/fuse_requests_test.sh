#!/usr/bin/env bash
# Cold reads of small files through a mount cost one request each (docs/FUSE.md, "Requests"):
# counted in the daemon's request log (`packfs mount -d`), for a raw and a zstd pack of 720
# files of 10 B to 16 KiB in 12 directories, each mounted fresh:
# - after a listing (`ls -lR`): one READ per file and nothing else per file (READDIRPLUS gave
#   the kernel every name and its attributes; an open is answered once for all, ENOSYS);
# - by path, with no listing: a LOOKUP per file and directory, then one READ per file.
# Every file read is compared with its source (one checksum over all of them, in order).
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
fuse_setup

python3 - "$work/src" <<'EOF'
import os, random, sys
root = sys.argv[1]
rng = random.Random(38)
for d in range(12):
    os.makedirs(f"{root}/d{d}", exist_ok=True)
    for f in range(60):
        size = rng.choice([10, 60, 200]) if f % 10 == 0 else rng.randint(100, 16 * 1024)
        text = "".join(rng.choice("abcdefgh \n") for _ in range(size))
        with open(f"{root}/d{d}/f{f}.txt", "w") as fh:
            fh.write(text)
EOF
(cd "$work/src" && find . -type f | sort) >"$work/list"
files=$(wc -l <"$work/list")
dirs=12
want=$(cd "$work/src" && tr '\n' '\0' <"$work/list" | xargs -0 cat | sha256sum)

"$packfs" build "$work/src" "$work/raw.pack" >/dev/null
"$packfs" build --compress zstd "$work/src" "$work/zstd.pack" >/dev/null

mnt="$work/mnt"
mkdir -p "$mnt"
log="$work/requests.log"

# mount_logged PACK: a foreground daemon (-d) logging every request to $log.
mount_logged() {
    "$packfs" mount -d "$1" "$mnt" 2>"$log" &
    track_pid $!
    wait_for is_mounted "$mnt" || {
        echo "FAIL: $1 did not mount"
        cat "$log"
        exit 1
    }
}
not_mounted() { ! is_mounted "$1"; }
requests() { grep -ac "opcode: " "$log" || true; }
requests_of() { grep -ac "opcode: $1 " "$log" || true; }

# read_listed: every file of the list, by path through the mount, checked against the source.
read_listed() {
    local got
    got=$(cd "$mnt" && tr '\n' '\0' <"$work/list" | xargs -0 cat | sha256sum)
    check "$1: the files read as their sources" test "$got" = "$want"
}

for kind in raw zstd; do
    # After a listing.
    mount_logged "$work/$kind.pack"
    ls -lR "$mnt" >/dev/null
    before=$(requests) reads_before=$(requests_of READ)
    read_listed "$kind, after ls -lR"
    total=$(($(requests) - before)) reads=$(($(requests_of READ) - reads_before))
    echo "$kind, after ls -lR: $files files, $total requests ($reads READ)"
    check "$kind, after ls -lR: one READ per file ($reads for $files)" test "$reads" -le "$files"
    check "$kind, after ls -lR: nothing else per file ($total requests for $files files)" \
        test "$total" -le $((files + 8))
    do_umount "$mnt"
    wait_for not_mounted "$mnt"

    # By path, with no listing.
    mount_logged "$work/$kind.pack"
    before=$(requests) reads_before=$(requests_of READ) lookups_before=$(requests_of LOOKUP)
    read_listed "$kind, by path"
    total=$(($(requests) - before)) reads=$(($(requests_of READ) - reads_before))
    lookups=$(($(requests_of LOOKUP) - lookups_before))
    echo "$kind, by path: $files files, $total requests ($lookups LOOKUP, $reads READ)"
    check "$kind, by path: one READ per file ($reads for $files)" test "$reads" -le "$files"
    check "$kind, by path: one LOOKUP per file and directory ($lookups)" \
        test "$lookups" -le $((files + dirs))
    check "$kind, by path: nothing else per file ($total requests)" \
        test "$total" -le $((2 * files + dirs + 8))
    do_umount "$mnt"
    wait_for not_mounted "$mnt"
done

if [ "$failures" -ne 0 ]; then
    echo "fuse requests: $failures failure(s)"
    exit 1
fi
echo "fuse requests ok"

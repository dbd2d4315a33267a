#!/usr/bin/env bash
# make-manpages.sh PACKFS OUTDIR: packfs.1 and one packfs-SUBCOMMAND.1 per subcommand, made by
# help2man from the program's own --help and --version, so the pages cannot drift from it.
# Written gzipped (gzip -n: no name or time inside, so a rebuild gives the same bytes), as
# Debian installs man pages.
# docs/man/packfs.h2m adds what --help does not say (exit status, SOURCE kinds, environment).
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
out=$2
include="$(cd "$(dirname "$0")/.." && pwd)/docs/man/packfs.h2m"
mkdir -p "$out"
# Run as `packfs` from PATH, so the usage lines the pages quote name it so.
export PATH="$(dirname "$packfs"):$PATH"
[ "$(basename "$packfs")" = packfs ] || { echo "make-manpages: $packfs is not named packfs" >&2; exit 2; }
version=$(packfs --version | head -1 | cut -d' ' -f2)
help2man --no-info --include "$include" \
    --name "build, read, mount and serve packs, volumes and directory trees" \
    --output "$out/packfs.1" packfs
packfs --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' |
while read -r sub; do
    what=$(packfs --help | awk -v s="$sub" '$1 == s { $1 = ""; sub(/^ +/, ""); print }')
    help2man --no-info --include "$include" --name "$what" \
        --help-option "$sub --help" --version-string "packfs-$sub $version" \
        --output "$out/packfs-$sub.1" packfs
done
gzip -9nf "$out"/*.1

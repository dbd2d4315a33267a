#!/usr/bin/env bash
# Packs over bases through a registry (docs/REMOTE.md "Packs over bases"): version N-1 built
# self-contained and version N over it, both pushed to a local registry (docker-registry behind
# an nginx that counts every request and byte both ways: tests/support/registry.sh, nginx.sh),
# then version N read by tag after version N-1 was read.
#
#   bench/registry_versions.sh PACKFS VERSIONS [N] [WORK]
#
# VERSIONS holds v0 .. v9 (bench/make_versions.py). N defaults to the last version. zstd, 64 KiB
# chunks and blocks. Prints the bytes the push of vN uploaded against vN's pack and its new data
# (`packfs info`: "stored ... data X"), and what `packfs extract` of vN by tag fetched with the
# cache warm for v(N-1) (bytes and requests, and how many of them asked for v(N-1)'s blob).
set -euo pipefail
packfs=$(realpath "$1")
versions=$(realpath "$2")
new=${3:-$(ls -d "$versions"/v* | sed 's|.*/v||' | sort -n | tail -1)}
old=$((new - 1))
work=${4:-/var/tmp/registry-versions}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/support/nginx.sh"
source "$here/../tests/support/registry.sh"
trap 'stop_nginx; stop_registry' EXIT
rm -rf "$work"
mkdir -p "$work/packs"
size() { stat -c %s "$1"; }

echo "== build v$old, v$new over it" >&2
"$packfs" build --compress zstd --chunk-size 64K "$versions/v$old" "$work/packs/v$old.pack" >/dev/null
"$packfs" build --compress zstd --base "$work/packs/v$old.pack" "$versions/v$new" \
    "$work/packs/v$new.pack" >/dev/null
"$packfs" info "$work/packs/v$new.pack" >"$work/info.txt"
stored=$(grep -m1 '^ *stored ' "$work/info.txt" | sed 's/^ *stored *//')
new_data=$(echo "$stored" | sed -n 's/.*-> data \([0-9.]* [KMGT]\?i\?B\).*/\1/p')
old_blob=$(sha256sum "$work/packs/v$old.pack" | cut -d' ' -f1)
new_blob=$(sha256sum "$work/packs/v$new.pack" | cut -d' ' -f1)

start_registry_proxy "$work" "$work/packs"
R="$REGISTRY_PROXY"
gets() { awk -v u="$1" '$1 == "GET" && $2 ~ u { n++; s += $4 } END { print n + 0, s + 0 }' "$NGINX_DIR/access.log"; }

echo "== push v$old, then v$new" >&2
"$packfs" push "$work/packs/v$old.pack" "oci://$R/linux/source:v$old" >/dev/null 2>&1
reset_nginx_log
"$packfs" push --json "$work/packs/v$new.pack" "oci://$R/linux/source:v$new" >"$work/push.json"
uploaded=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_uploaded"])' "$work/push.json")
at_server=$(proxy_upload_bytes)

echo "== extract v$old, then v$new, by tag" >&2
cache="$work/cache"
"$packfs" --cache "$cache" extract "oci://$R/linux/source:v$old" "$work/x-old" >/dev/null
reset_nginx_log
"$packfs" --cache "$cache" extract "oci://$R/linux/source:v$new" "$work/x-new" >/dev/null
read -r all_requests all_bytes <<<"$(gets /blobs/)"
read -r old_requests old_bytes <<<"$(gets "/blobs/sha256:$old_blob")"
diff -r --no-dereference "$versions/v$new" "$work/x-new" >/dev/null && exact=yes || exact=NO

printf "| v%d over v%d | bytes |\n| --- | --- |\n" "$new" "$old"
printf "| v%d's pack | %d |\n" "$new" "$(size "$work/packs/v$new.pack")"
printf "| v%d's new data (packfs info: stored ... data) | %s |\n" "$new" "$new_data"
printf "| (packfs info: stored %s) | |\n" "$stored"
printf "| v%d's pack (self-contained, the base) | %d |\n" "$old" "$(size "$work/packs/v$old.pack")"
printf "| push of v%d after v%d: uploaded (packfs's count) | %d |\n" "$new" "$old" "$uploaded"
printf "| push of v%d after v%d: received by the registry (requests, headers included) | %d |\n" "$new" "$old" "$at_server"
printf "| extract of v%d by tag, v%d cached: fetched, in %d requests | %d |\n" "$new" "$old" "$all_requests" "$all_bytes"
printf "| of which from v%d's blob (%d requests) | %d |\n" "$old" "$old_requests" "$old_bytes"
printf "| the tree extracted exactly | %s |\n" "$exact"

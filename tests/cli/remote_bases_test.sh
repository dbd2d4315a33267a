#!/usr/bin/env bash
# Packs built over bases, read from a server (docs/REMOTE.md "Packs over bases"), against a real
# nginx this script starts on 127.0.0.1 (tests/support/nginx.sh):
# - v2 built over v1 (a large file with bytes inserted in its middle, small files edited, added
#   and removed), both served from one directory: v2 reads exactly (extract, a mount), its base
#   fetched from beside its URL;
# - v1 read first fills the cache: reading v2 then asks nothing of v1 (pinned by the digest v2
#   records, every block cached) and fetches about v2's own bytes (counted at the server);
# - a base missing on the server is named in the error.
set -euo pipefail
export LC_ALL=C
packfs=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
source "$here/common.sh"
source "$here/fuse_common.sh"
source "$here/two_versions.sh"
source "$here/../support/nginx.sh"
cleanup_all() {
    local status=$?
    stop_nginx || true
    (exit $status)
    fuse_cleanup
}
fuse_setup
trap cleanup_all EXIT

www="$work/www"
make_two_versions "$www"
v1_size=$(stat -c %s "$www/v1.pack")
v2_size=$(stat -c %s "$www/v2.pack")
check "v2 over v1 is a small pack" test "$v2_size" -lt $((v1_size / 10))
start_nginx "$www" "$work/nginx"
cache="$work/cache"
p() { "$packfs" --cache "$cache" "$@"; }

p extract "$NGINX_URL/v1.pack" "$work/x1" >/dev/null
check "v1 read from the server" diff -r --no-dereference "$v1" "$work/x1"
reset_nginx_log
p extract "$NGINX_URL/v2.pack" "$work/x2" >/dev/null
check "v2 read from the server, its base beside it" diff -r --no-dereference "$v2" "$work/x2"
check "  asking nothing of v1, which the cache holds" test "$(nginx_requests /v1.pack)" -eq 0
fetched=$(nginx_bytes /v2.pack)
check "  fetching about v2's own bytes ($fetched of $v2_size)" test "$fetched" -le $((v2_size + 65536))
do_mount "$NGINX_URL/v2.pack" "$work/m" --cache "$cache"
check "a mount of v2 reads the tree" diff -r --no-dereference "$v2" "$work/m"
do_umount "$work/m"

# Cold: both packs fetched, as much of v1 as v2 reads from it.
reset_nginx_log
"$packfs" --cache "$work/cold" extract "$NGINX_URL/v2.pack" "$work/x3" >/dev/null
check "v2 cold reads the tree" diff -r --no-dereference "$v2" "$work/x3"
check "  fetching from v1 too" test "$(nginx_requests /v1.pack)" -gt 0

mv "$www/v1.pack" "$www/gone.pack"
expect_code "a base missing on the server" 1 "$packfs" --cache "$work/cold2" ls "$NGINX_URL/v2.pack" /
check "  is named" grep -q "v1.pack" "$work/last.err"

if [ "$failures" -ne 0 ]; then
    echo "remote bases: $failures check(s) failed"
    exit 1
fi
echo "remote bases ok"

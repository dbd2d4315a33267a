#!/usr/bin/env bash
# Packs built over bases through an OCI registry (docs/REMOTE.md "Packs over bases"), against a
# real registry (tests/support/registry.sh) behind an nginx reverse proxy this script starts on
# 127.0.0.1 (tests/support/nginx.sh), whose access log counts every request and byte both ways:
# - push of v2 over v1: its manifest lists v2's layer, then v1's as a base layer; v1's blob,
#   pushed before, is asked for (HEAD) and not uploaded again; about v2's size is uploaded;
# - push to a second repository --mount-from the first: every blob mounted, nothing uploaded; a
#   repository that lacks the blob declines (202) and the blob is uploaded into that session;
# - extract and a mount of v2 by tag after v1 was read: no GET of v1's blob, about v2's size
#   fetched; cold: v2 reads from v1's blob too, exactly;
# - pull of v2 into a directory holding v1.pack fetches only v2; into an empty one writes both;
#   a file of the base's name that is another pack, or no pack, fails the pull, overwriting
#   nothing; the same over http(s) (the base beside the URL);
# - the base missing: a manifest without its layer (pushed by hand) fails naming the base, a
#   malformed base layer fails naming the layer, push of a pack whose base is found nowhere
#   names it, and `push --base` finds it;
# - registry and proxy stopped with everything cached: v2 by tag still reads.
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
source "$here/../support/registry.sh"
cleanup_all() {
    local status=$?
    stop_nginx || true
    stop_registry || true
    (exit $status)
    fuse_cleanup
}
fuse_setup
trap cleanup_all EXIT
export XDG_CACHE_HOME="$work/xdg"  # the default cache, for every command below

# ---- v1, and v2 over it ------------------------------------------------------------------
packs="$work/packs"
make_two_versions "$packs"
v1_size=$(stat -c %s "$packs/v1.pack")
v2_size=$(stat -c %s "$packs/v2.pack")
check "v2 over v1 is a small pack" test "$v2_size" -lt $((v1_size / 10))
digest_of() { "$packfs" info --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["digest"])'; }
v1_digest=$(digest_of "$packs/v1.pack")
v1_blob=$(sha256sum "$packs/v1.pack" | cut -d' ' -f1)
v2_blob=$(sha256sum "$packs/v2.pack" | cut -d' ' -f1)

# The registry, behind nginx (which also serves the packs' directory for the http(s) pulls).
start_registry_proxy "$work" "$packs"
R="$REGISTRY_PROXY"
# What the proxy saw since the last reset: requests of a method to a blob, bytes of GETs of a
# blob, uploads (PUTs into upload sessions) naming a blob, mount requests answered a status.
blob_requests() { awk -v m="$1" -v u="/v2/$2/blobs/sha256:$3" '$1 == m && $2 == u' "$NGINX_DIR/access.log" | wc -l; }
blob_bytes() { awk -v u="/v2/$1/blobs/sha256:$2" '$1 == "GET" && $2 == u { s += $4 } END { print s + 0 }' "$NGINX_DIR/access.log"; }
uploads_of() { awk -v d="$1" '$1 == "PUT" && $2 ~ /\/blobs\/uploads\// && $7 ~ d' "$NGINX_DIR/access.log" | wc -l; }
mounts() { awk -v s="$1" '$1 == "POST" && $7 ~ /mount=/ && $3 == s' "$NGINX_DIR/access.log" | wc -l; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }

# ---- push --------------------------------------------------------------------------------
"$packfs" push --json "$packs/v1.pack" "oci://$R/packs/a:v1" >"$work/push1.json"
check "push v1: its blob and the config sent" test "$(field "$work/push1.json" blobs_sent)" -eq 2
reset_nginx_log
"$packfs" push "$packs/v2.pack" "oci://$R/packs/a:v2" --json >"$work/push2.json"
ref2=$(field "$work/push2.json" reference)
check "push v2: the reference by digest" sh -c "echo '$ref2' | grep -qE '^oci://$R/packs/a@sha256:[0-9a-f]{64}\$'"
check "  v1's blob asked for" test "$(blob_requests HEAD packs/a "$v1_blob")" -eq 1
check "  and not uploaded again" test "$(uploads_of "$v1_blob")" -eq 0
check "  v2's blob uploaded once" test "$(uploads_of "$v2_blob")" -eq 1
sent=$(proxy_upload_bytes)
check "  the registry received about v2's size ($sent for $v2_size)" \
    sh -c "[ $sent -ge $v2_size ] && [ $sent -le $((v2_size + 8192)) ]"
check "  --json: v2's bytes uploaded, one blob sent, two there" python3 - "$work/push2.json" "$v2_size" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bytes_uploaded"] == int(sys.argv[2]), r
assert (r["blobs_sent"], r["blobs_present"], r["blobs_mounted"]) == (1, 2, 0), r
assert [(b["role"], b["name"], b["outcome"]) for b in r["blobs"]] == [
    ("pack", "v2.pack", "sent"), ("base", "v1.pack", "present"), ("config", "", "present")], r
PY
curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$R/v2/packs/a/manifests/v2" >"$work/manifest.json"
check "  the manifest: v2's layer first, then v1's as a base" python3 - "$work/manifest.json" "$v1_blob" "$v1_digest" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
pack, base = m["layers"]
assert pack["mediaType"] == "application/vnd.packfs.pack.v2", pack
assert base["mediaType"] == "application/vnd.packfs.pack.base.v2", base
assert base["digest"] == "sha256:" + sys.argv[2], base
assert base["annotations"]["org.packfs.image-digest"] == sys.argv[3], base
assert base["annotations"]["org.opencontainers.image.title"] == "v1.pack", base
PY
"$packfs" push "$packs/v2.pack" "oci://$R/packs/a:v2" >/dev/null 2>"$work/push3.err"
check "a push again sends nothing (summary on stderr)" grep -q "0 blob(s) sent, 3 already there" "$work/push3.err"

reset_nginx_log
"$packfs" push --mount-from packs/a "$packs/v2.pack" "oci://$R/packs/b:v2" --json >"$work/push4.json"
check "push --mount-from: every blob mounted" test "$(field "$work/push4.json" blobs_mounted)" -eq 3
check "  nothing uploaded" test "$(field "$work/push4.json" bytes_uploaded)" -eq 0
check "  the registry mounted three (201)" test "$(mounts 201)" -eq 3
check "  and received no upload" test "$(proxy_upload_bytes)" -eq 0
ref_b=$(field "$work/push4.json" reference)
reset_nginx_log
"$packfs" push --mount-from packs/nothing "$packs/v1.pack" "oci://$R/packs/c:v1" --json >"$work/push5.json"
check "push --mount-from a repository without the blob: declined (202)" test "$(mounts 202)" -eq 2
check "  and uploaded into that session" test "$(field "$work/push5.json" blobs_sent)" -eq 2
check "  one upload session each" test "$(awk '$1 == "POST"' "$NGINX_DIR/access.log" | wc -l)" -eq 2

# ---- read --------------------------------------------------------------------------------
cache="$work/cache"
p() { "$packfs" --cache "$cache" "$@"; }
p extract "oci://$R/packs/a:v1" "$work/x1" >/dev/null
check "v1 by tag" diff -r --no-dereference "$v1" "$work/x1"
reset_nginx_log
p extract "oci://$R/packs/a:v2" "$work/x2" >/dev/null
check "v2 by tag, its base from its layer" diff -r --no-dereference "$v2" "$work/x2"
check "  no GET of v1's blob, which the cache holds" test "$(blob_requests GET packs/a "$v1_blob")" -eq 0
fetched=$(blob_bytes packs/a "$v2_blob")
check "  about v2's own bytes fetched ($fetched of $v2_size)" test "$fetched" -le $((v2_size + 65536))
do_mount "oci://$R/packs/a:v2" "$work/m" --cache "$cache"
check "a mount of v2 by tag reads the tree" diff -r --no-dereference "$v2" "$work/m"
do_umount "$work/m"
check "  with no GET of v1's blob" test "$(blob_requests GET packs/a "$v1_blob")" -eq 0
reset_nginx_log
"$packfs" --cache "$work/cold" extract "oci://$R/packs/a:v2" "$work/x3" >/dev/null
check "v2 cold reads the tree" diff -r --no-dereference "$v2" "$work/x3"
check "  fetching from v1's blob too" test "$(blob_requests GET packs/a "$v1_blob")" -gt 0
"$packfs" --cache "$work/cold-b" extract "$ref_b" "$work/x4" >/dev/null
check "v2 by digest from the repository it was mounted into" diff -r --no-dereference "$v2" "$work/x4"

# ---- pull --------------------------------------------------------------------------------
mkdir -p "$work/p1"
cp "$packs/v1.pack" "$work/p1/v1.pack"
touch -d '2001-01-01' "$work/p1/v1.pack"
reset_nginx_log
"$packfs" pull "oci://$R/packs/a:v2" "$work/p1/v2.pack" >"$work/pull1.out"
check "pull of v2 beside v1.pack: v2 written" cmp -s "$work/p1/v2.pack" "$packs/v2.pack"
check "  no GET of v1's blob" test "$(blob_requests GET packs/a "$v1_blob")" -eq 0
check "  v1.pack left as it was" test "$(stat -c %Y "$work/p1/v1.pack")" = "$(date -d 2001-01-01 +%s)"
check "  saying so" grep -q "base $work/p1/v1.pack: already there" "$work/pull1.out"
check "  the local pack reads" sh -c "'$packfs' extract '$work/p1/v2.pack' '$work/x5' >/dev/null && diff -r --no-dereference '$v2' '$work/x5'"
mkdir -p "$work/p2"
"$packfs" pull --json "$ref2" "$work/p2/v2.pack" >"$work/pull2.json"
check "pull into an empty directory writes v2" cmp -s "$work/p2/v2.pack" "$packs/v2.pack"
check "  and v1 beside it" cmp -s "$work/p2/v1.pack" "$packs/v1.pack"
check "  --json: both fetched" python3 - "$work/pull2.json" "$((v1_size + v2_size))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bytes_fetched"] == int(sys.argv[2]), r
assert [b["fetched"] for b in r["bases"]] == [True], r
PY
for kind in "another pack" "no pack"; do
    mkdir -p "$work/p3-${kind% *}"
    if [ "$kind" = "another pack" ]; then cp "$packs/v2.pack" "$work/p3-${kind% *}/v1.pack"; else echo notes >"$work/p3-${kind% *}/v1.pack"; fi
    kind=${kind% *}
    cp "$work/p3-$kind/v1.pack" "$work/p3-$kind.before"
    expect_code "pull beside a v1.pack that is $kind pack fails" 1 \
        "$packfs" pull "oci://$R/packs/a:v2" "$work/p3-$kind/v2.pack"
    check "  naming it" grep -q "p3-$kind/v1.pack, which is" "$work/last.err"
    check "  overwriting nothing" cmp -s "$work/p3-$kind/v1.pack" "$work/p3-$kind.before"
    check "  leaving nothing else" test "$(ls "$work/p3-$kind")" = "v1.pack"
done
mkdir -p "$work/p7"
expect_code "pull of v2 to its base's name is refused" 1 "$packfs" pull "oci://$R/packs/a:v2" "$work/p7/v1.pack"
check "  saying why" grep -q "goes where the pack is to go" "$work/last.err"
check "  leaving nothing" test -z "$(ls "$work/p7")"
mkdir -p "$work/p4" "$work/p5"
"$packfs" pull "$NGINX_URL/v2.pack" "$work/p4/v2.pack" >/dev/null
check "pull over http into an empty directory writes both" \
    sh -c "cmp -s '$work/p4/v2.pack' '$packs/v2.pack' && cmp -s '$work/p4/v1.pack' '$packs/v1.pack'"
cp "$packs/v1.pack" "$work/p5/"
reset_nginx_log
"$packfs" pull "$NGINX_URL/v2.pack" "$work/p5/v2.pack" >/dev/null
check "pull over http beside v1.pack fetches only v2" \
    sh -c "[ $(nginx_requests /v1.pack) -eq 0 ] && [ $(nginx_requests /v2.pack) -eq 1 ]"

# ---- a base missing ----------------------------------------------------------------------
put_manifest() {  # put_manifest TAG PYTHON-EXPRESSION-ON-m
    python3 - "$work/manifest.json" "$2" >"$work/edited.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[2])
print(json.dumps(m))
PY
    curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
        --data-binary @"$work/edited.json" "http://$R/v2/packs/a/manifests/$1"
}
check "a manifest without the base layer, pushed by hand" test "$(put_manifest nobase 'del m["layers"][1]')" = 201
expect_code "  reading it fails" 1 "$packfs" --cache "$work/cold3" ls "oci://$R/packs/a:nobase" /
check "  naming the base" grep -q "its base sha256:$v1_digest ('v1.pack') is not among the manifest's layers" "$work/last.err"
expect_code "  pulling it fails" 1 "$packfs" pull "oci://$R/packs/a:nobase" "$work/p6.pack"
check "  naming the base" grep -q "sha256:$v1_digest ('v1.pack')" "$work/last.err"
check "  leaving nothing" sh -c "! ls '$work' | grep -q p6"
check "a malformed base layer, pushed by hand" test "$(put_manifest badbase 'del m["layers"][1]["size"]')" = 201
expect_code "  is refused" 1 "$packfs" --cache "$work/cold3" ls "oci://$R/packs/a:badbase" /
check "  naming the layer" grep -q "layer 1, a base: it has no size" "$work/last.err"
mkdir -p "$work/alone" "$work/elsewhere"
cp "$packs/v2.pack" "$work/alone/"
cp "$packs/v1.pack" "$work/elsewhere/old.pack"
expect_code "push of v2 with its base nowhere" 1 "$packfs" push "$work/alone/v2.pack" "oci://$R/packs/d:v2"
check "  names it" grep -q "its base sha256:$v1_digest ('v1.pack') is not found" "$work/last.err"
check "push --base finds it elsewhere" sh -c \
    "'$packfs' push --base '$work/elsewhere/old.pack' '$work/alone/v2.pack' 'oci://$R/packs/d:v2' >/dev/null 2>&1"

# ---- offline -----------------------------------------------------------------------------
# The default cache holds v1 and v2 whole (the extracts above read every file).
"$packfs" extract "oci://$R/packs/a:v1" "$work/x6" >/dev/null
"$packfs" extract "oci://$R/packs/a:v2" "$work/x7" >/dev/null
stop_nginx
stop_registry
rm -rf "$work/x8"
"$packfs" extract "oci://$R/packs/a:v2" "$work/x8" >/dev/null 2>"$work/offline.err"
check "registry stopped: v2 by tag reads from the cache" diff -r --no-dereference "$v2" "$work/x8"
check "  saying so" grep -q "registry cannot be reached.*cached copy" "$work/offline.err"
"$packfs" ls -l -R "$packs/v2.pack" / >"$work/local.ls"
"$packfs" ls -l -R "oci://$R/packs/a:v2" / >"$work/offline.ls" 2>/dev/null
check "  ls -lR too" cmp -s "$work/local.ls" "$work/offline.ls"

if [ "$failures" -ne 0 ]; then
    echo "remote oci bases: $failures check(s) failed"
    exit 1
fi
echo "remote oci bases ok"

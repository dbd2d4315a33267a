#!/usr/bin/env bash
# Runs capi_test in a scratch directory with a real nginx serving its www/ subdirectory (for
# packfs_open_remote); /private/ wants the bearer token "s3cret". nginx is in
# scripts/install-deps.sh; when it cannot start, the test fails with the reason.
set -euo pipefail
capi_test="$1"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
source "$here/../support/nginx.sh"
trap 'stop_nginx; rm -rf "$work"' EXIT
mkdir -p "$work/www"
start_nginx "$work/www" "$work/nginx" '
    location /private/ {
        alias '"$work/www"'/;
        if ($http_authorization != "Bearer s3cret") { return 401; }
    }'
"$capi_test" "$work" "$NGINX_URL"

# A real OCI registry (Debian's docker-registry, CNCF distribution 2.8) on 127.0.0.1 at a free
# port with filesystem storage under DIR, for the remote-pack tests. Sourced after nginx.sh
# (for free_port); `start_registry DIR [CONFIG]` (CONFIG: more top-level YAML, such as an auth
# section) sets REGISTRY (127.0.0.1:PORT). A test whose registry
# cannot start fails with the reason (scripts/install-deps.sh installs docker-registry).
start_registry() {
    local dir="$1" extra="${2:-}" bin
    bin=$(command -v docker-registry || true)
    [ -n "$bin" ] || { echo "FAIL: docker-registry is not installed (scripts/install-deps.sh installs it)"; exit 1; }
    mkdir -p "$dir/storage"
    for attempt in 1 2 3 4 5; do
        REGISTRY_PORT=$(free_port)
        cat >"$dir/config.yml" <<EOF2
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$REGISTRY_PORT
$extra
EOF2
        "$bin" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
        REGISTRY_PID=$!
        for _ in $(seq 100); do
            if curl -s -o /dev/null "http://127.0.0.1:$REGISTRY_PORT/v2/"; then
                REGISTRY="127.0.0.1:$REGISTRY_PORT"
                return 0
            fi
            kill -0 "$REGISTRY_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill "$REGISTRY_PID" 2>/dev/null || true
        grep -q "address already in use" "$dir/registry.log" || break
    done
    echo "FAIL: docker-registry did not start: $(tail -5 "$dir/registry.log")"
    exit 1
}

stop_registry() {
    [ -n "${REGISTRY_PID:-}" ] || return 0
    kill "$REGISTRY_PID" 2>/dev/null || true
    wait "$REGISTRY_PID" 2>/dev/null || true
}

# start_registry_proxy DIR ROOT: a registry (start_registry DIR/registry) behind an nginx
# (start_nginx ROOT DIR/nginx) that passes /v2/ on to it and serves ROOT's files besides, so that
# nginx's access log counts every request and byte the registry was sent and sent back. Sets
# REGISTRY_PROXY (127.0.0.1:PORT, the address references name) and NGINX_URL.
start_registry_proxy() {
    local dir="$1" root="$2"
    start_registry "$dir/registry"
    start_nginx "$root" "$dir/nginx" "
    client_max_body_size 0;
    location /v2/ {
        proxy_pass http://$REGISTRY;
        proxy_set_header Host \$http_host;
        proxy_http_version 1.1;
        proxy_set_header Connection \"\";
        proxy_request_buffering off;
        proxy_buffering off;
    }"
    REGISTRY_PROXY="127.0.0.1:$NGINX_PORT"
}
# Bytes the proxy received in uploads (PUTs into upload sessions, headers included) since the
# last reset_nginx_log.
proxy_upload_bytes() {
    awk '$1 == "PUT" && $2 ~ /\/blobs\/uploads\// { s += $6 } END { print s + 0 }' "$NGINX_DIR/access.log"
}

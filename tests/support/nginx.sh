# A real nginx serving a directory on 127.0.0.1 at a free port, for the remote-pack tests. Sourced
# by a test script; `start_nginx ROOT DIR` sets NGINX_URL (http://127.0.0.1:PORT) and leaves the
# access log at DIR/access.log, one line per request:
#   METHOD URI STATUS BODY_BYTES "RANGE" REQUEST_BYTES "QUERY"
# (REQUEST_BYTES: the request's line, headers and body, what an upload sent; QUERY: its
# arguments, as sent)
# A test whose nginx cannot start fails with the reason (nginx is in scripts/install-deps.sh).
find_nginx() {
    for n in nginx /usr/sbin/nginx; do
        if command -v "$n" >/dev/null 2>&1; then command -v "$n"; return 0; fi
    done
    return 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_nginx ROOT DIR [EXTRA_SERVER_DIRECTIVES]
start_nginx() {
    local root="$1" dir="$2" extra="${3:-}"
    local nginx
    nginx=$(find_nginx) || { echo "FAIL: nginx is not installed (scripts/install-deps.sh installs nginx-light)"; exit 1; }
    mkdir -p "$dir/tmp"
    local user_line=""
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    for attempt in 1 2 3 4 5; do
        NGINX_PORT=$(free_port)
        cat >"$dir/nginx.conf" <<EOF
$user_line
worker_processes 2;
daemon on;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 512; }
http {
    log_format packfs '\$request_method \$uri \$status \$body_bytes_sent "\$http_range" \$request_length "\$args"';
    access_log $dir/access.log packfs;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    sendfile on;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    types { application/octet-stream pack; }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $root;
        $extra
    }
}
EOF
        if "$nginx" -c "$dir/nginx.conf" -p "$dir" 2>"$dir/start.err"; then
            NGINX_DIR="$dir"
            NGINX_BIN="$nginx"
            NGINX_URL="http://127.0.0.1:$NGINX_PORT"
            for _ in $(seq 50); do
                curl -s -o /dev/null "$NGINX_URL/" && return 0
                sleep 0.1
            done
        fi
        grep -q "Address already in use" "$dir/start.err" 2>/dev/null || break
    done
    echo "FAIL: nginx did not start: $(cat "$dir/start.err" "$dir/error.log" 2>/dev/null | tail -5)"
    exit 1
}

stop_nginx() {
    [ -n "${NGINX_DIR:-}" ] && [ -f "$NGINX_DIR/nginx.pid" ] || return 0
    local pid
    pid=$(cat "$NGINX_DIR/nginx.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
}

# Reopens the log: the next lines start a fresh count.
reset_nginx_log() { : >"$NGINX_DIR/access.log"; }
# Requests and body bytes the server answered since the last reset (GETs of URI $1 only).
nginx_requests() { awk -v u="$1" '$2 == u' "$NGINX_DIR/access.log" | wc -l; }
nginx_bytes() { awk -v u="$1" '$2 == u { s += $4 } END { print s + 0 }' "$NGINX_DIR/access.log"; }

# Shared helpers for the bench/ scripts: start and stop servers pinned to a core,
# wait for readiness, read their CPU time and memory from /proc.
# Sourced, not run. Every server runs as a child of the script, on a loopback
# port, with its configuration and logs in $BENCH_TMP; stop_server ends it by PID.

set -u

SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_TMP=${BENCH_TMP:-$(mktemp -d /tmp/httplab-bench.XXXXXX)}
chmod 755 "$BENCH_TMP"
SERVER_PID=""
SERVER_PORT=""

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# make_corpus DIR: the files every benchmark uses.
make_corpus() {
  local d=$1
  mkdir -p "$d"
  chmod 755 "$d"
  head -c 87 /dev/zero | tr '\0' 'a' >"$d/f87.txt"
  head -c 4096 /dev/zero | tr '\0' 'b' >"$d/f4k.html"
  head -c 32768 /dev/zero | tr '\0' 'c' >"$d/f32k.bin"
  head -c 61440 /dev/zero | tr '\0' 'd' >"$d/f60k.bin"
  [ -f "$d/big32m.bin" ] || head -c $((32 * 1024 * 1024)) /dev/urandom >"$d/big32m.bin"
  chmod 644 "$d"/*
}

have() { command -v "$1" >/dev/null 2>&1; }

# TLS=1: start_server serves HTTPS with a self-signed certificate for
# 127.0.0.1/localhost made once per run (openssl); SCHEME says which.
# HTTP2=1: the servers speak HTTP/2 too (httplab `--http2 on`, nginx
# `http2` on the listener: by ALPN over TLS, h2c by prior knowledge in
# cleartext; h2o always does).
TLS=${TLS:-0}
HTTP2=${HTTP2:-0}
H2ARGS=""
CURL_H2=""
[ "$HTTP2" = 1 ] && H2ARGS="--http2 on"
[ "$HTTP2" = 1 ] && [ "$TLS" != 1 ] && CURL_H2="--http2-prior-knowledge"
SCHEME=http
[ "$TLS" = 1 ] && SCHEME=https
CERT=$BENCH_TMP/cert.pem
KEY=$BENCH_TMP/key.pem
make_cert() {
  [ -f "$CERT" ] && return 0
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$KEY" -out "$CERT" >/dev/null 2>&1
}

# start_server NAME ROOT: sets SERVER_PID and SERVER_PORT. One worker, pinned.
start_server() {
  local name=$1 root=$2 dir="$BENCH_TMP/$1"
  mkdir -p "$dir"
  chmod 755 "$dir"
  SERVER_PORT=$(free_port)
  case "$name" in
    httplab)
      local tlsargs=""
      [ "$TLS" = 1 ] && { make_cert; tlsargs="--tls-cert $CERT --tls-key $KEY"; }
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORE" "$HTTPLAB" serve --root "$root" --listen "127.0.0.1:$SERVER_PORT" \
        --workers 1 --quiet $tlsargs $H2ARGS ${HTTPLAB_EXTRA:-} >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    floor)
      # The floor server (bench/floor-server, built here, not shipped): one
      # prebuilt reply of $FLOOR_FILE (default f87.txt) for every request, so
      # only workloads of that file (w87, close, pipe16) measure anything.
      # With HTTP2=1 it speaks h2c (prior knowledge) instead, at the same
      # floor: the h2-* workloads of that file (h2-87-1, h2-87-100; with
      # FLOOR_FILE=f4k.html, h2-4k-1 and h2-4k-100).
      [ "$TLS" = 1 ] && { echo "the floor server speaks no TLS" >&2; return 1; }
      local floormode=""
      [ "$HTTP2" = 1 ] && floormode=h2
      (cd "$BENCH_DIR/floor-server" && cargo build --release -q) || return 1
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORE" "$BENCH_DIR/floor-server/target/release/httplab-floor-server" \
        "127.0.0.1:$SERVER_PORT" "$root/${FLOOR_FILE:-f87.txt}" 3600 $floormode >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    httplab-epoll | httplab-uring)
      # The event model with its I/O engine named (httplab alone: --io auto);
      # with HTTP2=1 it speaks HTTP/2 too (io_uring: h2c only).
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORE" "$HTTPLAB" serve --root "$root" --listen "127.0.0.1:$SERVER_PORT" \
        --workers 1 --quiet --io "${name#httplab-}" $H2ARGS ${HTTPLAB_EXTRA:-} >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    httplab-sendfile | httplab-pread)
      # The event model with file bytes always sent by sendfile, or always
      # read and sent (--file-io).
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORE" "$HTTPLAB" serve --root "$root" --listen "127.0.0.1:$SERVER_PORT" \
        --workers 1 --quiet --file-io "${name#httplab-}" $H2ARGS ${HTTPLAB_EXTRA:-} >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    httplab-before)
      # Another build of httplab (HTTPLAB_BEFORE=path), event model, for a
      # before/after comparison interleaved with the peers in the same rounds.
      [ -x "${HTTPLAB_BEFORE:-}" ] || { echo "httplab-before needs HTTPLAB_BEFORE=path to a build" >&2; return 1; }
      local tlsb=""
      [ "$TLS" = 1 ] && { make_cert; tlsb="--tls-cert $CERT --tls-key $KEY"; }
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORE" "$HTTPLAB_BEFORE" serve --root "$root" --listen "127.0.0.1:$SERVER_PORT" \
        --workers 1 --quiet $tlsb $H2ARGS ${HTTPLAB_EXTRA:-} >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    httplab-*)
      # httplab-MODEL, e.g. httplab-threads
      taskset -c "$SERVER_CORE" "$HTTPLAB" serve --root "$root" --listen "127.0.0.1:$SERVER_PORT" \
        --model "${name#httplab-}" --quiet ${HTTPLAB_EXTRA:-} >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    nginx)
      # tcp_nopush (TCP_CORK) is on: nginx's cheaper setting for CPU (off,
      # the head and the sendfile body leave as two packets: 1.2-1.4x the
      # server CPU per request), at the price of its tail latency (256 KiB
      # files on loopback: p99 18 ms on, 0.2 ms off). BENCHMARKS.md, "nginx's
      # tcp_nopush". NGINX_NOPUSH=off measures it the other way.
      local ssl="" sslconf=""
      if [ "$TLS" = 1 ]; then
        make_cert
        ssl=" ssl"
        [ "$HTTP2" = 1 ] && ssl=" ssl http2"
        sslconf="ssl_certificate $CERT; ssl_certificate_key $KEY; ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:SSL:10m; ssl_session_tickets on;"
      elif [ "$HTTP2" = 1 ]; then
        # nginx before 1.25 speaks only h2c (prior knowledge) on such a
        # port; without sendfile, since with it nginx 1.22 holds each h2c
        # response's DATA about 40 ms (h2load: 22 requests/s on one
        # connection), which would measure the stall, not the server.
        ssl=" http2"
        sslconf="sendfile off;"
      fi
      cat >"$dir/nginx.conf" <<EOF
worker_processes ${NGINX_WORKERS:-1};
worker_rlimit_nofile ${NGINX_NOFILE:-200000};
daemon off;
master_process on;
user root;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections ${NGINX_CONNECTIONS:-150000}; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush ${NGINX_NOPUSH:-on};
  tcp_nodelay on;
  open_file_cache max=10000 inactive=60s;
  open_file_cache_valid 60s;
  keepalive_requests ${NGINX_KEEPALIVE_REQUESTS:-100000000};
  keepalive_timeout ${NGINX_KEEPALIVE:-75s};
  server {
    listen 127.0.0.1:$SERVER_PORT$ssl backlog=4096;
    $sslconf
    root $root;
  }
}
EOF
      taskset -c "$SERVER_CORE" nginx -c "$dir/nginx.conf" -p "$dir" >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    h2o)
      local h2ossl=""
      if [ "$TLS" = 1 ]; then
        make_cert
        h2ossl="  ssl:
    certificate-file: $CERT
    key-file: $KEY"
      fi
      cat >"$dir/h2o.conf" <<EOF
listen:
  host: 127.0.0.1
  port: $SERVER_PORT
$h2ossl
num-threads: 1
max-connections: 150000
user: root
pid-file: $dir/h2o.pid
error-log: $dir/error.log
http1-request-timeout: 75
hosts:
  default:
    paths:
      /:
        file.dir: $root
EOF
      taskset -c "$SERVER_CORE" h2o -c "$dir/h2o.conf" >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    lighttpd)
      cat >"$dir/lighttpd.conf" <<EOF
server.document-root = "$root"
server.bind = "127.0.0.1"
server.port = $SERVER_PORT
server.pid-file = "$dir/lighttpd.pid"
server.errorlog = "$dir/error.log"
server.max-connections = ${LIGHTTPD_MAX_CONNS:-10000}
server.max-fds = 20000
server.max-keep-alive-requests = 100000000
server.max-keep-alive-idle = 75
server.network-backend = "sendfile"
server.stat-cache-engine = "simple"
mimetype.assign = ( ".html" => "text/html", ".txt" => "text/plain", ".bin" => "application/octet-stream" )
EOF
      if [ "$TLS" = 1 ]; then
        make_cert
        printf 'server.modules += ( "mod_openssl" )\nssl.engine = "enable"\nssl.pemfile = "%s"\nssl.privkey = "%s"\n' \
          "$CERT" "$KEY" >>"$dir/lighttpd.conf"
      fi
      taskset -c "$SERVER_CORE" lighttpd -D -f "$dir/lighttpd.conf" >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    apache-event | apache-worker | apache-prefork)
      local mpm=${name#apache-}
      cat >"$dir/apache.conf" <<EOF
ServerRoot "$dir"
ServerName localhost
LoadModule mpm_${mpm}_module /usr/lib/apache2/modules/mod_mpm_${mpm}.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
User nobody
Group nogroup
Listen 127.0.0.1:$SERVER_PORT
PidFile $dir/apache.pid
ErrorLog $dir/error.log
LogLevel warn
DocumentRoot "$root"
<Directory "$root">
  Require all granted
</Directory>
TypesConfig /etc/mime.types
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 5
EnableSendfile On
EnableMMAP On
ServerLimit 64
MaxRequestWorkers ${APACHE_WORKERS:-256}
ListenBacklog 4096
EOF
      if [ "$mpm" != prefork ]; then
        echo "ThreadsPerChild 64" >>"$dir/apache.conf"
        echo "ThreadLimit 64" >>"$dir/apache.conf"
      fi
      taskset -c "$SERVER_CORE" apache2 -f "$dir/apache.conf" -DFOREGROUND >"$dir/out.log" 2>&1 &
      SERVER_PID=$!
      ;;
    *)
      echo "unknown server $name" >&2
      return 1
      ;;
  esac
  local i
  for i in $(seq 1 100); do
    # shellcheck disable=SC2086
    # h2c by prior knowledge where HTTP2=1 in cleartext (nginx then
    # speaks nothing else on the port).
    if curl -sk -o /dev/null --max-time 1 $CURL_H2 "$SCHEME://127.0.0.1:$SERVER_PORT/f87.txt"; then
      return 0
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "$name exited at start-up:" >&2
      cat "$dir/out.log" "$dir/error.log" 2>/dev/null >&2
      return 1
    fi
    sleep 0.1
  done
  echo "$name did not answer on port $SERVER_PORT" >&2
  # Stop what was started: the next start would forget its PID.
  stop_server
  return 1
}

stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null
  local i
  for i in $(seq 1 50); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}

# The server's process tree: the PID and its descendants.
server_pids() {
  local p=$1
  echo "$p"
  local c
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
    server_pids "$c"
  done
}

# CPU clock ticks (user+system) of the server tree.
# server_user_sys: user and system clock ticks (utime, stime; 1/CLK_TCK s)
# of the server's process tree, as "USER SYS".
server_user_sys() {
  local u=0 s=0 p a b
  for p in $(server_pids "$SERVER_PID"); do
    read -r a b < <(awk '{print $14, $15}' /proc/"$p"/stat 2>/dev/null || echo 0 0)
    u=$((u + ${a:-0}))
    s=$((s + ${b:-0}))
  done
  echo "$u $s"
}

server_ticks() {
  local t=0 p
  for p in $(server_pids "$SERVER_PID"); do
    t=$((t + $(awk '{print $14 + $15}' /proc/"$p"/stat 2>/dev/null || echo 0)))
  done
  echo "$t"
}

# Nanoseconds on CPU of the server tree (every thread), from
# /proc/PID/task/TID/schedstat: exact, unlike clock ticks. Threads that exit
# during the run are not counted (the servers benchmarked keep theirs).
server_ns() {
  local t=0 p f
  for p in $(server_pids "$SERVER_PID"); do
    for f in /proc/"$p"/task/*/schedstat; do
      [ -r "$f" ] && t=$((t + $(awk '{print $1}' "$f" 2>/dev/null || echo 0)))
    done
  done
  echo "$t"
}

# Resident memory of the server tree, KiB.
server_rss_kb() {
  local t=0 p
  for p in $(server_pids "$SERVER_PID"); do
    t=$((t + $(awk '/^VmRSS/{print $2}' /proc/"$p"/status 2>/dev/null || echo 0)))
  done
  echo "$t"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# spread: numbers on stdin (blank lines ignored) -> "median min max" ("nan nan nan" for none).
spread() {
  sort -g | awk 'NF {a[++n]=$1}
    END {if (!n) {print "nan nan nan"; exit}
         print (n%2 ? a[(n+1)/2] : (a[n/2]+a[n/2+1])/2), a[1], a[n]}'
}

cleanup_bench() {
  stop_server
  [ -n "${KEEP_BENCH_TMP:-}" ] || rm -rf "$BENCH_TMP"
}

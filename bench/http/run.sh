#!/usr/bin/env bash
# HTTP throughput of gpurentd next to nginx serving the same bytes, in one run on this machine.
#   bench/http/run.sh [BUILD_DIR]        (make bench builds a Release tree and runs this)
# Environment: DURATION (s, default 10), CONNECTIONS (64), THREADS (2), ROUNDS (3).
# For each route, nginx and gpurentd are measured alternately ROUNDS times with
# `wrk -tTHREADS -cCONNECTIONS -dDURATION`; the median requests/s of each is reported with
# the ratio gpurentd/nginx. nginx is the machine's ceiling for serving those bytes.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/bench}
duration=${DURATION:-10}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
gpurent_port=18080
nginx_port=18090

work=$(mktemp -d /tmp/gpurent-bench-XXXXXX)
chmod 755 "$work"
cleanup() {
  [ -n "${server_pid:-}" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  [ -f "$work/nginx.pid" ] && kill -QUIT "$(cat "$work/nginx.pid")" 2>/dev/null || true
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT

# gpurentd as deployed: embedded PostgreSQL, JSON access log lines to a file. Rate limits
# stay on the request path but are set to 0 (unlimited): wrk is one client address, and the
# default per-IP limit would turn the measurement into one of 429 answers.
"$build/cmd/gpurentd" serve --listen=127.0.0.1:$gpurent_port --data_dir="$work/pg" \
  --io_threads=2 --log_format=json --rate_limit_per_ip=0 --rate_limit_per_credential=0 \
  >"$work/gpurentd.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$gpurent_port/readyz" >/dev/null && break
  sleep 0.1
done

# nginx serves byte-identical bodies, also writing an access log.
mkdir -p "$work/root/v1"
curl -sf "http://127.0.0.1:$gpurent_port/healthz" >"$work/root/healthz"
curl -sf "http://127.0.0.1:$gpurent_port/v1/openapi.json" >"$work/root/v1/openapi.json"
cat >"$work/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log $work/nginx-access.log;
  default_type application/json;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nginx_port;
    root $work/root;
  }
}
CONF
nginx -c "$work/nginx.conf"
sleep 0.5

measure() {  # url → requests/s
  wrk -t"$threads" -c"$connections" -d"${duration}s" "$1" | awk '/Requests\/sec/ {print $2}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-20s %12s %12s %8s\n" "route" "nginx req/s" "gpurent req/s" "ratio"
for route in /healthz /v1/openapi.json; do
  n=() g=()
  for _ in $(seq 1 "$rounds"); do
    n+=("$(measure "http://127.0.0.1:$nginx_port$route")")
    g+=("$(measure "http://127.0.0.1:$gpurent_port$route")")
  done
  nm=$(printf "%s\n" "${n[@]}" | median)
  gm=$(printf "%s\n" "${g[@]}" | median)
  awk -v r="$route" -v n="$nm" -v g="$gm" 'BEGIN { printf "%-20s %12.0f %12.0f %8.2f\n", r, n, g, g / n }'
done
echo "(wrk -t$threads -c$connections -d${duration}s, median of $rounds alternating rounds; $(nproc) cores)"

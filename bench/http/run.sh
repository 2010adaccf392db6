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
"$build/cmd/gpurentd" serve --listen=127.0.0.1:$gpurent_port --data_dir="$work/pg" --agent_listen=off \
  --io_threads=2 --log_format=json --rate_limit_per_ip=0 --rate_limit_per_credential=0 \
  >"$work/gpurentd.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$gpurent_port/readyz" >/dev/null && break
  sleep 0.1
done

# A signed-up user with a panel session and an API token, for the authenticated routes.
api="http://127.0.0.1:$gpurent_port"
curl -sf -H 'Content-Type: application/json' -d \
  '{"email":"bench@example.com","password":"a good passphrase","org_name":"Bench"}' \
  "$api/v1/auth/signup" >/dev/null
login=$(curl -sf -D "$work/login.headers" -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"a good passphrase"}' "$api/v1/auth/login")
cookie=$(grep -i '^set-cookie:' "$work/login.headers" | sed 's/^[^:]*: *//; s/;.*//' | tr -d '\r')
csrf=$(printf '%s' "$login" | sed 's/.*"csrf_token":"\([^"]*\)".*/\1/')
token=$(curl -sf -H 'Content-Type: application/json' -H "Cookie: $cookie" -H "X-CSRF-Token: $csrf" \
  -d '{"name":"bench","scopes":["rentals:read"]}' "$api/v1/api-tokens" |
  sed 's/.*"token":"\([^"]*\)".*/\1/')

# nginx serves byte-identical bodies, also writing an access log.
mkdir -p "$work/root/v1"
curl -sf "http://127.0.0.1:$gpurent_port/healthz" >"$work/root/healthz"
curl -sf "http://127.0.0.1:$gpurent_port/v1/openapi.json" >"$work/root/v1/openapi.json"
curl -sf -H "Authorization: Bearer $token" "$api/v1/gpu-models" >"$work/root/v1/gpu-models"
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

# wrk's summary → "requests/s requests".
measure() {  # url [header] → requests/s and the number of requests
  local args=(-t"$threads" -c"$connections" -d"${duration}s")
  [ -n "${2:-}" ] && args+=(-H "$2")
  wrk "${args[@]}" "$1" | awk '/requests in/ {n=$1} /Requests\/sec/ {print $2, n}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Database round trips gpurentd has made (statements, BEGIN and COMMIT, PREPARE), from its
# own /metrics: PostgreSQL's statistics reach pg_stat_database seconds late.
round_trips() {
  curl -sf "$api/metrics" | awk '/^gpurent_db_round_trips_total / {print $2}'
}

printf "%-34s %12s %12s %8s %10s\n" "route" "nginx req/s" "gpurent req/s" "ratio" "db rt/req"
run_route() {  # label path [header]
  local label=$1 route=$2 header=${3:-} n=() g=() tx=0 requests=0
  for _ in $(seq 1 "$rounds"); do
    n+=("$(measure "http://127.0.0.1:$nginx_port$route" "$header" | cut -d' ' -f1)")
    local before after out
    before=$(round_trips)
    out=$(measure "http://127.0.0.1:$gpurent_port$route" "$header")
    after=$(round_trips)
    g+=("${out% *}")
    tx=$((tx + after - before))
    requests=$((requests + ${out#* }))
  done
  local nm gm
  nm=$(printf "%s\n" "${n[@]}" | median)
  gm=$(printf "%s\n" "${g[@]}" | median)
  awk -v r="$label" -v n="$nm" -v g="$gm" -v t="$tx" -v q="$requests" \
    'BEGIN { printf "%-34s %12.0f %12.0f %8.2f %10.4f\n", r, n, g, g / n, t / q }'
}
run_route "GET /healthz" /healthz
run_route "GET /v1/openapi.json" /v1/openapi.json
run_route "GET /v1/gpu-models (bearer token)" /v1/gpu-models "Authorization: Bearer $token"
run_route "GET /v1/gpu-models (session)" /v1/gpu-models "Cookie: $cookie"
echo "(wrk -t$threads -c$connections -d${duration}s, median of $rounds alternating rounds; $(nproc) cores;"
echo " db rt/req: gpurentd's database round trips per request over all rounds)"

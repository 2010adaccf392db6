#!/usr/bin/env bash
# Requests/s and latency of the catalog routes (served from the in-memory snapshot) over HTTP.
#   bench/catalog/run.sh [BUILD_DIR]     (default build/bench)
# Environment: DURATION (s, default 10), CONNECTIONS (64), THREADS (2).
# Starts gpurentd in demo mode on an embedded PostgreSQL in a temporary folder (the demo
# fleet: 13 GPU models, 5 images), signs up a customer, creates an API token for it and runs
# `wrk --latency` with `Authorization: Bearer …` against GET /v1/me (authentication alone,
# the baseline), GET /v1/gpu-models and GET /v1/images. Afterwards it prints the catalog
# cache counters from /metrics: the misses must stay at about one for the whole run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/bench}
duration=${DURATION:-10}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
port=${PORT:-18180}
base="http://127.0.0.1:$port"

for tool in wrk curl jq; do
  command -v "$tool" >/dev/null || { echo "catalog bench: $tool is not installed" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gpurent-catbench-XXXXXX)
chmod 755 "$work"
cleanup() {
  [ -n "${server_pid:-}" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# As deployed, with the demo seed; rate limits at 0 (unlimited) since wrk is one client
# address with one credential, and the default limits would answer 429.
"$build/cmd/gpurentd" serve --listen=127.0.0.1:$port --data_dir="$work/pg" --demo=true \
  --io_threads=2 --log_format=json --rate_limit_per_ip=0 --rate_limit_per_credential=0 \
  >"$work/gpurentd.log" 2>&1 &
server_pid=$!
# The demo seed runs before the server answers, so ready means seeded.
for _ in $(seq 1 300); do
  curl -sf "$base/readyz" >/dev/null && break
  sleep 0.1
done
curl -sf "$base/readyz" >/dev/null || { echo "gpurentd did not start:" >&2; cat "$work/gpurentd.log" >&2; exit 1; }
grep -q "demo admin login" "$work/gpurentd.log" || { echo "gpurentd printed no demo admin login" >&2; exit 1; }

# The demo admin belongs to no organisation and an API token belongs to one, so the token
# is a customer's: sign up (user + org), sign in (cookie + CSRF token), create the token.
email=catalog-bench@example.com
password=catalog-bench-password
curl -sf -X POST "$base/v1/auth/signup" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\",\"org_name\":\"Catalog bench\"}" >/dev/null
csrf=$(curl -sf -c "$work/cookies" -X POST "$base/v1/auth/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\"}" | jq -r .csrf_token)
token=$(curl -sf -b "$work/cookies" -X POST "$base/v1/api-tokens" -H 'Content-Type: application/json' \
  -H "X-CSRF-Token: $csrf" -d '{"name":"catalog bench","scopes":["rentals:read"]}' | jq -r .token)
[ "${token:0:4}" = gpr_ ] || { echo "could not create an API token" >&2; exit 1; }
auth="Authorization: Bearer $token"

models=$(curl -sf -H "$auth" "$base/v1/gpu-models" | jq '.items | length')
images=$(curl -sf -H "$auth" "$base/v1/images" | jq '.items | length')
echo "catalog: $models GPU models, $images images; token ${token:0:8}…"

counter() { curl -sf "$base/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

# route → "req/s p50 p99" from one wrk run
measure() {
  wrk -t"$threads" -c"$connections" -d"${duration}s" --latency -H "$auth" "$base$1" |
    awk '/Requests\/sec/ {rps = $2} $1 == "50%" {p50 = $2} $1 == "99%" {p99 = $2}
         /Non-2xx/ {bad = $NF} END {print rps, p50, p99, (bad == "" ? 0 : bad)}'
}

printf "%-18s %10s %10s %10s %8s\n" "route" "req/s" "p50" "p99" "non-2xx"
for route in /v1/me /v1/gpu-models /v1/images; do
  read -r rps p50 p99 bad < <(measure "$route")
  printf "%-18s %10.0f %10s %10s %8s\n" "$route" "$rps" "$p50" "$p99" "$bad"
done
echo "(wrk -t$threads -c$connections -d${duration}s --latency; $(nproc) cores, shared with gpurentd and PostgreSQL)"
for name in hits misses invalidations; do
  echo "gpurent_catalog_cache_${name}_total $(counter "gpurent_catalog_cache_${name}_total")"
done

#!/usr/bin/env bash
# Requests/s and latency of the catalog routes (served from the in-memory snapshot) over HTTP.
#   bench/catalog/run.sh [BUILD_DIR]     (default build/bench)
# Environment: DURATION (s, default 10), CONNECTIONS (64), THREADS (2), ROUNDS (3).
# Starts gpurentd in demo mode on an embedded PostgreSQL in a temporary folder (the demo
# fleet: 13 GPU models, 5 images), signs up a customer, creates an API token for it and runs
# `wrk --latency` with `Authorization: Bearer …` against GET /v1/me (authentication alone,
# the baseline), GET /v1/gpu-models and GET /v1/images, alternately ROUNDS times, and reports
# the medians. Afterwards it prints the catalog cache counters from /metrics: the misses
# must stay at about one for the whole run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/bench}
duration=${DURATION:-10}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
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
"$build/cmd/gpurentd" serve --listen="127.0.0.1:$port" --data_dir="$work/pg" --demo=true --agent_listen=off \
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

curl -sf -H "$auth" "$base/v1/gpu-models" >"$work/gpu-models.json"
curl -sf -H "$auth" "$base/v1/images" >"$work/images.json"
echo "catalog: $(jq '.items | length' "$work/gpu-models.json") GPU models ($(wc -c <"$work/gpu-models.json") bytes)," \
  "$(jq '.items | length' "$work/images.json") images ($(wc -c <"$work/images.json") bytes)"

counter() { curl -sf "$base/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

# route → "req/s p50_ms p99_ms non-2xx" from one wrk run
measure() {
  wrk -t"$threads" -c"$connections" -d"${duration}s" --latency -H "$auth" "$base$1" |
    awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; return v * 1000 }
         /Requests\/sec/ {rps = $2} $1 == "50%" {p50 = ms($2)} $1 == "99%" {p99 = ms($2)}
         /Non-2xx/ {bad = $NF} END {print rps, p50, p99, (bad == "" ? 0 : bad)}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
column() { awk -v r="$1" -v c="$2" '$1 == r {print $c}' "$work/results" | median; }  # route, field

# Routes alternate within each round, so a burst of other load on the host hits all of them.
routes=(/v1/me /v1/gpu-models /v1/images)
for _ in $(seq 1 "$rounds"); do
  for route in "${routes[@]}"; do
    echo "$route $(measure "$route")" >>"$work/results"
  done
done
printf "%-18s %10s %10s %10s %8s\n" "route" "req/s" "p50 ms" "p99 ms" "non-2xx"
for route in "${routes[@]}"; do
  bad=$(awk -v r="$route" '$1 == r {s += $5} END {print s}' "$work/results")
  printf "%-18s %10.0f %10.2f %10.2f %8s\n" "$route" "$(column "$route" 2)" "$(column "$route" 3)" "$(column "$route" 4)" "$bad"
done
echo "(wrk -t$threads -c$connections -d${duration}s --latency, median of $rounds alternating rounds; $(nproc) cores shared with gpurentd and PostgreSQL)"
for name in hits misses invalidations; do
  echo "gpurent_catalog_cache_${name}_total $(counter "gpurent_catalog_cache_${name}_total")"
done

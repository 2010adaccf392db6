#!/usr/bin/env bash
# 10,000 simulated node agents against one gpurentd on this machine: the server's CPU, its
# memory per agent connection, how long a heartbeat takes to be committed, and the public
# API's latency meanwhile.
#   bench/fleet/run.sh [BUILD_DIR]     (default build/bench; a Release tree with gpurentd and
#                                       gpurent-fleetsim)
# Environment: AGENTS (10000), HEARTBEAT (10s), RAMP (s over which the agents connect, 120),
# WINDOW (s of steady state measured with the agents alone, 60), API_WINDOW (s measured with
# API clients too, 30), API_CONNECTIONS (4) and API_DELAY_MS (20: each
# wrk connection waits that long between requests, ~200 requests/s in all), IO_THREADS (1,
# the fleet simulator's), KEEP (1: keep the work folder).
#
# Phases: gpurentd on an embedded PostgreSQL in a temporary folder (durable, as deployed;
# demo data for the site and the GPU model); AGENTS enrolling nodes and their tokens seeded
# with SQL (seed_agents.sql); every node enrolled by gpurent-fleetsim through the agent
# listener (a key, a CSR and a certificate each); gpurentd's RSS then, before any channel;
# the fleet connected over RAMP seconds; after one more heartbeat period, a WINDOW of steady
# state with the agents alone: gpurentd's CPU from /proc/<pid>/stat (PostgreSQL's and the
# simulator's too), its RSS, the simulator's heartbeat round trips (sent -> acked, and the
# ack comes after the commit) and gpurentd's own sent_at -> commit histogram; then an
# API_WINDOW with wrk against GET /v1/gpu-models and GET /v1/offers beside the fleet.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/fleet
build=${1:-build/bench}
agents=${AGENTS:-10000}
heartbeat=${HEARTBEAT:-10s}
ramp=${RAMP:-120}
window=${WINDOW:-60}
api_window=${API_WINDOW:-30}
api_connections=${API_CONNECTIONS:-4}
api_delay=${API_DELAY_MS:-20}
io_threads=${IO_THREADS:-1}
http_port=${HTTP_PORT:-18380}
agent_port=${AGENT_PORT:-18443}
pg_bin=/usr/lib/postgresql/15/bin
hz=$(getconf CLK_TCK)

for tool in wrk curl jq "$pg_bin/psql" "$build/cmd/gpurentd" "$build/cmd/gpurent-fleetsim"; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "fleet bench: $tool is missing" >&2; exit 1; }
done
# Each agent is a descriptor in gpurentd and one in the simulator.
ulimit -n $((agents * 2 + 4096)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d /tmp/gpurent-fleet-XXXXXX)
chmod 755 "$work"
cleanup() {
  [ -n "${fleet_pid:-}" ] && kill -INT "$fleet_pid" 2>/dev/null && wait "$fleet_pid" 2>/dev/null || true
  [ -n "${server_pid:-}" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

"$build/cmd/gpurentd" serve --listen="127.0.0.1:$http_port" --data_dir="$work/pg" --demo=true \
  --agent_listen="127.0.0.1:$agent_port" --agent_pki_dir="$work/pki" --io_threads=2 \
  --log_format=json --log_level=warn --rate_limit_per_ip=0 --rate_limit_burst_per_ip=0 \
  --rate_limit_per_credential=0 --rate_limit_burst_per_credential=0 >"$work/gpurentd.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$http_port/readyz" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$http_port/readyz" >/dev/null || { cat "$work/gpurentd.log" >&2; exit 1; }
pg_port=$(sed -n 4p "$work/pg/postmaster.pid")
pg_socket=$(sed -n 5p "$work/pg/postmaster.pid")
postmaster=$(sed -n 1p "$work/pg/postmaster.pid")
url="postgresql://gpurent@/gpurent?host=$pg_socket&port=$pg_port"
psql() { "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 "$url" "$@"; }

# CPU seconds (utime + stime) of processes, and the resident set of one, in KiB.
cpu_of() { cat "${@/#//proc/}" 2>/dev/null | sed 's|^.*) ||' |
  awk -v hz="$hz" '{ s += $12 + $13 } END { printf "%.2f", s / hz }'; }
pg_pids() { echo "$postmaster/stat"; for p in $(pgrep -P "$postmaster"); do echo "$p/stat"; done; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
status_field() {  # the last status line's field
  grep '"connected"' "$work/fleetsim.log" | grep -v summary | tail -1 | jq -r ".$1"
}

echo "seeding $agents enrolling nodes and their tokens"
psql -v nodes="$agents" -f "$here/seed_agents.sql" >"$work/enroll.txt"
[ "$(wc -l <"$work/enroll.txt")" = "$agents" ] || { echo "seeding failed" >&2; exit 1; }

fleet=("$build/cmd/gpurent-fleetsim" --server "https://127.0.0.1:$agent_port"
  --ca "$work/pki/ca.crt" --state-dir "$work/fleet" --enroll-from "$work/enroll.txt")
echo "enrolling $agents nodes through the agent listener"
enroll_start=$(date +%s.%N)
"${fleet[@]}" --enroll-only --enroll-parallel 16 2>"$work/enroll.log" ||
  { tail -5 "$work/enroll.log" >&2; exit 1; }
enroll_s=$(echo "$(date +%s.%N) - $enroll_start" | bc)
sleep 5
rss_before=$(rss_kib "$server_pid")

echo "connecting $agents agents over ${ramp}s (heartbeat $heartbeat)"
"${fleet[@]}" --heartbeat "$heartbeat" --ramp "${ramp}s" --status-interval 5s \
  --io-threads "$io_threads" 2>"$work/fleetsim.log" &
fleet_pid=$!
deadline=$(($(date +%s) + ramp + 180))
while :; do
  sleep 5
  kill -0 "$fleet_pid" 2>/dev/null || { tail -5 "$work/fleetsim.log" >&2; exit 1; }
  connected=$(status_field connected 2>/dev/null || echo 0)
  [ "${connected:-0}" = "$agents" ] && break
  [ "$(date +%s)" -lt "$deadline" ] || {
    echo "only ${connected:-0} of $agents agents connected:" >&2
    tail -3 "$work/fleetsim.log" >&2
    exit 1
  }
done
echo "all $agents connected; one heartbeat period to settle"
sleep "${heartbeat%s}"

# A customer's API token for the API's latency meanwhile.
api="http://127.0.0.1:$http_port"
curl -sf -H 'Content-Type: application/json' -d \
  '{"email":"fleet@example.com","password":"a good passphrase","org_name":"Fleet"}' \
  "$api/v1/auth/signup" >/dev/null
login=$(curl -sf -D "$work/login.headers" -H 'Content-Type: application/json' \
  -d '{"email":"fleet@example.com","password":"a good passphrase"}' "$api/v1/auth/login")
cookie=$(grep -i '^set-cookie:' "$work/login.headers" | sed 's/^[^:]*: *//; s/;.*//' | tr -d '\r')
csrf=$(printf '%s' "$login" | jq -r .csrf_token)
token=$(curl -sf -H 'Content-Type: application/json' -H "Cookie: $cookie" -H "X-CSRF-Token: $csrf" \
  -d '{"name":"fleet","scopes":["rentals:read"]}' "$api/v1/api-tokens" | jq -r .token)
offers="$api/v1/offers?gpu_model=H100-SXM5-80GB&gpu_count=8&days=1"
for _ in $(seq 1 30); do
  status=$(curl -s -o "$work/offers.json" -w '%{http_code}' -H "Authorization: Bearer $token" "$offers")
  [ "$status" = 200 ] && break
  sleep 1
done
[ "$status" = 200 ] || { echo "GET /v1/offers answered $status:" >&2; cat "$work/offers.json" >&2; exit 1; }

# Window 1, the agents alone: the server's CPU and memory, the heartbeats' lag.
echo "steady window, agents only: ${window}s"
lines_before=$(wc -l <"$work/fleetsim.log")
server_cpu0=$(cpu_of "$server_pid/stat")
pg_cpu0=$(cpu_of $(pg_pids))
fleet_cpu0=$(cpu_of "$fleet_pid/stat")
beats0=$(status_field heartbeats_acked)
lag0=$(curl -sf "$api/metrics" | grep '^gpurent_agent_heartbeat_commit_lag_seconds_bucket')
t0=$(date +%s.%N)
sleep "$window"
t1=$(date +%s.%N)
server_cpu1=$(cpu_of "$server_pid/stat")
pg_cpu1=$(cpu_of $(pg_pids))
fleet_cpu1=$(cpu_of "$fleet_pid/stat")
rss_after=$(rss_kib "$server_pid")
lag1=$(curl -sf "$api/metrics" | grep '^gpurent_agent_heartbeat_commit_lag_seconds_bucket')
sleep 6  # the status line that covers the window's end
beats1=$(status_field heartbeats_acked)
connected=$(status_field connected)
tail -n +"$((lines_before + 1))" "$work/fleetsim.log" | grep '"connected"' >"$work/window.jsonl" || true
fresh=$(psql -At -c "SELECT count(*) FROM nodes WHERE id LIKE 'nod_fleet%' AND state = 'available'
  AND last_heartbeat_at > now() - interval '${heartbeat%s} seconds' - interval '5 seconds'")
secs=$(echo "$t1 - $t0" | bc)

# Window 2, the same fleet with API clients at a modest rate: their latency, and the CPU.
echo "API window: ${api_window}s"
api_cpu0=$(cpu_of "$server_pid/stat")
ta=$(date +%s.%N)
half=$((api_connections / 2))
export FLEET_TOKEN="$token" DELAY_MS="$api_delay"
wrk -t1 -c"$half" -d"${api_window}s" --latency -s "$here/api_rate.lua" "$api/v1/gpu-models" \
  >"$work/wrk-models.txt" &
wrk_a=$!
wrk -t1 -c"$((api_connections - half))" -d"${api_window}s" --latency -s "$here/api_rate.lua" "$offers" \
  >"$work/wrk-offers.txt" &
wrk_b=$!
wait "$wrk_a" "$wrk_b"
api_cpu1=$(cpu_of "$server_pid/stat")
api_secs=$(echo "$(date +%s.%N) - $ta" | bc)
api_lines=$(wc -l <"$work/fleetsim.log")
sleep 6
tail -n +"$((api_lines - api_window / 5))" "$work/fleetsim.log" | grep '"connected"' | grep -v summary \
  >"$work/api-window.jsonl" || true

kill -INT "$fleet_pid"
wait "$fleet_pid" || true
fleet_pid=
summary=$(grep '"summary"' "$work/fleetsim.log" | tail -1)

# Window 3, the same API clients with the agents gone (the nodes stay available until the
# silence limit, 60 s): what the routes cost on this fleet without agents beside them.
echo "API window without agents: ${api_window}s"
wrk -t1 -c"$half" -d"${api_window}s" --latency -s "$here/api_rate.lua" "$api/v1/gpu-models" \
  >"$work/wrk-models-alone.txt" &
wrk_a=$!
wrk -t1 -c"$((api_connections - half))" -d"${api_window}s" --latency -s "$here/api_rate.lua" "$offers" \
  >"$work/wrk-offers-alone.txt" &
wrk_b=$!
wait "$wrk_a" "$wrk_b"

cores() { echo "scale=3; ($2 - $1) / ${3:-$secs}" | bc; }
p99_of() { awk '$1 == "99.000%" || $1 == "99%" {print $2}' "$1"; }
rate_of() { awk '/Requests\/sec/ {print $2}' "$1"; }
errors_of() { awk '/Non-2xx|Socket errors/ {print}' "$1" | paste -sd' ' -; }
worst_p99=$(jq -s 'map(select(.heartbeat_ack.count > 0) | .heartbeat_ack.p99_ms) | max' "$work/window.jsonl")
api_worst_p99=$(jq -s 'map(select(.heartbeat_ack.count > 0) | .heartbeat_ack.p99_ms) | max' "$work/api-window.jsonl")
# The server's own histogram over window 1: the smallest bucket bound holding 99 %.
server_p99=$(paste <(echo "$lag0") <(echo "$lag1") | awk '
  { match($1, /le="[^"]*"/); le = substr($1, RSTART + 4, RLENGTH - 5); n[NR] = $4 - $2; b[NR] = le }
  END { total = n[NR]; for (i = 1; i <= NR; i++) if (n[i] >= 0.99 * total) { print "<= " b[i] " s"; exit } }')
median_p99=$(jq -s 'map(select(.heartbeat_ack.count > 0) | .heartbeat_ack.p99_ms) | sort | .[length/2|floor]' "$work/window.jsonl")
per_agent=$(echo "scale=1; ($rss_after - $rss_before) / $agents" | bc)

echo
echo "agents connected: $connected of $agents; nodes available with a heartbeat committed in the" \
  "last ${heartbeat%s}+5 s: $fresh; heartbeats acked in the window: $((beats1 - beats0))" \
  "($(echo "scale=0; ($beats1 - $beats0) / ($secs + 6)" | bc)/s)"
echo "enrolment of $agents nodes: ${enroll_s%.*} s"
printf "%-48s %14s %10s\n" "" "measured" "target"
printf "%-48s %14s %10s\n" "gpurentd CPU, cores (agents only, ${window}s)" "$(cores "$server_cpu0" "$server_cpu1")" "< 1"
printf "%-48s %14s %10s\n" "gpurentd RSS per agent, KiB ($rss_before -> $rss_after KiB)" "$per_agent" "< 64"
printf "%-48s %14s %10s\n" "heartbeat sent -> acked after commit, p99 ms (worst 5 s)" "$worst_p99" "< 2000"
printf "%-48s %14s %10s\n" "  the same, median of the 5 s windows' p99s" "$median_p99" ""
printf "%-48s %14s %10s\n" "heartbeat sent_at -> commit, server p99 bucket" "$server_p99" "< 2 s"
printf "%-48s %14s %10s\n" "GET /v1/gpu-models p99 ($(rate_of "$work/wrk-models.txt") req/s)" "$(p99_of "$work/wrk-models.txt")" "< 100ms"
printf "%-48s %14s %10s\n" "GET /v1/offers p99 ($(rate_of "$work/wrk-offers.txt") req/s)" "$(p99_of "$work/wrk-offers.txt")" "< 100ms"
printf "%-48s %14s\n" "  without agents: GET /v1/gpu-models p99 ($(rate_of "$work/wrk-models-alone.txt")/s)" "$(p99_of "$work/wrk-models-alone.txt")"
printf "%-48s %14s\n" "  without agents: GET /v1/offers p99 ($(rate_of "$work/wrk-offers-alone.txt")/s)" "$(p99_of "$work/wrk-offers-alone.txt")"
printf "%-48s %14s\n" "gpurentd CPU with the API clients, cores" "$(cores "$api_cpu0" "$api_cpu1" "$api_secs")"
printf "%-48s %14s\n" "heartbeat ack p99 ms meanwhile (worst 5 s)" "$api_worst_p99"
printf "%-48s %14s\n" "PostgreSQL CPU, cores" "$(cores "$pg_cpu0" "$pg_cpu1")"
printf "%-48s %14s\n" "gpurent-fleetsim CPU, cores" "$(cores "$fleet_cpu0" "$fleet_cpu1")"
echo "wrk errors: $(errors_of "$work/wrk-models.txt") $(errors_of "$work/wrk-offers.txt")"
echo "fleetsim summary: $summary"
echo "($(nproc) cores shared by gpurentd, PostgreSQL, the simulator and wrk; $(date -u +%F))"

#!/usr/bin/env bash
# Bookings per second of 64 concurrent clients against two gpurentd replicas sharing one
# PostgreSQL, next to pgbench running the booking's own transaction with 64 clients on the
# same database: the ratio says how much of the database's capacity for bookings the service
# delivers.
#   bench/booking_storm/run.sh [BUILD_DIR]     (default build/bench)
# Environment: DURATION (s, default 20), CONNECTIONS (64, split over the two replicas),
# NODES (1000: 8-GPU NVSwitch nodes of one model), POOL (db_pool_size per replica, default
# 8), WORKERS (worker_threads per replica, default 4), ORGS (1: customers the clients book
# for, each request for one of them at random), LOG_ONE (1: print the statements of
# one booking from PostgreSQL's log and stop); CREATE_PARALLEL, HEARTBEAT, RAMP (the fleet's
# set-up, enroll_fleet.sh).
# The fleet is made as an operator makes one (enroll_fleet.sh): the demo admin creates the
# nodes through the admin API, gpurent-fleetsim enrols them through replica A's agent
# listener and runs their agents for the whole run, so the nodes are available because
# their agents said hello and stay so because they heartbeat.
# Each client sends POST /v1/rentals with a fresh Idempotency-Key: one H100 for one day,
# starting at a random date of the coming 30 (so the fleet does not fill up: NODES x 8 x 30
# one-GPU days). 201s and 409s are counted apart; the latency percentiles are wrk's, over all
# answers.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/booking_storm
build=${1:-build/bench}
duration=${DURATION:-20}
connections=${CONNECTIONS:-64}
nodes=${NODES:-1000}
pool=${POOL:-8}
workers=${WORKERS:-4}
orgs=${ORGS:-1}
port_a=${PORT_A:-18280}
port_b=${PORT_B:-18281}
agent_port=${AGENT_PORT:-18443}
pg_bin=/usr/lib/postgresql/15/bin

for tool in wrk curl jq bc ssh-keygen "$pg_bin/pgbench" "$pg_bin/psql" "$build/cmd/gpurentd" \
  "$build/cmd/gpurent-fleetsim"; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "booking storm: $tool is missing" >&2; exit 1; }
done

# Each agent is a descriptor in replica A and one in the simulator.
ulimit -n $((nodes * 2 + 4096)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
source "$here/enroll_fleet.sh"

work=$(mktemp -d /tmp/gpurent-storm-XXXXXX)
chmod 755 "$work"
cleanup() {
  stop_fleet
  for pid in ${replica_b:-} ${replica_a:-}; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

common=(--io_threads=2 --worker_threads="$workers" --db_pool_size="$pool" --log_format=json
  --log_level=warn --rate_limit_per_ip=0 --rate_limit_burst_per_ip=0
  --rate_limit_per_credential=0 --rate_limit_burst_per_credential=0)
wait_ready() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "gpurentd on port $1 did not become ready:" >&2
  cat "$work"/gpurentd-*.log >&2
  exit 1
}

# Replica A owns the embedded PostgreSQL (durable: fsync and synchronous commit on), seeds
# the demo data (a site, images, prices, the demo admin) and serves the agents; replica B
# reaches the same cluster through its socket, as a second host would through its URL, and
# serves the API alone.
"$build/cmd/gpurentd" serve --listen="127.0.0.1:$port_a" --data_dir="$work/pg" --demo=true \
  --agent_listen="127.0.0.1:$agent_port" --agent_pki_dir="$work/pki" \
  "${common[@]}" >"$work/gpurentd-a.log" 2>&1 &
replica_a=$!
wait_ready "$port_a"
# postmaster.pid: line 4 the port, line 5 the socket folder.
pg_port=$(sed -n 4p "$work/pg/postmaster.pid")
pg_socket=$(sed -n 5p "$work/pg/postmaster.pid")
url="postgresql://gpurent@/gpurent?host=$pg_socket&port=$pg_port"
psql() { "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 "$url" "$@"; }
"$build/cmd/gpurentd" serve --listen="127.0.0.1:$port_b" --database_url="$url" \
  --agent_listen=off "${common[@]}" >"$work/gpurentd-b.log" 2>&1 &
replica_b=$!
wait_ready "$port_b"

# The fleet: NODES available, healthy 8-GPU HGX H100 nodes at the demo site, created through
# the admin API and brought up by their agents (the demo's own nodes, which have no agents
# here, leave the pool). No ANALYZE: the fleet is left as enrolment
# leaves it, before autovacuum's first pass; the first booking's candidate load brings the
# statistics up to date itself (CandidateStore::keep_statistics).
api_a="http://127.0.0.1:$port_a"
api_b="http://127.0.0.1:$port_b"
admin_login "$api_a"
enroll_fleet "$agent_port" "$nodes" storm
# pgbench's scripts pick a node by number: the fleet's node ids, numbered in creation order.
awk '{print NR "\t" $1}' "$fleet_nodes" >"$work/storm-nodes.tsv"
psql -c "CREATE TABLE storm_nodes (n int PRIMARY KEY, node_id text NOT NULL)" \
  -c "\\copy storm_nodes FROM '$work/storm-nodes.tsv'"

# ORGS customers, each a sign-up (user + org), a session, an SSH key and an API token with
# rentals:write. Every booking holds money on its org's balance row until it commits, so one
# org's bookings queue on that row; several orgs show what the fleet takes when they do not.
tokens=() keys=()
for i in $(seq 1 "$orgs"); do
  email=storm$i@example.com
  password=booking-storm-password
  org_id=$(curl -sf -X POST "$api_a/v1/auth/signup" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"$password\",\"org_name\":\"Booking storm $i\"}" |
    jq -r .org.id)
  # Money for every booking the storm can make (each holds its day): a top-up by the platform
  # admin, POST /v1/admin/orgs/{id}/credit.
  admin_credit "$org_id" 1000000000000000 "booking storm"
  csrf=$(curl -sf -c "$work/cookies" -X POST "$api_a/v1/auth/login" \
    -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"$password\"}" | jq -r .csrf_token)
  session=(-b "$work/cookies" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json')
  rm -f "$work/id_storm" "$work/id_storm.pub"
  ssh-keygen -q -t ed25519 -N '' -C storm -f "$work/id_storm"
  key_id=$(jq -n --arg k "$(cat "$work/id_storm.pub")" '{name: "storm", public_key: $k}' |
    curl -sf "${session[@]}" -X POST "$api_a/v1/ssh-keys" -d @- | jq -r .id)
  token=$(curl -sf "${session[@]}" -X POST "$api_a/v1/api-tokens" \
    -d '{"name":"storm","scopes":["rentals:read","rentals:write"]}' | jq -r .token)
  [ "${token:0:4}" = gpr_ ] || { echo "could not create an API token" >&2; exit 1; }
  tokens+=("$token") keys+=("$key_id")
done
image_id=$(curl -sf -H "Authorization: Bearer $token" "$api_a/v1/images" |
  jq -r '[.items[] | select(.compatible_gpu_models | index("H100-SXM5-80GB"))][0].id')
# The dates the clients book: the next 30 days (UTC; the site's day may differ by one at the
# edges, which only moves a start by a day).
dates=$(for d in $(seq 1 30); do date -u -d "+$d day" +%F; done | paste -sd, -)
echo "fleet: $nodes nodes x 8 H100; image $image_id; key $key_id"

if [ "${LOG_ONE:-0}" = 1 ]; then
  # The agents hold still while every statement is logged (a second or so, far inside the
  # silence limit), so the log holds the booking's statements and not their heartbeats'.
  kill -STOP "$fleet_pid"
  psql -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "SELECT pg_reload_conf()" >/dev/null
  sleep 0.5
  : >"$work/pg/server.log.mark"
  before=$(wc -l <"$work/pg/server.log")
  curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: log-one-$(date +%s%N)" -X POST "$api_a/v1/rentals" \
    -d "{\"gpu_model\":\"H100-SXM5-80GB\",\"gpu_count\":1,\"interconnect\":\"any\",\"start\":\"${dates%%,*}\",\"days\":1,\"image_id\":\"$image_id\",\"ssh_key_ids\":[\"$key_id\"]}"
  echo
  sleep 0.5
  psql -c "ALTER SYSTEM RESET log_min_duration_statement" -c "SELECT pg_reload_conf()" >/dev/null
  kill -CONT "$fleet_pid"
  tail -n +"$((before + 1))" "$work/pg/server.log"
  exit 0
fi

# The storm: two wrk processes (wrk takes one host), half the connections each, at the same
# time. gpurentd's own round-trip counter says what a booking costs it in statements.
round_trips() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk '/^gpurent_db_round_trips_total / {print $2}'
}
rentals_now() { psql -At -c "SELECT count(*) FROM rentals"; }
# CPU seconds both replicas have used (utime + stime from /proc, in clock ticks).
replica_cpu() {
  cat "/proc/$replica_a/stat" "/proc/$replica_b/stat" |
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.2f", s / hz }'
}
# CPU seconds the cluster's processes have used (the postmaster and every backend; a backend
# that exits during the storm takes its time with it, so the pool's long-lived connections
# are what this counts).
pg_cpu() {
  local postmaster
  postmaster=$(head -1 "$work/pg/postmaster.pid")
  # A backend may exit between the listing and the reading: its file is then gone.
  { cat "/proc/$postmaster/stat" $(pgrep -P "$postmaster" | sed 's|.*|/proc/&/stat|' || true) \
    2>/dev/null || true; } |
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.2f", s / hz }'
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# What the cluster spends at rest, on the agents' heartbeats, over 5 s before the storm: the
# storm's own PostgreSQL CPU per booking is stated without it too.
# The replicas' likewise (replica A serves the agents).
rest_start=$(pg_cpu)
rest_replicas=$(replica_cpu)
sleep 5
rest_per_s=$(echo "scale=4; ($(pg_cpu) - $rest_start) / 5" | bc)
rest_replicas_per_s=$(echo "scale=4; ($(replica_cpu) - $rest_replicas) / 5" | bc)
export STORM_DATES="$dates" STORM_IMAGE="$image_id"
STORM_TOKENS=$(IFS=,; echo "${tokens[*]}") STORM_KEYS=$(IFS=,; echo "${keys[*]}")
export STORM_TOKENS STORM_KEYS
half=$((connections / 2))
rt_before=$(($(round_trips "$port_a") + $(round_trips "$port_b")))
rentals_before=$(rentals_now)
cpu_before=$(replica_cpu)
pg_before=$(pg_cpu)
STORM_TAG=a wrk -t1 -c"$half" -d"${duration}s" --latency -s "$here/booking.lua" \
  "http://127.0.0.1:$port_a" >"$work/wrk-a.txt" &
wrk_a=$!
STORM_TAG=b wrk -t1 -c"$((connections - half))" -d"${duration}s" --latency -s "$here/booking.lua" \
  "http://127.0.0.1:$port_b" >"$work/wrk-b.txt" &
wrk_b=$!
wait "$wrk_a" "$wrk_b"
rt_after=$(($(round_trips "$port_a") + $(round_trips "$port_b")))
rentals_after=$(rentals_now)
cpu_after=$(replica_cpu)
pg_after=$(pg_cpu)
grep -h '^STORM' "$work/wrk-a.txt" "$work/wrk-b.txt" >"$work/storm.txt" || {
  echo "wrk printed no result:" >&2
  cat "$work"/wrk-*.txt >&2
  exit 1
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$work/storm.txt"; }
created=$(field created | paste -sd+ - | bc)
conflicts=$(field conflicts | paste -sd+ - | bc)
other=$(field other | paste -sd+ - | bc)
seconds=$(field seconds | sort -n | tail -1)
p50=$(field p50_ms | sort -n | tail -1)
p99=$(field p99_ms | sort -n | tail -1)
bookings=$(echo "scale=1; $created / $seconds" | bc)

# The ceiling: pgbench, 64 clients, the booking's statements (booking.sql) against the same
# database, right after the storm (the replicas idle meanwhile).
ids=$(psql -At -F' ' -c "SELECT t.org_id, t.created_by, t.id FROM api_tokens t LIMIT 1")
read -r org usr tok <<<"$ids"
price=$(psql -At -c "SELECT id FROM prices WHERE gpu_model = 'H100-SXM5-80GB' AND gpu_count = 1
  AND valid_until IS NULL")
"$pg_bin/pgbench" -n -M prepared -c "$connections" -j 2 -T "$duration" -f "$here/booking.sql" \
  -D org="$org" -D usr="$usr" -D tok="$tok" -D key="$key_id" -D img="$image_id" \
  -D price="$price" -D nodes="$nodes" -D model=H100-SXM5-80GB \
  -l --log-prefix="$work/pgbench" "$url" >"$work/pgbench.txt" 2>&1 || {
  cat "$work/pgbench.txt" >&2
  exit 1
}
# The second ceiling: the least a booking must do (minimal.sql), the same clients and time.
"$pg_bin/pgbench" -n -M prepared -c "$connections" -j 2 -T "$duration" -f "$here/minimal.sql" \
  -D org="$org" -D usr="$usr" -D img="$image_id" -D price="$price" -D nodes="$nodes" \
  -D model=H100-SXM5-80GB "$url" >"$work/pgbench-minimal.txt" 2>&1 || {
  cat "$work/pgbench-minimal.txt" >&2
  exit 1
}
minimal_tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/pgbench-minimal.txt")
tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/pgbench.txt")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.txt")
# Per-transaction log: the third column is the latency in microseconds.
cat "$work"/pgbench.* | awk '{print $3}' | sort -n >"$work/pgbench-latencies"
pgb_n=$(wc -l <"$work/pgbench-latencies")
pct() { sed -n "$(((pgb_n * $1 + 99) / 100))p" "$work/pgbench-latencies" | awk '{printf "%.2f", $1 / 1000}'; }

echo
printf "%-44s %12s %9s %9s %9s\n" "" "per second" "p50 ms" "p99 ms" "failed"
printf "%-44s %12s %9s %9s %9s\n" "POST /v1/rentals, 201 (two replicas)" "$bookings" "$p50" "$p99" "$other"
printf "%-44s %12s\n" "POST /v1/rentals, 409 insufficient_capacity" "$(echo "scale=1; $conflicts / $seconds" | bc)"
printf "%-44s %12.1f %9s %9s %9s\n" "pgbench, the booking's statements" "$tps" "$(pct 50)" "$(pct 99)" "${failed:-0}"
printf "%-44s %12.1f\n" "pgbench, a minimal booking (minimal.sql)" "$minimal_tps"
echo "ratio bookings/s / pgbench tps: $(echo "scale=3; $bookings / $tps" | bc);" \
  "to the minimal booking: $(echo "scale=3; $bookings / $minimal_tps" | bc)"
echo "rentals written by the storm: $((rentals_after - rentals_before)) (201s counted: $created);" \
  "gpurentd database round trips per booking: $(echo "scale=1; ($rt_after - $rt_before) / ($created + $conflicts + $other)" | bc);" \
  "gpurentd CPU per booking: $(echo "scale=2; 1000 * ($cpu_after - $cpu_before) / ($created + $conflicts + $other)" | bc) ms," \
  "$(echo "scale=2; 1000 * ($cpu_after - $cpu_before - $rest_replicas_per_s * $seconds) / ($created + $conflicts + $other)" | bc) ms" \
  "less the agents' load at rest ($rest_replicas_per_s CPU s per s);" \
  "PostgreSQL CPU per booking: $(echo "scale=2; 1000 * ($pg_after - $pg_before) / ($created + $conflicts + $other)" | bc) ms," \
  "$(echo "scale=2; 1000 * ($pg_after - $pg_before - $rest_per_s * $seconds) / ($created + $conflicts + $other)" | bc) ms" \
  "less the agents' load at rest ($rest_per_s CPU s per s)"
echo "($connections connections over two replicas for ${duration}s, booking for $orgs org(s); $nodes nodes x 8 GPUs," \
  "their agents heartbeating to replica A every ${HEARTBEAT:-10s};" \
  "db_pool_size=$pool, worker_threads=$workers each; $(nproc) cores shared by wrk, both replicas," \
  "PostgreSQL and pgbench; load average before the storm $load_before)"

# Answers other than 201 and 409, by status, as the replicas counted them, and what they
# logged at warning level or above meanwhile.
if [ "$other" != 0 ]; then
  echo "answers other than 201 or 409 to POST /v1/rentals, by replica and status:"
  for port in "$port_a" "$port_b"; do
    curl -sf "http://127.0.0.1:$port/metrics" |
      grep '^gpurent_http_requests_total{route="/v1/rentals",method="POST"' |
      grep -v 'status="20[01]"\|status="409"' | sed "s/^/  :$port /" || true
  done
  grep -h '"level":"\(warning\|error\|critical\)"' "$work"/gpurentd-*.log | tail -5 | cut -c1-400
fi

# Whatever the storm and pgbench wrote, no GPU may be held twice at once: pairs of
# allocations of one GPU whose periods overlap.
overlaps=$(psql -At -c "SELECT count(*) FROM allocations a JOIN allocations b
  ON a.gpu_id = b.gpu_id AND a.ctid < b.ctid AND a.period && b.period")
echo "overlapping allocations after the storm: $overlaps"

# The admin's lists over the whole fleet and everything booked, as the panel and an
# operator's scripts walk them: every page of 500, through replica B (not the one that
# enrolled the fleet), each page's time as curl saw it.
admin_login "$api_b"
walk_list() {
  local path=$1 cursor='' pages=0 items=0 total=0 slowest=0 out t body
  while :; do
    out=$(curl -sf -K "$work/admin.curl" -w '\n%{time_total}' \
      "$api_b$path?limit=500${cursor:+&cursor=$cursor}") || { echo "  $path: failed"; return; }
    t=${out##*$'\n'} body=${out%$'\n'*}
    pages=$((pages + 1)) items=$((items + $(jq '.items | length' <<<"$body")))
    total=$(echo "$total + $t" | bc -l)
    slowest=$(echo "if ($t > $slowest) $t else $slowest" | bc -l)
    cursor=$(jq -r '.next_cursor // empty' <<<"$body")
    [ -n "$cursor" ] || break
  done
  printf '  %s: %d items in %d pages, %.3f s in all, slowest page %.0f ms\n' \
    "$path" "$items" "$pages" "$total" "$(echo "$slowest * 1000" | bc -l)"
}
echo "admin lists, limit=500, every page:"
walk_list /v1/admin/nodes
walk_list /v1/admin/rentals
[ "$overlaps" = 0 ]

#!/usr/bin/env bash
# Bookings per second of 64 concurrent clients against two gpurentd replicas sharing one
# PostgreSQL, next to pgbench running the booking's own transaction with 64 clients on the
# same database: the ratio says how much of the database's capacity for bookings the service
# delivers.
#   bench/booking_storm/run.sh [BUILD_DIR]     (default build/bench)
# Environment: DURATION (s, default 20), CONNECTIONS (64, split over the two replicas),
# NODES (1000: 8-GPU NVSwitch nodes of one model, seeded with SQL), POOL (db_pool_size per
# replica, default 8), WORKERS (worker_threads per replica, default 4), LOG_ONE (1: print the
# statements of one booking from PostgreSQL's log and stop).
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
port_a=${PORT_A:-18280}
port_b=${PORT_B:-18281}
pg_bin=/usr/lib/postgresql/15/bin

for tool in wrk curl jq ssh-keygen "$pg_bin/pgbench" "$pg_bin/psql"; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "booking storm: $tool is missing" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gpurent-storm-XXXXXX)
chmod 755 "$work"
cleanup() {
  for pid in ${replica_b:-} ${replica_a:-}; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

common=(--io_threads=2 --worker_threads="$workers" --db_pool_size="$pool" --log_format=json
  --log_level=warn --rate_limit_per_ip=0 --rate_limit_burst_per_ip=0
  --rate_limit_per_credential=0 --rate_limit_burst_per_credential=0 --agent_listen=off)
wait_ready() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "gpurentd on port $1 did not become ready:" >&2
  cat "$work"/gpurentd-*.log >&2
  exit 1
}

# Replica A owns the embedded PostgreSQL (durable: fsync and synchronous commit on) and
# seeds the demo data (a site, images, prices); replica B reaches the same cluster through
# its socket, as a second host would through its URL.
"$build/cmd/gpurentd" serve --listen="127.0.0.1:$port_a" --data_dir="$work/pg" --demo=true \
  "${common[@]}" >"$work/gpurentd-a.log" 2>&1 &
replica_a=$!
wait_ready "$port_a"
# postmaster.pid: line 4 the port, line 5 the socket folder.
pg_port=$(sed -n 4p "$work/pg/postmaster.pid")
pg_socket=$(sed -n 5p "$work/pg/postmaster.pid")
url="postgresql://gpurent@/gpurent?host=$pg_socket&port=$pg_port"
psql() { "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 "$url" "$@"; }
"$build/cmd/gpurentd" serve --listen="127.0.0.1:$port_b" --database_url="$url" \
  "${common[@]}" >"$work/gpurentd-b.log" 2>&1 &
replica_b=$!
wait_ready "$port_b"

# The fleet: NODES available, healthy 8-GPU HGX H100 nodes at the demo site, with their GPUs
# and NVSwitch link matrices as NodeStore writes them.
psql -v nodes="$nodes" -f "$here/seed_fleet.sql"

# A customer: sign-up (user + org), a session, an SSH key and an API token with rentals:write.
api_a="http://127.0.0.1:$port_a"
email=storm@example.com
password=booking-storm-password
org_id=$(curl -sf -X POST "$api_a/v1/auth/signup" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\",\"org_name\":\"Booking storm\"}" |
  jq -r .org.id)
# Money for every booking the storm can make (each holds its day): a top-up on the ledger,
# posted as an operator would, one balanced transaction.
psql -v org="$org_id" <<'SQL'
WITH t AS (INSERT INTO ledger_transactions (idempotency_key, kind, org_id, description, currency, at)
  VALUES ('storm-funding', 'top_up', :'org', 'Top-up: booking storm', 'RUB', now()) RETURNING id)
INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)
  SELECT id, 'payments', NULL, -1000000000000000 FROM t
  UNION ALL SELECT id, 'available', :'org', 1000000000000000 FROM t;
SQL
csrf=$(curl -sf -c "$work/cookies" -X POST "$api_a/v1/auth/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\"}" | jq -r .csrf_token)
session=(-b "$work/cookies" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json')
ssh-keygen -q -t ed25519 -N '' -C storm -f "$work/id_storm"
key_id=$(jq -n --arg k "$(cat "$work/id_storm.pub")" '{name: "storm", public_key: $k}' |
  curl -sf "${session[@]}" -X POST "$api_a/v1/ssh-keys" -d @- | jq -r .id)
token=$(curl -sf "${session[@]}" -X POST "$api_a/v1/api-tokens" \
  -d '{"name":"storm","scopes":["rentals:read","rentals:write"]}' | jq -r .token)
[ "${token:0:4}" = gpr_ ] || { echo "could not create an API token" >&2; exit 1; }
image_id=$(curl -sf -H "Authorization: Bearer $token" "$api_a/v1/images" |
  jq -r '[.items[] | select(.compatible_gpu_models | index("H100-SXM5-80GB"))][0].id')
# The dates the clients book: the next 30 days (UTC; the site's day may differ by one at the
# edges, which only moves a start by a day).
dates=$(for d in $(seq 1 30); do date -u -d "+$d day" +%F; done | paste -sd, -)
echo "fleet: $nodes nodes x 8 H100; image $image_id; key $key_id"

if [ "${LOG_ONE:-0}" = 1 ]; then
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
export STORM_DATES="$dates" STORM_TOKEN="$token" STORM_IMAGE="$image_id" STORM_KEY="$key_id"
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
  "gpurentd CPU per booking: $(echo "scale=2; 1000 * ($cpu_after - $cpu_before) / ($created + $conflicts + $other)" | bc) ms;" \
  "PostgreSQL CPU per booking: $(echo "scale=2; 1000 * ($pg_after - $pg_before) / ($created + $conflicts + $other)" | bc) ms"
echo "($connections connections over two replicas for ${duration}s; $nodes nodes x 8 GPUs;" \
  "db_pool_size=$pool, worker_threads=$workers each; $(nproc) cores shared by wrk, both replicas," \
  "PostgreSQL and pgbench; load average before the storm $load_before)"

#!/usr/bin/env bash
# The daily capture benchmark's comparison (bench/capture_benchmark.cpp): pgbench running the
# statements of one captured rental-day (capture_day.sql) for every rental of the same seed
# (seed.sql), a batch per transaction as RentalCharges::capture_due works it, with 1 and then 2
# clients, each on a fresh copy of the seed; prints days/s.
#   bench/capture/run.sh
# Environment: ORGS (10000), RENTALS_PER_ORG (10), BATCH (500, capture_due's default: days per
# transaction), CLIENTS ("1 2"), PORT (5432, on a unix socket in the temporary folder).
# The cluster is started as EmbeddedPostgres starts the benchmark's (durable: fsync and
# synchronous commit on, PostgreSQL 15's other settings at their defaults), as the postgres
# user when run as root. One pgbench transaction: BEGIN; capture_day.sql BATCH times (the first
# claims the batch); COMMIT. After each run check.sql must find nothing wrong.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/capture
orgs=${ORGS:-10000}
per_org=${RENTALS_PER_ORG:-10}
batch=${BATCH:-500}
clients_list=${CLIENTS:-1 2}
port=${PORT:-5432}
now='2026-11-15 12:00:00+00'
pg_bin=/usr/lib/postgresql/15/bin
rentals=$((orgs * per_org))

for c in $clients_list; do
  if ((rentals % (batch * c) != 0)); then
    echo "capture: $rentals rentals do not split into batches of $batch over $c clients" >&2
    exit 1
  fi
done

work=$(mktemp -d /tmp/gpurent-capture-XXXXXX)
chmod 755 "$work"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  as_pg=(runuser -u postgres --)
  mkdir "$work/pg"
  chown postgres "$work/pg"
fi
cleanup() {
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"${as_pg[@]}" "$pg_bin/initdb" -D "$work/pg" -U gpurent -A trust -E UTF8 --no-locale \
  --no-instructions >/dev/null
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -w -t 60 \
  -o "-k $work/pg -c listen_addresses='' -p $port -c max_connections=200 -c fsync=on" \
  start >/dev/null
url() { echo "postgresql://gpurent@/$1?host=$work/pg&port=$port"; }
export PGOPTIONS='-c client_min_messages=warning'
psql() { "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

# The seed once, as a template: the schema of migrations/, then seed.sql.
seed_start=$(date +%s)
psql "$(url postgres)" -c "CREATE DATABASE capture_seed"
for migration in migrations/[0-9]*.sql; do
  psql -1 "$(url capture_seed)" -f "$migration" >/dev/null
done
psql "$(url capture_seed)" -c "SET capture.orgs = $orgs" \
  -c "SET capture.rentals_per_org = $per_org" -c "SET capture.now = '$now'" \
  -f "$here/seed.sql" >/dev/null
psql "$(url capture_seed)" -c "VACUUM ANALYZE"
echo "seed: $orgs orgs, $rentals running rentals with day 1 due at $now" \
  "($(($(date +%s) - seed_start)) s, $(psql -At "$(url capture_seed)" \
    -c "SELECT pg_size_pretty(pg_database_size(current_database()))"))"

# One batch: BATCH rental-days in a transaction, one command a line. The parts of
# capture_day.sql that run only on a batch's first day are left out of the other days (they
# would be skipped), which keeps pgbench's parsing of the script short. pgbench 15 writes past
# its array of commands when a command with \gset fills the array's last slot (ParseScript
# skips growing it after merging the \gset): such a command moves on behind a `\set pad 0`.
every_day=$(sed -n '/^-- Every day:/,$p' "$here/capture_day.sql" | grep -v -e '^--' -e '^$')
{
  echo '\set i 0'
  echo 'BEGIN;'
  grep -v -e '^--' -e '^$' "$here/capture_day.sql"
  for _ in $(seq 2 "$batch"); do echo "$every_day"; done
  echo 'COMMIT;'
} | awk '/\\gset/ && n % 128 == 127 { print "\\set pad 0"; n++ } { print; n++ }' >"$work/batch.sql"

results=()
for clients in $clients_list; do
  psql "$(url postgres)" -c "DROP DATABASE IF EXISTS capture WITH (FORCE)" \
    -c "CREATE DATABASE capture TEMPLATE capture_seed STRATEGY FILE_COPY"
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  # Simple protocol: the script EXECUTEs statements it prepared (capture_day.sql); the values
  # of variables go into the text as they are.
  "$pg_bin/pgbench" -n -M simple -c "$clients" -j "$clients" -t $((rentals / batch / clients)) \
    -f "$work/batch.sql" -D now="$now" -D batch="$batch" -D prepared=0 \
    "$(url capture)" >"$work/pgbench-$clients.txt" 2>&1 || {
    cat "$work/pgbench-$clients.txt" >&2
    exit 1
  }
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/pgbench-$clients.txt")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench-$clients.txt")
  wrong=$(psql -At -F': ' "$(url capture)" -f "$here/check.sql")
  if [ -n "$wrong" ] || [ "${failed:-0}" != 0 ]; then
    echo "capture with $clients clients went wrong (${failed:-0} failed transactions):" >&2
    echo "$wrong" >&2
    exit 1
  fi
  sleep 1.5 # pg_stat_database hears of the backends' deadlocks within a second of their exit
  deadlocks=$(psql -At "$(url capture)" \
    -c "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
  days_per_s=$(echo "$tps * $batch" | bc)
  results+=("$(printf "%-8s %10.0f %10.1f %10s   %s" "$clients" "$days_per_s" \
    "$(echo "$rentals / $days_per_s" | bc -l)" "$deadlocks" "$load")")
done

echo
echo "pgbench, capture_day.sql, $batch days per transaction, $rentals days per run:"
printf "%-8s %10s %10s %10s   %s\n" clients "days/s" "seconds" deadlocks "load average before"
printf "%s\n" "${results[@]}"
echo "(days/s: pgbench's tps without its connection time, x $batch; seconds: $rentals days at" \
  "that rate; $(nproc) cores shared by pgbench and PostgreSQL)"

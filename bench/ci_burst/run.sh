#!/usr/bin/env bash
# A CI burst: JOBS pipeline jobs start at the same moment, each `gpurent rent --wait` for one
# H100 for one day from now, as docs/ci.md's jobs do, against one gpurentd whose fleet is
# NODES 8-GPU H100 nodes run by simulated agents (gpurent-fleetsim; provisioning takes its
# default --provision-delay, 2 s, as the demo's agents take). What the pipelines see: how many
# jobs got an active rental, how many a typed refusal (the CLI's exit 4, no capacity, or 5, no
# funds), how many anything else, and the time from the burst's start to each `active`; what
# the server did meanwhile: its 5xx answers (/metrics, before and after) and its answers by
# route.
#   bench/ci_burst/run.sh [BUILD_DIR]     (default build/bench: a Release tree with gpurentd,
#                                          gpurent-fleetsim and the gpurent CLI)
# Environment: JOBS (200), NODES (32: 256 GPUs, room for every job; 16 leaves 128 GPUs, and
# the rest should be refused with exit 4), TIMEOUT (each job's --timeout, 10m), HTTP_PORT,
# AGENT_PORT, KEEP (1: keep the work folder), and enroll_fleet.sh's (CREATE_PARALLEL,
# HEARTBEAT, RAMP, TASK_THREADS: here one per node, at most 64).
# Exits non-zero when a job ended otherwise than active or a typed refusal, when the server
# answered any 5xx (the CLI retries those, so a job may not show it), or when two
# allocations of one GPU overlap.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/bench}
jobs=${JOBS:-200}
nodes=${NODES:-32}
timeout=${TIMEOUT:-10m}
http_port=${HTTP_PORT:-18480}
agent_port=${AGENT_PORT:-18543}
pg_bin=/usr/lib/postgresql/15/bin
cli=$build/cli/gpurent

for tool in curl jq bc ssh-keygen "$pg_bin/psql" "$build/cmd/gpurentd" "$build/cmd/gpurent-fleetsim" \
  "$cli"; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || { echo "CI burst: $tool is missing" >&2; exit 1; }
done
# Each agent is a descriptor in gpurentd and one in the simulator; each job one more.
ulimit -n $((nodes * 2 + jobs * 2 + 4096)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
source bench/booking_storm/enroll_fleet.sh

work=$(mktemp -d /tmp/gpurent-ci-burst-XXXXXX)
chmod 755 "$work"
cleanup() {
  # Jobs still waiting (the script stopped early) go first: they would only retry a gone server.
  for pid in ${job_pids[@]+"${job_pids[@]}"}; do
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  done
  stop_fleet
  [ -n "${server_pid:-}" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# One replica on an embedded PostgreSQL (durable, as deployed), the demo data (a site, images,
# prices, the demo admin), the agent listener; rate limits off, as every job shares one
# token and one address.
"$build/cmd/gpurentd" serve --listen="127.0.0.1:$http_port" --data_dir="$work/pg" --demo=true \
  --agent_listen="127.0.0.1:$agent_port" --agent_pki_dir="$work/pki" --log_format=json \
  --log_level=warn --rate_limit_per_ip=0 --rate_limit_burst_per_ip=0 \
  --rate_limit_per_credential=0 --rate_limit_burst_per_credential=0 >"$work/gpurentd.log" 2>&1 &
server_pid=$!
api="http://127.0.0.1:$http_port"
for _ in $(seq 1 600); do
  curl -sf "$api/readyz" >/dev/null && break
  sleep 0.1
done
curl -sf "$api/readyz" >/dev/null || { cat "$work/gpurentd.log" >&2; exit 1; }
pg_port=$(sed -n 4p "$work/pg/postmaster.pid")
pg_socket=$(sed -n 5p "$work/pg/postmaster.pid")
url="postgresql://gpurent@/gpurent?host=$pg_socket&port=$pg_port"
psql() { "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 "$url" "$@"; }

# The fleet, made and brought up through the public path (enroll_fleet.sh). A node's agent
# runs its tasks one after another, and every node has its own agent; the simulator runs all
# its agents' tasks on a few shared threads (4 by default), which would make 32 nodes
# provision like 4. One thread per node (the simulator allows 64) keeps the nodes apart.
export TASK_THREADS=${TASK_THREADS:-$((nodes < 64 ? nodes : 64))}
admin_login "$api"
enroll_fleet "$agent_port" "$nodes" ci

# The pipelines' customer: sign-up, a session, an SSH key, an API token with the two scopes
# a CI job needs, and money for far more than the burst (a top-up by the platform admin).
email=ci@example.com
password=ci-burst-password
org_id=$(curl -sf -X POST "$api/v1/auth/signup" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\",\"org_name\":\"CI burst\"}" | jq -r .org.id)
admin_credit "$org_id" 1000000000000 "CI burst"
csrf=$(curl -sf -c "$work/cookies" -X POST "$api/v1/auth/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\"}" | jq -r .csrf_token)
session=(-b "$work/cookies" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json')
ssh-keygen -q -t ed25519 -N '' -C ci -f "$work/id_ci"
key_id=$(jq -n --arg k "$(cat "$work/id_ci.pub")" '{name: "ci", public_key: $k}' |
  curl -sf "${session[@]}" -X POST "$api/v1/ssh-keys" -d @- | jq -r .id)
token=$(curl -sf "${session[@]}" -X POST "$api/v1/api-tokens" \
  -d '{"name":"ci","scopes":["rentals:read","rentals:write"]}' | jq -r .token)
[ "${token:0:4}" = gpr_ ] || { echo "could not create an API token" >&2; exit 1; }
image_id=$(curl -sf -H "Authorization: Bearer $token" "$api/v1/images" |
  jq -r '[.items[] | select(.compatible_gpu_models | index("H100-SXM5-80GB"))][0].id')

# The server's answers so far, by route, method and status; 5xx summed.
answers() { curl -sf "$api/metrics" | grep '^gpurent_http_requests_total{' | LC_ALL=C sort; }
server_errors() { awk '/status="5/ {s += $NF} END {print s + 0}' "$1"; }
answers >"$work/answers-before"

# The burst: every job is its own process with the CLI's configuration in its environment
# (no config file), as a pipeline's job is. Each waits for the same instant, so they start
# together, and leaves its exit code and end time, its stdout (the rental as JSON) and its
# stderr (progress, refusals, retries).
mkdir "$work/jobs"
echo "starting $jobs jobs at once: gpurent rent --gpu-count 1 --days 1 --start now --wait" \
  "--timeout $timeout"
# The moment: far enough ahead for every job's process to be up and waiting.
start_at=$(echo "$(date +%s.%N) + 2 + $jobs / 100" | bc)
job_pids=()
for i in $(seq 1 "$jobs"); do
  (
    pause=$(echo "$start_at - $(date +%s.%N)" | bc)
    case $pause in -*) ;; *) sleep "$pause" ;; esac
    begun=$(date +%s.%N)
    rc=0
    GPURENT_URL="$api" GPURENT_TOKEN="$token" GPURENT_CONFIG="$work/no-config" "$cli" --json rent \
      --gpu-model H100-SXM5-80GB --gpu-count 1 --days 1 --start now --image "$image_id" \
      --ssh-key "$key_id" --name "ci-$i" --wait --timeout "$timeout" --id-file "$work/jobs/$i.id" \
      >"$work/jobs/$i.out" 2>"$work/jobs/$i.err" || rc=$?
    echo "$rc $begun $(date +%s.%N)" >"$work/jobs/$i.rc"
  ) &
  job_pids+=($!)
done
wait "${job_pids[@]}" || true
job_pids=()
answers >"$work/answers-after"

# Tally: active = exit 0 with the rental active; typed refusal = exit 4 or 5; else anything.
active=0 refused=0 other=0
: >"$work/to-active"
for i in $(seq 1 "$jobs"); do
  read -r rc begun ended <"$work/jobs/$i.rc"
  state=$(jq -r '.state // empty' "$work/jobs/$i.out" 2>/dev/null || true)
  if [ "$rc" = 0 ] && [ "$state" = active ]; then
    active=$((active + 1))
    echo "$ended - $start_at" | bc >>"$work/to-active"
  elif [ "$rc" = 4 ] || [ "$rc" = 5 ]; then
    refused=$((refused + 1))
  else
    other=$((other + 1))
    echo "job $i: exit $rc, state ${state:-none}, $(echo "$ended - $begun" | bc) s:" \
      "$(tail -3 "$work/jobs/$i.err" | paste -sd'|' -)" >>"$work/others"
  fi
done
sort -n "$work/to-active" -o "$work/to-active"
pct() {  # the p-th percentile of the sorted times, nearest rank
  local n
  n=$(wc -l <"$work/to-active")
  [ "$n" -gt 0 ] || { echo -; return; }
  sed -n "$(((n * $1 + 99) / 100))p" "$work/to-active" | awk '{printf "%.1f", $1}'
}
codes=$(cut -d' ' -f1 "$work"/jobs/*.rc | sort -n | uniq -c | awk '{printf "%s exit %s x%s", sep, $2, $1; sep = ","}')
errors_before=$(server_errors "$work/answers-before")
errors_after=$(server_errors "$work/answers-after")
server_5xx=$((errors_after - errors_before))
overlaps=$(psql -At -c "SELECT count(*) FROM allocations a JOIN allocations b
  ON a.gpu_id = b.gpu_id AND a.ctid < b.ctid AND a.period && b.period")
# Where an active rental's time went, from its events: the burst's start -> booked (the
# POST's commit), booked -> provisioning (the lifecycle worker starting it) and provisioning
# -> active (the agent's tasks, and their reports).
steps=$(psql -At -F' ' -c "SELECT count(*),
    round(percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM c) - $start_at), 1),
    round(max(extract(epoch FROM c) - $start_at), 1),
    round(extract(epoch FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY p - c))::numeric, 1),
    round(extract(epoch FROM max(p - c))::numeric, 1),
    round(extract(epoch FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY a - p))::numeric, 1),
    round(extract(epoch FROM max(a - p))::numeric, 1)
  FROM (SELECT r.created_at AS c, min(e.at) FILTER (WHERE e.to_state = 'provisioning') AS p,
      min(e.at) FILTER (WHERE e.to_state = 'active') AS a
    FROM rentals r JOIN rental_events e ON e.rental_id = r.id WHERE r.org_id = '$org_id'
    GROUP BY r.id, r.created_at) x WHERE a IS NOT NULL AND p IS NOT NULL")
rentals=$(psql -At -F' ' -c "SELECT state, count(*) FROM rentals WHERE org_id = '$org_id'
  GROUP BY state ORDER BY state" | awk '{printf "%s%s %s", sep, $1, $2; sep = ", "}')

echo
echo "jobs: $jobs; active rental: $active; typed refusal (exit 4 no capacity, 5 no funds):" \
  "$refused; anything else: $other   ($codes)"
first=$(head -1 "$work/to-active" | awk '{printf "%.1f", $1}')
echo "time from the burst's start to active, s: first ${first:--}, p50 $(pct 50), p99 $(pct 99)," \
  "max $(pct 100)"
read -r n_steps made_p50 made_max booked_p50 booked_max prov_p50 prov_max <<<"$steps"
echo "  the server's events ($n_steps rentals), p50/max s: start -> booked ${made_p50:-}/${made_max:-};" \
  "booked -> provisioning ${booked_p50:-}/${booked_max:-}; provisioning -> active ${prov_p50:-}/${prov_max:-}"
echo "server 5xx answers during the burst: $server_5xx"
echo "server answers during the burst, by route:"
LC_ALL=C join -v2 "$work/answers-before" "$work/answers-after" | sed 's/^gpurent_http_requests_total//' |
  awk '{print "  " $0}' || true
LC_ALL=C join "$work/answers-before" "$work/answers-after" |
  awk '$3 != $2 {sub(/^gpurent_http_requests_total/, "", $1); print "  " $1 " " $3 - $2}' || true
echo "the org's rentals by state: $rentals"
echo "gpurentd log lines at error level: $(grep -c '"level":"error"' "$work/gpurentd.log" || true)"
echo "overlapping allocations after the burst: $overlaps"
echo "($nodes nodes x 8 H100 = $((nodes * 8)) GPUs; $jobs jobs; $(nproc) cores shared by the jobs," \
  "gpurentd, PostgreSQL and the simulator; $(date -u +%F))"
if [ -s "$work/others" ]; then
  echo "jobs that ended otherwise (first 10):"
  head -10 "$work/others" | sed 's/^/  /'
fi
[ "$other" = 0 ] && [ "$server_5xx" = 0 ] && [ "$overlaps" = 0 ]

# A benchmark's fleet, made the way an operator makes one: the demo admin logs in, creates
# the nodes through POST /v1/admin/nodes (several requests at a time), gpurent-fleetsim
# enrols every node with its token through the agent listener and then runs the nodes'
# agents in the background. An agent's hello makes its node available and its heartbeats
# keep it so (the silence limit fails a node whose agent goes quiet), so the simulator runs
# until the caller stops it.
# Sourced (bash) by bench/booking_storm/run.sh and bench/ci_burst/run.sh once gpurentd is
# ready (started with descriptors enough for its agents: `ulimit -n`). They set `build` (the
# tree with cmd/gpurent-fleetsim), `work` (the work folder:
# gpurentd's data folder is work/pg, so the demo admin's password is in
# work/demo-admin-password, and its agent PKI is work/pki) and a `psql` function on the
# cluster, then call:
#   admin_login API_URL          the demo admin's session (a cookie and its CSRF token in a
#                                curl config, work/admin.curl), for the calls below
#   admin_credit ORG_ID AMOUNT_MINOR REASON
#                                a top-up in the platform's currency, as an operator posts one
#   enroll_fleet AGENT_PORT NODES PREFIX
#                                NODES available, healthy 8-GPU H100 nodes named PREFIX-1…
#                                (8 NVSwitch-connected GPUs, as NodeStore declares the model);
#                                prints how long each step took. Leaves fleet_pid (the
#                                simulator) and fleet_nodes (its `node_id token` file).
#   stop_fleet                   the simulator's summary line, then it exits (the caller's
#                                cleanup calls this before stopping gpurentd)
# gpurentd must answer the admin without rate limits (--rate_limit_per_credential=0 and the
# rest): the creations come faster than the default allowance of one session.
# Environment: CREATE_PARALLEL (8: node creations at a time), HEARTBEAT (10s), RAMP (s over
# which the agents connect; default NODES/100), TASK_THREADS (the simulator's threads for
# all its agents' tasks; its default, 4), BOOKABLE_WAIT (s, 600).

admin_login() {
  admin_api=$1
  local password csrf
  password=$(cat "$work/demo-admin-password") ||
    { echo "no demo admin password beside the data folder" >&2; exit 1; }
  csrf=$(jq -n --arg p "$password" '{email: "admin@gpurent.local", password: $p}' |
    curl -sf -c "$work/admin-cookies" -X POST "$admin_api/v1/auth/login" \
      -H 'Content-Type: application/json' -d @- | jq -r .csrf_token)
  [ -n "$csrf" ] && [ "$csrf" != null ] || { echo "the demo admin could not log in" >&2; exit 1; }
  # A curl config rather than an array: the parallel node creations below run in child shells.
  printf 'cookie = "%s"\nheader = "X-CSRF-Token: %s"\nheader = "Content-Type: application/json"\n' \
    "$work/admin-cookies" "$csrf" >"$work/admin.curl"
}

admin_credit() {
  local currency
  currency=$(curl -sf -K "$work/admin.curl" "$admin_api/v1/admin/orgs/$1/balance" |
    jq -r .available.currency)
  jq -n --arg c "$currency" --argjson a "$2" --arg r "$3" \
    '{amount: {amount_minor: $a, currency: $c}, reason: $r}' |
    curl -sf -K "$work/admin.curl" -X POST "$admin_api/v1/admin/orgs/$1/credit" -d @- >/dev/null ||
    { echo "POST /v1/admin/orgs/$1/credit failed" >&2; exit 1; }
}

# One xargs batch of node numbers: a POST each, `node_id token` lines into a file of the
# batch's own (parallel batches never share a file). Exit 255 stops xargs at the first
# refusal.
fleet_create_batch() {
  local i answer
  for i; do
    answer=$(curl -s -K "$FLEET_CURL" -w '\n%{http_code}' -X POST "$FLEET_API/v1/admin/nodes" \
      -d "{\"site_id\":\"$FLEET_SITE\",\"hostname\":\"$FLEET_PREFIX-$i\",\"gpu_model\":\"H100-SXM5-80GB\",\"gpu_count\":8}")
    if [ "${answer##*$'\n'}" != 201 ]; then
      echo "POST /v1/admin/nodes for $FLEET_PREFIX-$i answered ${answer##*$'\n'}: ${answer%$'\n'*}" >&2
      exit 255
    fi
    jq -r '"\(.node.id) \(.enrollment_token)"' <<<"${answer%$'\n'*}"
  done >"$FLEET_OUT/$1"
}
export -f fleet_create_batch

enroll_fleet() {
  local agent_port=$1 count=$2 prefix=$3
  local parallel=${CREATE_PARALLEL:-8} heartbeat=${HEARTBEAT:-10s} ramp=${RAMP:-$(($2 / 100))}
  local t0 t1 t2 t3 site demo id bookable
  local fleetsim=("$build/cmd/gpurent-fleetsim" --server "https://127.0.0.1:$agent_port"
    --ca "$work/pki/ca.crt" --state-dir "$work/fleet")

  # The demo's own nodes are available with no agent behind them: a rental that starts on
  # one would never provision. They leave the pool (maintenance), so the fleet is exactly
  # the simulated one.
  demo=$(curl -sf -K "$work/admin.curl" "$admin_api/v1/admin/nodes?state=available&limit=500" |
    jq -r '.items[].id')
  for id in $demo; do
    curl -sf -K "$work/admin.curl" -X POST "$admin_api/v1/admin/nodes/$id/maintenance" \
      -d '{"reason":"benchmark: no agent runs this demo node"}' >/dev/null ||
      { echo "could not take demo node $id out of the pool" >&2; exit 1; }
  done
  site=$(curl -sf -K "$work/admin.curl" "$admin_api/v1/admin/sites" | jq -r '.items[0].id')

  echo "creating $count nodes through POST /v1/admin/nodes, $parallel at a time" \
    "($(echo "$demo" | grep -c . || true) demo nodes put in maintenance)"
  mkdir -p "$work/created"
  t0=$(date +%s.%N)
  seq 1 "$count" |
    FLEET_CURL="$work/admin.curl" FLEET_API="$admin_api" FLEET_SITE="$site" FLEET_PREFIX="$prefix" \
      FLEET_OUT="$work/created" xargs -P "$parallel" -n 50 bash -c 'fleet_create_batch "$@"' _ ||
    { echo "creating the nodes failed" >&2; exit 1; }
  fleet_nodes=$work/fleet-nodes.txt
  cat "$work"/created/* >"$fleet_nodes"
  [ "$(wc -l <"$fleet_nodes")" = "$count" ] || { echo "not every node was created" >&2; exit 1; }
  t1=$(date +%s.%N)

  "${fleetsim[@]}" --enroll-from "$fleet_nodes" --enroll-only --enroll-parallel 16 \
    2>"$work/enroll.log" || { tail -5 "$work/enroll.log" >&2; exit 1; }
  t2=$(date +%s.%N)

  "${fleetsim[@]}" --heartbeat "$heartbeat" --ramp "${ramp}s" --status-interval 5s \
    --task-threads "${TASK_THREADS:-4}" 2>"$work/fleetsim.log" &
  fleet_pid=$!
  # Bookable: available (the agent's hello) and healthy (its first heartbeat).
  local deadline=$(($(date +%s) + ${BOOKABLE_WAIT:-600}))
  while :; do
    bookable=$(psql -At -c "SELECT count(*) FROM nodes WHERE hostname LIKE '$prefix-%'
      AND state = 'available' AND health = 'ok'")
    [ "$bookable" = "$count" ] && break
    kill -0 "$fleet_pid" 2>/dev/null || { tail -5 "$work/fleetsim.log" >&2; exit 1; }
    [ "$(date +%s)" -lt "$deadline" ] || {
      echo "only $bookable of $count nodes available and healthy:" >&2
      psql -c "SELECT state, health, count(*) FROM nodes GROUP BY 1, 2" >&2
      grep '"connected"' "$work/fleetsim.log" | tail -2 >&2
      exit 1
    }
    sleep 1
  done
  t3=$(date +%s.%N)
  printf 'fleet: %d nodes created in %.1f s, enrolled in %.1f s, all available and healthy' \
    "$count" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
  printf ' %.1f s after the agents started (ramp %d s, heartbeat %s)\n' \
    "$(echo "$t3 - $t2" | bc)" "$ramp" "$heartbeat"
}

stop_fleet() {
  [ -n "${fleet_pid:-}" ] || return 0
  kill -CONT "$fleet_pid" 2>/dev/null || true
  kill -INT "$fleet_pid" 2>/dev/null && wait "$fleet_pid" 2>/dev/null || true
  fleet_pid=
}

# The cluster scenarios of run.sh (issue 18), sourced by it: the official SDK drivers against
# three `demo_server --redis URL --cluster` nodes behind a round-robin HAProxy, on one Redis,
# all started by cluster.py.
#
# It is not a tap: the drivers talk to HAProxy directly (keep-alive as the SDKs use it), so
# nothing is captured and these scenarios add no schema validation; the single-node HTTP
# scenarios validate the same server's messages.
#
# Invariant: a scenario passes only if its driver's checks pass AND HAProxy's per-server
# counters show every node served at least one of its requests (a balancer that sent
# everything to one node would make a cluster test look green while testing one node).
# Nothing it starts outlives it: cluster.py stops its children on SIGTERM, they die with it
# on SIGKILL (PR_SET_PDEATHSIG), and run.sh's reap kills any pid left after that.
#
# Uses run.sh's globals and functions: CAPTURES, VENV, HERE, passed, failed, tally, reap, wanted.

CLUSTER_TIMEOUT="${E2E_CLUSTER_TIMEOUT:-45}"
CLUSTER_NODES=3

# cluster_served NAME DIR: PASS if DIR/served.tsv (written by cluster.py when it stops) shows
# every one of the CLUSTER_NODES nodes served at least one request, else FAIL.
cluster_served() {
  local name="$1" dir="$2" counts idle
  counts="$(awk -F'\t' '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}' "$dir/served.tsv" 2>/dev/null)"
  idle="$(awk -F'\t' '$2 < 1 {print $1}' "$dir/served.tsv" 2>/dev/null | xargs)"
  if [[ ! -s "$dir/served.tsv" ]]; then
    echo "FAIL: $name: cluster: HAProxy's per-server counters were not read (see $dir/cluster.out)"
    failed=$((failed + 1))
  elif [[ "$(wc -l <"$dir/served.tsv")" -ne $CLUSTER_NODES || -n "$idle" ]]; then
    echo "FAIL: $name: cluster: not every node served requests (${idle:-a node is missing}; $counts)"
    failed=$((failed + 1))
  else
    echo "PASS: $name: cluster: every node served requests ($counts)"
    passed=$((passed + 1))
  fi
}

# run_cluster_scenario NAME DRIVER_CMD... : starts the cluster, runs the driver with
# `--url <the balancer's URL>` appended, stops the cluster, counts the driver's PASS/FAIL
# lines and the every-node check.
run_cluster_scenario() {
  local name="$1"
  shift
  local dir="$CAPTURES/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  log "scenario $name"
  "$VENV/bin/python" "$HERE/cluster.py" --dir "$dir" --nodes "$CLUSTER_NODES" --pid-file "$dir/pids" \
    -- "${CLUSTER_NODE_CMD[@]}" >"$dir/cluster.out" 2>&1 &
  local launcher=$! waited=0
  while [[ ! -s "$dir/url" ]] && kill -0 "$launcher" 2>/dev/null && ((waited < 600)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  local status=0
  if [[ ! -s "$dir/url" ]]; then
    echo "FAIL: $name: the cluster did not start"
    sed 's/^/   /' "$dir/cluster.out"
    failed=$((failed + 1))
    status=1
  else
    # tally reports a timeout with this scenario's own bound.
    local TIMEOUT="$CLUSTER_TIMEOUT"
    timeout -k 10 "$TIMEOUT" "$@" --timeout $((TIMEOUT - 10)) --url "$(cat "$dir/url")" \
      >"$dir/driver.out" 2>"$dir/stderr.log" || status=$?
    tally "$name" "$dir" "$status"
  fi
  # cluster.py reads HAProxy's counters into served.tsv, then stops everything it started.
  kill -TERM "$launcher" 2>/dev/null
  local i
  for i in $(seq 150); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  wait "$launcher" 2>/dev/null
  reap "$dir/pids"
  [[ -s "$dir/url" ]] && cluster_served "$name" "$dir"
  if [[ $status -ne 0 ]]; then
    echo "-- $name: the launcher's output ($dir/cluster.out; HAProxy's request log: $dir/haproxy.log):"
    sed 's/^/   /' "$dir/cluster.out"
    local node
    for node in $(seq 0 $((CLUSTER_NODES - 1))); do
      echo "-- $name: last lines of node$node's stderr ($dir/node$node.stderr):"
      tail -n 15 "$dir/node$node.stderr" 2>/dev/null | sed 's/^/   /'
    done
    echo "-- $name: last lines of the client's stderr ($dir/stderr.log):"
    tail -n 12 "$dir/stderr.log" 2>/dev/null | sed 's/^/   /'
  fi
}

# cluster_scenarios PYTHON_OK NODE_OK SERVER_OK
cluster_scenarios() {
  local python_ok=$1 node_ok=$2 server_ok=$3
  if [[ ${#CLUSTER_NODE_CMD[@]} -eq 0 ]]; then
    [[ $server_ok -eq 1 ]] && log "cluster scenarios skipped: they need demo_server's --cluster (E2E_SERVER_CMD is set)"
    return 0
  fi
  [[ $python_ok -eq 1 && $server_ok -eq 1 ]] || return 0
  local py=("$VENV/bin/python" "$HERE/python/driver.py")
  if wanted cluster-python-http-modern; then
    run_cluster_scenario cluster-python-http-modern "${py[@]}" --mode modern --label cluster-python-http-modern
  fi
  if wanted cluster-python-http-legacy; then
    run_cluster_scenario cluster-python-http-legacy "${py[@]}" --mode legacy --label cluster-python-http-legacy
  fi
  # The pinned TypeScript SDK (1.32.2) speaks no 2026-07-28 (its latest version is
  # 2025-11-25, it has no server/discover): only its legacy era is run here.
  if [[ $node_ok -eq 1 ]] && wanted cluster-typescript-http-legacy; then
    run_cluster_scenario cluster-typescript-http-legacy node "$TS_DIR/driver.mjs" --label cluster-typescript-http-legacy
  fi
}

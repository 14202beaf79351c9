#!/usr/bin/env bash
# End-to-end tests: independent MCP clients against Arbor's demo server over real stdio
# pipes and over Streamable HTTP.
#
#   tests/e2e/run.sh
#
# Scenarios (each under a timeout):
#   python-legacy           official Python SDK (mcp==2.3.0), initialize handshake, stdio
#   python-modern           official Python SDK, 2026-07-28 (server/discover, MRTR, listen), stdio
#   typescript-legacy       official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2), initialize handshake, stdio
#                           (with the 2025-11-25 tasks through client.experimental.tasks; the HTTP one too)
#   python-http-legacy      the Python SDK over Streamable HTTP: a legacy session (POST streams, GET stream)
#   python-http-modern      the Python SDK over Streamable HTTP at 2026-07-28 (incl. subscriptions/listen)
#   typescript-http-legacy  the TypeScript SDK over Streamable HTTP: a legacy session, ended with DELETE
#
# Cluster (issue 18): tests/e2e/cluster.py starts a throwaway redis-server, three
# `demo_server --port 0 --redis URL --cluster` nodes and HAProxy in front of them (round
# robin, keep-alive, nothing sticky); the driver talks to the balancer; then HAProxy's
# per-server counters must show that every node served requests:
#   cluster-python-http-modern      the Python SDK at 2026-07-28 through the balancer
#   cluster-python-http-legacy      the Python SDK, a legacy session through the balancer
#   cluster-typescript-http-legacy  the TypeScript SDK, a legacy session through the balancer
#   (no TypeScript 2026-07-28 scenario: the pinned SDK 1.32.2 knows no version past 2025-11-25)
#
# OAuth: each starts the authorization server (tests/auth-server, oidc-provider) and
# `demo_server --port 0 --auth-issuer ISSUER --auth-resource <the tap's URL>`; the SDK client
# gets a token from the authorization server after the server's first 401:
#   python-http-oauth-legacy  Python SDK OAuthClientProvider, authorization code + PKCE (DCR), legacy session
#   python-http-oauth-modern  the same with the pre-registered client-a, 2026-07-28
#   python-http-oauth-client-credentials  Python SDK ClientCredentialsOAuthProvider (client-b), 2026-07-28
#   typescript-http-oauth-legacy  TypeScript SDK authProvider, authorization code + PKCE (DCR), legacy session
#   typescript-http-oauth-client-credentials  TypeScript SDK ClientCredentialsProvider (client-a), legacy session
#
# Then Arbor's own client (examples/client_e2e.rs, `arbor_client`) against independent
# servers and ours (see client/README.md): rust-client-python-{stdio,http}-{legacy,modern}
# (an mcp==2.3.0 server, client/fixture_server.py), rust-client-everything-stdio
# (@modelcontextprotocol/server-everything, pinned in typescript/package.json; legacy; its
# task tool simulate-research-query through call_tool_as_task),
# rust-client-arbor-{stdio,http}-{legacy,modern} (demo_server).
#
# Every stdio client talks to the server through tests/e2e/tap.py, every HTTP
# client through tests/e2e/http_tap.py (which starts `demo_server --port 0`
# itself, forwards to it and stops it after the client), and both record what
# each side sent; tests/e2e/validate.py then checks every server message
# against the negotiated revision's schema (tests/fixtures/spec/<revision>/).
#
# Installs what it needs when missing or out of date: a venv at tests/e2e/.venv
# from python/requirements.txt, and `npm ci` in typescript/ and tests/auth-server/. Builds the server
# with `cargo build --example demo_server`.
#
# Environment:
#   E2E_SERVER_CMD   run this server command instead of building demo_server
#                    (split on whitespace; `--stdio` is not added)
#   E2E_HTTP_SERVER_CMD  the same for the HTTP scenarios: a command that listens on a
#                    port of its choosing and prints `NAME: listening on http://...` on
#                    stderr; without it, E2E_SERVER_CMD skips the HTTP scenarios
#   E2E_TIMEOUT      seconds per scenario (default 120)
#   E2E_CLUSTER_TIMEOUT  seconds per cluster scenario's driver (default 45)
#   E2E_CAPTURES     capture folder (default tests/e2e/captures)
#   E2E_ONLY         run only the scenarios named here (space-separated)
#   PYTHON           interpreter for the venv (default python3)
#
# Ends with the line `N passed, M failed` (one count per client check and per
# validated capture) and exits non-zero if anything failed.

set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
TS_DIR="$HERE/typescript"
CAPTURES="${E2E_CAPTURES:-$HERE/captures}"
TIMEOUT="${E2E_TIMEOUT:-120}"
PYTHON="${PYTHON:-python3}"

passed=0
failed=0

log() { printf '== %s\n' "$*"; }
fail_setup() {
  # A setup step failed: every scenario counts as failed.
  printf 'FAIL: setup: %s\n' "$*"
  failed=$((failed + 1))
}
sha() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

setup_python() {
  local stamp="$VENV/.requirements.sha256" want
  want="$(sha "$HERE/python/requirements.txt")"
  if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  log "python: creating $VENV and installing python/requirements.txt"
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "run.sh: $PYTHON is older than 3.10 (mcp 2.3.0 needs >= 3.10); set PYTHON=" >&2
    return 1
  fi
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" || { echo "run.sh: '$PYTHON -m venv' failed (Debian: apt-get install python3-venv)" >&2; return 1; }
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/python/requirements.txt" || return 1
  echo "$want" >"$stamp"
}

setup_node() {
  local stamp="$TS_DIR/node_modules/.arbor-lock.sha256" want
  want="$(sha "$TS_DIR/package.json" "$TS_DIR/package-lock.json")"
  if [[ -d "$TS_DIR/node_modules/@modelcontextprotocol/sdk" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  command -v npm >/dev/null || { echo "run.sh: npm not found (Node 20 is required)" >&2; return 1; }
  log "typescript: npm ci"
  (cd "$TS_DIR" && npm ci --no-audit --no-fund --loglevel=error) || return 1
  echo "$want" >"$stamp"
}

AUTH_DIR="$ROOT/tests/auth-server"

# The authorization server's modules (oidc-provider), as pinned in its package-lock.json.
setup_auth_server() {
  local stamp="$AUTH_DIR/node_modules/.arbor-lock.sha256" want
  # The contents only (not the paths): scripts/test writes the same stamp.
  want="$(cat "$AUTH_DIR/package.json" "$AUTH_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [[ -d "$AUTH_DIR/node_modules/oidc-provider" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  command -v npm >/dev/null || { echo "run.sh: npm not found (Node 20 is required)" >&2; return 1; }
  log "auth server: npm ci"
  (cd "$AUTH_DIR" && npm ci --no-audit --no-fund --loglevel=error) || return 1
  echo "$want" >"$stamp"
}

# start_auth_server DIR: starts tests/auth-server/server.mjs on a free port (its output in
# DIR/auth-server.{out,stderr}); sets AUTH_ISSUER, AUTH_PID and AUTH_FD. Its stdin is a pipe
# this shell holds (AUTH_FD): the server stops when that closes, so even a killed run.sh
# does not leak it.
start_auth_server() {
  local dir="$1" waited=0
  exec {AUTH_FD}> >(exec node "$AUTH_DIR/server.mjs" --port 0 >"$dir/auth-server.out" 2>"$dir/auth-server.stderr")
  AUTH_PID=$!
  AUTH_ISSUER=""
  while ((waited < 300)); do
    AUTH_ISSUER="$(sed -n 's/^AUTH_SERVER: listening on //p' "$dir/auth-server.out" 2>/dev/null)"
    [[ -n "$AUTH_ISSUER" ]] && break
    kill -0 "$AUTH_PID" 2>/dev/null || break
    sleep 0.1
    waited=$((waited + 1))
  done
  if [[ -z "$AUTH_ISSUER" ]]; then
    stop_auth_server
    return 1
  fi
  local stat
  stat="$(cat "/proc/$AUTH_PID/stat" 2>/dev/null)"
  stat="${stat##*) }"
  echo "$AUTH_PID $(cut -d' ' -f20 <<<"$stat")" >"$dir/auth-server.pid"
}

stop_auth_server() {
  exec {AUTH_FD}>&-
  kill -TERM "$AUTH_PID" 2>/dev/null
  local i
  for i in $(seq 50); do kill -0 "$AUTH_PID" 2>/dev/null || break; sleep 0.1; done
}

# Sets SERVER_CMD and HTTP_SERVER_CMD (arrays) to the server commands.
setup_server() {
  HTTP_SERVER_CMD=()
  CLUSTER_NODE_CMD=()
  if [[ -n "${E2E_SERVER_CMD:-}" ]]; then
    read -r -a SERVER_CMD <<<"$E2E_SERVER_CMD"
    log "server: $E2E_SERVER_CMD (from E2E_SERVER_CMD)"
    if [[ -n "${E2E_HTTP_SERVER_CMD:-}" ]]; then
      read -r -a HTTP_SERVER_CMD <<<"$E2E_HTTP_SERVER_CMD"
    fi
    return 0
  fi
  log "server: cargo build --example demo_server"
  local messages exe
  messages="$(mktemp)"
  (cd "$ROOT" && cargo build --example demo_server --message-format=json-render-diagnostics >"$messages") || {
    rm -f "$messages"
    return 1
  }
  exe="$("$PYTHON" - "$messages" <<'EOF'
import json, sys
exe = ""
for line in open(sys.argv[1], encoding="utf-8"):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "demo_server" and m.get("executable"):
        exe = m["executable"]
print(exe)
EOF
)"
  rm -f "$messages"
  if [[ -z "$exe" || ! -x "$exe" ]]; then
    echo "run.sh: cargo built no demo_server executable" >&2
    return 1
  fi
  # No timed feed ticks: the clients check the feed's text right after publishing.
  SERVER_CMD=("$exe" --stdio --feed-interval-ms 0)
  HTTP_SERVER_CMD=("$exe" --port 0 --feed-interval-ms 0)
  # cluster.py replaces {redis} with its own Redis's URL.
  CLUSTER_NODE_CMD=("$exe" --port 0 --redis '{redis}' --cluster --feed-interval-ms 0)
}

# ours PID START: the process is still the one the tap recorded (same start
# time in /proc/PID/stat), not a reused pid.
ours() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "$(cut -d' ' -f20 <<<"$stat")" == "$2" ]]
}

# reap PIDFILE: a tap or server the client left running is ended, by its pid.
reap() {
  [[ -f "$1" ]] || return 0
  local pid start left=()
  while read -r pid start; do
    ours "$pid" "$start" && left+=("$pid $start")
  done <"$1"
  [[ ${#left[@]} -eq 0 ]] && return 0
  sleep 2
  local entry
  for entry in "${left[@]}"; do
    read -r pid start <<<"$entry"
    if ours "$pid" "$start"; then
      echo "run.sh: pid $pid still running after the client finished; killing it" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
  done
}

# tally NAME DIR STATUS: shows a driver's output, adds its PASS/FAIL lines to the totals,
# and counts a driver that ended badly without a FAIL line (timeout, crash) as one failure.
tally() {
  local name="$1" dir="$2" status="$3" p f
  cat "$dir/driver.out"
  p="$(grep -c '^PASS: ' "$dir/driver.out")"
  f="$(grep -c '^FAIL: ' "$dir/driver.out")"
  passed=$((passed + p))
  failed=$((failed + f))
  if [[ $status -ne 0 && $f -eq 0 ]]; then
    if [[ $status -eq 124 || $status -eq 137 ]]; then
      echo "FAIL: $name: timed out after ${TIMEOUT}s"
    else
      echo "FAIL: $name: driver exited with status $status"
    fi
    failed=$((failed + 1))
  fi
}

# run_scenario NAME CMD... : runs a driver, counts its PASS/FAIL lines.
run_scenario() {
  local name="$1"
  shift
  local dir="$CAPTURES/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  log "scenario $name"
  local tap=("$VENV/bin/python" "$HERE/tap.py" --server-log "$dir/server.jsonl" --client-log "$dir/client.jsonl"
    --server-stderr "$dir/server.stderr" --pid-file "$dir/pids" -- "${SERVER_CMD[@]}")
  local status=0
  # timeout signals the driver's whole process group: driver, tap and server.
  timeout -k 10 "$TIMEOUT" "$@" "${tap[@]}" >"$dir/driver.out" 2>"$dir/stderr.log" || status=$?
  reap "$dir/pids"
  tally "$name" "$dir" "$status"
  if [[ $status -ne 0 ]]; then
    echo "-- $name: last lines of the server's stderr ($dir/server.stderr):"
    tail -n 30 "$dir/server.stderr" 2>/dev/null | sed 's/^/   /'
    echo "-- $name: last lines of the client's stderr ($dir/stderr.log):"
    tail -n 12 "$dir/stderr.log" | sed 's/^/   /'
  fi
}

# run_http_scenario NAME DRIVER_CMD... : starts the server behind http_tap.py, runs the
# driver with `--url URL` appended to its options, stops the tap (and so the server),
# counts the driver's PASS/FAIL lines.
run_http_scenario() {
  local name="$1"
  shift
  local dir="$CAPTURES/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  log "scenario $name"
  http_scenario_in "$dir" "$name" "$@"
}

# http_scenario_in DIR NAME DRIVER_CMD... : run_http_scenario's work, in a prepared DIR.
http_scenario_in() {
  local dir="$1" name="$2"
  shift 2
  "$VENV/bin/python" "$HERE/http_tap.py" --server-log "$dir/server.jsonl" --client-log "$dir/client.jsonl" \
    --url-file "$dir/url" --server-stderr "$dir/server.stderr" --pid-file "$dir/pids" -- "${HTTP_SERVER_CMD[@]}" \
    >"$dir/tap.out" 2>&1 &
  local tap=$!
  local waited=0
  while [[ ! -s "$dir/url" ]] && kill -0 "$tap" 2>/dev/null && ((waited < 600)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  local status=0
  if [[ ! -s "$dir/url" ]]; then
    echo "FAIL: $name: the server behind http_tap.py did not start"
    cat "$dir/tap.out"
    failed=$((failed + 1))
    status=1
  else
    local url
    url="$(cat "$dir/url")"
    timeout -k 10 "$TIMEOUT" "$@" --url "$url" >"$dir/driver.out" 2>"$dir/stderr.log" || status=$?
    tally "$name" "$dir" "$status"
  fi
  # The tap stops the server on SIGTERM (SIGTERM, then SIGKILL after 5 s).
  kill -TERM "$tap" 2>/dev/null
  local i
  for i in $(seq 100); do kill -0 "$tap" 2>/dev/null || break; sleep 0.1; done
  wait "$tap" 2>/dev/null
  reap "$dir/pids"
  if [[ $status -ne 0 ]]; then
    echo "-- $name: last lines of the server's stderr ($dir/server.stderr):"
    tail -n 30 "$dir/server.stderr" 2>/dev/null | sed 's/^/   /'
    echo "-- $name: last lines of the client's stderr ($dir/stderr.log):"
    tail -n 12 "$dir/stderr.log" 2>/dev/null | sed 's/^/   /'
  fi
}

validate_capture() {
  local name="$1" dir="$CAPTURES/$1"
  if "$VENV/bin/python" "$HERE/validate.py" --schemas "$ROOT/tests/fixtures/spec" "$dir"; then
    echo "PASS: $name: every server message is valid for its revision"
    passed=$((passed + 1))
  else
    echo "FAIL: $name: server messages invalid for their revision (see above)"
    failed=$((failed + 1))
  fi
}

wanted() { [[ -z "${E2E_ONLY:-}" || " $E2E_ONLY " == *" $1 "* ]]; }

# run_cluster_scenario and cluster_scenarios: the three-node cluster behind HAProxy.
source "$HERE/cluster.sh"

# run_oauth_scenario NAME DRIVER_CMD... : starts the authorization server, then the demo server
# behind http_tap.py with `--auth-issuer ISSUER --auth-resource <the tap's URL>` (http_tap.py
# replaces `{origin}`), runs the driver with `--issuer ISSUER --url URL` appended, stops both.
run_oauth_scenario() {
  local name="$1"
  shift
  local dir="$CAPTURES/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  log "scenario $name"
  if ! start_auth_server "$dir"; then
    echo "FAIL: $name: the authorization server did not start (see $dir/auth-server.stderr)"
    tail -n 20 "$dir/auth-server.stderr" 2>/dev/null | sed 's/^/   /'
    failed=$((failed + 1))
    return
  fi
  local saved=("${HTTP_SERVER_CMD[@]}")
  HTTP_SERVER_CMD+=(--auth-issuer "$AUTH_ISSUER" --auth-resource "{origin}/mcp")
  http_scenario_in "$dir" "$name" "$@" --issuer "$AUTH_ISSUER"
  HTTP_SERVER_CMD=("${saved[@]}")
  stop_auth_server
  reap "$dir/auth-server.pid"
}

# run_client_scenario NAME DRIVER_ARGS... : Arbor's client driver (examples/client_e2e.rs)
# against a server it spawns itself (stdio, or HTTP with --serve); counts its PASS/FAIL
# lines (SKIP lines are shown, not counted).
run_client_scenario() {
  local name="$1"
  shift
  wanted "$name" || return 0
  local dir="$CAPTURES/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  log "scenario $name"
  local status=0
  timeout -k 10 "$TIMEOUT" "$CLIENT_E2E" --label "$name" "$@" >"$dir/driver.out" 2>"$dir/stderr.log" || status=$?
  tally "$name" "$dir" "$status"
  if [[ $status -ne 0 ]]; then
    echo "-- $name: last lines of the driver's stderr ($dir/stderr.log):"
    tail -n 20 "$dir/stderr.log" | sed 's/^/   /'
  fi
}

# Arbor's client against the Python SDK fixture, server-everything and the demo server.
client_scenarios() {
  local python_ok=$1 node_ok=$2 server_ok=$3
  log "client: cargo build --example client_e2e"
  local target="${CARGO_TARGET_DIR:-$ROOT/target}"
  CLIENT_E2E="$target/debug/examples/client_e2e"
  if ! (cd "$ROOT" && cargo build --quiet --example client_e2e) || [[ ! -x "$CLIENT_E2E" ]]; then
    fail_setup "client_e2e build"
    return
  fi
  if [[ $python_ok -eq 1 ]]; then
    local py=("$VENV/bin/python" "$HERE/client/fixture_server.py")
    run_client_scenario rust-client-python-stdio-legacy --profile python --era legacy --expect-era legacy --stdio "${py[@]}" --stdio
    run_client_scenario rust-client-python-stdio-modern --profile python --expect-era modern --stdio "${py[@]}" --stdio
    run_client_scenario rust-client-python-http-legacy --profile python --era legacy --expect-era legacy --serve "${py[@]}" --http
    run_client_scenario rust-client-python-http-modern --profile python --expect-era modern --serve "${py[@]}" --http
  fi
  if [[ $node_ok -eq 1 ]]; then
    # Streamable HTTP is left out: server-everything listens on a fixed port (PORT, 3001)
    # and cannot report one the OS picked.
    run_client_scenario rust-client-everything-stdio --profile everything --expect-era legacy \
      --stdio node "$TS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" stdio
  fi
  if [[ $server_ok -eq 1 && -z "${E2E_SERVER_CMD:-}" ]]; then
    local demo="${SERVER_CMD[0]}"
    run_client_scenario rust-client-arbor-stdio-legacy --profile arbor --era legacy --expect-era legacy \
      --stdio "$demo" --stdio --feed-interval-ms 0 --page-size 2
    run_client_scenario rust-client-arbor-stdio-modern --profile arbor --expect-era modern \
      --stdio "$demo" --stdio --feed-interval-ms 0 --page-size 2
    run_client_scenario rust-client-arbor-http-legacy --profile arbor --era legacy --expect-era legacy \
      --serve "$demo" --port 0 --feed-interval-ms 0 --page-size 2
    run_client_scenario rust-client-arbor-http-modern --profile arbor --expect-era modern \
      --serve "$demo" --port 0 --feed-interval-ms 0 --page-size 2
  fi
}

main() {
  mkdir -p "$CAPTURES"
  local python_ok=1 node_ok=1 server_ok=1
  setup_python || { fail_setup "python venv"; python_ok=0; }
  setup_node || { fail_setup "npm ci"; node_ok=0; }
  local auth_ok=1
  setup_auth_server || { fail_setup "npm ci (tests/auth-server)"; auth_ok=0; }
  setup_server || { fail_setup "demo server build"; server_ok=0; }

  local scenarios=()
  if [[ $python_ok -eq 1 && $server_ok -eq 1 ]]; then
    if wanted python-legacy; then
      run_scenario python-legacy "$VENV/bin/python" "$HERE/python/driver.py" --mode legacy --timeout $((TIMEOUT - 10)) --
      scenarios+=(python-legacy)
    fi
    if wanted python-modern; then
      run_scenario python-modern "$VENV/bin/python" "$HERE/python/driver.py" --mode modern --timeout $((TIMEOUT - 10)) --
      scenarios+=(python-modern)
    fi
  fi
  if [[ $node_ok -eq 1 && $python_ok -eq 1 && $server_ok -eq 1 ]] && wanted typescript-legacy; then
    run_scenario typescript-legacy node "$TS_DIR/driver.mjs" --timeout $((TIMEOUT - 10)) --
    scenarios+=(typescript-legacy)
  fi
  if [[ $server_ok -eq 1 && ${#HTTP_SERVER_CMD[@]} -eq 0 ]]; then
    log "HTTP scenarios skipped: E2E_SERVER_CMD is set without E2E_HTTP_SERVER_CMD"
  elif [[ $python_ok -eq 1 && $server_ok -eq 1 ]]; then
    if wanted python-http-legacy; then
      run_http_scenario python-http-legacy "$VENV/bin/python" "$HERE/python/driver.py" --mode legacy \
        --label python-http-legacy --timeout $((TIMEOUT - 10))
      scenarios+=(python-http-legacy)
    fi
    if wanted python-http-modern; then
      run_http_scenario python-http-modern "$VENV/bin/python" "$HERE/python/driver.py" --mode modern \
        --label python-http-modern --timeout $((TIMEOUT - 10))
      scenarios+=(python-http-modern)
    fi
    if [[ $node_ok -eq 1 ]] && wanted typescript-http-legacy; then
      run_http_scenario typescript-http-legacy node "$TS_DIR/driver.mjs" --label typescript-http-legacy \
        --timeout $((TIMEOUT - 10))
      scenarios+=(typescript-http-legacy)
    fi
  fi

  if [[ -n "${E2E_SERVER_CMD:-}" ]]; then
    log "OAuth scenarios skipped: they need demo_server's --auth-issuer (E2E_SERVER_CMD is set)"
  elif [[ $python_ok -eq 1 && $server_ok -eq 1 && $auth_ok -eq 1 ]]; then
    local py_oauth=("$VENV/bin/python" "$HERE/python/oauth_driver.py" --timeout $((TIMEOUT - 10)))
    if wanted python-http-oauth-legacy; then
      run_oauth_scenario python-http-oauth-legacy "${py_oauth[@]}" --flow code --client dcr --mode legacy \
        --label python-http-oauth-legacy
      scenarios+=(python-http-oauth-legacy)
    fi
    if wanted python-http-oauth-modern; then
      run_oauth_scenario python-http-oauth-modern "${py_oauth[@]}" --flow code --client pre-registered --mode modern \
        --label python-http-oauth-modern
      scenarios+=(python-http-oauth-modern)
    fi
    if wanted python-http-oauth-client-credentials; then
      run_oauth_scenario python-http-oauth-client-credentials "${py_oauth[@]}" --flow client-credentials --mode modern \
        --label python-http-oauth-client-credentials
      scenarios+=(python-http-oauth-client-credentials)
    fi
    if [[ $node_ok -eq 1 ]]; then
      local ts_oauth=(node "$TS_DIR/oauth_driver.mjs" --timeout $((TIMEOUT - 10)))
      if wanted typescript-http-oauth-legacy; then
        run_oauth_scenario typescript-http-oauth-legacy "${ts_oauth[@]}" --flow code --label typescript-http-oauth-legacy
        scenarios+=(typescript-http-oauth-legacy)
      fi
      if wanted typescript-http-oauth-client-credentials; then
        run_oauth_scenario typescript-http-oauth-client-credentials "${ts_oauth[@]}" --flow client-credentials \
          --label typescript-http-oauth-client-credentials
        scenarios+=(typescript-http-oauth-client-credentials)
      fi
    fi
  fi

  cluster_scenarios "$python_ok" "$node_ok" "$server_ok"

  client_scenarios "$python_ok" "$node_ok" "$server_ok"

  if [[ $python_ok -eq 1 ]]; then
    log "validator self-test"
    local out
    out="$("$VENV/bin/python" "$HERE/validate.py" --schemas "$ROOT/tests/fixtures/spec" --selftest "$HERE"/selftest/*/ 2>&1)"
    echo "$out"
    passed=$((passed + $(grep -c '^PASS: ' <<<"$out")))
    failed=$((failed + $(grep -c '^FAIL: ' <<<"$out")))
    if ! grep -q '^PASS: ' <<<"$out"; then
      echo "FAIL: validator self-test did not run"
      failed=$((failed + 1))
    fi
  fi

  if [[ ${#scenarios[@]} -gt 0 ]]; then
    log "schema validation"
    for name in "${scenarios[@]}"; do
      validate_capture "$name"
    done
  fi

  echo "captures: $CAPTURES"
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

main

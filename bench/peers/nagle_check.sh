#!/usr/bin/env bash
# Shows the Nagle + delayed-ACK stall on SSE-framed MCP responses when the
# server socket lacks TCP_NODELAY (rmcp-echo --no-nodelay) versus with it.
# Usage: bench/peers/nagle_check.sh   (after scripts/bench-http or
#   cargo build --release --manifest-path bench/peers/Cargo.toml --target-dir target/peer-bench)
# ARBOR_BIN=target/release/examples/bench_server adds Arbor's server to the check.
set -euo pipefail
cd "$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
R=${R:-target/peer-bench/release}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
taskset -c 0 $R/rmcp-echo http --port 18201 2>/dev/null & pids+=($!)
taskset -c 0 $R/rmcp-echo http --port 18202 --no-nodelay 2>/dev/null & pids+=($!)
taskset -c 0 $R/rmcp-echo http --port 18203 --stateless --json --no-nodelay 2>/dev/null & pids+=($!)
if [[ -n ${ARBOR_BIN:-} ]]; then
  taskset -c 0 "$ARBOR_BIN" --port 18204 2>/dev/null & pids+=($!)
fi
sleep 0.5
for n in 1 16; do
  taskset -c 1 $R/mcp-load --url http://127.0.0.1:18201/mcp --mode stateful --conns $n --warmup 0.5 --duration 2 --server-pid ${pids[0]} --label stateful-nodelay | grep -v '^JSON'
  taskset -c 1 $R/mcp-load --url http://127.0.0.1:18202/mcp --mode stateful --conns $n --warmup 0.5 --duration 2 --server-pid ${pids[1]} --label stateful-NAGLE | grep -v '^JSON'
  taskset -c 1 $R/mcp-load --url http://127.0.0.1:18203/mcp --mode stateless --conns $n --warmup 0.5 --duration 2 --server-pid ${pids[2]} --label stateless-json-NAGLE | grep -v '^JSON'
  if [[ -n ${ARBOR_BIN:-} ]]; then
    taskset -c 1 $R/mcp-load --url http://127.0.0.1:18204/mcp --mode stateful --conns $n --warmup 0.5 --duration 2 --server-pid ${pids[3]} --label arbor-stateful | grep -v '^JSON'
    taskset -c 1 $R/mcp-load --url http://127.0.0.1:18204/mcp --mode modern --conns $n --warmup 0.5 --duration 2 --server-pid ${pids[3]} --label arbor-modern | grep -v '^JSON'
  fi
done

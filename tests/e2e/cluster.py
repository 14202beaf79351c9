#!/usr/bin/env python3
"""A throwaway three-node cluster for the e2e scenarios: one redis-server, the nodes, one HAProxy.

Usage:
    cluster.py --dir DIR [--nodes 3] [--pid-file P] -- NODE_CMD [ARGS...]

It starts a `redis-server` of its own on a free loopback port (no persistence: `--save ''`,
no AOF, its working directory a temp dir of this launcher), then NODES copies of NODE_CMD
with `{redis}` in its arguments replaced by that Redis's URL (run.sh passes `demo_server
--port 0 --redis {redis} --cluster --feed-interval-ms 0`), reads each node's address from the
`NAME: listening on http://HOST:PORT/PATH` line it prints on stderr (as http_tap.py does),
and puts a real HAProxy (`/usr/sbin/haproxy`, Debian's `haproxy`) in front of them:
`balance roundrobin`, HTTP mode, keep-alive on both sides as the SDKs use it (no `option
http-server-close`), no cookie, no stick table, nothing sticky, and timeouts of 120 s so SSE
streams outlive a scenario. It then proves the balancer spreads requests: NODES consecutive
`GET /readyz` on one kept-alive connection must each be answered 200 and, by HAProxy's
counters, land one on each node (else it stops everything and exits 1). Only then does it
write the balancer's endpoint URL (`http://127.0.0.1:PORT/PATH`, the nodes' path) to
DIR/url, and wait to be stopped.

What it is not: a tap. Nothing between the clients and the balancer records or rewrites a
message; the clients talk to HAProxy directly. The nodes' stderr goes to DIR/nodeN.stderr,
Redis's log to DIR/redis.log, HAProxy's to DIR/haproxy.log and its configuration to
DIR/haproxy.cfg.

On SIGTERM, SIGINT or SIGHUP it first reads HAProxy's per-server counters from its stats
socket and writes DIR/served.tsv (`nodeN<TAB>requests` per node: how many requests the
balancer sent each node after the probe, so a caller can tell whether every node served some
of its client's), then stops the nodes (SIGTERM, SIGKILL after 5 s), HAProxy and Redis, and
removes its temp dir. It stops the same way if a child exits by itself (a node crashing).
The nodes must serve `GET /readyz` (demo_server does) for the probe.

Invariant: nothing it started outlives it. Each child is started with PR_SET_PDEATHSIG
(SIGKILL), so even a SIGKILL of this launcher takes Redis, the nodes and HAProxy with it; and
the launcher stops by itself when its own parent (run.sh) exits without stopping it.
With --pid-file it writes its own pid and each child's, with start times, for run.sh's
reap. Standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import csv
import http.client
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

LISTENING = re.compile(rb": listening on (http://[^\s]+)")
PR_SET_PDEATHSIG = 1
READY_SECONDS = 60.0


class StartError(Exception):
    """A part of the cluster did not start; the message says which and why."""


def _die_with(parent: int):
    """A preexec_fn: the child gets SIGKILL when this launcher dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os._exit(1)

    return preexec


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def _free_port() -> int:
    # Another process may take it before our child binds it: each start checks its child is
    # still running once the port accepts, and starts again on another port if not.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _binary(name: str, debian_path: str) -> str:
    # Debian puts haproxy in /usr/sbin, which a user's PATH may not hold.
    if os.access(debian_path, os.X_OK):
        return debian_path
    found = shutil.which(name)
    if not found:
        raise StartError(f"{name} is not installed (Debian: apt-get install -y {name}; scripts/test installs it)")
    return found


class Cluster:
    """The processes this launcher started, stopped in reverse order."""

    def __init__(self, out: str, nodes: int, command: list[str]) -> None:
        self.out = out
        self.count = nodes
        self.command = command
        self.tmp = tempfile.mkdtemp(prefix="arbor-cluster-")
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.stats_socket = os.path.join(self.tmp, "haproxy.sock")

    def spawn(self, name: str, argv: list[str], stderr) -> subprocess.Popen:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                    cwd=self.tmp, preexec_fn=_die_with(os.getpid()))
        except OSError as e:
            raise StartError(f"cannot start {name} ({argv[0]}): {e}") from e
        self.procs.append((name, proc))
        return proc

    def start_on_free_port(self, name: str, argv_for, log: str) -> int:
        """Starts a child that binds the port given to argv_for; a start whose port was taken
        meanwhile (the child exits) is retried on another port."""
        for _ in range(5):
            port = _free_port()
            with open(log, "ab", buffering=0) as stderr:
                proc = self.spawn(name, argv_for(port), stderr)
            deadline = time.monotonic() + 10
            while proc.poll() is None and not _accepts(port) and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.05)  # the port may be another process's: ours would exit at once
            if proc.poll() is None and _accepts(port):
                return port
            self.procs.remove((name, proc))
            proc.kill()
            proc.wait()
        raise StartError(f"{name} did not start listening (see {log})")

    def start_redis(self) -> str:
        binary = _binary("redis-server", "/usr/bin/redis-server")
        log = os.path.join(self.out, "redis.log")
        port = self.start_on_free_port("redis", lambda p: [
            binary, "--port", str(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", self.tmp, "--daemonize", "no", "--protected-mode", "yes",
            "--logfile", os.path.abspath(log)], log)
        return f"redis://127.0.0.1:{port}"

    def start_node(self, index: int, redis_url: str) -> str:
        """Starts node `index`; its URL, from the line it prints on stderr."""
        argv = [arg.replace("{redis}", redis_url) for arg in self.command]
        proc = self.spawn(f"node{index}", argv, subprocess.PIPE)
        log = open(os.path.join(self.out, f"node{index}.stderr"), "ab", buffering=0)
        found: list[str] = []
        ready = threading.Event()

        def pump() -> None:
            for line in proc.stderr:
                log.write(line)
                if not found and (m := LISTENING.search(line)):
                    found.append(m.group(1).decode())
                    ready.set()
            ready.set()  # its stderr ended: it exited

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(READY_SECONDS) or not found:
            raise StartError(f"node{index} did not say where it listens (exit status {proc.poll()}; "
                             f"see node{index}.stderr)")
        return found[0]

    def start_haproxy(self, backends: list[str]) -> int:
        binary = _binary("haproxy", "/usr/sbin/haproxy")
        config = os.path.join(self.out, "haproxy.cfg")
        log = os.path.join(self.out, "haproxy.log")

        def argv(port: int) -> list[str]:
            with open(config, "w", encoding="ascii") as f:
                f.write(haproxy_config(port, backends, self.stats_socket))
            return [binary, "-db", "-f", config]  # -db: foreground, no daemon

        return self.start_on_free_port("haproxy", argv, log)

    def served(self) -> dict[str, int]:
        """Requests HAProxy sent each node, from its stats socket (`show stat`)."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.stats_socket)
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        rows = csv.DictReader(io.StringIO(data.decode().lstrip("# ")))
        counts = {}
        for row in rows:
            if row.get("pxname") == "nodes" and row.get("svname", "").startswith("node"):
                # req_tot: HTTP requests the server was given; stot (streams) where it is empty.
                counts[row["svname"]] = int(row.get("req_tot") or row.get("stot") or 0)
        return counts

    def probe(self, port: int) -> dict[str, int]:
        """Proves the balancer spreads requests before any client uses it: NODES consecutive
        `GET /readyz` on one kept-alive connection must each be answered 200 and land one
        on each node. Answers the counters after the probe (the baseline of served.tsv)."""
        before = self.served()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            for _ in range(self.count):
                conn.request("GET", "/readyz")
                answer = conn.getresponse()
                answer.read()
                if answer.status != 200:
                    raise StartError(f"GET /readyz through the balancer answered {answer.status}: a node is not ready")
        except OSError as e:
            raise StartError(f"GET /readyz through the balancer failed: {e}") from e
        finally:
            conn.close()
        after = self.served()
        spread = {name: after.get(name, 0) - before.get(name, 0) for name in after}
        if sorted(spread.values()) != [1] * self.count:
            raise StartError(f"{self.count} consecutive requests on one connection did not land one on each "
                             f"node: {spread}")
        return after

    def stop(self) -> None:
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 5
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"cluster: {name} ignored SIGTERM; sending SIGKILL", file=sys.stderr, flush=True)
                proc.kill()
                proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def haproxy_config(port: int, backends: list[str], stats_socket: str) -> str:
    servers = "".join(f"    server node{i} {addr}\n" for i, addr in enumerate(backends))
    return f"""global
    maxconn 1024
    stats socket {stats_socket} mode 600 level user
    # One line per request on stderr (DIR/haproxy.log): which node served it, its status,
    # its Mcp-Session-Id and the start of its body, to tell why a scenario failed.
    log stderr format raw local0 info

defaults
    mode http
    log global
    option httplog
    option dontlognull  # not the launcher's own readiness probes (a connect, no request)
    # The whole (small, JSON-RPC) request body is read before it is forwarded, so the log
    # can show its start; it changes nothing the client or the node sees.
    option http-buffer-request
    timeout connect 2s
    # Long enough for an SSE stream (a legacy GET stream, a subscriptions/listen) to stay
    # open through a scenario; a stuck one still ends with the scenario.
    timeout client 120s
    timeout server 120s
    timeout tunnel 120s
    timeout http-keep-alive 30s
    # Keep-alive on both sides (HAProxy's default, as the SDKs use it); each request is
    # still balanced on its own: no prefer-last-server, no cookie, no stick table.

frontend mcp
    bind 127.0.0.1:{port}
    capture request header Mcp-Session-Id len 40
    http-request capture req.body len 120
    default_backend nodes

backend nodes
    balance roundrobin
{servers}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="where the URL, logs and served.tsv go")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--pid-file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the node command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no node command given after --")
    os.makedirs(args.dir, exist_ok=True)

    parent = os.getppid()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())

    cluster = Cluster(args.dir, args.nodes, command)
    try:
        redis_url = cluster.start_redis()
        urls = [cluster.start_node(i, redis_url) for i in range(args.nodes)]
        backends = [re.sub(r"^http://([^/]+).*$", r"\1", url) for url in urls]
        port = cluster.start_haproxy(backends)
        baseline = cluster.probe(port)
        path = re.sub(r"^http://[^/]+", "", urls[0]) or "/"
        if args.pid_file:
            with open(args.pid_file, "w", encoding="ascii") as f:
                for pid in [os.getpid()] + [proc.pid for _, proc in cluster.procs]:
                    f.write(f"{pid} {_start_time(pid)}\n")
        url = f"http://127.0.0.1:{port}{path}"
        with open(os.path.join(args.dir, "url.tmp"), "w", encoding="ascii") as f:
            f.write(url + "\n")
        os.replace(os.path.join(args.dir, "url.tmp"), os.path.join(args.dir, "url"))  # never half a URL
        print(f"cluster: redis {redis_url}, nodes {' '.join(urls)}, balancer {url}; "
              f"{args.nodes} consecutive GET /readyz landed one on each node", flush=True)

        while not stop.wait(0.5):
            if os.getppid() != parent:
                # Whoever started us (run.sh) is gone and can no longer stop us: stop now.
                print("cluster: the launcher's parent exited; stopping", file=sys.stderr, flush=True)
                break
            for name, proc in cluster.procs:
                if proc.poll() is not None:
                    print(f"cluster: {name} exited with status {proc.returncode}", file=sys.stderr, flush=True)
                    stop.set()
        try:
            served = cluster.served()
            with open(os.path.join(args.dir, "served.tsv"), "w", encoding="ascii") as f:
                for name in sorted(served):
                    f.write(f"{name}\t{served[name] - baseline.get(name, 0)}\n")
        except (OSError, ValueError) as e:
            print(f"cluster: cannot read HAProxy's stats: {e}", file=sys.stderr, flush=True)
        return 0
    except StartError as e:
        print(f"cluster: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A transparent stdio tap between an MCP client and the server it launches.

Usage:
    tap.py --server-log S.jsonl --client-log C.jsonl [--server-stderr E.log] -- SERVER_CMD [ARGS...]

The client launches this script as if it were the server. The tap starts the
real server, passes every byte the client writes to the server's stdin and
every byte the server writes to stdout back to the client, unchanged and
unbuffered line by line. Each line the server writes to stdout is appended to
the server log, and each line the client writes to the client log, so that the
validator can tell which request each response answers and which revision was
negotiated. The server's stderr goes to --server-stderr if given (appended),
else it is inherited.

When the client closes the tap's stdin, the tap closes the server's stdin and
waits for the server to exit; the tap exits with the server's exit status.
SIGTERM/SIGINT/SIGHUP are forwarded to the server. So that a test run never
leaves a server behind, a server still running 10 s after its stdin closed,
or 3 s after a forwarded signal, is sent SIGTERM and then SIGKILL (and the
tap says so on stderr). With --pid-file, the tap writes its own pid and the
server's there, each with its start time (so a reused pid is not mistaken). Standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from typing import BinaryIO


def _pump(src: BinaryIO, dst: BinaryIO, log: BinaryIO, on_eof) -> None:
    """Copy src to dst line by line, appending each line to log."""
    try:
        while True:
            line = src.readline()
            if not line:
                break
            # Forward first: the capture must never delay the peer.
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, OSError):
                # The reader went away; keep capturing what the source says.
                pass
            try:
                log.write(line if line.endswith(b"\n") else line + b"\n")
            except ValueError:
                break
    finally:
        on_eof()


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks (/proc/PID/stat field 22), to tell a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-log", required=True, help="file that receives every line the server writes")
    parser.add_argument("--client-log", required=True, help="file that receives every line the client writes")
    parser.add_argument("--pid-file", help="file that receives 'PID START_TIME' for the tap and the server")
    parser.add_argument("--server-stderr", help="file that receives the server's stderr (default: inherit)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the server command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no server command given after --")

    for path in (args.server_log, args.client_log):
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
    server_log = open(args.server_log, "ab", buffering=0)
    client_log = open(args.client_log, "ab", buffering=0)

    stderr = open(args.server_stderr, "ab", buffering=0) if args.server_stderr else None
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    except OSError as e:
        print(f"tap: cannot start {command[0]!r}: {e}", file=sys.stderr)
        return 127

    if args.pid_file:
        with open(args.pid_file, "w", encoding="ascii") as f:
            for pid in (os.getpid(), proc.pid):
                f.write(f"{pid} {_start_time(pid)}\n")

    def reap_later(grace: float, why: str) -> None:
        """Make sure the server is gone `grace` seconds from now."""

        def watchdog() -> None:
            try:
                proc.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                pass
            print(f"tap: server still running {grace:g}s after {why}; sending SIGTERM", file=sys.stderr, flush=True)
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                print("tap: server ignored SIGTERM; sending SIGKILL", file=sys.stderr, flush=True)
                proc.kill()

        threading.Thread(target=watchdog, daemon=True).start()

    def forward(signum, _frame):
        if proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                return
            reap_later(3.0, f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)

    def close_server_stdin() -> None:
        try:
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        reap_later(10.0, "its stdin closed")

    def close_client_stdout() -> None:
        try:
            sys.stdout.buffer.flush()
        except (BrokenPipeError, OSError):
            pass

    to_server = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, proc.stdin, client_log, close_server_stdin), daemon=True
    )
    to_client = threading.Thread(
        target=_pump, args=(proc.stdout, sys.stdout.buffer, server_log, close_client_stdout), daemon=True
    )
    to_server.start()
    to_client.start()

    code = proc.wait()
    # The server is gone: drain whatever it wrote before exiting.
    to_client.join(timeout=5)
    try:
        sys.stdout.buffer.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    # Killed by a signal: report it the way a shell would.
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    # os._exit, not sys.exit: the client pump may still be blocked in a read of
    # stdin, and interpreter shutdown would then abort on the stdin buffer lock.
    # Every log write is unbuffered, so nothing is lost.
    os._exit(main())

#!/usr/bin/env python3
"""A transparent HTTP tap between an MCP client and a Streamable HTTP server it starts.

Usage:
    http_tap.py --server-log S.jsonl --client-log C.jsonl --url-file U [--server-stderr E.log]
                [--pid-file P] -- SERVER_CMD [ARGS...]

The HTTP counterpart of tap.py. It starts SERVER_CMD (which must listen on a port of its
own choosing and print `NAME: listening on http://HOST:PORT/PATH` on stderr, as the
example servers do with `--port 0`), then listens on a free loopback port itself and
writes its own endpoint URL (same path) to --url-file once both are up. The client talks
to that URL; every request is forwarded to the server unchanged (method, path, headers,
body; `Host` names the server) and every answer comes back unchanged: JSON bodies whole,
`text/event-stream` bodies byte for byte as they arrive, unbuffered. A client that
closes an event stream closes the server's stream too (a 2026-07-28 client cancels that
way).

Each JSON-RPC message the client POSTs (each element of a batch) is appended to the
client log, each message the server answers with (a JSON body, or the `data` of each SSE
event) to the server log, one per line, so validate.py can check them as it checks
tap.py's captures. Only the MCP endpoint's answers are logged (not JSON served elsewhere,
such as OAuth protected resource metadata), and of a 401/403 only a JSON-RPC body. The server's stderr goes to --server-stderr (appended).

The tap binds its own port before it starts SERVER_CMD, and replaces `{origin}` in each of
its arguments with the tap's `http://127.0.0.1:PORT`: a server that must know the URL its
clients use (an OAuth resource server's resource identifier, `--auth-resource
{origin}/mcp`) is told the tap's.

SIGTERM/SIGINT stop the tap: it stops accepting, sends SIGTERM to the server, waits up to
5 s, then SIGKILL. With --pid-file, the tap writes its own pid and the server's there,
each with its start time (so a reused pid is not mistaken). Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LISTENING = re.compile(rb": listening on (http://[^\s]+)")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection", "host"}


class Capture:
    """Appends JSON-RPC messages, one per line, to the two logs (thread-safe)."""

    def __init__(self, server_log: str, client_log: str) -> None:
        self.server = open(server_log, "ab", buffering=0)
        self.client = open(client_log, "ab", buffering=0)
        self.lock = threading.Lock()

    def log(self, which: str, body: bytes) -> None:
        try:
            value = json.loads(body)
        except ValueError:
            return  # not JSON-RPC: nothing to validate (an error page, an empty body)
        items = value if isinstance(value, list) else [value]
        out = self.server if which == "server" else self.client
        with self.lock:
            for item in items:
                out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")


class SseSplitter:
    """Feeds SSE bytes, yields the data of each complete event."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self.buffer += chunk.replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self.buffer:
            block, self.buffer = self.buffer.split(b"\n\n", 1)
            data = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
            if data and b"".join(data).strip():
                events.append(b"\n".join(data))
        return events


def make_handler(upstream: urllib.parse.SplitResult, capture: Capture):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
            pass  # quiet: the captures are the record

        def do_POST(self) -> None:
            self.forward()

        def do_GET(self) -> None:
            self.forward()

        def do_DELETE(self) -> None:
            self.forward()

        def forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.command == "POST" and body:
                capture.log("client", body)
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=None)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Host"] = upstream.netloc
            try:
                conn.request(self.command, self.path, body=body or None, headers=headers)
                response = conn.getresponse()
            except OSError as e:
                self.send_error(502, f"tap: the server is unreachable: {e}")
                return
            content_type = response.getheader("Content-Type", "")
            if content_type.startswith("text/event-stream"):
                self.stream(conn, response)
                return
            data = response.read()
            conn.close()
            if data and self.is_mcp_answer(response.status, data):
                capture.log("server", data)
            self.send_response_only(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def is_mcp_answer(self, status: int, data: bytes) -> bool:
            """Whether a JSON body is an MCP message to validate: only answers from the MCP
            endpoint (not the OAuth metadata at `/.well-known/...`), and of a 401 or 403 (an
            authorization challenge) only a JSON-RPC body."""
            if urllib.parse.urlsplit(self.path).path != upstream.path:
                return False
            if status in (401, 403):
                try:
                    value = json.loads(data)
                except ValueError:
                    return False
                items = value if isinstance(value, list) else [value]
                return all(isinstance(item, dict) and "jsonrpc" in item for item in items)
            return True

        def stream(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
            """Copies an event stream as it arrives, then closes the client connection."""
            self.close_connection = True
            self.send_response_only(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            done = threading.Event()

            def watch_client() -> None:
                # The client closing its end is how a stream is cancelled: close the
                # server's stream too, which unblocks the copy below.
                while not done.is_set():
                    readable, _, _ = select.select([self.connection], [], [], 0.2)
                    if readable:
                        try:
                            if self.connection.recv(1, socket.MSG_PEEK) == b"":
                                break
                        except OSError:
                            break
                        done.wait(0.2)  # data from the client mid-stream: unexpected, keep copying
                if not done.is_set() and conn.sock is not None:
                    try:
                        conn.sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

            watcher = threading.Thread(target=watch_client, daemon=True)
            watcher.start()
            splitter = SseSplitter()
            try:
                while True:
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    for data in splitter.feed(chunk):
                        capture.log("server", data)
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (OSError, http.client.HTTPException):
                pass
            finally:
                done.set()
                conn.close()

    return Handler


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-log", required=True)
    parser.add_argument("--client-log", required=True)
    parser.add_argument("--url-file", required=True, help="file that receives the tap's endpoint URL once ready")
    parser.add_argument("--server-stderr", help="file that receives the server's stderr (default: discarded)")
    parser.add_argument("--pid-file")
    parser.add_argument("--ready-timeout", type=float, default=60.0)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the server command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no server command given after --")
    for path in (args.server_log, args.client_log, args.url_file):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    # Bound now (connections wait in the backlog until it serves), so the server command can
    # be told the tap's address; the handler is set once the server's address is known.
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    httpd.daemon_threads = True
    origin = f"http://127.0.0.1:{httpd.server_address[1]}"
    command = [arg.replace("{origin}", origin) for arg in command]

    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as e:
        print(f"http_tap: cannot start {command[0]!r}: {e}", file=sys.stderr)
        return 127
    if args.pid_file:
        with open(args.pid_file, "w", encoding="ascii") as f:
            for pid in (os.getpid(), proc.pid):
                f.write(f"{pid} {_start_time(pid)}\n")
    stderr_log = open(args.server_stderr, "ab", buffering=0) if args.server_stderr else None

    found: list[str] = []
    ready = threading.Event()

    def pump_stderr() -> None:
        for line in proc.stderr:
            if stderr_log is not None:
                stderr_log.write(line)
            if not found and (m := LISTENING.search(line)):
                found.append(m.group(1).decode())
                ready.set()
        ready.set()  # the server's stderr ended: it exited

    threading.Thread(target=pump_stderr, daemon=True).start()

    def stop_server() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                print("http_tap: server ignored SIGTERM; sending SIGKILL", file=sys.stderr, flush=True)
                proc.kill()
                proc.wait()

    if not ready.wait(args.ready_timeout) or not found:
        print(f"http_tap: the server did not say where it listens (exit status {proc.poll()})", file=sys.stderr)
        stop_server()
        return 1
    upstream = urllib.parse.urlsplit(found[0])
    capture = Capture(args.server_log, args.client_log)
    httpd.RequestHandlerClass = make_handler(upstream, capture)
    url = f"{origin}{upstream.path}"

    def on_signal(signum, _frame) -> None:
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    with open(args.url_file + ".tmp", "w", encoding="ascii") as f:
        f.write(url + "\n")
    os.replace(args.url_file + ".tmp", args.url_file)  # atomic: a reader never sees half a URL
    try:
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        stop_server()
    code = proc.returncode
    return 128 - code if code is not None and code < 0 else (code or 0)


if __name__ == "__main__":
    os._exit(main())

#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/seed-*.

Seeds come from the official schema examples (tests/fixtures/spec/2026-07-28/examples,
the messages and params the spec itself shows), the e2e captures of the official Python
and TypeScript SDKs' traffic (one message per distinct shape), plus a few hand-written
cases per target for what neither shows (other revisions' shapes, malformed input, edges).
Each seed is laid out as its target's body reads it (crates/arbor-fuzz: a mode byte,
cut points, JSON envelopes). Rerunning it rewrites only seed-* files; what the fuzzer
adds (other names) is kept. Not a fuzzer, and not run by CI: the corpora are committed.
"""
import glob, hashlib, json, os, struct, sys

ROOT = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(ROOT, "..", "tests", "fixtures", "spec", "2026-07-28", "examples")
# MethodName::ALL, in order: typed_request's params mode picks a method by its index.
METHODS = """initialize ping server/discover tools/list tools/call resources/list resources/templates/list
resources/read resources/subscribe resources/unsubscribe subscriptions/listen prompts/list prompts/get
completion/complete logging/setLevel sampling/createMessage roots/list elicitation/create tasks/get tasks/result
tasks/list tasks/cancel tasks/update notifications/initialized notifications/cancelled notifications/progress
notifications/message notifications/resources/updated notifications/resources/list_changed
notifications/tools/list_changed notifications/prompts/list_changed notifications/roots/list_changed
notifications/elicitation/complete notifications/tasks/status notifications/tasks
notifications/subscriptions/acknowledged""".split()

def examples(kind=None):
    out = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "*", "*.json"))):
        name = os.path.basename(os.path.dirname(path))
        if kind is None or name == kind or (callable(kind) and kind(name)):
            with open(path) as f:
                out.append((name, json.load(f)))
    return out

def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()

corpora = {}

def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    corpora.setdefault(target, []).append(data)

messages = [v for _, v in examples() if isinstance(v, dict) and "jsonrpc" in v]
requests = [m for m in messages if "method" in m and "id" in m]

# jsonrpc_frame: every example message, a batch, older revisions' shapes, malformed ones.
for m in messages:
    add("jsonrpc_frame", compact(m))
add("jsonrpc_frame", compact(requests[:2]))
for raw in [
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":2,"method":"ping"}',
    '{"jsonrpc":"2.0","id":3,"method":"nope"}',
    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":7}}',
    '{"jsonrpc":"2.0","id":5,"result":{}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
    '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]',
    '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', '{"jsonrpc":"2.0",', '[]', '{}', 'null',
    '{"method":"tools/list","id":"a","jsonrpc":"2.0","params":{"cursor":"c"}}',
    '{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}',
]:
    add("jsonrpc_frame", raw)

# oversized_id: request frames with the prefix cut at a few points.
for m in requests[:12] + [json.loads('{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}')]:
    frame = compact(m)
    for cut in (len(frame), 40, 12):
        add("oversized_id", struct.pack("<H", min(cut, len(frame))) + frame)
add("oversized_id", struct.pack("<H", 60) + b'{"id":"a\\"b","method":"x","params":{"id":9}}')

# frame_reader: cap byte, four read sizes, then a stream.
stream = b"\r\n".join(compact(m) for m in requests[:3]) + b"\n\n  \n" + compact(requests[0])
add("frame_reader", bytes([63, 3, 7, 1, 31]) + stream)
add("frame_reader", bytes([8, 1, 2, 3, 4]) + b"short\nthis line is far too long\r\n\nok\nlast-without-newline")
add("frame_reader", bytes([0, 5, 5, 5, 5]) + b"\n\na\nbb\n \r\n")

# typed_request: whole frames (mode < 0x80) and params by method (mode >= 0x80).
for m in messages:
    add("typed_request", b"\x00" + compact(m))
for m in messages:
    if m.get("method") in METHODS and "params" in m:
        add("typed_request", bytes([0x80, METHODS.index(m["method"])]) + compact(m["params"]))
for i in range(len(METHODS)):
    add("typed_request", bytes([0x80, i]) + b"{}")

# www_authenticate
for raw in [
    'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write"',
    'Bearer error="insufficient_scope", scope="a b", error_description="need \\"a\\""',
    'Bearer realm="mcp", error="invalid_token", DPoP algs="ES256 RS256"',
    'Basic realm=x, Bearer', 'Bearer resource_metadata=https://x.example/meta', 'Bearer ,, , realm="a\\\\b"',
    'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"', 'Bearer a="unterminated',
]:
    add("www_authenticate", raw)

# client_sse: streams (mode < 0x80: split size) and server events (mode >= 0x80).
for raw in [
    b": keep-alive\r\nid: 1\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: endpoint\ndata: /x\n\nid: 7\ndata:\n\ndata:{}\n\n",
    b"id: 3-0\nretry: 1500\ndata: \n\nid: 3-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
    b"retry: soon\nid: a\x00b\ndata: x\n\nid\ndata\n\n",
]:
    for mode in (0, 5, 15):
        add("client_sse", bytes([mode]) + raw)
for m in messages[:6]:
    add("client_sse", b"\x83" + struct.pack("<QQ", 3, 17) + compact(m))
add("client_sse", b"\x80" + struct.pack("<QQ", 2**64 - 1, 0) + b'"line\\nbreak\\r"')

# event_id
for raw in ["3-17", " 0-0 ", "18446744073709551615-18446744073709551615", "x-1", "1-", "-1", "+5-3", "1-2-3", "7"]:
    add("event_id", raw)

# header_codec
for raw in ["us-west1", "=?base64?SGVsbG8=?=", "=?base64?SGVsbG8?=", "Hello, \u4e16\u754c", " lead", "trail ",
            "42", "true", "\"quoted\"", "tab\there", "", "=?base64??=", "line\nbreak", "1e20"]:
    add("header_codec", raw)

# x_mcp_header: tools with annotated arguments, and the examples' tools.
schema = {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "count": {"type": "integer", "x-mcp-header": "Count"},
    "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
    "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}}}
for args in [{"region": "us-west1", "count": 3, "dry": True, "nested": {"zone": "b"}},
             {"region": " \u00e9t\u00e9 ", "count": -9007199254740993}, {"region": "=?base64?eA==?="},
             {"count": 42.0}, {"region": None}, {}]:
    add("x_mcp_header", compact({"name": "deploy", "inputSchema": schema, "arguments": args}))
for _, tool in examples("Tool"):
    add("x_mcp_header", compact({"name": tool.get("name", "t"), "inputSchema": tool.get("inputSchema"), "arguments": {}}))

# elicitation_url
for raw in ["https://example.com/oauth/authorize?state=1\nhttps://example.com", "https://user:pw@example.com/",
            "http://example.com/", "https://xn--e1afmkfd.xn--p1ai/", "https://\u0440\u0443.example/\nhttps://example.com",
            "https:///nohost", "javascript:alert(1)", "https://[::1]:8443/a#f\nhttps://[::1]:8443"]:
    add("elicitation_url", raw)
for _, v in examples("ElicitRequestURLParams"):
    add("elicitation_url", v.get("url", ""))

# roots
for raw in ["file:///home/me/project", "file:///home/me/a/../b/./c", "file:///home/me/%2e%2e/x", "file://localhost/srv/data",
            "file:///C:/work/x", "file:///tmp/x?q=1#f", "file://fileserver/share", "https://example.com/repo",
            "/home/me/project", "file:///%2E%2e/etc", "file:////double", "file:///a/%2e%2E/..%2f"]:
    add("roots", raw)
for _, v in examples("Root"):
    add("roots", v.get("uri", ""))

# elicitation_schema
answers = [v for _, v in examples("ElicitResult")] + [{"action": "decline", "content": {"x": 1}}, {"action": "accept"}]
for _, params in examples("ElicitRequestFormParams"):
    for a in answers:
        add("elicitation_schema", compact({"schema": params["requestedSchema"], "answer": a}))
for name in ("StringSchema", "NumberSchema", "BooleanSchema", "TitledSingleSelectEnumSchema",
             "UntitledSingleSelectEnumSchema", "TitledMultiSelectEnumSchema", "UntitledMultiSelectEnumSchema"):
    for _, field in examples(name):
        add("elicitation_schema", compact({"schema": {"type": "object", "properties": {"f": field}, "required": ["f"]},
                                           "answer": {"action": "accept", "content": {"f": "x"}}}))

# log_sanitiser
for _, v in examples("LoggingMessageNotificationParams"):
    add("log_sanitiser", compact(v))
deep = "x"
for _ in range(20):
    deep = [deep]
add("log_sanitiser", compact({"level": "error", "logger": "db\u001b[31m", "data": {"k\u202e": deep}, "extra": 1}))
add("log_sanitiser", compact({"level": "loud", "data": "a\u2028b\r\n" + "z" * 5000}))

# request_state: 0 forged tokens, 1 re-signed payloads, 2 seal/open round trips.
for raw in [b"", b"e30.AAAA", b"not-a-token", b"eyJ2IjoyfQ.c2ln", b"..", b"e30"]:
    add("request_state", b"\x00" + raw)
responses = [v for _, v in examples("InputResponses")]
for payload in [{}, {"d": {"x": 1}}, {"d": None}, {"v": 1}, {"m": "prompts/get"}, {"x": 0}, {"k": {"r": "roots"}, "d": [1]},
                {"k": {"github_login": "elicit"}}]:
    add("request_state", b"\x01" + compact({"payload": payload, "responses": responses[0] if responses else {}}))
add("request_state", b"\x01" + compact({"payload": {}, "responses": {"r": {"roots": []}}}))
for case in [{"subject": "deploy", "arguments": {"b": 1, "a": {"y": [1, 2], "x": "s"}}, "state": {"step": 2}, "principal": "alice"},
             {"subject": "", "arguments": {}, "state": None},
             {"subject": "\u00e9", "arguments": {"n": 1.5, "big": 18446744073709551615}, "state": "s"}]:
    add("request_state", b"\x02" + compact(case))

# The official SDKs' own traffic: every distinct message shape the e2e runs captured
# (tests/e2e/run.sh writes tests/e2e/captures/<scenario>/{client,server}.jsonl: the
# Python and TypeScript SDKs' frames and our answers to them), into the two decoders' corpora.
# Skipped with a note when there are no captures (run tests/e2e/run.sh first).
CAPTURES = os.environ.get("ARBOR_CAPTURES", os.path.join(ROOT, "..", "tests", "e2e", "captures"))
captured = sorted(glob.glob(os.path.join(CAPTURES, "*", "client.jsonl")) + glob.glob(os.path.join(CAPTURES, "*", "server.jsonl")))
if not captured:
    print(f"no e2e captures under {CAPTURES}: their seeds are left out", file=sys.stderr)
shapes = set()
for path in captured:
    side = os.path.basename(path).split(".")[0]
    with open(path) as f:
        for line in f:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if not isinstance(m, dict):
                continue
            body = m.get("params", m.get("result", m.get("error")))
            keys = tuple(sorted(body)) if isinstance(body, dict) else ()
            meta = tuple(sorted(body.get("_meta", {}))) if isinstance(body, dict) and isinstance(body.get("_meta"), dict) else ()
            shape = (side, m.get("method", "result" if "result" in m else "error"), keys, meta, "id" in m)
            if shape in shapes:
                continue
            shapes.add(shape)
            add("jsonrpc_frame", compact(m))
            add("typed_request", b"\x00" + compact(m))

total = 0
for target, seeds in corpora.items():
    d = os.path.join(ROOT, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for old in glob.glob(os.path.join(d, "seed-*")):
        os.remove(old)
    for data in seeds:
        name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        total += 1
print(f"{total} seeds in {len(corpora)} corpora", file=sys.stderr)

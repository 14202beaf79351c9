#!/usr/bin/env python3
"""Validate every message an MCP server sent, as captured by tap.py, against the spec schema.

Usage:
    validate.py [--schemas DIR] CAPTURE_DIR [CAPTURE_DIR ...]

Each CAPTURE_DIR holds `server.jsonl` (every line the server wrote to stdout)
and `client.jsonl` (every line the client wrote to the server's stdin). The
schemas are the vendored `DIR/<revision>/schema.json` files (draft-07
`definitions` up to 2025-06-18, 2020-12 `$defs` from 2025-11-25).

Which revision a message is checked against:
  * A response answers the client request with the same id (the k-th response
    for an id answers the k-th request with that id). If that request carries
    `params._meta["io.modelcontextprotocol/protocolVersion"]` (the 2026-07-28
    per-request envelope, including the `server/discover` probe), its version
    is used; otherwise the version the server answered `initialize` with.
  * Notifications and server-to-client requests use the version negotiated by
    `initialize` if there was one, else the latest modern version requested.

What is checked:
  * responses: the JSON-RPC result envelope, and the `result` against the
    result type of the answered method (`tools/call` -> CallToolResult, ...;
    in 2026-07-28 `resultType: "input_required"` -> InputRequiredResult; a
    task-augmented `tools/call` (`params.task`, 2025-11-25) -> CreateTaskResult);
  * error responses: JSONRPCError (<= 2025-06-18) or JSONRPCErrorResponse
    (>= 2025-11-25), and the specific error type when the schema defines one
    for that code (e.g. -32022 UnsupportedProtocolVersionError);
  * notifications: the notification type whose `method` matches, which must
    be in the revision's ServerNotification union;
  * server-to-client requests: the request type whose `method` matches, which
    must be in the revision's ServerRequest union (2026-07-28 has none);
  * a few protocol rules the schema cannot express: every response answers a
    request the client sent, at most once; in 2026-07-28 `resultType` is
    "complete" or "input_required", input_required only for tools/call,
    prompts/get and resources/read, with inputRequests or requestState, and
    no input request needing a client capability the request did not declare.

Prints one line per invalid message, a count per capture and in total, and
exits 1 if any message is invalid or a capture holds no server message.

With --selftest, the folders are the validator's own test captures
(selftest/valid-*: must pass; selftest/invalid-*: every line must be flagged).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import specification_with

DEFAULT_SCHEMAS = Path(__file__).resolve().parent.parent / "fixtures" / "spec"
MODERN = ("2026-07-28",)
LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
MRTR_METHODS = ("tools/call", "prompts/get", "resources/read")

RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "subscriptions/listen": "SubscriptionsListenResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "logging/setLevel": "EmptyResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
}

# The capability an embedded MRTR input request needs the client to have declared.
INPUT_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class Schema:
    """One revision's schema.json, with lookups by definition, method and error code."""

    def __init__(self, revision: str, path: Path) -> None:
        self.revision = revision
        self.document = json.loads(path.read_text(encoding="utf-8"))
        self.defs_key = "$defs" if "$defs" in self.document else "definitions"
        self.defs: dict[str, Any] = self.document[self.defs_key]
        self.uri = f"urn:mcp-schema:{revision}"
        validator_cls = jsonschema.validators.validator_for(self.document)
        validator_cls.check_schema(self.document)
        self.validator_cls = validator_cls
        resource = Resource(contents=self.document, specification=specification_with(self.document["$schema"]))
        self.registry: Registry = Registry().with_resource(self.uri, resource)
        self._validators: dict[str, Any] = {}
        self.server_requests = self._methods_of("ServerRequest")
        self.server_notifications = self._methods_of("ServerNotification")
        self.by_method: dict[str, str] = {}
        for name, definition in self.defs.items():
            const = ((definition.get("properties") or {}).get("method") or {}).get("const")
            if isinstance(const, str) and (name.endswith("Request") or name.endswith("Notification")):
                self.by_method.setdefault(const, name)
        self.error_defs = self._error_defs()

    def _methods_of(self, union: str) -> dict[str, str]:
        """method -> definition name for each member of a union such as ServerNotification."""
        definition = self.defs.get(union)
        if definition is None:
            return {}
        out = {}
        for member in definition.get("anyOf", []):
            name = member["$ref"].rsplit("/", 1)[-1]
            const = self.defs[name]["properties"]["method"]["const"]
            out[const] = name
        return out

    def _error_defs(self) -> dict[int, tuple[str, str]]:
        """code -> (definition, 'response' | 'error') for error types the schema pins to one code."""
        out: dict[int, tuple[str, str]] = {}
        for name, definition in self.defs.items():
            props = definition.get("properties") or {}
            if "error" in props and "jsonrpc" in props:
                for part in props["error"].get("allOf", []):
                    code = ((part.get("properties") or {}).get("code") or {}).get("const")
                    if isinstance(code, int):
                        out[code] = (name, "response")
            else:
                code = (props.get("code") or {}).get("const")
                if isinstance(code, int):
                    out.setdefault(code, (name, "error"))
        return out

    def has(self, name: str) -> bool:
        return name in self.defs

    def errors(self, instance: Any, name: str, prefix: str = "") -> list[str]:
        """Schema errors of instance against definition `name`, most relevant first."""
        validator = self._validators.get(name)
        if validator is None:
            ref = {"$schema": self.document["$schema"], "$ref": f"{self.uri}#/{self.defs_key}/{name}"}
            validator = self.validator_cls(ref, registry=self.registry)
            self._validators[name] = validator
        found = sorted(validator.iter_errors(instance), key=lambda e: jsonschema.exceptions.relevance(e), reverse=True)
        return [_describe(e, prefix) for e in found[:3]]


def _describe(error: jsonschema.ValidationError, prefix: str = "") -> str:
    where = "/".join([prefix] * bool(prefix) + [str(p) for p in error.absolute_path]) or "(root)"
    best = jsonschema.exceptions.best_match([error])
    message = best.message if best is not None else error.message
    if len(message) > 300:
        message = message[:300] + "..."
    return f"at {where}: {message}"


@dataclass
class ClientRequest:
    id: Any
    method: str
    params: dict[str, Any]

    @property
    def version(self) -> str | None:
        meta = self.params.get("_meta") if isinstance(self.params, dict) else None
        value = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        return value if isinstance(value, str) else None

    @property
    def capabilities(self) -> dict[str, Any]:
        meta = self.params.get("_meta") if isinstance(self.params, dict) else None
        value = meta.get(CLIENT_CAPABILITIES_KEY) if isinstance(meta, dict) else None
        return value if isinstance(value, dict) else {}


@dataclass
class Report:
    name: str
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    revisions: set[str] = field(default_factory=set)

    def bad(self, line_no: int, what: str, details: list[str] | str) -> None:
        if isinstance(details, str):
            details = [details]
        self.problems.append(f"{self.name}: server.jsonl line {line_no}: {what}: " + "; ".join(details))


def _read_jsonl(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                yield number, line


def _key(request_id: Any) -> str:
    # Ids keep their type: 1 and "1" are different requests.
    return json.dumps(request_id, sort_keys=True)


def validate_capture(capture: Path, schemas: dict[str, Schema]) -> Report:
    report = Report(capture.name)
    server_path, client_path = capture / "server.jsonl", capture / "client.jsonl"
    if not server_path.exists():
        report.problems.append(f"{report.name}: no server.jsonl in {capture}")
        return report

    # The client's requests, by id, in the order sent.
    pending: dict[str, list[ClientRequest]] = {}
    initialize_ids: set[str] = set()
    initialize_capabilities: dict[str, Any] | None = None
    if client_path.exists():
        for _, line in _read_jsonl(client_path):
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            for item in message if isinstance(message, list) else [message]:
                if isinstance(item, dict) and "method" in item and "id" in item:
                    params = item.get("params") if isinstance(item.get("params"), dict) else {}
                    request = ClientRequest(item["id"], str(item["method"]), params)
                    pending.setdefault(_key(item["id"]), []).append(request)
                    if request.method == "initialize":
                        initialize_ids.add(_key(item["id"]))
                        caps = params.get("capabilities")
                        initialize_capabilities = caps if isinstance(caps, dict) else {}

    server_lines = list(_read_jsonl(server_path))
    parsed: list[tuple[int, Any]] = []
    for number, line in server_lines:
        try:
            parsed.append((number, json.loads(line)))
        except json.JSONDecodeError as e:
            report.checked += 1
            report.bad(number, "not JSON", str(e))

    # The legacy revision, if the server answered an initialize.
    negotiated: str | None = None
    for _, message in parsed:
        if isinstance(message, dict) and _key(message.get("id")) in initialize_ids and isinstance(message.get("result"), dict):
            version = message["result"].get("protocolVersion")
            if isinstance(version, str):
                negotiated = version
                break
    modern_seen = [r.version for rs in pending.values() for r in rs if r.version in MODERN]
    default_revision = negotiated or (modern_seen[-1] if modern_seen else None)

    answered: dict[str, int] = {}
    for number, message in parsed:
        items = message if isinstance(message, list) else [message]
        if isinstance(message, list):
            if default_revision != "2025-03-26":
                report.checked += 1
                report.bad(number, "batch", f"JSON-RPC batches are not allowed in {default_revision}")
                continue
        for item in items:
            report.checked += 1
            _validate_message(
                report, number, item, schemas, pending, answered, negotiated, default_revision, initialize_capabilities
            )
    return report


def _schema_for(revision: str | None, schemas: dict[str, Schema]) -> Schema | None:
    return schemas.get(revision) if revision else None


def _validate_message(
    report: Report,
    number: int,
    message: Any,
    schemas: dict[str, Schema],
    pending: dict[str, list[ClientRequest]],
    answered: dict[str, int],
    negotiated: str | None,
    default_revision: str | None,
    initialize_capabilities: dict[str, Any] | None,
) -> None:
    if not isinstance(message, dict):
        report.bad(number, "not a JSON object", repr(message)[:200])
        return

    if "method" in message:
        method = message.get("method")
        schema = _schema_for(default_revision, schemas)
        if schema is None:
            report.bad(number, f"{method}", f"no negotiated revision with a vendored schema ({default_revision!r})")
            return
        report.revisions.add(schema.revision)
        is_request = "id" in message
        kind = "request" if is_request else "notification"
        union = schema.server_requests if is_request else schema.server_notifications
        envelope = "JSONRPCRequest" if is_request else "JSONRPCNotification"
        problems = schema.errors(message, envelope)
        if method not in union:
            allowed = ", ".join(sorted(union)) or "none"
            problems.append(f"{method!r} is not a server {kind} in {schema.revision} (allowed: {allowed})")
        else:
            problems += schema.errors(message, union[method])
        needed = INPUT_CAPABILITY.get(str(method))
        if is_request and needed is not None and initialize_capabilities is not None:
            if needed not in initialize_capabilities:
                problems.append(f"{method} needs the client capability {needed!r}, not declared in initialize")
            elif method == "elicitation/create":
                problems += _elicitation_mode_rule(message.get("params"), initialize_capabilities, method)
        if problems:
            report.bad(number, f"server {kind} {method} ({schema.revision})", problems)
        return

    if "result" not in message and "error" not in message:
        report.bad(number, "neither request, notification nor response", json.dumps(message)[:200])
        return

    request_id = message.get("id")
    key = _key(request_id)
    requests = pending.get(key, [])
    index = answered.get(key, 0)
    request = requests[index] if index < len(requests) else None
    if request is not None:
        answered[key] = index + 1

    if "error" in message:
        if request is None and request_id is not None:
            report.bad(number, "error response", f"answers no outstanding client request (id {request_id!r})")
        revision = request.version if request is not None and request.version in schemas else None
        if revision is None:
            revision = default_revision or (request.version if request else None)
        if revision not in schemas:
            # An error before any version was agreed (e.g. a bad initialize):
            # hold it to the newest revision the client could have meant.
            revision = MODERN[-1] if request is not None and request.version else LEGACY[-1]
        schema = schemas[revision]
        report.revisions.add(revision)
        envelope = "JSONRPCErrorResponse" if schema.has("JSONRPCErrorResponse") else "JSONRPCError"
        problems = schema.errors(message, envelope)
        code = (message.get("error") or {}).get("code") if isinstance(message.get("error"), dict) else None
        specific = schema.error_defs.get(code) if isinstance(code, int) else None
        if specific is not None:
            name, level = specific
            if level == "response":
                problems += schema.errors(message, name)
            else:
                problems += schema.errors(message.get("error"), name, prefix="error")
        if problems:
            what = f"error response to {request.method if request else '?'} ({revision})"
            report.bad(number, what, problems)
        return

    # A successful response.
    if request is None:
        report.bad(number, "response", f"answers no outstanding client request (id {request_id!r})")
        return
    revision = request.version if request.version in schemas else negotiated
    if request.method == "initialize":
        revision = negotiated
    schema = _schema_for(revision, schemas)
    if schema is None:
        report.bad(number, f"response to {request.method}", f"no vendored schema for revision {revision!r}")
        return
    report.revisions.add(schema.revision)
    what = f"response to {request.method} ({schema.revision})"
    envelope = "JSONRPCResultResponse" if schema.has("JSONRPCResultResponse") else "JSONRPCResponse"
    problems = schema.errors(message, envelope)
    result = message.get("result")
    result_def = RESULT_TYPES.get(request.method)
    if result_def is None or not schema.has(result_def):
        problems.append(f"{request.method!r} has no result type in {schema.revision}")
    else:
        modern = schema.revision in MODERN
        result_type = result.get("resultType") if isinstance(result, dict) else None
        if not modern and request.method == "tools/call" and "task" in request.params and schema.has("CreateTaskResult"):
            # A task-augmented request (2025-11-25 core tasks) is answered with the task, not the result.
            result_def = "CreateTaskResult"
        if modern and result_type == "input_required":
            if request.method not in MRTR_METHODS:
                problems.append(f"input_required is not allowed for {request.method}")
            result_def = "InputRequiredResult"
            problems += _mrtr_rules(result, request)
        elif modern and result_type != "complete":
            problems.append(f"resultType must be 'complete' or 'input_required', got {result_type!r}")
        problems += schema.errors(result, result_def, prefix="result")
    if problems:
        report.bad(number, what, problems)


def _mrtr_rules(result: dict[str, Any], request: ClientRequest) -> list[str]:
    problems = []
    inputs = result.get("inputRequests")
    if inputs is None and "requestState" not in result:
        problems.append("input_required result has neither inputRequests nor requestState")
    if isinstance(inputs, dict):
        declared = request.capabilities
        for key, entry in inputs.items():
            if not isinstance(entry, dict):
                continue
            if "jsonrpc" in entry or "id" in entry:
                problems.append(f"inputRequests[{key!r}] must not carry jsonrpc or id")
            needed = INPUT_CAPABILITY.get(str(entry.get("method")))
            if needed is not None and needed not in declared:
                problems.append(f"inputRequests[{key!r}] needs the undeclared client capability {needed!r}")
            if entry.get("method") == "elicitation/create":
                problems += _elicitation_mode_rule(entry.get("params"), declared, f"inputRequests[{key!r}]")
    return problems


def _elicitation_mode_rule(params: Any, declared: dict[str, Any], where: str) -> list[str]:
    """An elicitation's mode must be one the client declared (a bare `elicitation: {}` means form only)."""
    elicitation = declared.get("elicitation")
    if not isinstance(elicitation, dict):
        return []
    mode = (params or {}).get("mode", "form") if isinstance(params, dict) else "form"
    modes = set(elicitation) & {"form", "url"} or {"form"}
    return [] if mode in modes else [f"{where} uses {mode}-mode elicitation, which the client did not declare"]


def selftest(folders: list[Path], schemas: dict[str, Schema]) -> int:
    """Check the validator itself on hand-made captures.

    A folder named `valid-*` must pass without a problem; in a folder named
    `invalid-*` every line of server.jsonl is a different violation and each
    one must be reported, with the text that `expected.tsv` gives for it.
    """
    failures = 0
    for folder in folders:
        report = validate_capture(folder, schemas)
        flagged = {int(m.group(1)) for p in report.problems if (m := re.search(r"server\.jsonl line (\d+):", p))}
        lines = {n for n, _ in _read_jsonl(folder / "server.jsonl")}
        if folder.name.startswith("invalid-"):
            # expected.tsv: `LINE<TAB>text the report for that line must contain`.
            expected: dict[int, str] = {}
            expected_path = folder / "expected.tsv"
            if expected_path.exists():
                for row in expected_path.read_text(encoding="utf-8").splitlines():
                    if "\t" in row:
                        number, text = row.split("\t", 1)
                        expected[int(number)] = text
            missed = sorted(lines - flagged)
            wrong = [
                n for n, text in sorted(expected.items())
                if not any(f"server.jsonl line {n}:" in p and text in p for p in report.problems)
            ]
            ok = bool(lines) and not missed and not wrong
            what = f"rejects every message of {folder.name} ({len(lines)}) for the expected reason"
            why = f"lines not flagged: {missed}; lines flagged for another reason than expected.tsv says: {wrong}"
        else:
            ok = bool(lines) and not report.problems
            what = f"accepts every message of {folder.name} ({len(lines)})"
            why = "; ".join(report.problems) or "no server message"
        print(f"PASS: validator self-test: {what}" if ok else f"FAIL: validator self-test: {what}: {why}")
        failures += not ok
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description="Validate captured MCP server messages against the spec schemas")
    parser.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS, help="folder of <revision>/schema.json")
    parser.add_argument("--selftest", action="store_true", help="the captures are valid-*/invalid-* test folders")
    parser.add_argument("captures", type=Path, nargs="+", help="capture folders (server.jsonl + client.jsonl)")
    args = parser.parse_args()

    schemas = {}
    for revision in LEGACY + MODERN:
        path = args.schemas / revision / "schema.json"
        if path.exists():
            schemas[revision] = Schema(revision, path)
    if not schemas:
        print(f"validate: no schemas under {args.schemas}", file=sys.stderr)
        return 2
    if args.selftest:
        return selftest(args.captures, schemas)

    total = invalid = 0
    failed_captures = 0
    for capture in args.captures:
        report = validate_capture(capture, schemas)
        for problem in report.problems:
            print(f"INVALID {problem}")
        total += report.checked
        invalid += len(report.problems)
        empty = report.checked == 0
        if empty:
            print(f"INVALID {report.name}: the server sent no message")
        status = "ok" if not report.problems and not empty else "FAILED"
        revisions = ", ".join(sorted(report.revisions)) or "-"
        print(f"validate {report.name}: {report.checked} server messages, {len(report.problems)} invalid [{revisions}] {status}")
        if report.problems or empty:
            failed_captures += 1
    print(f"validate: {total} server messages checked, {invalid} invalid, in {len(args.captures)} captures")
    return 1 if failed_captures else 0


if __name__ == "__main__":
    sys.exit(main())

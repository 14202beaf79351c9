#!/usr/bin/env python3
"""End-to-end driver: the official MCP Python SDK (mcp==2.3.0) against Arbor's demo server.

Usage:
    driver.py --mode legacy|modern [--label NAME] -- SERVER_CMD [ARGS...]
    driver.py --mode legacy|modern [--label NAME] --url URL

SERVER_CMD is launched over real stdio pipes by the SDK's stdio transport
(run.sh passes the tap wrapper around the demo server, so every message is
captured for schema validation). With --url the SDK's Streamable HTTP transport
talks to a running server instead (run.sh passes http_tap.py's URL in front of
`demo_server --port 0`). NAME prefixes every check (default python-MODE).

  legacy  `Client(mode="legacy")`: the initialize handshake (the SDK offers
          2025-11-25), ping, the four lists, echo/add, resources/read of a
          resource and a template, prompts/get, and confirm_delete answered
          through the server's `elicitation/create` request to the client.
  modern  `Client(mode="auto")`: the SDK probes `server/discover` at
          2026-07-28 and adopts it (every request then carries
          `_meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"`);
          the same lists and calls, then confirm_delete as an MRTR round trip,
          once driven by hand (InputRequiredResult -> inputResponses +
          requestState) and once by the SDK's own input-required driver;
          -32022 for an unknown version, -32021 without elicitation.

Both modes also call slow_count (notifications/progress, and debug
notifications/message: legacy after logging/setLevel, 2026-07-28 through the
per-request logLevel opt-in) and summarize (sampling: a server-to-client
sampling/createMessage in legacy, an MRTR input request in 2026-07-28), and
follow the live feed: legacy `resources/subscribe` demo://feed then
notifications/resources/updated after publish_feed (over HTTP on the session's
GET stream); 2026-07-28 `Client.listen(resource_subscriptions=[demo://feed])`
(a subscriptions/listen stream) acknowledged, then a ResourceUpdated event.

Each check prints `PASS: <name>` or `FAIL: <name>: <why>`; the exit status is
non-zero if any check failed or the run broke off.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from typing import Any

from checks import Checks

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError

MODERN_VERSION = "2026-07-28"
LEGACY_OFFER = "2025-11-25"  # what mcp 2.3.0 offers in initialize

ECHO_MESSAGE = "héllo, Arbor ✓ \"quoted\" \\ back\\slash"
DELETE_PATH = "notes/old-draft.txt"
KEEP_PATH = "notes/keep-me.txt"
OTHER_PATH = "notes/precious.txt"

warnings.simplefilter("ignore")  # the SDK flags legacy-only calls (ping) as deprecated


def only_text(result: types.CallToolResult | types.GetPromptResult | Any) -> str | None:
    """The text of a result whose content is exactly one text block, else None."""
    content = getattr(result, "content", None)
    if not isinstance(content, list) or len(content) != 1:
        return None
    block = content[0]
    return block.text if isinstance(block, types.TextContent) else None


def confirm_schema_ok(params: Any) -> tuple[bool, str]:
    """The elicitation confirm_delete must send: a form asking for a boolean `confirm`."""
    if not isinstance(params, types.ElicitRequestFormParams):
        return False, f"expected form-mode params, got {type(params).__name__}"
    schema = params.requested_schema or {}
    confirm = (schema.get("properties") or {}).get("confirm")
    if schema.get("type") != "object" or not isinstance(confirm, dict) or confirm.get("type") != "boolean":
        return False, f"requestedSchema lacks a boolean 'confirm' property: {schema!r}"
    if "confirm" not in (schema.get("required") or []):
        return False, f"'confirm' is not required: {schema!r}"
    return True, ""


class Elicitor:
    """The client's elicitation callback: records each request, answers as told."""

    def __init__(self) -> None:
        self.answer: types.ElicitResult = types.ElicitResult(action="accept", content={"confirm": True})
        self.seen: list[types.ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.seen.append(params)
        return self.answer


SUMMARY = "Arbor is a supervised MCP runtime."
TEXT_TO_SUMMARIZE = "Arbor serves MCP tools, resources and prompts, each request in its own supervised actor."


class Sampler:
    """The client's sampling callback: records each request, answers with a fixed model reply."""

    def __init__(self) -> None:
        self.seen: list[types.CreateMessageRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.seen.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=SUMMARY), model="e2e-model", stop_reason="endTurn"
        )


class LogSink:
    """The client's logging callback: keeps every notifications/message."""

    def __init__(self) -> None:
        self.messages: list[types.LoggingMessageNotificationParams] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.messages.append(params)


async def progress_logging_sampling(c: Checks, client: Client, sampler: Sampler, logs: LogSink) -> None:
    """slow_count reports progress (and debug logs); summarize asks the client's model."""
    steps: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total, message))

    logs.messages.clear()
    result = await client.call_tool("slow_count", {"to": 3, "interval_ms": 10}, progress_callback=on_progress)
    c.equal("tools/call slow_count result", only_text(result), "Counted to 3")
    c.equal(
        "slow_count: progress notifications 1..3 of 3",
        steps,
        [(1.0, 3.0, "Counted 1 of 3"), (2.0, 3.0, "Counted 2 of 3"), (3.0, 3.0, "Counted 3 of 3")],
    )
    counted = [m.data for m in logs.messages if m.logger == "slow_count"]
    c.equal("slow_count: debug log messages", counted, ["counted 1", "counted 2", "counted 3"])

    result = await client.call_tool("summarize", {"text": TEXT_TO_SUMMARIZE})
    c.equal("summarize: the server asked the client's model exactly once", len(sampler.seen), 1)
    if sampler.seen:
        asked = sampler.seen[0]
        first = asked.messages[0].content if asked.messages else None
        c.check(
            "summarize: the sampling request carries the text",
            isinstance(first, types.TextContent) and TEXT_TO_SUMMARIZE in first.text and asked.max_tokens > 0,
            asked,
        )
    c.equal("summarize: result is the model's reply", only_text(result), SUMMARY)


async def common_surface(c: Checks, client: Client) -> None:
    """Lists, calls, reads and gets that behave the same in both eras."""
    tools = await client.list_tools()
    by_name = {t.name: t for t in tools.tools}
    c.check("tools/list names", {"echo", "add", "confirm_delete"} <= set(by_name), sorted(by_name))
    echo = by_name.get("echo")
    if echo is not None:
        props = echo.input_schema.get("properties") or {}
        c.check(
            "echo inputSchema has a required string 'message'",
            echo.input_schema.get("type") == "object"
            and (props.get("message") or {}).get("type") == "string"
            and "message" in (echo.input_schema.get("required") or []),
            echo.input_schema,
        )
    add = by_name.get("add")
    if add is not None:
        props = add.input_schema.get("properties") or {}
        c.check(
            "add inputSchema has numbers 'a' and 'b'",
            all((props.get(k) or {}).get("type") in ("number", "integer") for k in ("a", "b")),
            add.input_schema,
        )
    cd = by_name.get("confirm_delete")
    if cd is not None:
        props = cd.input_schema.get("properties") or {}
        c.check("confirm_delete inputSchema has a string 'path'", (props.get("path") or {}).get("type") == "string", cd.input_schema)

    result = await client.call_tool("echo", {"message": ECHO_MESSAGE})
    c.equal("tools/call echo returns exactly the message", only_text(result), ECHO_MESSAGE)
    c.equal("tools/call echo isError", result.is_error, False)

    result = await client.call_tool("add", {"a": 2, "b": 3})
    text = only_text(result)
    c.check("tools/call add 2+3 = 5", _number(text) == 5, f"got {text!r}")
    result = await client.call_tool("add", {"a": 1.5, "b": -4})
    text = only_text(result)
    c.check("tools/call add 1.5+(-4) = -2.5", _number(text) == -2.5, f"got {text!r}")

    resources = await client.list_resources()
    uris = {r.uri: r for r in resources.resources}
    c.check("resources/list has demo://readme", "demo://readme" in uris, sorted(uris))

    templates = await client.list_resource_templates()
    utemplates = [t.uri_template for t in templates.resource_templates]
    c.check("resources/templates/list has demo://notes/{id}", "demo://notes/{id}" in utemplates, utemplates)

    read = await client.read_resource("demo://readme")
    c.equal("resources/read demo://readme: one content", len(read.contents), 1)
    if read.contents:
        first = read.contents[0]
        c.equal("resources/read demo://readme: uri", first.uri, "demo://readme")
        c.check(
            "resources/read demo://readme: non-empty text",
            isinstance(first, types.TextResourceContents) and first.text.strip() != "",
            first,
        )
        listed = uris.get("demo://readme")
        if listed is not None and listed.mime_type is not None:
            c.equal("resources/read demo://readme: mimeType as listed", first.mime_type, listed.mime_type)

    read = await client.read_resource("demo://notes/42")
    c.equal("resources/read demo://notes/42: one content", len(read.contents), 1)
    if read.contents:
        first = read.contents[0]
        c.equal("resources/read demo://notes/42: uri", first.uri, "demo://notes/42")
        c.check(
            "resources/read demo://notes/42: text names the id",
            isinstance(first, types.TextResourceContents) and "42" in first.text,
            first,
        )

    prompts = await client.list_prompts()
    by_prompt = {p.name: p for p in prompts.prompts}
    greet = by_prompt.get("greet")
    c.check("prompts/list has greet", greet is not None, sorted(by_prompt))
    if greet is not None:
        args = {a.name: a for a in greet.arguments or []}
        c.check("greet takes a 'name' argument", "name" in args, greet.arguments)

    got = await client.get_prompt("greet", {"name": "Ada Lovelace"})
    c.check("prompts/get greet: at least one message", len(got.messages) >= 1, got)
    if got.messages:
        msg = got.messages[0]
        c.equal("prompts/get greet: first message role", msg.role, "user")
        c.check(
            "prompts/get greet: first message is text naming the person",
            isinstance(msg.content, types.TextContent) and "Ada Lovelace" in msg.content.text,
            msg.content,
        )


class Notifications:
    """The client's message handler: keeps every server notification it is given."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def __call__(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.seen.append(getattr(message, "root", message))

    def feed_updates(self) -> int:
        return sum(
            1
            for m in self.seen
            if getattr(m, "method", None) == "notifications/resources/updated"
            and getattr(getattr(m, "params", None), "uri", None) == "demo://feed"
        )


async def read_feed_until(client: Client, text: str) -> str:
    """The feed resource's text once it shows `text` (the server's copy follows the bus), or what it last showed."""
    seen = ""
    for _ in range(20):
        read = await client.read_resource("demo://feed")
        first = read.contents[0] if read.contents else None
        seen = first.text if isinstance(first, types.TextResourceContents) else repr(first)
        if seen == text:
            break
        await anyio.sleep(0.1)
    return seen


async def legacy_feed(c: Checks, client: Client, notes: Notifications) -> None:
    """resources/subscribe demo://feed, then an update for each item published."""
    subscribed = await client.subscribe_resource("demo://feed")
    c.check("resources/subscribe demo://feed answered", isinstance(subscribed, types.EmptyResult), subscribed)
    before = notes.feed_updates()
    published = await client.call_tool("publish_feed", {"text": "legacy item"})
    c.equal("publish_feed result", only_text(published), "Published")
    with anyio.move_on_after(10):
        while notes.feed_updates() == before:
            await anyio.sleep(0.05)
    c.check("notifications/resources/updated for demo://feed after publish_feed", notes.feed_updates() > before, notes.seen[-5:])
    c.equal("resources/read demo://feed shows the item", await read_feed_until(client, "legacy item"), "legacy item")
    unsubscribed = await client.unsubscribe_resource("demo://feed")
    c.check("resources/unsubscribe demo://feed answered", isinstance(unsubscribed, types.EmptyResult), unsubscribed)


async def modern_feed(c: Checks, client: Client) -> None:
    """subscriptions/listen on demo://feed: acknowledged, then a ResourceUpdated per item."""
    async with client.listen(resource_subscriptions=["demo://feed"]) as sub:
        honored = list(sub.honored.resource_subscriptions or [])
        c.equal("subscriptions/listen acknowledged with demo://feed honoured", honored, ["demo://feed"])
        published = await client.call_tool("publish_feed", {"text": "modern item"})
        c.equal("publish_feed result", only_text(published), "Published")
        event = None
        with anyio.move_on_after(10):
            event = await sub.__anext__()
        c.check(
            "subscriptions/listen: ResourceUpdated for demo://feed",
            isinstance(event, ResourceUpdated) and event.uri == "demo://feed",
            event,
        )
    c.equal("resources/read demo://feed shows the item", await read_feed_until(client, "modern item"), "modern item")


def _leaves(e: BaseException) -> list[str]:
    """The innermost exceptions of an exception group, as `Type: message`."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    if isinstance(e, TimeoutError):
        return ["TimeoutError: the scenario did not finish in time"]
    return [f"{type(e).__name__}: {e}"]


def _tamper(state: str) -> str:
    """Change one character in the middle of an opaque state, keeping its alphabet (so it still decodes)."""
    i = len(state) // 2
    ch = state[i]
    if ch.isdigit():
        repl = "1" if ch != "1" else "2"
    elif ch.isalpha():
        repl = ("b" if ch != "b" else "c") if ch.islower() else ("B" if ch != "B" else "C")
    else:
        repl = "A"
    return state[:i] + repl + state[i + 1 :]


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


async def legacy(c: Checks, params: StdioServerParameters | str, timeout: float) -> None:
    elicitor, sampler, logs, notes = Elicitor(), Sampler(), LogSink(), Notifications()
    client_info = types.Implementation(name="arbor-e2e-python", version="2.3.0")
    async with Client(
        params,
        mode="legacy",
        elicitation_callback=elicitor,
        sampling_callback=sampler,
        logging_callback=logs,
        message_handler=notes,
        client_info=client_info,
        read_timeout_seconds=timeout,
        cache=None,
    ) as client:
        c.equal("initialize: negotiated the SDK's offer", client.protocol_version, LEGACY_OFFER)
        c.check("initialize: serverInfo present", client.server_info is not None and bool(client.server_info.name), client.server_info)
        caps = client.server_capabilities
        c.check("initialize: tools capability", caps.tools is not None, caps)
        c.check("initialize: resources capability", caps.resources is not None, caps)
        c.check("initialize: prompts capability", caps.prompts is not None, caps)

        pong = await client.send_ping()
        c.check("ping answered", isinstance(pong, types.EmptyResult), pong)

        await common_surface(c, client)

        # elicitation/create sent by the server while tools/call is in flight
        elicitor.answer = types.ElicitResult(action="accept", content={"confirm": True})
        result = await client.call_tool("confirm_delete", {"path": DELETE_PATH})
        c.equal("confirm_delete (accept): server asked the client exactly once", len(elicitor.seen), 1)
        if elicitor.seen:
            ok, why = confirm_schema_ok(elicitor.seen[0])
            c.check("confirm_delete (accept): form asks for boolean 'confirm'", ok, why)
            c.check("confirm_delete (accept): message names the path", DELETE_PATH in elicitor.seen[0].message, elicitor.seen[0].message)
        c.equal("confirm_delete (accept): result text", only_text(result), f"Deleted {DELETE_PATH}")

        elicitor.seen.clear()
        elicitor.answer = types.ElicitResult(action="decline")
        result = await client.call_tool("confirm_delete", {"path": KEEP_PATH})
        c.equal("confirm_delete (decline): server asked the client exactly once", len(elicitor.seen), 1)
        c.equal("confirm_delete (decline): result text", only_text(result), f"Kept {KEEP_PATH}")

        set_level = await client.set_logging_level("debug")
        c.check("logging/setLevel debug answered", isinstance(set_level, types.EmptyResult), set_level)
        await progress_logging_sampling(c, client, sampler, logs)
        await legacy_feed(c, client, notes)


async def modern(c: Checks, params: StdioServerParameters | str, timeout: float) -> None:
    elicitor, sampler, logs = Elicitor(), Sampler(), LogSink()
    client_info = types.Implementation(name="arbor-e2e-python", version="2.3.0")
    async with Client(
        params,
        mode="auto",  # probe server/discover at 2026-07-28; fall back to initialize only if it fails
        elicitation_callback=elicitor,
        sampling_callback=sampler,
        logging_callback=logs,
        log_level="debug",  # the per-request _meta opt-in to notifications/message
        client_info=client_info,
        read_timeout_seconds=timeout,
        cache=None,
    ) as client:
        session = client.session
        discovered = session.discover_result
        c.check("server/discover answered (no fallback to initialize)", discovered is not None and session.initialize_result is None, "the SDK fell back to the legacy handshake")
        if discovered is None:
            return
        c.equal("modern: negotiated version", client.protocol_version, MODERN_VERSION)
        c.check("discover: supportedVersions includes 2026-07-28", MODERN_VERSION in discovered.supported_versions, discovered.supported_versions)
        c.check("discover: ttlMs >= 0", discovered.ttl_ms >= 0, discovered.ttl_ms)
        c.check("discover: cacheScope", discovered.cache_scope in ("public", "private"), discovered.cache_scope)
        c.check("discover: serverInfo in _meta", client.server_info is not None and bool(client.server_info.name), discovered.meta)
        caps = discovered.capabilities
        c.check("discover: tools/resources/prompts capabilities", None not in (caps.tools, caps.resources, caps.prompts), caps)

        await common_surface(c, client)

        # MRTR by hand: the first tools/call must come back input_required.
        first = await session.call_tool("confirm_delete", {"path": DELETE_PATH}, allow_input_required=True)
        if not c.check("MRTR: first tools/call returns input_required", isinstance(first, types.InputRequiredResult), first):
            return
        requests = first.input_requests or {}
        c.equal("MRTR: exactly one input request", len(requests), 1)
        if not requests:
            return
        key, request = next(iter(requests.items()))
        c.check("MRTR: the input request is elicitation/create", isinstance(request, types.ElicitRequest), request)
        if isinstance(request, types.ElicitRequest):
            ok, why = confirm_schema_ok(request.params)
            c.check("MRTR: form asks for boolean 'confirm'", ok, why)
            c.check("MRTR: message names the path", DELETE_PATH in request.params.message, request.params.message)
        responses: types.InputResponses = {key: types.ElicitResult(action="accept", content={"confirm": True})}
        final = await session.call_tool(
            "confirm_delete",
            {"path": DELETE_PATH},
            input_responses=responses,
            request_state=first.request_state,
            allow_input_required=True,
        )
        c.check("MRTR: the retry completes", isinstance(final, types.CallToolResult), final)
        c.equal("MRTR: result text after accept", only_text(final), f"Deleted {DELETE_PATH}")

        # A retry whose requestState was tampered with must not be honoured.
        if first.request_state is not None:
            tampered = _tamper(first.request_state)
            try:
                bad = await session.call_tool(
                    "confirm_delete",
                    {"path": DELETE_PATH},
                    input_responses=responses,
                    request_state=tampered,
                    allow_input_required=True,
                )
                c.check("MRTR: tampered requestState is not honoured", only_text(bad) != f"Deleted {DELETE_PATH}", bad)
            except MCPError as e:  # an error response is the expected answer
                c.check("MRTR: tampered requestState is rejected", True, e)

        # The user confirmed deleting DELETE_PATH. Replaying that state and answer
        # with another path must not delete it: the spec asks servers to bind
        # requestState to the originating method and a digest of the key params.
        try:
            replayed = await session.call_tool(
                "confirm_delete",
                {"path": OTHER_PATH},
                input_responses=responses,
                request_state=first.request_state,
                allow_input_required=True,
            )
            c.check(
                "MRTR: a confirmation for one path does not delete another",
                only_text(replayed) != f"Deleted {OTHER_PATH}",
                f"replaying the requestState and answer issued for {DELETE_PATH!r} with path {OTHER_PATH!r} "
                f"returned {only_text(replayed)!r}: the state is not bound to the call's arguments",
            )
        except MCPError as e:  # an error response is a fine answer
            c.check("MRTR: a confirmation for one path does not delete another", True, e)

        # MRTR through the SDK's own driver and the elicitation callback.
        elicitor.seen.clear()
        elicitor.answer = types.ElicitResult(action="decline")
        result = await client.call_tool("confirm_delete", {"path": KEEP_PATH})
        c.equal("MRTR via SDK driver: callback asked exactly once", len(elicitor.seen), 1)
        c.equal("MRTR via SDK driver: result text after decline", only_text(result), f"Kept {KEEP_PATH}")

        await progress_logging_sampling(c, client, sampler, logs)
        await modern_feed(c, client)

        # An unknown protocol version: -32022 naming what the server supports.
        try:
            raw = await session.send_discover("2099-01-01")
            c.check("unknown version: server/discover answers -32022", False, f"got a result: {raw!r}")
        except MCPError as e:
            c.equal("unknown version: server/discover answers -32022", e.code, types.UNSUPPORTED_PROTOCOL_VERSION)
            data = e.data if isinstance(e.data, dict) else {}
            c.check(
                "unknown version: error data names the supported and requested versions",
                MODERN_VERSION in (data.get("supported") or []) and data.get("requested") == "2099-01-01",
                e.data,
            )

    # A client that declares no elicitation capability: input the server cannot
    # ask for is refused with -32021 naming the capability, not asked anyway.
    async with Client(
        params,
        mode=MODERN_VERSION,
        prior_discover=discovered,
        client_info=client_info,
        read_timeout_seconds=timeout,
        cache=None,
    ) as bare:
        try:
            result = await bare.session.call_tool("confirm_delete", {"path": DELETE_PATH}, allow_input_required=True)
            c.check("no elicitation capability: confirm_delete answers -32021", False, f"got a result: {result!r}")
        except MCPError as e:
            c.equal("no elicitation capability: confirm_delete answers -32021", e.code, types.MISSING_REQUIRED_CLIENT_CAPABILITY)
            data = e.data if isinstance(e.data, dict) else {}
            c.check(
                "no elicitation capability: error data names elicitation",
                "elicitation" in (data.get("requiredCapabilities") or {}),
                e.data,
            )
        # The connection carries on after the refusal.
        result = await bare.call_tool("echo", {"message": "still here"})
        c.equal("no elicitation capability: the next call is served", only_text(result), "still here")


async def run(mode: str, label: str, server: list[str] | str, timeout: float) -> Checks:
    c = Checks(label)
    params = server if isinstance(server, str) else StdioServerParameters(command=server[0], args=server[1:])
    try:
        with anyio.fail_after(timeout):
            if mode == "legacy":
                await legacy(c, params, timeout)
            else:
                await modern(c, params, timeout)
    except BaseException as e:  # report, do not hide: a crash is a failure of its own
        traceback.print_exception(e, file=sys.stderr)
        c.check("scenario ran to the end", False, "; ".join(_leaves(e)) + " (traceback on stderr)")
    else:
        c.check("scenario ran to the end", True)
    return c


def main() -> int:
    parser = argparse.ArgumentParser(description="MCP Python SDK end-to-end driver")
    parser.add_argument("--mode", choices=("legacy", "modern"), required=True)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the whole scenario")
    parser.add_argument("--label", help="prefix of every check (default python-MODE)")
    parser.add_argument("--url", help="a Streamable HTTP endpoint to talk to instead of launching a command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the server command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(command) == bool(args.url):
        parser.error("give either --url URL or -- SERVER_CMD")
    label = args.label or f"python-{args.mode}"
    c = anyio.run(run, args.mode, label, args.url or command, args.timeout)
    print(f"{label}: {c.passed} checks passed, {c.failed} failed", flush=True)
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

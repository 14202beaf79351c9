"""A small MCP server written with the official Python SDK (mcp 2.3.0, `MCPServer`), for
driving Arbor's client (`examples/client_e2e.rs`) against an independent implementation.

    fixture_server.py --stdio        serve stdin/stdout
    fixture_server.py --http         Streamable HTTP on 127.0.0.1, a port the OS picks;
                                     prints `fixture_server: listening on http://127.0.0.1:PORT/mcp`
                                     on stderr

The SDK serves both eras itself: `initialize` sessions (2025-11-25 and older) and the
2026-07-28 per-request wire (`server/discover`, `input_required` rounds, listen streams).
What it serves, with the exact values the driver asserts:

- tool `add(a, b)`: one text block, the sum (`5.0` for 2 and 3).
- tool `slow(steps)`: `notifications/progress` (i, steps, "step i") and an info log
  `step i` (logger `fixture`) per step, then `done <steps>`.
- tool `confirm(path)`: asks the user through form elicitation (boolean `confirm`) and
  answers `deleted <path>` on accept with confirm true, else `kept <path>`.
- tool `summarize(text)`: asks the client's model (sampling, maxTokens 50) and answers
  `summary: <the model's text>`.
- tool `touch(uri)`: publishes `notifications/resources/updated` for `uri`, answers `touched`.
- resource `fixture://note` (text `a note`), prompt `greet(name)` with completions for
  `name` (names starting with the typed prefix out of ada, alan, grace).

Not a test by itself; `tests/e2e/run.sh` runs the driver, which spawns this.
"""

from __future__ import annotations

import socket
import sys
from typing import Annotated

import anyio
import uvicorn
from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample
from mcp_types import (
    Completion,
    CreateMessageResult,
    PromptReference,
    SamplingMessage,
    TextContent,
)

mcp = MCPServer("arbor-e2e-python-fixture", version="1.0.0")


class Confirm(BaseModel):
    confirm: bool


@mcp.tool(description="Adds two numbers")
def add(a: float, b: float) -> str:
    return str(a + b)


@mcp.tool(description="Counts steps, reporting progress and logging each")
async def slow(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
        await ctx.info(f"step {i}", logger_name="fixture")
        await anyio.sleep(0.01)
    return f"done {steps}"


def ask_confirm(path: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {path}?", Confirm)


@mcp.tool(description="Asks the user to confirm a deletion")
def confirm(path: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
    if answer.action == "accept" and answer.data.confirm:
        return f"deleted {path}"
    return f"kept {path}"


def ask_model(text: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))], max_tokens=50)


@mcp.tool(description="Asks the client's model for a summary")
def summarize(text: str, reply: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    content = reply.content
    said = content.text if isinstance(content, TextContent) else str(content)
    return f"summary: {said}"


@mcp.tool(description="Tells subscribers that a resource changed")
async def touch(uri: str, ctx: Context) -> str:
    await ctx.notify_resource_updated(uri)
    return "touched"


@mcp.resource("fixture://note", description="A note")
def note() -> str:
    return "a note"


@mcp.prompt(description="Greets someone")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@mcp.completion()
async def complete(ref, argument, context):
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        return Completion(values=[n for n in ("ada", "alan", "grace") if n.startswith(argument.value)])
    return None


async def serve_http() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(mcp.streamable_http_app(host="127.0.0.1"), log_level="warning")
    server = uvicorn.Server(config)
    print(f"fixture_server: listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await server.serve(sockets=[sock])


def main() -> None:
    if "--http" in sys.argv[1:]:
        anyio.run(serve_http)
    else:
        mcp.run("stdio")


if __name__ == "__main__":
    main()

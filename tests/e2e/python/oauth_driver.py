#!/usr/bin/env python3
"""End-to-end OAuth driver: the official MCP Python SDK (mcp==2.3.0) obtains a token from a
real authorization server (tests/auth-server, oidc-provider) and calls Arbor's demo server
with it over Streamable HTTP.

Usage:
    oauth_driver.py --flow code|client-credentials --mode legacy|modern --issuer ISSUER
                    --url URL [--client dcr|pre-registered] [--label NAME] [--timeout S]

  --flow code                the SDK's `OAuthClientProvider` (authorization code + PKCE S256).
                             Its redirect handler fetches the authorization URL with an httpx2
                             client that keeps cookies and follows each redirect by hand until
                             the Location is the redirect URI (the authorization server's login
                             and consent complete on their own); its callback handler returns
                             that redirect's `code`, `state` and `iss`. The client is
                             registered dynamically (`--client dcr`, RFC 7591, client_secret_post)
                             or is the pre-registered `client-a` (`--client pre-registered`,
                             client_secret_basic; a loopback redirect URI on any port).
  --flow client-credentials  the SDK's `ClientCredentialsOAuthProvider` as `client-b`.
  --mode legacy              `Client(mode="legacy")`: the initialize handshake.
  --mode modern              `Client(mode="auto")`: server/discover at 2026-07-28.

The SDK does discovery itself from the server's first 401: `WWW-Authenticate`
`resource_metadata` -> the protected resource metadata -> the authorization server's
metadata (RFC 8414 first) -> registration -> token (with `resource`). Every HTTP exchange
(MCP and OAuth) goes through a recording httpx2 transport, and the checks read that record:
the first MCP request was a 401 naming `resource_metadata`, a token came from the
authorization server (a JWT for the MCP URL from ISSUER), every later MCP request carried it
and none was refused, tools/list lists echo and tools/call echo answers.

Each check prints `PASS: <name>` or `FAIL: <name>: <why>`; the exit status is non-zero if any
check failed or the run broke off.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
import sys
import traceback
import warnings
from typing import Any

from checks import Checks
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

MODERN_VERSION = "2026-07-28"
LEGACY_OFFER = "2025-11-25"
ECHO_MESSAGE = "héllo through OAuth ✓ \"quoted\" \\ back\\slash"
# Nothing listens here: the redirect handler stops at this Location and reads the code from it.
REDIRECT_URI = "http://127.0.0.1:33418/callback"

warnings.simplefilter("ignore")  # deprecation notices (e.g. legacy-only calls) are not failures


class Exchange:
    def __init__(self, method: str, url: str, authorized: bool, status: int, www_authenticate: str | None) -> None:
        self.method = method
        self.url = url
        self.authorized = authorized
        self.status = status
        self.www_authenticate = www_authenticate

    def __repr__(self) -> str:
        auth = " (Bearer)" if self.authorized else ""
        return f"{self.method} {self.url}{auth} -> {self.status}"


class Recorder(httpx2.AsyncBaseTransport):
    """Forwards to the default transport and records each exchange (never a token's value)."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.log: list[Exchange] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        authorization = request.headers.get("authorization", "")
        self.log.append(
            Exchange(
                request.method,
                str(request.url),
                authorization.lower().startswith("bearer "),
                response.status_code,
                response.headers.get("www-authenticate"),
            )
        )
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class MemoryStorage:
    """The SDK's TokenStorage, in memory; remembers the tokens it was given."""

    def __init__(self, client_info: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info = client_info
        self.saved_tokens = 0

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.saved_tokens += 1

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class AutoConsent:
    """The redirect and callback handlers: a user agent that follows the authorization server's
    redirects (login, consent: both automatic there) with its cookies until it is sent to
    REDIRECT_URI, and hands back what that redirect carries."""

    def __init__(self) -> None:
        self.hops: list[str] = []
        self.result: AuthorizationCodeResult | None = None
        self.error: str | None = None
        self.authorization_url: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        self.authorization_url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as agent:
            url = authorization_url
            for _ in range(12):
                response = await agent.get(url)
                self.hops.append(f"{urlsplit(url).path} -> {response.status_code}")
                if response.status_code not in (301, 302, 303, 307, 308):
                    self.error = f"{url} answered {response.status_code}: {response.text[:300]}"
                    return
                location = urljoin(url, response.headers["location"])
                if location.startswith(REDIRECT_URI):
                    query = parse_qs(urlsplit(location).query)
                    if "error" in query:
                        self.error = f"the authorization server redirected with an error: {query}"
                        return
                    first = lambda k: query.get(k, [None])[0]  # noqa: E731
                    self.result = AuthorizationCodeResult(code=first("code") or "", state=first("state"), iss=first("iss"))
                    return
                url = location
            self.error = f"no redirect to {REDIRECT_URI} after {len(self.hops)} hops: {self.hops}"

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError(f"authorization did not complete: {self.error}")
        return self.result


def jwt_payload(token: str) -> dict[str, Any]:
    try:
        part = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (IndexError, ValueError) as e:
        return {"error": f"not a JWT: {e}"}


def only_text(result: Any) -> str | None:
    content = getattr(result, "content", None) or []
    if len(content) == 1 and isinstance(content[0], types.TextContent):
        return content[0].text
    return None


def same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


async def run(args: argparse.Namespace, c: Checks) -> None:
    recorder = Recorder()
    consent = AutoConsent()
    if args.flow == "client-credentials":
        storage = MemoryStorage()
        provider: OAuthClientProvider = ClientCredentialsOAuthProvider(
            server_url=args.url,
            storage=storage,
            client_id="client-b",
            client_secret="secret-b",
            issuer=args.issuer,
        )
        expected_client, expected_sub = "client-b", "client-b"
    else:
        metadata = OAuthClientMetadata(
            client_name=f"arbor-e2e-{args.label}",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post" if args.client == "dcr" else "client_secret_basic",
        )
        if args.client == "pre-registered":
            storage = MemoryStorage(
                OAuthClientInformationFull(
                    client_id="client-a",
                    client_secret="secret-a",
                    redirect_uris=[REDIRECT_URI],
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"],
                    token_endpoint_auth_method="client_secret_basic",
                )
            )
            expected_client = "client-a"
        else:
            storage = MemoryStorage()
            expected_client = None  # whatever the registration minted
        expected_sub = "alice"
        provider = OAuthClientProvider(
            server_url=args.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=consent.redirect,
            callback_handler=consent.callback,
        )

    http = httpx2.AsyncClient(transport=recorder, auth=provider, timeout=httpx2.Timeout(30, read=300))
    mode = "legacy" if args.mode == "legacy" else "auto"
    async with http:
        async with Client(
            streamable_http_client(args.url, http_client=http),
            mode=mode,
            client_info=types.Implementation(name=f"arbor-e2e-{args.label}", version="2.3.0"),
            read_timeout_seconds=args.timeout,
            cache=None,
        ) as client:
            if args.mode == "legacy":
                c.equal("initialize: negotiated the SDK's offer", client.protocol_version, LEGACY_OFFER)
            else:
                session = client.session
                c.check(
                    "server/discover answered (no fallback to initialize)",
                    session.discover_result is not None and session.initialize_result is None,
                    "the SDK fell back to the legacy handshake",
                )
                c.equal("modern: negotiated version", client.protocol_version, MODERN_VERSION)

            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            c.check("tools/list lists echo", "echo" in names, names)
            result = await client.call_tool("echo", {"message": ECHO_MESSAGE})
            c.equal("tools/call echo answered with the token", only_text(result), ECHO_MESSAGE)
            first_token = storage.tokens.access_token if storage.tokens else None

            if args.flow == "code":
                # The refresh grant: the token is made to look expired, so the SDK's next
                # request first refreshes it at the token endpoint.
                c.check("a refresh token was issued", bool(storage.tokens and storage.tokens.refresh_token), storage.tokens and storage.tokens.scope)
                provider.context.token_expiry_time = time.time() - 1
                result = await client.call_tool("echo", {"message": "after refresh"})
                c.equal("tools/call echo answered after a refresh", only_text(result), "after refresh")
                refreshed = storage.tokens.access_token if storage.tokens else None
                c.check("the refresh grant gave a new access token", storage.saved_tokens >= 2 and refreshed != first_token, storage.saved_tokens)
                c.equal("refreshed token: aud is the MCP endpoint", jwt_payload(refreshed or "").get("aud"), args.url)

    log = recorder.log
    mcp = [e for e in log if same_url(e.url.split("?")[0], args.url)]
    if not c.check("the client spoke to the MCP endpoint", bool(mcp), log):
        return
    first = mcp[0]
    c.check(
        "first MCP request: 401 with WWW-Authenticate naming resource_metadata",
        first.status == 401 and not first.authorized and "resource_metadata=" in (first.www_authenticate or ""),
        f"{first!r}, WWW-Authenticate: {first.www_authenticate!r}",
    )
    prm = [e for e in log if "/.well-known/oauth-protected-resource" in e.url]
    c.check("protected resource metadata fetched (200)", any(e.status == 200 for e in prm), prm or log)
    asm = [e for e in log if e.url.startswith(args.issuer) and "/.well-known/" in e.url]
    c.check("authorization server metadata fetched from the issuer (200)", any(e.status == 200 for e in asm), asm or log)
    if args.flow == "code":
        if args.client == "dcr":
            reg = [e for e in log if e.url.startswith(args.issuer) and e.method == "POST" and urlsplit(e.url).path == "/reg"]
            c.check("dynamic client registration (201)", any(e.status == 201 for e in reg), reg or log)
        c.check(
            "authorization: login and consent completed, redirected with a code",
            consent.result is not None and bool(consent.result.code),
            consent.error or consent.hops,
        )
        auth_url = urlsplit(consent.authorization_url or "")
        query = parse_qs(auth_url.query)
        c.check(
            "authorization request: PKCE S256 and the resource",
            query.get("code_challenge_method") == ["S256"] and "code_challenge" in query and "resource" in query,
            {k: v for k, v in query.items() if k != "state"},
        )
        c.equal("authorization response: iss is the issuer (RFC 9207)", consent.result.iss if consent.result else None, args.issuer)
    token_requests = [e for e in log if e.url == f"{args.issuer}/token" and e.method == "POST"]
    c.check("token request answered 200", any(e.status == 200 for e in token_requests), token_requests or log)
    token = storage.tokens.access_token if storage.tokens else None
    if c.check("a token was obtained", bool(token), "the storage holds no token"):
        claims = jwt_payload(token)
        c.equal("token: iss is the authorization server", claims.get("iss"), args.issuer)
        c.equal("token: aud is the MCP endpoint (RFC 8707 resource)", claims.get("aud"), args.url)
        c.check("token: scope carries mcp:tools", "mcp:tools" in str(claims.get("scope", "")).split(), claims.get("scope"))
        if expected_client is not None:
            c.equal("token: client_id", claims.get("client_id"), expected_client)
        c.equal("token: sub", claims.get("sub"), expected_sub)
    after = mcp[1:]
    c.check("every later MCP request carried the token", bool(after) and all(e.authorized for e in after), after)
    c.check("no MCP request with the token was refused", all(e.status not in (401, 403) for e in after if e.authorized), after)


def main() -> int:
    parser = argparse.ArgumentParser(description="MCP Python SDK OAuth end-to-end driver")
    parser.add_argument("--flow", choices=("code", "client-credentials"), required=True)
    parser.add_argument("--mode", choices=("legacy", "modern"), required=True)
    parser.add_argument("--client", choices=("dcr", "pre-registered"), default="dcr")
    parser.add_argument("--issuer", required=True, help="the authorization server's issuer URL")
    parser.add_argument("--url", required=True, help="the MCP endpoint")
    parser.add_argument("--label")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    args.label = args.label or f"python-http-oauth-{args.mode}"
    c = Checks(args.label)

    async def body() -> None:
        with anyio.fail_after(args.timeout):
            await run(args, c)

    try:
        anyio.run(body)
    except BaseException as e:  # report, do not hide: a crash is a failure of its own
        traceback.print_exception(e, file=sys.stderr)
        c.check("scenario ran to the end", False, f"{type(e).__name__}: {e} (traceback on stderr)")
    else:
        c.check("scenario ran to the end", True)
    print(f"{args.label}: {c.passed} checks passed, {c.failed} failed", flush=True)
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env node
// End-to-end OAuth driver: the official MCP TypeScript SDK client (@modelcontextprotocol/sdk
// 1.32.2) obtains a token from a real authorization server (tests/auth-server, oidc-provider)
// and calls Arbor's demo server with it over Streamable HTTP, legacy era.
//
// Usage: node oauth_driver.mjs --flow code|client-credentials --issuer ISSUER --url URL
//                              [--label NAME] [--timeout SECONDS]
//
//   --flow code                StreamableHTTPClientTransport with an `authProvider`
//                              (OAuthClientProvider): on the first 401 the SDK discovers
//                              (resource_metadata -> protected resource metadata -> RFC 8414
//                              metadata), registers dynamically (RFC 7591) and calls
//                              redirectToAuthorization(url). Ours plays the user agent: it
//                              fetches that URL and follows each redirect by hand with its
//                              cookies (login and consent complete on their own at the
//                              authorization server) until the Location is the redirect URI,
//                              and keeps that redirect's code. The transport then throws
//                              UnauthorizedError (the SDK's documented flow); the driver calls
//                              transport.finishAuth(code) (token request, PKCE verifier,
//                              resource) and connects again on a new transport.
//   --flow client-credentials  the SDK's ClientCredentialsProvider
//                              (@modelcontextprotocol/sdk/client/auth-extensions.js) as client-a,
//                              scope mcp:tools given to it (1.32.2 does not use the challenged
//                              scope for this grant): the token request happens inside the first
//                              401's handling.
//
// Every HTTP exchange goes through the transport's `fetch` option, which records it; the checks
// read that record: the first MCP request was a 401 naming resource_metadata, a token came from
// the authorization server (a JWT for the MCP URL from ISSUER), every later MCP request carried
// it and none was refused, tools/list lists echo and tools/call echo answers.
//
// Each check prints `PASS: <name>` or `FAIL: <name>: <why>`; the exit status is non-zero if any
// check failed or the run broke off.

import { randomBytes } from 'node:crypto';

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { check, checks, equal, finish } from './checks.mjs';

const ECHO_MESSAGE = 'héllo through OAuth from TypeScript ✓ "quoted" \\ back\\slash';
// Nothing listens here: the user agent stops at this Location and reads the code from it.
const REDIRECT_URI = 'http://127.0.0.1:33419/callback';

checks.prefix = 'typescript-http-oauth';

function parseArgs(argv) {
  const out = { timeout: 60 };
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i];
    const value = () => argv[(i += 1)];
    if (key === '--flow') out.flow = value();
    else if (key === '--issuer') out.issuer = value();
    else if (key === '--url') out.url = value();
    else if (key === '--label') out.label = value();
    else if (key === '--timeout') out.timeout = Number(value());
    else throw new Error(`unknown argument ${key}`);
  }
  if (!['code', 'client-credentials'].includes(out.flow) || !out.issuer || !out.url) {
    throw new Error('usage: oauth_driver.mjs --flow code|client-credentials --issuer ISSUER --url URL [--label NAME] [--timeout S]');
  }
  return out;
}

function jwtPayload(token) {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
  } catch (e) {
    return { error: `not a JWT: ${e.message}` };
  }
}

function onlyText(result) {
  const content = result?.content ?? [];
  return content.length === 1 && content[0].type === 'text' ? content[0].text : undefined;
}

const sameUrl = (a, b) => a.replace(/\/$/, '') === b.replace(/\/$/, '');

// A `fetch` that records every exchange (method, URL, whether a Bearer token went, status,
// WWW-Authenticate), never a token's value.
function recordingFetch(log) {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const response = await fetch(input, init);
    log.push({
      method,
      url,
      authorized: (headers.get('authorization') ?? '').toLowerCase().startsWith('bearer '),
      status: response.status,
      wwwAuthenticate: response.headers.get('www-authenticate'),
    });
    return response;
  };
}

// The user agent: follows the authorization server's redirects with its cookies (a small jar:
// name, value, path) until it is sent to REDIRECT_URI.
async function followToCallback(authorizationUrl) {
  const jar = new Map();
  const hops = [];
  let url = authorizationUrl;
  for (let i = 0; i < 12; i += 1) {
    const path = new URL(url).pathname;
    const cookie = [...jar.values()].filter((c) => path.startsWith(c.path)).map((c) => `${c.name}=${c.value}`).join('; ');
    const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    hops.push(`${path} -> ${response.status}`);
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const attr = Object.fromEntries(attrs.map((a) => { const [k, ...v] = a.split('='); return [k.toLowerCase(), v.join('=')]; }));
      const cookiePath = attr.path || '/';
      const key = `${name} ${cookiePath}`;
      const expired = attr['max-age'] === '0' || (attr.expires && Date.parse(attr.expires) <= Date.now());
      if (expired || value === '') jar.delete(key);
      else jar.set(key, { name, value, path: cookiePath });
    }
    if (![301, 302, 303, 307, 308].includes(response.status)) {
      return { error: `${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`, hops };
    }
    await response.body?.cancel();
    const location = new URL(response.headers.get('location'), url).href;
    if (location.startsWith(REDIRECT_URI)) {
      const query = new URL(location).searchParams;
      if (query.get('error')) return { error: `redirected with ${query.get('error')}: ${query.get('error_description')}`, hops };
      return { code: query.get('code'), state: query.get('state'), iss: query.get('iss'), hops };
    }
    url = location;
  }
  return { error: `no redirect to ${REDIRECT_URI}`, hops };
}

// OAuthClientProvider for the authorization code flow, in memory.
class AutoConsentProvider {
  constructor() {
    this._state = randomBytes(16).toString('base64url');
    this.savedTokens = 0;
  }

  get redirectUrl() {
    return REDIRECT_URI;
  }

  get clientMetadata() {
    return {
      client_name: `arbor-e2e-${checks.prefix}`,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      application_type: 'native',
    };
  }

  state() {
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(info) {
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
    this.savedTokens += 1;
  }

  async redirectToAuthorization(authorizationUrl) {
    this.authorizationUrl = authorizationUrl;
    this.callback = await followToCallback(authorizationUrl.href);
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    return this._verifier;
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  checks.prefix = args.label ?? `typescript-http-oauth-${args.flow}`;
  const timer = setTimeout(() => {
    check('scenario finished in time', false, `still running after ${args.timeout}s`);
    process.exit(1);
  }, args.timeout * 1000);

  const log = [];
  const fetchFn = recordingFetch(log);
  const url = new URL(args.url);
  const provider = args.flow === 'code'
    ? new AutoConsentProvider()
    // `scope` must be given: for client credentials the SDK sends only the constructor's
    // scope, not the one the 401 challenged (the code flow uses the challenge's).
    : new ClientCredentialsProvider({ clientId: 'client-a', clientSecret: 'secret-a', expectedIssuer: args.issuer, clientName: checks.prefix, scope: 'mcp:tools' });
  const client = new Client({ name: `arbor-e2e-${checks.prefix}`, version: '1.32.2' }, { capabilities: {} });

  let transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: fetchFn });
  if (args.flow === 'code') {
    let redirected = false;
    try {
      await client.connect(transport);
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) throw e;
      redirected = true;
    }
    check('the SDK sent the user to the authorization endpoint (UnauthorizedError)', redirected, 'connect succeeded without authorization');
    const cb = provider.callback ?? { error: 'redirectToAuthorization was never called' };
    check('authorization: login and consent completed, redirected with a code', Boolean(cb.code), cb.error ?? cb.hops);
    const query = provider.authorizationUrl?.searchParams;
    check(
      'authorization request: PKCE S256 and the resource',
      query?.get('code_challenge_method') === 'S256' && Boolean(query?.get('code_challenge')) && Boolean(query?.get('resource')),
      query ? Object.fromEntries([...query].filter(([k]) => k !== 'state')) : 'no authorization URL',
    );
    equal('authorization response: state echoed', cb.state, provider.state());
    equal('authorization response: iss is the issuer (RFC 9207)', cb.iss, args.issuer);
    if (!cb.code) throw new Error('no authorization code');
    await transport.finishAuth(cb.code);
    await transport.close().catch(() => {});
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: fetchFn });
    await client.connect(transport);
  } else {
    await client.connect(transport);
  }

  equal('initialize: negotiated the SDK offer', transport.protocolVersion, LATEST_PROTOCOL_VERSION);
  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name);
  check('tools/list lists echo', names.includes('echo'), names);
  const result = await client.callTool({ name: 'echo', arguments: { message: ECHO_MESSAGE } });
  equal('tools/call echo answered with the token', onlyText(result), ECHO_MESSAGE);
  await transport.terminateSession().catch(() => {});
  await client.close();

  const mcp = log.filter((e) => sameUrl(e.url.split('?')[0], args.url));
  if (check('the client spoke to the MCP endpoint', mcp.length > 0, log)) {
    const first = mcp[0];
    check(
      'first MCP request: 401 with WWW-Authenticate naming resource_metadata',
      first.status === 401 && !first.authorized && (first.wwwAuthenticate ?? '').includes('resource_metadata='),
      first,
    );
    const after = mcp.slice(1).filter((e) => e.authorized || e.status !== 401);
    check('every later MCP request carried the token', after.length > 0 && after.every((e) => e.authorized), mcp);
    check('no MCP request with the token was refused', after.every((e) => ![401, 403].includes(e.status)), after);
  }
  const prm = log.filter((e) => e.url.includes('/.well-known/oauth-protected-resource'));
  check('protected resource metadata fetched (200)', prm.some((e) => e.status === 200), prm.length ? prm : log);
  const asm = log.filter((e) => e.url.startsWith(args.issuer) && e.url.includes('/.well-known/'));
  check('authorization server metadata fetched from the issuer (200)', asm.some((e) => e.status === 200), asm.length ? asm : log);
  if (args.flow === 'code') {
    const reg = log.filter((e) => e.method === 'POST' && e.url === `${args.issuer}/reg`);
    check('dynamic client registration (201)', reg.some((e) => e.status === 201), reg.length ? reg : log);
  }
  const tokenRequests = log.filter((e) => e.method === 'POST' && e.url === `${args.issuer}/token`);
  check('token request answered 200', tokenRequests.some((e) => e.status === 200), tokenRequests.length ? tokenRequests : log);
  const token = (await provider.tokens())?.access_token;
  if (check('a token was obtained', Boolean(token), 'the provider holds no token')) {
    const claims = jwtPayload(token);
    equal('token: iss is the authorization server', claims.iss, args.issuer);
    equal('token: aud is the MCP endpoint (RFC 8707 resource)', claims.aud, args.url);
    check('token: scope carries mcp:tools', String(claims.scope ?? '').split(' ').includes('mcp:tools'), claims.scope);
    if (args.flow === 'code') {
      equal('token: sub', claims.sub, 'alice');
      equal('token: client_id is the registered client', claims.client_id, provider.clientInformation()?.client_id);
    } else {
      equal('token: sub', claims.sub, 'client-a');
      equal('token: client_id', claims.client_id, 'client-a');
    }
  }
  clearTimeout(timer);
}

try {
  await main();
  check('scenario ran to the end', true);
} catch (e) {
  console.error(e);
  check('scenario ran to the end', false, `${e?.name ?? 'Error'}: ${e?.message ?? e} (stack on stderr)`);
}
finish();

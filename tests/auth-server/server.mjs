// A real OAuth 2.1 / OpenID authorization server for Arbor's tests: oidc-provider (a
// certified OpenID Provider), configured here and nothing more. No token, code or
// discovery answer is written by this file: oidc-provider issues and checks them all.
// What this file adds around it:
//   - an automatic login + consent interaction (no human in a test), account `alice`
//     unless the authorization request carries `login_hint`;
//   - RFC 8414 `/.well-known/oauth-authorization-server`, answered by oidc-provider's own
//     discovery route (the request is re-pathed to `/.well-known/openid-configuration`);
//   - admin routes for tests under `/__admin/` (key rotation, a JWKS outage, the private
//     signing keys, a JWKS request counter). See README.md.
//
//   node server.mjs [--port N]
//
// Listens on 127.0.0.1 (port 0, the default, picks a free one), prints
// `AUTH_SERVER: listening on http://127.0.0.1:PORT` on stdout once it serves; that URL is
// the issuer. Stops on SIGTERM, SIGINT, and when its stdin (a pipe or a terminal) closes.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

import Provider, { errors } from 'oidc-provider';

// ---------------------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const out = { port: 0 };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--port') {
      out.port = Number(argv[(i += 1)]);
    } else if (arg.startsWith('--port=')) {
      out.port = Number(arg.slice('--port='.length));
    } else if (arg === '-h' || arg === '--help') {
      process.stdout.write('usage: node server.mjs [--port N]\n');
      process.exit(0);
    } else {
      process.stderr.write(`server.mjs: unknown argument ${arg}\n`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(out.port) || out.port < 0 || out.port > 65535) {
    process.stderr.write('server.mjs: --port needs an integer 0..65535\n');
    process.exit(2);
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------------------------------
// Storage shared by every Provider instance (a key change builds a new instance; clients
// registered, sessions, grants, codes and refresh tokens survive it).

const store = new Map(); // key -> { value, expiresAt }

function live(key) {
  const entry = store.get(key);
  if (!entry) return undefined;
  if (entry.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
    store.delete(key);
    return undefined;
  }
  return entry.value;
}

class SharedAdapter {
  constructor(name) {
    this.name = name;
  }

  key(id) {
    return `${this.name}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : undefined;
    store.set(this.key(id), { value: payload, expiresAt });
    if (payload.grantId) {
      const grantKey = `grant:${payload.grantId}`;
      const members = live(grantKey) ?? new Set();
      members.add(this.key(id));
      store.set(grantKey, { value: members, expiresAt: undefined });
    }
    if (payload.userCode) store.set(`userCode:${payload.userCode}`, { value: id, expiresAt });
    if (payload.uid) store.set(`sessionUid:${payload.uid}`, { value: id, expiresAt });
  }

  async find(id) {
    return live(this.key(id));
  }

  async findByUserCode(userCode) {
    const id = live(`userCode:${userCode}`);
    return id === undefined ? undefined : this.find(id);
  }

  async findByUid(uid) {
    const id = live(`sessionUid:${uid}`);
    return id === undefined ? undefined : this.find(id);
  }

  async consume(id) {
    const value = live(this.key(id));
    if (value) value.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    store.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    const grantKey = `grant:${grantId}`;
    for (const member of live(grantKey) ?? []) store.delete(member);
    store.delete(grantKey);
  }
}

// ---------------------------------------------------------------------------------------
// Signing keys: one RS256 (the default for access tokens and ID tokens) and one ES256 per
// generation; a rotation puts a new generation first and keeps the old ones in the JWKS.

let keyGeneration = 0;

function newKey(alg) {
  const { privateKey } = alg === 'ES256'
    ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = `${alg.toLowerCase()}-${keyGeneration}-${crypto.randomBytes(4).toString('hex')}`;
  return {
    kid,
    alg,
    jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' },
    pem: privateKey.export({ type: 'pkcs8', format: 'pem' }),
  };
}

function newGeneration() {
  keyGeneration += 1;
  return [newKey('RS256'), newKey('ES256')];
}

let signingKeys = newGeneration(); // first = the ones new tokens are signed with

// ---------------------------------------------------------------------------------------
// Accounts, clients, resource servers

const RESOURCE_SCOPES = ['mcp:tools', 'mcp:read', 'mcp:write', 'files:read', 'files:write'];
// A resource indicator we accept: any loopback origin, any path (RFC 8707 absolute URI).
const LOOPBACK_RESOURCE = /^http:\/\/(127\.0\.0\.1|localhost)(:\d{1,5})?(\/[^#]*)?$/;
const ACCESS_TOKEN_ALGS = ['RS256', 'ES256'];

const loopbackCallbacks = ['http://127.0.0.1/callback', 'http://localhost/callback'];
const preRegistered = (id, secret, method, extra = {}) => ({
  client_id: id,
  client_secret: secret,
  client_name: id,
  // native: RFC 8252 loopback redirect URIs, any port (oidc-provider ignores the port of a
  // loopback redirect URI for native clients only).
  application_type: 'native',
  grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
  response_types: ['code'],
  redirect_uris: loopbackCallbacks,
  token_endpoint_auth_method: method,
  ...extra,
});

function configuration() {
  return {
    adapter: SharedAdapter,
    jwks: { keys: signingKeys.map((k) => k.jwk) },
    cookies: { keys: ['arbor-test-auth-server-cookie-key'] },
    clients: [
      // oidc-provider binds each client to one token endpoint auth method, so the
      // client_secret_post client is a third one.
      preRegistered('client-a', 'secret-a', 'client_secret_basic'),
      preRegistered('client-b', 'secret-b', 'client_secret_basic'),
      preRegistered('client-post', 'secret-post', 'client_secret_post'),
      // Opaque access tokens (for RFC 7662 introspection: oidc-provider refuses to
      // introspect its JWT access tokens).
      preRegistered('client-opaque', 'secret-opaque', 'client_secret_basic', { access_token_format: 'opaque' }),
    ],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      id_token_signed_response_alg: 'RS256',
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    // Two client metadata of ours: `access_token_signed_response_alg` (RS256, the
    // default, or ES256) picks the algorithm of its JWT access tokens, and
    // `access_token_format` (`jwt`, the default, or `opaque`) their format.
    extraClientMetadata: {
      properties: ['access_token_signed_response_alg', 'access_token_format'],
      validator(ctx, key, value) {
        if (key === 'access_token_signed_response_alg' && value !== undefined && !ACCESS_TOKEN_ALGS.includes(value)) {
          throw new errors.InvalidClientMetadata(`access_token_signed_response_alg must be one of ${ACCESS_TOKEN_ALGS.join(', ')}`);
        }
        if (key === 'access_token_format' && value !== undefined && !['jwt', 'opaque'].includes(value)) {
          throw new errors.InvalidClientMetadata('access_token_format must be jwt or opaque');
        }
      },
    },
    responseTypes: ['code'],
    // The resource scopes are listed too: dynamic registration checks a client's `scope`
    // metadata against this list (the MCP SDKs register with the challenged scope).
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES],
    claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
    async findAccount(ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, name: id, email: `${id}@example.test` };
        },
      };
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      // Open dynamic client registration (RFC 7591), as MCP clients expect.
      registration: { enabled: true, initialAccessToken: false },
      resourceIndicators: {
        enabled: true,
        // A request without `resource` gets the one resource the grant holds (an
        // authorization code or refresh token asked for at the authorization endpoint).
        defaultResource(ctx, client, oneOf) {
          return oneOf?.length ? oneOf[0] : undefined;
        },
        useGrantedResource() {
          return true;
        },
        getResourceServerInfo(ctx, resourceIndicator, client) {
          if (!LOOPBACK_RESOURCE.test(resourceIndicator)) {
            throw new errors.InvalidTarget(`resource ${resourceIndicator} is not a loopback URL`);
          }
          const alg = client?.['access_token_signed_response_alg'] ?? 'RS256';
          const format = client?.['access_token_format'] ?? 'jwt';
          return {
            scope: RESOURCE_SCOPES.join(' '),
            audience: resourceIndicator,
            accessTokenTTL: accessTokenTtl,
            accessTokenFormat: format,
            ...(format === 'jwt' ? { jwt: { sign: { alg } } } : {}),
          };
        },
      },
    },
    pkce: { required: () => true }, // S256 is the only method oidc-provider 9 offers
    // Refresh tokens for any client allowed the grant, without `offline_access`.
    issueRefreshToken(ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    interactions: {
      url(ctx, interaction) {
        return `/interaction/${interaction.uid}`;
      },
    },
    ttl: {
      AccessToken: () => accessTokenTtl,
      AuthorizationCode: 60,
      ClientCredentials: () => accessTokenTtl,
      IdToken: 3600,
      RefreshToken: 24 * 3600,
      Interaction: 600,
      Session: 24 * 3600,
      Grant: 24 * 3600,
    },
    async renderError(ctx, out) {
      ctx.type = 'json';
      ctx.body = out;
    },
  };
}

// ---------------------------------------------------------------------------------------
// The HTTP front: admin routes, RFC 8414 discovery, the interaction, then oidc-provider.

let issuer; // set once listening
let provider;
let providerHandler;
let jwksDown = false;
let jwksMaxAge; // seconds, or undefined: no Cache-Control on the JWKS (oidc-provider sends none)
let jwksRequests = 0;

function buildProvider() {
  const next = new Provider(issuer, configuration());
  next.on('server_error', (ctx, err) => process.stderr.write(`AUTH_SERVER: server_error: ${err.stack}\n`));
  provider = next;
  providerHandler = next.callback();
}

function sendJson(res, status, body) {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), 'cache-control': 'no-store' });
  res.end(data);
}

const isLoopback = (addr) => addr === '127.0.0.1' || addr === '::1' || addr === '::ffff:127.0.0.1';

// Seconds an access token for a resource lives (`POST /__admin/token-ttl?seconds=N`), so a
// test can watch a client refresh one.
let accessTokenTtl = 3600;

function admin(req, res, url) {
  if (!isLoopback(req.socket.remoteAddress)) return sendJson(res, 403, { error: 'admin routes are loopback only' });
  const route = url.pathname.slice('/__admin/'.length);
  const method = req.method;
  if (route === 'rotate' && method === 'POST') {
    const dropOld = url.searchParams.get('drop_old') === '1';
    signingKeys = dropOld ? newGeneration() : [...newGeneration(), ...signingKeys];
    buildProvider();
    return sendJson(res, 200, { kids: signingKeys.map((k) => k.kid) });
  }
  if (route === 'jwks' && method === 'POST') {
    const down = url.searchParams.get('down');
    const maxAge = url.searchParams.get('max_age');
    if (down === null && maxAge === null) return sendJson(res, 400, { error: 'down=0|1 and/or max_age=SECONDS|none' });
    if (down !== null) {
      if (down !== '0' && down !== '1') return sendJson(res, 400, { error: 'down=0 or down=1' });
      jwksDown = down === '1';
    }
    if (maxAge !== null) {
      if (maxAge !== 'none' && !/^\d+$/.test(maxAge)) return sendJson(res, 400, { error: 'max_age=SECONDS or max_age=none' });
      jwksMaxAge = maxAge === 'none' ? undefined : Number(maxAge);
    }
    return sendJson(res, 200, { down: jwksDown, max_age: jwksMaxAge ?? null });
  }
  if (route === 'token-ttl' && method === 'POST') {
    const seconds = url.searchParams.get('seconds');
    if (!/^\d+$/.test(seconds ?? '') || Number(seconds) < 1) return sendJson(res, 400, { error: 'seconds=N (N >= 1)' });
    accessTokenTtl = Number(seconds);
    return sendJson(res, 200, { seconds: accessTokenTtl });
  }
  if (route === 'keys' && method === 'GET') {
    return sendJson(res, 200, signingKeys.map(({ kid, alg, pem }) => ({ kid, alg, pem })));
  }
  if (route === 'stats' && method === 'GET') {
    return sendJson(res, 200, { jwks_requests: jwksRequests });
  }
  return sendJson(res, 404, { error: `no admin route ${method} /__admin/${route}` });
}

// Login, then consent, each completed at once: the account is `login_hint` or `alice`;
// the grant gets every scope and resource the request asked for and is still missing.
async function interaction(req, res) {
  const current = provider;
  try {
    const details = await current.interactionDetails(req, res);
    const { prompt, params, session } = details;
    if (prompt.name === 'login') {
      const accountId = typeof params.login_hint === 'string' && params.login_hint ? params.login_hint : 'alice';
      await current.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
      return;
    }
    if (prompt.name === 'consent') {
      const missing = prompt.details;
      const grant = details.grantId
        ? await current.Grant.find(details.grantId)
        : new current.Grant({ accountId: session.accountId, clientId: params.client_id });
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      if (missing.missingResourceScopes) {
        for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
          grant.addResourceScope(indicator, scopes.join(' '));
        }
      }
      const grantId = await grant.save();
      await current.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    sendJson(res, 400, { error: `unexpected interaction prompt ${prompt.name}` });
  } catch (err) {
    process.stderr.write(`AUTH_SERVER: interaction failed: ${err.stack}\n`);
    if (!res.headersSent) sendJson(res, 400, { error: 'interaction_failed', error_description: String(err.message) });
  }
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, issuer ?? 'http://127.0.0.1');
  if (url.pathname.startsWith('/__admin/')) return admin(req, res, url);
  if (url.pathname.startsWith('/interaction/')) return interaction(req, res);
  if (url.pathname === '/jwks' && req.method === 'GET') {
    jwksRequests += 1;
    if (jwksDown) return sendJson(res, 503, { error: 'temporarily_unavailable', error_description: 'JWKS down (test)' });
    if (jwksMaxAge !== undefined) res.setHeader('cache-control', `public, max-age=${jwksMaxAge}`);
  }
  if (url.pathname === '/.well-known/oauth-authorization-server') {
    req.url = `/.well-known/openid-configuration${url.search}`;
  }
  return providerHandler(req, res);
});

function shutdown() {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}

process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
// A harness that dies closes our stdin: stop with it. Only a pipe, socket or terminal is
// watched (a background job's /dev/null would end at once).
try {
  const st = fs.fstatSync(0);
  if (st.isFIFO() || st.isSocket() || process.stdin.isTTY) {
    process.stdin.on('end', shutdown);
    process.stdin.on('close', shutdown);
    process.stdin.on('error', shutdown);
    process.stdin.resume();
  }
} catch {
  // no stdin at all
}

server.listen(args.port, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  buildProvider();
  process.stdout.write(`AUTH_SERVER: listening on ${issuer}\n`);
});

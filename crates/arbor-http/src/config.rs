//! [`HttpConfig`]: where the endpoint listens and the limits it enforces.
//!
//! Plain data read once when an [`HttpServer`](crate::HttpServer) is built; nothing here
//! acts. It is not the server's own configuration (`arbor_server::ServerConfig` holds the
//! in-flight bounds, deadlines and revisions); only what HTTP adds.
//!
//! Invariant: every limit has a safe default (loopback bind, loopback-only `Host` names,
//! no cross-origin access, a body cap, a nesting cap, bounded sessions and event buffers),
//! so `HttpConfig::default()` is fit to face a browser on the same machine.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use arbor_server::ConnectOptions;
use axum::http::request::Parts;
use axum::http::HeaderName;

use crate::auth::AuthConfig;
use crate::cluster::SessionStore;
use crate::health::HealthConfig;
use crate::observer::Observer;

/// [`HttpConfig::idle_timeout`]'s default (and [`serve`](crate::serve)'s).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Picks the tenant and identity of a request from its head (for example from an
/// `Authorization` header already checked by a layer in front). Called once per POST (and
/// 2024-11-05 `GET /sse`) that names no live session, before its body is read, so the
/// tenant's rates and body cap apply to it; a legacy session keeps what its `initialize`
/// got.
pub type TenantHook = Arc<dyn Fn(&Parts) -> ConnectOptions + Send + Sync>;

/// Cross-origin access for browser clients; off unless set.
#[derive(Clone, Debug, Default)]
pub struct CorsConfig {
    /// Exact origins allowed (`https://app.example`); empty allows any origin, which is
    /// only sensible behind authentication.
    pub allow_origins: Vec<String>,
    /// How long a browser may cache a preflight answer.
    pub max_age: Option<Duration>,
}

/// Settings of an [`HttpServer`](crate::HttpServer).
#[derive(Clone)]
pub struct HttpConfig {
    /// Where [`HttpServer::bind`](crate::HttpServer::bind) listens. Default `127.0.0.1:3000`;
    /// port 0 picks a free port.
    pub bind: SocketAddr,
    /// The MCP endpoint's path. Default `/mcp`.
    pub path: String,
    /// `Host` header values accepted (exact, case-insensitive; an entry without a port
    /// accepts that name with any port). Guards against DNS rebinding. `None`: derived
    /// from the address the endpoint is reached at, which is, first found: `mounted_at`;
    /// the listener [`serve`](crate::serve) took the request from; `bind`, once
    /// [`HttpServer::bind`](crate::HttpServer::bind) listens on it. A loopback address
    /// admits the loopback names (`localhost`, `127.0.0.1`, `[::1]`, any port), any other
    /// address (`0.0.0.0` included) no check. A router mounted in a server that tells none
    /// of these (plain `axum::serve`) admits the loopback names only: the safe choice, and
    /// a refused `Host` is then logged once with a hint.
    pub allowed_hosts: Option<Vec<String>>,
    /// For a router mounted in an application of your own ([`HttpServer::router`](crate::HttpServer::router)):
    /// the address the application is reached at (its listener's address), from which the
    /// `Host` policy is derived as from `bind` (see `allowed_hosts`, which wins). `bind` is
    /// only where `HttpServer::bind` listens; a mounted router never reads it. Not needed
    /// when the application is served with [`serve`](crate::serve). Default `None`.
    pub mounted_at: Option<SocketAddr>,
    /// Exact `Origin` values allowed besides loopback origins whose host is allowed.
    /// A request without `Origin` (not from a browser) is not checked.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes; larger ones get 413. Default 4 MiB.
    pub max_body_bytes: usize,
    /// A request's head (request line and headers) must arrive whole within this, from
    /// its first byte (a new connection's first head: from the accept); past it the
    /// connection is closed. Bounds the header slowloris. Default 30 s.
    pub header_read_timeout: Duration,
    /// A keep-alive connection with no exchange in progress for this long is closed (an
    /// open SSE stream is an exchange in progress). Default 120 s: longer than common
    /// clients keep idle pooled connections (reqwest and Go 90 s; Python's httpx and
    /// Node's 4–5 s), because a server that closes first can do so just as the client
    /// sends its next request on that connection, and that request is lost with no
    /// answer. Set it above your clients' and balancer's idle timeouts.
    pub idle_timeout: Duration,
    /// A request body must arrive whole within this after its head; past it the request
    /// gets 408 and the connection is closed. Default 30 s (the header read timeout).
    pub body_read_timeout: Duration,
    /// Bytes per second a request body must keep up: once `body_rate_window` has passed
    /// (and in every window after), a body not yet complete that brought fewer than
    /// `body_min_rate × body_rate_window` bytes in that window gets 408 and its connection
    /// is closed. 0 turns the check off. Default 256 B/s over 5 s windows, so a body that
    /// stalls is cut after 5 s while a slow link still gets its body through.
    pub body_min_rate: u64,
    /// The window of `body_min_rate`, and the grace before its first check. Default 5 s.
    pub body_rate_window: Duration,
    /// Open connections at once; past it a new connection is answered 503 with
    /// `Retry-After` and closed. `None` (default): the soft `RLIMIT_NOFILE` when the server
    /// binds (after `raise_fd_limit`) minus a reserve of a tenth (at least 128) for the
    /// process's other descriptors, so connections alone cannot exhaust them.
    pub max_connections: Option<usize>,
    /// Raise the soft `RLIMIT_NOFILE` to the hard limit when the server binds (Linux). The
    /// low soft default (1,024) only protects programs using `select(2)`; this one uses
    /// epoll, and without raising it the capacity would be about a thousand connections
    /// whatever the administrator allowed. Process-wide; turn off to keep the limit as
    /// set. Default on.
    pub raise_fd_limit: bool,
    /// On shutdown, how long open connections may take to finish their exchange; after it
    /// they are dropped (their requests cancelled) and shutdown goes on, so it ends even
    /// while a client holds a connection or a handler hangs. Default 5 s.
    pub shutdown_grace: Duration,
    /// Deepest JSON nesting accepted in a body (arrays and objects); deeper ones get 400
    /// and -32600 before any parsing. Default 64.
    pub max_json_depth: usize,
    /// A legacy session with no request and no open stream for this long is closed.
    /// Default 10 minutes.
    pub session_idle_timeout: Duration,
    /// Legacy sessions held at once; an `initialize` beyond it gets 503. Default 100,000.
    pub max_sessions: usize,
    /// Legacy sessions (both transports) one peer IP address may hold at once; its next
    /// `initialize` (or 2024-11-05 `GET /sse`) gets 503 with `Retry-After`, while other
    /// peers go on. Loopback clients share 127.0.0.1, so keep it well above what one
    /// machine's tools open. Requests with no peer address (a router mounted without
    /// connect info) are bounded only by the global caps. Default 1,000.
    pub max_sessions_per_peer: usize,
    /// Memory the legacy sessions may take, in bytes, at an estimated 16 KiB each (an idle
    /// session's endpoint, record and standalone stream, measured at about 12.8 KB of
    /// heap, plus room for buffered events): the sessions held at once are at most
    /// `min(max_sessions, budget / 16 KiB)`; beyond that `initialize` gets 503 with
    /// `Retry-After`. Default 512 MiB (32,768 sessions).
    pub session_memory_budget: usize,
    /// After a reap that closed at least 1,024 legacy sessions, ask glibc's allocator to
    /// give its free pages back to the system, once the reaped endpoints have stopped: the
    /// reaper's thread swaps out its malloc thread cache (whose chunks would each keep a
    /// page of the reaped range resident), then `malloc_trim` runs on the blocking pool.
    /// Without it a server that held 10,000 sessions keeps their RSS after reaping
    /// (measured: 143 MiB kept where 1.2 MiB were in use). Turn it off when the process
    /// trims itself or another allocator is in use; no effect off Linux/glibc. Default on.
    pub trim_after_reap: bool,
    /// Events kept per legacy SSE stream for replay after `Last-Event-ID`. Default 64.
    pub event_buffer: usize,
    /// Interval of `:` keep-alive comments on SSE streams. Default 15 s.
    pub keep_alive: Duration,
    /// The `retry` sent in the priming event of a 2025-11-25 POST stream. Default 1 s.
    pub sse_retry: Duration,
    /// How long a POST waits for its response before answering with an SSE stream even
    /// though nothing precedes the response (so keep-alives can flow, and a 2025-11-25
    /// client gets a priming event it can resume from). Measured on a coarse shared clock
    /// (no timer per request): the switch happens between half and all of it. Default 15 s.
    pub json_wait: Duration,
    /// SEP-1699 polling: a 2025-11-25 POST stream still unanswered after this long is
    /// closed by the server (after its priming event); the client comes back with GET and
    /// `Last-Event-ID` after `sse_retry` and the stream resumes. Default off.
    pub sse_polling: Option<Duration>,
    /// Serve the 2024-11-05 HTTP+SSE transport too: `GET {parent}/sse` opens the stream
    /// and sends `event: endpoint` with `{parent}/messages?sessionId=…`, where `{parent}` is
    /// `path` without its last segment (`/mcp` → `/sse` and `/messages`). Default off.
    pub legacy_sse: bool,
    /// Cross-origin access; `None` (default) sends no CORS headers.
    pub cors: Option<CorsConfig>,
    /// Tenant and identity per request; `None` puts everything in the default tenant.
    /// With `auth` on, the tenant comes from the verified principal
    /// ([`AuthConfig::tenant`](crate::auth::AuthConfig#structfield.tenant)) unless this
    /// hook is set too: it then decides, and finds the request's
    /// [`Verified`](crate::auth::Verified) principal in `Parts::extensions`.
    pub tenant: Option<TenantHook>,
    /// **Development only**: the tenant of a request is the value of this header
    /// (`x-arbor-tenant`, say; see [`HttpConfig::tenant_header`](HttpConfig::tenant_header())).
    /// Any client can claim any tenant with it, so it must never face clients you do not
    /// trust: in production the tenant comes from the verified token
    /// ([`AuthConfig::tenant`](crate::auth::AuthConfig::tenant()) with
    /// [`TenantSource::Claim`](crate::auth::TenantSource::Claim)). With `auth` on, the token
    /// wins: the header is not read at all. With a `tenant` hook set, the hook decides and
    /// the header is not read either. `None` (default): no such header.
    pub tenant_header: Option<HeaderName>,
    /// OAuth 2.1 resource server (`crate::auth`): every request of every era must carry a
    /// valid bearer token for this resource, verified before routing; the protected
    /// resource metadata is served. `None` (default): no authentication.
    pub auth: Option<AuthConfig>,
    /// Liveness and readiness probes (`/healthz`, `/readyz`) beside the endpoint, with the
    /// same `Host`/`Origin` checks and no authentication. `None` (default): not served.
    pub health: Option<HealthConfig>,
    /// What Ctrl-C or SIGTERM does under [`Bound::shutdown_on_signal`](crate::Bound::shutdown_on_signal):
    /// `Some(deadline)` drains first ([`HttpServer::shutdown_with_deadline`](crate::HttpServer::shutdown_with_deadline)),
    /// `None` (default) shuts down at once ([`ShutdownHandle::shutdown`](crate::ShutdownHandle::shutdown)).
    pub drain_on_signal: Option<Duration>,
    /// The live supervision-tree observer (`GET /observer`, `/observer/snapshot`,
    /// `/observer/events`: [`crate::observer`]), loopback peers only unless configured,
    /// behind `auth` when that is set. `None` (default): not served.
    pub observer: Option<Observer>,
    /// `GET /metrics`: this recorder's Prometheus text (`crate::metrics`), beside the
    /// endpoint. `None` (default): no page.
    pub metrics: Option<crate::metrics::PrometheusHandle>,
    /// Legacy sessions shared with the other nodes behind a load balancer
    /// ([`crate::cluster`]; `arbor_cluster::RedisSessionStore`): any node adopts a session
    /// another opened, resumes its streams and routes its clients' answers. `None`
    /// (default): sessions live in this node's memory, and a balancer must keep each
    /// session on one node.
    pub session_store: Option<Arc<dyn SessionStore>>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 3000)),
            path: "/mcp".to_owned(),
            allowed_hosts: None,
            mounted_at: None,
            allowed_origins: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            max_json_depth: 64,
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: IDLE_TIMEOUT,
            body_read_timeout: Duration::from_secs(30),
            body_min_rate: 256,
            body_rate_window: Duration::from_secs(5),
            max_connections: None,
            raise_fd_limit: true,
            shutdown_grace: Duration::from_secs(5),
            session_idle_timeout: Duration::from_secs(600),
            max_sessions: 100_000,
            max_sessions_per_peer: 1_000,
            session_memory_budget: 512 * 1024 * 1024,
            trim_after_reap: true,
            event_buffer: 64,
            keep_alive: Duration::from_secs(15),
            sse_retry: Duration::from_secs(1),
            json_wait: Duration::from_secs(15),
            sse_polling: None,
            legacy_sse: false,
            cors: None,
            tenant: None,
            tenant_header: None,
            auth: None,
            health: None,
            drain_on_signal: None,
            observer: None,
            metrics: None,
            session_store: None,
        }
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("mounted_at", &self.mounted_at)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_json_depth", &self.max_json_depth)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("body_min_rate", &self.body_min_rate)
            .field("body_rate_window", &self.body_rate_window)
            .field("max_connections", &self.max_connections)
            .field("raise_fd_limit", &self.raise_fd_limit)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_peer", &self.max_sessions_per_peer)
            .field("session_memory_budget", &self.session_memory_budget)
            .field("trim_after_reap", &self.trim_after_reap)
            .field("event_buffer", &self.event_buffer)
            .field("keep_alive", &self.keep_alive)
            .field("sse_retry", &self.sse_retry)
            .field("json_wait", &self.json_wait)
            .field("sse_polling", &self.sse_polling)
            .field("legacy_sse", &self.legacy_sse)
            .field("cors", &self.cors)
            .field("tenant", &self.tenant.as_ref().map(|_| "<hook>"))
            .field("tenant_header", &self.tenant_header)
            .field("auth", &self.auth)
            .field("health", &self.health)
            .field("drain_on_signal", &self.drain_on_signal)
            .field("observer", &self.observer)
            .field("metrics", &self.metrics.as_ref().map(|_| "<prometheus>"))
            .field("session_store", &self.session_store)
            .finish()
    }
}

impl HttpConfig {
    /// The same configuration listening on `bind`.
    pub fn bind(mut self, bind: SocketAddr) -> Self {
        self.bind = bind;
        self
    }

    /// The same configuration for a router mounted in an application reached at `addr`
    /// (see [`HttpConfig::mounted_at`](HttpConfig#structfield.mounted_at)).
    pub fn mounted_at(mut self, addr: SocketAddr) -> Self {
        self.mounted_at = Some(addr);
        self
    }

    /// The same configuration accepting exactly these `Host` values (see
    /// [`HttpConfig::allowed_hosts`](HttpConfig#structfield.allowed_hosts)).
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The same configuration serving the endpoint at `path`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The same configuration protected by OAuth (see [`HttpConfig::auth`](HttpConfig#structfield.auth)).
    pub fn auth(mut self, auth: AuthConfig) -> Self {
        self.auth = Some(auth);
        self
    }

    /// The same configuration serving liveness and readiness probes (see
    /// [`HttpConfig::health`](HttpConfig#structfield.health)).
    pub fn health(mut self, health: HealthConfig) -> Self {
        self.health = Some(health);
        self
    }

    /// The same configuration draining for at most `deadline` on Ctrl-C or SIGTERM (see
    /// [`HttpConfig::drain_on_signal`](HttpConfig#structfield.drain_on_signal)).
    pub fn drain_on_signal(mut self, deadline: Duration) -> Self {
        self.drain_on_signal = Some(deadline);
        self
    }

    /// The same configuration serving the observer (see [`HttpConfig::observer`](HttpConfig#structfield.observer)).
    pub fn observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The same configuration serving `handle`'s Prometheus text at `GET /metrics` (see
    /// [`crate::metrics::install_prometheus`]).
    pub fn metrics(mut self, handle: crate::metrics::PrometheusHandle) -> Self {
        self.metrics = Some(handle);
        self
    }

    /// The same configuration with a tenant hook.
    pub fn tenant(mut self, hook: impl Fn(&Parts) -> ConnectOptions + Send + Sync + 'static) -> Self {
        self.tenant = Some(Arc::new(hook));
        self
    }

    /// **Development only**: the same configuration taking each request's tenant from the
    /// header `name` (for example `x-arbor-tenant`), so a tenant policy
    /// (`ServerConfig::tenant_policy`) can be tried without an authorization server.
    ///
    /// A request without the header is the default tenant's; a value that is repeated,
    /// empty, longer than 64 bytes or not made of `A-Z a-z 0-9 . _ -` is refused with 400
    /// and a -32600 naming the header, before the body is read. Any client can claim any
    /// tenant this way, and with it another tenant's quotas and tools: never use it where
    /// clients are not trusted. With OAuth on ([`HttpConfig::auth`](HttpConfig::auth())) the
    /// tenant comes from the token (`AuthConfig::tenant(TenantSource::Claim("tenant"))`)
    /// and this header is ignored: the token wins. A [`tenant`](HttpConfig::tenant()) hook,
    /// when set, wins too.
    ///
    /// # Panics
    ///
    /// If `name` is not a valid header name.
    pub fn tenant_header(mut self, name: &str) -> Self {
        let name = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .unwrap_or_else(|_| panic!("tenant_header: `{name}` is not a valid header name"));
        self.tenant_header = Some(name);
        self
    }

    /// Shares legacy sessions with the other nodes through `store` (see
    /// [`HttpConfig::session_store`](HttpConfig#structfield.session_store)).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
        self
    }

    /// The legacy sessions held at once: `max_sessions`, or fewer when the memory budget
    /// allows fewer (at least one).
    pub(crate) fn effective_max_sessions(&self) -> usize {
        let by_memory = self.session_memory_budget / crate::legacy::SESSION_COST_ESTIMATE;
        self.max_sessions.min(by_memory).max(1)
    }

    /// `path` without its last segment: where the 2024-11-05 `/sse` and `/messages` live.
    pub(crate) fn legacy_sse_base(&self) -> &str {
        match self.path.rfind('/') {
            Some(i) => &self.path[..i],
            None => "",
        }
    }
}

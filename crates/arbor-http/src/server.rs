//! [`HttpServer`]: the axum router of the MCP endpoint, the request dispatch by method
//! and era, and the listener ([`Bound`]) with its graceful [`ShutdownHandle`].
//!
//! It is not where either era is served (`modern`, `legacy`) nor where requests are
//! checked (`guard`); it reads the request head once and sends the request to the right
//! place.
//!
//! Invariant: every request passes the `Host`/`Origin` check before anything else, and a
//! POST its head, size and depth checks before its body is parsed (once, by
//! `Parsed::parse`). Era: a body with 2026-07-28 `_meta` is modern whatever its headers;
//! otherwise `Mcp-Session-Id` or `initialize` makes it legacy.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{TaskSupervisor, TaskSupervisorSpec};
use arbor_protocol::error::McpError;
use arbor_protocol::version::{Era, ProtocolVersion};
use arbor_server::exchange::Parsed;
use arbor_server::{ConnectOptions, Requester, Server};
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderName, HeaderValue, Method, Response, StatusCode};
use axum::routing::{any, get, post};
use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify, OnceCell};

use crate::auth::authenticator::{Authenticator, Verified};
use crate::auth::metadata;
use crate::body::{self, BodyError, BodyLimits};
use crate::config::HttpConfig;
use crate::drain::{self, DrainState};
use crate::guard::{self, check_post_head, reject, too_deep, Guard};
use crate::head::{Head, Known};
use crate::legacy::{self, Sessions};
use crate::listener::{self, Connections};
use crate::modern::{self, ModernPool};
use crate::serve::{accept_loop, Accept};

/// The header naming a legacy session.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The header naming the protocol revision of a request.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Everything the handlers share.
pub(crate) struct Inner {
    pub(crate) server: Server,
    /// OAuth on (`HttpConfig::auth`): checks every request before routing.
    pub(crate) auth: Option<Authenticator>,
    pub(crate) config: HttpConfig,
    pub(crate) guard: Guard,
    pub(crate) modern: ModernPool,
    pub(crate) sessions: Sessions,
    pub(crate) sse_sessions: legacy::sse_transport::SseSessions,
    /// The supervisor of the legacy streams' pump tasks: POST streams, and a shared session's
    /// standalone stream (started with the first one).
    streams: OnceCell<TaskSupervisor>,
    /// Flips to `true` once on shutdown; every open stream ends on it.
    pub(crate) shutdown: watch::Sender<bool>,
    /// Notified (all waiters) right after `shutdown` flips: a legacy SSE body waits here
    /// with a waiter inside itself ([`StreamCount::on_shutdown`]) rather than a boxed
    /// `wait_for` on its own receiver (168 bytes per open stream).
    shutdown_streams: Arc<Notify>,
    streams_open: AtomicUsize,
    /// Notified when `streams_open` drops to zero.
    streams_gone: Notify,
    pub(crate) pulse: Pulse,
    /// Open connections of [`Bound::run`] and their cap (set when bound).
    connections: Arc<Connections>,
    /// The drain's phase and its ledger of admitted requests (`crate::drain`).
    pub(crate) drain: DrainState,
}

impl Inner {
    /// Counts an open SSE response body until the guard drops.
    pub(crate) fn count_stream(self: &Arc<Self>) -> StreamCount {
        self.streams_open.fetch_add(1, Ordering::Relaxed);
        metrics::gauge!(arbor_server::metrics::HTTP_STREAMS).increment(1.0);
        StreamCount(self.clone())
    }

    /// The task supervisor the legacy streams' pump tasks run on.
    pub(crate) async fn stream_tasks(&self) -> Result<&TaskSupervisor, McpError> {
        let max = self.config.max_sessions.saturating_mul(4).max(1024);
        self.streams
            .get_or_try_init(|| async {
                TaskSupervisor::start(TaskSupervisorSpec::new("http-streams").max_concurrency(max)).await
            })
            .await
            .map_err(|e| McpError::internal(format!("Internal error: cannot start the stream supervisor: {e}")))
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}

/// A coarse clock for "this POST has waited long enough for JSON": one ticker task per
/// server bumps an epoch every `json_wait / 2` (and once at shutdown) and wakes the
/// waiters. A per-request timer would cost a wake-up syscall per request on a busy
/// runtime; a waiter registering here costs a short lock.
pub(crate) struct Pulse {
    epoch: AtomicU64,
    tick: Notify,
    started: AtomicBool,
}

impl Pulse {
    fn new() -> Pulse {
        Pulse { epoch: AtomicU64::new(0), tick: Notify::new(), started: AtomicBool::new(false) }
    }

    fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.tick.notify_waiters();
    }
}

impl Inner {
    /// Resolves between one and two `json_wait` periods from now, or at shutdown.
    pub(crate) fn json_deadline(self: &Arc<Self>) -> impl std::future::Future<Output = ()> + Send + 'static {
        let inner = self.clone();
        if !inner.pulse.started.swap(true, Ordering::AcqRel) {
            let weak = Arc::downgrade(&inner);
            let period = (inner.config.json_wait / 2).max(Duration::from_millis(1));
            tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
                loop {
                    tick.tick().await;
                    let Some(inner) = weak.upgrade() else { return };
                    if inner.is_shutting_down() {
                        return;
                    }
                    inner.pulse.bump();
                }
            });
        }
        let until = inner.pulse.epoch.load(Ordering::Acquire) + 2;
        async move {
            loop {
                let tick = inner.pulse.tick.notified();
                tokio::pin!(tick);
                tick.as_mut().enable();
                if inner.pulse.epoch.load(Ordering::Acquire) >= until || inner.is_shutting_down() {
                    return;
                }
                tick.await;
            }
        }
    }
}

/// Counts one open SSE body (see [`HttpStats::streams_open`]).
pub(crate) struct StreamCount(Arc<Inner>);

impl StreamCount {
    /// Whether the server is shutting down (its streams end).
    pub(crate) fn shutting_down(&self) -> bool {
        self.0.is_shutting_down()
    }

    /// Completes once the server shuts down after this call (read [`Self::shutting_down`]
    /// as well, for a shutdown before it): a waiter of its own, registered from its creation.
    pub(crate) fn on_shutdown(&self) -> tokio::sync::futures::OwnedNotified {
        self.0.shutdown_streams.clone().notified_owned()
    }
}

impl Drop for StreamCount {
    fn drop(&mut self) {
        metrics::gauge!(arbor_server::metrics::HTTP_STREAMS).decrement(1.0);
        if self.0.streams_open.fetch_sub(1, Ordering::AcqRel) == 1 && self.0.is_shutting_down() {
            // The last one, during shutdown: `HttpServer::shutdown` may be waiting for it.
            self.0.streams_gone.notify_waiters();
        }
    }
}

/// Live counts of an [`HttpServer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpStats {
    /// Legacy Streamable HTTP sessions held (reaped ones excluded).
    pub sessions: usize,
    /// 2024-11-05 HTTP+SSE sessions held (one per open GET stream).
    pub sse_sessions: usize,
    /// SSE response bodies open, both eras.
    pub streams_open: usize,
    /// Modern endpoints (pooled connection actors) open.
    pub modern_endpoints: usize,
    /// TCP connections [`Bound::run`] is serving (refused ones excluded).
    pub connections_open: usize,
}

/// Streamable HTTP in front of an [`arbor_server::Server`]; cheap to clone.
#[derive(Clone)]
pub struct HttpServer {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer").field("config", &self.inner.config).field("stats", &self.stats()).finish()
    }
}

impl HttpServer {
    /// Serves `server` with the default configuration (127.0.0.1:3000, `/mcp`).
    pub fn new(server: Server) -> Self {
        Self::with_config(server, HttpConfig::default())
    }

    /// Serves `server` with `config`.
    pub fn with_config(server: Server, config: HttpConfig) -> Self {
        let (shutdown, _) = watch::channel(false);
        if config.session_store.is_some() {
            // Shared sessions: an answer is routed by its id to the node that asked, so
            // this node's server→client request ids must be its own.
            let mut random = [0u8; 8];
            let _ = getrandom::fill(&mut random);
            arbor_server::exchange::spread_server_request_ids(u64::from_le_bytes(random));
        }
        let inner = Inner {
            auth: config.auth.clone().map(Authenticator::new),
            guard: Guard::new(&config),
            sessions: Sessions::new(),
            sse_sessions: Default::default(),
            modern: ModernPool::new(),
            streams: OnceCell::new(),
            shutdown,
            streams_open: AtomicUsize::new(0),
            streams_gone: Notify::new(),
            shutdown_streams: Arc::new(Notify::new()),
            pulse: Pulse::new(),
            connections: Arc::new(Connections::new()),
            drain: DrainState::new(),
            server,
            config,
        };
        HttpServer { inner: Arc::new(inner) }
    }

    /// The configuration in force.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// The MCP endpoint (and, with `legacy_sse`, the 2024-11-05 `/sse` and `/messages`)
    /// as an axum router, to serve alone or `merge` into an application. Serve that
    /// application with [`serve`](crate::serve) (`TCP_NODELAY`, the peer address, and the
    /// `Host` policy of its listener's address), or tell the configuration where it is
    /// reached ([`HttpConfig::mounted_at`](HttpConfig#structfield.mounted_at)); see
    /// [`HttpConfig::allowed_hosts`](HttpConfig#structfield.allowed_hosts) for the rule.
    /// Mounted this way, stop it with [`HttpServer::shutdown`].
    pub fn router(&self) -> axum::Router {
        let config = &self.inner.config;
        let mut router = axum::Router::new().route(&config.path, any(endpoint));
        if let Some(auth) = &config.auth {
            // The protected resource metadata, at the path-suffixed well-known URL of the
            // endpoint (and of the resource's own path, if a proxy serves it elsewhere)
            // and at the root: unauthenticated, readable from any origin.
            let [suffixed, root] = metadata::paths(&config.path);
            let mut paths = vec![suffixed, root];
            let resource_path = auth.resource_path();
            if !resource_path.is_empty() && resource_path != config.path {
                paths.push(metadata::paths(resource_path)[0].clone());
            }
            for path in paths {
                router = router.route(&path, any(resource_metadata));
            }
        }
        if let Some(health) = &config.health {
            router = router
                .route(&health.live_path, get(crate::health::live))
                .route(&health.ready_path, get(crate::health::ready));
        }
        if config.metrics.is_some() {
            router = router.route(crate::metrics::METRICS_PATH, any(crate::metrics::page));
        }
        if config.legacy_sse {
            let base = config.legacy_sse_base();
            router = router
                .route(&format!("{base}/sse"), get(legacy::sse_transport::open))
                .route(&format!("{base}/messages"), post(legacy::sse_transport::message));
        }
        let mut router = router.with_state(self.inner.clone());
        if let Some(observer) = &config.observer {
            router = router.merge(observer.clone().router_for(&self.inner));
        }
        if let Some(cors) = &config.cors {
            router = router.layer(cors_layer(cors));
        }
        router
    }

    /// Listens on `config.bind` (port 0 picks one), after raising the descriptor limit
    /// (`raise_fd_limit`) and settling the connection cap (`max_connections`).
    pub async fn bind(self) -> std::io::Result<Bound> {
        let config = &self.inner.config;
        if config.raise_fd_limit {
            listener::raise_fd_limit();
        }
        let max = config.max_connections.unwrap_or_else(listener::default_max_connections);
        self.inner.connections.set_max(max);
        let listener = TcpListener::bind(config.bind).await?;
        let local_addr = listener.local_addr()?;
        self.inner.guard.set_bound(local_addr);
        Ok(Bound { server: self, listener, local_addr })
    }

    /// Live counts.
    pub fn stats(&self) -> HttpStats {
        HttpStats {
            sessions: self.inner.sessions.len(),
            sse_sessions: self.inner.sse_sessions.len(),
            streams_open: self.inner.streams_open.load(Ordering::Relaxed),
            modern_endpoints: self.inner.modern.open_count(),
            connections_open: self.inner.connections.open(),
        }
    }

    /// A handle that shuts this server down gracefully (see [`ShutdownHandle`]).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle { inner: self.inner.clone() }
    }

    /// Shuts a mounted endpoint down in order, in one call: every SSE stream ends and
    /// waiting POSTs are answered 503 (new requests too), then, once the open streams'
    /// bodies are gone (or `shutdown_grace` passed), every session and endpoint closes and
    /// the `Server` shuts down in order, to its end: that step is bounded by the tree's own
    /// shutdown timeouts (a connection's streams get their close grace, then are killed),
    /// not by `shutdown_grace`. Afterwards [`HttpServer::stats`] counts no session, stream
    /// or endpoint, and no actor or task of the `Server` is alive. Idempotent; a
    /// [`Bound::run`] serving this server stops accepting on it and returns.
    pub async fn shutdown(&self) {
        self.shutdown_handle().shutdown();
        let inner = &self.inner;
        let grace = inner.config.shutdown_grace;
        // Each stream ends on the flag; its body drops once its connection wrote the end.
        let _ = tokio::time::timeout(grace, async {
            loop {
                let gone = inner.streams_gone.notified();
                tokio::pin!(gone);
                gone.as_mut().enable();
                if inner.streams_open.load(Ordering::Acquire) == 0 {
                    return;
                }
                gone.await;
            }
        })
        .await;
        finish(inner, grace).await;
    }

    /// The `arbor_server::Server` behind the endpoint.
    pub fn server(&self) -> &Server {
        &self.inner.server
    }
}

/// A listening [`HttpServer`], not yet serving.
#[derive(Debug)]
pub struct Bound {
    server: HttpServer,
    listener: TcpListener,
    local_addr: SocketAddr,
}

impl Bound {
    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that stops [`Bound::run`].
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.server.shutdown_handle()
    }

    /// The server being served.
    pub fn server(&self) -> &HttpServer {
        &self.server
    }

    /// Serves until shut down: accepts connections (with `TCP_NODELAY`, or SSE events wait
    /// for delayed ACKs) and serves HTTP/1.1 on each, then on shutdown stops accepting,
    /// ends every stream, lets each connection finish its exchange for at most
    /// `shutdown_grace` (then drops those still open), closes every session and endpoint
    /// and shuts the `Server` down in order (see [`HttpServer::shutdown`]).
    ///
    /// Bounded: at most `max_connections` are served at once, and a connection past it is
    /// answered 503 with `Retry-After` and closed; a failing `accept` (out of descriptors)
    /// pauses the loop with a backoff up to 1 s while the open connections go on.
    ///
    /// HTTP/1.1 only, which every MCP client speaks over plain TCP: without the HTTP/2
    /// machinery a connection holding an idle SSE stream costs about 12 KB less. For
    /// HTTP/2 (or TLS), mount [`HttpServer::router`] in a server of your own.
    pub async fn run(self) -> std::io::Result<()> {
        let inner = self.server.inner.clone();
        let connections = inner.connections.clone();
        let refusal: Arc<[u8]> = listener::refusal(connections.max()).into();
        let grace = inner.config.shutdown_grace;
        let mut stop = inner.shutdown.subscribe();
        let stop = async move {
            let _ = stop.wait_for(|stop| *stop).await;
        };
        let options = Accept {
            header_read_timeout: inner.config.header_read_timeout,
            idle_timeout: inner.config.idle_timeout,
            grace,
            listener_addr: None,
            cap: Some((connections, refusal)),
            // Behind a CORS layer every request must pass through it: no direct path.
            direct: inner.config.cors.is_none().then(|| inner.clone()),
        };
        accept_loop(self.listener, self.server.router(), stop, options).await;
        finish(&inner, grace).await;
        Ok(())
    }
}

/// Stops a server: see [`ShutdownHandle::shutdown`].
#[derive(Clone)]
pub struct ShutdownHandle {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShutdownHandle").field("shutting_down", &self.inner.is_shutting_down()).finish()
    }
}

impl ShutdownHandle {
    /// Graceful: [`Bound::run`] stops accepting, every SSE stream ends, waiting POSTs
    /// are answered 503, sessions and endpoints close and the `Server` shuts down; `run`
    /// returns once that is done. Idempotent. Without `Bound::run` (a mounted router) this
    /// only ends the streams and refuses requests: [`HttpServer::shutdown`] does it all.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
        self.inner.shutdown_streams.notify_waiters();
        self.inner.pulse.bump();
    }
}

/// What shutdown does once no connection is served any more: the HTTP side (sessions,
/// endpoints, the legacy streams' pumps) within `grace`, then the `Server`'s ordered
/// shutdown to its end. That one is not cut at the grace: it is bounded by its children's
/// own shutdown timeouts (a connection's, its streams' close grace), and cut short it
/// returned with connections still stopping and their slow streams not yet killed.
async fn finish(inner: &Arc<Inner>, grace: Duration) {
    inner.sessions.close_all();
    inner.sse_sessions.close_all();
    inner.modern.close_all();
    if let Some(tasks) = inner.streams.get() {
        if tokio::time::timeout(grace, tasks.shutdown()).await.is_err() {
            tracing::warn!(?grace, "the HTTP streams did not stop within the shutdown grace");
        }
    }
    inner.server.shutdown().await;
}

fn cors_layer(cors: &crate::config::CorsConfig) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, Any, CorsLayer};
    let origins = if cors.allow_origins.is_empty() {
        AllowOrigin::from(Any)
    } else {
        AllowOrigin::list(cors.allow_origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    let mut layer = CorsLayer::new()
        .allow_origin(origins)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(Any)
        .expose_headers([SESSION_ID, header::WWW_AUTHENTICATE]);
    if let Some(age) = cors.max_age {
        layer = layer.max_age(age);
    }
    layer
}

/// The MCP endpoint: every method lands here.
async fn endpoint(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let (parts, body) = request.into_parts();
    serve_endpoint(inner, Head::routed(parts), body).await
}

/// The MCP endpoint: through the router ([`HttpServer::router`]), or handed its requests
/// by the accept loop directly (`serve::Accept::direct`). One function, so both answer the same.
///
/// Not an `async fn`: one moves its arguments into new locals at its first poll, so the
/// future held the request's head twice (384 bytes more, copied once more); an `async move`
/// block uses what it captured in place.
#[allow(clippy::manual_async_fn)] // on purpose: see above
pub(crate) fn serve_endpoint(
    inner: Arc<Inner>,
    mut parts: Head,
    body: Body,
) -> impl std::future::Future<Output = Response<Body>> + Send {
    async move {
        // Borrowed from the map itself (`parts.parts`), so the writes below to the head's
        // extensions and gate leave it standing.
        let known = Known::of(&parts.parts.headers);
        if let Err(refused) = inner.guard.check_head(&parts, &known) {
            return *refused;
        }
        let served = matches!(parts.method, Method::POST | Method::GET | Method::DELETE);
        if !served {
            // Nothing to authenticate: a method the endpoint does not serve is 405 for anyone.
            return guard::method_not_allowed("POST");
        }
        if let Some(auth) = &inner.auth {
            match auth.authenticate(&parts).await {
                Ok(verified) => parts.parts.extensions.insert(verified),
                Err(refused) => return refused,
            };
        }
        // The tenant's quarantine and rates, before anything reads the body: a POST, and a GET
        // (it opens a stream). A DELETE only gives resources back, so it is never refused.
        let session = known.session_id;
        let gated = parts.method == Method::POST || (parts.method == Method::GET && session.is_some());
        if gated {
            match crate::tenant::gate_named(&inner, &parts, session) {
                Ok(gate) => parts.gate = Some(gate),
                Err(refused) => return refused,
            }
        }
        let answer = match parts.method {
            Method::POST => post_endpoint(&inner, &parts, &known, body, session).await,
            // Boxed: a GET opens a stream and a DELETE closes a session, each once per many
            // POSTs, and inline their futures (kilobytes) would size every POST's.
            Method::GET if session.is_some() => Box::pin(legacy::get(&inner, &parts)).await,
            Method::DELETE if session.is_some() => Box::pin(legacy::delete(&inner, &parts)).await,
            // No session: a GET or DELETE is the modern era's, which has neither.
            _ => guard::method_not_allowed("POST"),
        };
        guard::recycle_headers(parts.into_parts().headers);
        answer
    }
}

/// The protected resource metadata (RFC 9728).
async fn resource_metadata(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let document = inner.auth.as_ref().map(|a| &a.document).expect("served only with auth on");
    metadata::answer(request.method(), document)
}

/// With OAuth on, the request's principal, verified and put into its extensions (for
/// [`verified`], the tenant hook and the era handlers), or the refusal to answer.
pub(crate) async fn authenticate(inner: &Inner, parts: &mut Parts) -> Result<(), Response<Body>> {
    let Some(auth) = &inner.auth else { return Ok(()) };
    let verified = auth.authenticate(parts).await?;
    parts.extensions.insert(verified);
    Ok(())
}

/// What ends a stream that lasts as long as its client wants (a 2026-07-28 listen, a legacy
/// standalone GET stream, a 2024-11-05 session stream): the server's shutdown, or, when a
/// token opened it, that token's expiry, so no stream outlives the credential it was
/// opened with (the client opens it again with a fresh token). Streams answering one
/// request are not cut: a call authorized when it started runs to its end.
pub(crate) fn stream_end(inner: &Inner, verified: Option<&Arc<Verified>>) -> watch::Receiver<bool> {
    stream_expiry(inner, verified).unwrap_or_else(|| inner.shutdown.subscribe())
}

/// [`stream_end`] for a stream opened with an expiring token, `None` for any other (which
/// ends at the server's shutdown alone).
pub(crate) fn stream_expiry(inner: &Inner, verified: Option<&Arc<Verified>>) -> Option<watch::Receiver<bool>> {
    let expiry = verified.and_then(|v| v.principal.expires_at)?;
    let shutdown = inner.shutdown.subscribe();
    let left = expiry.duration_since(std::time::SystemTime::now()).unwrap_or_default();
    let (tx, rx) = watch::channel(*shutdown.borrow());
    // One small task per such stream; it ends with the stream (`closed`) at the latest.
    tokio::spawn(async move {
        let mut shutdown = shutdown;
        tokio::select! {
            _ = tokio::time::sleep(left) => tracing::debug!("a stream's access token expired: the stream ends"),
            _ = shutdown.wait_for(|stop| *stop) => {}
            _ = tx.closed() => return,
        }
        let _ = tx.send(true);
    });
    Some(rx)
}

/// The principal [`authenticate`] verified for the request, if OAuth is on.
pub(crate) fn verified(parts: &Parts) -> Option<&Arc<Verified>> {
    parts.extensions.get::<Arc<Verified>>()
}

/// The options a legacy session of this request opens with: the tenant hook's, else the
/// verified principal's tenant, else the tenant header's; the principal (whose key becomes the session's owner and
/// requester); the peer's address.
pub(crate) fn session_options(inner: &Inner, parts: &Head) -> ConnectOptions {
    let verified = verified(parts);
    // The tenant as the gate worked it out (`tenant::base_options`).
    let mut options = crate::tenant::base_options(inner, parts).unwrap_or_default();
    if let Some(v) = verified {
        options.principal = Some(v.principal.clone());
        if let Requester::Principal(key) = &v.requester {
            options.auth = Some(key.to_string());
        }
    }
    options.peer = options.peer.or(parts.peer);
    options
}

/// The address of the peer that sent a request through the router: set by the accept loop,
/// or by axum's `into_make_service_with_connect_info::<SocketAddr>()` when the router is
/// mounted in an application; `None` when neither did (such requests share one
/// requester). The endpoint reads its [`Head`]'s.
pub(crate) fn peer_addr(parts: &Parts) -> Option<SocketAddr> {
    parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0)
}

/// Reads a POST body within its bounds: 413 beyond the cap and 408 when it arrives too
/// slowly or not by the deadline (each closing the connection: the rest of the body is
/// never read), 400 when it breaks off.
/// The cap is the transport's (`HttpConfig::max_body_bytes`), or the request's tenant's
/// when that is lower (`TenantQuota::max_body_bytes`); the 413 says which.
/// `content_length` is the head's first `Content-Length`.
pub(crate) async fn read_body(
    inner: &Inner,
    parts: &Head,
    content_length: Option<&HeaderValue>,
    body: Body,
) -> Result<Bytes, Response<Body>> {
    let (max, tenant_cap) = crate::tenant::max_body(inner, parts);
    let config = &inner.config;
    let too_large = || {
        let whose = if tenant_cap { "this tenant's max_body_bytes" } else { "max_body_bytes" };
        let err = McpError::InvalidRequest {
            message: format!("Payload Too Large: the body exceeds {max} bytes ({whose})"),
            data: None,
        };
        let mut answer = reject(StatusCode::PAYLOAD_TOO_LARGE, &err, None);
        // Reading stops at the cap, so the rest of the body is unread: without this the
        // client pools the connection the server then closes, and loses its next request.
        answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        answer
    };
    let declared = content_length.and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(too_large());
    }
    let limits = BodyLimits {
        max,
        deadline: config.body_read_timeout,
        min_rate: config.body_min_rate,
        window: config.body_rate_window,
    };
    let timed_out = |message: String| {
        let err = McpError::Other { code: -32000, message, data: None };
        let mut answer = reject(StatusCode::REQUEST_TIMEOUT, &err, None);
        // The rest of the body may still come: this connection cannot carry another request.
        answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        answer
    };
    match body::read(body, limits).await {
        Ok(bytes) => Ok(bytes),
        Err(BodyError::TooLarge) => Err(too_large()),
        Err(BodyError::TimedOut) => Err(timed_out(format!(
            "Request Timeout: the body did not arrive within {} s",
            limits.deadline.as_secs_f64()
        ))),
        Err(BodyError::TooSlow) => {
            Err(timed_out(format!("Request Timeout: the body arrived slower than {} bytes/s", limits.min_rate)))
        }
        Err(BodyError::Unreadable) => {
            let err =
                McpError::InvalidRequest { message: "Bad Request: the body could not be read".into(), data: None };
            Err(reject(StatusCode::BAD_REQUEST, &err, None))
        }
    }
}

/// A POST's common checks, then its parse: `Err` is the answer already.
pub(crate) async fn read_parsed(
    inner: &Inner,
    parts: &Head,
    content_length: Option<&HeaderValue>,
    body: Body,
) -> Result<Parsed, Response<Body>> {
    let bytes = read_body(inner, parts, content_length, body).await?;
    if too_deep(&bytes, inner.guard.max_depth) {
        let err = McpError::InvalidRequest {
            message: format!("Invalid Request: JSON nested deeper than {}", inner.guard.max_depth),
            data: None,
        };
        return Err(reject(StatusCode::BAD_REQUEST, &err, None));
    }
    let parsed = Parsed::parse(&bytes);
    if let Some(err) = parsed.error() {
        // Bytes that are not a JSON-RPC message are refused here in every era; other
        // errors (unknown method, bad params) are the endpoint's to answer in its era.
        let code = err.to_error_object().code;
        if code == -32700 || code == -32600 {
            return Err(reject(StatusCode::BAD_REQUEST, err, parsed.request_id().cloned()));
        }
    }
    Ok(parsed)
}

/// `session` is the request's `Mcp-Session-Id` header, found with its other `known` ones.
async fn post_endpoint(
    inner: &Arc<Inner>,
    parts: &Head,
    known: &Known<'_>,
    body: Body,
    session: Option<&HeaderValue>,
) -> Response<Body> {
    if let Err(refused) = check_post_head(known, &parts.headers) {
        return *refused;
    }
    let parsed = match read_parsed(inner, parts, known.content_length, body).await {
        Ok(parsed) => parsed,
        Err(answer) => return answer,
    };
    if let (Some(auth), Some(verified)) = (&inner.auth, verified(parts)) {
        if let Err(refused) = auth.authorize(verified, &parsed, &inner.server) {
            return refused;
        }
    }
    if inner.drain.is_draining() && parsed.expected_responses() > 0 {
        // New work during the drain; a notification or a response still passes (a cancel,
        // the answer to an in-flight request's elicitation).
        return drain::refused(parsed.request_id().cloned());
    }
    if parsed.modern_version().is_some() || (session.is_none() && modern_header(known)) {
        return modern::post(inner, parts, known, parsed).await;
    }
    legacy::post(inner, parts, known.protocol_version, parsed, session).await
}

/// Whether `MCP-Protocol-Version` names a 2026-07-28-era revision (or one we do not know,
/// which only a newer client sends): such a body without `_meta` is answered by the
/// modern endpoint (-32602), not refused for lacking a session.
fn modern_header(known: &Known<'_>) -> bool {
    match known.protocol_version.map(|v| v.to_str()) {
        Some(Ok(v)) => ProtocolVersion::parse(v).is_none_or(|v| v.era() == Era::Modern),
        Some(Err(_)) => false,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every request's future is moved into a fresh box per request, and its size is the
    /// largest of its branches: the rare ones (opening a session or an endpoint, adopting
    /// a shared session, a GET's stream, a DELETE, a legacy POST answered as a stream) are
    /// boxed where they are awaited, so they do not size the common POST. Before, the
    /// endpoint's future was 4,592 bytes here (a debug build) and its 2026-07-28 POST's 3,088.
    #[tokio::test]
    async fn a_requests_future_is_not_sized_by_its_rare_branches() {
        let http = HttpServer::new(arbor_server::Server::new(arbor_server::Router::new("t", "1")));
        let inner = http.inner.clone();
        let request = || Request::builder().method("POST").uri("/mcp").body(Body::empty()).expect("a request");
        let (parts, body) = request().into_parts();
        let endpoint = std::mem::size_of_val(&serve_endpoint(inner.clone(), Head::new(parts, None), body));
        // 1,968 here. As `async fn`s, which hold each argument twice (the argument and the
        // local it is moved into), it was 2,672, the 2026-07-28 POST's 1,128 and the
        // legacy POST's 1,456.
        assert!(endpoint <= 2048, "the endpoint's future grew to {endpoint} bytes");
        let (parts, _) = request().into_parts();
        let parts = Head::new(parts, None);
        let known = Known::default();
        let modern = std::mem::size_of_val(&crate::modern::post(&inner, &parts, &known, Parsed::parse(b"{}")));
        assert!(modern <= 896, "a 2026-07-28 POST's future grew to {modern} bytes");
        let legacy = std::mem::size_of_val(&crate::legacy::post(&inner, &parts, None, Parsed::parse(b"{}"), None));
        assert!(legacy <= 1216, "a legacy POST's future grew to {legacy} bytes");
    }
}

//! The live supervision-tree observer: a web page showing the tree as it is, per-tenant
//! load and a chart of the last minutes, updated every second.
//!
//! Three routes, off unless [`HttpConfig::observer`](crate::HttpConfig#structfield.observer)
//! is set (or [`Observer::router_for_tree`] serves a plain arbor-otp tree):
//! - `GET /observer`: the page (plain HTML and JavaScript embedded in the crate, no
//!   framework, nothing fetched from elsewhere);
//! - `GET /observer/snapshot`: the view as JSON (`arbor_server::observe::ServerView`, plus
//!   each tenant's requests per second and the sampled history);
//! - `GET /observer/events`: an SSE stream pushing that JSON every
//!   [`Observer::interval`] (one `data:` line per push; it ends with the server).
//!
//! Who may look: the `Host`/`Origin` checks of the endpoint, then only loopback peers
//! unless [`Observer::allow_remote`] (a request whose peer is unknown is refused), then,
//! when `HttpConfig::auth` is set, a valid bearer token as for the endpoint. What it is
//! not: a control surface (nothing here changes the tree) or a metrics exporter.
//!
//! Invariant: a refused request learns nothing of the tree, and no view holds a token
//! (`arbor_server::observe`'s invariant); the history is bounded
//! ([`Observer::history`] / [`Observer::interval`] samples) and is sampled only once the
//! observer was first asked, by one task that ends with the server.

mod history;
mod page;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arbor_otp::SupervisorHandle;
use arbor_server::observe::{ServerView, ViewKind, ViewNode};
use arbor_server::Server;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Response, StatusCode};
use axum::routing::get;
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::guard::Guard;
use crate::server::{authenticate, peer_addr, Inner};
use crate::HttpConfig;
use history::History;

/// The observer's settings; `HttpConfig::observer(Observer::new())` turns it on.
#[derive(Clone, Debug)]
pub struct Observer {
    remote: bool,
    interval: Duration,
    history: Duration,
}

impl Default for Observer {
    fn default() -> Self {
        Observer::new()
    }
}

impl Observer {
    /// Loopback peers only, a push every second, five minutes of history.
    pub fn new() -> Observer {
        Observer { remote: false, interval: Duration::from_secs(1), history: Duration::from_secs(300) }
    }

    /// Serves peers at any address too. The view names tenants, requesters and methods:
    /// put authentication (`HttpConfig::auth`) or a proxy that checks in front of it.
    pub fn allow_remote(mut self) -> Observer {
        self.remote = true;
        self
    }

    /// How often the events stream pushes and the history is sampled (at least 100 ms).
    pub fn interval(mut self, interval: Duration) -> Observer {
        self.interval = interval.max(Duration::from_millis(100));
        self
    }

    /// How much history the chart keeps.
    pub fn history(mut self, history: Duration) -> Observer {
        self.history = history;
        self
    }

    /// The observer's three routes for a plain arbor-otp tree (a supervision experiment,
    /// `examples/supervision_tree.rs`), with the loopback rule and the `Host`/`Origin`
    /// checks of a default [`HttpConfig`]; serve it with [`serve`](crate::serve).
    pub fn router_for_tree(self, root: SupervisorHandle) -> axum::Router {
        let state = ObserverState::new(self, Source::Tree(root), None, Guard::new(&HttpConfig::default()));
        routes(state)
    }

    /// The routes for an [`HttpServer`](crate::HttpServer)'s own server.
    pub(crate) fn router_for(self, inner: &Arc<Inner>) -> axum::Router {
        let source = Source::Server(inner.server.clone());
        let state = ObserverState::new(self, source, Some(Arc::downgrade(inner)), Guard::new(&inner.config));
        routes(state)
    }
}

fn routes(state: Arc<ObserverState>) -> axum::Router {
    axum::Router::new()
        .route("/observer", get(page))
        .route("/observer/snapshot", get(snapshot))
        .route("/observer/events", get(events))
        .with_state(state)
}

/// What is observed.
enum Source {
    Server(Server),
    Tree(SupervisorHandle),
}

struct ObserverState {
    config: Observer,
    source: Source,
    /// The HTTP server in front (its guard settings, authenticator and shutdown flag);
    /// weak, so the observer's routes never keep a stopped server alive.
    inner: Option<Weak<Inner>>,
    /// The guard of a tree observer (an HTTP server's own is in `inner`).
    guard: Guard,
    history: Mutex<History>,
    /// The last view taken, as JSON bytes: pages open at once share one view per half
    /// interval, so watching costs the connections one message each per interval however
    /// many pages watch.
    latest: Mutex<Option<(tokio::time::Instant, Bytes)>>,
    sampling: AtomicBool,
    /// Flips when a tree observer's sampler should stop (its root stopped).
    stopped: watch::Sender<bool>,
}

impl ObserverState {
    fn new(config: Observer, source: Source, inner: Option<Weak<Inner>>, guard: Guard) -> Arc<ObserverState> {
        let samples = (config.history.as_millis() / config.interval.as_millis().max(1)).max(2) as usize;
        Arc::new(ObserverState {
            config,
            source,
            inner,
            guard,
            history: Mutex::new(History::new(samples)),
            latest: Mutex::new(None),
            sampling: AtomicBool::new(false),
            stopped: watch::channel(false).0,
        })
    }

    fn inner(&self) -> Option<Arc<Inner>> {
        self.inner.as_ref().and_then(Weak::upgrade)
    }

    /// Whether the server behind is gone or stopping.
    fn ended(&self) -> bool {
        match &self.inner {
            Some(weak) => weak.upgrade().is_none_or(|inner| inner.is_shutting_down()),
            None => match &self.source {
                Source::Tree(root) => !root.is_alive(),
                Source::Server(_) => false,
            },
        }
    }

    /// Starts the sampler once: one task, sampling every interval until the server ends.
    fn start_sampling(self: &Arc<Self>) {
        if self.sampling.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let period = self.config.interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(state) = weak.upgrade() else { return };
                if state.ended() {
                    let _ = state.stopped.send(true);
                    return;
                }
                if let Source::Server(server) = &state.source {
                    let loads = server.tenant_loads().await;
                    state.history.lock().push(loads);
                }
            }
        });
    }

    /// The view as JSON bytes; with `shared`, the latest one if it is younger than half
    /// an interval (the events streams; a snapshot request always gets a fresh one).
    async fn view_bytes(&self, shared: bool) -> Bytes {
        let fresh = self.config.interval / 2;
        if let Some((at, bytes)) = self.latest.lock().as_ref().filter(|_| shared) {
            if at.elapsed() < fresh {
                return bytes.clone();
            }
        }
        let bytes = Bytes::from(serde_json::to_vec(&self.view().await).unwrap_or_default());
        *self.latest.lock() = Some((tokio::time::Instant::now(), bytes.clone()));
        bytes
    }

    /// The view as the JSON the page reads.
    async fn view(&self) -> Value {
        let taken_at_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        match &self.source {
            Source::Server(server) => {
                // Before the first connection there is no tree yet.
                let (root, tenants) = match server.observe().await {
                    Some(ServerView { root, tenants, .. }) => (root, tenants),
                    None => (ViewNode::new("arbor-server", ViewKind::Supervisor, "not_started"), Vec::new()),
                };
                let history = self.history.lock();
                json!({
                    "source": "server",
                    "server": root.id,
                    "taken_at_ms": taken_at_ms,
                    "interval_ms": self.config.interval.as_millis() as u64,
                    "root": root,
                    "tenants": history.with_rates(&tenants),
                    "history": history.to_json(),
                })
            }
            Source::Tree(root) => json!({
                "source": "tree",
                "server": root.snapshot().await.id,
                "taken_at_ms": taken_at_ms,
                "interval_ms": self.config.interval.as_millis() as u64,
                "root": ViewNode::from_snapshot(&root.snapshot().await),
                "tenants": [],
                "history": [],
            }),
        }
    }

    /// The checks before anything is shown: `Err` is the refusal to answer.
    async fn admit(&self, parts: &mut Parts) -> Result<(), Response<Body>> {
        let inner = self.inner();
        let guard = inner.as_ref().map_or(&self.guard, |inner| &inner.guard);
        guard.check_origin_and_host(parts).map_err(|refused| *refused)?;
        if !self.config.remote && !peer_addr(parts).as_ref().is_some_and(is_loopback) {
            return Err(plain(StatusCode::FORBIDDEN, "the observer answers loopback peers only\n"));
        }
        match &inner {
            Some(inner) => authenticate(inner, parts).await,
            None if self.inner.is_some() => Err(plain(StatusCode::SERVICE_UNAVAILABLE, "the server has stopped\n")),
            None => Ok(()),
        }
    }
}

fn is_loopback(addr: &SocketAddr) -> bool {
    match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.is_loopback(),
        std::net::IpAddr::V6(ip) => ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn with_type(body: impl Into<Body>, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(body.into());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn page(State(state): State<Arc<ObserverState>>, request: Request) -> Response<Body> {
    let (mut parts, _) = request.into_parts();
    if let Err(refused) = state.admit(&mut parts).await {
        return refused;
    }
    state.start_sampling();
    let mut response = with_type(page::HTML, "text/html; charset=utf-8");
    // The page runs only its own inline script and talks only to its own origin.
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
        ),
    );
    response
}

async fn snapshot(State(state): State<Arc<ObserverState>>, request: Request) -> Response<Body> {
    let (mut parts, _) = request.into_parts();
    if let Err(refused) = state.admit(&mut parts).await {
        return refused;
    }
    state.start_sampling();
    with_type(state.view_bytes(false).await, "application/json")
}

async fn events(State(state): State<Arc<ObserverState>>, request: Request) -> Response<Body> {
    let (mut parts, _) = request.into_parts();
    if let Err(refused) = state.admit(&mut parts).await {
        return refused;
    }
    state.start_sampling();
    let stopped = state.stopped.subscribe();
    let shutdown = state.inner().map(|inner| inner.shutdown.subscribe());
    let period = state.config.interval;
    // One push at once, then one per interval; the stream ends with the server (its
    // shutdown flag, or a tree observer's root stopping) or when the client goes away.
    let stream = futures::stream::unfold((state, shutdown, true), move |(state, mut shutdown, first)| {
        let mut stopped = stopped.clone();
        async move {
            if !first {
                let ended = async {
                    match shutdown.as_mut() {
                        Some(shutdown) => {
                            let _ = shutdown.wait_for(|stop| *stop).await;
                        }
                        None => {
                            let _ = stopped.wait_for(|stop| *stop).await;
                        }
                    }
                };
                tokio::select! {
                    () = tokio::time::sleep(period) => {}
                    () = ended => return None,
                }
            }
            if state.ended() {
                return None;
            }
            let view = state.view_bytes(true).await;
            let mut out = bytes::BytesMut::new();
            crate::sse::put_data(&mut out, &view);
            Some((Ok::<Bytes, std::convert::Infallible>(out.freeze()), (state, shutdown, false)))
        }
    });
    crate::sse::response(Body::from_stream(stream))
}

//! Serving an axum application on a `TcpListener`: [`serve`] for an application that
//! mounts [`HttpServer::router`](crate::HttpServer::router), and the one accept loop both it
//! and [`Bound::run`](crate::Bound::run) use.
//!
//! It is not the MCP endpoint (that is the router) and does not shut the endpoint down
//! ([`HttpServer::shutdown`](crate::HttpServer::shutdown) does); it accepts, serves HTTP/1.1
//! on each connection and stops gracefully.
//!
//! Invariant: every accepted socket gets `TCP_NODELAY` (an SSE event must not wait for a
//! delayed ACK) and every request its peer address (the per-requester bounds read it):
//! handed to the endpoint with the head (`head::Head`), as `ConnectInfo<SocketAddr>` to
//! the router's routes; a failing `accept` never makes the loop spin or stop;
//! once stopped, connections get `shutdown_grace` to finish their exchange and are then
//! dropped, so stopping is bounded in time.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use arbor_otp::pin_in_place;
use axum::extract::{ConnectInfo, Request};
use tokio::net::{TcpListener, TcpStream};

use crate::config::IDLE_TIMEOUT;
use crate::guard::ListenerAddr;
use crate::idle::{self, Phase};
use crate::listener::{Backoff, Connections};

/// Serves `app` on `listener` (HTTP/1.1) until the future given to
/// [`Serve::with_graceful_shutdown`] resolves, or forever without one.
///
/// Like `axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())`,
/// and besides: `TCP_NODELAY` on every accepted socket (else SSE events stall behind
/// delayed ACKs), the listener's address on every request, from which a mounted
/// [`HttpServer::router`](crate::HttpServer::router) derives its `Host` policy (see
/// [`HttpConfig::allowed_hosts`](crate::HttpConfig#structfield.allowed_hosts)), a header
/// read timeout, and a backoff when `accept` fails (out of descriptors). Open connections
/// are not capped here; [`Bound::run`](crate::Bound::run) caps them.
///
/// ```no_run
/// # async fn demo(server: arbor_server::Server) -> std::io::Result<()> {
/// let mcp = arbor_http::HttpServer::new(server);
/// let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).merge(mcp.router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// let stop = mcp.clone();
/// arbor_http::serve(listener, app)
///     .with_graceful_shutdown(async move {
///         let _ = tokio::signal::ctrl_c().await;
///         stop.shutdown().await; // streams end, sessions close, the server stops
///     })
///     .await
/// # }
/// ```
pub fn serve(listener: TcpListener, app: axum::Router) -> Serve {
    Serve {
        listener,
        app,
        signal: None,
        grace: Duration::from_secs(5),
        header_read_timeout: Duration::from_secs(30),
        idle_timeout: IDLE_TIMEOUT,
    }
}

/// A server being set up by [`serve`]; `.await` it to serve.
#[must_use = "a Serve does nothing until awaited"]
pub struct Serve {
    listener: TcpListener,
    app: axum::Router,
    signal: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    grace: Duration,
    header_read_timeout: Duration,
    idle_timeout: Duration,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("graceful", &self.signal.is_some())
            .field("grace", &self.grace)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl Serve {
    /// Stops accepting once `signal` resolves, then lets open connections finish their
    /// exchange for at most the grace (default 5 s) and drops the rest. An open SSE
    /// stream never finishes by itself: end the endpoint's streams first, which
    /// [`HttpServer::shutdown`](crate::HttpServer::shutdown) does, as in [`serve`]'s example.
    pub fn with_graceful_shutdown(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.signal = Some(Box::pin(signal));
        self
    }

    /// How long connections may take to finish after the shutdown signal. Default 5 s.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// A request's head must arrive whole within this from its first byte (and a new
    /// connection's first head from the accept): the header slowloris bound. Default 30 s.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a keep-alive connection may sit idle between exchanges before it is
    /// closed. Default 120 s (see [`HttpConfig::idle_timeout`](crate::HttpConfig#structfield.idle_timeout)).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The address being served.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl IntoFuture for Serve {
    type Output = std::io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let local = self.listener.local_addr()?;
            let signal = self.signal.unwrap_or_else(|| Box::pin(std::future::pending()));
            let options = Accept {
                header_read_timeout: self.header_read_timeout,
                idle_timeout: self.idle_timeout,
                grace: self.grace,
                listener_addr: Some(local),
                cap: None,
                // The application may wrap or replace the endpoint: everything is routed.
                direct: None,
            };
            accept_loop(self.listener, self.app, signal, options).await;
            Ok(())
        })
    }
}

/// How [`accept_loop`] serves.
pub(crate) struct Accept {
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) grace: Duration,
    /// Stamped on each request as [`ListenerAddr`] (by [`serve`]; `Bound::run` has set its
    /// policy when it bound instead, which costs nothing per request).
    pub(crate) listener_addr: Option<SocketAddr>,
    /// The connection cap and the answer for a connection past it.
    pub(crate) cap: Option<(Arc<Connections>, Arc<[u8]>)>,
    /// The MCP endpoint served without the router (`Bound::run`, no CORS layer): axum's
    /// routing of a request cost about 4,000 instructions and four allocations, a
    /// twelfth of a 2026-07-28 call's whole. Other paths still go through the router.
    /// The endpoint's state: requests for its `config.path` go to it directly.
    pub(crate) direct: Option<Arc<crate::server::Inner>>,
}

/// The future of one request's answer, as the connection's service returns it.
type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<axum::http::Response<idle::Tracked>, std::convert::Infallible>> + Send>>;

/// What every connection of one accept loop routes its requests with: one allocation per
/// accept loop, a pointer in each connection.
struct Routes {
    router: axum::Router,
    /// See [`Accept::direct`].
    direct: Option<Arc<crate::server::Inner>>,
    /// See [`Accept::listener_addr`].
    listener_addr: Option<SocketAddr>,
}

/// One connection's service: its requests carry its peer (the per-requester bounds read
/// it): the endpoint's in its `Head`, the router's as
/// `axum::serve(..).into_make_service_with_connect_info` would give it (`peer_addr`); and
/// each opens an exchange on its clock.
///
/// A named type, not a closure, so that the connection's task can be one too ([`Served`]).
struct Service {
    routes: Arc<Routes>,
    clock: idle::Clock,
    peer: SocketAddr,
}

impl hyper::service::Service<Request<hyper::body::Incoming>> for Service {
    type Response = axum::http::Response<idle::Tracked>;
    type Error = std::convert::Infallible;
    type Future = ServiceFuture;

    fn call(&self, mut request: Request<hyper::body::Incoming>) -> ServiceFuture {
        let exchange = self.clock.begin();
        let routes = &*self.routes;
        let direct = routes.direct.as_ref().filter(|inner| request.uri().path() == inner.config.path).cloned();
        // The endpoint served directly is handed the peer with the head; the router's
        // routes read it from the extensions, as a mounted router does.
        let peer = self.peer;
        if direct.is_none() {
            let extensions = request.extensions_mut();
            extensions.insert(ConnectInfo(peer));
            if let Some(addr) = routes.listener_addr {
                extensions.insert(ListenerAddr(addr));
            }
        }
        let router = routes.router.clone();
        // The whole answer's future boxed, the box freed once the answer's head is
        // out: hyper allocates a connection's in-flight slot sized for the service's
        // future once and keeps it for the connection's life (an open SSE stream's
        // too). Inline, the request and the router's `Oneshot` made that slot 664
        // bytes per connection; boxed, it is a pointer, and a request still makes
        // one allocation (the endpoint's future, boxed before this too). The box is
        // allocated first and the future written into it (`pin_in_place`).
        pin_in_place(|| async move {
            let response = match direct {
                Some(inner) => {
                    let (parts, body) = request.into_parts();
                    let head = crate::head::Head::new(parts, Some(peer));
                    crate::server::serve_endpoint(inner, head, axum::body::Body::new(body)).await
                }
                None => tower::ServiceExt::oneshot(router, request).await?,
            };
            Ok::<_, std::convert::Infallible>(response.map(|body| idle::Tracked::new(body, exchange)))
        })
    }
}

type Connection = hyper::server::conn::http1::Connection<hyper_util::rt::TokioIo<idle::Watched<TcpStream>>, Service>;

/// One connection's task: serves it until it ends, its clock runs out (the sweeper sets
/// the clock's flag and wakes the task) or the server stops (the sweeper's phase: the
/// exchange may finish once stopping, and is dropped once forced).
///
/// Polled by hand, not an `async` block with a `select!`: the block kept the socket and
/// the service it moved into the connection as well as the connection (an `async` block's
/// captures are not overlapped with its later state), and the select a timer and two stop
/// signals' futures, all held by every open connection.
struct Served {
    connection: Connection,
    clock: idle::Clock,
    phase: idle::SweeperHandle,
    /// For the log line of a connection closed by its clock.
    peer: SocketAddr,
    draining: bool,
    /// Counted by the cap and the shutdown's drain until the task ends.
    _counted: (Option<crate::listener::Slot>, tokio::sync::mpsc::Sender<()>),
}

impl Future for Served {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.clock.watch(cx.waker());
        match this.phase.phase() {
            Phase::Forced => return Poll::Ready(()),
            Phase::Stopping if !this.draining => {
                this.draining = true;
                Pin::new(&mut this.connection).graceful_shutdown();
            }
            _ => {}
        }
        // Once stopping, the connection finishes its exchange untimed, as it may.
        if let Some(why) = this.clock.expiry().filter(|_| !this.draining) {
            tracing::debug!(?why, peer = %this.peer, "connection closed by its clock");
            return Poll::Ready(());
        }
        Pin::new(&mut this.connection).poll(cx).map(drop)
    }
}

/// Accepts and serves until `stop` resolves, then drains the connections (bounded by
/// `grace`, twice at most) and returns.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    stop: impl Future<Output = ()>,
    options: Accept,
) {
    let Accept { header_read_timeout, idle_timeout, grace, listener_addr, cap, direct } = options;
    tokio::pin!(stop);
    let routes = Arc::new(Routes { router, direct, listener_addr });
    // No timer: the head and idle timeouts are the clock's (see `idle.rs`: hyper's one
    // timer closed idle connections under clients), and hyper times nothing else here.
    let mut http = hyper::server::conn::http1::Builder::new();
    http.header_read_timeout(None);
    // Each connection holds a sender; `recv` returns `None` once all are gone.
    let (drain, mut drained) = tokio::sync::mpsc::channel::<()>(1);
    // Every connection's clock, and its server's phase: `Stopping` once the shutdown
    // signal came (connections finish their exchange), `Forced` once the grace is over
    // (connections still open are dropped).
    let sweeper = idle::Sweeper::start(header_read_timeout, idle_timeout);
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => {
                backoff.reset();
                accepted
            }
            Err(err) => {
                // Out of descriptors and the like: the listener itself is fine, and
                // the connections we serve go on (and free descriptors) meanwhile.
                let pause = backoff.after(&err);
                tracing::warn!(%err, ?pause, "accepting a connection failed");
                tokio::select! {
                    () = tokio::time::sleep(pause) => continue,
                    () = &mut stop => break,
                }
            }
        };
        let slot = match &cap {
            Some((connections, refusal)) => match connections.try_open() {
                Some(slot) => Some(slot),
                None => {
                    connections.refuse(tcp, refusal);
                    continue;
                }
            },
            None => None,
        };
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(%err, "TCP_NODELAY could not be set");
        }
        // The connection's own clock: the head timeout and the idle keep-alive timeout
        // apart, watched by the sweeper.
        let clock = idle::Clock::new();
        sweeper.track(&clock);
        let service = Service { routes: routes.clone(), clock: clock.clone(), peer };
        let io = hyper_util::rt::TokioIo::new(idle::Watched::new(tcp, clock.clone()));
        let served = Served {
            connection: http.serve_connection(io, service),
            clock,
            phase: sweeper.handle(),
            peer,
            draining: false,
            _counted: (slot, drain.clone()),
        };
        tokio::spawn(served);
    }
    drop(listener);
    drop(drain);
    sweeper.set_phase(Phase::Stopping);
    if tokio::time::timeout(grace, drained.recv()).await.is_err() {
        let open = cap.as_ref().map(|(connections, _)| connections.open());
        tracing::warn!(?open, ?grace, "connections still open after the shutdown grace: dropped");
        sweeper.set_phase(Phase::Forced);
        // Each drops its connection at once now; bounded all the same.
        let _ = tokio::time::timeout(grace, drained.recv()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connections_task_stays_small() {
        // Every open connection (an idle SSE stream's too) holds its task: with tokio's
        // header and trailer, 896 bytes at most (seven of its 128-byte-aligned steps; 1,536
        // with a timer and two stop futures in a `select!`, 1,152 with an `async` block).
        let size = std::mem::size_of::<Served>();
        assert!(size <= 768, "a connection's task grew to {size} bytes");
    }
}

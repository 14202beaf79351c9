//! The 2026-07-28 path: a POST checked against its headers, submitted to a pooled
//! endpoint, answered as JSON or as an SSE stream scoped to the request.
//!
//! It is not a session: nothing outlives the exchange, `Mcp-Session-Id` and
//! `Last-Event-ID` are ignored, and no request is ever sent to the client. The endpoints
//! are long-lived connection actors under the server's tree, one per tenant (sharded for
//! the default tenant), so a request costs no actor spawn. Each submission names its
//! requester (the tenant hook's principal, else the peer's IP address), so that one
//! client over many connections gets its share of an endpoint and no more.
//!
//! Invariant: the exchange owns its `RouteReceiver`: when the client goes away the
//! response body (or the handler future, before the body exists) is dropped, the
//! receiver with it, and the endpoint cancels the request (`OnClose::Cancel`): a closed
//! stream is the cancel, a closed listen runs `handle_close`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_protocol::era::http::{
    check_request_headers, check_request_headers_of, routing_headers_agree, RoutingHeaders, Target, METHOD_HEADER,
    NAME_HEADER, PROTOCOL_VERSION_HEADER,
};
use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use arbor_server::exchange::{BodyKind, Endpoint, OnClose, Outgoing, Parsed, Route, RouteReceiver};
use arbor_server::{ConnectError, ConnectOptions, Requester};
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode};
use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;
use tokio::sync::{watch, Mutex};
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

use crate::drain::Admitted;
use crate::guard::{empty, json_response, modern_status, reject};
use crate::head::{Head, Known};
use crate::server::{stream_end, verified, Inner, StreamCount};
use crate::sse;

/// How many tenant endpoints are kept; past it the oldest-made is closed.
const MAX_TENANT_ENDPOINTS: usize = 1024;

/// A tenant endpoint's key: `ConnectOptions`' tenant and identity.
type TenantKey = (Option<String>, Option<String>);

/// The endpoints modern requests are submitted to.
pub(crate) struct ModernPool {
    /// The default tenant's endpoints; a request picks one round robin.
    shards: Vec<RwLock<Option<Endpoint>>>,
    next: AtomicUsize,
    /// Serialises opening, so a burst opens each endpoint once.
    opening: Mutex<()>,
    /// Endpoints of named tenants or identities (the tenant hook), by (tenant, auth).
    tenants: RwLock<HashMap<TenantKey, Endpoint>>,
}

impl ModernPool {
    pub(crate) fn new() -> ModernPool {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 4);
        ModernPool {
            shards: (0..n).map(|_| RwLock::new(None)).collect(),
            next: AtomicUsize::new(0),
            opening: Mutex::new(()),
            tenants: RwLock::new(HashMap::new()),
        }
    }

    /// An open endpoint for `options`, opened on first use or after it stopped.
    async fn endpoint(&self, inner: &Inner, options: Option<ConnectOptions>) -> Result<Endpoint, ConnectError> {
        match options {
            None => {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % self.shards.len();
                if let Some(ep) = self.shards[i].read().as_ref().filter(|ep| ep.is_open()) {
                    return Ok(ep.clone());
                }
                let _opening = self.opening.lock().await;
                if let Some(ep) = self.shards[i].read().as_ref().filter(|ep| ep.is_open()) {
                    return Ok(ep.clone());
                }
                let ep = open(inner, ConnectOptions::default()).await?;
                *self.shards[i].write() = Some(ep.clone());
                Ok(ep)
            }
            Some(options) => {
                let key = (options.tenant.clone(), options.auth.clone());
                if let Some(ep) = self.tenants.read().get(&key).filter(|ep| ep.is_open()) {
                    return Ok(ep.clone());
                }
                let _opening = self.opening.lock().await;
                if let Some(ep) = self.tenants.read().get(&key).filter(|ep| ep.is_open()) {
                    return Ok(ep.clone());
                }
                let ep = open(inner, options).await?;
                let mut tenants = self.tenants.write();
                tenants.retain(|_, ep| ep.is_open());
                if tenants.len() >= MAX_TENANT_ENDPOINTS {
                    if let Some(old) = tenants.keys().next().cloned() {
                        if let Some(old) = tenants.remove(&old) {
                            old.close();
                        }
                    }
                }
                tenants.insert(key, ep.clone());
                Ok(ep)
            }
        }
    }

    /// Closes every endpoint (graceful shutdown).
    pub(crate) fn close_all(&self) {
        for shard in &self.shards {
            if let Some(ep) = shard.write().take() {
                ep.close();
            }
        }
        for (_, ep) in self.tenants.write().drain() {
            ep.close();
        }
    }

    /// Endpoints currently open.
    pub(crate) fn open_count(&self) -> usize {
        self.shards.iter().filter(|s| s.read().as_ref().is_some_and(|e| e.is_open())).count()
            + self.tenants.read().values().filter(|e| e.is_open()).count()
    }
}

/// Boxed: an endpoint is opened once per shard or tenant, and inline its future (kilobytes:
/// it starts a connection actor) would size every 2026-07-28 request's future.
async fn open(inner: &Inner, options: ConnectOptions) -> Result<Endpoint, ConnectError> {
    Box::pin(inner.server.open_endpoint(options, Route::discard())).await
}

/// Looks a header up for `check_request_headers`: its text, borrowed, or `Err` for bytes
/// that are not visible ASCII. The three every request is checked against were found with
/// the head ([`Known`]).
fn lookup<'a>(parts: &'a Head, known: &'a Known<'a>) -> impl Fn(&str) -> Option<Result<&'a str, ()>> + 'a {
    move |name: &str| {
        let value = match name {
            PROTOCOL_VERSION_HEADER => known.protocol_version,
            METHOD_HEADER => known.method,
            NAME_HEADER => known.name,
            // An `Mcp-Param-*` header, named by the tool's annotations.
            _ => parts.headers.get(name),
        };
        value.map(|v| v.to_str().map_err(|_| ()))
    }
}

/// The routing headers `known` found, for the plain comparison
/// (`routing_headers_agree`).
fn routing<'a>(known: &Known<'a>) -> RoutingHeaders<'a> {
    RoutingHeaders {
        protocol_version: known.protocol_version.map(HeaderValue::as_bytes),
        method: known.method.map(HeaderValue::as_bytes),
        name: known.name.map(HeaderValue::as_bytes),
    }
}

/// Serves one 2026-07-28 POST whose body is already parsed.
///
/// Not an `async fn`, so the parsed body is held once (see `server::serve_endpoint`).
#[allow(clippy::manual_async_fn)] // on purpose: see above
pub(crate) fn post<'a>(
    inner: &'a Arc<Inner>,
    parts: &'a Head,
    known: &'a Known<'a>,
    parsed: Parsed,
) -> impl std::future::Future<Output = Response<Body>> + Send + 'a {
    async move {
        match parsed.kind() {
            BodyKind::Response => {
                let err = McpError::InvalidRequest {
                    message: "Invalid Request: a 2026-07-28 POST carries a request or a notification, never a response"
                        .into(),
                    data: None,
                };
                return reject(StatusCode::BAD_REQUEST, &err, None);
            }
            BodyKind::Batch => {
                let err = McpError::InvalidRequest {
                    message: "Invalid Request: batches are not part of 2026-07-28".into(),
                    data: None,
                };
                return reject(StatusCode::BAD_REQUEST, &err, None);
            }
            BodyKind::Request | BodyKind::Notification => {}
        }
        if let (BodyKind::Request, Some(version), Some(method)) =
            (parsed.kind(), parsed.modern_version(), parsed.method())
        {
            // A request that decoded answers from its typed params; only a refused one (its
            // error still comes second to a header mismatch) reads its params as JSON.
            let checked = match parsed.typed_target() {
                Some(target) => {
                    let annotated = match (MethodName::parse(method), target) {
                        (Some(MethodName::CallTool), Some(name)) => Some(inner.server.tool_param_headers(name)),
                        _ => None,
                    };
                    let target = target.map(Target::Text);
                    let annotated = annotated.as_deref().unwrap_or(&[]);
                    if annotated.is_empty() && routing_headers_agree(routing(known), method, target, version) {
                        Ok(())
                    } else {
                        let arguments = if annotated.is_empty() { None } else { parsed.typed_arguments() };
                        check_request_headers_of(&lookup(parts, known), method, target, arguments, version, annotated)
                    }
                }
                None => {
                    let params = parsed.params_json();
                    let name = params.and_then(|p| p.get("name")).and_then(|n| n.as_str());
                    let annotated = match (MethodName::parse(method), name) {
                        (Some(MethodName::CallTool), Some(name)) => Some(inner.server.tool_param_headers(name)),
                        _ => None,
                    };
                    let annotated = annotated.as_deref().unwrap_or(&[]);
                    check_request_headers(&lookup(parts, known), method, params, version, annotated)
                }
            };
            if let Err(err) = checked {
                return reject(StatusCode::BAD_REQUEST, &err, parsed.request_id().cloned());
            }
        }
        let verified = verified(parts);
        // The tenant hook's options, else the verified principal's tenant (one shared endpoint
        // per tenant; the principal rides each submission, not the endpoint), else the tenant
        // header's: as the gate worked them out.
        let options = crate::tenant::base_options(inner, parts);
        let endpoint = match inner.modern.endpoint(inner, options).await {
            Ok(ep) => ep,
            Err(ConnectError::Refused(refusal)) => return crate::tenant::refused(&refusal),
            Err(e) => {
                let err = McpError::internal(format!("Internal error: cannot serve the request: {e}"));
                return reject(StatusCode::SERVICE_UNAVAILABLE, &err, parsed.request_id().cloned());
            }
        };
        // Who sent it, for the endpoint's per-requester bounds, the owner of its tasks and the
        // binding of its `requestState`: the verified principal, else the peer's address. A
        // principal the tenant hook established is the endpoint's own (one endpoint per
        // principal), and the endpoint puts it first.
        let submit = |parsed: Parsed, route: Route| match verified {
            Some(v) => endpoint.submit_as(parsed, route, OnClose::Cancel, v.requester.clone(), v.principal.clone()),
            None => endpoint.submit_from(parsed, route, OnClose::Cancel, Requester::new(None, parts.peer)),
        };
        if parsed.kind() == BodyKind::Notification {
            submit(parsed, Route::discard());
            return empty(StatusCode::ACCEPTED);
        }
        let id = parsed.request_id().cloned();
        // A listen lasts as long as its client wants, so no longer than its token either.
        let listen = parsed.method() == Some(MethodName::SubscriptionsListen.as_str());
        let (route, mut rx) = Route::channel();
        // In the drain's ledger until the answer is handed on (returned, or written by the body).
        let admitted = inner.drain.admit();
        submit(parsed, route);
        let shutdown = if listen { stream_end(inner, verified) } else { inner.shutdown.subscribe() };
        // Biased: the answer first, as it is most often ready at the first poll (an
        // unbiased select also draws a random number to pick its first branch).
        let first = tokio::select! {
            biased;
            out = rx.recv() => Some(out),
            _ = inner.json_deadline() => None,
        };
        if first.is_none() && inner.is_shutting_down() {
            let err = McpError::internal("Internal error: the server is shutting down");
            return reject(StatusCode::SERVICE_UNAVAILABLE, &err, id);
        }
        match first {
            Some(Some(out @ Outgoing::Response(_))) => {
                let status = modern_status(out.error_code());
                let Outgoing::Response(body) = out else { unreachable!() };
                json_response(status, body)
            }
            Some(Some(out)) => stream(inner, Some(out), rx, shutdown, admitted),
            // The endpoint stopped (shutdown, or evicted from the pool) before answering: the
            // request may be retried elsewhere, so 503 rather than a 500 that blames the server.
            Some(None) => {
                let err = McpError::internal("Internal error: the endpoint closed before answering; retry");
                reject(StatusCode::SERVICE_UNAVAILABLE, &err, id)
            }
            None => stream(inner, None, rx, shutdown, admitted),
        }
    }
}

/// An SSE answer reading one request's route until its response.
fn stream(
    inner: &Arc<Inner>,
    first: Option<Outgoing>,
    rx: RouteReceiver,
    shutdown: watch::Receiver<bool>,
    admitted: Admitted,
) -> Response<Body> {
    let period = inner.config.keep_alive;
    let mut keep_alive = interval_at(Instant::now() + period, period);
    keep_alive.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let state = ExchangeStream {
        first,
        rx,
        keep_alive,
        shutdown,
        done: false,
        _count: inner.count_stream(),
        _admitted: admitted,
    };
    let body = futures::stream::unfold(state, ExchangeStream::next);
    sse::response(Body::from_stream(body))
}

/// The state of one modern SSE answer.
struct ExchangeStream {
    first: Option<Outgoing>,
    rx: RouteReceiver,
    keep_alive: Interval,
    shutdown: watch::Receiver<bool>,
    done: bool,
    _count: StreamCount,
    /// The exchange's place in the drain's ledger, until the body ends.
    _admitted: Admitted,
}

impl ExchangeStream {
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, ExchangeStream)> {
        if self.done {
            return None;
        }
        let out = match self.first.take() {
            Some(out) => out,
            None => {
                let woke = tokio::select! {
                    out = self.rx.recv() => Some(out),
                    _ = self.keep_alive.tick() => None,
                    _ = self.shutdown.wait_for(|stop| *stop) => Some(None),
                };
                match woke {
                    Some(Some(out)) => out,
                    Some(None) => {
                        // The route ended, or shutdown: what is already queued still goes
                        // out (a drained server's last answers), then the stream ends.
                        self.done = true;
                        let mut buf = BytesMut::new();
                        while let Some(out) = self.rx.try_recv() {
                            self.push(&mut buf, out);
                        }
                        return (!buf.is_empty()).then(|| (Ok(buf.freeze()), self));
                    }
                    None => return Some((Ok(Bytes::from_static(sse::KEEP_ALIVE)), self)),
                }
            }
        };
        let mut buf = BytesMut::new();
        self.push(&mut buf, out);
        // Whatever else is already queued leaves in the same write.
        while !self.done {
            match self.rx.try_recv() {
                Some(out) => self.push(&mut buf, out),
                None => break,
            }
        }
        Some((Ok(buf.freeze()), self))
    }

    fn push(&mut self, buf: &mut BytesMut, out: Outgoing) {
        match out {
            Outgoing::Response(body) => {
                sse::put_data(buf, &body);
                self.done = true;
            }
            // A request is never sent in this era; the runtime does not make one, and if
            // it did it could not be answered, so it is not written.
            Outgoing::Request(_) => {}
            Outgoing::Notification(body) => sse::put_data(buf, &body),
        }
    }
}

//! Liveness and readiness probes beside the MCP endpoint ([`HttpConfig::health`]):
//! `GET /healthz` and `GET /readyz` by default.
//!
//! - Live (200): the server's supervision tree is up (`Server::is_live`), or not started
//!   yet; 503 once it has stopped. A process supervisor restarts a process that is not live.
//! - Ready (200): live, not draining (`HttpServer::shutdown_with_deadline`), and the bus
//!   reaches its source or has been reconnecting for no longer than
//!   [`HealthConfig::bus_grace`]. Otherwise 503 with a small JSON body saying why, so a
//!   balancer stops sending new clients while the ones connected are served.
//!
//! It is not a metrics endpoint and reports nothing about load. The probes pass the same
//! `Host`/`Origin` checks as the endpoint, and are not authenticated (probes carry no
//! token); they reveal only the words below. Invariant: a probe reads atomics and one
//! short lock, never awaits the tree, so it answers while every worker is busy.
//!
//! [`HttpConfig::health`]: crate::HttpConfig::health

use std::sync::Arc;
use std::time::Duration;

use arbor_server::bus::BusHealth;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Response, StatusCode};
use serde_json::json;

use crate::guard::json_response;
use crate::server::Inner;

/// The probes' paths and the bus's reconnect grace (see the module).
#[derive(Clone, Debug)]
pub struct HealthConfig {
    /// The liveness probe's path. Default `/healthz`.
    pub live_path: String,
    /// The readiness probe's path. Default `/readyz`.
    pub ready_path: String,
    /// How long the bus may be reconnecting before the server reports not ready: a Redis
    /// restart of a few seconds should not take every node out of the balancer at once.
    /// Default 10 s.
    pub bus_grace: Duration,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig { live_path: "/healthz".into(), ready_path: "/readyz".into(), bus_grace: Duration::from_secs(10) }
    }
}

impl HealthConfig {
    /// The same probes with a bus reconnect grace of `grace`.
    pub fn bus_grace(mut self, grace: Duration) -> Self {
        self.bus_grace = grace;
        self
    }

    /// The same probes at other paths.
    pub fn paths(mut self, live: impl Into<String>, ready: impl Into<String>) -> Self {
        self.live_path = live.into();
        self.ready_path = ready.into();
        self
    }
}

/// Why a server is not ready, or that it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    Ready,
    NotLive,
    Draining,
    BusReconnecting(Duration),
    BusClosed,
}

impl Inner {
    pub(crate) fn readiness(&self) -> Readiness {
        if !self.server.is_live() {
            return Readiness::NotLive;
        }
        if self.drain.is_draining() {
            return Readiness::Draining;
        }
        let grace = self.config.health.as_ref().map(|h| h.bus_grace).unwrap_or_default();
        match self.server.bus().health() {
            health if health.is_ready_within(grace) => Readiness::Ready,
            BusHealth::Reconnecting { down_for } => Readiness::BusReconnecting(down_for),
            _ => Readiness::BusClosed,
        }
    }
}

/// `GET /healthz`.
pub(crate) async fn live(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let (parts, _) = request.into_parts();
    if let Err(refused) = inner.guard.check_origin_and_host(&parts) {
        return *refused;
    }
    if inner.server.is_live() {
        probe(StatusCode::OK, json!({"status": "live"}))
    } else {
        probe(StatusCode::SERVICE_UNAVAILABLE, json!({"status": "down", "reason": "the supervision tree has stopped"}))
    }
}

/// `GET /readyz`.
pub(crate) async fn ready(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let (parts, _) = request.into_parts();
    if let Err(refused) = inner.guard.check_origin_and_host(&parts) {
        return *refused;
    }
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    match inner.readiness() {
        Readiness::Ready => probe(StatusCode::OK, json!({"status": "ready"})),
        Readiness::NotLive => probe(unavailable, json!({"status": "not ready", "reason": "stopped"})),
        Readiness::Draining => probe(unavailable, json!({"status": "not ready", "reason": "draining"})),
        Readiness::BusReconnecting(down_for) => probe(
            unavailable,
            json!({"status": "not ready", "reason": "bus reconnecting", "downForMs": down_for.as_millis() as u64}),
        ),
        Readiness::BusClosed => probe(unavailable, json!({"status": "not ready", "reason": "bus closed"})),
    }
}

fn probe(status: StatusCode, body: serde_json::Value) -> Response<Body> {
    let mut response = json_response(status, body.to_string().into_bytes());
    // A probe's answer is about now: no cache may keep it.
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

//! The 2024-11-05 HTTP+SSE transport (`HttpConfig::legacy_sse`): `GET {base}/sse` opens a
//! session and its one stream, whose first event (`endpoint`) names
//! `{base}/messages?sessionId=<id>`; every POST there is answered 202 and its response
//! travels on the stream as a `message` event.
//!
//! It is not Streamable HTTP: no resumption, no per-request streams; the session lives
//! exactly as long as its GET stream (closing the stream closes the session and its
//! endpoint).
//!
//! Invariant: the stream's body owns the session's registration; dropping the body (the
//! client left, or shutdown) removes it and closes the endpoint.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_server::exchange::{Endpoint, OnClose, Outgoing, Route, RouteReceiver};
use arbor_server::{ConnectError, Requester};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Response, StatusCode};
use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;
use tokio::sync::watch;
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

use super::admission::Slot;
use super::session::new_session_id;
use crate::guard::{empty, reject};
use crate::head::Head;
use crate::server::{authenticate, read_parsed, session_options, stream_end, verified, Inner, StreamCount};
use crate::sse;
use crate::tenant::Tenancy;

/// The open 2024-11-05 sessions: endpoint and the route their POSTs answer on.
#[derive(Default)]
pub(crate) struct SseSessions {
    map: RwLock<HashMap<Arc<str>, SseSession>>,
}

/// One 2024-11-05 session.
struct SseSession {
    endpoint: Endpoint,
    route: Route,
    /// The principal that opened the stream (OAuth on): the only one it serves.
    owner: Option<Requester>,
    /// The tenant and requester it was opened with, which its POSTs are charged to.
    tenancy: Tenancy,
    /// Its place in the session caps, given back when it leaves the map.
    _slot: Slot,
}

impl SseSessions {
    pub(crate) fn len(&self) -> usize {
        self.map.read().len()
    }

    pub(crate) fn close_all(&self) {
        for (_, session) in self.map.write().drain() {
            session.endpoint.close();
        }
    }
}

/// `GET {base}/sse`.
pub(crate) async fn open(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let mut parts = Head::routed(request.into_parts().0);
    if let Err(refused) = inner.guard.check_origin_and_host(&parts) {
        return *refused;
    }
    if let Err(refused) = authenticate(&inner, &mut parts).await {
        return refused;
    }
    if inner.drain.is_draining() {
        return crate::drain::refused(None);
    }
    // The stream is a session's only way in: its tenant's quarantine and rates first.
    if let Err(refused) = crate::tenant::admit(&inner, &mut parts) {
        return refused;
    }
    let unavailable = |message: String| {
        reject(StatusCode::SERVICE_UNAVAILABLE, &McpError::Other { code: -32000, message, data: None }, None)
    };
    // The same caps as Streamable HTTP sessions, counted together with them.
    let slot = match inner.sessions.admission.admit(parts.peer.map(|a| a.ip()), &inner.config) {
        Ok(slot) => slot,
        Err(refusal) => return refusal.response(&inner.config),
    };
    let id = match new_session_id() {
        Ok(id) => id,
        Err(e) => return unavailable(format!("Service Unavailable: no randomness: {e}")),
    };
    let options = session_options(&inner, &parts).session_id(id.clone());
    let owner = verified(&parts).map(|v| v.requester.clone());
    let tenancy = Tenancy::of(&options);
    let (route, rx) = Route::channel();
    let endpoint = match inner.server.open_endpoint(options, route.clone()).await {
        Ok(ep) => ep,
        // The policy's refusal (the tenant's sessions); returning gives the slot back.
        Err(ConnectError::Refused(refusal)) => return crate::tenant::refused(&refusal),
        Err(e) => return unavailable(format!("Service Unavailable: cannot open a session: {e}")),
    };
    inner.sse_sessions.map.write().insert(id.clone(), SseSession { endpoint, route, owner, tenancy, _slot: slot });
    let uri = format!("{}/messages?sessionId={id}", inner.config.legacy_sse_base());
    let period = inner.config.keep_alive;
    let mut keep_alive = interval_at(Instant::now() + period, period);
    keep_alive.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let state = Stream {
        first: Some(sse::named("endpoint", uri.as_bytes())),
        rx,
        keep_alive,
        shutdown: stream_end(&inner, verified(&parts)),
        _count: inner.count_stream(),
        registration: Registration { inner: inner.clone(), id },
        ending: false,
    };
    sse::response(Body::from_stream(futures::stream::unfold(state, Stream::next)))
}

/// `POST {base}/messages?sessionId=…`.
pub(crate) async fn message(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let mut parts = Head::routed(parts);
    if let Err(refused) = inner.guard.check_origin_and_host(&parts) {
        return *refused;
    }
    if let Err(refused) = authenticate(&inner, &mut parts).await {
        return refused;
    }
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"));
    if !json {
        let err = McpError::InvalidRequest {
            message: "Unsupported Media Type: Content-Type must be application/json".into(),
            data: None,
        };
        return reject(StatusCode::UNSUPPORTED_MEDIA_TYPE, &err, None);
    }
    let id = parts
        .uri
        .query()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("sessionId=")))
        .map(str::to_owned);
    let Some(id) = id else {
        let err = McpError::InvalidRequest { message: "Bad Request: sessionId is required".into(), data: None };
        return reject(StatusCode::BAD_REQUEST, &err, None);
    };
    let requester = verified(&parts).map(|v| &v.requester);
    let found = inner
        .sse_sessions
        .map
        .read()
        .get(id.as_str())
        .filter(|s| s.owner.as_ref() == requester)
        .map(|s| (s.endpoint.clone(), s.route.clone(), s.tenancy.clone()));
    let Some((endpoint, route, tenancy)) = found else {
        let err = McpError::Other { code: -32001, message: "Session not found".into(), data: None };
        return reject(StatusCode::NOT_FOUND, &err, None);
    };
    // Charged to the session's tenant, before the body is read (`crate::tenant`).
    if let Err(refused) = crate::tenant::admit_as(&inner, &mut parts, &tenancy) {
        return refused;
    }
    let parsed = match read_parsed(&inner, &parts, parts.headers.get(header::CONTENT_LENGTH), body).await {
        Ok(parsed) => parsed,
        Err(answer) => return answer,
    };
    if inner.drain.is_draining() && parsed.expected_responses() > 0 {
        return crate::drain::refused(parsed.request_id().cloned());
    }
    match verified(&parts) {
        Some(v) => {
            if let Some(auth) = &inner.auth {
                if let Err(refused) = auth.authorize(v, &parsed, &inner.server) {
                    return refused;
                }
            }
            endpoint.submit_as(parsed, route, OnClose::Continue, v.requester.clone(), v.principal.clone())
        }
        None => endpoint.submit(parsed, route, OnClose::Continue),
    }
    empty(StatusCode::ACCEPTED)
}

/// Removes the session when the stream's body goes.
struct Registration {
    inner: Arc<Inner>,
    id: Arc<str>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let removed = self.inner.sse_sessions.map.write().remove(&self.id);
        if let Some(session) = removed {
            session.endpoint.close();
        }
    }
}

struct Stream {
    first: Option<Bytes>,
    rx: RouteReceiver,
    keep_alive: Interval,
    shutdown: watch::Receiver<bool>,
    _count: StreamCount,
    registration: Registration,
    /// Shutdown came: what was queued is written, then the stream ends.
    ending: bool,
}

impl Stream {
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Stream)> {
        if let Some(first) = self.first.take() {
            return Some((Ok(first), self));
        }
        if self.ending {
            return None;
        }
        let woke = tokio::select! {
            out = self.rx.recv() => Some(out),
            _ = self.keep_alive.tick() => None,
            _ = self.shutdown.wait_for(|stop| *stop) => {
                // What is already queued (a drained server's last answers) still goes out.
                self.ending = true;
                Some(self.rx.try_recv())
            }
        };
        let Some(out) = woke else { return Some((Ok(Bytes::from_static(sse::KEEP_ALIVE)), self)) };
        let mut buf = BytesMut::new();
        let mut next = out;
        while let Some(out) = next {
            let (Outgoing::Response(json) | Outgoing::Notification(json) | Outgoing::Request(json)) = out;
            buf.extend_from_slice(&sse::named("message", &json));
            next = self.rx.try_recv();
        }
        if buf.is_empty() {
            // The endpoint is gone (or shutting down): the stream, and the session, end.
            let _ = &self.registration;
            return None;
        }
        Some((Ok(buf.freeze()), self))
    }
}

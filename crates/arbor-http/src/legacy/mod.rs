//! The 2025-03-26 … 2025-11-25 path: sessions opened by `initialize`, POSTs answered as
//! JSON or as resumable SSE streams, the standalone GET stream, DELETE; and, as an
//! option, the 2024-11-05 HTTP+SSE transport (`sse_transport`).
//!
//! It is not the session's protocol state (the endpoint, a connection actor, negotiates
//! and serves); it maps HTTP onto it: which stream a message goes on, what is kept for
//! `Last-Event-ID`, when a session is gone.
//!
//! One standalone GET stream is read at a time: a second GET (without `Last-Event-ID`)
//! takes the stream over and the first response ends, so a client that reconnects after a
//! half-open connection is never refused; what the first had not delivered goes to the
//! second. The endpoint is told whether a GET reads the standalone stream
//! (`Endpoint::standalone_reader`): a 2025-11-25 task's input request with neither that
//! nor the task's `tasks/result` stream open waits for one, rather than sit unread.
//!
//! Invariants: a disconnect is not a cancel (`OnClose::Continue`; a POST stream's pump
//! keeps buffering after its client left); every message goes on exactly one stream (the
//! POST stream of the request it belongs to, or the standalone stream); 404 means the
//! session is unknown or gone, 400 that the request named none; a request whose route
//! ends unanswered (cancelled by its client, its session deleted) gets no JSON-RPC
//! answer, its stream just ends; `initialize` past a session cap (`admission`) is 503.

pub(crate) mod admission;
mod give_back;
pub(crate) mod session;
pub(crate) mod shared;
pub(crate) mod sse_transport;
pub(crate) mod stream;

use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::reflect::clamp_bytes;
use arbor_protocol::version::{Era, Feature, ProtocolVersion};
use arbor_server::exchange::{BodyKind, OnClose, Outgoing, Parsed, Route};
use arbor_server::ConnectError;
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode};

pub(crate) use admission::SESSION_COST_ESTIMATE;
pub(crate) use session::Sessions;
use session::{new_session_id, Session};
use stream::{EventStream, ReaderStart};

use crate::auth::Verified;
use crate::guard::{accepts, empty, json_response, modern_status, reject};
use crate::head::Head;
use crate::server::{session_options, stream_expiry, verified, Inner, PROTOCOL_VERSION, SESSION_ID};
use crate::sse;
use crate::tenant::Tenancy;

fn bad_request(message: &str) -> Response<Body> {
    let err = McpError::InvalidRequest { message: format!("Bad Request: {message}"), data: None };
    reject(StatusCode::BAD_REQUEST, &err, None)
}

fn session_not_found() -> Response<Body> {
    let err = McpError::Other { code: -32001, message: "Session not found".into(), data: None };
    reject(StatusCode::NOT_FOUND, &err, None)
}

fn unavailable(err: &McpError) -> Response<Body> {
    reject(StatusCode::SERVICE_UNAVAILABLE, err, None)
}

/// 503 with -32000 "Service Unavailable: {reason}": a resource this request needs (a
/// supervised pump's place, the session store) is not to be had now; `id` when known.
pub(crate) fn service_unavailable(reason: impl std::fmt::Display, id: Option<RequestId>) -> Response<Body> {
    let err = McpError::Other { code: -32000, message: format!("Service Unavailable: {reason}"), data: None };
    reject(StatusCode::SERVICE_UNAVAILABLE, &err, id)
}

/// The session a request names: `Err` is the 404 (or 400 for a malformed id). With a
/// session store, one this node does not hold is adopted from it (`shared::adopt`).
// The error is the request's final answer, made once: not worth a box.
#[allow(clippy::result_large_err)]
async fn find_session(inner: &Arc<Inner>, parts: &Head) -> Result<Arc<Session>, Response<Body>> {
    find_session_named(inner, parts, parts.headers.get(SESSION_ID)).await
}

/// [`find_session`], with the `Mcp-Session-Id` header already looked up (each lookup
/// hashes the name again, and a POST reads it on its way here).
#[allow(clippy::result_large_err)]
async fn find_session_named(
    inner: &Arc<Inner>,
    parts: &Head,
    raw: Option<&HeaderValue>,
) -> Result<Arc<Session>, Response<Body>> {
    let Some(raw) = raw else {
        return Err(bad_request("Mcp-Session-Id header is required"));
    };
    let Ok(id) = raw.to_str() else { return Err(bad_request("Mcp-Session-Id is not visible ASCII")) };
    // The tenant gate looked this id up already (a POST's, or a GET's): its record is the
    // registry's unless the session left since.
    let gated = crate::tenant::gated_session(parts).filter(|s| *s.id == *id && !s.is_closed()).cloned();
    let session = match gated.or_else(|| inner.sessions.get(id)) {
        Some(session) => session,
        // Boxed: adopting opens an endpoint, a future of kilobytes that every legacy
        // request's future would otherwise carry (see `docs/internals.md`, the hot path).
        None => Box::pin(shared::adopt(inner, parts, id)).await?.ok_or_else(session_not_found)?,
    };
    // A session belongs to the principal that initialized it: another principal's valid
    // token does not reach it, and learns nothing (the answer is an unknown session's),
    // as the spec's session-hijacking advice keys sessions by user and id.
    if session.owner.as_ref() != verified(parts).map(|v| &v.requester) {
        return Err(session_not_found());
    }
    Ok(session)
}

/// `MCP-Protocol-Version` on a session's request: absent is the negotiated revision (or
/// 2025-03-26, as the spec allows); present must be a legacy revision the server serves.
/// A different legacy revision than the negotiated one is tolerated: SDK clients send
/// their own constant on some requests, and the session's terms do not change.
#[allow(clippy::result_large_err)]
fn check_version_header(inner: &Inner, header: Option<&HeaderValue>) -> Result<(), Response<Body>> {
    let Some(raw) = header else { return Ok(()) };
    let version = raw.to_str().ok().and_then(ProtocolVersion::parse);
    match version {
        Some(v) if v.era() == Era::Legacy && inner.server.config().supported_versions.contains(v) => Ok(()),
        _ => Err(bad_request(&format!(
            "Unsupported protocol version in MCP-Protocol-Version: {}",
            clamp_bytes(raw.as_bytes())
        ))),
    }
}

/// A legacy POST (the body is parsed and not modern); `version_header` is its
/// `MCP-Protocol-Version`.
///
/// Not an `async fn`, so the parsed body is held once (see `server::serve_endpoint`).
#[allow(clippy::manual_async_fn)] // on purpose: see above
pub(crate) fn post<'a>(
    inner: &'a Arc<Inner>,
    parts: &'a Head,
    version_header: Option<&'a HeaderValue>,
    parsed: Parsed,
    session_header: Option<&'a HeaderValue>,
) -> impl std::future::Future<Output = Response<Body>> + Send + 'a {
    async move {
        if session_header.is_none() {
            if parsed.is_initialize() {
                // Boxed: once per session, and opening its endpoint is a future of kilobytes
                // that every request's future would otherwise carry.
                return Box::pin(initialize(inner, parts, parsed)).await;
            }
            return bad_request("Mcp-Session-Id header is required");
        }
        let session = match find_session_named(inner, parts, session_header).await {
            Ok(session) => session,
            Err(answer) => return answer,
        };
        if let Err(answer) = check_version_header(inner, version_header) {
            return answer;
        }
        serve(inner, &session, parsed, verified(parts)).await
    }
}

/// `initialize` without a session: opens one, answers with its id.
async fn initialize(inner: &Arc<Inner>, parts: &Head, parsed: Parsed) -> Response<Body> {
    // The slot is taken first, so concurrent `initialize`s of one peer cannot overshoot;
    // every early return below gives it back.
    let slot = match inner.sessions.admission.admit(parts.peer.map(|a| a.ip()), &inner.config) {
        Ok(slot) => slot,
        Err(refusal) => return refusal.response(&inner.config),
    };
    let id = match new_session_id() {
        Ok(id) => id,
        Err(e) => return unavailable(&McpError::internal(format!("Internal error: no randomness: {e}"))),
    };
    // The session's requests and subscriptions count against its client's share of the
    // tenant (with the other sessions and POSTs from the same address or principal).
    let options = session_options(inner, parts).session_id(id.clone());
    let owner = verified(parts).map(|v| v.requester.clone());
    let tenancy = Tenancy::of(&options);
    let standalone = Arc::new(EventStream::new(0));
    let store = shared::store(inner).cloned();
    let endpoint = match &store {
        // Shared: its session-wide stream goes to the store, read by whichever node a GET hits.
        Some(store) => match shared::open(inner, store, options, &id).await {
            Ok(endpoint) => endpoint,
            Err(answer) => return answer,
        },
        None => match local_endpoint(inner, options, &standalone).await {
            Ok(endpoint) => endpoint,
            Err(answer) => return answer,
        },
    };
    let session =
        Session::new(id.clone(), endpoint, standalone, slot, inner.sessions.epoch, owner, tenancy, store.is_some());
    let session = Arc::new(session);
    let id_header = HeaderValue::from_str(&id).expect("hex is a valid header value");

    let request_id = parsed.request_id().cloned();
    let params = store.as_ref().map(|_| parsed.params_json().cloned().unwrap_or_default());
    let (route, mut rx) = Route::channel();
    session.endpoint.submit(parsed, route, OnClose::Continue);
    // The endpoint answers `initialize` itself, at once: nothing precedes it.
    let answer = loop {
        match rx.recv().await {
            Some(Outgoing::Response(json)) => break Some(json),
            Some(_) => continue,
            None => break None,
        }
    };
    let Some(json) = answer else {
        session.endpoint.close();
        let err = McpError::internal("Internal error: initialize was not answered");
        return reject(StatusCode::INTERNAL_SERVER_ERROR, &err, request_id);
    };
    let answer = Outgoing::Response(json);
    let refused = answer.error_code();
    let Outgoing::Response(json) = answer else { unreachable!() };
    if let Some(code) = refused {
        // No session for a refused initialize.
        session.endpoint.close();
        let status = match modern_status(Some(code)) {
            StatusCode::OK => StatusCode::BAD_REQUEST,
            other => other,
        };
        return json_response(status, json);
    }
    // Shared: saved before its id is answered, so the next request finds it on any node.
    if let (Some(store), Some(params)) = (&store, params) {
        if let Err(e) = shared::save(store, inner, &session, params).await {
            session.endpoint.close();
            return service_unavailable(e, request_id);
        }
        shared::ensure_deliveries(inner);
    }
    inner.sessions.insert(session);
    inner.sessions.ensure_reaper(Arc::downgrade(inner), inner.config.session_idle_timeout);
    let mut response = json_response(StatusCode::OK, json);
    response.headers_mut().insert(SESSION_ID, id_header);
    response
}

/// Opens a session's connection on this node alone: its messages unrelated to any
/// request go to `standalone`, fed from the route as they are sent.
#[allow(clippy::result_large_err)]
async fn local_endpoint(
    inner: &Arc<Inner>,
    options: arbor_server::ConnectOptions,
    standalone: &Arc<EventStream>,
) -> Result<arbor_server::exchange::Endpoint, Response<Body>> {
    let (route, rx) = Route::channel();
    let endpoint = match inner.server.open_endpoint(options, route).await {
        Ok(ep) => ep,
        // The tenant's sessions are all taken (or the server knows its most tenants): the
        // policy's refusal, not a fault; returning gives the admission slot back.
        Err(ConnectError::Refused(refusal)) => return Err(crate::tenant::refused(&refusal)),
        Err(e) => {
            let err = McpError::internal(format!("Internal error: cannot open a session: {e}"));
            return Err(unavailable(&err));
        }
    };
    // Fed on each send, with no task of its own (`EventStream::feed`).
    standalone.feed_from(rx, inner.config.event_buffer);
    // Until a GET stream reads it, the standalone queue is not read: a 2025-11-25 task's
    // input request then waits for that GET or the task's tasks/result stream.
    let reader = endpoint.standalone_reader();
    reader.set(false);
    standalone.on_reader(move |read| reader.set(read));
    Ok(endpoint)
}

/// A POST of a known session.
async fn serve(
    inner: &Arc<Inner>,
    session: &Arc<Session>,
    parsed: Parsed,
    verified: Option<&Arc<Verified>>,
) -> Response<Body> {
    let busy = session.busy();
    if session.shared {
        // An answer for another node, or a message every copy applies. Boxed, as the
        // stream below: only a shared session pays for its future.
        if let Some(answer) = Box::pin(shared::route(inner, session, &parsed)).await {
            return answer;
        }
    }
    let expected = parsed.expected_responses();
    // With OAuth, each request carries the principal its own token proved (the session's
    // identity, checked by `find_session`; its scopes and expiry as of now).
    let submit = |parsed: Parsed, route: Route| match verified {
        Some(v) => {
            session.endpoint.submit_as(parsed, route, OnClose::Continue, v.requester.clone(), v.principal.clone())
        }
        None => session.endpoint.submit(parsed, route, OnClose::Continue),
    };
    if matches!(parsed.kind(), BodyKind::Notification | BodyKind::Response) || expected == 0 {
        submit(parsed, Route::discard());
        return empty(StatusCode::ACCEPTED);
    }
    let request_id = parsed.request_id().cloned();
    let (route, mut rx) = Route::channel();
    // In the drain's ledger until every answer is returned or in the stream's buffer.
    let admitted = inner.drain.admit();
    submit(parsed, route);
    // The route ending before anything came means the request will never be answered:
    // its client cancelled it, its session was deleted, or its endpoint stopped. A
    // cancelled request gets no response (not a -32603 in its name), so its stream just
    // ends, as a pumped stream does when its route ends.
    let mut ended = false;
    // Biased: the answer first (see `modern::post`).
    let first = tokio::select! {
        biased;
        out = rx.recv() => {
            ended = out.is_none();
            out
        }
        _ = inner.json_deadline() => None,
    };
    if first.is_none() && !ended && inner.is_shutting_down() {
        let err = McpError::internal("Internal error: the server is shutting down");
        return reject(StatusCode::SERVICE_UNAVAILABLE, &err, request_id);
    }
    let first = match first {
        Some(Outgoing::Response(json)) if expected == 1 || json.first() == Some(&b'[') => {
            return json_response(StatusCode::OK, json);
        }
        other => other,
    };
    // Boxed: the stream's setup (the pump's supervisor started once, a shared session's
    // store writes) is a future of kilobytes that every request answered as JSON, the
    // common case, would otherwise carry.
    let answering = Answering { busy, rx, admitted, first, ended, expected };
    Box::pin(stream_answer(inner, session, answering)).await
}

/// What [`serve`] hands over when the answer is an SSE stream.
struct Answering {
    busy: session::Busy,
    rx: arbor_server::exchange::RouteReceiver,
    admitted: crate::drain::Admitted,
    /// What came before the JSON wait ran out, if anything.
    first: Option<Outgoing>,
    /// The route ended before anything came.
    ended: bool,
    /// Responses the request expects.
    expected: usize,
}

/// The rest of [`serve`] for an answer that is an SSE stream.
async fn stream_answer(inner: &Arc<Inner>, session: &Arc<Session>, answering: Answering) -> Response<Body> {
    let Answering { busy, rx, admitted, first, ended, mut expected } = answering;
    // The answer is an SSE stream: its events are buffered for resumption, filled by a
    // supervised pump that outlives this connection.
    let stream = session.new_stream();
    // Shared: the stream is written through to the store, so it resumes on any node.
    let mirror = shared::Mirror::of(inner, session);
    if let Some(mirror) = mirror.as_ref().filter(|_| reader_start(inner, session).prime.is_some()) {
        mirror.open(&stream).await;
    }
    if ended {
        match &mirror {
            Some(mirror) => mirror.finish(&stream).await,
            None => stream.finish(),
        }
        return sse::response(stream::body(stream, reader_start(inner, session), busy, None, inner.count_stream()));
    }
    if let Some(out) = first {
        if matches!(out, Outgoing::Response(_)) {
            expected -= 1;
        }
        match &mirror {
            Some(mirror) => mirror.write(Some(&stream), &out).await,
            None => {
                let (Outgoing::Response(json) | Outgoing::Notification(json) | Outgoing::Request(json)) = out;
                stream.push(json, inner.config.event_buffer);
            }
        }
    }
    let tasks = match inner.stream_tasks().await {
        Ok(tasks) => tasks,
        Err(err) => {
            stream.finish();
            return unavailable(&err);
        }
    };
    let cap = inner.config.event_buffer;
    let pumped = stream.clone();
    let spawned = match (expected, mirror) {
        (0, Some(mirror)) => {
            mirror.finish(&pumped).await;
            Ok(())
        }
        (0, None) => {
            pumped.finish();
            Ok(())
        }
        (_, Some(mirror)) => tasks
            .spawn(async move {
                shared::pump(rx, Some(pumped), expected, mirror).await;
                drop(admitted);
                Ok::<(), ()>(())
            })
            .map(drop),
        (_, None) => tasks
            .spawn(async move {
                stream::pump(rx, pumped, expected, cap).await;
                drop(admitted);
                Ok::<(), ()>(())
            })
            .map(drop),
    };
    if let Err(e) = spawned {
        // The request runs on; its answers are lost with the route, as on a dropped POST.
        stream.finish();
        return service_unavailable(e, None);
    }
    sse::response(stream::body(stream, reader_start(inner, session), busy, None, inner.count_stream()))
}

/// How the first reader of a new POST stream starts: from its beginning, primed (and
/// closed for polling) when the session's revision resumes streams (2025-11-25).
fn reader_start(inner: &Inner, session: &Session) -> ReaderStart {
    let polling = session.version().is_some_and(|v| v.supports(Feature::SsePolling));
    ReaderStart {
        cursor: 0,
        prime: polling.then_some(inner.config.sse_retry),
        poll_after: if polling { inner.config.sse_polling } else { None },
        keep_alive: inner.config.keep_alive,
    }
}

/// A GET with a session: the standalone stream, or a resumption with `Last-Event-ID`.
pub(crate) async fn get(inner: &Arc<Inner>, parts: &Head) -> Response<Body> {
    if !accepts(&parts.headers, "text/event-stream", true) {
        let err = McpError::InvalidRequest {
            message: "Not Acceptable: Accept must list text/event-stream".into(),
            data: None,
        };
        return reject(StatusCode::NOT_ACCEPTABLE, &err, None);
    }
    let session = match find_session(inner, parts).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    if let Err(answer) = check_version_header(inner, parts.headers.get(PROTOCOL_VERSION)) {
        return answer;
    }
    let polling = session.version().is_some_and(|v| v.supports(Feature::SsePolling));
    let keep_alive = inner.config.keep_alive;
    let (stream, start) = match parts.headers.get("last-event-id") {
        Some(raw) => {
            let Some((stream_id, seq)) = raw.to_str().ok().and_then(sse::parse_event_id) else {
                return bad_request("Last-Event-ID is not an event id of this server");
            };
            let found = match (stream_id, session.shared) {
                // Shared: the session-wide stream is the store's, followed from `seq`; a
                // POST stream another node wrote is followed from the store too.
                (0, true) => shared::standalone(inner, &session, Some(seq)).await.map(Some),
                (_, shared) => match session.stream(stream_id) {
                    Some(stream) => Ok(Some(stream)),
                    None if shared => shared::remote_stream(inner, &session, stream_id).await,
                    None => Ok(None),
                },
            };
            let found = match found {
                Ok(found) => found,
                Err(answer) => return answer,
            };
            let Some(stream) = found else {
                let err = McpError::InvalidRequest {
                    message: "Not Found: that event stream is no longer kept".into(),
                    data: None,
                };
                return reject(StatusCode::NOT_FOUND, &err, None);
            };
            let poll_after = if polling && stream_id != 0 { inner.config.sse_polling } else { None };
            (stream, ReaderStart { cursor: seq, prime: None, poll_after, keep_alive })
        }
        // A new standalone stream during the drain: it would only be closed again.
        None if inner.drain.is_draining() => return crate::drain::refused(None),
        None => {
            let stream = match shared::standalone(inner, &session, None).await {
                Ok(stream) => stream,
                Err(answer) => return answer,
            };
            let cursor = stream.delivered();
            (
                stream,
                ReaderStart { cursor, prime: polling.then_some(inner.config.sse_retry), poll_after: None, keep_alive },
            )
        }
    };
    let busy = session.busy();
    let expiry = stream_expiry(inner, verified(parts));
    sse::response(stream::body(stream, start, busy, expiry, inner.count_stream()))
}

/// DELETE: ends the session (shared: on every node, through the store first).
pub(crate) async fn delete(inner: &Arc<Inner>, parts: &Head) -> Response<Body> {
    let session = match find_session(inner, parts).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    if let (true, Some(store)) = (session.shared, shared::store(inner)) {
        if let Err(e) = store.end(&session.id).await {
            return service_unavailable(e, None);
        }
    }
    inner.sessions.remove(&session.id);
    empty(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tenant gate hands the session it found on to `find_session`, which uses it only
    /// while the session is the registry's: one deleted (or reaped) between the gate and
    /// the lookup is not found, as a lookup of the registry would not find it.
    #[tokio::test]
    async fn a_session_the_gate_found_is_not_served_once_it_left_the_registry() {
        let http = crate::HttpServer::new(arbor_server::Server::new(arbor_server::Router::new("t", "1")));
        let inner = http.inner.clone();
        let endpoint = inner
            .server
            .open_endpoint(arbor_server::ConnectOptions::default(), Route::discard())
            .await
            .expect("an endpoint");
        let slot = inner.sessions.admission.admit(None, &inner.config).expect("a slot");
        let tenancy = Tenancy { tenant: None, requester: arbor_server::Requester::new(None, None) };
        let id: Arc<str> = Arc::from("0123456789abcdef0123456789abcdef");
        let session = Session::new(
            id.clone(),
            endpoint,
            Arc::new(EventStream::new(0)),
            slot,
            inner.sessions.epoch,
            None,
            tenancy,
            false,
        );
        inner.sessions.insert(Arc::new(session));
        let header = HeaderValue::from_str(&id).expect("hex");
        let gated = || {
            let (parts, ()) = axum::http::Request::builder().method("POST").body(()).expect("a head").into_parts();
            let mut parts = Head::new(parts, None);
            crate::tenant::admit_named(&inner, &mut parts, Some(&header)).expect("admitted");
            assert!(crate::tenant::gated_session(&parts).is_some(), "the gate found the session");
            parts
        };
        let parts = gated();
        let found = find_session_named(&inner, &parts, Some(&header)).await.expect("found");
        assert!(Arc::ptr_eq(&found, crate::tenant::gated_session(&parts).expect("gated")));
        let parts = gated();
        assert!(inner.sessions.remove(&id), "deleted between the gate and the lookup");
        let answer = find_session_named(&inner, &parts, Some(&header)).await.expect_err("not found");
        assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    }
}

//! Legacy sessions shared with other nodes through a [`SessionStore`]
//! (`HttpConfig::session_store`): what lets a round-robin load balancer send each request
//! of a session to any node.
//!
//! - `initialize` saves the session's record before its id is answered; a request naming
//!   a session this node does not hold adopts it ([`adopt`]): the record is loaded, checked
//!   against the request's tenant and principal, and its `initialize` (then
//!   `notifications/initialized` and the last `logging/setLevel`) is replayed into a
//!   connection of this node, which so negotiates the same terms. One store round trip on
//!   the first request, none on the next.
//! - Every stream is written through to the store ([`pump`]): a POST stream with the seqs
//!   it has here, under an id unique across nodes; the session-wide (standalone) stream
//!   of every node's copy into one stream the store numbers. A GET reads the session-wide
//!   stream, and a `Last-Event-ID` of a stream another node wrote, by following it from
//!   the store ([`follow`]) into a local buffer the usual reader reads.
//! - The client's answer to a server→client request goes to the node that asked (the
//!   store took note when the request went out); `notifications/cancelled`,
//!   `logging/setLevel` and `resources/unsubscribe` are relayed to every copy, the last two
//!   answered only once every copy applied them (or after `RELAY_WAIT`), so the client's
//!   next request sees them on any node; DELETE ends every copy ([`deliver`] applies what
//!   other nodes send).
//!
//! It is not the store (`crate::cluster`), nor HTTP (`mod.rs` calls in here). Invariant: a
//! node never answers for a session the store does not hold (an adopted copy whose record
//! is gone is closed by the keeper), and nothing here holds a lock across an await.

use std::sync::{Arc, Weak};
use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_server::exchange::{Endpoint, OnClose, Outgoing, Parsed, Route, RouteReceiver};
use arbor_server::{ConnectError, ConnectOptions, Requester};
use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::{json, Value};

use super::session::Session;
use super::stream::EventStream;
use crate::cluster::{Answered, Delivery, SessionRecord, SessionStore, SessionStoreError};
use crate::guard::{empty, reject};
use crate::head::Head;
use crate::server::{session_options, verified, Inner};
use crate::tenant::Tenancy;

/// Events read from the store per round trip.
const PAGE: usize = 256;

/// How long a `logging/setLevel` or `resources/unsubscribe` waits for every node's copy to
/// apply it before it is answered anyway (a node that does not answer in time is logged).
const RELAY_WAIT: Duration = Duration::from_secs(2);

/// The store, when sessions are shared.
pub(crate) fn store(inner: &Inner) -> Option<&Arc<dyn SessionStore>> {
    inner.config.session_store.as_ref()
}

/// How long the store keeps what it holds of a session without renewal.
fn ttl(inner: &Inner) -> Duration {
    inner.config.session_idle_timeout
}

fn unavailable(err: &SessionStoreError) -> Response<Body> {
    super::service_unavailable(err, None)
}

/// The principal key a record names as its owner.
fn owner_key(owner: Option<&Requester>) -> Option<String> {
    match owner {
        Some(Requester::Principal(key)) => Some(key.to_string()),
        _ => None,
    }
}

/// Saves a new session's record (before its id is answered, so the client's next request
/// finds it on any node).
pub(crate) async fn save(
    store: &Arc<dyn SessionStore>,
    inner: &Inner,
    session: &Session,
    initialize: Value,
) -> Result<(), SessionStoreError> {
    let record = SessionRecord {
        id: session.id.to_string(),
        tenant: session.tenancy.tenant.clone(),
        owner: owner_key(session.owner.as_ref()),
        initialize,
        log_level: None,
    };
    store.save(&record, ttl(inner)).await
}

/// The session `id` that this node does not hold, adopted from the store: `Ok(None)` when
/// the store does not know it, or it is not this request's (another tenant or principal:
/// the answer is an unknown session's, as on one node).
// The error is the request's final answer, made once: not worth a box.
#[allow(clippy::result_large_err)]
pub(crate) async fn adopt(inner: &Arc<Inner>, parts: &Head, id: &str) -> Result<Option<Arc<Session>>, Response<Body>> {
    let Some(store) = store(inner) else { return Ok(None) };
    let record = match store.load(id).await {
        Ok(Some(record)) => record,
        Ok(None) => return Ok(None),
        Err(e) => return Err(unavailable(&e)),
    };
    let id: Arc<str> = Arc::from(record.id.as_str());
    let options = session_options(inner, parts).session_id(id.clone());
    let owner = verified(parts).map(|v| v.requester.clone());
    if owner_key(owner.as_ref()) != record.owner || options.tenant != record.tenant {
        return Ok(None);
    }
    let slot = match inner.sessions.admission.admit(parts.peer.map(|a| a.ip()), &inner.config) {
        Ok(slot) => slot,
        Err(refusal) => return Err(refusal.response(&inner.config)),
    };
    let tenancy = Tenancy::of(&options);
    let endpoint = open(inner, store, options, &id).await?;
    if let Err(err) = replay(&endpoint, &record).await {
        endpoint.close();
        return Err(reject(StatusCode::SERVICE_UNAVAILABLE, &err, None));
    }
    let standalone = Arc::new(EventStream::new(0));
    let session = Arc::new(Session::new(id, endpoint, standalone, slot, inner.sessions.epoch, owner, tenancy, true));
    let session = inner.sessions.insert_or_get(session);
    inner.sessions.ensure_reaper(Arc::downgrade(inner), inner.config.session_idle_timeout);
    ensure_deliveries(inner);
    tracing::debug!(session = %session.id, "adopted a legacy session opened on another node");
    Ok(Some(session))
}

/// Opens this node's connection for a shared session: its messages unrelated to any
/// request go to the session-wide stream in the store.
#[allow(clippy::result_large_err)]
pub(crate) async fn open(
    inner: &Arc<Inner>,
    store: &Arc<dyn SessionStore>,
    options: ConnectOptions,
    id: &Arc<str>,
) -> Result<Endpoint, Response<Body>> {
    let (route, rx) = Route::channel();
    let endpoint = match inner.server.open_endpoint(options, route).await {
        Ok(ep) => ep,
        Err(ConnectError::Refused(refusal)) => return Err(crate::tenant::refused(&refusal)),
        Err(e) => {
            let err = McpError::internal(format!("Internal error: cannot open a session: {e}"));
            return Err(reject(StatusCode::SERVICE_UNAVAILABLE, &err, None));
        }
    };
    let tasks = match inner.stream_tasks().await {
        Ok(tasks) => tasks,
        Err(err) => {
            endpoint.close();
            return Err(reject(StatusCode::SERVICE_UNAVAILABLE, &err, None));
        }
    };
    let mirror = Mirror { store: store.clone(), session: id.clone(), ttl: ttl(inner), cap: inner.config.event_buffer };
    if let Err(e) = tasks.spawn(async move {
        pump(rx, None, usize::MAX, mirror).await;
        Ok::<(), ()>(())
    }) {
        endpoint.close();
        return Err(super::service_unavailable(e, None));
    }
    // The session-wide stream is kept in the store whether or not a GET reads it now, so
    // a 2025-11-25 task's input request never waits for a reader on this node.
    endpoint.standalone_reader().set(true);
    Ok(endpoint)
}

/// Replays the session's handshake (and log level) into a fresh connection.
async fn replay(endpoint: &Endpoint, record: &SessionRecord) -> Result<(), McpError> {
    let body = json!({"jsonrpc": "2.0", "id": "arbor-adopt", "method": "initialize", "params": record.initialize});
    let (route, mut rx) = Route::channel();
    endpoint.submit(Parsed::parse(body.to_string().as_bytes()), route, OnClose::Continue);
    let answer = loop {
        match rx.recv().await {
            Some(Outgoing::Response(json)) => break Outgoing::Response(json),
            Some(_) => continue,
            None => return Err(McpError::internal("Internal error: the adopted session's initialize went unanswered")),
        }
    };
    if let Some(code) = answer.error_code() {
        return Err(McpError::internal(format!(
            "Internal error: this node refuses the session's initialize ({code}): are the nodes configured alike?"
        )));
    }
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    endpoint.submit(Parsed::parse(initialized), Route::discard(), OnClose::Continue);
    if let Some(params) = &record.log_level {
        let body = json!({"jsonrpc": "2.0", "id": "arbor-adopt-level", "method": "logging/setLevel", "params": params});
        endpoint.submit(Parsed::parse(body.to_string().as_bytes()), Route::discard(), OnClose::Continue);
    }
    Ok(())
}

/// Where a stream's events are written through to.
#[derive(Clone)]
pub(crate) struct Mirror {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) session: Arc<str>,
    pub(crate) ttl: Duration,
    pub(crate) cap: usize,
}

impl Mirror {
    pub(crate) fn of(inner: &Inner, session: &Session) -> Option<Mirror> {
        let store = store(inner)?.clone();
        Some(Mirror { store, session: session.id.clone(), ttl: ttl(inner), cap: inner.config.event_buffer })
    }

    /// Writes one message of `stream` (`None`: the session-wide stream) here and to the
    /// store. A server→client request is noted as this node's first, so that its answer,
    /// POSTed to any node, comes back here.
    pub(crate) async fn write(&self, stream: Option<&EventStream>, out: &Outgoing) {
        let (Outgoing::Response(json) | Outgoing::Notification(json) | Outgoing::Request(json)) = out;
        if matches!(out, Outgoing::Request(_)) {
            if let Some(id) = request_id(json) {
                if let Err(e) = self.store.asked(&self.session, &id, self.ttl).await {
                    tracing::warn!(session = %self.session, error = %e, "cannot note a server-to-client request in the session store: its answer can only come back through this node");
                }
            }
        }
        let (id, seq) = match stream {
            Some(stream) => (stream.id, Some(stream.push(json.clone(), self.cap))),
            None => (0, None),
        };
        if let Err(e) = self.store.append(&self.session, id, seq, json, self.cap, self.ttl).await {
            // A POST stream is still read here; the session-wide one loses the message.
            tracing::warn!(session = %self.session, stream = id, error = %e, "cannot write an event to the session store");
        }
    }

    /// Makes `stream` known to the store before its first event: a reader primed with
    /// the stream's id (2025-11-25) may resume on another node before anything was written.
    pub(crate) async fn open(&self, stream: &EventStream) {
        if let Err(e) = self.store.append(&self.session, stream.id, Some(0), b"", self.cap, self.ttl).await {
            tracing::warn!(session = %self.session, stream = stream.id, error = %e, "cannot register a stream in the session store");
        }
    }

    pub(crate) async fn finish(&self, stream: &EventStream) {
        stream.finish();
        if let Err(e) = self.store.finish(&self.session, stream.id, self.ttl).await {
            tracing::warn!(session = %self.session, stream = stream.id, error = %e, "cannot mark a stream finished in the session store");
        }
    }
}

/// The id of a server→client request, as JSON text.
fn request_id(json: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let head: Head<'_> = serde_json::from_slice(json).ok()?;
    head.id.map(|id| id.get().to_owned())
}

/// [`super::stream::pump`] for a shared session: moves a route's messages into `stream`
/// (`None`: the session-wide stream, which only the store holds) and through to the store.
pub(crate) async fn pump(mut rx: RouteReceiver, stream: Option<Arc<EventStream>>, mut expected: usize, mirror: Mirror) {
    while expected > 0 {
        let Some(out) = rx.recv().await else { break };
        if let Outgoing::Response(json) = &out {
            expected = if json.first() == Some(&b'[') { 0 } else { expected - 1 };
        }
        mirror.write(stream.as_deref(), &out).await;
    }
    if let Some(stream) = &stream {
        mirror.finish(stream).await;
    }
}

/// Fills `stream` (stream `id` of the session, written by other nodes) from the store,
/// after seq `after`, until the stream is finished there, the session closes here, or no
/// one holds the stream any more.
pub(crate) async fn follow(
    store: Arc<dyn SessionStore>,
    session: Arc<str>,
    stream: Arc<EventStream>,
    mut after: u64,
    cap: usize,
) {
    let poll = store.poll_interval();
    loop {
        // The session closed here (its streams are finished), or the stream was dropped
        // from the session and no reader holds it.
        if stream.is_done() || Arc::strong_count(&stream) == 1 {
            return;
        }
        match store.read(&session, stream.id, after, PAGE).await {
            Ok(page) => {
                let full = page.events.len() >= PAGE;
                for event in page.events {
                    after = event.seq;
                    stream.push_at(event.seq, event.data.to_vec(), cap);
                }
                if page.finished && !full {
                    stream.finish();
                    return;
                }
                if full {
                    continue;
                }
                tokio::time::sleep(poll).await;
            }
            Err(e) => {
                tracing::debug!(session = %session, error = %e, "cannot read a stream from the session store; retrying");
                tokio::time::sleep(poll * 10).await;
            }
        }
    }
}

/// The session-wide stream of a shared session, followed from the store from after
/// `from` (`None`: from now on), backfilled when a reader resumes from before where this
/// node started following it.
#[allow(clippy::result_large_err)]
pub(crate) async fn standalone(
    inner: &Arc<Inner>,
    session: &Arc<Session>,
    from: Option<u64>,
) -> Result<Arc<EventStream>, Response<Body>> {
    let Some(store) = store(inner) else { return Ok(session.standalone.clone()) };
    let cap = inner.config.event_buffer;
    let started = *session.following_from.lock();
    match (started, from) {
        (Some(start), Some(from)) if from < start => {
            let page = store.read(&session.id, 0, from, cap).await.map_err(|e| unavailable(&e))?;
            let older = page.events.into_iter().filter(|e| e.seq <= start).map(|e| (e.seq, e.data.to_vec())).collect();
            session.standalone.backfill(older, cap);
            return Ok(session.standalone.clone());
        }
        (Some(_), _) => return Ok(session.standalone.clone()),
        (None, _) => {}
    }
    let start = match from {
        Some(from) => from,
        None => store.read(&session.id, 0, u64::MAX, 0).await.map_err(|e| unavailable(&e))?.last_seq,
    };
    {
        let mut following = session.following_from.lock();
        if following.is_some() {
            return Ok(session.standalone.clone());
        }
        *following = Some(start);
    }
    spawn_follower(inner, store, session, session.standalone.clone(), start).await?;
    Ok(session.standalone.clone())
}

/// A POST stream another node wrote, for a `Last-Event-ID` naming it: `Ok(None)` when
/// the store does not hold it.
#[allow(clippy::result_large_err)]
pub(crate) async fn remote_stream(
    inner: &Arc<Inner>,
    session: &Arc<Session>,
    id: u64,
) -> Result<Option<Arc<EventStream>>, Response<Body>> {
    let Some(store) = store(inner) else { return Ok(None) };
    let cap = inner.config.event_buffer;
    let page = store.read(&session.id, id, 0, cap).await.map_err(|e| unavailable(&e))?;
    if !page.exists {
        return Ok(None);
    }
    let stream = Arc::new(EventStream::new(id));
    let mut after = 0;
    for event in page.events {
        after = event.seq;
        stream.push_at(event.seq, event.data.to_vec(), cap);
    }
    session.insert_stream(stream.clone());
    if page.finished && page.last_seq <= after {
        stream.finish();
    } else {
        spawn_follower(inner, store, session, stream.clone(), after).await?;
    }
    Ok(Some(stream))
}

#[allow(clippy::result_large_err)]
async fn spawn_follower(
    inner: &Arc<Inner>,
    store: &Arc<dyn SessionStore>,
    session: &Session,
    stream: Arc<EventStream>,
    after: u64,
) -> Result<(), Response<Body>> {
    let tasks = inner.stream_tasks().await.map_err(|err| reject(StatusCode::SERVICE_UNAVAILABLE, &err, None))?;
    let (store, id, cap) = (store.clone(), session.id.clone(), inner.config.event_buffer);
    tasks
        .spawn(async move {
            follow(store, id, stream, after, cap).await;
            Ok::<(), ()>(())
        })
        .map(drop)
        .map_err(|e| super::service_unavailable(e, None))
}

/// What a shared session does with a POSTed body before (or instead of) submitting it
/// here: `Some(answer)` when it is done with it.
pub(crate) async fn route(inner: &Inner, session: &Session, parsed: &Parsed) -> Option<Response<Body>> {
    let store = store(inner)?;
    if let Some(id) = parsed.response_id() {
        // The client's answer to a server→client request: to the node that asked.
        let id = serde_json::to_string(id).ok()?;
        let body = parsed.raw_body()?;
        return match store.answer(&session.id, &id, body).await {
            Ok(Answered::Waiting { sent: true, .. }) => Some(empty(StatusCode::ACCEPTED)),
            // Ours, or nobody's (already answered, or made up): this node's connection
            // takes it (and ignores an id it does not wait for), as on one node.
            Ok(Answered::Waiting { sent: false, .. } | Answered::NobodyWaits) => None,
            Ok(Answered::OwnerGone) => {
                let err = McpError::Other {
                    code: -32603,
                    message: "the node that sent this request is gone; nobody waits for the answer".into(),
                    data: None,
                };
                Some(reject(StatusCode::SERVICE_UNAVAILABLE, &err, None))
            }
            Err(e) => Some(unavailable(&e)),
        };
    }
    match parsed.method() {
        // The request runs on one node: every copy hears the cancel, the one running it
        // stops it.
        Some("notifications/cancelled") => {
            if let Some(body) = parsed.raw_body() {
                if let Err(e) = store.relay(&session.id, body).await {
                    tracing::warn!(session = %session.id, error = %e, "cannot relay a cancel to the other nodes");
                }
            }
            None
        }
        Some(method @ ("logging/setLevel" | "resources/unsubscribe")) => {
            let params = parsed.params_json().cloned().unwrap_or(Value::Null);
            if method == "logging/setLevel" {
                if let Err(e) = store.set_log_level(&session.id, &params).await {
                    return Some(unavailable(&e));
                }
            }
            // Every copy applies it too, under an id of its own (its answer is dropped), before
            // this one answers: the client's next request may land on any node, and must see
            // the level (or the subscription gone) it was told is set.
            let body = json!({"jsonrpc": "2.0", "id": "arbor-relay", "method": method, "params": params});
            match store.relay_applied(&session.id, body.to_string().as_bytes(), RELAY_WAIT).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(session = %session.id, "{method}: not every node applied it in time"),
                Err(e) => tracing::warn!(session = %session.id, error = %e, "cannot relay {method} to the other nodes"),
            }
            None
        }
        _ => None,
    }
}

/// Starts reading what other nodes send this one, once.
pub(crate) fn ensure_deliveries(inner: &Arc<Inner>) {
    let Some(store) = store(inner) else { return };
    let Some(mut rx) = store.deliveries() else { return };
    let weak: Weak<Inner> = Arc::downgrade(inner);
    tokio::spawn(async move {
        while let Some(delivery) = rx.recv().await {
            let Some(inner) = weak.upgrade() else { return };
            deliver(&inner, delivery);
        }
    });
}

/// Applies one message from another node to this node's copy of its session, if any.
fn deliver(inner: &Inner, delivery: Delivery) {
    let submit = |session: &str, body: &[u8]| {
        if let Some(session) = inner.sessions.get(session) {
            session.endpoint.submit(Parsed::parse(body), Route::discard(), OnClose::Continue);
        }
    };
    match delivery {
        Delivery::Answer { session, body } => submit(&session, &body),
        Delivery::Relay { session, body, ack } => {
            submit(&session, &body);
            // Submitted is applied for the client's next request here: the copy's
            // connection takes its messages in order.
            let (Some(ack), Some(store)) = (ack, store(inner).cloned()) else { return };
            tokio::spawn(async move {
                if let Err(e) = store.applied(&ack).await {
                    tracing::warn!(error = %e, "cannot acknowledge a relay to the node that sent it");
                }
            });
        }
        Delivery::Ended { session } => {
            if inner.sessions.remove(&session) {
                tracing::debug!(%session, "a legacy session ended through another node");
            }
        }
    }
}

/// One tick of the keeper: renews the sessions this node used, and closes the copies of
/// those the store no longer holds (ended or expired everywhere).
pub(crate) async fn keep(inner: &Inner, window: Duration) {
    let Some(store) = store(inner) else { return };
    let (used, idle): (Vec<_>, Vec<_>) = inner.sessions.usage(window).into_iter().partition(|(_, used)| *used);
    let used: Vec<Arc<str>> = used.into_iter().map(|(id, _)| id).collect();
    let idle: Vec<Arc<str>> = idle.into_iter().map(|(id, _)| id).collect();
    if used.is_empty() && idle.is_empty() {
        return;
    }
    match store.keep(&used, &idle, ttl(inner)).await {
        Ok(gone) => {
            for id in gone {
                inner.sessions.remove(&id);
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot renew the shared sessions; retrying on the next tick"),
    }
}

//! One request on the wire and the caller waiting for its answer: ids, `_meta`, the
//! deadline (reset by progress, paused by server requests tied to the call, bounded by
//! the maximum total), and cancellation when the caller gives up.
//!
//! The waiting happens in the caller's task, never in the connection actor: the reader
//! (or an HTTP response task) completes the pending entry and the caller wakes up.
//! This module does not retry (MRTR and header refreshes live in `client.rs`).
//! Invariant: a call that ends without an answer (timeout, cancel, drop) removes its
//! pending entry and tells the server in the era's way: `notifications/cancelled` on a
//! stream and in the legacy era, closing the response stream in modern HTTP.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta;
use arbor_protocol::method::RequestFrame;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::version::{Era, ProtocolVersion};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::handler::{Assigns, CallLink};
use crate::options::{CallOptions, ProgressFn};
use crate::shared::{Failure, Pending, PendingKind, Reply, Shared};
use crate::telemetry;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Signal {
    progress: u64,
    paused: usize,
}

/// The caller's side of one call, shared by its rounds (MRTR retries) and by the server
/// requests tied to it.
pub(crate) struct CallCtl {
    pub(crate) on_progress: Option<ProgressFn>,
    log_level: Option<LoggingLevel>,
    assigns: Option<Assigns>,
    signal: watch::Sender<Signal>,
    current: Mutex<Option<RequestId>>,
    timeout: Duration,
    max_total: Duration,
    reset_on_progress: bool,
    cancel: Option<CancellationToken>,
    started: Instant,
}

impl CallCtl {
    pub(crate) fn new(shared: &Shared, opts: &CallOptions) -> Arc<CallCtl> {
        let o = &shared.options;
        let timeout = opts.timeout.unwrap_or(o.timeout);
        Arc::new(CallCtl {
            on_progress: opts.on_progress.clone(),
            log_level: opts.log_level,
            assigns: opts.assigns.clone(),
            signal: watch::Sender::new(Signal::default()),
            current: Mutex::new(None),
            timeout,
            max_total: opts.max_total_timeout.unwrap_or(o.max_total_timeout).max(timeout),
            reset_on_progress: opts.reset_on_progress.unwrap_or(o.reset_on_progress),
            cancel: opts.cancel.clone(),
            started: Instant::now(),
        })
    }

    /// A call for the client's own requests (probe, handshake): fixed timeout, no extras.
    pub(crate) fn internal(timeout: Duration) -> Arc<CallCtl> {
        Arc::new(CallCtl {
            on_progress: None,
            log_level: None,
            assigns: None,
            signal: watch::Sender::new(Signal::default()),
            current: Mutex::new(None),
            timeout,
            max_total: timeout,
            reset_on_progress: false,
            cancel: None,
            started: Instant::now(),
        })
    }

    pub(crate) fn progressed(&self) {
        self.signal.send_modify(|s| s.progress += 1);
    }

    /// Waits for the reply within the deadline rules.
    async fn wait(&self, rx: &mut oneshot::Receiver<Reply>) -> Result<Reply, ClientError> {
        let hard = self.started + self.max_total;
        let mut sig = self.signal.subscribe();
        let mut seen = *sig.borrow_and_update();
        let mut deadline = (Instant::now() + self.timeout).min(hard);
        // One timer for the call, moved rather than recreated: the deadline while running,
        // the maximum total while paused (the deadline never passes the maximum).
        let timer = tokio::time::sleep_until(deadline);
        tokio::pin!(timer);
        loop {
            tokio::select! {
                biased;
                reply = &mut *rx => return reply.map_err(|_| ClientError::Disconnected),
                _ = async { match &self.cancel { Some(t) => t.cancelled().await, None => std::future::pending().await } } => {
                    return Err(ClientError::Cancelled);
                }
                changed = sig.changed() => {
                    if changed.is_err() {
                        continue;
                    }
                    let now = *sig.borrow_and_update();
                    let resumed = seen.paused > 0 && now.paused == 0;
                    if resumed || (self.reset_on_progress && now.progress != seen.progress) {
                        deadline = (Instant::now() + self.timeout).min(hard);
                    }
                    seen = now;
                    timer.as_mut().reset(if seen.paused > 0 { hard } else { deadline });
                }
                _ = &mut timer => {
                    // A deadline cut short by the maximum (or a pause reaching it) reports the maximum.
                    let limit = if seen.paused > 0 || deadline >= hard { self.max_total } else { self.timeout };
                    return Err(ClientError::Timeout(limit));
                }
            }
        }
    }
}

impl CallLink for CallCtl {
    fn pause_deadline(&self) -> Box<dyn std::any::Any + Send> {
        // Counted here, released when the returned guard drops.
        self.signal.send_modify(|s| s.paused += 1);
        Box::new(PauseRelease(self.signal.clone()))
    }
    fn assigns(&self) -> Option<Assigns> {
        self.assigns.clone()
    }
    fn request_id(&self) -> Option<RequestId> {
        self.current.lock().clone()
    }
}

struct PauseRelease(watch::Sender<Signal>);

impl Drop for PauseRelease {
    fn drop(&mut self) {
        self.0.send_modify(|s| s.paused = s.paused.saturating_sub(1));
    }
}

/// Removes a pending entry when the caller stops waiting without an answer, and tells
/// the server (unless disarmed, or the request may not be cancelled).
struct InFlight<'a> {
    shared: &'a Arc<Shared>,
    id: i64,
    armed: bool,
    cancellable: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            abandon(self.shared, self.id, self.cancellable, "the caller stopped waiting");
        }
    }
}

/// Forgets request `id` and, if it was still pending and `tell` is set, cancels it
/// towards the server.
pub(crate) fn abandon(shared: &Arc<Shared>, id: i64, tell: bool, reason: &str) {
    let Some(entry) = shared.pending.lock().remove(&id) else { return };
    let closed_stream = entry.abort.is_some();
    if let Some(abort) = entry.abort {
        // Modern HTTP: closing the response stream is the cancel.
        abort.abort();
    }
    if !tell {
        return;
    }
    let Some(link) = shared.link() else { return };
    let modern = shared.era() == Some(Era::Modern);
    if link.is_http() && modern && closed_stream {
        return;
    }
    let frame = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "method": MethodName::Cancelled.as_str(),
        "params": cancel_params(shared, id, reason),
    }))
    .unwrap_or_default();
    link.notify_detached(shared, frame);
}

fn cancel_params(shared: &Shared, id: i64, reason: &str) -> Value {
    let mut params = serde_json::json!({"requestId": id, "reason": reason});
    if shared.era() == Some(Era::Modern) {
        // Modern notifications carry no required `_meta`; the HTTP transport defines none
        // for notification POSTs either, so the version rides along for the header.
        params["_meta"] = serde_json::json!({ meta::PROTOCOL_VERSION: ProtocolVersion::LATEST.as_str() });
    }
    params
}

/// Whether a request of `method` is sent with modern terms.
pub(crate) fn is_modern(shared: &Shared, method: MethodName) -> bool {
    method == MethodName::Discover || shared.era() == Some(Era::Modern)
}

/// Adds the era's `_meta` to `params` (an object): modern terms, and the progress token.
pub(crate) fn shape_params(
    shared: &Shared,
    modern: bool,
    params: &mut Value,
    progress: Option<i64>,
    log_level: Option<LoggingLevel>,
) {
    if !params.is_object() {
        *params = Value::Object(Map::new());
    }
    if !modern && progress.is_none() {
        return;
    }
    let obj = params.as_object_mut().expect("made an object above");
    let meta = obj.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let meta = meta.as_object_mut().expect("made an object above");
    if modern {
        meta.insert(meta::PROTOCOL_VERSION.into(), Value::String(ProtocolVersion::LATEST.as_str().into()));
        // A request may declare more than the client's usual capabilities (a task call
        // declares the tasks extension): what its params already carry is kept.
        if !meta.contains_key(meta::CLIENT_CAPABILITIES) {
            meta.insert(meta::CLIENT_CAPABILITIES.into(), shared.client_capabilities.clone());
        }
        meta.insert(meta::CLIENT_INFO.into(), shared.client_info.clone());
        if let Some(level) = log_level {
            meta.insert(meta::LOG_LEVEL.into(), serde_json::to_value(level).unwrap_or(Value::Null));
        }
    }
    if let Some(token) = progress {
        meta.insert(meta::PROGRESS_TOKEN.into(), Value::from(token));
    }
}

/// The frame of a modern request whose params (an object without `_meta`) need only the
/// modern terms: those are spliced in from their encoding made once (`Shared::modern_meta`)
/// rather than cloned into `params` as `Value`s and encoded again on every call. `params`
/// is left as it was (a stream link reads nothing else from it).
fn encode_modern(
    shared: &Shared,
    id: &RequestId,
    method: MethodName,
    params: &Value,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut frame = Vec::with_capacity(256 + shared.modern_meta.len());
    frame.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut frame, id)?;
    frame.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut frame, method.as_str())?;
    frame.extend_from_slice(br#","params":{"_meta":{"#);
    frame.extend_from_slice(shared.modern_meta.as_bytes());
    frame.push(b'}');
    let mark = frame.len();
    // `{...}`: its opening brace becomes the comma after `_meta`, or goes if it is `{}`.
    serde_json::to_writer(&mut frame, params)?;
    if frame.get(mark + 1) == Some(&b'}') {
        frame.remove(mark);
    } else {
        frame[mark] = b',';
    }
    frame.push(b'}');
    Ok(frame)
}

/// Sends one request and waits for its answer.
pub(crate) async fn roundtrip(
    shared: &Arc<Shared>,
    method: MethodName,
    params: &mut Value,
    ctl: &Arc<CallCtl>,
    kind: PendingKind,
    cancellable: bool,
) -> Result<Box<RawValue>, ClientError> {
    let link = shared.link().ok_or(ClientError::Disconnected)?;
    let id = shared.next_id();
    let modern = is_modern(shared, method);
    // A span of kind client per request (`crate::telemetry`); with the `otel` feature its
    // trace context rides in `_meta`, which rules out the spliced encoding.
    let span = telemetry::request_span(shared, method, params, modern, link.is_http(), id);
    let inject = telemetry::injects(&span);
    let outcome = async {
        let progress = ctl.on_progress.as_ref().map(|_| id);
        let rid = RequestId::from(id);
        *ctl.current.lock() = Some(rid.clone());
        let spliced = !inject
            && !link.is_http()
            && modern
            && progress.is_none()
            && ctl.log_level.is_none()
            && params.as_object().is_some_and(|o| !o.contains_key("_meta"));
        let frame = if spliced {
            encode_modern(shared, &rid, method, params)
        } else {
            shape_params(shared, modern, params, progress, ctl.log_level);
            if inject {
                telemetry::inject(&span, params);
            }
            serde_json::to_vec(&RequestFrame { id: &rid, method: method.as_str(), params: &*params })
        }
        .map_err(ClientError::Encode)?;
        let (tx, mut rx) = oneshot::channel();
        let alone = {
            let mut pending = shared.pending.lock();
            pending.insert(id, Pending { tx, call: Some(ctl.clone()), kind, abort: None });
            pending.len() == 1
        };
        let mut guard = InFlight { shared, id, armed: true, cancellable };
        if let Err(e) = link.send_request(shared, id, method, params, modern, frame, alone) {
            // Never sent: nothing to cancel.
            guard.armed = false;
            shared.pending.lock().remove(&id);
            return Err(e);
        }
        let reply = match ctl.wait(&mut rx).await {
            Ok(reply) => reply,
            Err(e) => {
                let reason = match &e {
                    ClientError::Timeout(_) => "timeout",
                    _ => "cancelled by the client",
                };
                guard.armed = false;
                abandon(shared, id, cancellable, reason);
                return Err(e);
            }
        };
        guard.armed = false;
        match reply {
            Reply::Result(raw) => Ok(raw),
            Reply::Error(e) => Err(ClientError::Rpc(e)),
            Reply::Failed(Failure::Transport(t)) => Err(ClientError::Transport(t)),
            Reply::Failed(Failure::SessionExpired) => Err(ClientError::SessionExpired),
            Reply::Failed(Failure::Disconnected) => Err(ClientError::Disconnected),
        }
    }
    .await;
    telemetry::record_outcome(&span, method, &outcome);
    outcome
}

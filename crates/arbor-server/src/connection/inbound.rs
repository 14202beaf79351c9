//! The connection's reader: frames from the transport, decoded once into typed messages.
//!
//! A plain tokio task owned by the connection actor. It drains every frame already
//! buffered, decodes each with the one-pass typed path (`ClientRequest::decode_frame`),
//! and hands the whole burst to the actor in one message, so a pipelined client costs one
//! actor message per read, not per request. Decoding here, outside the actor, keeps the
//! actor's turn short. Only frames the fast path refuses (notifications, responses, errors)
//! are decoded a second time, to learn what they are.
//!
//! It answers nothing and decides nothing: malformed frames become [`Inbound::Refused`]
//! with the error to send, and the actor sends it. Invariants: the number of bursts waiting
//! in the actor's mailbox is bounded by [`MAX_BURSTS`], and the output queued for a peer
//! that does not read it by [`MAX_UNREAD_OUTPUT`]; past either the reader stops reading,
//! which pushes back on the peer through the transport.
//!
//! The end of the input is not the end of the connection: a peer that closed its side
//! (`printf '<call>' | server`) still reads the answers. The reader then tells the actor
//! `InputEnded`, and the connection drains (`ConnState::drain`, below): its subscription
//! streams close as on any close (their handlers' `handle_close` runs, nothing is sent for
//! a listen: it would never end by itself), the requests in flight run on until they
//! finish or `ServerConfig::drain_timeout` passes, each still running then is stopped and
//! answered once with [`drain_deadline_passed`], and only then does the connection stop,
//! flushing its output. A broken output stops it at once: nobody can read an answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{TaskRef, TaskSupervisor};
use arbor_protocol::error::{ErrorCode, McpError};
use arbor_protocol::jsonrpc::{
    decode_frame, decode_raw, request_id_in_prefix, Batching, ErrorResponse, Frame, Message, RawMessage, RequestId,
};
use arbor_protocol::meta;
use arbor_protocol::methods::MethodName;
use arbor_protocol::methods::{ClientNotification, ClientRequest, FrameError};
use arbor_protocol::version::ProtocolVersion;
use arbor_transport::{FrameReader, FrameWriter, Inbound as Read};
use ractor::ActorRef;
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::output::{Kind, Output};
use super::route::gate;
use super::{ConnMsg, ConnState};
use crate::error::frame_too_long;

/// Bursts the reader may have queued at the actor before it waits.
pub(crate) const MAX_BURSTS: usize = 32;
/// Output bytes queued for the peer beyond which no more input is read.
pub(crate) const MAX_UNREAD_OUTPUT: usize = 8 * 1024 * 1024;
/// Frames per burst at most, so one huge read does not become one huge actor turn.
const MAX_BURST_LEN: usize = 256;

/// One decoded message from the client.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A request of a known method with well-formed params. Boxed once here: the enum is
    /// over a kilobyte, and it moves through the actor into its task.
    Request { id: RequestId, request: Box<ClientRequest> },
    /// A notification of a known method.
    Notification(Box<ClientNotification>),
    /// A response to one of our server-to-client requests.
    Response { id: RequestId, result: Box<RawValue> },
    /// An error response to one of our server-to-client requests. Boxed, as the refusal's
    /// error: rare, they sized every request's `Inbound` (136 bytes, moved from the decoder
    /// through the transport into the actor), which is now 48.
    Error(Box<ErrorResponse>),
    /// A JSON-RPC batch (2025-03-26 only; the actor checks the session allows it).
    Batch(Vec<Inbound>),
    /// A frame to answer with an error (`id` when it could be read).
    Refused { id: Option<RequestId>, error: Box<McpError> },
    /// A notification that could not be read; notifications are never answered.
    Ignored,
}

/// A burst of decoded messages plus the credit it holds in the reader's budget.
#[derive(Debug)]
pub(crate) struct Burst {
    pub(crate) items: Vec<Inbound>,
    pub(crate) _credit: OwnedSemaphorePermit,
}

/// Reads until the transport ends or the writer breaks, then tells the actor which.
/// `credits` holds [`MAX_BURSTS`] permits; the connection reads what is taken as its inbox.
pub(crate) async fn read_loop(
    mut reader: FrameReader,
    writer: FrameWriter,
    actor: ActorRef<ConnMsg>,
    credits: Arc<Semaphore>,
) {
    let mut items = Vec::new();
    // Whether the input ended while the output may still be read (drain), rather than
    // the output breaking (stop).
    let mut input_ended = false;
    'read: loop {
        while let Some(read) = reader.next_buffered() {
            items.push(decode(read));
            if items.len() >= MAX_BURST_LEN && !send(&actor, &credits, &mut items).await {
                break 'read;
            }
        }
        if !items.is_empty() && !send(&actor, &credits, &mut items).await {
            break;
        }
        if writer.buffered() >= MAX_UNREAD_OUTPUT {
            // The peer is not reading what we answer: stop taking its requests until it does.
            writer.drained_below(MAX_UNREAD_OUTPUT / 2).await;
        }
        tokio::select! {
            filled = reader.fill() => match filled {
                Ok(true) => {}
                Ok(false) => {
                    input_ended = true;
                    break;
                }
                // Nothing more can be read, but the answers can still be written.
                Err(err) => {
                    tracing::debug!(%err, "connection input failed");
                    input_ended = true;
                    break;
                }
            },
            () = writer.closed() => break,
        }
    }
    let _ = actor.cast(if input_ended { ConnMsg::InputEnded } else { ConnMsg::InputClosed });
}

async fn send(actor: &ActorRef<ConnMsg>, credits: &Arc<Semaphore>, items: &mut Vec<Inbound>) -> bool {
    let Ok(credit) = credits.clone().acquire_owned().await else { return false };
    let burst = Burst { items: std::mem::take(items), _credit: credit };
    actor.cast(ConnMsg::Inbound(burst)).is_ok()
}

fn decode(read: Read<'_>) -> Inbound {
    match read {
        // The id, when the line's first bytes show it for certain, lets the client match the
        // refusal to its request; otherwise the error goes without one.
        Read::Oversized { limit, prefix } => {
            Inbound::Refused { id: request_id_in_prefix(prefix), error: Box::new(frame_too_long(limit)) }
        }
        Read::Frame(bytes) => decode_bytes(bytes),
    }
}

/// Decodes one frame: the typed one-pass path for requests, the two-step path otherwise.
pub(crate) fn decode_bytes(bytes: &[u8]) -> Inbound {
    if bytes.first() == Some(&b'[') {
        return decode_batch(bytes);
    }
    match ClientRequest::decode_frame(bytes) {
        Ok((id, request)) => Inbound::Request { id, request: Box::new(request) },
        Err(FrameError::Decode(err)) => {
            Inbound::Refused { id: err.id.clone(), error: Box::new(absent_in_era(bytes, McpError::from(&err))) }
        }
        Err(FrameError::Method(_)) => classify(bytes),
    }
}

/// The slow path: what is this frame, if not a request we can serve?
fn classify(bytes: &[u8]) -> Inbound {
    match decode_raw(bytes) {
        Err(err) => Inbound::Refused { id: err.id.clone(), error: Box::new(McpError::from(&err)) },
        Ok(RawMessage::Request { id, method, params }) => match ClientRequest::decode(&method, params) {
            Ok(request) => Inbound::Request { id, request: Box::new(request) },
            Err(err) => Inbound::Refused { id: Some(id), error: Box::new(absent_in_era(bytes, McpError::from(&err))) },
        },
        Ok(RawMessage::Notification { method, params }) => match ClientNotification::decode(&method, params) {
            Ok(notification) => Inbound::Notification(Box::new(notification)),
            Err(err) => {
                tracing::debug!(%err, %method, "ignoring a notification that could not be read");
                Inbound::Ignored
            }
        },
        Ok(RawMessage::Response { id, result }) => Inbound::Response { id, result: result.to_owned() },
        Ok(RawMessage::Error(err)) => Inbound::Error(Box::new(err)),
    }
}

/// Params that do not decode are -32602, unless the request names a revision in `_meta`
/// that does not have the method at all (`initialize`, `logging/setLevel`,
/// `resources/subscribe` in 2026-07-28): a method that does not exist has no invalid
/// params, so it is -32601, which HTTP answers 404. Runs on the error path only.
fn absent_in_era(bytes: &[u8], error: McpError) -> McpError {
    if error.code() != ErrorCode::InvalidParams {
        return error;
    }
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        params: Option<ProbeParams>,
    }
    #[derive(serde::Deserialize)]
    struct ProbeParams {
        #[serde(rename = "_meta")]
        meta: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let Ok(probe) = serde_json::from_slice::<Probe<'_>>(bytes) else { return error };
    let version = probe
        .params
        .and_then(|p| p.meta)
        .and_then(|m| m.get(meta::PROTOCOL_VERSION).and_then(|v| v.as_str()).and_then(ProtocolVersion::parse));
    match (version, MethodName::parse(&probe.method)) {
        (Some(version), Some(method)) if gate(method).is_some_and(|feature| !version.supports(feature)) => {
            McpError::method_not_found(&probe.method)
        }
        _ => error,
    }
}

/// A batch: each element decoded on its own, so one bad element costs only its own error.
fn decode_batch(bytes: &[u8]) -> Inbound {
    let items = match decode_frame(bytes, Batching::Allowed) {
        Ok(Frame::Batch(items)) => items,
        Ok(Frame::Single(_)) => return classify(bytes),
        Err(err) => return Inbound::Refused { id: err.id.clone(), error: Box::new(McpError::from(&err)) },
    };
    let decoded = items
        .into_iter()
        .map(|item| match item {
            // Rare path: re-encode the element and take the usual route.
            Ok(message) => decode_bytes(&Message::to_vec(&message)),
            Err(err) => Inbound::Refused { id: err.id.clone(), error: Box::new(McpError::from(&err)) },
        })
        .collect();
    Inbound::Batch(decoded)
}

/// How often a draining connection looks whether its requests have finished. Their
/// answers go out as each finishes; this only decides how soon after the last the
/// connection closes.
const DRAIN_TICK: Duration = Duration::from_millis(10);
/// How long a cancelled task may take to take its cancel; the wrapper answers one at its
/// next poll, so this is only a bound for a starved runtime.
const CANCEL_WAIT: Duration = Duration::from_secs(1);

impl ConnState {
    /// The peer's input ended: close the streams and let the requests in flight finish
    /// within the drain deadline, on a worker task, which then closes the connection. The
    /// reader has already stopped; the actor goes on serving what the tasks ask of it.
    pub(super) fn drain(&mut self, myself: &ActorRef<ConnMsg>) {
        self.close_streams();
        let in_flight = self.ids.lock().running().map(|(id, t)| (id.clone(), t.task.clone())).collect();
        let drain = Drain {
            in_flight,
            reports: self.reports.clone(),
            tasks: TaskSupervisor::clone(&self.tasks),
            output: self.output.clone(),
            timeout: self.shared.config.drain_timeout,
        };
        tracing::debug!(parent: &self.span, in_flight = drain.in_flight.len(), "input ended, draining");
        let actor = myself.clone();
        self.workers.push(tokio::spawn(async move {
            drain.run().await;
            let _ = actor.cast(ConnMsg::Close);
        }));
    }
}

/// The requests a connection had in flight when its input ended, and how to answer them.
struct Drain {
    in_flight: Vec<(RequestId, TaskRef)>,
    reports: Reports,
    /// The connection's request supervisor: its counters tell a cancelled task from one
    /// that finished (and answered) in the same instant.
    tasks: TaskSupervisor,
    output: Output,
    timeout: Duration,
}

impl Drain {
    async fn run(self) {
        let deadline = Instant::now() + self.timeout;
        loop {
            if self.in_flight.iter().all(|(_, task)| task.is_finished()) {
                // A task is marked finished just before its report writes the answer, on
                // whichever worker ran it: wait for the reports, so every answer is in the
                // writer's buffer before the connection closes it.
                self.reports.settled(Instant::now() + CANCEL_WAIT).await;
                return;
            }
            if Instant::now() >= deadline {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline.min(Instant::now() + DRAIN_TICK)) => {}
                // Nobody reads the answers any more: stop at once.
                () = self.output.closed() => return,
            }
        }
        let error = drain_deadline_passed(self.timeout);
        let mut stopped = 0usize;
        for (id, task) in &self.in_flight {
            if self.stop_unanswered(task).await {
                stopped += 1;
                let _ = self.output.send_vec(Kind::Response, error.to_response(Some(id.clone())).to_vec());
            }
        }
        // Those that answered by themselves in the meantime may still be writing.
        self.reports.settled(Instant::now() + CANCEL_WAIT).await;
        tracing::debug!(stopped, "drain deadline passed");
    }

    /// Cancels `task` and says whether that stopped it unanswered (its report writes
    /// nothing for `Cancelled`). A task may finish in the very instant it is cancelled and
    /// then answer by itself, which its `TaskRef` cannot tell; the supervisor's
    /// `cancelled` counter can, because tasks are cancelled one at a time here and no
    /// client can cancel any more (its input ended).
    async fn stop_unanswered(&self, task: &TaskRef) -> bool {
        let before = self.tasks.stats().cancelled;
        if task.cancel().is_err() {
            // Already finished: its report answered it.
            return false;
        }
        let until = Instant::now() + CANCEL_WAIT;
        let mut spins = 0u32;
        while !task.is_finished() && Instant::now() < until {
            // The wrapper takes the cancel at its next poll, usually after one yield.
            if spins < 64 {
                spins += 1;
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        // The counter is bumped before the task counts as finished.
        self.tasks.stats().cancelled > before
    }
}

/// -32603 for a request still running when the drain deadline passed after the input
/// ended. The client cannot retry on this connection (it closed its side); the data says
/// why, so it can retry elsewhere, knowing the work may have been partly done.
fn drain_deadline_passed(timeout: Duration) -> McpError {
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    McpError::Internal {
        message: format!(
            "Server stopping: the input ended and this request was still running when the {ms} ms drain \
             deadline passed; it was stopped and may have been partly done"
        ),
        data: Some(serde_json::json!({ "reason": "drain", "drainTimeoutMs": ms })),
    }
}

/// How many request reports of a connection have not finished yet: each spawned request
/// holds one [`ReportPending`] in its report closure, released when the closure is done
/// (its answer written) or dropped unrun.
#[derive(Clone, Debug, Default)]
pub(super) struct Reports(Arc<AtomicUsize>);

impl Reports {
    pub(super) fn pending(&self) -> ReportPending {
        self.0.fetch_add(1, Ordering::AcqRel);
        ReportPending(self.0.clone())
    }

    /// Waits until no report is pending, or `until` (a starved runtime's bound).
    async fn settled(&self, until: Instant) {
        while self.0.load(Ordering::Acquire) != 0 && Instant::now() < until {
            tokio::task::yield_now().await;
            if self.0.load(Ordering::Acquire) != 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
}

/// One report not yet done (see [`Reports`]).
#[derive(Debug)]
pub(super) struct ReportPending(Arc<AtomicUsize>);

impl Drop for ReportPending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

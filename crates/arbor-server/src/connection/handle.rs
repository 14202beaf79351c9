//! The connection actor's client API: [`ConnectionHandle`] inside the crate, and the public
//! [`Connection`] a server runner holds.
//!
//! Call sites read like `connection.subscribed(uri, true)` or `requester.request(input)`;
//! the message enum and ractor types stay behind this module. The handle never waits on
//! the actor except in [`ClientRequester::request`], which waits for the client's answer
//! (on the request task, never on the actor).
//!
//! Invariant: nothing here exposes ractor in the crate's public API; [`Connection`] holds
//! only a crate-private handle.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::model::mrtr::{InputRequest, InputResponse};
use ractor::ActorRef;
use tokio::sync::oneshot;

use super::client_tasks::{self, Answer, Ask};
use super::output::Output;
use super::ConnMsg;
use crate::exchange::StandaloneRead;
use crate::input::needs::Kind;
use crate::input::ClientRequester;

/// The crate's handle on a connection actor. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ConnectionHandle {
    actor: ActorRef<ConnMsg>,
    /// Where server-to-client requests made through this handle go: the route of the
    /// submission whose request task holds it (endpoints), or the connection's own output.
    output: Option<Output>,
    /// An endpoint's: whether a client reads its standalone route now.
    standalone_read: Option<Arc<StandaloneRead>>,
}

impl std::fmt::Debug for ConnectionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionHandle").field("actor", &self.actor.get_id()).finish()
    }
}

impl ConnectionHandle {
    pub(crate) fn new(actor: ActorRef<ConnMsg>) -> ConnectionHandle {
        ConnectionHandle { actor, output: None, standalone_read: None }
    }

    /// The same handle, knowing whether the endpoint's standalone route is read.
    pub(crate) fn with_standalone_read(self, read: Arc<StandaloneRead>) -> ConnectionHandle {
        ConnectionHandle { standalone_read: Some(read), ..self }
    }

    /// The same connection, with server-to-client requests sent to `output`.
    pub(crate) fn with_output(&self, output: Output) -> ConnectionHandle {
        ConnectionHandle { output: Some(output), ..self.clone() }
    }

    /// The same connection, with server-to-client requests sent to its own output (the
    /// byte stream, or an endpoint's standalone route): what outlives the request whose
    /// handle this was, for a task that asks the client later.
    pub(crate) fn session(&self) -> ConnectionHandle {
        ConnectionHandle { output: None, ..self.clone() }
    }

    /// Whether the connection's own output is read by a client: always for a byte stream;
    /// for an endpoint, while a client reads its standalone route. `None` with a byte
    /// stream, else the flag to read and wait for a change on.
    pub(crate) fn standalone_read(&self) -> Option<&StandaloneRead> {
        self.standalone_read.as_deref()
    }

    /// Whether a request made through this handle can reach the client now: the
    /// connection runs and its route (if it has one of its own) is still read.
    pub(crate) fn reaches_client(&self) -> bool {
        self.is_alive() && !self.output.as_ref().is_some_and(Output::is_closed)
    }

    /// Casts a message to the actor; `false` when it has stopped.
    pub(crate) fn cast(&self, msg: ConnMsg) -> bool {
        self.actor.cast(msg).is_ok()
    }

    /// Records that the client (un)subscribed to `uri`, after the handler agreed, and
    /// waits until updates of `uri` will be delivered (or no longer are).
    pub(crate) async fn subscribed(&self, uri: String, on: bool) -> Result<(), McpError> {
        let (reply, done) = oneshot::channel();
        let closed = || McpError::internal("Internal error: the connection is closing");
        self.actor.cast(ConnMsg::Subscribed { uri, on, reply }).map_err(|_| closed())?;
        done.await.map_err(|_| closed())?
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.actor.get_status() < ractor::ActorStatus::Stopping
    }

    pub(crate) async fn wait(&self) {
        let _ = self.actor.get_cell().wait(None).await;
    }

    pub(crate) fn close(&self) {
        let _ = self.actor.cast(ConnMsg::Close);
    }
}

/// Server-to-client request ids. One counter for the process: ids only need to be unique
/// per connection, and a shared counter lets the handle name the id before the actor sees
/// the request, so an abandoned request can be forgotten by id.
static NEXT_ASK: AtomicI64 = AtomicI64::new(1);

/// Moves this process's server-to-client request ids to a range of their own, picked at
/// random: `[k·2^32, (k+1)·2^32)` for `k` below 2^20, so they stay exact in a JSON number
/// (below 2^53). Nodes that share legacy sessions call it once, so the ids two nodes give
/// out on one session do not collide (two nodes pick one range with odds of 2^-20); ids
/// already handed out are not reused either way (the counter only grows).
pub(crate) fn spread_asks(random: u64) {
    let base = ((random % (1 << 20)) as i64) << 32;
    let _ = NEXT_ASK.fetch_max(base.max(1), Ordering::Relaxed);
}

/// Tells the connection to forget a server-to-client request whose waiter went away
/// (its request task was cancelled or timed out) before the client answered.
struct Abandon<'a> {
    handle: &'a ConnectionHandle,
    id: Option<RequestId>,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let _ = self.handle.actor.cast(ConnMsg::Forget { id });
        }
    }
}

impl ConnectionHandle {
    /// Sends `ask` to the client under a fresh id and waits for its answer; forgotten
    /// (and cancelled towards the client) if the waiter goes away first.
    pub(crate) async fn ask(&self, ask: Ask) -> Result<Answer, McpError> {
        let (reply, answer) = oneshot::channel();
        let id = RequestId::from(NEXT_ASK.fetch_add(1, Ordering::Relaxed));
        let span = crate::telemetry::outgoing_span(ask.method().as_str(), &id);
        self.actor
            .cast(ConnMsg::Ask { id: id.clone(), request: Box::new(ask), reply, output: self.output.clone() })
            .map_err(|_| McpError::internal("the connection to the client is closed"))?;
        let mut abandon = Abandon { handle: self, id: Some(id) };
        let answered = tracing::Instrument::instrument(answer, span.clone()).await;
        abandon.id = None;
        let answered = answered
            .map_err(|_| McpError::internal("the connection closed before the client answered"))
            .and_then(|r| r);
        if let Err(err) = &answered {
            crate::telemetry::record_client_error(&span, err);
        }
        answered
    }
}

impl ConnectionHandle {
    /// Sends `ask` without waiting for (or keeping) its answer.
    pub(crate) fn tell(&self, ask: Ask) {
        let (reply, _) = oneshot::channel();
        let id = RequestId::from(NEXT_ASK.fetch_add(1, Ordering::Relaxed));
        let _ = self.actor.cast(ConnMsg::Ask { id, request: Box::new(ask), reply, output: self.output.clone() });
    }
}

impl ClientRequester for ConnectionHandle {
    async fn request(&self, request: InputRequest) -> Result<InputResponse, McpError> {
        let method = Kind::of_request(&request).method_name();
        match self.ask(Ask::Input(request)).await? {
            Answer::Input(answer) => Ok(answer),
            // The client runs it as a task (`client_tasks`): follow it to its result.
            Answer::Task(task) => client_tasks::follow(self, task, method).await,
        }
    }
}

/// A running connection: one peer served by its own supervised actor.
#[derive(Clone, Debug)]
pub struct Connection {
    handle: ConnectionHandle,
}

impl Connection {
    pub(crate) fn new(handle: ConnectionHandle) -> Connection {
        Connection { handle }
    }

    /// Waits until the connection has stopped (the peer closed its input, the writer broke,
    /// or [`Connection::close`] was called), its requests were stopped, and its output was
    /// flushed.
    pub async fn closed(&self) {
        self.handle.wait().await;
    }

    /// Asks the connection to stop: in-flight requests are stopped without answers,
    /// queued output is flushed, then the transport is closed.
    pub fn close(&self) {
        self.handle.close();
    }

    /// Whether the connection is still running.
    pub fn is_open(&self) -> bool {
        self.handle.is_alive()
    }
}

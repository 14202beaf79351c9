//! The connection actor: one per peer, the router and bookkeeper of everything the peer
//! sends.
//!
//! A ractor actor with a closed message enum ([`ConnMsg`]). Its reader task decodes frames
//! into bursts of typed messages; the actor checks each request's terms (handshake session
//! or per-request `_meta`), enforces the limits, and spawns one supervised task per request
//! on its own [`TaskSupervisor`], keeping the in-flight table (id → [`TaskRef`]) that
//! cancellation and duplicate-id checks use. It answers protocol housekeeping itself
//! (`initialize`, `ping`, errors) and keeps the session state: the negotiated terms, the
//! log level, subscribed URIs, and server-to-client requests waiting for answers.
//!
//! What it is not: it never awaits user code. Handlers run on request tasks; client
//! notifications go to a per-connection worker task that calls the handler in arrival
//! order; the only awaits in the actor are on its own children, when it starts its task
//! supervisor (`pre_start`) and when it stops everything (`post_stop`).
//!
//! Invariants: when the actor has stopped, its request tasks, reader and workers have
//! stopped too (stopped explicitly in `post_stop`, before the output is flushed and
//! closed); ids are scoped to the connection, so no other connection can cancel or collide
//! with its requests; a request's response is written by its task's report, which runs
//! only after the task finished, so a cancelled request is never answered.

mod batch;
mod handle;
pub(crate) mod inbound;
mod notify;
mod pending;
mod route;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arbor_otp::{Gauge, LiveToken, TaskRef, TaskSupervisor, TaskSupervisorSpec};
use arbor_protocol::era::Session;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::methods::ClientNotification;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputRequest;
use arbor_transport::{FrameReader, FrameWriter};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use batch::BatchReply;
pub use handle::Connection;
pub(crate) use handle::ConnectionHandle;
use inbound::Burst;
use pending::{AnswerTx, Pending};

use crate::context::{ConnectionInfo, RequestSink};
use crate::handler::ListKind;
use crate::request::sink::ConnectionSink;
use crate::serve::Shared;
use crate::tree::TenantLimits;

/// Everything a connection actor is told.
pub(crate) enum ConnMsg {
    /// A burst of decoded messages from the reader.
    Inbound(Burst),
    /// The peer's input ended, or the output broke: stop.
    InputClosed,
    /// A list of the handler's changed.
    ListChanged(ListKind),
    /// A request task asks the client for input (legacy era), under a fresh id.
    Ask { id: RequestId, request: Box<InputRequest>, reply: AnswerTx },
    /// The task waiting on server-to-client request `id` went away (cancelled, timed out).
    Forget { id: RequestId },
    /// A subscription request succeeded.
    Subscribed { uri: String, on: bool },
    /// Stop on request of the server runner.
    Close,
}

/// What a connection starts with.
pub(crate) struct ConnectionArgs {
    pub(crate) shared: Arc<Shared>,
    pub(crate) reader: FrameReader,
    pub(crate) writer: FrameWriter,
    pub(crate) tenant: Arc<TenantLimits>,
    pub(crate) auth: Option<String>,
    pub(crate) gauge: Gauge,
}

/// The connection actor.
pub(crate) struct ConnectionActor;

/// A legacy session after `initialize`.
struct Legacy {
    session: Session,
    /// `notifications/initialized` arrived.
    initialized: bool,
    info: Arc<ConnectionInfo>,
    log_level: Option<LoggingLevel>,
}

/// The terms of the last modern request and the connection info built from them.
struct ModernInfo {
    version: arbor_protocol::version::ProtocolVersion,
    capabilities: serde_json::Map<String, serde_json::Value>,
    client_info: Option<serde_json::Map<String, serde_json::Value>>,
    info: Arc<ConnectionInfo>,
}

/// The actor's state.
pub(crate) struct ConnState {
    shared: Arc<Shared>,
    me: ConnectionHandle,
    writer: FrameWriter,
    tasks: TaskSupervisor,
    in_flight: HashMap<RequestId, TaskRef>,
    /// The in-flight table is swept of finished tasks when it reaches this size, so the
    /// common path (a request finishes) costs the actor no message at all.
    sweep_at: usize,
    tenant: Arc<TenantLimits>,
    auth: Option<String>,
    legacy: Option<Legacy>,
    last_modern: Option<ModernInfo>,
    pending: Pending,
    subscriptions: HashSet<String>,
    /// While the actor handles the members of a batch: where their responses go.
    batch: Option<Arc<BatchReply>>,
    sink: Arc<dyn RequestSink>,
    notifications: Option<mpsc::UnboundedSender<ClientNotification>>,
    workers: Vec<JoinHandle<()>>,
    /// The connection's tracing span, parent of its requests' spans.
    span: tracing::Span,
    _live: LiveToken,
}

impl Actor for ConnectionActor {
    type Msg = ConnMsg;
    type State = ConnState;
    type Arguments = ConnectionArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ConnMsg>,
        args: ConnectionArgs,
    ) -> Result<ConnState, ActorProcessingErr> {
        let ConnectionArgs { shared, reader, writer, tenant, auth, gauge } = args;
        let span = tracing::info_span!("connection", id = %myself.get_id(), tenant = tenant.name());
        tracing::debug!(parent: &span, "connection started");
        let spec = TaskSupervisorSpec::new("requests")
            .max_concurrency(shared.config.max_in_flight_per_connection)
            .gauge(gauge.clone());
        let tasks = TaskSupervisor::start_linked(spec, myself.get_cell()).await?;
        let me = ConnectionHandle::new(myself.clone());
        let mut workers = vec![tokio::spawn(inbound::read_loop(reader, writer.clone(), myself.clone()))];
        // Reading the handler's change feed is a plain call; the feed itself is awaited by
        // a worker, never by the actor.
        if let Some(mut changes) = shared.handler.list_changes() {
            let me = me.clone();
            workers.push(tokio::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    match changes.recv().await {
                        Ok(kind) => {
                            if !me.list_changed(kind) {
                                break;
                            }
                        }
                        // Missed some: every list may have changed.
                        Err(RecvError::Lagged(_)) => {
                            for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
                                me.list_changed(kind);
                            }
                        }
                        Err(RecvError::Closed) => break,
                    }
                }
            }));
        }
        Ok(ConnState {
            sink: Arc::new(ConnectionSink::new(writer.clone())),
            shared,
            me,
            writer,
            tasks,
            in_flight: HashMap::new(),
            sweep_at: 64,
            tenant,
            auth,
            legacy: None,
            last_modern: None,
            pending: Pending::default(),
            subscriptions: HashSet::new(),
            batch: None,
            notifications: None,
            workers,
            span,
            _live: gauge.actor_token(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<ConnMsg>,
        msg: ConnMsg,
        state: &mut ConnState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ConnMsg::Inbound(burst) => {
                for item in burst.items {
                    state.on_inbound(item);
                }
            }
            ConnMsg::ListChanged(kind) => state.on_list_changed(kind),
            ConnMsg::Ask { id, request, reply } => state.pending.ask(&state.writer, id, *request, reply),
            ConnMsg::Forget { id } => state.pending.forget(&state.writer, &id),
            ConnMsg::Subscribed { uri, on } => {
                if on {
                    state.subscriptions.insert(uri);
                } else {
                    state.subscriptions.remove(&uri);
                }
            }
            ConnMsg::InputClosed | ConnMsg::Close => myself.stop(None),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<ConnMsg>,
        event: SupervisionEvent,
        _state: &mut ConnState,
    ) -> Result<(), ActorProcessingErr> {
        // The only linked child is the task supervisor: without it no request can run.
        if let SupervisionEvent::ActorTerminated(..) | SupervisionEvent::ActorFailed(..) = event {
            myself.stop(Some("request task supervisor exited".to_owned()));
        }
        Ok(())
    }

    async fn post_stop(&self, _myself: ActorRef<ConnMsg>, state: &mut ConnState) -> Result<(), ActorProcessingErr> {
        tracing::debug!(parent: &state.span, in_flight = state.tasks.in_flight(), "connection stopping");
        for worker in state.workers.drain(..) {
            worker.abort();
        }
        state.notifications = None;
        // In-flight requests end with `Shutdown`, which their reports never answer.
        state.tasks.shutdown().await;
        state.in_flight.clear();
        state.pending = Pending::default();
        state.writer.close().await;
        Ok(())
    }
}

impl ConnState {
    /// Sends a response frame: into the current batch's array, or straight out.
    fn respond(&self, frame: Vec<u8>) {
        match &self.batch {
            Some(batch) => batch.report(Some(frame)),
            None => {
                let _ = self.writer.send(&frame);
            }
        }
    }

    /// Sends an error response.
    fn reply_error(&self, id: Option<RequestId>, error: &McpError) {
        self.respond(error.to_response(id).to_vec());
    }
}

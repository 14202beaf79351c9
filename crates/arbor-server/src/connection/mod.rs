//! The connection actor: one per peer, the router and bookkeeper of everything the peer
//! sends.
//!
//! A ractor actor with a closed message enum ([`ConnMsg`]). Over a byte stream its reader
//! task decodes frames into bursts of typed messages. As an
//! [`Endpoint`](crate::exchange::Endpoint) it has no reader: it is fed one decoded
//! submission at a time, each with the [`Route`] that everything the submission causes
//! goes to (`output.rs`: the byte stream's writer, a submission's route, or the endpoint's
//! standalone route for what no submission caused). Either way the actor checks each
//! request's terms (handshake session or per-request `_meta`), enforces the limits, and
//! spawns one supervised task per request on its own task supervisor (`spawn.rs`),
//! keeping the in-flight table (id → [`TaskRef`], `ids.rs`) that cancellation and
//! duplicate-id checks use. It answers protocol housekeeping itself (`initialize`, `ping`,
//! errors) and keeps the session state: the negotiated terms, the log level, its
//! subscription streams (`streams.rs`), and server-to-client requests waiting for answers
//! (`pending.rs`). As an endpoint it also has a desk (`desk.rs`), which starts 2026-07-28
//! requests and an initialized legacy session's ordinary ones on their transport's task
//! with the same checks and code, from terms the actor publishes and the id table they
//! share; the actor keeps everything that changes the session.
//!
//! What it is not: it never awaits user code. Handlers run on request tasks; client
//! notifications go to a per-connection worker task that calls the handler in arrival
//! order; the only await in the actor is on its own children, when it stops everything
//! (`post_stop`).
//!
//! Invariants: when the actor has stopped, its request tasks, subscription streams, reader
//! and workers have stopped too (stopped explicitly in `post_stop`, before the output is
//! flushed and closed); ids are scoped to the connection, so no other connection can
//! cancel or collide with its requests (and requests an endpoint received with
//! `OnClose::Cancel` are scoped to their exchange, outside the table); a request's
//! response is written by its task's report, which runs only after the task finished, so
//! a cancelled request is never answered.

mod batch;
mod client_tasks;
mod desk;
mod handle;
mod ids;
pub(crate) mod inbound;
pub(crate) mod inspect;
mod notify;
pub(crate) mod output;
mod pending;
mod route;
mod spawn;
mod streams;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arbor_otp::{Gauge, LiveToken, OwnedTaskSupervisor, TaskSupervisorSpec};
use arbor_protocol::era::Session;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::methods::ClientNotification;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_transport::{FrameReader, FrameWriter};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use batch::BatchReply;
use client_tasks::Ask;
pub(crate) use desk::{Desk, Submission};
pub use handle::Connection;
pub(crate) use handle::{spread_asks, ConnectionHandle};
use inbound::Burst;
pub(crate) use inbound::Inbound;
use pending::{AnswerTx, Pending};

use crate::subscription::unit::UnitRef;

use crate::context::{ConnectionInfo, RequestSink};
use crate::exchange::{EndpointShared, OnClose, Route};
use crate::principal::Principal;
use crate::request::sink::ConnectionSink;
use crate::requester::Requester;
use crate::serve::Shared;
use crate::telemetry::ConnectionTrace;
use crate::tenant::routers::TenantSlot;
use crate::tree::TenantLimits;
use output::Output;

/// Everything a connection actor is told.
pub(crate) enum ConnMsg {
    /// A burst of decoded messages from the reader.
    Inbound(Burst),
    /// The output broke (or the actor's reader could not go on): stop.
    InputClosed,
    /// The peer's input ended (end of stream) while its output may still be read: drain
    /// the requests in flight, then stop (`inbound.rs`).
    InputEnded,
    /// One submission to an endpoint: a decoded body, where what it causes goes, and who
    /// sent it (when the transport knows: `crate::Requester`).
    Submit {
        item: inbound::Inbound,
        route: Route,
        on_close: OnClose,
        requester: Option<Requester>,
        principal: Option<Arc<Principal>>,
    },
    /// A request task (or a task's run) asks the client for input (legacy era), or about a
    /// task the client runs for it, under a fresh id; `output` is the route of the task's
    /// submission (endpoints), else the connection's output.
    Ask { id: RequestId, request: Box<Ask>, reply: AnswerTx, output: Option<Output> },
    /// The task waiting on server-to-client request `id` went away (cancelled, timed out).
    Forget { id: RequestId },
    /// A legacy (un)subscription the handler agreed to; answered once it is in effect.
    Subscribed { uri: String, on: bool, reply: oneshot::Sender<Result<(), McpError>> },
    /// Describe yourself for a tree view (`inspect.rs`).
    Inspect { reply: oneshot::Sender<crate::observe::ViewNode> },
    /// Stop on request of the server runner.
    Close,
}

/// How long a closing connection waits for its streams' `handle_close` before stopping them.
const STREAM_CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// What a connection starts with.
pub(crate) struct ConnectionArgs {
    pub(crate) shared: Arc<Shared>,
    pub(crate) io: Io,
    pub(crate) tenant: Arc<TenantLimits>,
    /// The connection's place in its tenant's sessions (`TenantQuota::max_sessions`),
    /// given back when the actor's state is dropped.
    pub(crate) session_slot: Option<crate::requester::RequesterSlot>,
    pub(crate) auth: Option<String>,
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) peer: Option<std::net::SocketAddr>,
    pub(crate) session_id: Option<Arc<str>>,
    pub(crate) gauge: Gauge,
}

/// What a connection reads from and writes to.
pub(crate) enum Io {
    /// A byte stream (stdio, the in-memory pair): a reader task and one writer.
    Stream { reader: FrameReader, writer: FrameWriter },
    /// An endpoint: fed by `ConnMsg::Submit`, writing to routes.
    Endpoint(Arc<EndpointShared>),
}

/// The submission the actor is handling, while it handles it.
struct Current {
    output: Output,
    on_close: OnClose,
    /// Who sent it, if the transport said (`Endpoint::submit_from`).
    requester: Option<Requester>,
    /// The principal its transport verified for it (`Endpoint::submit_as`).
    principal: Option<Arc<Principal>>,
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
    /// Where output not caused by a submission goes: the byte stream, or the endpoint's
    /// standalone route.
    output: Output,
    /// The submission being handled (endpoints only): its output replaces `output`.
    current: Option<Current>,
    endpoint: Option<Arc<EndpointShared>>,
    /// The request tasks' supervisor: owned, not an actor (the connection is its place in
    /// the tree and stops it in `post_stop`), because an idle actor costs about 7.9 KB.
    tasks: OwnedTaskSupervisor,
    /// The requests in flight by id (not those scoped to their exchange), shared with the
    /// endpoint's desk, which starts a legacy session's requests too (`ids.rs`).
    ids: Arc<parking_lot::Mutex<ids::IdTable>>,
    /// Request reports not yet done (`inbound::Reports`): a task counts as finished just
    /// before its report writes the answer, so the end-of-input drain waits for these too.
    reports: inbound::Reports,
    /// When the actor started, for tree views.
    started: tokio::time::Instant,
    tenant: Arc<TenantLimits>,
    /// Held for the connection's life (`ConnectionArgs::session_slot`).
    _session_slot: Option<crate::requester::RequesterSlot>,
    /// The tenant's handler, looked up once: each request loads it when it is spawned
    /// (`crate::tenant::routers`).
    handlers: Arc<TenantSlot>,
    auth: Option<String>,
    /// The principal the connection was opened for (a legacy session's `initialize`).
    principal: Option<Arc<Principal>>,
    legacy: Option<Legacy>,
    /// Boxed: it is set only on an endpoint serving 2026-07-28 requests, and inline it
    /// would size every connection actor's task (a legacy session's included) by its
    /// 160 bytes.
    last_modern: Option<Box<ModernInfo>>,
    pending: Pending,
    /// The subscription streams' supervisor: one light task per stream, no deadline.
    streams: OwnedTaskSupervisor,
    /// 2026-07-28 listen streams by request id.
    listens: HashMap<RequestId, UnitRef>,
    /// Legacy `resources/subscribe` streams by URI.
    resource_streams: HashMap<String, UnitRef>,
    /// The legacy session's `list_changed` stream.
    list_stream: Option<UnitRef>,
    /// Listens scoped to their exchange (`OnClose::Cancel`): not keyed by id, closed with
    /// their route or the connection.
    scoped_listens: Vec<UnitRef>,
    /// The connection's own requester, made once: its principal (`auth`), else the peer
    /// it was opened for (a legacy HTTP session); `None` for a connection that serves
    /// many requesters (the 2026-07-28 pool, whose submissions name theirs) or one whose
    /// peer is unknown (stdio).
    own: Option<Requester>,
    /// While the actor handles the members of a batch: where their responses go.
    batch: Option<Arc<BatchReply>>,
    sink: Arc<dyn RequestSink>,
    notifications: Option<mpsc::UnboundedSender<ClientNotification>>,
    workers: Vec<JoinHandle<()>>,
    /// A byte stream's reader credits (`inbound::MAX_BURSTS`): those taken are the bursts
    /// queued here and not yet handled, shown as the inbox in tree views.
    inbox: Option<Arc<tokio::sync::Semaphore>>,
    /// The connection's tracing span, parent of its requests' spans.
    span: tracing::Span,
    /// What every span of the connection shares (`crate::telemetry`).
    trace: ConnectionTrace,
    /// The connections gauge and, for a session, its duration (`crate::metrics`).
    clock: crate::metrics::ConnectionClock,
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
        let ConnectionArgs { shared, io, tenant, session_slot, auth, principal, peer, session_id, gauge } = args;
        let trace = ConnectionTrace {
            transport: if matches!(io, Io::Stream { .. }) { "pipe" } else { "tcp" },
            session_id,
            path: format!("root/tenant:{}/connections/{}", tenant.name(), myself.get_id()).into(),
            requests_path: OnceLock::new(),
            payloads: shared.config.trace_tool_payloads,
        };
        let span = trace.connection_span(tenant.name());
        tracing::debug!(parent: &span, "connection started");
        let spec = TaskSupervisorSpec::new("requests")
            .max_concurrency(shared.config.max_in_flight_per_connection)
            .gauge(gauge.clone());
        let tasks = OwnedTaskSupervisor::new(spec);
        // Streams live as long as their client wants; their bound is their own, so open
        // subscriptions never take request slots.
        let spec = TaskSupervisorSpec::new("subscriptions")
            .max_concurrency(shared.config.max_subscriptions_per_connection)
            .shutdown_grace(STREAM_CLOSE_GRACE)
            .gauge(gauge.clone());
        let streams = OwnedTaskSupervisor::new(spec);
        let mut me = ConnectionHandle::new(myself.clone());
        let (output, endpoint, workers, inbox) = match io {
            Io::Stream { reader, writer } => {
                let credits = Arc::new(tokio::sync::Semaphore::new(inbound::MAX_BURSTS));
                let reader = tokio::spawn(inbound::read_loop(reader, writer.clone(), myself.clone(), credits.clone()));
                (Output::Frames(writer), None, vec![reader], Some(credits))
            }
            Io::Endpoint(endpoint) => {
                (Output::Standalone(endpoint.standalone.clone()), Some(endpoint), Vec::new(), None)
            }
        };
        if let Some(endpoint) = &endpoint {
            me = me.with_standalone_read(endpoint.standalone_read.clone());
        }
        let own = (auth.is_some() || peer.is_some()).then(|| Requester::new(auth.as_deref(), peer));
        let clock = crate::metrics::ConnectionClock::start(tenant.label(), endpoint.is_some());
        let handlers = shared.tenants.slot(tenant.name());
        Ok(ConnState {
            handlers,
            clock,
            sink: Arc::new(ConnectionSink::new(output.clone())),
            shared,
            me,
            output,
            current: None,
            endpoint,
            tasks,
            ids: Arc::default(),
            reports: inbound::Reports::default(),
            started: tokio::time::Instant::now(),
            tenant,
            _session_slot: session_slot,
            auth,
            principal,
            legacy: None,
            last_modern: None,
            pending: Pending::default(),
            streams,
            listens: HashMap::new(),
            resource_streams: HashMap::new(),
            list_stream: None,
            scoped_listens: Vec::new(),
            own,
            batch: None,
            notifications: None,
            workers,
            inbox,
            span,
            trace,
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
            ConnMsg::Submit { item, route, on_close, requester, principal } => {
                let sub = Submission { item, route, requester, principal };
                // A 2026-07-28 request scoped to its exchange is the desk's, which this
                // first one makes; later ones go to it straight from their transport.
                let sub = match state.desk().filter(|_| on_close == OnClose::Cancel) {
                    Some(desk) => match desk.serve(sub, false) {
                        None => return Ok(()),
                        Some(sub) => sub,
                    },
                    None => sub,
                };
                let Submission { item, route, requester, principal } = sub;
                state.current = Some(Current { output: Output::Route(route), on_close, requester, principal });
                state.on_inbound(item);
                state.current = None;
            }
            ConnMsg::Ask { id, request, reply, output } => {
                let output = output.unwrap_or_else(|| state.output.clone());
                // Run as a task on the client, if the server opted in and the client can.
                let info = state.legacy.as_ref().map(|l| &*l.info);
                let ttl = match &*request {
                    Ask::Input(input) => client_tasks::augment_ttl(state.shared.config.client_tasks, info, input),
                    // Not a request the client declared it serves: not sent at all.
                    Ask::CancelTask(_) if !client_tasks::cancels(info) => return Ok(()),
                    _ => None,
                };
                state.pending.ask(output, id, *request, ttl, reply);
            }
            ConnMsg::Forget { id } => state.pending.forget(&id),
            ConnMsg::Subscribed { uri, on, reply } => state.subscribe_resource(uri, on, reply),
            ConnMsg::InputEnded => state.drain(&myself),
            ConnMsg::Inspect { reply } => {
                let _ = reply.send(state.inspect());
            }
            ConnMsg::InputClosed | ConnMsg::Close => myself.stop(None),
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
        // Streams are told first, so their handlers' `handle_close` runs within the grace.
        state.close_streams();
        state.streams.shutdown().await;
        state.ids.lock().clear();
        if let Some(desk) = state.endpoint.as_ref().and_then(|e| e.desk.get()) {
            desk.clear();
        }
        state.pending = Pending::default();
        state.output.close().await;
        Ok(())
    }
}

impl ConnState {
    /// Where what the message being handled causes goes: its submission's route, or the
    /// connection's output.
    fn out(&self) -> &Output {
        match &self.current {
            Some(current) => &current.output,
            None => &self.output,
        }
    }

    /// Whether the message being handled is scoped to its exchange (`OnClose::Cancel`):
    /// no id table, cancelled by closing its route.
    fn scoped(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.on_close == OnClose::Cancel)
    }

    /// Sends a response frame: into the current batch's array, or straight out.
    fn respond(&self, frame: Vec<u8>) {
        match &self.batch {
            Some(batch) => batch.report(Some(frame)),
            None => {
                let _ = self.out().send_vec(output::Kind::Response, frame);
            }
        }
    }

    /// Sends an error response.
    fn reply_error(&self, id: Option<RequestId>, error: &McpError) {
        self.respond(error.to_response(id).to_vec());
    }
}

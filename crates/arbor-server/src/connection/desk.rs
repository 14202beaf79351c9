//! An endpoint's desk: where a 2026-07-28 request scoped to its exchange is routed and
//! started on its transport's own task, with no connection actor turn.
//!
//! Such a request (`OnClose::Cancel`, the modern terms in its `_meta`) touches nothing of
//! the actor's that needs the actor: it is not in the id table, its terms are its own, and
//! its output goes to its own route. So [`Endpoint::submit_from`](crate::exchange::Endpoint::submit_from)
//! hands it here, and it is checked (terms, revision gates, capabilities), bounded
//! (tenant, requester, the endpoint's task supervisor) and spawned as the same supervised
//! task the actor would spawn (`spawn::start`, one code path for both), from the HTTP
//! handler's task. What the desk does not serve goes to the actor as before: listens
//! (streams the actor keeps), notifications, responses, batches, refused bodies and
//! requests without the modern terms.
//!
//! A legacy session's requests come here too, once `initialize` was answered: the actor
//! publishes the session's terms (revision, connection info, log level) to the desk, and
//! the id table is shared (`ids.rs`), so duplicate ids and `notifications/cancelled` work
//! whichever of the two started a request. What changes the session (`initialize`,
//! `logging/setLevel`, (un)subscriptions, notifications, answers to the server's own
//! requests, batches) still goes to the actor; a `logging/setLevel` is also applied to the
//! published terms as it is submitted, so that no later request, served here, misses it.
//!
//! The actor makes the desk on its first scoped submission, or at a legacy session's first
//! ordinary request (which it serves itself), and keeps it in its `EndpointShared`; a byte
//! stream, and a session that never sent a request, have none. What it is not: a second
//! actor or a lock around the actor's state: it holds only what is shared already (the
//! server, the tenant, the handler slot, the task supervisor) plus two small locks of its
//! own, the modern-terms cache and the list of its running requests for tree views.
//!
//! Invariant: a request served here is answered exactly once, by a refusal written to its
//! route at once or by its task's report, exactly as through the actor; the actor's
//! `post_stop` stops its tasks (they share the supervisor), and a spawn after that is
//! refused, so nothing outlives the endpoint.

use std::sync::Arc;

use arbor_otp::TaskSupervisor;
use arbor_protocol::era;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::Meta;
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::{ClientRequest, MethodName};
use arbor_protocol::model::common::EmptyResult;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::version::ProtocolVersion;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::ids::IdTable;
use super::inbound::{Inbound, Reports};
use super::inspect::{request_node, InFlight};
use super::output::{Kind, Output};
use super::route::{gate, is_modern, modern_info, modern_terms, offers, same_principal, take_meta, Who};
use super::spawn::{start, SpawnCtx};
use super::{ConnState, ConnectionHandle, ModernInfo};
use crate::context::ConnectionInfo;
use crate::error::OverloadScope;
use crate::exchange::Route;
use crate::observe::ViewNode;
use crate::principal::Principal;
use crate::request::JobTerms;
use crate::requester::Requester;
use crate::serve::Shared;
use crate::telemetry::ConnectionTrace;
use crate::tenant::routers::TenantSlot;
use crate::tree::TenantLimits;

/// One submission to an endpoint: a decoded body, its route and who sent it.
pub(crate) struct Submission {
    pub(crate) item: Inbound,
    pub(crate) route: Route,
    pub(crate) requester: Option<Requester>,
    pub(crate) principal: Option<Arc<Principal>>,
}

/// The requests a desk started, for tree views; swept of finished ones as it grows.
struct Running {
    list: Vec<InFlight>,
    sweep_at: usize,
}

/// See the module docs.
pub(crate) struct Desk {
    shared: Arc<Shared>,
    tenant: Arc<TenantLimits>,
    handlers: Arc<TenantSlot>,
    tasks: TaskSupervisor,
    trace: ConnectionTrace,
    me: ConnectionHandle,
    standalone: Output,
    reports: Reports,
    own: Option<Requester>,
    auth: Option<String>,
    principal: Option<Arc<Principal>>,
    /// The last modern terms and the connection info built from them (`route::modern_info`).
    last_modern: Mutex<Option<Box<ModernInfo>>>,
    running: Mutex<Running>,
    /// The connection's id table, the actor's own (`ids.rs`).
    ids: Arc<Mutex<IdTable>>,
    /// The connection's span, parent of a session's requests' spans.
    span: tracing::Span,
    /// The legacy session's terms, published by the actor when it makes the desk and
    /// whenever they change (`ConnState::publish`); `None` on an endpoint with no session.
    legacy: ArcSwapOption<LegacyTerms>,
}

/// What a legacy session's request is served with, as the actor last published it.
#[derive(Clone, Debug)]
pub(super) struct LegacyTerms {
    pub(super) version: ProtocolVersion,
    pub(super) info: Arc<ConnectionInfo>,
    pub(super) log_level: Option<LoggingLevel>,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk").field("tenant", &self.tenant.name()).finish_non_exhaustive()
    }
}

impl Desk {
    /// The desk of the connection `state` (an endpoint's), sharing its supervisor.
    pub(super) fn new(state: &ConnState) -> Desk {
        Desk {
            shared: state.shared.clone(),
            tenant: state.tenant.clone(),
            handlers: state.handlers.clone(),
            tasks: (*state.tasks).clone(),
            trace: state.trace.clone(),
            me: state.me.clone(),
            standalone: state.output.clone(),
            reports: state.reports.clone(),
            own: state.own.clone(),
            auth: state.auth.clone(),
            principal: state.principal.clone(),
            last_modern: Mutex::new(None),
            running: Mutex::new(Running { list: Vec::new(), sweep_at: 64 }),
            ids: state.ids.clone(),
            span: state.span.clone(),
            legacy: ArcSwapOption::empty(),
        }
    }

    /// The legacy session's terms, as the actor has them now.
    pub(super) fn publish(&self, terms: LegacyTerms) {
        self.legacy.store(Some(Arc::new(terms)));
    }

    /// A `logging/setLevel` submitted to the session: applied to the published terms
    /// before it reaches the actor (which applies it to its own), so a request served here
    /// right after its answer cannot run at the old level. A level the session would refuse
    /// (no logging capability, a revision without it) changes nothing.
    pub(crate) fn set_level_early(&self, item: &Inbound) {
        let Inbound::Request { request, .. } = item else { return };
        let ClientRequest::SetLevel(params) = &**request else { return };
        let Some(legacy) = self.legacy.load_full() else { return };
        let allowed = gate(MethodName::SetLevel).is_none_or(|feature| legacy.version.supports(feature))
            && offers(&self.shared, MethodName::SetLevel);
        if allowed && !is_modern(request) {
            self.publish(LegacyTerms { log_level: Some(params.level), ..(*legacy).clone() });
        }
    }

    /// Serves `sub`, a legacy session's submission, if it is a request the session's terms
    /// settle (not `initialize`, `logging/setLevel`, an (un)subscription or a request with
    /// the 2026-07-28 terms), from the caller's task with the handler's first poll there;
    /// anything else, and everything before `initialize` was answered, is handed back.
    pub(crate) fn serve_session(&self, sub: Submission) -> Option<Submission> {
        let Some(legacy) = self.legacy.load_full() else { return Some(sub) };
        let Submission { item, route, requester, principal } = sub;
        let (id, mut request) = match item {
            Inbound::Request { id, request } if session_served(request.method()) && !is_modern(&request) => {
                (id, request)
            }
            item => return Some(Submission { item, route, requester, principal }),
        };
        let output = Output::Route(route);
        let method = request.method();
        let meta = take_meta(&mut request);
        let version = legacy.version;
        if self.answered_at_once(&output, &id, method, version) {
            return None;
        }
        // As the actor's `requester()`, `principal()` and `job_terms`: a principal that
        // presented a new token is seen with what it proves now.
        let requester = self.own.clone().or(requester).unwrap_or_default();
        let principal = principal.or_else(|| self.principal.clone());
        let connection = if principal.is_some() && !same_principal(&legacy.info.principal, &principal) {
            let info = Arc::new(ConnectionInfo { principal, ..(*legacy.info).clone() });
            self.publish(LegacyTerms { info: info.clone(), ..(*legacy).clone() });
            info
        } else {
            legacy.info.clone()
        };
        let may_log = self.shared.capabilities.logging.is_some();
        let terms = JobTerms {
            version,
            connection,
            progress_token: meta.as_ref().and_then(Meta::progress_token),
            log_level: legacy.log_level.filter(|_| may_log),
        };
        let duplicate = !self.ids.lock().reserve(&id);
        let ctx = self.ctx(&output, &requester, Some(&self.span), duplicate, true);
        let started = start(&ctx, id.clone(), request, meta.unwrap_or_default(), terms);
        if !duplicate {
            let mut ids = self.ids.lock();
            match started {
                Some(started) => ids.started(id, started),
                None => ids.release(&id),
            }
        }
        None
    }

    /// Serves `sub` if it is a 2026-07-28 request other than a listen, from the caller's
    /// task; anything else is handed back (`Some`), for the actor. The submission is
    /// scoped to its exchange (`OnClose::Cancel`): the caller checked. `eager`: the caller
    /// is the request's transport task, which only waits for this answer, so the
    /// handler's first poll runs on it and a handler ready at once (most are) costs no
    /// task at all; never for the actor, whose turn it would hold.
    pub(crate) fn serve(&self, sub: Submission, eager: bool) -> Option<Submission> {
        let Submission { item, route, requester, principal } = sub;
        let (id, mut request) = match item {
            Inbound::Request { id, request }
                if request.method() != MethodName::SubscriptionsListen && is_modern(&request) =>
            {
                (id, request)
            }
            item => return Some(Submission { item, route, requester, principal }),
        };
        let output = Output::Route(route);
        let method = request.method();
        let meta = take_meta(&mut request);
        let terms = match self.shared.per_request.terms(meta.as_ref(), era::Transport::Stdio) {
            Ok(terms) => terms,
            Err(err) => {
                refuse(&output, id, &err);
                return None;
            }
        };
        let version = terms.version();
        if self.answered_at_once(&output, &id, method, version) {
            return None;
        }
        // As the actor's `requester()` and `principal()`: the endpoint's own principal
        // wins over the submission's requester; the submission's principal over none.
        let requester = self.own.clone().or(requester).unwrap_or_default();
        let principal = principal.or_else(|| self.principal.clone());
        let who = Who { tenant: self.tenant.name(), auth: self.auth.as_ref(), requester: requester.clone(), principal };
        let info = modern_info(&mut self.last_modern.lock(), who, &terms, meta.as_ref());
        let job_terms = modern_terms(&terms, info, self.shared.capabilities.logging.is_some());
        let ctx = self.ctx(&output, &requester, None, false, eager);
        if let Some(started) = start(&ctx, id, request, meta.unwrap_or_default(), job_terms) {
            self.record(started);
        }
        None
    }

    /// Answers at once what needs no task: a method the revision or the server does not
    /// offer (-32601), and `ping`. `true` when it did.
    fn answered_at_once(&self, output: &Output, id: &RequestId, method: MethodName, version: ProtocolVersion) -> bool {
        if gate(method).is_some_and(|feature| !version.supports(feature)) || !offers(&self.shared, method) {
            refuse(output, id.clone(), &McpError::method_not_found(method.as_str()));
            return true;
        }
        if method == MethodName::Ping {
            let _ = output.send_vec(Kind::Response, encode_response(id, &EmptyResult::default()));
            return true;
        }
        false
    }

    /// What starting a request needs, from the desk: a legacy session's request (`parent`
    /// the connection's span; in the id table, so `duplicate` says whether its id is
    /// taken) or one scoped to its exchange (`parent` `None`).
    fn ctx<'a>(
        &'a self,
        output: &'a Output,
        requester: &'a Requester,
        parent: Option<&'a tracing::Span>,
        duplicate: bool,
        eager: bool,
    ) -> SpawnCtx<'a> {
        let scoped = parent.is_none();
        SpawnCtx {
            shared: &self.shared,
            tenant: &self.tenant,
            handlers: &self.handlers,
            tasks: &self.tasks,
            trace: &self.trace,
            parent,
            me: &self.me,
            output,
            connection_sink: None,
            standalone: &self.standalone,
            endpoint: true,
            requester: Some(requester).filter(|r| **r != Requester::Unknown),
            batch: None,
            reports: &self.reports,
            scope: if scoped { OverloadScope::Endpoint } else { OverloadScope::Session },
            scoped,
            duplicate,
            eager,
        }
    }

    /// Keeps a started request for tree views (one answered at its first poll is done).
    pub(super) fn record(&self, started: InFlight) {
        if started.is_finished() {
            return;
        }
        let mut running = self.running.lock();
        if running.list.len() >= running.sweep_at {
            running.list.retain(|task| !task.is_finished());
            running.sweep_at = (running.list.len() * 2).max(64);
        }
        running.list.push(started);
    }

    /// The running requests as view nodes.
    pub(super) fn views(&self, now: Instant) -> Vec<ViewNode> {
        let running = self.running.lock();
        running.list.iter().filter(|r| !r.is_finished()).map(|r| request_node(None, r, now)).collect()
    }

    /// Forgets the requests (the connection stopped them).
    pub(super) fn clear(&self) {
        self.running.lock().list.clear();
    }
}

/// Whether a legacy session's request of `method` is the desk's: not one that changes the
/// session, which the actor keeps.
fn session_served(method: MethodName) -> bool {
    !matches!(
        method,
        MethodName::Initialize
            | MethodName::SetLevel
            | MethodName::Subscribe
            | MethodName::Unsubscribe
            | MethodName::SubscriptionsListen
    )
}

/// Answers a refused request on its route.
fn refuse(output: &Output, id: RequestId, err: &McpError) {
    let _ = output.send_vec(Kind::Response, err.to_response(Some(id)).to_vec());
}

impl ConnState {
    /// The endpoint's desk, made on first use; `None` for a byte stream.
    pub(super) fn desk(&self) -> Option<&Arc<Desk>> {
        self.endpoint.as_ref().map(|e| e.desk.get_or_init(|| Arc::new(Desk::new(self))))
    }

    /// Publishes the legacy session's terms to the endpoint's desk, if it has one: at
    /// `initialize`, a `logging/setLevel` and a principal's new token.
    pub(super) fn publish(&self) {
        let desk = self.endpoint.as_ref().and_then(|e| e.desk.get());
        let (Some(legacy), Some(desk)) = (&self.legacy, desk) else { return };
        desk.publish(LegacyTerms {
            version: legacy.session.version(),
            info: legacy.info.clone(),
            log_level: legacy.log_level,
        });
    }

    /// Makes a legacy session's desk, once: at the session's first ordinary request, which
    /// the actor serves itself. An idle session (a handshake and nothing since) has none:
    /// about 500 bytes kept for its life.
    pub(super) fn open_session_desk(&self) {
        let Some(endpoint) = &self.endpoint else { return };
        if endpoint.desk.get().is_none() {
            self.desk();
            self.publish();
        }
    }
}

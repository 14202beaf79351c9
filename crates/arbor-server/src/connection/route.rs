//! The connection actor's routing: which era a request belongs to, whether it may be served,
//! and where it goes.
//!
//! For each request: a request carrying the modern terms in `_meta` is checked by
//! `era::per_request` and served statelessly, whatever else happened on the connection;
//! `initialize` opens a handshake session (`era::handshake`); anything else belongs to
//! that session, or, with no session, is a modern request missing its terms (-32602), with
//! `ping` allowed before `initialize` as the legacy lifecycle says. Methods are then gated
//! by the revision in force (`ProtocolVersion::supports`) and by the capabilities the
//! server advertised, and the rest become request tasks.
//!
//! This is bookkeeping only: nothing here awaits, and the only user code it calls is the
//! handler's synchronous `tool_deadline`, behind `catch_unwind` (in `spawn.rs`, which
//! turns a routed request into its task). Invariant: every request
//! that reaches this module is answered exactly once, at once (refusals, housekeeping) or
//! by its task's report, unless the client cancels it.

use std::sync::Arc;

use arbor_protocol::era::lower::Lower;
use arbor_protocol::era::{self, Terms};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::{self, Meta};
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::{ClientRequest, MethodName};
use arbor_protocol::model::common::{EmptyResult, Implementation};
use arbor_protocol::model::lifecycle::{InitializeRequestParams, InitializeResult};
use arbor_protocol::model::skills;
use arbor_protocol::version::{Feature, ProtocolVersion};

use super::inbound::Inbound;
use super::{BatchReply, ConnState, Legacy, ModernInfo};
use crate::context::ConnectionInfo;
use crate::error::{already_initialized, OverloadScope};
use crate::exchange::OnClose;
use crate::principal::Principal;
use crate::request::JobTerms;
use crate::requester::Requester;
use crate::serve::Shared;

/// The revision feature a client→server method needs, if any.
pub(super) fn gate(method: MethodName) -> Option<Feature> {
    Some(match method {
        MethodName::Initialize => Feature::InitializeHandshake,
        MethodName::Ping => Feature::Ping,
        MethodName::Discover => Feature::ServerDiscover,
        MethodName::SubscriptionsListen => Feature::SubscriptionsListen,
        MethodName::Subscribe | MethodName::Unsubscribe => Feature::ResourceSubscribe,
        MethodName::SetLevel => Feature::SetLogLevel,
        MethodName::GetTaskPayload | MethodName::ListTasks => Feature::CoreTasks,
        _ => return None,
    })
}

/// The request's `_meta` in its params, by reference (`&`) or mutably (`&mut`): one list
/// of the request types for both.
macro_rules! meta_of {
    ($request:expr, $($ref:tt)+) => {
        match $request {
            ClientRequest::Initialize(p) => $($ref)+ p.meta,
            ClientRequest::Ping(p) | ClientRequest::Discover(p) => $($ref)+ p.meta,
            ClientRequest::ListTools(p)
            | ClientRequest::ListResources(p)
            | ClientRequest::ListResourceTemplates(p)
            | ClientRequest::ListPrompts(p)
            | ClientRequest::ListTasks(p)
            | ClientRequest::ListSkills(p) => $($ref)+ p.meta,
            ClientRequest::CallTool(p) => $($ref)+ p.meta,
            ClientRequest::ReadResource(p) => $($ref)+ p.meta,
            ClientRequest::Subscribe(p) | ClientRequest::Unsubscribe(p) => $($ref)+ p.meta,
            ClientRequest::SubscriptionsListen(p) => $($ref)+ p.meta,
            ClientRequest::GetPrompt(p) => $($ref)+ p.meta,
            ClientRequest::Complete(p) => $($ref)+ p.meta,
            ClientRequest::SetLevel(p) => $($ref)+ p.meta,
            ClientRequest::GetTask(p) | ClientRequest::GetTaskPayload(p) | ClientRequest::CancelTask(p) => {
                $($ref)+ p.meta
            }
            ClientRequest::UpdateTask(p) => $($ref)+ p.meta,
            ClientRequest::GetSkill(p) => $($ref)+ p.meta,
            ClientRequest::ReadDirectory(p) => $($ref)+ p.meta,
        }
    };
}

/// Moves the request's `_meta` out of its params; the context carries it from here on.
pub(super) fn take_meta(request: &mut ClientRequest) -> Option<Meta> {
    let meta: &mut Option<Meta> = meta_of!(request, &mut);
    meta.take()
}

/// Whether the request carries the modern terms in its `_meta` (see [`carries_modern_terms`]).
pub(super) fn is_modern(request: &ClientRequest) -> bool {
    let meta: &Option<Meta> = meta_of!(request, &);
    meta.as_ref().is_some_and(carries_modern_terms)
}

/// Whether `_meta` carries either modern term key, as `era::arrival` decides: a request
/// with one and not the other is a malformed modern request, not a legacy one.
fn carries_modern_terms(meta: &Meta) -> bool {
    meta.get(meta::PROTOCOL_VERSION).is_some() || meta.get(meta::CLIENT_CAPABILITIES).is_some()
}

/// How the terms of one request were established.
enum Served {
    Modern(Terms),
    Legacy,
}

impl ConnState {
    pub(super) fn on_inbound(&mut self, item: Inbound) {
        match item {
            Inbound::Request { id, request } => self.on_request(id, request),
            Inbound::Notification(n) => self.on_notification(*n),
            Inbound::Response { id, result } => self.pending.answer(&id, &result),
            Inbound::Error(e) => {
                let arbor_protocol::jsonrpc::ErrorResponse { id, error } = *e;
                self.pending.fail(id.as_ref(), error)
            }
            Inbound::Refused { id, error } => self.reply_error(id, &error),
            Inbound::Batch(items) => {
                let allowed = self.legacy.as_ref().is_some_and(|l| l.session.version().supports(Feature::Batching));
                if !allowed {
                    let error = McpError::InvalidRequest {
                        message: "Invalid Request: JSON-RPC batches are not supported by this protocol revision".into(),
                        data: None,
                    };
                    return self.reply_error(None, &error);
                }
                let expected =
                    items.iter().filter(|i| matches!(i, Inbound::Request { .. } | Inbound::Refused { .. })).count();
                let batch = Arc::new(BatchReply::new(self.out().clone(), expected));
                self.batch = Some(batch);
                for item in items {
                    // A batch inside a batch is not JSON-RPC; the decoder never makes one.
                    self.on_inbound(item);
                }
                self.batch = None;
            }
            Inbound::Ignored => {}
        }
    }

    fn on_request(&mut self, id: RequestId, mut request: Box<ClientRequest>) {
        let method = request.method();
        let meta = take_meta(&mut request);
        let served = if meta.as_ref().is_some_and(carries_modern_terms) {
            match self.shared.per_request.terms(meta.as_ref(), era::Transport::Stdio) {
                Ok(terms) => Served::Modern(terms),
                Err(err) => return self.reply_error(Some(id), &err),
            }
        } else if let ClientRequest::Initialize(params) = *request {
            return self.on_initialize(id, *params);
        } else if self.legacy.is_some() {
            Served::Legacy
        } else if method == MethodName::Ping {
            // The legacy lifecycle allows ping before initialize.
            return self.reply(&id, &EmptyResult::default());
        } else {
            let err = match self.shared.per_request.terms(meta.as_ref(), era::Transport::Stdio) {
                Err(err) => err,
                Ok(_) => McpError::invalid_params("Missing required _meta terms"),
            };
            let err = McpError::invalid_params(format!("{} (or send initialize first)", err.message()));
            return self.reply_error(Some(id), &err);
        };
        let version = match &served {
            Served::Modern(terms) => terms.version(),
            Served::Legacy => self.legacy.as_ref().map_or(ProtocolVersion::LATEST_LEGACY, |l| l.session.version()),
        };
        if gate(method).is_some_and(|feature| !version.supports(feature)) || !self.offers(method) {
            return self.reply_error(Some(id), &McpError::method_not_found(method.as_str()));
        }
        match method {
            MethodName::Ping => return self.reply(&id, &EmptyResult::default()),
            MethodName::SetLevel => {
                if let (ClientRequest::SetLevel(params), Some(legacy)) = (&*request, self.legacy.as_mut()) {
                    // Applies to every later request of the session, even before the
                    // handler's own callback has run.
                    legacy.session.set_log_level(params.level);
                    legacy.log_level = Some(params.level);
                }
                self.publish();
            }
            _ => {}
        }
        if matches!(served, Served::Legacy) {
            // The session's first ordinary request: from the next one on, the desk serves
            // them (a session that never sends one never pays for a desk).
            self.open_session_desk();
        }
        let terms = self.job_terms(served, meta.as_ref(), version);
        self.clock.served(version);
        if let ClientRequest::SubscriptionsListen(params) = *request {
            // A stream, not a request task: it answers for itself, for as long as it runs.
            return self.open_listen(id, params.notifications, terms.connection);
        }
        self.spawn(id, request, meta.unwrap_or_default(), terms);
    }

    /// Whether the server offers `method` at all: its capability was advertised, and it is
    /// a method the runtime serves (the tasks methods only once the extension is
    /// advertised, which also offers the 2025-11-25 core tasks). `subscriptions/listen` is always
    /// served: a server with nothing to announce acknowledges an empty filter.
    pub(super) fn offers(&self, method: MethodName) -> bool {
        offers(&self.shared, method)
    }

    /// The connection info of a modern request ([`modern_info`]), cached in the actor.
    fn modern_info(&mut self, terms: &Terms, meta: Option<&Meta>) -> Arc<ConnectionInfo> {
        let who = Who {
            tenant: self.tenant.name(),
            auth: self.auth.as_ref(),
            requester: self.requester().clone(),
            principal: self.principal().cloned(),
        };
        modern_info(&mut self.last_modern, who, terms, meta)
    }
    fn job_terms(&mut self, served: Served, meta: Option<&Meta>, version: ProtocolVersion) -> JobTerms {
        let may_log = self.shared.capabilities.logging.is_some();
        match served {
            Served::Modern(terms) => {
                let connection = self.modern_info(&terms, meta);
                modern_terms(&terms, connection, may_log)
            }
            Served::Legacy => {
                let principal = self.principal().cloned();
                let legacy = self.legacy.as_mut().expect("legacy terms need a session");
                let mut refreshed = false;
                if principal.is_some() && !same_principal(&legacy.info.principal, &principal) {
                    // The session's principal presented a new token (refreshed, other
                    // scopes): this request and the next see what it proves now. The
                    // transport has already checked that it is the same identity.
                    legacy.info = Arc::new(ConnectionInfo { principal, ..(*legacy.info).clone() });
                    refreshed = true;
                }
                let terms = JobTerms {
                    version,
                    connection: legacy.info.clone(),
                    progress_token: meta.and_then(Meta::progress_token),
                    log_level: legacy.log_level.filter(|_| may_log),
                };
                if refreshed {
                    self.publish();
                }
                terms
            }
        }
    }

    fn on_initialize(&mut self, id: RequestId, params: InitializeRequestParams) {
        if self.legacy.is_some() {
            return self.reply_error(Some(id), &already_initialized());
        }
        let handshake = &self.shared.handshake;
        let opened = handshake.answer(&params.protocol_version).and_then(|v| handshake.open(v, &params.capabilities));
        let session = match opened {
            Ok(session) => session,
            Err(err) => return self.reply_error(Some(id), &err),
        };
        let version = session.version();
        let info = Arc::new(ConnectionInfo {
            tenant: self.tenant.name().to_owned(),
            auth: self.auth.clone(),
            principal: self.principal().cloned(),
            requester: self.requester().clone(),
            client_info: Some(params.client_info),
            client_capabilities: params.capabilities,
            protocol_version: version,
        });
        let log_level = self.shared.config.default_log_level;
        self.clock.legacy(version);
        self.legacy = Some(Legacy { session, initialized: false, info, log_level });
        // Before the answer, in case the desk exists: a request the client sends on reading
        // it may reach the desk.
        self.publish();
        crate::telemetry::record_negotiated(&self.span, version);
        if let Some(endpoint) = &self.endpoint {
            let _ = endpoint.negotiated.set(version);
        }
        let mut result = InitializeResult::new(
            version.as_str(),
            self.shared.legacy_capabilities(version),
            self.shared.info.implementation.clone(),
        );
        result.instructions = self.shared.info.instructions.clone();
        // The server's title, icons and website exist from their revisions on only.
        result.lower(version);
        self.reply(&id, &result);
    }

    fn reply<T: serde::Serialize>(&self, id: &RequestId, result: &T) {
        self.respond(encode_response(id, result));
    }

    /// The connection's own requester: its principal or peer, else the unknown one.
    pub(super) fn own_requester(&self) -> Requester {
        self.own.clone().unwrap_or_default()
    }

    /// Who sent the message being handled: the connection's own requester (principal,
    /// else the session's peer), else the requester its submission names, else the
    /// unknown one.
    pub(super) fn requester(&self) -> &Requester {
        static UNKNOWN: Requester = Requester::Unknown;
        let submitted = self.current.as_ref().and_then(|c| c.requester.as_ref());
        self.own.as_ref().or(submitted).unwrap_or(&UNKNOWN)
    }

    /// The principal of the message being handled: the one its submission's transport
    /// verified, else the one the connection was opened for.
    pub(super) fn principal(&self) -> Option<&Arc<Principal>> {
        self.current.as_ref().and_then(|c| c.principal.as_ref()).or(self.principal.as_ref())
    }

    /// The requester whose share of the tenant (`TenantLimits::requests`, `streams`) the
    /// message being handled counts against: any known one, whichever connection,
    /// session or endpoint it came through, so one client's many connections share one
    /// bound. The unknown requester is not counted: it may be every client at once (a
    /// router mounted without peer addresses, stdio), and the connection and tenant bounds
    /// still hold.
    pub(super) fn counted_requester(&self) -> Option<&Requester> {
        Some(self.requester()).filter(|r| **r != Requester::Unknown)
    }

    /// The scope this connection's own bounds are named by in a refusal: a byte stream's
    /// connection, a legacy session, or an endpoint shared by every requester.
    pub(super) fn own_scope(&self) -> OverloadScope {
        match &self.current {
            None => OverloadScope::Connection,
            Some(current) if current.on_close == OnClose::Cancel => OverloadScope::Endpoint,
            Some(_) => OverloadScope::Session,
        }
    }
}

/// Whether two infos carry the same principal: the same verification (one `Arc`, as the
/// transport's token cache hands out), or none on both sides.
pub(super) fn same_principal(a: &Option<Arc<Principal>>, b: &Option<Arc<Principal>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Who a modern request's connection info names (see [`modern_info`]).
pub(super) struct Who<'a> {
    pub(super) tenant: &'a str,
    pub(super) auth: Option<&'a String>,
    pub(super) requester: Requester,
    pub(super) principal: Option<Arc<Principal>>,
}

/// The connection info of a modern request. A client usually sends the same capabilities
/// and identity on every request, so the last one is kept in `cache` and reused when they
/// are equal: no parse and no allocation for the common case. This is a cache of what
/// this request declared, never a carry-over: a request that declares something else gets
/// its own.
pub(super) fn modern_info(
    cache: &mut Option<Box<ModernInfo>>,
    who: Who<'_>,
    terms: &Terms,
    meta: Option<&Meta>,
) -> Arc<ConnectionInfo> {
    let version = terms.version();
    let caps = terms.client_capabilities();
    let client_info = meta.and_then(Meta::client_info);
    let Who { tenant, auth, requester, principal } = who;
    if let Some(last) = cache {
        if last.version == version && &last.capabilities == caps && last.client_info.as_ref() == client_info {
            if last.info.requester != requester || !same_principal(&last.info.principal, &principal) {
                // The same terms from another requester (a shared endpoint's clients
                // alternate) or another verified token: the info differs only in who sent
                // it, so it is copied, not parsed again.
                last.info = Arc::new(ConnectionInfo { requester, principal, ..(*last.info).clone() });
            }
            return last.info.clone();
        }
    }
    let info = Arc::new(ConnectionInfo {
        tenant: tenant.to_owned(),
        auth: auth.cloned(),
        principal,
        requester,
        client_info: client_info.and_then(|m| serde_json::from_value::<Implementation>(m.clone().into()).ok()),
        client_capabilities: terms.typed_client_capabilities(),
        protocol_version: version,
    });
    *cache = Some(Box::new(ModernInfo {
        version,
        capabilities: caps.clone(),
        client_info: client_info.cloned(),
        info: info.clone(),
    }));
    info
}

/// A modern request's job terms: its connection info, and what its `_meta` asks for.
pub(super) fn modern_terms(terms: &Terms, connection: Arc<ConnectionInfo>, may_log: bool) -> JobTerms {
    JobTerms {
        version: terms.version(),
        connection,
        progress_token: terms.progress_token().cloned(),
        log_level: terms.log_level().filter(|_| may_log),
    }
}

/// Whether the server offers `method` at all: its capability was advertised, and it is a
/// method the runtime serves (see [`ConnState::offers`]).
pub(super) fn offers(shared: &Shared, method: MethodName) -> bool {
    let caps = &shared.capabilities;
    match method {
        MethodName::ListTools | MethodName::CallTool => caps.tools.is_some(),
        MethodName::ListResources | MethodName::ListResourceTemplates | MethodName::ReadResource => {
            caps.resources.is_some()
        }
        MethodName::Subscribe | MethodName::Unsubscribe => {
            caps.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false)
        }
        MethodName::ListPrompts | MethodName::GetPrompt => caps.prompts.is_some(),
        MethodName::Complete => caps.completions.is_some(),
        MethodName::SetLevel => caps.logging.is_some(),
        MethodName::Initialize | MethodName::Ping | MethodName::Discover | MethodName::SubscriptionsListen => true,
        // The tasks extension's methods, once it is advertised (`crate::tasks`), and
        // the 2025-11-25 core ones served from the same store (gated to that revision).
        MethodName::GetTask
        | MethodName::CancelTask
        | MethodName::UpdateTask
        | MethodName::GetTaskPayload
        | MethodName::ListTasks => {
            caps.extensions.as_ref().is_some_and(|e| e.contains_key(crate::tasks::TASKS_EXTENSION))
        }
        // The skills extension's methods, once it is advertised; the directory read
        // only with its `directoryRead` setting (`crate::skills`).
        MethodName::ListSkills | MethodName::GetSkill => {
            caps.extensions.as_ref().is_some_and(|e| e.contains_key(skills::SKILLS_EXTENSION))
        }
        MethodName::ReadDirectory => caps
            .extensions
            .as_ref()
            .and_then(|e| e.get(skills::SKILLS_EXTENSION))
            .and_then(|s| s.get(skills::DIRECTORY_READ))
            .is_some_and(|flag| flag == true),
        _ => false,
    }
}

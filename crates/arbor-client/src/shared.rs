//! The state one connection shares between the caller tasks, the reader task (or HTTP
//! response tasks) and the connection actor: the table of pending requests, the
//! negotiated session, the current link, the listeners of notification streams.
//!
//! It is not an actor and takes no decisions about the link's life (the connection actor
//! does). Locks here are short and never held across an await. Invariant: a pending entry
//! is removed exactly once, by whoever completes it (a response, a failure of the link, or
//! the caller giving up), so a late response finds nothing and is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use arbor_protocol::era::http::ParamHeader;
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::model::common::Implementation;
use arbor_protocol::version::{Era, ProtocolVersion};
use parking_lot::{Mutex, RwLock};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::call::CallCtl;
use crate::handler::HandlerRuntime;
use crate::link::Link;
use crate::options::ClientOptions;

/// What the client and the server agreed on (or learned by `server/discover`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Session {
    /// The era spoken.
    pub era: Era,
    /// The revision spoken: the negotiated one (legacy) or the per-request one (modern).
    pub version: ProtocolVersion,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server says it is.
    pub server_info: Option<Implementation>,
    /// The server's instructions for the model.
    pub instructions: Option<String>,
    /// Every revision the server listed (modern), or the negotiated one (legacy).
    pub supported_versions: Vec<String>,
}

/// A notification from the server, as received (after the client took what it consumes
/// itself: progress, cancellation of server requests, listen-stream deliveries).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerNotice {
    /// The method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// The params, if any.
    pub params: Option<Value>,
}

/// How a pending request ends from the link's side.
#[derive(Debug)]
pub(crate) enum Reply {
    Result(Box<RawValue>),
    Error(McpError),
    Failed(Failure),
}

#[derive(Debug, Clone)]
pub(crate) enum Failure {
    Transport(crate::error::TransportError),
    SessionExpired,
    Disconnected,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PendingKind {
    /// A user's call: counts for "the single in-flight call" on stdio.
    Call,
    /// A listen stream or a request the client makes for itself.
    Other,
}

pub(crate) struct Pending {
    pub(crate) tx: oneshot::Sender<Reply>,
    pub(crate) call: Option<Arc<CallCtl>>,
    pub(crate) kind: PendingKind,
    /// The HTTP task reading this request's response; aborting it closes the stream.
    pub(crate) abort: Option<AbortHandle>,
}

/// A legacy resource subscription's listener: its key and its stream's sender.
pub(crate) type ResourceListener = (u64, mpsc::UnboundedSender<ServerNotice>);

/// The connection actor, told about the link's events.
pub(crate) type EventTx = ractor::ActorRef<crate::connection::ConnMsg>;

/// Hashes the client's own request ids for the pending table: one multiply by an odd
/// constant spreads sequential ids over the table. SipHash's resistance to chosen keys
/// buys nothing here (the client picks every key; a server's ids are only looked up),
/// and it was two of the call path's hashes.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) type IdHash = std::hash::BuildHasherDefault<IdHasher>;

pub(crate) struct Shared {
    pub(crate) options: ClientOptions,
    pub(crate) runtime: Option<HandlerRuntime>,
    /// The client's capabilities as 2026-07-28 requests declare them.
    pub(crate) client_capabilities: Value,
    pub(crate) client_info: Value,
    /// The modern terms every 2026-07-28 request carries in `_meta` (version,
    /// capabilities, client info), encoded once: the members, without braces.
    pub(crate) modern_meta: String,
    next_id: AtomicI64,
    pub(crate) pending: Mutex<HashMap<i64, Pending, IdHash>>,
    session: RwLock<Option<Arc<Session>>>,
    link: RwLock<Option<Link>>,
    pub(crate) generation: AtomicU64,
    pub(crate) notices: broadcast::Sender<ServerNotice>,
    pub(crate) listens: Mutex<HashMap<i64, mpsc::UnboundedSender<ServerNotice>>>,
    pub(crate) resource_subs: Mutex<HashMap<String, Vec<ResourceListener>>>,
    pub(crate) next_sub: AtomicU64,
    pub(crate) malformed: AtomicU64,
    /// `x-mcp-header` annotations by tool name, learned from `tools/list` (modern HTTP).
    pub(crate) param_headers: Mutex<HashMap<String, Arc<[ParamHeader]>>>,
    pub(crate) events: Mutex<Option<EventTx>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("pending", &self.pending.lock().len()).finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(options: ClientOptions, runtime: Option<HandlerRuntime>) -> Arc<Shared> {
        let mut client_capabilities = match &runtime {
            Some(rt) => serde_json::to_value(rt.capabilities()).unwrap_or_else(|_| Value::Object(Default::default())),
            None => Value::Object(Default::default()),
        };
        // These are the 2026-07-28 terms: that revision has no `tasks` capability (the
        // 2025-11-25 one, declared at `initialize` from the runtime itself).
        if let Value::Object(caps) = &mut client_capabilities {
            caps.remove("tasks");
        }
        let client_info = serde_json::to_value(&options.info).unwrap_or(Value::Null);
        let modern_meta = {
            let mut terms = serde_json::Map::new();
            terms.insert(
                arbor_protocol::meta::PROTOCOL_VERSION.into(),
                Value::String(arbor_protocol::version::ProtocolVersion::LATEST.as_str().into()),
            );
            terms.insert(arbor_protocol::meta::CLIENT_CAPABILITIES.into(), client_capabilities.clone());
            terms.insert(arbor_protocol::meta::CLIENT_INFO.into(), client_info.clone());
            let text = Value::Object(terms).to_string();
            text[1..text.len() - 1].to_owned()
        };
        let (notices, _) = broadcast::channel(1024);
        Arc::new(Shared {
            options,
            runtime,
            client_capabilities,
            client_info,
            modern_meta,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::default()),
            session: RwLock::new(None),
            link: RwLock::new(None),
            generation: AtomicU64::new(0),
            notices,
            listens: Mutex::new(HashMap::new()),
            resource_subs: Mutex::new(HashMap::new()),
            next_sub: AtomicU64::new(1),
            malformed: AtomicU64::new(0),
            param_headers: Mutex::new(HashMap::new()),
            events: Mutex::new(None),
        })
    }

    pub(crate) fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        self.session.read().clone()
    }

    pub(crate) fn set_session(&self, session: Option<Session>) {
        *self.session.write() = session.map(Arc::new);
    }

    pub(crate) fn era(&self) -> Option<Era> {
        self.session.read().as_ref().map(|s| s.era)
    }

    pub(crate) fn link(&self) -> Option<Link> {
        self.link.read().clone()
    }

    pub(crate) fn set_link(&self, link: Option<Link>) {
        *self.link.write() = link;
    }

    pub(crate) fn event(&self, event: crate::connection::Event) {
        if let Some(tx) = self.events.lock().as_ref() {
            let _ = tx.cast(crate::connection::ConnMsg::Event(event));
        }
    }

    /// Completes a pending request, if it is still pending.
    pub(crate) fn complete(&self, id: i64, reply: Reply) -> bool {
        let entry = self.pending.lock().remove(&id);
        match entry {
            Some(p) => {
                let _ = p.tx.send(reply);
                true
            }
            None => false,
        }
    }

    /// Fails every pending request (the link went down or the client closed), and ends
    /// every listen stream.
    pub(crate) fn fail_all(&self, failure: Failure) {
        let drained: Vec<Pending> = self.pending.lock().drain().map(|(_, p)| p).collect();
        for p in drained {
            if let Some(abort) = p.abort {
                abort.abort();
            }
            let _ = p.tx.send(Reply::Failed(failure.clone()));
        }
        self.listens.lock().clear();
        // A legacy subscription belongs to its session.
        self.resource_subs.lock().clear();
    }

    /// The in-flight call a legacy server request on a shared stream belongs to: the
    /// single user call in flight, if there is exactly one.
    pub(crate) fn single_call(&self) -> Option<Arc<CallCtl>> {
        let pending = self.pending.lock();
        let mut calls = pending.values().filter(|p| p.kind == PendingKind::Call);
        match (calls.next(), calls.next()) {
            (Some(p), None) => p.call.clone(),
            _ => None,
        }
    }

    pub(crate) fn calls_in_flight(&self) -> usize {
        self.pending.lock().values().filter(|p| p.kind == PendingKind::Call).count()
    }

    pub(crate) fn call_of(&self, id: i64) -> Option<Arc<CallCtl>> {
        self.pending.lock().get(&id).and_then(|p| p.call.clone())
    }

    pub(crate) fn count_malformed(&self, what: &str, detail: &dyn std::fmt::Display) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(target: "arbor_client", "malformed {what} from the server: {detail}");
    }
}

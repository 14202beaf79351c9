//! [`Parsed`]: a body decoded once, before it is routed, with the facts an HTTP layer
//! reads to pick a status code and check headers.
//!
//! The decoding is the byte-stream reader's own (`connection::inbound::decode_bytes`:
//! one-pass typed decoding of requests, one element at a time for batches), so a message
//! means the same over HTTP as over stdio and no bytes are decoded twice on the way to the
//! actor. A request that decoded reads its facts (method, `_meta` version, the member
//! `Mcp-Name` names, the tool's arguments) from its typed params, so the body is neither
//! kept nor parsed again; for what typed decoding does not keep (the method string and
//! params of a refused request or of a notification) the body is kept and read on first
//! use, once. It is not a validator of headers or sessions: those are the HTTP layer's,
//! with `arbor_protocol::era::http`.
//!
//! Invariant: what [`Parsed::error`] reports is exactly the error its submission answers
//! with, since both come from the same decoded item.

use std::sync::OnceLock;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::{self, Meta};
use arbor_protocol::methods::{ClientRequest, MethodName};
use serde_json::{Map, Value};

use crate::connection::inbound::decode_bytes;
use crate::connection::Inbound;

/// What a [`Parsed`] body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// One request, including one that will be refused (malformed JSON, invalid JSON-RPC,
    /// unknown method, invalid params): its submission answers one response.
    Request,
    /// One notification (also one whose params could not be read: it is ignored).
    Notification,
    /// One response or error response from the client (to a server→client request).
    Response,
    /// A JSON-RPC batch (2025-03-26).
    Batch,
}

/// The envelope fields read from the body on demand.
#[derive(Debug, Default)]
struct Envelope {
    method: Option<String>,
    params: Option<Value>,
}

/// A decoded body (one message or a batch), parsed once, before routing.
#[derive(Debug)]
pub struct Parsed {
    pub(crate) item: Inbound,
    /// The body, kept only when the item is not a decoded request (whose facts are typed).
    body: Vec<u8>,
    /// Boxed: read only for a body that is not a decoded request, it made every `Parsed`
    /// (moved from the transport's parse into the endpoint) 88 bytes larger.
    envelope: OnceLock<Box<Envelope>>,
}

impl Parsed {
    /// Decodes a body. Malformed JSON or invalid JSON-RPC still yields a `Parsed`, whose
    /// submission answers the error (-32700 / -32600, with the id when it could be read);
    /// [`Parsed::error`] exposes it so the HTTP layer can answer 400 directly.
    pub fn parse(body: &[u8]) -> Parsed {
        let item = decode_bytes(body);
        let body = if matches!(item, Inbound::Request { .. }) { Vec::new() } else { body.to_vec() };
        Parsed { item, body, envelope: OnceLock::new() }
    }

    /// What the body is.
    pub fn kind(&self) -> BodyKind {
        match &self.item {
            Inbound::Request { .. } | Inbound::Refused { .. } => BodyKind::Request,
            Inbound::Notification(_) | Inbound::Ignored => BodyKind::Notification,
            Inbound::Response { .. } | Inbound::Error(_) => BodyKind::Response,
            Inbound::Batch(_) => BodyKind::Batch,
        }
    }

    /// The error this body will be answered with when it is not a servable message
    /// (-32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid
    /// params). `None` for a servable message, a batch (each member answers for itself)
    /// and a notification that could not be read (ignored, never answered). The actor may
    /// still refuse a servable message for its own reasons (terms, gates, limits).
    pub fn error(&self) -> Option<&McpError> {
        match &self.item {
            Inbound::Refused { error, .. } => Some(&**error),
            _ => None,
        }
    }

    /// How many [`Outgoing::Response`](super::Outgoing::Response) messages its submission
    /// produces on its route: one for a request (refused or not), one for a batch with at
    /// least one member expecting an answer (the whole array is one message), none for
    /// notifications and responses. A request whose route closes under
    /// [`OnClose::Cancel`](super::OnClose::Cancel) produces none. (A batch sent in a revision
    /// without batching is answered by one -32600 error instead of its array.)
    pub fn expected_responses(&self) -> usize {
        match &self.item {
            Inbound::Request { .. } | Inbound::Refused { .. } => 1,
            Inbound::Batch(items) => {
                usize::from(items.iter().any(|i| matches!(i, Inbound::Request { .. } | Inbound::Refused { .. })))
            }
            _ => 0,
        }
    }

    /// The method name as sent, for a single request (also an unknown method or one with
    /// invalid params) or notification; `None` for responses, batches and bodies whose
    /// method could not be read.
    pub fn method(&self) -> Option<&str> {
        match &self.item {
            Inbound::Request { request, .. } => Some(request.method().as_str()),
            Inbound::Refused { .. } | Inbound::Notification(_) | Inbound::Ignored => self.envelope().method.as_deref(),
            _ => None,
        }
    }

    /// The id of a single request (also a refused one whose id could be read).
    pub fn request_id(&self) -> Option<&RequestId> {
        match &self.item {
            Inbound::Request { id, .. } => Some(id),
            Inbound::Refused { id, .. } => id.as_ref(),
            _ => None,
        }
    }

    /// The id of a single response or error response from the client (the answer to a
    /// server→client request); `None` for anything else.
    pub fn response_id(&self) -> Option<&RequestId> {
        match &self.item {
            Inbound::Response { id, .. } => Some(id),
            Inbound::Error(e) => e.id.as_ref(),
            _ => None,
        }
    }

    /// The body as received, for what is not a decoded request (a response, a
    /// notification, a batch, a refused frame): what a transport relays to another node
    /// as is. `None` for a decoded request, whose body is not kept.
    pub fn raw_body(&self) -> Option<&[u8]> {
        (!matches!(self.item, Inbound::Request { .. })).then_some(self.body.as_slice())
    }

    /// The params of a single request or notification as JSON; `None` when absent. Read
    /// from the body on first use; for a decoded request, its typed params written back
    /// as JSON (members the method does not define are not kept). Header checks need not
    /// call it: [`Parsed::typed_target`] and [`Parsed::typed_arguments`] answer without
    /// building JSON.
    pub fn params_json(&self) -> Option<&Value> {
        match self.kind() {
            BodyKind::Request | BodyKind::Notification => self.envelope().params.as_ref(),
            _ => None,
        }
    }

    /// The 2026-07-28 protocol version in the params' `_meta`
    /// (`io.modelcontextprotocol/protocolVersion`), if any.
    pub fn modern_version(&self) -> Option<&str> {
        match &self.item {
            Inbound::Request { request, .. } => request_meta(request)?.protocol_version(),
            _ => self.params_json()?.get("_meta")?.get(meta::PROTOCOL_VERSION)?.as_str(),
        }
    }

    /// For a request that decoded, the params member the `Mcp-Name` header names
    /// (`name` of `tools/call` and `prompts/get`, `uri` of `resources/read`, `taskId` of
    /// `tasks/get`, `tasks/update` and `tasks/cancel`): `Some(None)` for other methods,
    /// `None` when the request did not decode (read [`Parsed::params_json`] then).
    pub fn typed_target(&self) -> Option<Option<&str>> {
        let Inbound::Request { request, .. } = &self.item else { return None };
        Some(target_of(request))
    }

    /// Every request in the body that decoded (the one request, or each such member of a
    /// batch), as its method and the member `Mcp-Name` names ([`Parsed::typed_target`]):
    /// what an authorizing transport checks scopes against before submitting. Requests
    /// that did not decode are refused by the endpoint anyway and are not listed.
    pub fn requests(&self) -> Vec<(MethodName, Option<&str>)> {
        fn one(item: &Inbound) -> Option<(MethodName, Option<&str>)> {
            match item {
                Inbound::Request { request, .. } => Some((request.method(), target_of(request))),
                _ => None,
            }
        }
        match &self.item {
            Inbound::Batch(items) => items.iter().filter_map(one).collect(),
            item => one(item).into_iter().collect(),
        }
    }

    /// For a `tools/call` that decoded, its `arguments` (`None` when absent or when the
    /// body is not such a request).
    pub fn typed_arguments(&self) -> Option<&Map<String, Value>> {
        match &self.item {
            Inbound::Request { request, .. } => match &**request {
                ClientRequest::CallTool(p) => p.arguments.as_ref(),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the single message is `initialize`.
    pub fn is_initialize(&self) -> bool {
        self.kind() == BodyKind::Request && self.method() == Some(MethodName::Initialize.as_str())
    }

    fn envelope(&self) -> &Envelope {
        self.envelope.get_or_init(|| Box::new(self.read_envelope()))
    }

    fn read_envelope(&self) -> Envelope {
        if let Inbound::Request { request, .. } = &self.item {
            let params = serde_json::to_value(&**request).ok();
            return Envelope { method: Some(request.method().as_str().to_owned()), params };
        }
        #[derive(serde::Deserialize)]
        struct Raw {
            method: Option<String>,
            params: Option<Value>,
        }
        match serde_json::from_slice::<Raw>(&self.body) {
            Ok(raw) => Envelope { method: raw.method, params: raw.params },
            Err(_) => Envelope::default(),
        }
    }
}

/// The `_meta` of a decoded request's params, borrowed (the connection's `route` moves it
/// out later).
fn request_meta(request: &ClientRequest) -> Option<&Meta> {
    match request {
        ClientRequest::Initialize(p) => p.meta.as_ref(),
        ClientRequest::Ping(p) | ClientRequest::Discover(p) => p.meta.as_ref(),
        ClientRequest::ListTools(p)
        | ClientRequest::ListResources(p)
        | ClientRequest::ListResourceTemplates(p)
        | ClientRequest::ListPrompts(p)
        | ClientRequest::ListTasks(p)
        | ClientRequest::ListSkills(p) => p.meta.as_ref(),
        ClientRequest::CallTool(p) => p.meta.as_ref(),
        ClientRequest::ReadResource(p) => p.meta.as_ref(),
        ClientRequest::Subscribe(p) | ClientRequest::Unsubscribe(p) => p.meta.as_ref(),
        ClientRequest::SubscriptionsListen(p) => p.meta.as_ref(),
        ClientRequest::GetPrompt(p) => p.meta.as_ref(),
        ClientRequest::Complete(p) => p.meta.as_ref(),
        ClientRequest::SetLevel(p) => p.meta.as_ref(),
        ClientRequest::GetTask(p) | ClientRequest::GetTaskPayload(p) | ClientRequest::CancelTask(p) => p.meta.as_ref(),
        ClientRequest::UpdateTask(p) => p.meta.as_ref(),
        ClientRequest::GetSkill(p) => p.meta.as_ref(),
        ClientRequest::ReadDirectory(p) => p.meta.as_ref(),
    }
}

/// The params member the `Mcp-Name` header names, for the methods that have one.
fn target_of(request: &ClientRequest) -> Option<&str> {
    match request {
        ClientRequest::CallTool(p) => Some(&p.name),
        ClientRequest::GetPrompt(p) => Some(&p.name),
        ClientRequest::ReadResource(p) => Some(&p.uri),
        ClientRequest::GetTask(p) | ClientRequest::CancelTask(p) => Some(&p.task_id),
        ClientRequest::UpdateTask(p) => Some(&p.task_id),
        _ => None,
    }
}

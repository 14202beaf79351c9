//! [`Parsed`]: a body decoded once, before it is routed, with the facts an HTTP layer
//! reads to pick a status code and check headers.
//!
//! The decoding is the byte-stream reader's own (`connection::inbound::decode_bytes`:
//! one-pass typed decoding of requests, one element at a time for batches), so a message
//! means the same over HTTP as over stdio and no bytes are decoded twice on the way to the
//! actor. The facts that typed decoding does not keep (the method string of a refused
//! request, the params as JSON for header checks, the `_meta` protocol version) are read
//! from the kept body on first use, once. It is not a validator of headers or sessions:
//! those are the HTTP layer's, with `arbor_protocol::era::http`.
//!
//! Invariant: what [`Parsed::error`] reports is exactly the error its submission answers
//! with, since both come from the same decoded item.

use std::sync::OnceLock;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta;
use serde_json::Value;

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
    body: Vec<u8>,
    envelope: OnceLock<Envelope>,
}

impl Parsed {
    /// Decodes a body. Malformed JSON or invalid JSON-RPC still yields a `Parsed`, whose
    /// submission answers the error (-32700 / -32600, with the id when it could be read);
    /// [`Parsed::error`] exposes it so the HTTP layer can answer 400 directly.
    pub fn parse(body: &[u8]) -> Parsed {
        Parsed { item: decode_bytes(body), body: body.to_vec(), envelope: OnceLock::new() }
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
            Inbound::Refused { error, .. } => Some(error),
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

    /// The params of a single request or notification as JSON (for header checks); `None`
    /// when absent. Read from the body on first use.
    pub fn params_json(&self) -> Option<&Value> {
        match self.kind() {
            BodyKind::Request | BodyKind::Notification => self.envelope().params.as_ref(),
            _ => None,
        }
    }

    /// The 2026-07-28 protocol version in the params' `_meta`
    /// (`io.modelcontextprotocol/protocolVersion`), if any.
    pub fn modern_version(&self) -> Option<&str> {
        self.params_json()?.get("_meta")?.get(meta::PROTOCOL_VERSION)?.as_str()
    }

    /// Whether the single message is `initialize`.
    pub fn is_initialize(&self) -> bool {
        self.kind() == BodyKind::Request && self.method() == Some("initialize")
    }

    fn envelope(&self) -> &Envelope {
        self.envelope.get_or_init(|| {
            #[derive(serde::Deserialize)]
            struct Raw {
                method: Option<String>,
                params: Option<Value>,
            }
            match serde_json::from_slice::<Raw>(&self.body) {
                Ok(raw) => Envelope { method: raw.method, params: raw.params },
                Err(_) => Envelope::default(),
            }
        })
    }
}

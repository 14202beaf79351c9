//! What a callback is told about the request it answers: who asks (client name, server
//! id, era), on whose behalf (the related call's assigns and request id), and, for
//! elicitation, what the URL or form looks like after the safety checks.
//!
//! Plain data built by the runtime; the handler cannot change what is sent through it.
//! Invariant: `related_request_id` is `None` for modern input (it belongs to a retried
//! call, not to a request the server sent).

use std::collections::BTreeMap;
use std::sync::Arc;

use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::model::elicitation::ElicitationMode;

use super::{Assigns, Era};

/// The context of a sampling, roots or elicitation callback.
#[derive(Clone, Debug)]
pub struct RequestContext {
    /// The client's name.
    pub client: Arc<str>,
    /// The operator-assigned id of the asking server.
    pub server_id: Arc<str>,
    /// The era the request came in.
    pub era: Era,
    /// The related call's assigns, or the client's own when the request is not tied to a call.
    pub assigns: Option<Assigns>,
    /// The in-flight request this belongs to (legacy), `None` for modern input.
    pub related_request_id: Option<RequestId>,
}

/// The context of an elicitation callback: the request context plus what the checks found.
#[derive(Clone, Debug)]
pub struct ElicitationContext {
    /// Who asks, on whose behalf.
    pub request: RequestContext,
    /// Form or URL.
    pub mode: ElicitationMode,
    /// URL mode: the checked target (the client never fetches or opens it).
    pub url: Option<UrlTarget>,
    /// Form mode: each field by name.
    pub fields: BTreeMap<String, FieldInfo>,
}

impl std::ops::Deref for ElicitationContext {
    type Target = RequestContext;
    fn deref(&self) -> &RequestContext {
        &self.request
    }
}

/// A URL-mode target, checked: absolute, `https`, no userinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlTarget {
    /// The full URL, normalised.
    pub url: String,
    /// Its host (ASCII; internationalised names in punycode).
    pub host: String,
    /// Some label of the host is punycode (`xn--`): it may imitate another name.
    pub idn: bool,
    /// The URL's origin differs from the server's (always true when that is unknown).
    pub origin_mismatch: bool,
}

/// A form field as the checks see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// Its name or label looks like a secret (password, token, key, card…): form mode
    /// must not collect those, so the handler may refuse or warn.
    pub sensitive_suspected: bool,
}

/// The context of a notification or log callback.
#[derive(Clone, Debug)]
pub struct NotificationContext {
    /// The client's name.
    pub client: Arc<str>,
    /// The operator-assigned id of the server.
    pub server_id: Arc<str>,
    /// The connection's era once settled, `None` before.
    pub era: Option<Era>,
}

//! The two ways a peer learns the terms of a request, one module each.
//!
//! [`handshake`] is the legacy era (2024-11-05 … 2025-11-25): `initialize`
//! negotiates a version once and the session remembers capabilities and log
//! level. [`per_request`] is the modern era (2026-07-28): every request carries
//! its own terms in `_meta`, checked on arrival. Both produce the same neutral
//! [`Terms`], so nothing downstream needs to know which era it is in.
//!
//! This module is not a codec for method payloads (the method types are), and it
//! holds no session state itself; the connection that owns a session keeps it.
//!
//! ```
//! use arbor_protocol::era::{arrival, Arrival, PerRequest, Transport};
//! use arbor_protocol::meta::Meta;
//! use serde_json::json;
//!
//! let params = json!({"_meta": {
//!     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!     "io.modelcontextprotocol/clientCapabilities": {},
//! }});
//! assert_eq!(arrival("tools/list", Some(&params)), Arrival::PerRequest);
//! let terms = PerRequest::default().terms(Meta::from_params(&params).as_ref(), Transport::Stdio).unwrap();
//! assert!(!terms.may_log());
//! ```
//!
//! Invariant: outside `version.rs`, this is the only code that looks at version
//! strings, and a [`Terms`] value exists only once an era has checked it.

pub mod handshake;
pub mod http;
pub mod lower;
pub mod per_request;

use crate::meta::{Meta, ProgressToken};
use crate::methods::MethodName;
use crate::model::capabilities::ClientCapabilities;
use crate::model::logging::LoggingLevel;
use crate::version::{Era, ProtocolVersion};
use serde_json::{Map, Value};

pub use handshake::{Handshake, Session};
pub use per_request::{ClientNeed, HttpHeaders, PerRequest, Transport};

/// The protocol versions a peer is configured to speak, across both eras.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupportedVersions(Vec<ProtocolVersion>);

impl SupportedVersions {
    /// The given versions, newest first, without duplicates.
    pub fn new(versions: impl IntoIterator<Item = ProtocolVersion>) -> SupportedVersions {
        let wanted: Vec<ProtocolVersion> = versions.into_iter().collect();
        // Walk the release list backwards so the order is the spec's, not the caller's.
        SupportedVersions(ProtocolVersion::ALL.into_iter().rev().filter(|v| wanted.contains(v)).collect())
    }

    /// Every revision Arbor knows.
    pub fn all() -> SupportedVersions {
        SupportedVersions::new(ProtocolVersion::ALL)
    }

    /// Whether `version` is supported.
    pub fn contains(&self, version: ProtocolVersion) -> bool {
        self.0.contains(&version)
    }

    /// The supported versions, newest first.
    pub fn versions(&self) -> &[ProtocolVersion] {
        &self.0
    }

    /// The supported versions of one era, newest first.
    pub fn of_era(&self, era: Era) -> impl Iterator<Item = ProtocolVersion> + '_ {
        self.0.iter().copied().filter(move |v| v.era() == era)
    }

    /// The version strings, newest first, as the -32022 error lists them.
    pub fn strings(&self) -> Vec<String> {
        self.0.iter().map(|v| v.as_str().to_owned()).collect()
    }
}

impl Default for SupportedVersions {
    fn default() -> Self {
        SupportedVersions::all()
    }
}

/// The terms a request is served under, whichever era supplied them.
///
/// Only the era modules build one, after their checks, so holding a `Terms` means
/// the version is supported and the capabilities were declared.
#[derive(Clone, Debug, PartialEq)]
pub struct Terms {
    version: ProtocolVersion,
    client_capabilities: Map<String, Value>,
    log_level: Option<LoggingLevel>,
    // The legacy era lets a server log at its own default level until the
    // client picks one; the modern era sends nothing unless the request opted in.
    logs_by_default: bool,
    progress_token: Option<ProgressToken>,
}

impl Terms {
    /// The protocol revision.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// The era the terms came from.
    pub fn era(&self) -> Era {
        self.version.era()
    }

    /// The client's capabilities (a `ClientCapabilities` object): per request in
    /// the modern era, from `initialize` in the legacy era.
    pub fn client_capabilities(&self) -> &Map<String, Value> {
        &self.client_capabilities
    }

    /// The client's capabilities as the typed model. Both eras checked on the
    /// way in that they read as one, so this does not fail for a `Terms` they built.
    pub fn typed_client_capabilities(&self) -> ClientCapabilities {
        read_capabilities(&self.client_capabilities).unwrap_or_default()
    }

    /// The log level the client chose (per request, or for the session by
    /// `logging/setLevel`), if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level
    }

    /// Whether `notifications/message` may be sent for the request at all: in
    /// the modern era only if the request carried a log level, in the legacy
    /// era always (at the server's default level until the client sets one).
    pub fn may_log(&self) -> bool {
        self.log_level.is_some() || self.logs_by_default
    }

    /// The progress token of the request, if it asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// Whether the client declared what `need` asks for.
    pub fn declares(&self, need: &ClientNeed) -> bool {
        need.declared_in(&self.client_capabilities)
    }
}

/// Which era an incoming request asks to be served in, read before any typed
/// decoding of its params.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// It carries the modern terms in `_meta`: serve it statelessly through
    /// [`PerRequest`], whatever else happened on the connection.
    PerRequest,
    /// It is `initialize`: it opens a handshake-era session ([`Handshake`]).
    OpensHandshake,
    /// Neither: it belongs to the connection's handshake session if there is
    /// one, and is otherwise a modern request missing its terms (-32602).
    Unmarked,
}

/// Classifies an incoming request by its method and raw params.
///
/// A request is modern when its `_meta` carries either modern term key: a
/// request that has one and lacks the other is a malformed modern request, which
/// the per-request checks answer, not a legacy one.
pub fn arrival(method: &str, params: Option<&Value>) -> Arrival {
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let modern = meta.is_some_and(|m| {
        m.contains_key(crate::meta::PROTOCOL_VERSION) || m.contains_key(crate::meta::CLIENT_CAPABILITIES)
    });
    if modern {
        Arrival::PerRequest
    } else if MethodName::parse(method) == Some(MethodName::Initialize) {
        Arrival::OpensHandshake
    } else {
        Arrival::Unmarked
    }
}

/// Reads a `ClientCapabilities` object into the typed model.
fn read_capabilities(map: &Map<String, Value>) -> Result<ClientCapabilities, serde_json::Error> {
    // Read from the borrowed map: a 2026-07-28 request's capabilities are checked on every
    // request, and a copy of the map per read cost as much as the read.
    serde::Deserialize::deserialize(map)
}

/// Reads the progress token of a request's `_meta`, the one term both eras
/// carry per request.
fn progress_token_of(meta: Option<&Meta>) -> Option<ProgressToken> {
    meta.and_then(Meta::progress_token)
}

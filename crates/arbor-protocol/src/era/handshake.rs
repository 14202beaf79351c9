//! The handshake era (2024-11-05 … 2025-11-25): terms are negotiated once, by
//! `initialize`, and remembered for the session.
//!
//! The server side answers the version a client asks for: the same version if
//! it speaks it, otherwise the newest legacy version it speaks; the client then
//! decides whether it can live with the answer. This module does not send or
//! await anything and does not check message ordering (`initialize` first,
//! `notifications/initialized` next); the connection does that.
//!
//! Invariant: a [`Session`] only ever holds a version its [`Handshake`] supports.

use super::{progress_token_of, SupportedVersions, Terms};
use crate::error::McpError;
use crate::meta::Meta;
use crate::model::capabilities::ClientCapabilities;
use crate::model::logging::LoggingLevel;
use crate::version::{Era, ProtocolVersion};
use serde_json::{json, Map, Value};

/// The legacy-era negotiation rules of one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handshake {
    supported: SupportedVersions,
}

impl Default for Handshake {
    fn default() -> Self {
        Handshake::new(SupportedVersions::all())
    }
}

impl Handshake {
    /// Negotiates within `supported`; its modern versions take no part in the
    /// handshake but are listed when `initialize` has to be refused.
    pub fn new(supported: SupportedVersions) -> Handshake {
        Handshake { supported }
    }

    /// The legacy versions this peer speaks, newest first.
    pub fn legacy_versions(&self) -> Vec<ProtocolVersion> {
        self.supported.of_era(Era::Legacy).collect()
    }

    /// Server side: the version to put in the `initialize` result for a client
    /// that asked for `requested`.
    ///
    /// The requested version is echoed when it is a supported legacy version;
    /// otherwise the answer is the newest supported legacy version and the
    /// client decides whether to go on. A server with no legacy version at all
    /// refuses with -32601 listing what it does speak, so a dual-era client can
    /// switch to per-request terms.
    pub fn answer(&self, requested: &str) -> Result<ProtocolVersion, McpError> {
        if let Some(v) = ProtocolVersion::parse(requested) {
            if v.era() == Era::Legacy && self.supported.contains(v) {
                return Ok(v);
            }
        }
        ProtocolVersion::newest(self.supported.of_era(Era::Legacy)).ok_or_else(|| McpError::MethodNotFound {
            message: "Method not found: initialize (this server uses per-request protocol versions)".to_owned(),
            data: Some(json!({ "supported": self.supported.strings() })),
        })
    }

    /// Client side: checks the version a server answered with. An error means
    /// the client cannot speak it and should disconnect.
    pub fn accept(&self, answered: &str) -> Result<ProtocolVersion, McpError> {
        match ProtocolVersion::parse(answered) {
            Some(v) if v.era() == Era::Legacy && self.supported.contains(v) => Ok(v),
            _ => Err(McpError::unsupported_version(
                self.supported.of_era(Era::Legacy).map(ProtocolVersion::as_str),
                answered,
            )),
        }
    }

    /// Opens the session once `version` is agreed, with the capabilities the
    /// client sent in `initialize`.
    pub fn open(
        &self,
        version: ProtocolVersion,
        client_capabilities: &ClientCapabilities,
    ) -> Result<Session, McpError> {
        if version.era() != Era::Legacy || !self.supported.contains(version) {
            return Err(McpError::unsupported_version(
                self.supported.of_era(Era::Legacy).map(ProtocolVersion::as_str),
                version.as_str(),
            ));
        }
        Ok(Session {
            version,
            // Kept as JSON so members this version of Arbor does not model
            // still answer `ClientNeed` questions.
            client_capabilities: match serde_json::to_value(client_capabilities) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            },
            log_level: None,
        })
    }
}

/// The terms a handshake-era session agreed on, shared by all its requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    version: ProtocolVersion,
    client_capabilities: Map<String, Value>,
    log_level: Option<LoggingLevel>,
}

impl Session {
    /// The negotiated version.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Checks the `MCP-Protocol-Version` header of an HTTP request in this
    /// session. A missing header is accepted, since the spec has a server with
    /// no other clue assume an older revision and a session is a clue; a present
    /// one must name the negotiated version, or the request is -32600 (HTTP 400).
    pub fn check_version_header(&self, header: Option<&str>) -> Result<(), McpError> {
        match header {
            None => Ok(()),
            Some(v) if v == self.version.as_str() => Ok(()),
            Some(v) => Err(McpError::InvalidRequest {
                message: format!(
                    "Invalid Request: MCP-Protocol-Version header '{}' is not the negotiated version '{}'",
                    crate::reflect::Clamped(v),
                    self.version
                ),
                data: None,
            }),
        }
    }

    /// Records the level a `logging/setLevel` request asked for; from now on
    /// every request of the session is served at that level.
    pub fn set_log_level(&mut self, level: LoggingLevel) {
        self.log_level = Some(level);
    }

    /// The terms of one request of this session: the session's version,
    /// capabilities and log level, plus the request's own progress token.
    pub fn terms(&self, request_meta: Option<&Meta>) -> Terms {
        Terms {
            version: self.version,
            client_capabilities: self.client_capabilities.clone(),
            log_level: self.log_level,
            logs_by_default: true,
            progress_token: progress_token_of(request_meta),
        }
    }
}

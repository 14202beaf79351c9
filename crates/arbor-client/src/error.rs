//! The client's errors, named after the operation that failed: [`ConnectError`] for
//! connecting (spawning, probing, the handshake) and [`ClientError`] for one call.
//!
//! This module does not convert anything to JSON-RPC: a server's error object is read
//! once into [`McpError`] (in `arbor-protocol`) and carried in [`ClientError::Rpc`].
//! Invariant: an error the client made up (a timeout, a cancelled call, a broken pipe)
//! never looks like one the server sent; only [`ClientError::Rpc`] holds a peer's error.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::error::{ErrorCode, McpError};
use arbor_protocol::methods::ResultError;
use arbor_protocol::model::tools::StructuredError;

use crate::handler::InputHandlerError;

/// Why one call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No answer within the call's timeout (or its maximum total timeout); the request
    /// was cancelled towards the server.
    #[error("the call timed out after {0:?}")]
    Timeout(Duration),
    /// The call was cancelled by its caller.
    #[error("the call was cancelled")]
    Cancelled,
    /// The server answered with a JSON-RPC error.
    #[error("the server answered with an error: {0}")]
    Rpc(#[from] McpError),
    /// The transport failed (the process exited, the pipe broke, an HTTP request failed).
    #[error("transport failed: {0}")]
    Transport(#[source] TransportError),
    /// The server broke the protocol (a result type this client never asked for, input
    /// asked of a client that declared no capability, a list that never ends).
    #[error("protocol violation: {0}")]
    Protocol(#[source] ProtocolError),
    /// A result that does not fit the method's result type.
    #[error(transparent)]
    Decode(#[from] ResultError),
    /// The request's params (or a tool's arguments) could not be encoded as JSON.
    #[error("the request could not be encoded: {0}")]
    Encode(#[source] serde_json::Error),
    /// A tool's arguments are not a JSON object (or null).
    #[error("tool arguments must be a JSON object")]
    ArgumentsNotAnObject,
    /// A tool's result did not give the typed output asked for
    /// ([`crate::Client::call_tool_as`]): the tool failed, sent no structured content,
    /// or sent content of another shape.
    #[error("tool {tool:?}: {source}")]
    Structured {
        /// The tool called.
        tool: String,
        /// What was wrong with its result.
        #[source]
        source: StructuredError,
    },
    /// Answering an `input_required` result failed in the client's handler.
    #[error("the input handler failed: {0}")]
    InputHandler(Box<InputHandlerError>),
    /// The server kept asking for input beyond the bound on rounds.
    #[error("the server asked for input more than {0} times")]
    TooManyInputRounds(usize),
    /// The legacy HTTP session expired (404); the client re-initializes, and the call
    /// may be retried.
    #[error("the HTTP session expired")]
    SessionExpired,
    /// The method does not exist in the era the server speaks.
    #[error("{method} does not exist in the {era} era")]
    Unsupported {
        /// The method.
        method: &'static str,
        /// `"legacy"` or `"modern"`.
        era: &'static str,
    },
    /// The server did not agree to send updates of this resource (a 2026-07-28
    /// acknowledgement without it).
    #[error("the server refused to send updates of {uri:?}")]
    SubscriptionRefused {
        /// The resource's URI.
        uri: String,
    },
    /// The client is not connected (closed, or the server exited and was not restarted).
    #[error("not connected")]
    Disconnected,
}

impl From<InputHandlerError> for ClientError {
    fn from(e: InputHandlerError) -> Self {
        ClientError::InputHandler(Box::new(e))
    }
}

impl ClientError {
    /// The server's JSON-RPC error code, for [`ClientError::Rpc`].
    pub fn rpc_code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Rpc(e) => Some(e.code()),
            _ => None,
        }
    }
}

/// Why connecting (or re-connecting) to a server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started.
    #[error("could not start the server process: {0}")]
    Spawn(#[source] std::io::Error),
    /// The transport could not be set up (a bad URL, a transport factory failing).
    #[error("could not open the transport: {0}")]
    Transport(#[source] OpenError),
    /// `initialize` failed.
    #[error("initialize failed: {0}")]
    Initialize(#[source] Box<ClientError>),
    /// `server/discover` failed while the modern era was forced.
    #[error("server/discover failed: {0}")]
    Discover(#[source] Box<ClientError>),
    /// The server speaks no protocol version this client speaks.
    #[error("the server speaks no version this client speaks (it offered {offered:?})")]
    UnsupportedVersion {
        /// What the server answered or listed.
        offered: Vec<String>,
    },
    /// This target cannot be connected again (a single-use transport).
    #[error("this target cannot be reconnected")]
    NotRestartable,
    /// The connection's supervisor could not be started or is gone.
    #[error("supervision failed: {0}")]
    Supervisor(#[source] arbor_otp::StartSupervisorError),
    /// The handler runtime (the supervisor of server requests' tasks) did not start.
    #[error("the handler runtime did not start: {0}")]
    HandlerRuntime(#[from] crate::handler::HandlerStartError),
    /// The client was closed.
    #[error("the client is closed")]
    Closed,
}

/// How the link to the server failed during a call. Cloneable: one failure of the link
/// fails every call in flight with the same error.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A frame could not be written to the server (stdio, or any byte stream).
    #[error("sending to the server failed: {0}")]
    Send(#[source] arbor_transport::SendError),
    /// Reading the server's output failed.
    #[error("reading from the server failed: {0}")]
    Read(#[source] Arc<std::io::Error>),
    /// The server closed its output (the process exited, the stream ended).
    #[error("the server closed its output")]
    Closed,
    /// An HTTP request could not be made or its response not read.
    #[error("the HTTP request failed: {0}")]
    Http(#[source] Arc<reqwest::Error>),
    /// The server answered with an HTTP error status.
    #[error("the server answered HTTP {0}")]
    Status(u16),
    /// The response stream ended (status `status`, a success) without the answer.
    #[error("the response stream ended without an answer (HTTP {0})")]
    NoAnswer(u16),
    /// The server asked for authorization and the client could not obtain it (or the
    /// server still refused).
    #[error("authorization failed: {0}")]
    Auth(#[source] crate::auth::OAuthError),
}

/// How the server broke the protocol (or the client could not make sense of it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A result that is not the JSON it should be.
    #[error("a result is not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The server asked for input although the client declared no capability.
    #[error("the server asked for input although the client declared no capability")]
    InputWithoutCapability,
    /// An `input_required` result outside the 2026-07-28 era.
    #[error("input_required outside the 2026-07-28 era")]
    InputRequiredOutsideModern,
    /// The server answered with a task, which the call did not ask for.
    #[error("the server answered with a task, which this call did not ask for")]
    UnrequestedTask,
    /// A paginated list did not end within the client's bound on pages.
    #[error("{method} did not end within {pages} pages")]
    EndlessList {
        /// The list method.
        method: &'static str,
        /// The bound on pages.
        pages: usize,
    },
    /// A listen stream delivered `method` before its acknowledgement.
    #[error("{method} arrived on a listen stream before its acknowledgement")]
    BeforeAcknowledgement {
        /// The notification's method.
        method: String,
    },
    /// A listen stream ended (its result) before it was acknowledged.
    #[error("the listen ended before its acknowledgement")]
    EndedBeforeAcknowledgement,
    /// `server/discover` listed only legacy revisions.
    #[error("the server lists only legacy versions")]
    OnlyLegacyVersions,
}

/// Why the link to a server could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The endpoint URL does not parse.
    #[error("the URL is not valid: {0}")]
    Url(#[source] url::ParseError),
    /// A configured header name is not a valid HTTP header name (its value is never
    /// reported: it may be a credential).
    #[error("header {name:?} has an invalid name or value")]
    Header {
        /// The header's name, as configured.
        name: String,
    },
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// The spawned server process has no such pipe.
    #[error("the server process has no {0} pipe")]
    MissingPipe(&'static str),
    /// A transport factory failed.
    #[error("the transport factory failed: {0}")]
    Factory(#[source] std::io::Error),
}

//! The client's errors, named after the operation that failed: [`ConnectError`] for
//! connecting (spawning, probing, the handshake) and [`ClientError`] for one call.
//!
//! This module does not convert anything to JSON-RPC: a server's error object is read
//! once into [`McpError`] (in `arbor-protocol`) and carried in [`ClientError::Rpc`].
//! Invariant: an error the client made up (a timeout, a cancelled call, a broken pipe)
//! never looks like one the server sent; only [`ClientError::Rpc`] holds a peer's error.

use std::time::Duration;

use arbor_protocol::error::{ErrorCode, McpError};
use arbor_protocol::methods::ResultError;

use crate::handler::InputHandlerError;

/// Why one call failed.
#[derive(Debug, thiserror::Error)]
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
    Transport(String),
    /// The server broke the protocol (a result that does not fit, a result type this
    /// client never asked for, input asked of a client that declared no capability).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A result that does not fit the method's result type.
    #[error(transparent)]
    Decode(#[from] ResultError),
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
pub enum ConnectError {
    /// The server process could not be started.
    #[error("could not start the server process: {0}")]
    Spawn(#[source] std::io::Error),
    /// The transport could not be set up (a bad URL, a transport factory failing).
    #[error("could not open the transport: {0}")]
    Transport(String),
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
    Supervisor(String),
    /// The client was closed.
    #[error("the client is closed")]
    Closed,
}

//! The handler runtime's errors: why it could not start, why answering a modern input
//! request failed ([`InputHandlerError`]), and the one internal [`Failure`] both eras map
//! from (to a JSON-RPC error for legacy, in `Failure::to_mcp_error`; to the typed error
//! for modern, in `Failure::into_input_error`).
//!
//! Invariant: every way a request can fail has a variant here; none is a panic.

use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use serde_json::json;

use super::safety::Refusal;

/// Which kind of input a server asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// `sampling/createMessage`.
    Sampling,
    /// `elicitation/create`.
    Elicitation,
    /// `roots/list`.
    Roots,
}

impl InputKind {
    /// The method name.
    pub fn method(self) -> &'static str {
        match self {
            InputKind::Sampling => MethodName::CreateMessage.as_str(),
            InputKind::Elicitation => MethodName::Elicit.as_str(),
            InputKind::Roots => MethodName::ListRoots.as_str(),
        }
    }

    pub(crate) fn from_method(method: &str) -> Option<InputKind> {
        match MethodName::parse(method)? {
            MethodName::CreateMessage => Some(InputKind::Sampling),
            MethodName::Elicit => Some(InputKind::Elicitation),
            MethodName::ListRoots => Some(InputKind::Roots),
            _ => None,
        }
    }
}

impl std::fmt::Display for InputKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.method())
    }
}

/// Why the handler runtime could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerStartError {
    /// The task supervisor for server requests did not start.
    #[error("client handler runtime: task supervisor did not start: {0}")]
    Supervisor(#[source] arbor_otp::StartSupervisorError),
}

/// Why answering a modern (`input_required`) input request failed; the call it belongs to
/// ends with this error. `key` is the input request's key in `inputRequests`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputHandlerError {
    /// The server asked for a capability the client does not advertise (a protocol error).
    #[error("input request `{key}`: {kind} was not declared by this client")]
    Undeclared {
        /// The input request's key.
        key: String,
        /// What it asked for.
        kind: InputKind,
    },
    /// The input request is malformed, of an unknown kind, or outside what the client accepts
    /// (an undeclared elicitation mode, a non-https URL, a nested form schema, …).
    #[error("input request `{key}` is invalid: {message}")]
    InvalidRequest {
        /// The input request's key.
        key: String,
        /// What was wrong.
        message: String,
    },
    /// The server's input requests exceed the input rate limit.
    #[error("input request `{key}` refused: over the input rate limit")]
    RateLimited {
        /// The input request's key.
        key: String,
    },
    /// A sampling policy refused it (tool loop), with the configured rejection code.
    #[error("input request `{key}` refused ({code}): {message}")]
    Refused {
        /// The input request's key.
        key: String,
        /// The configured rejection code.
        code: i64,
        /// Why.
        message: String,
    },
    /// The handler returned an error.
    #[error("input handler for `{key}` failed: {error}")]
    Handler {
        /// The input request's key.
        key: String,
        /// What the handler said.
        error: McpError,
    },
    /// The handler panicked.
    #[error("input handler for `{key}` panicked: {message}")]
    Panicked {
        /// The input request's key.
        key: String,
        /// The panic's message.
        message: String,
    },
    /// The handler ran past its timeout.
    #[error("input handler for `{key}` timed out after {after:?}")]
    TimedOut {
        /// The input request's key.
        key: String,
        /// The timeout.
        after: Duration,
    },
    /// The handler's answer does not fit the request (e.g. a form answer off its schema).
    #[error("input handler for `{key}` gave an invalid answer: {message}")]
    InvalidAnswer {
        /// The input request's key.
        key: String,
        /// What was wrong.
        message: String,
    },
}

/// Why one input request (either era) was not answered with a result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// Unknown method (legacy) or unknown input kind (modern).
    UnknownMethod(String),
    Undeclared(InputKind),
    RateLimited,
    Refused(Refusal),
    Handler(McpError),
    Panicked(String),
    TimedOut(Duration),
}

impl Failure {
    /// The JSON-RPC error a legacy request is answered with; `rejection_code` is the
    /// configured policy code.
    pub(crate) fn to_mcp_error(&self, rejection_code: i64) -> McpError {
        match self {
            Failure::UnknownMethod(method) => McpError::method_not_found(method),
            Failure::Undeclared(kind) => McpError::MethodNotFound {
                message: format!("Method not found: {} (capability not declared by this client)", kind.method()),
                data: None,
            },
            Failure::RateLimited => McpError::Other {
                code: rejection_code,
                message: "Request refused: over the client's input rate limit".to_owned(),
                data: Some(json!({"reason": "rate_limited"})),
            },
            Failure::Refused(Refusal::InvalidParams(message)) => McpError::invalid_params(message.clone()),
            Failure::Refused(Refusal::Rejected(message)) => {
                McpError::Other { code: rejection_code, message: message.clone(), data: None }
            }
            Failure::Refused(Refusal::InvalidAnswer(message)) => {
                McpError::internal(format!("Client handler gave an invalid answer: {message}"))
            }
            Failure::Handler(error) => error.clone(),
            // The panic text stays in the client's logs; the server learns only that it failed.
            Failure::Panicked(_) => McpError::internal("Client handler failed"),
            Failure::TimedOut(after) => McpError::Internal {
                message: "Client handler timed out".to_owned(),
                data: Some(json!({"reason": "timeout", "timeoutMs": after.as_millis() as u64})),
            },
        }
    }

    pub(crate) fn into_input_error(self, key: &str, rejection_code: i64) -> InputHandlerError {
        let key = key.to_owned();
        match self {
            Failure::UnknownMethod(method) => {
                InputHandlerError::InvalidRequest { key, message: format!("unknown input request method `{method}`") }
            }
            Failure::Undeclared(kind) => InputHandlerError::Undeclared { key, kind },
            Failure::RateLimited => InputHandlerError::RateLimited { key },
            Failure::Refused(Refusal::InvalidParams(message)) => InputHandlerError::InvalidRequest { key, message },
            Failure::Refused(Refusal::Rejected(message)) => {
                InputHandlerError::Refused { key, code: rejection_code, message }
            }
            Failure::Refused(Refusal::InvalidAnswer(message)) => InputHandlerError::InvalidAnswer { key, message },
            Failure::Handler(error) => InputHandlerError::Handler { key, error },
            Failure::Panicked(message) => InputHandlerError::Panicked { key, message },
            Failure::TimedOut(after) => InputHandlerError::TimedOut { key, after },
        }
    }
}

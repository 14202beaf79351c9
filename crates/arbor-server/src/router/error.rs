//! [`ToolError`]: how a tool says it failed, and which failures the model sees.
//!
//! MCP separates two kinds of tool failure (SEP-1303, 2025-11-25 on). A tool that ran and
//! failed, or was given argument values it cannot use, answers a *result* with
//! `isError: true`, so the model reads the message and can correct itself. Only problems
//! with the request itself (an unknown tool, a malformed request) are JSON-RPC *errors*,
//! which the model usually never sees. [`ToolError`] keeps the two apart in its variants;
//! the router turns it into the one or the other in [`ToolError::into_call_result`], the
//! only place that decides.
//!
//! This module is not the JSON-RPC conversion of protocol errors: [`McpError`] owns that.

use arbor_protocol::error::McpError;
use arbor_protocol::model::content::ContentBlock;
use arbor_protocol::model::tools::CallToolResult;
use std::fmt::Display;

/// Why a tool call did not produce a result.
///
/// `?` works on the common error types: `String`, `&str`, [`std::io::Error`] and
/// [`serde_json::Error`] become [`ToolError::Failed`] (the model sees the message), and
/// [`McpError`] becomes [`ToolError::Protocol`] (the client gets a JSON-RPC error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed. The client gets a result with `isError: true` whose text is
    /// the message, so the model can see what went wrong and try again.
    #[error("{0}")]
    Failed(String),
    /// The arguments matched the input schema but cannot be used (a date in the past, an
    /// unknown id). Also an `isError: true` result, as the spec asks since 2025-11-25.
    #[error("Invalid arguments: {0}")]
    InvalidArguments(String),
    /// A protocol error: the client gets this JSON-RPC error instead of a result. Use it
    /// for what is wrong with the request, not with the tool's work; -32603 for a bug.
    #[error(transparent)]
    Protocol(#[from] McpError),
}

impl ToolError {
    /// The tool failed with `message`, shown to the model.
    pub fn failed(message: impl Display) -> Self {
        ToolError::Failed(message.to_string())
    }

    /// The argument values are unusable, for the reason in `message`, shown to the model.
    pub fn invalid_arguments(message: impl Display) -> Self {
        ToolError::InvalidArguments(message.to_string())
    }

    /// A server bug: a -32603 protocol error. The message goes to the client, so keep
    /// secrets out of it.
    pub fn internal(message: impl Display) -> Self {
        ToolError::Protocol(McpError::internal(message.to_string()))
    }

    /// Whether the client gets a JSON-RPC error (rather than an `isError: true` result).
    pub fn is_protocol(&self) -> bool {
        matches!(self, ToolError::Protocol(_))
    }

    /// The answer to the client: an `isError: true` result, or the protocol error.
    pub fn into_call_result(self) -> Result<CallToolResult, McpError> {
        match self {
            ToolError::Protocol(e) => Err(e),
            other => Ok(error_result(other.to_string())),
        }
    }
}

/// A result with `isError: true` and `message` as its only text block.
pub(crate) fn error_result(message: String) -> CallToolResult {
    CallToolResult { content: vec![ContentBlock::text(message)], is_error: Some(true), ..Default::default() }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::Failed(message.to_owned())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

impl From<std::convert::Infallible> for ToolError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

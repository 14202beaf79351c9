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
    CallToolResult::from_error_text(message)
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

/// What kind of entry a [`RouterError`] is about, named in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RouteKind {
    /// A tool (`tools/list`).
    Tool,
    /// A prompt (`prompts/list`).
    Prompt,
    /// A static resource, keyed by its URI (`resources/list`).
    Resource,
    /// A resource template, keyed by its URI template (`resources/templates/list`).
    Template,
}

impl RouteKind {
    /// What a completion of this kind of route completes: a prompt's argument, a
    /// template's variable.
    fn completable(&self) -> &'static str {
        match self {
            RouteKind::Prompt => "argument",
            _ => "variable",
        }
    }
}

impl std::fmt::Display for RouteKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RouteKind::Tool => "tool",
            RouteKind::Prompt => "prompt",
            RouteKind::Resource => "resource",
            RouteKind::Template => "resource template",
        })
    }
}

/// Which of a route's schemas a [`RouterError::Schema`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaPart {
    /// The argument type's schema (`inputSchema`, a prompt's `arguments`).
    Arguments,
    /// The output type's schema (`outputSchema`).
    Output,
}

impl std::fmt::Display for SchemaPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SchemaPart::Arguments => "arguments",
            SchemaPart::Output => "output",
        })
    }
}

/// Why a route could not be built or registered: what the `try_` builders of
/// [`Router`](super::Router), [`ToolRoute`](super::ToolRoute) and
/// [`TemplateRoute`](super::TemplateRoute) return, and what their panicking forms panic with.
///
/// These are mistakes in the server's own code or configuration (a type whose schema is not
/// an object, a name used twice), found when the route is built, never while serving; each
/// names the entry it is about. The reasons come from the router's own checks, so they are
/// the end of the `source()` chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouterError {
    /// Something of this kind is already registered under this name (or URI); the one
    /// registered first is kept.
    #[error("{kind} `{name}` is registered twice")]
    Duplicate {
        /// What was registered twice.
        kind: RouteKind,
        /// Its name, URI or URI template.
        name: String,
    },
    /// A schema derived from the route's argument or output type cannot be used (not an
    /// object schema, a broken `x-mcp-header`, a validator that does not compile).
    #[error("{kind} `{name}`: {part}: {reason}")]
    Schema {
        /// A tool or a prompt.
        kind: RouteKind,
        /// The route's name.
        name: String,
        /// Which schema.
        part: SchemaPart,
        /// What is wrong with it.
        reason: String,
    },
    /// A URI template the router cannot serve (see the `resource` module's documentation:
    /// only `{var}` and `{+var}` expressions).
    #[error("resource template {template}: {reason}")]
    Template {
        /// The URI template as given.
        template: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A completion names a template variable (or prompt argument) the route does not have.
    #[error("{kind} `{name}` has no {noun} `{variable}` to complete", noun = .kind.completable())]
    UnknownVariable {
        /// The kind of route.
        kind: RouteKind,
        /// The route's name or URI template.
        name: String,
        /// The variable that was named.
        variable: String,
    },
    /// A skill source was refused (see [`crate::skills`]); the error names the file.
    #[error(transparent)]
    Skills(crate::skills::SkillsRefused),
}

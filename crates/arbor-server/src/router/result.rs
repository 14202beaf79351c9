//! What handlers may return, and how it becomes a protocol result.
//!
//! In the spirit of axum's `IntoResponse`, a handler returns whatever is natural (a
//! `String`, content blocks, a `Json<T>`, a full result, or [`Reply::InputRequired`] to
//! ask the client for input) and one trait per operation turns it into the result:
//! [`IntoToolResult`], [`IntoStructuredResult`] (typed tool output), [`IntoPromptResult`]
//! and [`IntoReadResult`]. `Result<T, E>` of any of these works too, so `?` is available.
//!
//! These traits only convert; they do not validate. The router checks typed tool output
//! against its `outputSchema` after conversion. Invariant: a `structuredContent` made here
//! is always a JSON object, the only shape every revision that has the field accepts.

use super::error::ToolError;
use crate::reply::Reply;
use arbor_protocol::error::McpError;
use arbor_protocol::model::content::{BlobResourceContents, ContentBlock, ResourceContents, TextResourceContents};
use arbor_protocol::model::prompts::{GetPromptResult, PromptMessage};
use arbor_protocol::model::resources::ReadResourceResult;
use arbor_protocol::model::tools::CallToolResult;
use arbor_protocol::version::ProtocolVersion;
use serde::Serialize;
use serde_json::Value;

// ===== tools =====

/// A value a tool handler may return.
///
/// Implemented for `String`, `&str`, `()`, [`ContentBlock`], `Vec<ContentBlock>`,
/// [`CallToolResult`], [`Json<T>`], [`Reply<CallToolResult>`] (to answer "input required"),
/// and `Result<T, E>` of any of these with `E: Into<ToolError>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this is not a tool result",
    note = "return a `String`, `ContentBlock`, `Vec<ContentBlock>`, `CallToolResult`, `Json<T>` or `Reply<CallToolResult>`, or a `Result<_, ToolError>` of one of those",
    note = "for typed output with an `outputSchema`, register the tool with `tool_with_output` and return `Result<T, ToolError>` where `T: Serialize + JsonSchema`"
)]
pub trait IntoToolResult {
    /// Whether a value of this type can be [`Reply::InputRequired`]. A 2026-07-28 call
    /// that may answer "input required" must keep a copy of its arguments, to bind the
    /// sealed state to them; a tool whose result type cannot ask saves that copy. Only
    /// `Reply` (and a `Result` of it) says `true`; an implementation that can return
    /// [`Reply::InputRequired`] must keep the default.
    const ASKS_INPUT: bool = true;

    /// The result, or why there is none.
    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError>;
}

fn content(blocks: Vec<ContentBlock>) -> Result<Reply<CallToolResult>, ToolError> {
    Ok(Reply::Complete(CallToolResult::new(blocks)))
}

impl IntoToolResult for String {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        content(vec![ContentBlock::text(self)])
    }
}

impl IntoToolResult for &str {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        content(vec![ContentBlock::text(self)])
    }
}

impl IntoToolResult for () {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        content(Vec::new())
    }
}

impl IntoToolResult for ContentBlock {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        content(vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        content(self)
    }
}

impl IntoToolResult for CallToolResult {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        Ok(Reply::Complete(self))
    }
}

impl IntoToolResult for Reply<CallToolResult> {
    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        Ok(self)
    }
}

impl<T, E> IntoToolResult for Result<T, E>
where
    T: IntoToolResult,
    E: Into<ToolError>,
{
    const ASKS_INPUT: bool = T::ASKS_INPUT;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        self.map_err(Into::into)?.into_tool_result()
    }
}

/// A serialisable value returned as JSON: its text in `content`, and the value itself in
/// `structuredContent` when it is an object. Use it for tools without an `outputSchema`;
/// `tool_with_output` takes the plain value instead and adds the schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    const ASKS_INPUT: bool = false;

    fn into_tool_result(self) -> Result<Reply<CallToolResult>, ToolError> {
        let value = serde_json::to_value(&self.0)
            .map_err(|e| ToolError::internal(format!("tool output does not serialise: {e}")))?;
        Ok(Reply::Complete(structured(value)))
    }
}

/// The result for a structured value: the JSON text for clients that predate
/// `structuredContent`, and the value itself when it is an object.
pub(crate) fn structured(value: Value) -> CallToolResult {
    // Serialising a `Value` cannot fail: its map keys are strings.
    let text = serde_json::to_string(&value).unwrap_or_default();
    let structured_content = value.is_object().then_some(value);
    let mut result = CallToolResult::from_text(text);
    result.structured_content = structured_content;
    result
}

/// What a tool with a typed output (`tool_with_output`) returns: `Result<T, E>` or
/// `Result<Reply<T>, E>`, with `T: Serialize + JsonSchema` and `E: Into<ToolError>`.
/// `T` gives the tool its `outputSchema`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a typed tool output",
    label = "a tool registered with `tool_with_output` must return `Result<T, E>` or `Result<Reply<T>, E>`",
    note = "`T` must implement `Serialize` and `schemars::JsonSchema`, and `E: Into<ToolError>`"
)]
pub trait IntoStructuredResult {
    /// The typed output; its schema is the tool's `outputSchema`.
    type Output: Serialize + schemars::JsonSchema;

    /// Whether a value of this type can be [`Reply::InputRequired`]; see
    /// [`IntoToolResult::ASKS_INPUT`].
    const ASKS_INPUT: bool = true;

    /// The output, "input required", or why there is neither.
    fn into_structured(self) -> Result<Reply<Self::Output>, ToolError>;
}

impl<T, E> IntoStructuredResult for Result<T, E>
where
    T: Serialize + schemars::JsonSchema,
    E: Into<ToolError>,
{
    type Output = T;
    const ASKS_INPUT: bool = false;

    fn into_structured(self) -> Result<Reply<T>, ToolError> {
        self.map(Reply::Complete).map_err(Into::into)
    }
}

impl<T, E> IntoStructuredResult for Result<Reply<T>, E>
where
    T: Serialize + schemars::JsonSchema,
    E: Into<ToolError>,
{
    type Output = T;

    fn into_structured(self) -> Result<Reply<T>, ToolError> {
        self.map_err(Into::into)
    }
}

// ===== prompts =====

/// A value a prompt handler may return: `String` or `&str` (one user text message),
/// [`PromptMessage`], `Vec<PromptMessage>`, [`GetPromptResult`], `Reply<GetPromptResult>`
/// (to answer "input required"), or `Result<T, E>` of one of these with `E: Into<McpError>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    label = "this is not a prompt result",
    note = "return a `String` (one user message), `PromptMessage`, `Vec<PromptMessage>`, `GetPromptResult` or `Reply<GetPromptResult>`, or a `Result<_, McpError>` of one of those"
)]
pub trait IntoPromptResult {
    /// The result, or the protocol error.
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        Ok(Reply::Complete(self))
    }
}

impl IntoPromptResult for Reply<GetPromptResult> {
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        Ok(self)
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        Ok(Reply::Complete(GetPromptResult::new(self)))
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        vec![self].into_prompt_result()
    }
}

/// The text of a prompt is what the user says: one user message.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        PromptMessage::user(self).into_prompt_result()
    }
}

impl IntoPromptResult for &str {
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        PromptMessage::user(self).into_prompt_result()
    }
}

impl<T, E> IntoPromptResult for Result<T, E>
where
    T: IntoPromptResult,
    E: Into<McpError>,
{
    fn into_prompt_result(self) -> Result<Reply<GetPromptResult>, McpError> {
        self.map_err(Into::into)?.into_prompt_result()
    }
}

// ===== resources =====

/// The resource a reader is answering for: its URI and MIME type, which plain text or
/// bytes returned by the reader are labelled with.
#[derive(Clone, Copy, Debug)]
pub struct ReadTarget<'a> {
    pub(crate) uri: &'a str,
    pub(crate) mime_type: Option<&'a str>,
    pub(crate) version: ProtocolVersion,
}

impl ReadTarget<'_> {
    /// The URI that was read.
    pub fn uri(&self) -> &str {
        self.uri
    }

    /// The MIME type registered for the resource, if any.
    pub fn mime_type(&self) -> Option<&str> {
        self.mime_type
    }

    /// "Resource not found" for this URI, in the form the request's revision uses.
    pub fn not_found(&self) -> McpError {
        McpError::resource_not_found(self.uri, self.version)
    }

    /// Text contents for this URI.
    pub fn text(&self, text: impl Into<String>) -> ResourceContents {
        let mut contents = TextResourceContents::new(self.uri, text);
        contents.mime_type = self.mime_type.map(str::to_owned);
        ResourceContents::Text(contents)
    }

    /// Binary contents for this URI, base64-encoded.
    pub fn blob(&self, bytes: &[u8]) -> ResourceContents {
        let mut contents = BlobResourceContents::from_bytes(self.uri, bytes);
        contents.mime_type = self.mime_type.map(str::to_owned);
        ResourceContents::Blob(contents)
    }
}

/// A value a resource reader may return.
///
/// Implemented for `String` and `&str` (text contents), `Vec<u8>` (binary contents),
/// [`ResourceContents`], `Vec<ResourceContents>`, [`ReadResourceResult`],
/// `Reply<ReadResourceResult>` (to answer "input required"), `Option<T>` (`None` is
/// "resource not found") and `Result<T, E>` of any of these with `E: Into<McpError>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource reader",
    label = "this is not resource contents",
    note = "return a `String`, `Vec<u8>`, `ResourceContents`, `Vec<ResourceContents>`, `ReadResourceResult` or `Reply<ReadResourceResult>`, an `Option` of one (`None` = not found), or a `Result<_, McpError>`"
)]
pub trait IntoReadResult {
    /// The result for `target`, or the protocol error.
    fn into_read_result(self, target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError>;
}

fn contents(contents: Vec<ResourceContents>) -> Result<Reply<ReadResourceResult>, McpError> {
    Ok(Reply::Complete(ReadResourceResult::new(contents)))
}

impl IntoReadResult for String {
    fn into_read_result(self, target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        contents(vec![target.text(self)])
    }
}

impl IntoReadResult for &str {
    fn into_read_result(self, target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        contents(vec![target.text(self)])
    }
}

impl IntoReadResult for Vec<u8> {
    fn into_read_result(self, target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        contents(vec![target.blob(&self)])
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(self, _target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        contents(vec![self])
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(self, _target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        contents(self)
    }
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(self, _target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        Ok(Reply::Complete(self))
    }
}

impl IntoReadResult for Reply<ReadResourceResult> {
    fn into_read_result(self, _target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        Ok(self)
    }
}

impl<T: IntoReadResult> IntoReadResult for Option<T> {
    fn into_read_result(self, target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        match self {
            Some(found) => found.into_read_result(target),
            None => Err(target.not_found()),
        }
    }
}

impl<T, E> IntoReadResult for Result<T, E>
where
    T: IntoReadResult,
    E: Into<McpError>,
{
    fn into_read_result(self, target: &ReadTarget<'_>) -> Result<Reply<ReadResourceResult>, McpError> {
        self.map_err(Into::into)?.into_read_result(target)
    }
}

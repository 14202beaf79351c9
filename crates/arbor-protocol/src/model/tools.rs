//! Tools: definitions, `tools/list` and `tools/call`.
//!
//! A [`Tool`] carries its JSON Schemas as plain JSON objects; this module does not
//! validate arguments against them (the server layer does). `structuredContent` is
//! any JSON value, which 2026-07-28 allows; earlier revisions want an object, and
//! it is the caller's job to send one there.
//!
//! Invariant: every member the 2024-11-05 revision lacks is optional here.

use crate::meta::Meta;
use crate::model::common::{CacheScope, Cursor, Icon, JsonObject, ResultType};
use crate::model::content::ContentBlock;
use crate::model::mrtr::InputResponses;
use crate::model::tasks::TaskMetadata;
use serde::{Deserialize, Serialize};
use serde_json::Value;

wire_struct! {
    /// Hints about a tool's behaviour (2025-03-26 on). Untrusted unless the server is.
    #[derive(Default)]
    pub struct ToolAnnotations {
        /// A display name.
        opt title: String = "title",
        /// The tool does not change its environment.
        opt read_only_hint: bool = "readOnlyHint",
        /// The tool may destroy data.
        opt destructive_hint: bool = "destructiveHint",
        /// Calling it twice with the same arguments has no further effect.
        opt idempotent_hint: bool = "idempotentHint",
        /// The tool talks to an open world of external entities.
        opt open_world_hint: bool = "openWorldHint",
    }
}

/// Whether a tool may run as a 2025-11-25 task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskSupport {
    /// Never as a task.
    Forbidden,
    /// As a task or not, as the client asks.
    Optional,
    /// Only as a task.
    Required,
}

wire_struct! {
    /// How a tool runs (`ToolExecution`, 2025-11-25).
    #[derive(Default)]
    pub struct ToolExecution {
        /// Whether the tool may run as a task.
        opt task_support: TaskSupport = "taskSupport",
    }
}

wire_struct! {
    /// A tool the client can call.
    #[derive(Default)]
    pub struct Tool {
        /// The tool's unique name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
        opt title: String = "title",
        /// What the tool does.
        opt description: String = "description",
        /// The JSON Schema of the arguments; its root has `"type": "object"`.
        req input_schema: JsonObject = "inputSchema",
        /// The JSON Schema of `structuredContent` (2025-06-18 on).
        opt output_schema: JsonObject = "outputSchema",
        /// Behaviour hints (2025-03-26 on).
        opt annotations: ToolAnnotations = "annotations",
        /// Execution properties (2025-11-25).
        opt execution: ToolExecution = "execution",
        /// Icons (2025-11-25 on).
        opt icons: Vec<Icon> = "icons",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The result of `tools/list`.
    #[derive(Default)]
    pub struct ListToolsResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The tools on this page.
        req tools: Vec<Tool> = "tools",
        /// Where the next page starts; absent on the last page.
        opt next_cursor: Cursor = "nextCursor",
        /// How long the result stays fresh, in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Who may share a cached copy (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The params of `tools/call`.
    #[derive(Default)]
    pub struct CallToolRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The tool to call.
        req name: String = "name",
        /// The arguments.
        opt arguments: serde_json::Map<String, Value> = "arguments",
        /// Ask for the call to run as a task (2025-11-25).
        opt task: TaskMetadata = "task",
        /// Answers to an `input_required` result (2026-07-28).
        opt input_responses: InputResponses = "inputResponses",
        /// The opaque state of an `input_required` result, echoed byte for byte (2026-07-28).
        opt request_state: String = "requestState",
    }
}

wire_struct! {
    /// The result of `tools/call`. A failing tool is a result with `isError: true`,
    /// not a JSON-RPC error.
    #[derive(Default)]
    pub struct CallToolResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The unstructured result.
        req content: Vec<ContentBlock> = "content",
        /// The structured result (2025-06-18 on; any JSON value in 2026-07-28).
        val structured_content: Value = "structuredContent",
        /// Whether the tool failed.
        opt is_error: bool = "isError",
    }
}

/// Why [`CallToolResult::structured`] could not give the typed result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The tool failed (`isError: true`); its text content is kept.
    #[error("the tool failed: {0}")]
    ToolFailed(String),
    /// The result has no `structuredContent` and no single text block holding JSON.
    #[error("the result has no structured content")]
    Missing,
    /// The structured content does not fit the asked type.
    #[error("the structured content does not fit the expected type")]
    Decode(#[source] serde_json::Error),
}

impl CallToolResult {
    /// The result's text: every text block's text, in order, joined with `"\n"` (so a
    /// result of one text block gives that block's text unchanged). Blocks of other kinds
    /// are skipped; the empty string when there is no text block.
    pub fn text(&self) -> String {
        let mut texts = self.content.iter().filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        });
        let mut out = texts.next().map(str::to_owned).unwrap_or_default();
        for t in texts {
            out.push('\n');
            out.push_str(t);
        }
        out
    }

    /// The structured result as a `T`. Reads `structuredContent`; when it is absent and
    /// the content is exactly one text block, that text is read as JSON (what the spec
    /// asks servers to send alongside structured content, and all that revisions before
    /// 2025-06-18 can carry). A failed tool (`isError: true`) is
    /// [`StructuredError::ToolFailed`] whatever it carries.
    pub fn structured<T: serde::de::DeserializeOwned>(&self) -> Result<T, StructuredError> {
        if self.is_error == Some(true) {
            return Err(StructuredError::ToolFailed(self.text()));
        }
        match (&self.structured_content, self.content.as_slice()) {
            (Some(value), _) => T::deserialize(value).map_err(StructuredError::Decode),
            (None, [ContentBlock::Text(t)]) => serde_json::from_str(&t.text).map_err(StructuredError::Decode),
            (None, _) => Err(StructuredError::Missing),
        }
    }
}

//! Entry points for the fuzz targets (`fuzz/`, `crates/arbor-fuzz`): the crate-private
//! parsers and safety checks a server's bytes reach, exposed as they are.
//!
//! Hidden from the docs and not part of the API: nothing here is stable, and an
//! application has no reason to call it. Invariant: every function is the crate's own
//! code path, called unchanged (no stub, no copy); a refusal's reason is flattened to its
//! text, since the crate's refusal type is private.

use std::collections::BTreeMap;

use arbor_protocol::model::elicitation::{ElicitResult, ElicitationMode, RequestedSchema};

use crate::handler::safety::{elicitation, form, roots, Refusal};
use crate::handler::{FieldInfo, UrlTarget};

/// The client's SSE parser (`link::sse`), fed chunk by chunk.
#[derive(Debug, Default)]
pub struct SseParser(crate::link::sse::SseParser);

impl SseParser {
    /// Feeds a chunk; returns the data of every `message` event it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.0.feed(chunk)
    }

    /// The id to resume from (`Last-Event-ID`).
    pub fn last_event_id(&self) -> Option<&str> {
        self.0.last_event_id()
    }

    /// The reconnection delay the server asked for, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.0.retry_ms()
    }
}

fn text(refusal: Refusal) -> String {
    match refusal {
        Refusal::InvalidParams(s) | Refusal::Rejected(s) | Refusal::InvalidAnswer(s) => s,
    }
}

/// The URL-mode elicitation check.
pub fn check_elicitation_url(raw: &str, server_origin: Option<&str>) -> Result<UrlTarget, String> {
    elicitation::check_url(raw, server_origin).map_err(text)
}

/// The roots check: the normal form of a local `file://` root, or why it is dropped.
pub fn local_root(uri: &str) -> Result<String, String> {
    roots::local_root(uri)
}

/// The form-mode check of a requested schema.
pub fn check_elicitation_schema(schema: &RequestedSchema) -> Result<BTreeMap<String, FieldInfo>, String> {
    form::check_schema(schema).map_err(text)
}

/// The check of a handler's elicitation answer before it is sent.
pub fn check_elicitation_answer(
    result: &mut ElicitResult,
    mode: ElicitationMode,
    schema: Option<&RequestedSchema>,
) -> Result<(), String> {
    form::check_answer(result, mode, schema).map_err(text)
}

/// The client's reading of a tool's `x-mcp-header` annotations (a tool whose annotations
/// break the rules is dropped from `tools/list`).
pub fn tool_headers(input_schema: &serde_json::Value) -> Result<Vec<arbor_protocol::era::http::ParamHeader>, String> {
    crate::client::tool_headers(input_schema)
}

//! The bus topics the runtime itself publishes and follows.
//!
//! One topic per list for `list_changed`, and one per resource URI for `updated`, so a
//! resource update costs a lookup and reaches only the streams that asked for that URI,
//! however many streams are open. Keys are the coalescing keys of [`arbor_bus::Overflow::Coalesce`]:
//! two queued changes of the same list (or updates of the same URI) are one fact.
//!
//! Invariant: these strings are written only here; user topics should not start with
//! `mcp/`.

use arbor_bus::BusMessage;
use serde_json::Value;

use crate::handler::ListKind;

/// The topic of a list's `list_changed`.
pub(crate) fn list_changed(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "mcp/list_changed/tools",
        ListKind::Prompts => "mcp/list_changed/prompts",
        ListKind::Resources => "mcp/list_changed/resources",
    }
}

/// The list a `list_changed` topic names.
pub(crate) fn list_kind(topic: &str) -> Option<ListKind> {
    [ListKind::Tools, ListKind::Prompts, ListKind::Resources].into_iter().find(|k| list_changed(*k) == topic)
}

const UPDATED: &str = "mcp/resources/updated/";

/// The topic of a resource's `updated`.
pub(crate) fn resource_updated(uri: &str) -> String {
    format!("{UPDATED}{uri}")
}

/// The URI a resource topic names.
pub(crate) fn updated_uri(topic: &str) -> Option<&str> {
    topic.strip_prefix(UPDATED)
}

/// The message announcing that a list changed.
pub(crate) fn list_changed_message(kind: ListKind) -> BusMessage {
    let topic = list_changed(kind);
    BusMessage::new(topic, Value::Null).with_key(topic)
}

/// The message announcing that a resource changed.
pub(crate) fn resource_updated_message(uri: &str) -> BusMessage {
    BusMessage::new(resource_updated(uri), Value::Null).with_key(uri)
}

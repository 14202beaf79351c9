//! The bus topics the runtime itself publishes and follows.
//!
//! One topic per list for `list_changed`, and one per resource URI for `updated`, so a
//! resource update costs a lookup and reaches only the streams that asked for that URI,
//! however many streams are open. Each tenant has one more, for the `list_changed` of
//! its own handler (`crate::tenant::routers`): one topic for the three lists, the list
//! named by the payload, so a stream follows one topic more than the global ones, not three. Keys are the coalescing keys of [`arbor_bus::Overflow::Coalesce`]:
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
    KINDS.into_iter().find(|k| list_changed(*k) == topic)
}

const KINDS: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

const TENANT: &str = "mcp/tenant/";
const TENANT_LISTS: &str = "/list_changed";

fn kind_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
    }
}

/// The topic of one tenant's `list_changed`, every list: only its streams follow it.
pub(crate) fn tenant_list_changed(tenant: &str) -> String {
    format!("{TENANT}{tenant}{TENANT_LISTS}")
}

/// Whether `topic` is a tenant's `list_changed` topic.
pub(crate) fn is_tenant_list_changed(topic: &str) -> bool {
    topic.starts_with(TENANT) && topic.ends_with(TENANT_LISTS)
}

/// The list a message of a tenant's `list_changed` topic names.
pub(crate) fn tenant_list_kind(message: &BusMessage) -> Option<ListKind> {
    let name = message.payload.as_str()?;
    KINDS.into_iter().find(|k| kind_name(*k) == name)
}

/// The message announcing that one tenant's `kind` list changed. Keyed by list, so two
/// queued changes of one list coalesce and changes of two lists do not.
pub(crate) fn tenant_list_changed_message(tenant: &str, kind: ListKind) -> BusMessage {
    let topic = tenant_list_changed(tenant);
    let key = format!("{topic}/{}", kind_name(kind));
    BusMessage::new(topic, Value::from(kind_name(kind))).with_key(key)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenants_list_topic_is_its_own_and_names_the_list_in_its_payload() {
        for kind in KINDS {
            assert_eq!(list_kind(list_changed(kind)), Some(kind));
            assert!(!is_tenant_list_changed(list_changed(kind)));
            let message = tenant_list_changed_message("acme", kind);
            assert!(is_tenant_list_changed(&message.topic));
            assert_eq!(list_kind(&message.topic), None);
            assert_eq!(tenant_list_kind(&message), Some(kind));
        }
        assert_ne!(tenant_list_changed("a"), tenant_list_changed("b"));
        assert!(!is_tenant_list_changed(&resource_updated("mcp/tenant/x/list_changed")));
    }
}

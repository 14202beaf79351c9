//! Validation against the vendored schema of a revision (`tests/fixtures/spec/<rev>/schema.json`),
//! the test oracle every crate's tests check wire messages with.
//!
//! It is not a model of the protocol: it knows JSON values, the schema files and which
//! definition a message's method names, nothing of the runtime's types. Each schema is read
//! once and each `(revision, definition)` validator compiled once per test binary; both are
//! leaked on purpose (a handful per run), so the answers are `'static` and a panicking test
//! (the lock is poison-tolerant) leaves the caches usable for the next one.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::spec_dir;

/// Reads a JSON file; panics naming the file when it cannot be read or parsed.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The schema document of a revision folder (`2025-06-18`, `ext-tasks/draft`, …).
pub fn schema(revision: &str) -> &'static Value {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static Value>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock();
    cache
        .entry(revision.to_owned())
        .or_insert_with(|| Box::leak(Box::new(read_json(&spec_dir().join(revision).join("schema.json")))))
}

/// The definitions map of a schema (`definitions` for draft-07, `$defs` for 2020-12).
pub fn definitions(revision: &str) -> &'static Map<String, Value> {
    let doc = schema(revision);
    doc.get("$defs").or_else(|| doc.get("definitions")).and_then(Value::as_object).expect("a definitions map")
}

/// The compiled validator of one named definition of a revision.
fn validator(revision: &str, definition: &str) -> &'static jsonschema::Validator {
    type Cache = Mutex<HashMap<(String, String), &'static jsonschema::Validator>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock();
    if let Some(v) = cache.get(&(revision.to_owned(), definition.to_owned())) {
        return v;
    }
    let doc = schema(revision);
    let pointer = if doc.get("$defs").is_some() { "$defs" } else { "definitions" };
    if !definitions(revision).contains_key(definition) {
        // Released before the panic, so the cache stays unpoisoned for other tests.
        drop(cache);
        panic!("{revision} has no definition {definition}");
    }
    // The document itself is the wrapper: a root `$ref` to the definition. The root holds no
    // other assertion, so it validates exactly the definition.
    let mut wrapper = doc.clone();
    wrapper.as_object_mut().unwrap().insert("$ref".into(), Value::String(format!("#/{pointer}/{definition}")));
    let compiled = match jsonschema::validator_for(&wrapper) {
        Ok(v) => v,
        Err(e) => {
            drop(cache);
            panic!("{revision}#{definition} does not compile: {e}");
        }
    };
    let v: &'static jsonschema::Validator = Box::leak(Box::new(compiled));
    cache.insert((revision.to_owned(), definition.to_owned()), v);
    v
}

/// The problems of `instance` as a `definition` of `revision`, one per line
/// (`<revision>#<definition>: <error> at <path>`); empty when it is valid.
pub fn problems(revision: &str, definition: &str, instance: &Value) -> Vec<String> {
    validator(revision, definition)
        .iter_errors(instance)
        .map(|e| format!("{revision}#{definition}: {e} at {}", e.instance_path()))
        .collect()
}

/// Validates `instance` against `<revision>/schema.json`'s named definition and panics
/// with every problem when it does not validate.
pub fn assert_valid(revision: &str, definition: &str, instance: &Value) {
    let found = problems(revision, definition, instance);
    assert!(
        found.is_empty(),
        "{revision}#/{definition} rejects {}:\n{}",
        serde_json::to_string_pretty(instance).unwrap(),
        found.join("\n")
    );
}

/// The result definition of a method's successful response (`EmptyResult` for a method
/// whose result has no definition of its own).
pub fn result_definition(method: &str, result: &Value) -> &'static str {
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return "InputRequiredResult";
    }
    match method {
        "initialize" => "InitializeResult",
        "server/discover" => "DiscoverResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        "subscriptions/listen" => "SubscriptionsListenResult",
        _ => "EmptyResult",
    }
}

/// The definition of a server notification or request, by method; panics on a method the
/// table does not know.
pub fn message_definition(method: &str) -> &'static str {
    match method {
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        "notifications/cancelled" => "CancelledNotification",
        "elicitation/create" => "ElicitRequest",
        "sampling/createMessage" => "CreateMessageRequest",
        "roots/list" => "ListRootsRequest",
        // Asked of a client running a request as a task (2025-11-25).
        "tasks/get" => "GetTaskRequest",
        "tasks/result" => "GetTaskPayloadRequest",
        "tasks/cancel" => "CancelTaskRequest",
        other => panic!("no definition for {other}"),
    }
}

/// The problems of one message a server sent under `revision`: as a `JSONRPCMessage`, then
/// its result (for a response; `method` is the method of the request it answers) or itself
/// (for a notification or request) as the definition its method names. 2026-07-28 results
/// must also carry `resultType`.
pub fn message_problems(revision: &str, message: &Value, method: Option<&str>) -> Vec<String> {
    let mut found = problems(revision, "JSONRPCMessage", message);
    if let Some(result) = message.get("result") {
        let method = method.unwrap_or_else(|| panic!("a response to no request: {message}"));
        found.extend(problems(revision, result_definition(method, result), result));
        if revision == "2026-07-28" && result.get("resultType").is_none() {
            found.push(format!("2026-07-28 results carry resultType: {message}"));
        }
    } else if let Some(m) = message.get("method").and_then(Value::as_str) {
        found.extend(problems(revision, message_definition(m), message));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_is_checked_as_a_message_and_as_what_its_method_names() {
        let ping = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        assert!(message_problems("2025-06-18", &ping, Some("ping")).is_empty());
        let bad_list = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": 3}});
        let found = message_problems("2025-06-18", &bad_list, Some("tools/list"));
        assert!(found.iter().any(|p| p.starts_with("2025-06-18#ListToolsResult: ")), "{found:?}");
        let unstamped = message_problems("2026-07-28", &ping, Some("ping"));
        assert!(unstamped.iter().any(|p| p.contains("carry resultType")), "{unstamped:?}");
    }

    #[test]
    fn a_missing_definition_fails_and_leaves_the_cache_usable() {
        let missing = std::panic::catch_unwind(|| problems("2025-06-18", "NoSuchThing", &json!({})));
        assert!(missing.is_err());
        assert_valid("2025-06-18", "EmptyResult", &json!({}));
    }
}

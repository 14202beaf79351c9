//! Validation against the vendored schema of a revision (`tests/fixtures/spec`), the test
//! oracle for every message the server sends.

use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

fn schema(revision: &str) -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/spec").join(revision).join("schema.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Panics with every error when `instance` is not a valid `definition` of `revision`.
pub fn assert_valid(revision: &str, definition: &str, instance: &Value) {
    type Cache = Mutex<HashMap<(String, String), &'static jsonschema::Validator>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (revision.to_owned(), definition.to_owned());
    let cache = CACHE.get_or_init(Default::default);
    let cached = cache.lock().get(&key).copied();
    let validator = match cached {
        Some(v) => v,
        None => {
            // The document with a root `$ref` validates exactly the named definition.
            let mut doc = schema(revision);
            let defs = if doc.get("$defs").is_some() { "$defs" } else { "definitions" };
            assert!(doc[defs].get(definition).is_some(), "{revision} has no {definition}");
            doc.as_object_mut().unwrap().insert("$ref".into(), Value::String(format!("#/{defs}/{definition}")));
            let v: &'static jsonschema::Validator = Box::leak(Box::new(jsonschema::validator_for(&doc).unwrap()));
            cache.lock().insert(key, v);
            v
        }
    };
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{revision}#{definition} rejects {instance}:\n{}", errors.join("\n"));
}

/// The result definition of a method's successful response.
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
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "subscriptions/listen" => "SubscriptionsListenResult",
        _ => "EmptyResult",
    }
}

/// The definition of a server notification or request, by method.
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
        other => panic!("no definition for {other}"),
    }
}

/// Checks one message the server sent under `revision`; `method` is the method of the
/// request it answers, for responses.
pub fn check_message(revision: &str, message: &Value, method: Option<&str>) {
    assert_valid(revision, "JSONRPCMessage", message);
    if let Some(result) = message.get("result") {
        let method = method.expect("a response to a request we sent");
        assert_valid(revision, result_definition(method, result), result);
        if revision == "2026-07-28" {
            assert!(result.get("resultType").is_some(), "2026-07-28 results carry resultType: {message}");
        }
    } else if let Some(m) = message.get("method").and_then(Value::as_str) {
        assert_valid(revision, message_definition(m), message);
    }
}

//! Validation against the vendored schema of a revision (`tests/fixtures/spec`), the test
//! oracle for every message an example server sends.

use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

fn schema(revision: &str) -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/spec").join(revision).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("the vendored schema is JSON")
}

/// The problems of `instance` as a `definition` of `revision`, one per line.
pub fn problems(revision: &str, definition: &str, instance: &Value) -> Vec<String> {
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
            // Leaked once per (revision, definition): a handful per test run.
            let v: &'static jsonschema::Validator = Box::leak(Box::new(jsonschema::validator_for(&doc).unwrap()));
            cache.lock().insert(key, v);
            v
        }
    };
    validator.iter_errors(instance).map(|e| format!("{revision}#{definition}: {e} at {}", e.instance_path())).collect()
}

/// The result definition of a method's successful response.
fn result_definition(method: &str, result: &Value) -> &'static str {
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
        _ => "EmptyResult",
    }
}

/// The definition of a server notification or request, by method.
fn message_definition(method: &str) -> &'static str {
    match method {
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/cancelled" => "CancelledNotification",
        "elicitation/create" => "ElicitRequest",
        "sampling/createMessage" => "CreateMessageRequest",
        "roots/list" => "ListRootsRequest",
        other => panic!("no definition for {other}"),
    }
}

/// The problems of one message the server sent under `revision`; `method` is the method
/// of the request it answers, for responses.
pub fn check_message(revision: &str, message: &Value, method: Option<&str>) -> Vec<String> {
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

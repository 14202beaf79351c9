//! The client's safety checks on what a server sends (`arbor_client::handler::safety`):
//! the URL-mode elicitation URL, roots, form schemas and answers, and the log sanitiser.
//!
//! Not a test of the handler flow around them. Invariant of each body: it panics only
//! when a check lets through something its module documentation says it never does, or
//! when its output, checked again, changes.

use arbor_client::fuzzing::{check_elicitation_answer, check_elicitation_schema, check_elicitation_url, local_root};
use arbor_client::handler::safety::logs::{is_forbidden, sanitize, MAX_DEPTH, MAX_STRING_CHARS};
use arbor_protocol::model::elicitation::{ElicitAction, ElicitResult, ElicitationMode, RequestedSchema};
use serde_json::{Map, Value};
use url::Url;

use crate::text;

/// `check_url`: the input is the URL, then optionally a newline and the server's origin.
/// A URL that passes parses as https with no userinfo and the host reported, and passes
/// again unchanged in its normalised form.
pub fn elicitation_url(data: &[u8]) {
    let Some(input) = text(data) else { return };
    let (raw, origin) = match input.split_once('\n') {
        Some((raw, origin)) => (raw, Some(origin)),
        None => (input, None),
    };
    let Ok(target) = check_elicitation_url(raw, origin) else { return };
    let url = Url::parse(&target.url).expect("a checked URL parses");
    assert_eq!(url.scheme(), "https");
    assert!(url.username().is_empty() && url.password().is_none(), "userinfo let through: {url}");
    assert_eq!(url.host_str(), Some(target.host.as_str()));
    assert!(!target.host.is_empty());
    let again = check_elicitation_url(&target.url, origin).expect("a checked URL passes again");
    assert_eq!(again, target, "checking the normalised URL changed it");
}

/// `local_root`: a root that passes is `file:///…` with an empty host, no dot segment,
/// no query and no fragment, and is its own normal form.
pub fn roots(data: &[u8]) {
    let Some(uri) = text(data) else { return };
    let Ok(normal) = local_root(uri) else { return };
    let url = Url::parse(&normal).expect("a normal root parses");
    assert_eq!(url.scheme(), "file");
    assert!(url.host_str().is_none_or(str::is_empty), "a remote root let through: {normal}");
    assert!(url.query().is_none() && url.fragment().is_none(), "query or fragment kept: {normal}");
    let dot = |s: &str| matches!(s.to_ascii_lowercase().as_str(), "." | ".." | "%2e" | "%2e%2e" | ".%2e" | "%2e.");
    assert!(url.path_segments().is_none_or(|mut segs| !segs.any(dot)), "a dot segment kept: {normal}");
    assert_eq!(local_root(&normal).as_deref(), Ok(normal.as_str()), "the normal form is not stable");
}

/// The form checks: the input is JSON `{"schema", "answer"}`. A schema that passes
/// describes exactly its properties; an answer that passes in form mode names only
/// schema fields and holds every required one; a declined or cancelled answer leaves
/// with no content.
pub fn elicitation_schema(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(data) else { return };
    let Some(schema) = input.get("schema").and_then(|s| serde_json::from_value::<RequestedSchema>(s.clone()).ok())
    else {
        return;
    };
    let Ok(fields) = check_elicitation_schema(&schema) else { return };
    assert!(fields.keys().eq(schema.properties.keys()), "the fields are not the schema's properties");
    let Some(mut answer) = input.get("answer").and_then(|a| serde_json::from_value::<ElicitResult>(a.clone()).ok())
    else {
        return;
    };
    let verdict = check_elicitation_answer(&mut answer, ElicitationMode::Form, Some(&schema));
    match answer.action {
        ElicitAction::Decline | ElicitAction::Cancel => {
            assert!(verdict.is_ok() && answer.content.is_none(), "content of a refused form kept");
        }
        ElicitAction::Accept if verdict.is_ok() => {
            let content = answer.content.clone().unwrap_or_default();
            assert!(content.keys().all(|k| schema.properties.contains_key(k)), "an unknown field let through");
            assert!(schema.required.iter().flatten().all(|r| content.contains_key(r)), "a required field missing");
        }
        ElicitAction::Accept => {}
    }
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

fn clean(v: &Value) -> bool {
    let ok = |s: &str| !s.chars().any(is_forbidden) && s.chars().count() <= MAX_STRING_CHARS;
    match v {
        Value::String(s) => ok(s),
        Value::Array(a) => a.iter().all(clean),
        Value::Object(m) => m.iter().all(|(k, v)| ok(k) && clean(v)),
        _ => true,
    }
}

/// The log sanitiser: the input is a log entry's params (JSON object). The output keeps
/// only `level`, `logger` and `data`, holds no forbidden character and no string over the
/// limit, is at most `MAX_DEPTH` deep, and sanitising it again changes nothing.
pub fn log_sanitiser(data: &[u8]) {
    let Ok(params) = serde_json::from_slice::<Map<String, Value>>(data) else { return };
    let (level, out) = sanitize(&params);
    assert!(out.keys().all(|k| matches!(k.as_str(), "level" | "logger" | "data")), "extra keys kept: {out:?}");
    let out_value = Value::Object(out.clone());
    assert!(clean(&out_value), "a forbidden character or an overlong string kept");
    assert!(depth(&out["data"]) <= MAX_DEPTH, "data deeper than {MAX_DEPTH}");
    let (level_again, again) = sanitize(&out);
    assert_eq!((level_again, &again), (level, &out), "sanitising twice changed the entry");
}

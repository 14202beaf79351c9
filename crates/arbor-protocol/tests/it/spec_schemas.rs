//! Access to the vendored spec fixtures: schema files, named-definition
//! validators, and the list of a revision's request/notification/result types.

use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

/// `tests/fixtures/spec` at the workspace root.
pub fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/spec")
}

/// Reads a JSON file.
pub fn read_json(path: &std::path::Path) -> Value {
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
pub fn definitions(revision: &str) -> &'static serde_json::Map<String, Value> {
    let doc = schema(revision);
    doc.get("$defs").or_else(|| doc.get("definitions")).and_then(Value::as_object).expect("a definitions map")
}

/// Validates `instance` against `<revision>/schema.json`'s named definition and
/// panics with every error when it does not validate.
pub fn assert_valid(revision: &str, definition: &str, instance: &Value) {
    static CACHE: OnceLock<Mutex<HashMap<(String, String), &'static jsonschema::Validator>>> = OnceLock::new();
    let validator = {
        let mut cache = CACHE.get_or_init(Default::default).lock();
        *cache.entry((revision.to_owned(), definition.to_owned())).or_insert_with(|| {
            let doc = schema(revision);
            let pointer = if doc.get("$defs").is_some() { "$defs" } else { "definitions" };
            assert!(definitions(revision).contains_key(definition), "{revision} has no definition {definition}");
            // The document itself is the wrapper: a root `$ref` to the definition. The
            // root holds no other assertion, so it validates exactly the definition.
            let mut wrapper = doc.clone();
            wrapper.as_object_mut().unwrap().insert("$ref".into(), Value::String(format!("#/{pointer}/{definition}")));
            let v = jsonschema::validator_for(&wrapper)
                .unwrap_or_else(|e| panic!("{revision}#{definition} does not compile: {e}"));
            Box::leak(Box::new(v))
        })
    };
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(
        errors.is_empty(),
        "{revision}#/{definition} rejects {}:\n{}",
        serde_json::to_string_pretty(instance).unwrap(),
        errors.join("\n")
    );
}

/// Whether a definition (or one of its `allOf` parts) fixes `method` with a `const`.
fn method_const(def: &Value) -> Option<&str> {
    if let Some(m) = def.pointer("/properties/method/const").and_then(Value::as_str) {
        return Some(m);
    }
    def.get("allOf")?.as_array()?.iter().find_map(method_const)
}

/// The request, notification and result definitions of a revision: every definition
/// whose `method` is a constant, and every definition named `…Result`.
pub fn message_definitions(revision: &str) -> BTreeSet<String> {
    definitions(revision)
        .iter()
        .filter(|(name, def)| method_const(def).is_some() || name.ends_with("Result"))
        .map(|(name, _)| name.clone())
        .collect()
}

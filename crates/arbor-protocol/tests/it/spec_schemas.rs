//! Access to the vendored spec fixtures: the shared schema oracle (`tests::schema`), and
//! the list of a revision's request/notification/result types, which only this crate's
//! tests enumerate.

use serde_json::Value;
use std::collections::BTreeSet;

pub use tests::schema::{assert_valid, read_json};
pub use tests::spec_dir;

use tests::schema::definitions;

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

//! Validation against the vendored schema of a revision (`tests/fixtures/spec`), the test
//! oracle for every message the server sends: the shared `tests::schema`, asserting.

use serde_json::Value;

pub use tests::schema::assert_valid;

/// Checks one message the server sent under `revision`; `method` is the method of the
/// request it answers, for responses.
pub fn check_message(revision: &str, message: &Value, method: Option<&str>) {
    let problems = tests::schema::message_problems(revision, message, method);
    assert!(problems.is_empty(), "{revision} rejects {message}:\n{}", problems.join("\n"));
}

//! Cross-crate test harness: where the vendored spec fixtures live.
//!
//! This crate holds no product code; it only locates the official schemas and
//! example messages vendored under `tests/fixtures/spec/`, so every crate's tests
//! read them from one place.

#![forbid(unsafe_code)]

use std::path::PathBuf;

/// The folder holding the vendored MCP schemas and examples (`tests/fixtures/spec`).
pub fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("spec")
}

//! Cross-crate test harness: where the vendored spec fixtures live, and the helpers every
//! crate's tests share.
//!
//! This crate holds no product code and depends on none of the workspace's crates: it
//! speaks JSON values, so any crate (the protocol crate too) can dev-depend on it without
//! a cycle. It locates the official schemas and example messages vendored under
//! `tests/fixtures/spec/` and validates against them ([`schema`]), drives servers as raw
//! JSON-RPC peers ([`peer`]), polls for conditions with a bound ([`poll`]), owns a
//! throwaway `redis-server` ([`redis`]), a real OAuth 2.1 / OpenID authorization server
//! ([`auth_server`]) and a real round-robin load balancer ([`haproxy`]), and the fault-injection kit: seeded fault
//! plans, the request ledger and misbehaving peers ([`kit`]). What only one crate's tests need stays in that
//! crate's `tests/it/support.rs`.

#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod auth_server;
pub mod haproxy;
pub mod kit;
pub mod peer;
pub mod poll;
pub mod redis;
pub mod schema;

/// The folder holding the vendored MCP schemas and examples (`tests/fixtures/spec`).
pub fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("spec")
}

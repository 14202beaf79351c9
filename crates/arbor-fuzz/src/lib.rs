//! The bodies of Arbor's fuzz targets: one function per target, taking the fuzzer's bytes
//! and asserting what must hold for them (no panic, and where the code promises it, that
//! what decodes re-encodes to the same value, or that two paths agree).
//!
//! Two callers share these bodies: the cargo-fuzz targets in `fuzz/` (nightly, libFuzzer,
//! coverage-guided) and this crate's `tests/it`, which feeds every committed corpus
//! file to the same body on the stable toolchain, so `cargo test --workspace` replays the
//! corpora in CI. This crate is not a fuzzer and holds no parser of its own: every body
//! calls the product's code (the crates' `fuzzing` modules expose the crate-private parsers
//! unchanged). Invariant: a body panics only when a property of the code under test fails.

mod client_checks;
mod frames;
mod headers;
mod sse;
mod state;
mod typed;

pub use client_checks::{elicitation_schema, elicitation_url, log_sanitiser, roots};
pub use frames::{frame_reader, jsonrpc_frame, oversized_id};
pub use headers::{header_codec, www_authenticate, x_mcp_header};
pub use sse::{client_sse, event_id};
pub use state::request_state;
pub use typed::typed_request;

/// A fuzz target's body.
pub type Body = fn(&[u8]);

/// Every target, by the name of its cargo-fuzz binary and corpus directory
/// (`fuzz/corpus/<name>/`).
pub const TARGETS: &[(&str, Body)] = &[
    ("jsonrpc_frame", jsonrpc_frame),
    ("oversized_id", oversized_id),
    ("frame_reader", frame_reader),
    ("typed_request", typed_request),
    ("www_authenticate", www_authenticate),
    ("client_sse", client_sse),
    ("event_id", event_id),
    ("header_codec", header_codec),
    ("x_mcp_header", x_mcp_header),
    ("elicitation_url", elicitation_url),
    ("roots", roots),
    ("elicitation_schema", elicitation_schema),
    ("log_sanitiser", log_sanitiser),
    ("request_state", request_state),
];

/// The text of `data` when it is UTF-8 (the string targets skip other inputs: the
/// product only ever parses `&str` there, having checked UTF-8 itself).
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

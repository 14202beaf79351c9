//! MCP wire types for every protocol revision: pure data, no IO.
//!
//! `arbor-protocol` is the bottom of the Arbor workspace. It holds the JSON-RPC
//! envelope ([`jsonrpc`]), one Rust type per MCP method and its params and
//! result, the well-known `_meta` keys, the typed error codes, and the rules
//! that tell the protocol revisions apart.
//!
//! It is not a runtime: it does no IO and depends on neither tokio nor ractor.
//! Invariant: every method name string appears once, in the method table, and
//! only the era modules know how revisions differ on the wire; everything else
//! asks the feature table.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![forbid(unsafe_code)]

pub mod era;
pub mod error;
pub mod jsonrpc;
pub mod meta;
pub mod method;
pub mod methods;
pub mod model;
pub mod reflect;
pub mod telemetry;
pub mod uri;
pub mod version;
pub mod www_authenticate;

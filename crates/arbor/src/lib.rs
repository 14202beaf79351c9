//! Arbor: an MCP (Model Context Protocol) runtime for Rust, built as an OTP-style
//! supervision tree on `ractor` and `tokio`. This is the one crate to depend on: it
//! re-exports the server (`server`, default), Streamable HTTP (`http`, default), the client
//! (`client`), the Redis bus (`redis`) and the shared state of several nodes on Redis
//! (`cluster`), and [`prelude`] brings what a server or client author needs.
//!
//! It is not where anything is implemented: each part lives in its own crate
//! (`arbor-protocol`, `arbor-otp`, `arbor-bus`, `arbor-server`, `arbor-http`,
//! `arbor-client`, `arbor-cluster`), re-exported here under a short name. Invariant:
//! nothing here changes what those crates do; a feature only adds re-exports.

#![forbid(unsafe_code)]

pub use arbor_bus as bus;
pub use arbor_otp as otp;
pub use arbor_protocol as protocol;
pub use arbor_transport as transport;

#[cfg(feature = "client")]
pub use arbor_client as client;
#[cfg(feature = "cluster")]
pub use arbor_cluster as cluster;
#[cfg(feature = "http")]
pub use arbor_http as http;
#[cfg(feature = "server")]
pub use arbor_server as server;

/// OpenTelemetry export (feature `otel`): the OTLP installer of
/// [`arbor_server::telemetry::otlp`] (`init_otlp`, `otlp_layer`) and the spans' attribute
/// names. With this feature a request's `_meta` trace context parents the server's span
/// and the client (feature `client`) injects its own.
#[cfg(all(feature = "otel", feature = "server"))]
pub mod otel {
    pub use arbor_server::telemetry::otlp::{init as init_otlp, layer as otlp_layer, OtlpError, OtlpGuard};
    pub use arbor_server::telemetry::{attr, TARGET};
}

/// The JSON Schema derive for tool arguments and results (re-exported `schemars`).
pub use schemars;
// `JsonSchema` is schemars' trait (through the glob, which yields to the explicit import
// below in the macro namespace) and arbor-macros' derive, which works without a schemars
// dependency in the user's crate (schemars' own derive writes bare `schemars::` paths).
#[doc(inline)]
pub use arbor_macros::{tool, JsonSchema};
#[doc(hidden)]
pub use schemars_trait::*;
mod schemars_trait {
    pub use schemars::JsonSchema;
}

/// `Stream` and `StreamExt` for the client's streams, the version the crates use.
pub use futures;
/// JSON values (`arbor::serde_json::Value`, `arbor::json!`), the runtime's own version.
pub use serde_json::{self, json};

/// The guide: one chapter per kind of user (`docs/guide.md`; each code block is a doctest,
/// compiled and run with the `client`, `redis` and `cluster` features, which the examples
/// turn on).
#[cfg(all(feature = "client", feature = "redis", feature = "cluster"))]
#[doc = include_str!("guide.md")]
pub mod guide {}

pub mod prelude;

#[doc(hidden)]
pub mod __private;

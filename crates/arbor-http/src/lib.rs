//! Streamable HTTP for Arbor: one endpoint serving an [`arbor_server::Server`] to clients
//! of every protocol revision at once, hardened for a browser on the same machine.
//!
//! ```no_run
//! # async fn demo(server: arbor_server::Server) -> std::io::Result<()> {
//! use arbor_http::{HttpConfig, HttpServer};
//! let bound = HttpServer::with_config(server, HttpConfig::default()).bind().await?;
//! println!("MCP on http://{}/mcp", bound.local_addr());
//! let stop = bound.shutdown_handle();
//! tokio::spawn(async move { tokio::signal::ctrl_c().await.ok(); stop.shutdown() });
//! bound.run().await
//! # }
//! ```
//!
//! Or mount [`HttpServer::router`] into an existing axum application, serve that with
//! [`serve`] (`TCP_NODELAY`, the peer address, the `Host` policy of its listener) and stop
//! it with [`HttpServer::shutdown`]; for a router served another way, say where the
//! application is reached with [`HttpConfig::mounted_at`](HttpConfig#structfield.mounted_at)
//! (the `Host` rule is at [`HttpConfig::allowed_hosts`](HttpConfig#structfield.allowed_hosts)).
//!
//! - 2026-07-28 (a body whose `_meta` carries the protocol version): POST only, every
//!   `Mcp-*` header checked against the body (400 + -32020), answered as JSON or as an SSE
//!   stream scoped to the request; closing the stream cancels the request; no sessions.
//! - 2025-03-26 … 2025-11-25: sessions (`Mcp-Session-Id`) opened by `initialize`, POSTs as
//!   JSON or resumable SSE, the standalone GET stream, `Last-Event-ID`, DELETE, idle
//!   sessions reaped.
//! - 2024-11-05 HTTP+SSE with [`HttpConfig::legacy_sse`].
//!
//! This crate is not the MCP runtime: it parses nothing beyond `Parsed::parse` and serves
//! everything through `arbor_server::exchange` endpoints, connection actors under the
//! server's supervision tree. Invariant: a slow or vanished client costs only itself:
//! buffers are bounded, no lock is held across an await, and a refused request touches
//! no shared state.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
// Not `forbid(unsafe_code)`: the crate makes libc calls no safe crate in the lock file wraps
// (getrlimit/setrlimit in listener.rs; malloc, free and malloc_trim in legacy/give_back.rs).
// Each is one expression with its SAFETY comment, and these lints keep any new one that way.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

#[cfg(not(any(feature = "aws-lc", feature = "rust-crypto")))]
compile_error!("arbor-http verifies JWT signatures with aws-lc-rs or RustCrypto: enable its `aws-lc` (default) or `rust-crypto` feature");

pub mod auth;
mod body;
pub mod cluster;
mod config;
mod drain;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod head;
mod health;
mod idle;
mod legacy;
mod listener;
pub mod metrics;
mod modern;
pub mod observer;
mod serve;
mod server;
mod signal;
mod sse;
mod tenant;

pub use config::{CorsConfig, HttpConfig, TenantHook};
pub use drain::STOP_SLACK;
pub use health::HealthConfig;
pub use observer::Observer;
pub use serve::{serve, Serve};
pub use server::{Bound, HttpServer, HttpStats, ShutdownHandle};
pub use signal::EXIT_SLACK;

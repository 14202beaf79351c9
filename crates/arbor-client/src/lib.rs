//! The Arbor MCP client runtime: one supervised connection per server, both protocol
//! eras, over stdio (a spawned process), Streamable HTTP, or any byte-stream transport.
//!
//! [`Client::connect`] opens the link, detects the era the spec's way (a
//! `server/discover` probe, falling back to `initialize` on any other error or on
//! silence; remembered per server in an [`EraCache`]; or forced with [`EraMode`]) and
//! returns a cloneable [`Client`]. Every client-to-server method is a typed call
//! ([`Client::request`] over the method marker types of `arbor_protocol::methods`, or a
//! named helper such as [`Client::call_tool`]), with per-call timeouts that progress can
//! reset under a hard maximum, progress callbacks, cancellation (drop the future or use a
//! [`CancellationToken`] via [`CallOptions::cancel_token`]) and assigns for the handler; [`Client::call_tool_as`] serialises typed
//! arguments and reads the structured result as a type. Server input requests are
//! answered by the [`handler`] runtime: as JSON-RPC requests in the legacy era, as MRTR
//! rounds retried in the calling task in the modern era. Notifications arrive as streams:
//! [`Client::notifications`] (typed, [`Notification`]; [`Client::raw_notifications`] as
//! received), [`Client::watch_resource`] (one resource's updates, whichever era the server
//! speaks), and the era-specific [`Client::listen`] and [`Client::subscribe_resource`].
//! The skills extension is the [`skills`] module: [`Client::list_skills`],
//! [`Client::load_skill`] and [`Client::skill_file`], every file verified against the
//! skill's manifest before it is returned.
//! Errors are typed enums with their `source()` chain ([`ClientError`], [`ConnectError`],
//! [`TransportError`], [`ProtocolError`], [`OpenError`]).
//!
//! ```no_run
//! use arbor_client::{Client, ClientOptions, StdioCommand};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = StdioCommand::new("my-mcp-server").arg("--stdio");
//! let client = Client::connect_stdio(server, ClientOptions::new("my-app", "1.0.0")).await?;
//! println!("speaking {:?}", client.protocol_version());
//! for tool in client.list_all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("echo", json!({"message": "hi"})).await?;
//! println!("{}", result.text());
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! What this crate is not: a server, or an OAuth client (authorization headers can be
//! set on an [`HttpTarget`]). Invariants: `ractor` never appears in the public API (the
//! connection actor sits behind [`Client`]); a malformed server message is logged and
//! counted ([`Client::malformed_messages`]), never a panic; a call that stops waiting
//! always tells the server in the way its era and transport prescribe.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![forbid(unsafe_code)]

mod call;
mod client;
mod connection;
mod dispatch;
mod era;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod link;
pub mod metrics;
mod notification;
mod options;
mod shared;
pub mod skills;
mod subscription;
mod target;
pub mod tasks;
mod telemetry;
mod watch;

pub mod auth;
pub mod handler;

pub use client::Client;
pub use era::EraCache;
pub use error::{ClientError, ConnectError, OpenError, ProtocolError, TransportError};
pub use notification::{ListKind, Notification};
pub use options::{CallOptions, ClientOptions, EraMode, Progress, ProgressFn, RestartPolicy};
pub use shared::{ServerNotice, Session};
pub use subscription::{ResourceSubscription, Subscription};
pub use target::{HttpTarget, ServerTarget, StdioCommand};
pub use tasks::TaskHandle;
pub use watch::ResourceWatch;

/// Re-exported so users need not depend on the protocol crate for the common types.
pub use arbor_protocol;
pub use arbor_transport::Transport;
/// The cancellation type of [`CallOptions::cancel_token`]: tokio-util's, the one the whole
/// runtime uses (blocking work, request handlers), so callers need no `tokio-util` line.
pub use tokio_util::sync::CancellationToken;

//! The Arbor MCP server runtime.
//!
//! A server author describes what the server offers, either declaratively with a
//! [`Router`] of plain async functions or by implementing the raw
//! [`ServerHandler`] trait, and Arbor serves it to any client of any protocol revision.
//! Each connection is a supervised actor and each in-flight request a supervised task
//! under that connection's task supervisor, so a panicking or hung handler costs one
//! request an error and never the connection.
//!
//! Serving is one call: `Server::new(handler).serve_stdio().await` serves stdin/stdout
//! until stdin ends; [`Server::connect`] serves any [`Transport`] (an in-memory pair in
//! tests) alongside others, and [`ServerConfig`] sets the limits and deadlines. Transports
//! that are not one byte stream (Streamable HTTP) serve message by message through
//! [`exchange`], the transport seam: [`Server::open_endpoint`], [`exchange::Parsed`]
//! bodies, [`exchange::Route`]s. It is for transport authors (`arbor-http` is one), so its
//! types are not re-exported at this root: a server author never names them.
//!
//! This crate is not a transport: bytes arrive through `arbor-transport` (stdio, the
//! in-memory pair) or `arbor-http`. Invariant: handlers never learn which protocol era a
//! request came from; the runtime lifts both eras into the same [`RequestContext`].

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![forbid(unsafe_code)]

pub mod config;
mod connection;
pub mod context;
mod drain;
mod dyn_handler;
pub mod error;
pub mod exchange;
pub mod handler;
pub mod ids;
pub mod input;
mod list_changes;
pub mod metrics;
pub mod observe;
mod principal;
pub mod reply;
mod request;
mod requester;
mod resource_updates;
pub mod router;
mod serve;
pub mod skills;
pub mod subscription;
pub mod tasks;
pub mod telemetry;
pub mod tenant;
mod tree;

/// The pub/sub bus subscription streams are fed by (re-exported from `arbor-bus`).
pub use arbor_bus as bus;
pub use arbor_protocol::error::McpError;
pub use arbor_transport::{Transport, TransportConfig};
pub use config::ServerConfig;
pub use connection::Connection;
pub use context::{ConnectionInfo, RequestContext};
pub use error::{ConnectError, ServeError, StartError};
pub use handler::{ListChangeSender, ListChanges, ListKind, ServerHandler, ServerInfo, ToolTerms};
pub use input::StateKey;
pub use principal::{Principal, ScopeHierarchy};
pub use reply::{InputRequired, Reply};
pub use requester::Requester;
pub use resource_updates::{ResourceUpdateSender, ResourceUpdates};
pub use router::{Router, RouterError, RouterHandle, ToolError};
pub use serve::{ConnectOptions, Server};
pub use subscription::{Channel, ChannelError, Flow, Subscribe, SubscriptionCapabilities, SubscriptionHandler};
pub use tasks::{
    MemoryTaskStore, TaskConfig, TaskOwner, TaskPolicy, TaskRecord, TaskStart, TaskStore, TaskStoreError, TaskSupport,
};
/// The type of [`RequestContext::cancellation_token`]: tokio-util's, the one cancellation
/// type of the whole runtime, re-exported so handlers need no `tokio-util` line.
pub use tokio_util::sync::CancellationToken;
pub use tree::DEFAULT_TENANT;

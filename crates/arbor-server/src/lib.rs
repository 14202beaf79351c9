//! The Arbor MCP server runtime.
//!
//! A server author describes what the server offers, either declaratively with a
//! [`Router`](crate::router::Router) of plain async functions or by implementing the raw
//! [`ServerHandler`] trait, and Arbor serves it to any client of any protocol revision.
//! Each connection is a supervised actor and each in-flight request a supervised task
//! under that connection's task supervisor, so a panicking or hung handler costs one
//! request an error and never the connection.
//!
//! This crate is not a transport: bytes arrive through `arbor-transport` (stdio, the
//! in-memory pair) or `arbor-http`. Invariant: handlers never learn which protocol era a
//! request came from; the runtime lifts both eras into the same [`RequestContext`].

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod context;
pub mod handler;
pub mod input;
pub mod reply;
pub mod router;

pub use arbor_protocol::error::McpError;
pub use context::{ConnectionInfo, RequestContext};
pub use handler::{ListKind, ServerHandler, ServerInfo};
pub use input::StateKey;
pub use reply::{InputRequired, Reply};
pub use router::{Router, RouterHandle, ToolError};

//! What a server or client author needs, in one `use arbor::prelude::*;`.
//!
//! It is not the whole API: the transport seam for transport authors, the supervision
//! crate and the protocol's every type stay under their modules (`arbor::server`,
//! `arbor::otp`, `arbor::protocol`). Invariant: only names a typical program uses.

pub use crate::JsonSchema;
pub use crate::tool;
pub use arbor_protocol::error::McpError;
pub use serde::{Deserialize, Serialize};

#[cfg(feature = "server")]
pub use arbor_server::{
    ConnectOptions, Reply, RequestContext, Router, RouterHandle, Server, ServerConfig, ServerHandler, ToolError,
};

#[cfg(feature = "http")]
pub use arbor_http::{HttpConfig, HttpServer};

#[cfg(feature = "client")]
pub use arbor_client::{CallOptions, Client, ClientOptions, StdioCommand};

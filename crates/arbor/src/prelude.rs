//! What a server or client author needs, in one `use arbor::prelude::*;`.
//!
//! It is not the whole API: the transport seam for transport authors (`Endpoint`,
//! `Parsed`, `Route`, ...), the supervision crate and the protocol's every type stay under
//! their modules (`arbor::server`, `arbor::otp`, `arbor::protocol`). Invariant: only names
//! a typical program uses, none of them the transport seam, and no two with one name
//! (the client's handler context stays `arbor::client::handler::RequestContext`, the bus's
//! stream `arbor::bus::Subscription`).
//!
//! The transport seam is not here (it is `arbor::server::exchange`, for transport authors):
//!
//! ```compile_fail
//! use arbor::prelude::*;
//! fn seam(_: Endpoint, _: Parsed) {}
//! ```

pub use crate::tool;
pub use crate::JsonSchema;
pub use arbor_protocol::error::McpError;
pub use serde::{Deserialize, Serialize};
pub use serde_json::{json, Value};

// The model types a handler returns or a client reads, without their module paths.
pub use arbor_protocol::model::common::Role;
pub use arbor_protocol::model::content::{ContentBlock, ResourceContents, TextContent};
pub use arbor_protocol::model::logging::LoggingLevel;
pub use arbor_protocol::model::prompts::{GetPromptResult, PromptMessage};
pub use arbor_protocol::model::resources::{ReadResourceResult, Resource, ResourceTemplate};
pub use arbor_protocol::model::subscriptions::SubscriptionFilter;
pub use arbor_protocol::model::tools::CallToolResult;

// Streams (`watch_resource`, `notifications`, listens) are read with `StreamExt::next`.
pub use futures::stream::{Stream, StreamExt};

// The one cancellation type (tokio-util's): a client call's `cancel_token`, a handler's
// `cx.cancellation_token()`, blocking work's token.
pub use arbor_otp::CancellationToken;

#[cfg(feature = "server")]
pub use arbor_server::bus::{Bus, BusEvent, BusMessage, LocalBus, SubscribeOptions};
#[cfg(feature = "server")]
pub use arbor_server::router::{completion, Json, NoArgs, PromptRoute, ResourceRoute, TemplateRoute, ToolRoute};
#[cfg(feature = "server")]
pub use arbor_server::tasks::{
    MemoryTaskStore, TaskChange, TaskConfig, TaskOwner, TaskPage, TaskRecord, TaskStore, TaskStoreError,
};
#[cfg(feature = "server")]
pub use arbor_server::tenant::{RateLimit, RestartBudget, TenantPolicy, TenantQuota, TenantRefusal};
#[cfg(feature = "server")]
pub use arbor_server::{
    Channel, ConnectOptions, Flow, InputRequired, ListChangeSender, ListChanges, ListKind, Principal, Reply,
    RequestContext, Router, RouterHandle, Server, ServerConfig, ServerHandler, Subscribe, SubscriptionCapabilities,
    SubscriptionHandler, ToolError,
};

#[cfg(feature = "redis")]
pub use arbor_bus::{RedisBus, RedisBusOptions};

#[cfg(feature = "http")]
pub use arbor_http::auth::{AuthConfig, JwtConfig, JwtVerifier};
#[cfg(feature = "http")]
pub use arbor_http::{HttpConfig, HttpServer, ShutdownHandle};

#[cfg(feature = "client")]
pub use arbor_client::{
    CallOptions, Client, ClientError, ClientOptions, HttpTarget, Notification, Progress, ResourceSubscription,
    ResourceWatch, ServerNotice, ServerTarget, StdioCommand, Subscription,
};

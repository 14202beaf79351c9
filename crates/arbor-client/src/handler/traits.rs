//! The user's side: [`ClientHandler`] and its three capability traits.
//!
//! Capabilities come from the callbacks. Rust cannot see whether a default method was
//! overridden, so each capability is its own trait whose callback is *required*, and the
//! handler hands the runtime its implementation (`fn sampling(&self) -> Option<&impl
//! SamplingHandler> { Some(self) }`). Declaring a capability without implementing its
//! callback does not compile, and implementing the callback without declaring it leaves
//! it unreachable and unadvertised: what is advertised is exactly what can answer.
//! Notification and log hooks advertise nothing, so they are plain default methods.
//!
//! Every callback is declared `-> impl Future<Output = T> + Send` and implemented with
//! plain `async fn`. None of these traits is object-safe; the runtime erases the handler
//! itself (`erased.rs`, one boxed future per callback).
//!
//! Not here: the checks around the callbacks (`safety/`) and when they run (`runtime.rs`).

use arbor_protocol::error::McpError;
use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitResult, ElicitationMode};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::roots::ListRootsResult;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, CreateMessageResult};
use serde_json::{Map, Value};
use std::future::Future;

use super::context::{ElicitationContext, NotificationContext, RequestContext};

/// What a client does when its server asks for input or tells it something.
///
/// ```
/// use arbor_client::handler::{ClientHandler, RequestContext, RootsHandler};
/// use arbor_protocol::error::McpError;
/// use arbor_protocol::model::roots::ListRootsResult;
///
/// struct Workspace;
///
/// impl RootsHandler for Workspace {
///     async fn list_roots(&self, _ctx: &RequestContext) -> Result<ListRootsResult, McpError> {
///         Ok(serde_json::from_value(serde_json::json!({"roots": [{"uri": "file:///work"}]})).unwrap())
///     }
/// }
///
/// impl ClientHandler for Workspace {
///     // Advertises `roots`, and nothing else.
///     fn roots(&self) -> Option<&impl RootsHandler> {
///         Some(self)
///     }
/// }
/// ```
pub trait ClientHandler: Send + Sync + 'static {
    /// Sampling (`sampling/createMessage`): return `Some(self)` to advertise and answer it.
    fn sampling(&self) -> Option<&impl SamplingHandler> {
        None::<&Unoffered>
    }

    /// Elicitation (`elicitation/create`): return `Some(self)` to advertise and answer it.
    fn elicitation(&self) -> Option<&impl ElicitationHandler> {
        None::<&Unoffered>
    }

    /// Roots (`roots/list`): return `Some(self)` to advertise and answer it.
    fn roots(&self) -> Option<&impl RootsHandler> {
        None::<&Unoffered>
    }

    /// Every server notification the client does not consume itself, one at a time in
    /// arrival order, outside the connection. `params` is `{}` when the server sent none.
    /// A panic is logged and skipped.
    fn handle_notification(
        &self,
        method: &str,
        params: &Map<String, Value>,
        ctx: &NotificationContext,
    ) -> impl Future<Output = ()> + Send {
        let _ = (method, params, ctx);
        async {}
    }

    /// Each server log entry (`notifications/message`) within the log rate, sanitised:
    /// `params` holds only `level`, `logger` and `data`. A panic is logged and skipped.
    fn handle_log(
        &self,
        level: LoggingLevel,
        params: &Map<String, Value>,
        ctx: &NotificationContext,
    ) -> impl Future<Output = ()> + Send {
        let _ = (level, params, ctx);
        async {}
    }
}

/// Answers `sampling/createMessage`: the approval point for using the client's model.
pub trait SamplingHandler: Send + Sync {
    /// Returns the model's message, or an error sent to the server as is (legacy) or
    /// ending the call (modern). The params were checked: `0 < maxTokens <= limit`,
    /// `includeContext` coerced unless allowed, tool loops bounded.
    fn handle_sampling(
        &self,
        params: CreateMessageRequestParams,
        ctx: &RequestContext,
    ) -> impl Future<Output = Result<CreateMessageResult, McpError>> + Send;

    /// Whether the model may be offered tools (advertises `sampling.tools`; without it a
    /// request carrying `tools` or `toolChoice` is refused -32602).
    fn supports_tools(&self) -> bool {
        false
    }
}

/// Answers `elicitation/create`: asks the user, through a form or a URL.
pub trait ElicitationHandler: Send + Sync {
    /// The modes this handler can present; a request in another mode is refused -32602
    /// before the callback runs. Read once, when the runtime starts.
    fn elicitation_modes(&self) -> Vec<ElicitationMode> {
        vec![ElicitationMode::Form]
    }

    /// Returns what the user did. A user declining is `Ok` with `action: decline`, not an
    /// error. The answer is checked before it is sent (a form accept must fit the schema).
    fn handle_elicitation(
        &self,
        params: ElicitRequestParams,
        ctx: &ElicitationContext,
    ) -> impl Future<Output = Result<ElicitResult, McpError>> + Send;
}

/// Answers `roots/list`.
pub trait RootsHandler: Send + Sync {
    /// The roots for this server (`ctx.server_id`). Only local `file://` URIs are sent,
    /// with `.`/`..` resolved; others are dropped.
    fn list_roots(&self, ctx: &RequestContext) -> impl Future<Output = Result<ListRootsResult, McpError>> + Send;

    /// Whether the client will send `notifications/roots/list_changed` (advertises
    /// `roots.listChanged`).
    fn list_changed(&self) -> bool {
        false
    }
}

/// The capability a [`ClientHandler`] did not declare: the type behind the defaults'
/// `None`, with no values, so none of its callbacks can ever run.
enum Unoffered {}

impl SamplingHandler for Unoffered {
    async fn handle_sampling(
        &self,
        _: CreateMessageRequestParams,
        _: &RequestContext,
    ) -> Result<CreateMessageResult, McpError> {
        match *self {}
    }
}

impl ElicitationHandler for Unoffered {
    async fn handle_elicitation(
        &self,
        _: ElicitRequestParams,
        _: &ElicitationContext,
    ) -> Result<ElicitResult, McpError> {
        match *self {}
    }
}

impl RootsHandler for Unoffered {
    async fn list_roots(&self, _: &RequestContext) -> Result<ListRootsResult, McpError> {
        match *self {}
    }
}

/// A handler with no callbacks: advertises nothing, ignores notifications.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHandler;

impl ClientHandler for NoHandler {}

//! The client handler: how a client answers its server's requests for input (sampling,
//! elicitation, roots) and hears its notifications and logs, in both protocol eras, with
//! ConduitMcp's limits and safety checks around every callback.
//!
//! The user implements [`ClientHandler`] (capabilities come from the callbacks: see
//! `traits.rs`), or builds one from closures with [`HandlerBuilder`]. The connection owns
//! one [`HandlerRuntime`] per server and hands it legacy server requests (`serve_request`, each answered from a supervised task),
//! cancellations (`cancel`), modern `input_required` rounds (`answer_inputs`, in the
//! calling task) and notifications (`notify`, to one worker in arrival order). This module
//! does not speak to the server: it hands back frames and values; the connection sends them.
//! When [`HostedTasks`] are enabled, a 2025-11-25 server may also ask for sampling or
//! elicitation as a task, and follow it with `tasks/*` (`hosted/`); the task status
//! notifications go out through the sender the connection sets (`set_outbound`).
//!
//! Invariant: a request for a capability the handler did not declare is refused before any
//! callback runs, and every input, in either era, passes the same checks before and after
//! its callback (`safety/`); a refusal is a typed error, never a crash.

mod builder;
mod context;
mod dispatch;
mod erased;
mod error;
mod hosted;
mod inputs;
mod limits;
mod notifications;
mod requests;
mod runtime;
pub mod safety;
mod traits;

use std::sync::Arc;

use arbor_protocol::jsonrpc::RequestId;
use serde_json::{Map, Value};

pub use builder::HandlerBuilder;
pub use context::{ElicitationContext, FieldInfo, NotificationContext, RequestContext, UrlTarget};
pub(crate) use erased::DynClientHandler;
pub use error::{HandlerStartError, InputHandlerError, InputKind};
pub use hosted::HostedTasks;
pub use limits::{ClientLimits, ElicitationLimits, RateLimit, SamplingLimits};
pub use runtime::HandlerRuntime;
pub use traits::{ClientHandler, ElicitationHandler, NoHandler, RootsHandler, SamplingHandler};

/// The era of the request being answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2025-11-25 and earlier: server→client JSON-RPC requests.
    Legacy,
    /// 2026-07-28: `input_required` results (MRTR).
    Modern,
}

/// User data attached to a client or a call, shown to callbacks.
pub type Assigns = Arc<Map<String, Value>>;

/// The link from a server request or input request to the in-flight call it belongs to.
/// Implemented by the client core.
pub trait CallLink: Send + Sync {
    /// Pauses the call's deadline until the returned guard is dropped (bounded by the
    /// call's max total timeout, which the client core enforces).
    fn pause_deadline(&self) -> Box<dyn std::any::Any + Send>;
    /// The call's assigns, if any.
    fn assigns(&self) -> Option<Assigns>;
    /// The call's request id as sent (legacy), for the context.
    fn request_id(&self) -> Option<RequestId>;
}

//! [`HandlerBuilder`]: a [`ClientHandler`] made of closures, for handlers too small to
//! deserve a type of their own.
//!
//! Each capability is declared by giving its closure, so the builder keeps the same
//! invariant as the traits: a capability is advertised exactly when there is a callback
//! to answer it. Closures take their context by value (a clone), so they can move it into
//! the future they return. This is sugar over the traits, not a second mechanism.

use std::future::Future;
use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitResult, ElicitationMode};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::roots::ListRootsResult;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, CreateMessageResult};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{Map, Value};

use super::context::{ElicitationContext, NotificationContext, RequestContext};
use super::traits::{ClientHandler, ElicitationHandler, RootsHandler, SamplingHandler};

type Callback<A, C, R> = Arc<dyn Fn(A, C) -> BoxFuture<'static, Result<R, McpError>> + Send + Sync>;
type Hook<A> = Arc<dyn Fn(A, Map<String, Value>, NotificationContext) -> BoxFuture<'static, ()> + Send + Sync>;

/// Builds a [`ClientHandler`] from closures; see the module docs.
///
/// ```
/// use arbor_client::handler::{ClientHandler, HandlerBuilder};
/// use arbor_protocol::model::roots::ListRootsResult;
///
/// let handler = HandlerBuilder::new()
///     .roots(|_ctx| async { Ok(ListRootsResult::new(vec![])) })
///     .build();
/// // `ClientHandler::` spelled out: the builder has methods of those names too.
/// assert!(ClientHandler::roots(&*handler).is_some() && ClientHandler::sampling(&*handler).is_none());
/// ```
#[derive(Default)]
pub struct HandlerBuilder {
    sampling: Option<SamplingFn>,
    elicitation: Option<ElicitationFn>,
    roots: Option<RootsFn>,
    notification: Option<Hook<String>>,
    log: Option<Hook<LoggingLevel>>,
}

impl std::fmt::Debug for HandlerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerBuilder")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.as_ref().map(|e| &e.modes))
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl HandlerBuilder {
    /// A builder with no callbacks (advertises nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers (and advertises) sampling.
    pub fn sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequestParams, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, McpError>> + Send + 'static,
    {
        self.sampling = Some(SamplingFn(Arc::new(move |p, c| f(p, c).boxed())));
        self
    }

    /// Answers (and advertises) elicitation in `modes`.
    pub fn elicitation<F, Fut>(mut self, modes: impl Into<Vec<ElicitationMode>>, f: F) -> Self
    where
        F: Fn(ElicitRequestParams, ElicitationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, McpError>> + Send + 'static,
    {
        self.elicitation = Some(ElicitationFn { modes: modes.into(), f: Arc::new(move |p, c| f(p, c).boxed()) });
        self
    }

    /// Answers (and advertises) roots.
    pub fn roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, McpError>> + Send + 'static,
    {
        self.roots = Some(RootsFn(Arc::new(move |(), c| f(c).boxed())));
        self
    }

    /// Hears server notifications (not logs).
    pub fn on_notification<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String, Map<String, Value>, NotificationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification = Some(Arc::new(move |m, p, c| f(m, p, c).boxed()));
        self
    }

    /// Hears server log entries, sanitised.
    pub fn on_log<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(LoggingLevel, Map<String, Value>, NotificationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.log = Some(Arc::new(move |l, p, c| f(l, p, c).boxed()));
        self
    }

    /// The handler, shared (for [`ClientOptions::handler_arc`](crate::ClientOptions::handler_arc)).
    pub fn build(self) -> Arc<HandlerBuilder> {
        Arc::new(self)
    }
}

struct SamplingFn(Callback<CreateMessageRequestParams, RequestContext, CreateMessageResult>);

struct ElicitationFn {
    modes: Vec<ElicitationMode>,
    f: Callback<ElicitRequestParams, ElicitationContext, ElicitResult>,
}

struct RootsFn(Callback<(), RequestContext, ListRootsResult>);

impl SamplingHandler for SamplingFn {
    async fn handle_sampling(
        &self,
        params: CreateMessageRequestParams,
        ctx: &RequestContext,
    ) -> Result<CreateMessageResult, McpError> {
        (self.0)(params, ctx.clone()).await
    }
}

impl ElicitationHandler for ElicitationFn {
    fn elicitation_modes(&self) -> Vec<ElicitationMode> {
        self.modes.clone()
    }

    async fn handle_elicitation(
        &self,
        params: ElicitRequestParams,
        ctx: &ElicitationContext,
    ) -> Result<ElicitResult, McpError> {
        (self.f)(params, ctx.clone()).await
    }
}

impl RootsHandler for RootsFn {
    async fn list_roots(&self, ctx: &RequestContext) -> Result<ListRootsResult, McpError> {
        (self.0)((), ctx.clone()).await
    }
}

impl ClientHandler for HandlerBuilder {
    fn sampling(&self) -> Option<&impl SamplingHandler> {
        self.sampling.as_ref()
    }

    fn elicitation(&self) -> Option<&impl ElicitationHandler> {
        self.elicitation.as_ref()
    }

    fn roots(&self) -> Option<&impl RootsHandler> {
        self.roots.as_ref()
    }

    async fn handle_notification(&self, method: &str, params: &Map<String, Value>, ctx: &NotificationContext) {
        if let Some(hook) = &self.notification {
            hook(method.to_owned(), params.clone(), ctx.clone()).await;
        }
    }

    async fn handle_log(&self, level: LoggingLevel, params: &Map<String, Value>, ctx: &NotificationContext) {
        if let Some(hook) = &self.log {
            hook(level, params.clone(), ctx.clone()).await;
        }
    }
}

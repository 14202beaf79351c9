//! [`DynClientHandler`]: the object-safe form of [`ClientHandler`], through which the
//! runtime holds a handler of any type.
//!
//! [`ClientHandler`] and its capability traits return `impl Future` (and `impl
//! SamplingHandler`, ...), so they have no `dyn` form; the runtime keeps an
//! `Arc<dyn DynClientHandler>` instead, and the blanket impl below boxes each callback's
//! future: one allocation per call, as `async_trait` made before. Crate-private: users
//! implement [`ClientHandler`] only.
//!
//! Invariant: a capability's callback is reachable (`Some`) exactly when the handler
//! declares the capability, as [`Declared::read`] records it.

use arbor_protocol::error::McpError;
use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitResult};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::roots::ListRootsResult;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, CreateMessageResult};
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::context::{ElicitationContext, NotificationContext, RequestContext};
use super::dispatch::Declared;
use super::traits::{ClientHandler, ElicitationHandler, RootsHandler, SamplingHandler};

type Answer<'a, T> = Option<BoxFuture<'a, Result<T, McpError>>>;

/// [`ClientHandler`] with every future boxed; see the module docs. A capability method
/// answers `None` when the handler does not declare the capability.
pub(crate) trait DynClientHandler: Send + Sync + 'static {
    fn declared(&self) -> Declared;
    fn sample<'a>(
        &'a self,
        params: CreateMessageRequestParams,
        ctx: &'a RequestContext,
    ) -> Answer<'a, CreateMessageResult>;
    fn elicit<'a>(&'a self, params: ElicitRequestParams, ctx: &'a ElicitationContext) -> Answer<'a, ElicitResult>;
    fn list_roots<'a>(&'a self, ctx: &'a RequestContext) -> Answer<'a, ListRootsResult>;
    fn handle_notification<'a>(
        &'a self,
        method: &'a str,
        params: &'a Map<String, Value>,
        ctx: &'a NotificationContext,
    ) -> BoxFuture<'a, ()>;
    fn handle_log<'a>(
        &'a self,
        level: LoggingLevel,
        params: &'a Map<String, Value>,
        ctx: &'a NotificationContext,
    ) -> BoxFuture<'a, ()>;
}

impl<H: ClientHandler> DynClientHandler for H {
    fn declared(&self) -> Declared {
        Declared::read(self)
    }

    fn sample<'a>(
        &'a self,
        params: CreateMessageRequestParams,
        ctx: &'a RequestContext,
    ) -> Answer<'a, CreateMessageResult> {
        let handler = self.sampling()?;
        Some(Box::pin(handler.handle_sampling(params, ctx)))
    }

    fn elicit<'a>(&'a self, params: ElicitRequestParams, ctx: &'a ElicitationContext) -> Answer<'a, ElicitResult> {
        let handler = self.elicitation()?;
        Some(Box::pin(handler.handle_elicitation(params, ctx)))
    }

    fn list_roots<'a>(&'a self, ctx: &'a RequestContext) -> Answer<'a, ListRootsResult> {
        let handler = self.roots()?;
        Some(Box::pin(handler.list_roots(ctx)))
    }

    fn handle_notification<'a>(
        &'a self,
        method: &'a str,
        params: &'a Map<String, Value>,
        ctx: &'a NotificationContext,
    ) -> BoxFuture<'a, ()> {
        Box::pin(ClientHandler::handle_notification(self, method, params, ctx))
    }

    fn handle_log<'a>(
        &'a self,
        level: LoggingLevel,
        params: &'a Map<String, Value>,
        ctx: &'a NotificationContext,
    ) -> BoxFuture<'a, ()> {
        Box::pin(ClientHandler::handle_log(self, level, params, ctx))
    }
}

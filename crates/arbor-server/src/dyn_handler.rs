//! [`DynServerHandler`]: the object-safe twin of [`ServerHandler`], through which the
//! runtime holds a handler of any type.
//!
//! [`ServerHandler`]'s callbacks return `impl Future`, so the trait has no `dyn` form; the
//! runtime (`Shared`, the built-in subscription handler, request and notification tasks)
//! keeps an `Arc<dyn DynServerHandler>` instead, and the blanket impl below boxes each
//! callback's future: one allocation per call, as `async_trait` made before, the box
//! allocated first and the future made in it (`pin_in_place`: `tools/call`'s future is
//! hundreds of bytes, and `Box::pin` copied all of them into the fresh box). This is not
//! a second trait for users: it is crate-private and implemented for every
//! `ServerHandler` and nothing else.
//!
//! Invariant: each method forwards to the `ServerHandler` method of the same name and
//! adds nothing but the box.

use std::sync::Arc;

use arbor_otp::pin_in_place;
use arbor_protocol::era::http::ParamHeader;
use arbor_protocol::error::McpError;
use arbor_protocol::methods::ClientNotification;
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::model::common::PaginatedRequestParams;
use arbor_protocol::model::completion::{CompleteRequestParams, CompleteResult};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use arbor_protocol::model::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
    ResourceSubscriptionParams,
};
use arbor_protocol::model::skills::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams, ReadDirectoryResult,
};
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};
use futures::future::BoxFuture;

use crate::context::{ConnectionInfo, RequestContext};
use crate::handler::{ListChanges, ResourceUpdates, ServerHandler, ServerInfo};
use crate::reply::Reply;
use crate::tasks::TaskPolicy;

type Answer<'a, T> = BoxFuture<'a, Result<T, McpError>>;

/// [`ServerHandler`] with every future boxed; see the module docs.
pub(crate) trait DynServerHandler: Send + Sync + 'static {
    fn info(&self) -> ServerInfo;
    fn capabilities(&self) -> ServerCapabilities;
    fn tool_terms(&self, tool: &str) -> crate::handler::ToolTerms;
    fn tool_param_headers(&self, tool: &str) -> Option<Arc<[ParamHeader]>>;
    fn tool_scopes(&self, tool: &str) -> Option<Arc<[String]>>;
    fn tool_task_policy(&self, tool: &str) -> TaskPolicy;
    fn list_changes(&self) -> Option<ListChanges>;
    fn resource_updates(&self) -> Option<ResourceUpdates>;
    fn list_tools(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListToolsResult>;
    /// The params boxed, as the request holds them: unboxed only into the handler's call,
    /// so they are not copied (384 bytes) on the way.
    fn call_tool(&self, params: Box<CallToolRequestParams>, cx: RequestContext) -> Answer<'_, Reply<CallToolResult>>;
    fn list_resources(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> Answer<'_, Reply<ReadResourceResult>>;
    fn subscribe(&self, params: ResourceSubscriptionParams, cx: RequestContext) -> Answer<'_, ()>;
    fn unsubscribe(&self, params: ResourceSubscriptionParams, cx: RequestContext) -> Answer<'_, ()>;
    fn list_skills(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListSkillsResult>;
    fn get_skill(&self, params: GetSkillRequestParams, cx: RequestContext) -> Answer<'_, GetSkillResult>;
    fn read_directory(&self, params: ReadDirectoryRequestParams, cx: RequestContext)
        -> Answer<'_, ReadDirectoryResult>;
    fn list_prompts(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListPromptsResult>;
    fn get_prompt(&self, params: GetPromptRequestParams, cx: RequestContext) -> Answer<'_, Reply<GetPromptResult>>;
    fn complete(&self, params: CompleteRequestParams, cx: RequestContext) -> Answer<'_, CompleteResult>;
    fn set_log_level(&self, level: LoggingLevel, connection: ConnectionInfo) -> Answer<'_, ()>;
    fn on_notification(&self, notification: ClientNotification, connection: ConnectionInfo) -> BoxFuture<'_, ()>;
}

impl<H: ServerHandler> DynServerHandler for H {
    fn info(&self) -> ServerInfo {
        ServerHandler::info(self)
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerHandler::capabilities(self)
    }

    fn tool_terms(&self, tool: &str) -> crate::handler::ToolTerms {
        ServerHandler::tool_terms(self, tool)
    }

    fn tool_param_headers(&self, tool: &str) -> Option<Arc<[ParamHeader]>> {
        ServerHandler::tool_param_headers(self, tool)
    }

    fn tool_scopes(&self, tool: &str) -> Option<Arc<[String]>> {
        ServerHandler::tool_scopes(self, tool)
    }

    fn tool_task_policy(&self, tool: &str) -> TaskPolicy {
        ServerHandler::tool_task_policy(self, tool)
    }

    fn list_changes(&self) -> Option<ListChanges> {
        ServerHandler::list_changes(self)
    }

    fn resource_updates(&self) -> Option<ResourceUpdates> {
        ServerHandler::resource_updates(self)
    }

    fn list_tools(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListToolsResult> {
        pin_in_place(|| ServerHandler::list_tools(self, params, cx))
    }

    fn call_tool(&self, params: Box<CallToolRequestParams>, cx: RequestContext) -> Answer<'_, Reply<CallToolResult>> {
        pin_in_place(|| ServerHandler::call_tool(self, *params, cx))
    }

    fn list_resources(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListResourcesResult> {
        pin_in_place(|| ServerHandler::list_resources(self, params, cx))
    }

    fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        pin_in_place(|| ServerHandler::list_resource_templates(self, params, cx))
    }

    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> Answer<'_, Reply<ReadResourceResult>> {
        pin_in_place(|| ServerHandler::read_resource(self, params, cx))
    }

    fn subscribe(&self, params: ResourceSubscriptionParams, cx: RequestContext) -> Answer<'_, ()> {
        pin_in_place(|| ServerHandler::subscribe(self, params, cx))
    }

    fn unsubscribe(&self, params: ResourceSubscriptionParams, cx: RequestContext) -> Answer<'_, ()> {
        pin_in_place(|| ServerHandler::unsubscribe(self, params, cx))
    }

    fn list_skills(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListSkillsResult> {
        pin_in_place(|| ServerHandler::list_skills(self, params, cx))
    }

    fn get_skill(&self, params: GetSkillRequestParams, cx: RequestContext) -> Answer<'_, GetSkillResult> {
        pin_in_place(|| ServerHandler::get_skill(self, params, cx))
    }

    fn read_directory(
        &self,
        params: ReadDirectoryRequestParams,
        cx: RequestContext,
    ) -> Answer<'_, ReadDirectoryResult> {
        pin_in_place(|| ServerHandler::read_directory(self, params, cx))
    }

    fn list_prompts(&self, params: PaginatedRequestParams, cx: RequestContext) -> Answer<'_, ListPromptsResult> {
        pin_in_place(|| ServerHandler::list_prompts(self, params, cx))
    }

    fn get_prompt(&self, params: GetPromptRequestParams, cx: RequestContext) -> Answer<'_, Reply<GetPromptResult>> {
        pin_in_place(|| ServerHandler::get_prompt(self, params, cx))
    }

    fn complete(&self, params: CompleteRequestParams, cx: RequestContext) -> Answer<'_, CompleteResult> {
        pin_in_place(|| ServerHandler::complete(self, params, cx))
    }

    fn set_log_level(&self, level: LoggingLevel, connection: ConnectionInfo) -> Answer<'_, ()> {
        pin_in_place(|| ServerHandler::set_log_level(self, level, connection))
    }

    fn on_notification(&self, notification: ClientNotification, connection: ConnectionInfo) -> BoxFuture<'_, ()> {
        pin_in_place(|| ServerHandler::on_notification(self, notification, connection))
    }
}

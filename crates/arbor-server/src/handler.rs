//! The raw handler: one callback per protocol operation.
//!
//! [`ServerHandler`] is the lowest level a server author writes against, the equivalent of
//! ExMCP's handler callbacks and the C# SDK's handler set, for servers whose capabilities
//! are fully dynamic. The declarative [`Router`](crate::router::Router) is one
//! implementation of it. This module is not the runtime: it never sees JSON-RPC ids,
//! sessions or eras; the runtime decodes, checks terms, enforces limits and calls these
//! methods from a supervised request task.
//!
//! Invariant: a callback the author did not implement answers as if the server did not
//! offer it (-32601 for requests), and [`ServerHandler::capabilities`] must advertise only
//! what is served.

use crate::context::{ConnectionInfo, RequestContext};
use crate::reply::Reply;
use crate::tasks::TaskPolicy;
use arbor_protocol::error::McpError;
use arbor_protocol::methods::{ClientNotification, MethodName};
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::model::common::{Implementation, PaginatedRequestParams};
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
use std::future::Future;
use std::time::Duration;

pub use crate::list_changes::{ListChangeSender, ListChanges};
pub use crate::resource_updates::{ResourceUpdateSender, ResourceUpdates};

/// What the server says about itself in `initialize` and `server/discover`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerInfo {
    /// Name, version and the optional display fields.
    pub implementation: Implementation,
    /// Optional instructions for the model using this server.
    pub instructions: Option<String>,
}

impl ServerInfo {
    /// A server called `name` at `version`, with no instructions.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerInfo { implementation: Implementation::new(name, version), instructions: None }
    }
}

/// Which list changed, for `notifications/*/list_changed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// The tool list.
    Tools,
    /// The prompt list.
    Prompts,
    /// The resource list (resources and templates).
    Resources,
}

fn not_offered(method: MethodName) -> McpError {
    McpError::method_not_found(method.as_str())
}

/// A tool's terms for one call ([`ServerHandler::tool_terms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolTerms {
    /// The call's deadline, overriding the runtime's default
    /// ([`ServerHandler::tool_deadline`]).
    pub deadline: Option<Duration>,
    /// Whether the call may answer "input required" ([`ServerHandler::tool_asks_input`]).
    pub asks_input: bool,
}

impl ToolTerms {
    /// Terms with `deadline` and `asks_input`.
    pub fn new(deadline: Option<Duration>, asks_input: bool) -> ToolTerms {
        ToolTerms { deadline, asks_input }
    }
}

/// One callback per client→server operation. Every method has a default that answers
/// "not offered", so an implementation overrides only what it serves.
///
/// Each request callback runs in its own supervised task: it may await freely, it is
/// stopped at its deadline or on cancellation (its future is dropped), and a panic in
/// it costs only its request a -32603 error.
///
/// The callbacks are declared `fn name(..) -> impl Future<Output = T> + Send`, so the
/// `Send` bound is part of the contract; implement them with plain `async fn`, no
/// attribute. The trait is not object-safe: the runtime erases the handler itself (one
/// boxed future per call), and [`Server::from_arc`](crate::Server::from_arc) takes an
/// `Arc<H>` of any handler type.
///
/// ```
/// use arbor_server::{ListChanges, ListKind, RequestContext, Server, ServerHandler, ServerInfo};
/// use arbor_protocol::error::McpError;
/// use arbor_protocol::model::capabilities::{ServerCapabilities, ToolsCapability};
/// use arbor_protocol::model::common::PaginatedRequestParams;
/// use arbor_protocol::model::tools::ListToolsResult;
///
/// struct Empty {
///     changes: arbor_server::ListChangeSender,
/// }
///
/// impl ServerHandler for Empty {
///     fn info(&self) -> ServerInfo {
///         ServerInfo::new("empty", "1.0.0")
///     }
///
///     fn capabilities(&self) -> ServerCapabilities {
///         ServerCapabilities::default().with_tools(ToolsCapability::default().with_list_changed(true))
///     }
///
///     fn list_changes(&self) -> Option<ListChanges> {
///         Some(self.changes.subscribe())
///     }
///
///     async fn list_tools(
///         &self,
///         _params: PaginatedRequestParams,
///         _cx: RequestContext,
///     ) -> Result<ListToolsResult, McpError> {
///         Ok(ListToolsResult::default())
///     }
/// }
///
/// let (changes, _unused) = ListChanges::channel();
/// let server = Server::new(Empty { changes: changes.clone() });
/// changes.send(ListKind::Tools); // heard by every client that asked for tool list changes
/// # drop(server);
/// ```
pub trait ServerHandler: Send + Sync + 'static {
    /// The server's identity and instructions. Read once, when the `Server` is built.
    fn info(&self) -> ServerInfo;

    /// The capabilities to advertise. Must match what the overridden callbacks serve.
    /// Read once, when the `Server` is built: every client is told the same, and a
    /// request for a capability not advertised here is answered -32601 by the runtime.
    /// A tenant's own handler ([`Server::set_tenant_handler`](crate::Server::set_tenant_handler))
    /// is never asked: it serves within the server's.
    fn capabilities(&self) -> ServerCapabilities;

    /// A deadline for one `tools/call` of `tool` that overrides the runtime's default.
    /// Called by the connection actor for every `tools/call`, so it must be quick and
    /// must not block (a panic in it falls back to the default).
    fn tool_deadline(&self, tool: &str) -> Option<Duration> {
        let _ = tool;
        None
    }

    /// What the runtime asks of a tool for every `tools/call`, in one call: its
    /// [`tool_deadline`](ServerHandler::tool_deadline) and whether it
    /// [asks for input](ServerHandler::tool_asks_input). The default asks the two; a
    /// handler that answers both from one lookup overrides it (a [`Router`](crate::Router)
    /// does), and must answer as the two would. Quick and non-blocking, as they are (a
    /// panic in it counts as no deadline and "may ask").
    fn tool_terms(&self, tool: &str) -> ToolTerms {
        ToolTerms { deadline: self.tool_deadline(tool), asks_input: self.tool_asks_input(tool) }
    }

    /// The `x-mcp-header` annotations of tool `tool`'s input schema (2026-07-28 HTTP:
    /// arguments mirrored into `Mcp-Param-*` headers, which the transport checks). Called
    /// for every HTTP `tools/call`, so it must be quick: answer from a cache, not by
    /// walking a schema. `None` (the default) means the tool has none.
    fn tool_param_headers(&self, tool: &str) -> Option<std::sync::Arc<[arbor_protocol::era::http::ParamHeader]>> {
        let _ = tool;
        None
    }

    /// The OAuth scopes a `tools/call` of `tool` needs besides the server's own. An
    /// authorizing transport asks before dispatch, for every call with a verified token,
    /// so it must be quick (answer from a cache). `None` (the default): none.
    fn tool_scopes(&self, tool: &str) -> Option<std::sync::Arc<[String]>> {
        let _ = tool;
        None
    }

    /// Whether a call of `tool` may answer "input required" ([`Reply::InputRequired`]). A
    /// 2026-07-28 call that may keeps a copy of its arguments, to bind the sealed state to
    /// them. Called for every 2026-07-28 `tools/call`, so it must be quick. `true` (the
    /// default) is always safe; answering `false` for a tool that does ask makes its
    /// "input required" answer a -32603 error.
    fn tool_asks_input(&self, tool: &str) -> bool {
        let _ = tool;
        true
    }

    /// Whether calls of `tool` may run as tasks (the `io.modelcontextprotocol/tasks`
    /// extension; see [`crate::tasks`]). Called for every 2026-07-28 `tools/call`, so it
    /// must be quick (a panic in it counts as [`TaskPolicy::FORBIDDEN`]). A server whose
    /// tools allow tasks must also advertise the extension in
    /// [`capabilities`](ServerHandler::capabilities) (`extensions["io.modelcontextprotocol/tasks"]`).
    fn tool_task_policy(&self, tool: &str) -> TaskPolicy {
        let _ = tool;
        TaskPolicy::FORBIDDEN
    }

    /// Changes to the tool, prompt and resource lists, for `list_changed` notifications.
    /// `None` when the lists never change at run time. Called once, when the server starts
    /// serving: each change is published on the server's bus, whose subscription streams
    /// announce it to listens that asked and to initialized legacy sessions, if the
    /// capability advertised `listChanged` for that list. A tenant's own handler
    /// ([`Server::set_tenant_handler`](crate::Server::set_tenant_handler)) is asked when it
    /// is swapped in (or when the server starts), and its changes reach that tenant's
    /// clients only, until it is swapped out.
    ///
    /// Return a fresh [`ListChanges`] of a [`ListChangeSender`] the handler keeps
    /// ([`ListChangeSender::subscribe`]).
    fn list_changes(&self) -> Option<ListChanges> {
        None
    }

    /// The resources whose contents change, as they change: the runtime sends
    /// `notifications/resources/updated` for each URI to its subscribers, as
    /// [`Server::notify_resource_updated`](crate::Server::notify_resource_updated) does.
    /// Read once, when the server starts; the [`Router`](crate::Router) announces its
    /// watched skill folders' changes here. Only the server's own handler is heard (not a
    /// tenant's, see [`Server::set_tenant_handler`](crate::Server::set_tenant_handler)).
    fn resource_updates(&self) -> Option<ResourceUpdates> {
        None
    }

    /// `tools/list`.
    fn list_tools(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ListTools)) }
    }

    /// `tools/call`. A tool that fails answers `Ok` with `isError: true`; `Err` is for
    /// protocol errors (unknown tool, invalid params).
    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<Reply<CallToolResult>, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::CallTool)) }
    }

    /// `resources/list`.
    fn list_resources(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ListResources)) }
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ListResourceTemplates)) }
    }

    /// `resources/read`.
    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<Reply<ReadResourceResult>, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ReadResource)) }
    }

    /// `resources/subscribe` (legacy era), and each URI of a 2026-07-28 listen's
    /// `resourceSubscriptions`. The runtime opens the subscription stream (see
    /// [`crate::subscription`]); this callback may refuse it (a refused listen URI is left
    /// out of the acknowledged filter).
    fn subscribe(
        &self,
        params: ResourceSubscriptionParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<(), McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::Subscribe)) }
    }

    /// `resources/unsubscribe` (legacy era). The runtime ends the URI's subscription stream
    /// afterwards. The default agrees: it is only called when the server advertises
    /// `resources.subscribe`, and unsubscribing is always harmless.
    fn unsubscribe(
        &self,
        params: ResourceSubscriptionParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<(), McpError>> + Send {
        let _ = (params, cx);
        async { Ok(()) }
    }

    /// `skills/list` (the skills extension): offered once `capabilities` declares
    /// `extensions["io.modelcontextprotocol/skills"]`.
    fn list_skills(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<ListSkillsResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ListSkills)) }
    }

    /// `skills/get` (the skills extension). A URI that is not a served skill is -32602.
    fn get_skill(
        &self,
        params: GetSkillRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<GetSkillResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::GetSkill)) }
    }

    /// `resources/directory/read` (the skills extension): offered once the extension's
    /// settings say `"directoryRead": true`.
    fn read_directory(
        &self,
        params: ReadDirectoryRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<ReadDirectoryResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ReadDirectory)) }
    }

    /// `prompts/list`.
    fn list_prompts(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::ListPrompts)) }
    }

    /// `prompts/get`.
    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<Reply<GetPromptResult>, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::GetPrompt)) }
    }

    /// `completion/complete`.
    fn complete(
        &self,
        params: CompleteRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + Send {
        let _ = (params, cx);
        async { Err(not_offered(MethodName::Complete)) }
    }

    /// The client chose a log level (legacy `logging/setLevel`). The runtime already
    /// applies the level to [`RequestContext::log`]; this is for servers that log elsewhere too.
    fn set_log_level(
        &self,
        level: LoggingLevel,
        connection: ConnectionInfo,
    ) -> impl Future<Output = Result<(), McpError>> + Send {
        let _ = (level, connection);
        async { Ok(()) }
    }

    /// A client notification the runtime does not consume itself (it consumes
    /// `notifications/initialized` and `notifications/cancelled`). Runs one at a time per
    /// connection, in arrival order.
    fn on_notification(
        &self,
        notification: ClientNotification,
        connection: ConnectionInfo,
    ) -> impl Future<Output = ()> + Send {
        let _ = (notification, connection);
        async {}
    }
}

//! The declarative handler level: a [`Router`] of plain async functions with typed
//! arguments, which implements [`ServerHandler`] for the runtime.
//!
//! Each tool, prompt, resource, resource template and completion is registered explicitly,
//! name and description next to the function, axum-style. Schemas come from the argument
//! and output types (schemars); arguments are validated before a tool runs and typed
//! output before it is sent; lists are paged with opaque cursors in registration order;
//! capabilities are derived from what is registered; and a [`RouterHandle`] changes the
//! lists while serving, announcing each change for `notifications/*/list_changed`.
//!
//! The router is not the runtime: it never sees JSON-RPC ids, eras or connections, and it
//! does not stamp `resultType` or the 2026-07-28 cache fields (`ttlMs`, `cacheScope`).
//! Those depend on the request's revision and are required of every cacheable result,
//! whichever handler produced it, so the runtime writes them on its way out (its
//! `ServerConfig` holds the defaults), keeping any value a handler set and removing them
//! for legacy revisions. The router sets them only where an author asked for a
//! resource's own hint ([`ResourceRoute::cache_hint`]).
//!
//! Invariant: nothing is advertised that is not served, and what is served stays
//! advertised: a capability appears once something of its kind is registered (or
//! [`Router::advertise`] asks for it) and is answered from then on, even when empty.

pub mod completion;
mod error;
pub(crate) mod handle;
mod handler_fn;
mod pagination;
mod prompt;
mod registry;
mod resource;
mod result;
mod schema;
mod tool;
mod uri_template;

#[cfg(test)]
mod tests;

pub use error::{RouteKind, RouterError, SchemaPart, ToolError};
pub use handle::RouterHandle;
pub use handler_fn::{HandlerFn, ReadFn, WithContext, WithoutContext};
pub use prompt::PromptRoute;
pub use resource::{ResourceRoute, TemplateRoute};
pub use result::{IntoPromptResult, IntoReadResult, IntoStructuredResult, IntoToolResult, Json, ReadTarget};
pub use schema::NoArgs;
/// The schemars version the router derives schemas with. Derive
/// `schemars::JsonSchema` with the same major version (1.x).
pub use schemars;
pub use tool::{Tool, ToolRoute};

use crate::context::RequestContext;
use crate::handler::{ListChanges, ListKind, ServerHandler, ServerInfo};
use crate::reply::Reply;
use crate::tasks::TaskPolicy;
use arbor_protocol::era::http::ParamHeader;
use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::capabilities::{
    PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability,
};
use arbor_protocol::model::common::{JsonObject, PaginatedRequestParams};
use arbor_protocol::model::completion::{CompleteRequestParams, CompleteResult, Reference};
use arbor_protocol::model::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use arbor_protocol::model::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
    ResourceSubscriptionParams,
};
use arbor_protocol::model::skills::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams, ReadDirectoryResult,
    DIRECTORY_READ, SKILLS_EXTENSION,
};
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};
use completion::{CompletionRequest, IntoCompletion};
use futures::future::BoxFuture;
use handle::{Shared, COMPLETIONS, PROMPTS, RESOURCES, SKILLS, TASKS, TOOLS};
use pagination::ListId;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The default number of entries on one page of a list.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The default cap on the URIs the router reads, in bytes. See [`Router::max_uri_bytes`].
pub const DEFAULT_MAX_URI_BYTES: usize = 16 * 1024;

/// A server made of registered async functions. Implements [`ServerHandler`].
///
/// ```
/// use arbor_server::router::{Router, ToolError};
/// use arbor_server::RequestContext;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddArgs {
///     /// The first addend.
///     a: i64,
///     /// The second addend.
///     b: i64,
/// }
///
/// async fn add(args: AddArgs, _cx: RequestContext) -> Result<String, ToolError> {
///     let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
///     Ok(sum.to_string())
/// }
///
/// let router = Router::new("calculator", "1.0.0")
///     .instructions("Arithmetic on 64-bit integers.")
///     .tool("add", "Add two numbers", add);
/// ```
///
/// Tools with typed output, prompts, resources and templates register the same way
/// ([`Router::tool_with_output`], [`Router::prompt`], [`Router::resource`],
/// [`Router::resource_template`]); the `*_route` methods take a route builder for the
/// less common metadata (titles, icons, annotations, deadlines, completions).
///
/// Cloning a router is cheap, and the clones share their lists: what is registered through
/// one is served by all (the page size, the URI cap and the subscription flag are each clone's own).
/// A [`fork`](Router::fork) has lists of its own.
#[derive(Clone, Debug)]
pub struct Router {
    info: ServerInfo,
    page_size: usize,
    max_uri_bytes: usize,
    pub(crate) subscriptions: bool,
    hide_unauthorized: bool,
    pub(crate) shared: Arc<Shared>,
}

impl Router {
    /// A router for a server called `name` at `version`, with nothing registered.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Router::with_info(ServerInfo::new(name, version))
    }

    /// A router with the given identity, with nothing registered.
    pub fn with_info(info: ServerInfo) -> Self {
        Router {
            info,
            page_size: DEFAULT_PAGE_SIZE,
            max_uri_bytes: DEFAULT_MAX_URI_BYTES,
            subscriptions: false,
            hide_unauthorized: false,
            shared: Arc::default(),
        }
    }

    /// Instructions for the model using this server.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.info.instructions = Some(instructions.into());
        self
    }

    /// How many entries one page of a list holds (default [`DEFAULT_PAGE_SIZE`]).
    ///
    /// # Panics
    ///
    /// If `size` is 0.
    pub fn page_size(mut self, size: usize) -> Self {
        assert!(size > 0, "a page holds at least one entry");
        self.page_size = size;
        self
    }

    /// The longest URI, in bytes, that `resources/read`, `resources/subscribe`,
    /// `resources/unsubscribe`, the URIs of a 2026-07-28 listen and a `completion/complete`
    /// of a `ref/resource` may name (default [`DEFAULT_MAX_URI_BYTES`], 16 KiB). A longer
    /// one is refused with -32602 naming its length and the cap (never the URI) before
    /// anything is looked up or matched. Matching is linear in the URI's length, so the
    /// cap bounds the work and the error text; it is not what makes matching cheap.
    ///
    /// # Panics
    ///
    /// If `max` is 0.
    pub fn max_uri_bytes(mut self, max: usize) -> Self {
        assert!(max > 0, "a URI holds at least one byte");
        self.max_uri_bytes = max;
        self
    }

    /// Accepts `resources/subscribe` (legacy revisions) for every registered resource and
    /// advertises `resources.subscribe`. The runtime keeps the subscriptions and delivers
    /// `notifications/resources/updated`; without this, subscribing is -32601.
    pub fn subscriptions(mut self) -> Self {
        self.subscriptions = true;
        self
    }

    /// Leaves out of a principal's `tools/list` the tools its token's scopes do not
    /// allow it to call ([`ToolRoute::scopes`], judged with the server's scope
    /// hierarchy). Requests without a verified principal see every tool. A page may then
    /// hold fewer tools than the page size; its cursor still leads on.
    pub fn hide_unauthorized_tools(mut self) -> Self {
        self.hide_unauthorized = true;
        self
    }

    /// Advertises `kind` even while nothing of it is registered, for a dynamic router that
    /// fills the list at run time through its [`RouterHandle`].
    pub fn advertise(self, kind: ListKind) -> Self {
        self.shared.mark_served(match kind {
            ListKind::Tools => TOOLS,
            ListKind::Prompts => PROMPTS,
            ListKind::Resources => RESOURCES,
        });
        self
    }

    /// A router with its own copy of this one's lists: the same tools, prompts, resources
    /// and templates now, and settings, but whatever is registered or removed on either
    /// afterwards (builders, [`RouterHandle`]s) leaves the other as it was. A dynamic
    /// router's fork is dynamic too, and announces its own changes only. For a tenant's
    /// tool set layered on a shared one (see
    /// [`Server::set_tenant_handler`](crate::Server::set_tenant_handler)):
    ///
    /// ```
    /// # use arbor_server::router::{Router, NoArgs};
    /// async fn ping(_: NoArgs) -> &'static str { "pong" }
    /// async fn audit(_: NoArgs) -> &'static str { "audited" }
    ///
    /// let shared = Router::new("demo", "1.0.0").tool("ping", "Answers pong", ping);
    /// let extra = shared.fork().tool("audit", "Audits", audit);
    /// let hidden = shared.fork().without_tool("ping");
    /// assert_eq!(extra.handle().tool_names(), ["ping", "audit"]);
    /// assert!(hidden.handle().tool_names().is_empty());
    /// assert_eq!(shared.handle().tool_names(), ["ping"]);
    /// ```
    pub fn fork(&self) -> Router {
        Router { shared: Arc::new(self.shared.fork()), ..self.clone() }
    }

    /// Leaves the tool `name` out (nothing happens if there is none): for a
    /// [`fork`](Router::fork) that hides some of the tools it started with. Like every
    /// builder, it edits the lists this router shares with its clones.
    pub fn without_tool(self, name: &str) -> Self {
        self.shared.remove_tool(name);
        self
    }

    /// A handle for changing the lists while serving. The router becomes dynamic: it
    /// advertises `listChanged` and announces every change (see [`RouterHandle`]).
    pub fn handle(&self) -> RouterHandle {
        self.shared.dynamic.store(true, Ordering::Release);
        RouterHandle { shared: Arc::clone(&self.shared) }
    }

    /// Registers the tool `name`, described by `description`, calling `handler` with its
    /// arguments parsed as `A`. See [`ToolRoute::new`].
    ///
    /// # Panics
    ///
    /// If a tool of that name is already registered, or as [`ToolRoute::new`].
    pub fn tool<A, H, M>(self, name: impl Into<String>, description: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoToolResult,
    {
        self.try_tool(name, description, handler).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::tool`], returning the [`RouterError`] instead of panicking: a duplicate
    /// name, or an argument type whose schema cannot be used ([`ToolRoute::try_new`]).
    pub fn try_tool<A, H, M>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoToolResult,
    {
        self.try_tool_route(ToolRoute::try_new(name, handler)?.description(description))
    }

    /// Registers a tool with a typed output (`outputSchema` and `structuredContent`). See
    /// [`ToolRoute::with_output`].
    ///
    /// # Panics
    ///
    /// If a tool of that name is already registered, or as [`ToolRoute::with_output`].
    pub fn tool_with_output<A, H, M>(self, name: impl Into<String>, description: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoStructuredResult,
    {
        self.try_tool_with_output(name, description, handler).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::tool_with_output`], returning the [`RouterError`] instead of panicking.
    pub fn try_tool_with_output<A, H, M>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoStructuredResult,
    {
        self.try_tool_route(ToolRoute::try_with_output(name, handler)?.description(description))
    }

    /// Registers a tool built with [`ToolRoute`].
    ///
    /// # Panics
    ///
    /// If a tool of that name is already registered.
    pub fn tool_route(self, route: ToolRoute) -> Self {
        self.try_tool_route(route).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::tool_route`], returning [`RouterError::Duplicate`] (and registering
    /// nothing) instead of panicking when a tool of that name is already registered.
    pub fn try_tool_route(self, route: ToolRoute) -> Result<Self, RouterError> {
        self.shared.add_tool(route, false)?;
        Ok(self)
    }

    /// Registers the prompt `name`, calling `handler` with its arguments parsed as `A`.
    ///
    /// # Panics
    ///
    /// If a prompt of that name is already registered, or as [`PromptRoute::new`].
    pub fn prompt<A, H, M>(self, name: impl Into<String>, description: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoPromptResult,
    {
        self.try_prompt(name, description, handler).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::prompt`], returning the [`RouterError`] instead of panicking: a duplicate
    /// name, or an argument type whose schema cannot be used ([`PromptRoute::try_new`]).
    pub fn try_prompt<A, H, M>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoPromptResult,
    {
        self.try_prompt_route(PromptRoute::try_new(name, handler)?.description(description))
    }

    /// Registers a prompt built with [`PromptRoute`].
    ///
    /// # Panics
    ///
    /// If a prompt of that name is already registered.
    pub fn prompt_route(self, route: PromptRoute) -> Self {
        self.try_prompt_route(route).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::prompt_route`], returning [`RouterError::Duplicate`] (and registering
    /// nothing) instead of panicking when a prompt of that name is already registered.
    pub fn try_prompt_route(self, route: PromptRoute) -> Result<Self, RouterError> {
        self.shared.add_prompt(route, false)?;
        Ok(self)
    }

    /// Registers the static resource at `uri`, read by `reader`.
    ///
    /// # Panics
    ///
    /// If a resource with that URI is already registered.
    pub fn resource<H, M>(
        self,
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        reader: H,
    ) -> Self
    where
        H: ReadFn<M>,
        H::Output: IntoReadResult,
    {
        self.try_resource(uri, name, description, mime_type, reader).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::resource`], returning [`RouterError::Duplicate`] instead of panicking.
    pub fn try_resource<H, M>(
        self,
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        reader: H,
    ) -> Result<Self, RouterError>
    where
        H: ReadFn<M>,
        H::Output: IntoReadResult,
    {
        self.try_resource_route(ResourceRoute::new(uri, name, reader).description(description).mime_type(mime_type))
    }

    /// Registers a static resource built with [`ResourceRoute`].
    ///
    /// # Panics
    ///
    /// If a resource with that URI is already registered.
    pub fn resource_route(self, route: ResourceRoute) -> Self {
        self.try_resource_route(route).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::resource_route`], returning [`RouterError::Duplicate`] (and registering
    /// nothing) instead of panicking when a resource with that URI is already registered.
    pub fn try_resource_route(self, route: ResourceRoute) -> Result<Self, RouterError> {
        self.shared.add_resource(route, false)?;
        Ok(self)
    }

    /// Registers the resource template `uri_template`, read by `reader` with the matched
    /// variables parsed as `A`. See [`TemplateRoute::new`].
    ///
    /// # Panics
    ///
    /// If the template is already registered, or as [`TemplateRoute::new`].
    pub fn resource_template<A, H, M>(
        self,
        uri_template: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        reader: H,
    ) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoReadResult,
    {
        self.try_resource_template(uri_template, name, description, mime_type, reader).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::resource_template`], returning the [`RouterError`] instead of panicking:
    /// a duplicate, or a template the router cannot match ([`TemplateRoute::try_new`]).
    pub fn try_resource_template<A, H, M>(
        self,
        uri_template: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        reader: H,
    ) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoReadResult,
    {
        self.try_template_route(
            TemplateRoute::try_new(uri_template, name, reader)?.description(description).mime_type(mime_type),
        )
    }

    /// Registers a resource template built with [`TemplateRoute`].
    ///
    /// # Panics
    ///
    /// If the template is already registered.
    pub fn template_route(self, route: TemplateRoute) -> Self {
        self.try_template_route(route).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Router::template_route`], returning [`RouterError::Duplicate`] (and registering
    /// nothing) instead of panicking when the template is already registered.
    pub fn try_template_route(self, route: TemplateRoute) -> Result<Self, RouterError> {
        self.shared.add_template(route, false)?;
        Ok(self)
    }

    /// `tools/call`'s synchronous part: the tool's route, and its call started.
    fn tool_call(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Result<BoxFuture<'static, Result<Reply<CallToolResult>, McpError>>, McpError> {
        self.not_offered(TOOLS, MethodName::CallTool)?;
        // The lookup clones one `Arc` out of the current list; nothing is held across the
        // call, so a tool removed meanwhile finishes this call undisturbed.
        let route = self.shared.tools.load().get(&params.name).cloned();
        let route = route.ok_or_else(|| {
            McpError::invalid_params(format!("Unknown tool: {}", arbor_protocol::reflect::Clamped(&params.name)))
        })?;
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        Ok(route.call(arguments, cx))
    }

    fn not_offered(&self, bit: u8, method: MethodName) -> Result<(), McpError> {
        if self.shared.serves(bit) {
            Ok(())
        } else {
            Err(McpError::method_not_found(method.as_str()))
        }
    }

    /// Whether a subscription to `uri` names something this router serves.
    fn knows_uri(&self, uri: &str) -> bool {
        self.shared.resources.load().get(uri).is_some() || self.shared.templates.load().iter().any(|t| t.matches(uri))
    }
}

impl ServerHandler for Router {
    fn info(&self) -> ServerInfo {
        self.info.clone()
    }

    fn capabilities(&self) -> ServerCapabilities {
        let list_changed = self.shared.dynamic.load(Ordering::Acquire).then_some(true);
        let serves = |bit| self.shared.serves(bit);
        // The runtime serves logging itself (`RequestContext::log`, `logging/setLevel`).
        let mut caps = ServerCapabilities::default().with_logging(JsonObject::new());
        caps.completions = serves(COMPLETIONS).then(JsonObject::new);
        caps.prompts = serves(PROMPTS).then(|| {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = list_changed;
            prompts
        });
        caps.resources = serves(RESOURCES).then(|| {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = self.subscriptions.then_some(true);
            resources.list_changed = list_changed;
            resources
        });
        caps.tools = serves(TOOLS).then(|| {
            let mut tools = ToolsCapability::default();
            tools.list_changed = list_changed;
            tools
        });
        let mut extensions = JsonObject::new();
        if serves(TASKS) {
            extensions.insert(crate::tasks::TASKS_EXTENSION.to_owned(), Value::Object(Default::default()));
        }
        if serves(SKILLS) {
            // Settings inline (SEP-2133); every skill is served as files, so every one of
            // its directories can be read.
            let settings = serde_json::json!({ DIRECTORY_READ: true });
            extensions.insert(SKILLS_EXTENSION.to_owned(), settings);
        }
        caps.extensions = (!extensions.is_empty()).then_some(extensions);
        caps
    }

    fn tool_deadline(&self, tool: &str) -> Option<Duration> {
        self.shared.tools.load().get(tool).and_then(|t| t.deadline)
    }

    fn tool_terms(&self, tool: &str) -> crate::handler::ToolTerms {
        match self.shared.tools.load().get(tool) {
            Some(t) => crate::handler::ToolTerms::new(t.deadline, t.asks_input),
            // As `tool_deadline` and `tool_asks_input` answer for a tool not registered.
            None => crate::handler::ToolTerms::new(None, true),
        }
    }

    fn tool_param_headers(&self, tool: &str) -> Option<Arc<[ParamHeader]>> {
        let tools = self.shared.tools.load();
        tools.get(tool).filter(|t| !t.param_headers.is_empty()).map(|t| t.param_headers.clone())
    }

    fn tool_scopes(&self, tool: &str) -> Option<Arc<[String]>> {
        let tools = self.shared.tools.load();
        tools.get(tool).filter(|t| !t.scopes.is_empty()).map(|t| t.scopes.clone())
    }

    fn tool_task_policy(&self, tool: &str) -> TaskPolicy {
        self.shared.tools.load().get(tool).map_or(TaskPolicy::FORBIDDEN, |t| t.task_policy)
    }

    fn tool_asks_input(&self, tool: &str) -> bool {
        self.shared.tools.load().get(tool).is_none_or(|t| t.asks_input)
    }

    fn list_changes(&self) -> Option<ListChanges> {
        self.shared.dynamic.load(Ordering::Acquire).then(|| self.shared.subscribe())
    }

    fn resource_updates(&self) -> Option<crate::ResourceUpdates> {
        self.shared.serves(SKILLS).then(|| self.shared.skills.updates.subscribe())
    }

    async fn list_skills(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Result<ListSkillsResult, McpError> {
        self.not_offered(SKILLS, MethodName::ListSkills)?;
        self.shared.skills.list(params.cursor.as_deref(), self.page_size)
    }

    async fn get_skill(&self, params: GetSkillRequestParams, _cx: RequestContext) -> Result<GetSkillResult, McpError> {
        self.not_offered(SKILLS, MethodName::GetSkill)?;
        resource::check_uri_len(&params.uri, self.max_uri_bytes)?;
        self.shared.skills.get(&params.uri)
    }

    async fn read_directory(
        &self,
        params: ReadDirectoryRequestParams,
        _cx: RequestContext,
    ) -> Result<ReadDirectoryResult, McpError> {
        self.not_offered(SKILLS, MethodName::ReadDirectory)?;
        resource::check_uri_len(&params.uri, self.max_uri_bytes)?;
        self.shared.skills.read_directory(&params.uri, params.cursor.as_deref(), self.page_size)
    }

    async fn list_tools(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Result<ListToolsResult, McpError> {
        self.not_offered(TOOLS, MethodName::ListTools)?;
        let (page, next_cursor) =
            pagination::page(&self.shared.tools.load(), ListId::Tools, params.cursor.as_deref(), self.page_size)?;
        let principal = cx.principal().filter(|_| self.hide_unauthorized);
        let allowed = |t: &&Arc<ToolRoute>| principal.is_none_or(|p| p.allows(&t.scopes));
        let tools = page.iter().filter(allowed).map(|t| t.tool.clone()).collect();
        let mut result = ListToolsResult::new(tools);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    /// Not an `async fn`: the lookup is done here and the future holds only the tool's
    /// own (boxed) call, not the params (384 bytes, which an `async fn` holds twice and
    /// copies at its first poll).
    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> impl Future<Output = Result<Reply<CallToolResult>, McpError>> + Send {
        let call = self.tool_call(params, cx);
        async move { call?.await }
    }

    async fn list_resources(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Result<ListResourcesResult, McpError> {
        self.not_offered(RESOURCES, MethodName::ListResources)?;
        let (page, next_cursor) = pagination::page(
            &self.shared.resources.load(),
            ListId::Resources,
            params.cursor.as_deref(),
            self.page_size,
        )?;
        let resources = page.iter().map(|r| r.resource.clone()).collect();
        let mut result = ListResourcesResult::new(resources);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.not_offered(RESOURCES, MethodName::ListResourceTemplates)?;
        let (page, next_cursor) = pagination::page(
            &self.shared.templates.load(),
            ListId::Templates,
            params.cursor.as_deref(),
            self.page_size,
        )?;
        let resource_templates = page.iter().map(|t| t.template.clone()).collect();
        let mut result = ListResourceTemplatesResult::new(resource_templates);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> Result<Reply<ReadResourceResult>, McpError> {
        self.not_offered(RESOURCES, MethodName::ReadResource)?;
        resource::check_uri_len(&params.uri, self.max_uri_bytes)?;
        let uri = params.uri;
        // Static resources first, then templates in registration order; the future is
        // built while the lists are loaded and awaited after they are released.
        let read = match self.shared.resources.load().get(&uri) {
            Some(resource) => Some(resource.read(cx.clone())),
            // Skill files come from their snapshot, checked there (`..`, empty segments and
            // percent-encoding are -32602 whichever template would have matched).
            None if self.shared.serves(SKILLS) && uri.starts_with(crate::skills::URI_PREFIX) => {
                return self.shared.skills.read(&uri, cx.connection().protocol_version).map(Reply::Complete);
            }
            None => self.shared.templates.load().iter().find_map(|t| t.read(&uri, cx.clone())),
        };
        match read {
            Some(read) => read.await,
            None => Err(McpError::resource_not_found(&uri, cx.connection().protocol_version)),
        }
    }

    async fn subscribe(&self, params: ResourceSubscriptionParams, cx: RequestContext) -> Result<(), McpError> {
        if !self.subscriptions {
            return Err(McpError::method_not_found(MethodName::Subscribe.as_str()));
        }
        resource::check_uri_len(&params.uri, self.max_uri_bytes)?;
        if self.knows_uri(&params.uri) {
            Ok(())
        } else {
            Err(McpError::resource_not_found(&params.uri, cx.connection().protocol_version))
        }
    }

    async fn unsubscribe(&self, params: ResourceSubscriptionParams, _cx: RequestContext) -> Result<(), McpError> {
        if !self.subscriptions {
            return Err(McpError::method_not_found(MethodName::Unsubscribe.as_str()));
        }
        resource::check_uri_len(&params.uri, self.max_uri_bytes)?;
        // Unsubscribing from something never subscribed (or since removed) is harmless.
        Ok(())
    }

    async fn list_prompts(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> Result<ListPromptsResult, McpError> {
        self.not_offered(PROMPTS, MethodName::ListPrompts)?;
        let (page, next_cursor) =
            pagination::page(&self.shared.prompts.load(), ListId::Prompts, params.cursor.as_deref(), self.page_size)?;
        let prompts = page.iter().map(|p| p.prompt.clone()).collect();
        let mut result = ListPromptsResult::new(prompts);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Result<Reply<GetPromptResult>, McpError> {
        self.not_offered(PROMPTS, MethodName::GetPrompt)?;
        let route = self.shared.prompts.load().get(&params.name).cloned();
        let route = route.ok_or_else(|| {
            McpError::invalid_params(format!("Unknown prompt: {}", arbor_protocol::reflect::Clamped(&params.name)))
        })?;
        route.get(params.arguments.unwrap_or_default(), cx).await
    }

    async fn complete(&self, params: CompleteRequestParams, cx: RequestContext) -> Result<CompleteResult, McpError> {
        self.not_offered(COMPLETIONS, MethodName::Complete)?;
        let completer = match &params.reference {
            Reference::Prompt(p) => {
                let prompts = self.shared.prompts.load();
                let route = prompts.get(&p.name).ok_or_else(|| {
                    McpError::invalid_params(format!("Unknown prompt: {}", arbor_protocol::reflect::Clamped(&p.name)))
                })?;
                route.completers.get(&params.argument.name).cloned()
            }
            Reference::ResourceTemplate(r) => {
                resource::check_uri_len(&r.uri, self.max_uri_bytes)?;
                let templates = self.shared.templates.load();
                let route = templates.get(&r.uri).ok_or_else(|| {
                    McpError::invalid_params(format!(
                        "Unknown resource template: {}",
                        arbor_protocol::reflect::Clamped(&r.uri)
                    ))
                })?;
                route.completers.get(&params.argument.name).cloned()
            }
        };
        let completion = match completer {
            Some(completer) => {
                let request = CompletionRequest {
                    argument: params.argument.name,
                    value: params.argument.value,
                    context: params.context.and_then(|c| c.arguments).unwrap_or_default(),
                };
                completer(request, cx).await?
            }
            // An argument without a completion function has no suggestions.
            None => Vec::<String>::new().into_completion().map(completion::clamp)?,
        };
        Ok(CompleteResult::new(completion))
    }
}

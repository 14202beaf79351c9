//! Tools: a typed async function plus the metadata clients list.
//!
//! A [`ToolRoute`] is built from a handler whose argument type gives the `inputSchema`
//! (schemars) and, for [`ToolRoute::with_output`], whose output type gives the
//! `outputSchema`. The schemas' validators are compiled here, once; the router checks
//! every call's arguments against the input validator before the handler runs, and typed
//! output is checked against the output validator before it is sent.
//!
//! This module does not look tools up or page them; the router does. Invariant: a
//! `ToolRoute` that exists has an object `inputSchema` (and `outputSchema`, if any) whose
//! validator compiled, so a registered tool can always be listed and called.

use super::error::{error_result, RouteKind, RouterError, SchemaPart, ToolError};
use super::handler_fn::HandlerFn;
use super::result::{structured, IntoStructuredResult, IntoToolResult};
use super::schema::{self, Contract};
use crate::context::RequestContext;
use crate::reply::Reply;
use crate::tasks::{TaskPolicy, TaskStart, TaskSupport};
use arbor_protocol::era::http::ParamHeader;
use arbor_protocol::error::McpError;
use arbor_protocol::meta::Meta;
use arbor_protocol::model::common::{Icon, JsonObject};
use arbor_protocol::model::tools::{CallToolResult, Tool as ToolDefinition, ToolAnnotations};
use futures::future::BoxFuture;
use futures::FutureExt as _;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A tool's handler with its argument and result types erased: it takes the (already
/// validated) arguments as JSON.
type ErasedTool =
    Arc<dyn Fn(Value, RequestContext) -> BoxFuture<'static, Result<Reply<CallToolResult>, McpError>> + Send + Sync>;

/// A tool ready to register: its definition, its handler and its validators.
///
/// ```
/// # use arbor_server::router::{ToolRoute, ToolError};
/// # use std::time::Duration;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Path { path: String }
///
/// async fn delete(args: Path) -> Result<String, ToolError> {
///     Ok(format!("deleted {}", args.path))
/// }
///
/// let route = ToolRoute::new("delete", delete)
///     .description("Delete a file")
///     .title("Delete file")
///     .destructive_hint(true)
///     .idempotent_hint(true)
///     .deadline(Duration::from_secs(5));
/// ```
pub struct ToolRoute {
    pub(crate) tool: ToolDefinition,
    pub(crate) deadline: Option<Duration>,
    pub(crate) task_policy: TaskPolicy,
    pub(crate) input: Arc<jsonschema::Validator>,
    /// The input schema's `x-mcp-header` annotations, read once when the tool is
    /// registered, so a 2026-07-28 HTTP call costs no schema walk.
    pub(crate) param_headers: Arc<[ParamHeader]>,
    /// The OAuth scopes a call needs (empty: none beyond the server's own).
    pub(crate) scopes: Arc<[String]>,
    /// Whether the handler's result type can answer "input required"
    /// ([`IntoToolResult::ASKS_INPUT`]): if not, a call keeps no copy of its arguments.
    pub(crate) asks_input: bool,
    handler: ErasedTool,
}

impl fmt::Debug for ToolRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRoute")
            .field("tool", &self.tool)
            .field("deadline", &self.deadline)
            .field("task_policy", &self.task_policy)
            .finish_non_exhaustive()
    }
}

impl ToolRoute {
    /// A tool named `name` that calls `handler` with its arguments parsed as `A`, and
    /// answers whatever the handler returns (see [`IntoToolResult`]). The convenient form of
    /// [`ToolRoute::try_new`], for argument types known to be fine.
    ///
    /// # Panics
    ///
    /// With the [`RouterError`] [`ToolRoute::try_new`] returns: if `A`'s schema is not an
    /// object schema (arguments are always a JSON object), or does not compile.
    pub fn new<A, H, M>(name: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoToolResult,
    {
        ToolRoute::try_new(name, handler).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`ToolRoute::new`], returning [`RouterError::Schema`] instead of panicking when
    /// `A`'s schema is not an object schema or does not compile.
    pub fn try_new<A, H, M>(name: impl Into<String>, handler: H) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoToolResult,
    {
        let name = name.into();
        let label = name.clone();
        let call: ErasedTool = Arc::new(move |args, cx| match parse_args::<A>(&label, args) {
            Ok(args) => handler.call(args, cx).map(|out| finish(out.into_tool_result())).boxed(),
            Err(message) => futures::future::ready(Ok(Reply::Complete(error_result(message)))).boxed(),
        });
        ToolRoute::build::<A>(name, None, <H::Output as IntoToolResult>::ASKS_INPUT, call)
    }

    /// A tool with a typed output: `outputSchema` comes from the handler's output type, and
    /// each result carries the value in `structuredContent` and its JSON text in `content`
    /// (for clients older than 2025-06-18). Output that does not match the schema is a
    /// server bug: it is logged and the client gets -32603. The convenient form of
    /// [`ToolRoute::try_with_output`].
    ///
    /// # Panics
    ///
    /// As [`ToolRoute::new`], and if the output type's schema is not an object schema:
    /// revisions before 2026-07-28 accept only objects as `structuredContent`.
    pub fn with_output<A, H, M>(name: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoStructuredResult,
    {
        ToolRoute::try_with_output(name, handler).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`ToolRoute::with_output`], returning [`RouterError::Schema`] instead of panicking
    /// when the argument or output type's schema cannot be used.
    pub fn try_with_output<A, H, M>(name: impl Into<String>, handler: H) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoStructuredResult,
    {
        let name = name.into();
        let schema_error = |reason| RouterError::Schema {
            kind: RouteKind::Tool,
            name: name.clone(),
            part: SchemaPart::Output,
            reason,
        };
        let output_schema =
            schema::object_schema_for::<<H::Output as IntoStructuredResult>::Output>(Contract::Serialize)
                .map_err(schema_error)?;
        let output = Arc::new(schema::compile(&output_schema).map_err(schema_error)?);
        let label: Arc<str> = name.as_str().into();
        let call: ErasedTool = Arc::new(move |args, cx| match parse_args::<A>(&label, args) {
            Ok(args) => {
                let (label, output) = (Arc::clone(&label), Arc::clone(&output));
                handler.call(args, cx).map(move |out| finish_structured(&label, &output, out.into_structured())).boxed()
            }
            Err(message) => futures::future::ready(Ok(Reply::Complete(error_result(message)))).boxed(),
        });
        ToolRoute::build::<A>(name, Some(output_schema), <H::Output as IntoStructuredResult>::ASKS_INPUT, call)
    }

    /// A tool from a type implementing [`Tool`], for tools that hold state.
    ///
    /// # Panics
    ///
    /// As [`ToolRoute::new`]; [`ToolRoute::try_from_tool`] returns the error instead.
    pub fn from_tool<T>(name: impl Into<String>, tool: T) -> Self
    where
        T: Tool,
        T::Output: IntoToolResult,
    {
        ToolRoute::try_from_tool(name, tool).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`ToolRoute::from_tool`], returning the error [`ToolRoute::try_new`] would.
    pub fn try_from_tool<T>(name: impl Into<String>, tool: T) -> Result<Self, RouterError>
    where
        T: Tool,
        T::Output: IntoToolResult,
    {
        let tool = Arc::new(tool);
        ToolRoute::try_new(name, move |input: T::Input, cx: RequestContext| {
            let tool = Arc::clone(&tool);
            async move { tool.call(input, cx).await }
        })
    }

    /// A tool with a typed output from a type implementing [`Tool`]; see
    /// [`ToolRoute::with_output`].
    ///
    /// # Panics
    ///
    /// As [`ToolRoute::with_output`]; [`ToolRoute::try_from_tool_with_output`] returns the
    /// error instead.
    pub fn from_tool_with_output<T>(name: impl Into<String>, tool: T) -> Self
    where
        T: Tool,
        T::Output: IntoStructuredResult,
    {
        ToolRoute::try_from_tool_with_output(name, tool).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`ToolRoute::from_tool_with_output`], returning the error
    /// [`ToolRoute::try_with_output`] would.
    pub fn try_from_tool_with_output<T>(name: impl Into<String>, tool: T) -> Result<Self, RouterError>
    where
        T: Tool,
        T::Output: IntoStructuredResult,
    {
        let tool = Arc::new(tool);
        ToolRoute::try_with_output(name, move |input: T::Input, cx: RequestContext| {
            let tool = Arc::clone(&tool);
            async move { tool.call(input, cx).await }
        })
    }

    fn build<A: schemars::JsonSchema>(
        name: String,
        output_schema: Option<JsonObject>,
        asks_input: bool,
        call: ErasedTool,
    ) -> Result<Self, RouterError> {
        let schema_error = |reason| RouterError::Schema {
            kind: RouteKind::Tool,
            name: name.clone(),
            part: SchemaPart::Arguments,
            reason,
        };
        let input_schema = schema::object_schema_for::<A>(Contract::Deserialize).map_err(schema_error)?;
        let input = Arc::new(schema::compile(&input_schema).map_err(schema_error)?);
        if !is_conventional_name(&name) {
            tracing::warn!(tool = %name, "tool names should be 1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.'");
        }
        let mut tool = ToolDefinition::new(name, input_schema);
        tool.output_schema = output_schema;
        let param_headers =
            Arc::from(arbor_protocol::era::http::param_headers(&Value::Object(tool.input_schema.clone())));
        Ok(ToolRoute {
            tool,
            deadline: None,
            task_policy: TaskPolicy::FORBIDDEN,
            input,
            param_headers,
            scopes: Arc::from(Vec::new()),
            asks_input,
            handler: call,
        })
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool.description = Some(description.into());
        self
    }

    /// A display name (2025-06-18 on).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Adds an icon (2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.tool.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Replaces all behaviour hints at once.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    fn hints(&mut self) -> &mut ToolAnnotations {
        self.tool.annotations.get_or_insert_with(ToolAnnotations::default)
    }

    /// Hints whether the tool leaves its environment unchanged (`readOnlyHint`).
    pub fn read_only_hint(mut self, read_only: bool) -> Self {
        self.hints().read_only_hint = Some(read_only);
        self
    }

    /// Hints whether the tool may destroy data (`destructiveHint`; clients assume `true`).
    pub fn destructive_hint(mut self, destructive: bool) -> Self {
        self.hints().destructive_hint = Some(destructive);
        self
    }

    /// Hints whether a repeated call with the same arguments has no further effect
    /// (`idempotentHint`).
    pub fn idempotent_hint(mut self, idempotent: bool) -> Self {
        self.hints().idempotent_hint = Some(idempotent);
        self
    }

    /// Hints whether the tool talks to an open world of external entities
    /// (`openWorldHint`; clients assume `true`).
    pub fn open_world_hint(mut self, open_world: bool) -> Self {
        self.hints().open_world_hint = Some(open_world);
        self
    }

    /// Sets the tool's `_meta`.
    pub fn meta(mut self, meta: Meta) -> Self {
        self.tool.meta = Some(meta);
        self
    }

    /// A deadline for each call of this tool, overriding the runtime's default
    /// (it is what [`ServerHandler::tool_deadline`](crate::ServerHandler::tool_deadline) answers).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The OAuth scopes a call of this tool needs, besides what every request needs. An
    /// authorizing transport (`arbor-http` with OAuth on) refuses a call whose token lacks
    /// one with 403 `insufficient_scope` naming all of them, before the tool runs; what
    /// [`ServerHandler::tool_scopes`](crate::ServerHandler::tool_scopes) answers. Without
    /// a verified principal (stdio, HTTP without OAuth) they are not checked.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect::<Vec<_>>().into();
        self
    }

    /// Lets calls of this tool run as tasks (the `io.modelcontextprotocol/tasks`
    /// extension, 2026-07-28): `Optional` runs a call as a task when the request declares
    /// the extension and inline otherwise, `Required` refuses requests that do not
    /// declare it (-32021). The handler stays the same; the runtime answers the call
    /// with a task and runs the handler under it. Registering such a tool makes the
    /// router advertise the extension.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_policy.support = support;
        self
    }

    /// When a call becomes a task (default [`TaskStart::Immediately`]); with
    /// [`TaskStart::AfterInput`] the input the handler asks for on a fresh call is
    /// gathered inline first (MRTR), and the call carrying the answers becomes the task.
    pub fn task_start(mut self, start: TaskStart) -> Self {
        self.task_policy.start = start;
        self
    }

    /// The definition clients list.
    pub fn definition(&self) -> &ToolDefinition {
        &self.tool
    }

    /// Checks `args` against the input schema and, when they pass, calls the handler.
    pub(crate) fn call(
        &self,
        args: Value,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply<CallToolResult>, McpError>> {
        if let Some(problems) = schema::problems(&self.input, &args) {
            let message = format!("Invalid arguments for tool {}:\n{problems}", self.tool.name);
            return futures::future::ready(Ok(Reply::Complete(error_result(message)))).boxed();
        }
        (self.handler)(args, cx)
    }
}

/// A tool as a type: the same job as an async function, for tools that hold state (a
/// connection pool, a cache) or are easier to read as a type. Register it with
/// [`ToolRoute::from_tool`].
///
/// ```
/// use arbor_server::router::{NoArgs, Router, Tool, ToolRoute};
/// use arbor_server::RequestContext;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Default)]
/// struct Counter(AtomicU64);
///
/// impl Tool for Counter {
///     type Input = NoArgs;
///     type Output = String;
///
///     async fn call(&self, _: NoArgs, _cx: RequestContext) -> String {
///         (self.0.fetch_add(1, Ordering::Relaxed) + 1).to_string()
///     }
/// }
///
/// let router = Router::new("s", "1")
///     .tool_route(ToolRoute::from_tool("count", Counter::default()).description("Counts calls"));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Tool`",
    label = "register this with `Router::tool` if it is an async fn, or implement `Tool` for it",
    note = "a `Tool` names its argument type (`type Input`), its result type (`type Output`) and an `async fn call(&self, input, cx)`"
)]
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their schema is the tool's `inputSchema`.
    type Input: DeserializeOwned + schemars::JsonSchema + Send + 'static;
    /// The result: an [`IntoToolResult`], or an [`IntoStructuredResult`] for
    /// [`ToolRoute::from_tool_with_output`].
    type Output: Send + 'static;

    /// Runs the tool.
    fn call(&self, input: Self::Input, cx: RequestContext) -> impl Future<Output = Self::Output> + Send;
}

/// Parses validated arguments. A type whose `Deserialize` is stricter than its schema can
/// still refuse them; that is an argument problem too, so the model sees it.
fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, String> {
    serde_json::from_value(args)
        .map_err(|e| format!("Invalid arguments for tool {tool}: {}", arbor_protocol::reflect::Clamped(&e.to_string())))
}

fn finish(result: Result<Reply<CallToolResult>, ToolError>) -> Result<Reply<CallToolResult>, McpError> {
    match result {
        Ok(reply) => Ok(reply),
        Err(e) => e.into_call_result().map(Reply::Complete),
    }
}

fn finish_structured<T: serde::Serialize>(
    tool: &str,
    output: &jsonschema::Validator,
    result: Result<Reply<T>, ToolError>,
) -> Result<Reply<CallToolResult>, McpError> {
    let value = match result {
        Ok(Reply::Complete(value)) => value,
        Ok(Reply::InputRequired(input)) => return Ok(Reply::InputRequired(input)),
        Err(e) => return e.into_call_result().map(Reply::Complete),
    };
    let value = serde_json::to_value(&value).map_err(|e| {
        tracing::error!(tool, error = %e, "tool output does not serialise");
        McpError::internal(format!("Tool {tool} produced output that does not serialise"))
    })?;
    if let Some(problems) = schema::problems(output, &value) {
        // A bug in the server, not something the model can fix: log it where the operator
        // looks, and tell the client only that it happened.
        tracing::error!(tool, %problems, "tool output does not match its outputSchema");
        return Err(McpError::internal(format!("Tool {tool} produced output that does not match its outputSchema")));
    }
    Ok(Reply::Complete(structured(value)))
}

/// The spec's SHOULD for tool names: 1–128 characters of `[A-Za-z0-9_.-]`.
fn is_conventional_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

//! [`Client`]: the cloneable handle on one server connection, with typed calls for every
//! client-to-server method, pagination, and the two retry rules that belong to a call:
//! MRTR (`input_required` answered by the handler in the calling task, then the request
//! retried with a new id) and the modern HTTP `-32020` refresh of `tools/list`.
//!
//! It holds no ractor types: the connection actor is reached through the shared state
//! and the supervisor handle. Invariant: every call goes through [`Client::request_with`]
//! (or its raw form), so era checks, `_meta`, deadlines and retries apply to all alike.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arbor_otp::{ChildSpec, NodeSnapshot, Restart, Shutdown, Strategy, SupervisorHandle, SupervisorSpec};
use arbor_protocol::era::http::{param_headers, ParamHeader};
use arbor_protocol::error::McpError;
use arbor_protocol::method::{decode_result, Request};
use arbor_protocol::methods::{self, MethodName};
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::model::common::{Implementation, PaginatedRequestParams, RequestParams};
use arbor_protocol::model::completion::{CompleteRequestParams, CompleteResult};
use arbor_protocol::model::lifecycle::DiscoverResult;
use arbor_protocol::model::logging::{LoggingLevel, SetLevelRequestParams};
use arbor_protocol::model::mrtr::Outcome;
use arbor_protocol::model::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt};
use arbor_protocol::model::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate,
};
use arbor_protocol::model::tools::{CallToolResult, ListToolsResult, Tool};
use arbor_protocol::version::{Era, Feature, ProtocolVersion};
use futures::Stream;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use crate::call::{roundtrip, CallCtl};
use crate::connection::{ConnArgs, ConnMsg, ConnectionActor, CLOSE_GRACE};
use crate::error::{ClientError, ConnectError, ProtocolError};
use crate::handler::{CallLink, HandlerRuntime, NoHandler};
use crate::notification::Notification;
use crate::options::{CallOptions, ClientOptions};
use crate::shared::{PendingKind, ServerNotice, Session, Shared};
use crate::target::{HttpTarget, ServerTarget, StdioCommand};

/// The bound on pages a `list_all_*` helper reads before it calls the server broken.
const MAX_PAGES: usize = 10_000;

/// A connection to one MCP server. Cheap to clone; the connection closes when the last
/// clone is dropped or [`Client::close`] is called.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<ClientInner>,
}

#[derive(Debug)]
struct ClientInner {
    shared: Arc<Shared>,
    supervisor: SupervisorHandle,
    /// The server as metrics labels, and the session's clock (`crate::metrics`).
    peer: crate::metrics::Peer,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.peer.session_ended(self.shared.session().map(|s| s.version));
        let supervisor = self.supervisor.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                supervisor.shutdown().await;
            });
        }
    }
}

/// The fields of a result MRTR needs, read without decoding the rest.
#[derive(Deserialize)]
struct MrtrProbe {
    #[serde(rename = "resultType")]
    result_type: Option<String>,
    #[serde(rename = "inputRequests")]
    input_requests: Option<Map<String, Value>>,
    #[serde(rename = "requestState")]
    request_state: Option<String>,
}

impl Client {
    /// Connects to `target`: opens the link, then detects the era (or uses the forced
    /// one) and opens the session. Returns once the server answered.
    pub async fn connect(target: ServerTarget, options: ClientOptions) -> Result<Client, ConnectError> {
        let server_id = options.server_id.clone().or_else(|| target.identity()).unwrap_or_else(|| "server".to_owned());
        // Without a handler, `NoHandler` declares nothing and still answers `ping`,
        // sanitises logs and feeds the notification worker.
        let handler = options.handler.clone().unwrap_or_else(|| Arc::new(NoHandler));
        let mut limits = options.limits.clone();
        if let Some(tasks) = &options.hosted_tasks {
            limits.tasks = Some(tasks.clone());
        }
        let runtime = HandlerRuntime::start(
            handler,
            limits,
            server_id.clone(),
            options.info.name.clone(),
            options.assigns.clone(),
        )
        .await?;
        let shared = Shared::new(options, Some(runtime));
        let weak = Arc::downgrade(&shared);
        if let Some(rt) = &shared.runtime {
            rt.set_in_flight_probe(Arc::new(move || weak.upgrade().map_or(0, |s| s.calls_in_flight())));
            // Hosted tasks' status notifications go out on whatever link is current.
            let weak = Arc::downgrade(&shared);
            rt.set_outbound(Arc::new(move |frame| {
                if let Some(shared) = weak.upgrade() {
                    if let Some(link) = shared.link() {
                        link.notify_detached(&shared, frame);
                    }
                }
            }));
        }
        let (report, reported) = oneshot::channel();
        let peer = crate::metrics::Peer::of(&target);
        let args = Arc::new(ConnArgs { shared: shared.clone(), target, report: Mutex::new(Some(report)) });
        let child = ChildSpec::actor("connection", move || (ConnectionActor, args.clone()))
            .restart(Restart::Temporary)
            .shutdown(Shutdown::Timeout(CLOSE_GRACE));
        let spec = SupervisorSpec::new(format!("client:{server_id}")).strategy(Strategy::OneForOne).child(child);
        let started = SupervisorHandle::start(spec).await;
        match reported.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                if let Ok(s) = started {
                    s.shutdown().await;
                }
                return Err(e);
            }
            Err(_) => {}
        }
        let supervisor = started.map_err(ConnectError::Supervisor)?;
        Ok(Client { inner: Arc::new(ClientInner { shared, supervisor, peer }) })
    }

    /// Spawns `command` and connects over its stdin/stdout.
    pub async fn connect_stdio(command: StdioCommand, options: ClientOptions) -> Result<Client, ConnectError> {
        Client::connect(ServerTarget::Stdio(command), options).await
    }

    /// Connects to a Streamable HTTP endpoint.
    pub async fn connect_http(target: HttpTarget, options: ClientOptions) -> Result<Client, ConnectError> {
        Client::connect(ServerTarget::Http(target), options).await
    }

    /// Connects over an already connected transport (one use: no restart).
    pub async fn connect_transport(
        transport: arbor_transport::Transport,
        options: ClientOptions,
    ) -> Result<Client, ConnectError> {
        Client::connect(ServerTarget::transport(transport), options).await
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// What was negotiated or discovered; `None` while disconnected.
    pub fn session(&self) -> Option<Session> {
        self.shared().session().map(|s| (*s).clone())
    }

    /// The era spoken; `None` while disconnected.
    pub fn era(&self) -> Option<Era> {
        self.shared().era()
    }

    /// The protocol revision spoken.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.shared().session().map(|s| s.version)
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> Option<ServerCapabilities> {
        self.shared().session().map(|s| s.capabilities.clone())
    }

    /// Who the server says it is.
    pub fn server_info(&self) -> Option<Implementation> {
        self.shared().session().and_then(|s| s.server_info.clone())
    }

    /// Frames from the server that could not be read (logged and skipped).
    pub fn malformed_messages(&self) -> u64 {
        self.shared().malformed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The handler runtime, when a handler was given (its counters: dropped
    /// notifications and logs).
    pub fn handler_runtime(&self) -> Option<&HandlerRuntime> {
        self.shared().runtime.as_ref()
    }

    /// The client's supervision tree, as a snapshot.
    pub async fn snapshot(&self) -> NodeSnapshot {
        self.inner.supervisor.snapshot().await
    }

    /// Restarts the server (stdio: a new process; HTTP: a new session) and opens a new
    /// session. Calls in flight fail with [`ClientError::Disconnected`]; listen streams
    /// end and must be opened again.
    pub async fn restart(&self) -> Result<(), ConnectError> {
        let actor = self.shared().events.lock().clone().ok_or(ConnectError::Closed)?;
        match actor.call(ConnMsg::Restart, None).await {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            _ => Err(ConnectError::Closed),
        }
    }

    /// Whether the connection is up (a session is open).
    pub fn is_connected(&self) -> bool {
        self.shared().link().is_some() && self.shared().session().is_some()
    }

    /// Closes the connection: stdin closed and the process reaped (stdio), the session
    /// deleted (legacy HTTP); every pending call fails with `Disconnected`.
    pub async fn close(&self) {
        self.inner.peer.session_ended(self.shared().session().map(|s| s.version));
        self.inner.supervisor.shutdown().await;
    }

    /// Every server notification the client does not consume itself (not progress, not
    /// listen-stream deliveries), typed: a method the client does not know, or params that
    /// do not fit, arrive as [`Notification::Other`] with the notice as received. A reader
    /// that falls more than 1,024 behind skips ahead.
    ///
    /// ```no_run
    /// # async fn f(client: arbor_client::Client) {
    /// use arbor_client::{ListKind, Notification};
    /// use futures::StreamExt;
    /// let mut notes = client.notifications();
    /// while let Some(note) = notes.next().await {
    ///     match note {
    ///         Notification::ListChanged(ListKind::Tools) => println!("the tools changed"),
    ///         Notification::LoggingMessage(log) => println!("{:?}: {}", log.level, log.data),
    ///         other => println!("{}", other.method()),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn notifications(&self) -> impl Stream<Item = Notification> + Send + Unpin + 'static {
        futures::StreamExt::map(self.raw_notifications(), Notification::from)
    }

    /// [`Client::notifications`] as received: each notice's method and params, untyped.
    pub fn raw_notifications(&self) -> impl Stream<Item = ServerNotice> + Send + Unpin + 'static {
        let rx = self.shared().notices.subscribe();
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(n) => return Some((n, rx)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        }))
    }

    /// Sends request `M` and decodes its result.
    ///
    /// ```no_run
    /// # async fn f(client: arbor_client::Client) -> Result<(), arbor_client::ClientError> {
    /// use arbor_protocol::methods::ListTools;
    /// let page = client.request::<ListTools>(Default::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn request<M: Request>(&self, params: M::Params) -> Result<M::Result, ClientError> {
        self.request_with::<M>(params, CallOptions::default()).await
    }

    /// [`Client::request`] with per-call options (timeouts, progress, assigns, cancel).
    pub async fn request_with<M: Request>(
        &self,
        params: M::Params,
        opts: CallOptions,
    ) -> Result<M::Result, ClientError> {
        let value = serde_json::to_value(&params).map_err(ClientError::Encode)?;
        let raw = self.request_raw(M::METHOD, value, &opts).await?;
        Ok(decode_result::<M>(&raw)?)
    }

    /// Sends a request given as JSON params and returns the raw result text; the era
    /// rules, deadlines and retries apply as for typed requests.
    pub async fn request_value(
        &self,
        method: MethodName,
        params: Value,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let raw = self.request_raw(method, params, opts).await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientError::Protocol(ProtocolError::Json(e)))
    }

    fn check_era(&self, method: MethodName) -> Result<Era, ClientError> {
        let session = self.shared().session().ok_or(ClientError::Disconnected)?;
        let feature = match method {
            MethodName::Ping => Some(Feature::Ping),
            MethodName::SetLevel => Some(Feature::SetLogLevel),
            MethodName::Subscribe | MethodName::Unsubscribe => Some(Feature::ResourceSubscribe),
            MethodName::SubscriptionsListen => Some(Feature::SubscriptionsListen),
            MethodName::Discover => Some(Feature::ServerDiscover),
            MethodName::Initialize => Some(Feature::InitializeHandshake),
            _ => None,
        };
        if feature.is_some_and(|f| !session.version.supports(f)) || method == MethodName::Initialize {
            let era = if session.era == Era::Modern { "modern" } else { "legacy" };
            return Err(ClientError::Unsupported { method: method.as_str(), era });
        }
        Ok(session.era)
    }

    async fn request_raw(
        &self,
        method: MethodName,
        mut params: Value,
        opts: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let era = self.check_era(method)?;
        let shared = self.shared();
        let ctl = CallCtl::new(shared, opts);
        let modern_http = era == Era::Modern && shared.link().is_some_and(|l| l.is_http());
        let mut refreshed = false;
        let mut rounds = 0;
        loop {
            let sent = std::time::Instant::now();
            let answer = roundtrip(shared, method, &mut params, &ctl, PendingKind::Call, true).await;
            self.inner.peer.operation(method, shared.session().map(|s| s.version), &params, sent, &answer);
            let raw = match answer {
                // The server's view of the tool's `x-mcp-header`s differs from ours: learn
                // it again and retry once (a new id).
                Err(ClientError::Rpc(McpError::HeaderMismatch { .. }))
                    if modern_http && method == MethodName::CallTool && !refreshed =>
                {
                    refreshed = true;
                    refresh_tool_headers(shared).await?;
                    continue;
                }
                other => other?,
            };
            let raw = if modern_http && method == MethodName::ListTools { keep_valid_tools(shared, raw) } else { raw };
            let mrtr = matches!(method, MethodName::CallTool | MethodName::GetPrompt | MethodName::ReadResource);
            if era != Era::Modern || !mrtr {
                return Ok(raw);
            }
            // Most results are complete: a substring scan rules `input_required` out
            // without parsing the result twice.
            if !raw.get().contains("input_required") {
                return Ok(raw);
            }
            let probe: MrtrProbe =
                serde_json::from_str(raw.get()).map_err(|e| ClientError::Protocol(ProtocolError::Json(e)))?;
            if probe.result_type.as_deref() != Some("input_required") {
                return Ok(raw);
            }
            rounds += 1;
            if rounds > shared.options.max_input_rounds {
                return Err(ClientError::TooManyInputRounds(shared.options.max_input_rounds));
            }
            let obj = params.as_object_mut().ok_or(ClientError::ArgumentsNotAnObject)?;
            match probe.input_requests {
                Some(requests) => {
                    let runtime = shared
                        .runtime
                        .as_ref()
                        .ok_or_else(|| ClientError::Protocol(ProtocolError::InputWithoutCapability))?;
                    let link: Arc<dyn CallLink> = ctl.clone();
                    let answers = runtime.answer_inputs(&requests, Some(link)).await?;
                    obj.insert("inputResponses".into(), Value::Object(answers));
                }
                None => {
                    obj.remove("inputResponses");
                }
            }
            // Echoed byte for byte when given; never invented.
            match probe.request_state {
                Some(state) => obj.insert("requestState".into(), Value::String(state)),
                None => obj.remove("requestState"),
            };
        }
    }

    /// `ping` (legacy). In the modern era, which has no ping, `server/discover` serves
    /// as the liveness check.
    pub async fn ping(&self) -> Result<(), ClientError> {
        if self.era() == Some(Era::Modern) {
            self.discover().await.map(drop)
        } else {
            self.request::<methods::Ping>(RequestParams::default()).await.map(drop)
        }
    }

    /// `server/discover` (modern).
    pub async fn discover(&self) -> Result<DiscoverResult, ClientError> {
        self.request::<methods::Discover>(RequestParams::default()).await
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        self.request::<methods::ListTools>(page(cursor)).await
    }

    /// Every tool, following `nextCursor` until it is absent (an empty cursor is a cursor).
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.list_all::<methods::ListTools>().await
    }

    /// `tools/call`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, CallOptions::default()).await
    }

    /// `tools/call` with per-call options. `arguments` must be an object or null.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        opts: CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = match arguments {
            Value::Object(m) => Some(m),
            Value::Null => None,
            _ => return Err(ClientError::ArgumentsNotAnObject),
        };
        // The params as JSON directly, moving `arguments` in: what
        // `CallToolRequestParams { name, arguments, .. }` serialises to, without
        // re-encoding the arguments into a new map (a hash per key) on every call.
        let mut params = Map::with_capacity(2);
        params.insert("name".into(), Value::String(name.to_owned()));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        let raw = self.request_raw(MethodName::CallTool, Value::Object(params), &opts).await?;
        complete(decode_result::<methods::CallTool>(&raw)?)
    }

    /// `tools/call` with typed arguments and a typed output: `arguments` is serialised
    /// (it must give a JSON object), and the result's structured content is read as `O`
    /// (see [`CallToolResult::structured`]: `structuredContent`, else a single text block
    /// holding JSON). A tool that failed (`isError`), sent no structured content or sent
    /// another shape is [`ClientError::Structured`], naming the tool.
    ///
    /// ```no_run
    /// # async fn f(client: arbor_client::Client) -> Result<(), arbor_client::ClientError> {
    /// #[derive(serde::Serialize)]
    /// struct Add { a: i64, b: i64 }
    /// #[derive(serde::Deserialize)]
    /// struct Sum { sum: i64 }
    /// let sum: Sum = client.call_tool_as::<Add, Sum>("add", &Add { a: 2, b: 3 }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_as<A, O>(&self, name: &str, arguments: &A) -> Result<O, ClientError>
    where
        A: Serialize + ?Sized,
        O: DeserializeOwned,
    {
        let arguments = serde_json::to_value(arguments).map_err(ClientError::Encode)?;
        let result = self.call_tool(name, arguments).await?;
        result.structured::<O>().map_err(|source| ClientError::Structured { tool: name.to_owned(), source })
    }

    /// One page of `resources/list`.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<ListResourcesResult, ClientError> {
        self.request::<methods::ListResources>(page(cursor)).await
    }

    /// Every resource.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_all::<methods::ListResources>().await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        self.request::<methods::ListResourceTemplates>(page(cursor)).await
    }

    /// Every resource template.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_all::<methods::ListResourceTemplates>().await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.read_resource_with(uri, CallOptions::default()).await
    }

    /// `resources/read` with per-call options.
    pub async fn read_resource_with(&self, uri: &str, opts: CallOptions) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams::new(uri);
        complete(self.request_with::<methods::ReadResource>(params, opts).await?)
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult, ClientError> {
        self.request::<methods::ListPrompts>(page(cursor)).await
    }

    /// Every prompt.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_all::<methods::ListPrompts>().await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, ClientError> {
        self.get_prompt_with(name, arguments, CallOptions::default()).await
    }

    /// `prompts/get` with per-call options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        opts: CallOptions,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = (!arguments.is_empty()).then_some(arguments);
        complete(self.request_with::<methods::GetPrompt>(params, opts).await?)
    }

    /// `completion/complete`.
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult, ClientError> {
        self.request::<methods::Complete>(params).await
    }

    /// `logging/setLevel` (legacy; the modern era has no session-wide level).
    pub async fn set_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        let params = SetLevelRequestParams::new(level);
        self.request::<methods::SetLevel>(params).await.map(drop)
    }

    /// `notifications/roots/list_changed` (legacy): the client's roots changed.
    pub async fn notify_roots_list_changed(&self) -> Result<(), ClientError> {
        if self.check_era(MethodName::Ping)? != Era::Legacy {
            return Err(ClientError::Unsupported { method: MethodName::RootsListChanged.as_str(), era: "modern" });
        }
        let link = self.shared().link().ok_or(ClientError::Disconnected)?;
        let frame = crate::era::notification_frame(MethodName::RootsListChanged);
        link.notify(self.shared(), frame).await
    }

    /// Every item of a paginated list `M`: pages are requested with the previous page's
    /// `nextCursor` until a page has none, within [`MAX_PAGES`].
    async fn list_all<M>(&self) -> Result<Vec<<M::Result as Page>::Item>, ClientError>
    where
        M: Request<Params = PaginatedRequestParams>,
        M::Result: Page,
    {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let (items, next) = self.request::<M>(page(cursor)).await?.split();
            all.extend(items);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
        Err(endless(M::METHOD))
    }

    pub(crate) fn shared_arc(&self) -> Arc<Shared> {
        self.inner.shared.clone()
    }
}

/// Reads every page of `tools/list` to learn the tools' `x-mcp-header` annotations again
/// (straight through `roundtrip`, so it never recurses into the retry that called it).
async fn refresh_tool_headers(shared: &Arc<Shared>) -> Result<(), ClientError> {
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let ctl = CallCtl::new(shared, &CallOptions::default());
        let mut params = serde_json::to_value(page(cursor.take())).map_err(ClientError::Encode)?;
        let raw = roundtrip(shared, MethodName::ListTools, &mut params, &ctl, PendingKind::Other, true).await?;
        let raw = keep_valid_tools(shared, raw);
        match decode_result::<methods::ListTools>(&raw)?.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(()),
        }
    }
    Err(endless(MethodName::ListTools))
}

fn endless(method: MethodName) -> ClientError {
    ClientError::Protocol(ProtocolError::EndlessList { method: method.as_str(), pages: MAX_PAGES })
}

/// One page of a paginated list result: its items and the cursor of the next page.
trait Page {
    type Item;
    fn split(self) -> (Vec<Self::Item>, Option<String>);
}

macro_rules! page {
    ($($result:ty => $items:ident: $item:ty),* $(,)?) => {$(
        impl Page for $result {
            type Item = $item;
            fn split(self) -> (Vec<$item>, Option<String>) {
                (self.$items, self.next_cursor)
            }
        }
    )*};
}

page! {
    ListToolsResult => tools: Tool,
    ListResourcesResult => resources: Resource,
    ListResourceTemplatesResult => resource_templates: ResourceTemplate,
    ListPromptsResult => prompts: Prompt,
}

fn page(cursor: Option<String>) -> PaginatedRequestParams {
    let mut params = PaginatedRequestParams::default();
    params.cursor = cursor;
    params
}

/// The method's own result, once MRTR is done: a task nobody asked for is a violation.
fn complete<T>(outcome: Outcome<T>) -> Result<T, ClientError> {
    match outcome {
        Outcome::Complete(r) => Ok(r),
        Outcome::InputRequired(_) => Err(ClientError::Protocol(ProtocolError::InputRequiredOutsideModern)),
        Outcome::Task(_) | Outcome::ExperimentalTask(_) => Err(ClientError::Protocol(ProtocolError::UnrequestedTask)),
    }
}

/// Modern HTTP: drops tools whose `x-mcp-header` annotations are invalid (logging why),
/// and remembers the valid ones' annotations for the `Mcp-Param-*` headers.
fn keep_valid_tools(shared: &Shared, raw: Box<RawValue>) -> Box<RawValue> {
    let Ok(mut value) = serde_json::from_str::<Value>(raw.get()) else { return raw };
    let Some(tools) = value.get_mut("tools").and_then(Value::as_array_mut) else { return raw };
    let before = tools.len();
    let mut table = shared.param_headers.lock();
    tools.retain(|tool| {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
        match tool_headers(&schema) {
            Ok(headers) => {
                table.insert(name, headers.into());
                true
            }
            Err(why) => {
                tracing::warn!(target: "arbor_client", "dropping tool {name:?} from tools/list: {why}");
                table.remove(&name);
                false
            }
        }
    });
    if tools.len() == before {
        return raw;
    }
    serde_json::value::to_raw_value(&value).unwrap_or(raw)
}

fn count_annotations(schema: &Value) -> usize {
    match schema {
        Value::Object(m) => m.iter().map(|(k, v)| usize::from(k == "x-mcp-header") + count_annotations(v)).sum(),
        Value::Array(a) => a.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The valid `x-mcp-header` annotations of a tool, or why the tool is invalid.
pub(crate) fn tool_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let found = param_headers(schema);
    if count_annotations(schema) != found.len() {
        return Err("an x-mcp-header annotation is not on a property reached through `properties` alone".into());
    }
    let mut seen = HashSet::new();
    for a in &found {
        if !is_token(&a.header) {
            return Err(format!("x-mcp-header {:?} is not a header token", a.header));
        }
        if !seen.insert(a.header.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} appears twice", a.header));
        }
        let property = a.path.iter().try_fold(schema, |at, key| at.get("properties")?.get(key));
        let kind = property.and_then(|p| p.get("type")).and_then(Value::as_str);
        if !matches!(kind, Some("string" | "integer" | "boolean")) {
            return Err(format!("x-mcp-header {:?} is on a property of type {kind:?}", a.header));
        }
    }
    Ok(found)
}

//! The [`Server`] builder: a handler plus a [`ServerConfig`], served over stdio, any
//! transport, or many connections at once.
//!
//! ```no_run
//! use arbor_server::{Server, ServerHandler, ServerInfo};
//! use arbor_protocol::model::capabilities::ServerCapabilities;
//!
//! struct Quiet;
//! impl ServerHandler for Quiet {
//!     fn info(&self) -> ServerInfo { ServerInfo::new("quiet", "1.0.0") }
//!     fn capabilities(&self) -> ServerCapabilities { ServerCapabilities::default() }
//! }
//!
//! #[tokio::main]
//! async fn main() {
//!     // Serves stdin/stdout until stdin ends; logs belong on stderr.
//!     Server::new(Quiet).serve_stdio().await.unwrap();
//! }
//! ```
//!
//! A `Server` is cheap to clone; the supervision tree starts with the first connection
//! and stops with [`Server::shutdown`] (or when a `serve_*` call returns). The handler's
//! `info()` and `capabilities()` are read once, here: a server advertises the same
//! capabilities to every client, as the spec's list-stability rules expect. A tenant may
//! run a handler of its own, swapped at run time ([`Server::set_tenant_handler`]); it
//! serves within the server's capabilities.
//!
//! Invariant: everything a connection shares with the others (handler, config, eras,
//! precomputed capabilities) lives in one read-only [`Shared`], so connections never
//! contend on anything but the tenant's in-flight counter; the one thing in it that
//! changes, each tenant's handler, is an `ArcSwap` a request loads once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, BusMessage, LocalBus, PublishError};
use arbor_otp::{Gauge, NodeSnapshot};
use arbor_protocol::era::{Handshake, PerRequest};
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::version::{Feature, ProtocolVersion};
use arbor_transport::{Transport, TransportConfig};
use tokio::sync::OnceCell;

use crate::config::ServerConfig;
use crate::connection::{Connection, ConnectionArgs, ConnectionHandle, Io};
use crate::dyn_handler::DynServerHandler;
use crate::error::{ConnectError, ServeError, StartError};
use crate::handler::{ListKind, ServerHandler, ServerInfo};
use crate::observe::{ServerView, TenantLoad};
use crate::principal::Principal;
use crate::requester::Requester;
use crate::subscription::{topics, BuiltIn, Erased, ErasedHandler, SubscriptionHandler};
use crate::tasks::{core_tasks_capability, MemoryTaskStore, ResultWaiters, TaskStore, TaskStreams, Tasks};
use crate::tenant::routers::TenantHandlers;
use crate::tenant::{Admission, TenantBounds, TenantRefusal, TenantRegistry};
use crate::tree::{Tree, DEFAULT_TENANT};

/// What a connection is told about its peer beyond the bytes: who it is and whose.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConnectOptions {
    /// The tenant the connection belongs to; `None` is the default tenant.
    pub tenant: Option<String>,
    /// The authenticated identity, if the transport established one: a name compared as
    /// an exact string ([`Principal::key`](crate::Principal::key) when set by
    /// [`ConnectOptions::principal`]).
    pub auth: Option<String>,
    /// The verified principal behind `auth`, when the transport verified a token (what
    /// handlers read as [`RequestContext::principal`](crate::RequestContext::principal)).
    pub principal: Option<Arc<Principal>>,
    /// The peer's address, if the transport knows it (an HTTP session's client). Without
    /// `auth`, it names the connection's [`Requester`](crate::Requester): the bounds one
    /// client may not exceed across all its connections count against it.
    pub peer: Option<SocketAddr>,
    /// The legacy HTTP session this connection serves (`Mcp-Session-Id`), for the spans'
    /// `mcp.session.id` (never set on 2026-07-28 requests, whatever this says).
    pub session_id: Option<Arc<str>>,
}

impl ConnectOptions {
    /// A connection of `tenant`.
    pub fn tenant(tenant: impl Into<String>) -> Self {
        ConnectOptions { tenant: Some(tenant.into()), ..Default::default() }
    }

    /// The same options with an authenticated identity.
    pub fn auth(mut self, auth: impl Into<String>) -> Self {
        self.auth = Some(auth.into());
        self
    }

    /// The same options authenticated as `principal`: `auth` becomes its
    /// [`key`](Principal::key) (issuer and subject).
    pub fn principal(mut self, principal: Arc<Principal>) -> Self {
        self.auth = Some(principal.key());
        self.principal = Some(principal);
        self
    }

    /// The same options for the legacy session `id` (see [`ConnectOptions::session_id`]).
    pub fn session_id(mut self, id: Arc<str>) -> Self {
        self.session_id = Some(id);
        self
    }

    /// The same options with the peer's address.
    pub fn peer(mut self, peer: SocketAddr) -> Self {
        self.peer = Some(peer);
        self
    }
}

/// Read-only state shared by every connection of a server.
pub(crate) struct Shared {
    /// The server's own handler: its `info()` and `capabilities()` are what every client is
    /// told; tenants without a handler of their own run it.
    pub(crate) handler: Arc<dyn DynServerHandler>,
    /// Each tenant's handler (`crate::tenant::routers`): what a request runs on.
    pub(crate) tenants: Arc<TenantHandlers>,
    /// Where list changes, resource updates and the user's topics are published.
    pub(crate) bus: Arc<dyn Bus>,
    /// The user's subscription handlers, as registered (kept to rebuild `stream_handlers`).
    pub(crate) user_handlers: Vec<Arc<dyn ErasedHandler>>,
    /// What every subscription stream runs: the user's handlers, then the built-in one.
    pub(crate) stream_handlers: Arc<[Arc<dyn ErasedHandler>]>,
    pub(crate) info: ServerInfo,
    /// As the handler declared them.
    pub(crate) capabilities: ServerCapabilities,
    /// As `server/discover` advertises them: without the legacy `tasks`.
    pub(crate) modern_capabilities: ServerCapabilities,
    pub(crate) config: ServerConfig,
    pub(crate) handshake: Handshake,
    pub(crate) per_request: PerRequest,
    /// The tasks' store and this node's runs (`crate::tasks`).
    pub(crate) tasks: Arc<Tasks>,
    /// The 2025-11-25 `tasks/result` requests blocked on each task: where a task's input
    /// requests go first (`tasks::legacy_input`).
    pub(crate) result_waiters: Arc<ResultWaiters>,
    /// The drain's signal to request tasks and streams (`crate::drain`).
    pub(crate) drain: crate::drain::DrainSignal,
    /// Every tenant's limits, by `ServerConfig::tenants` (`crate::tenant`).
    pub(crate) tenant_limits: Arc<TenantRegistry>,
}

impl Shared {
    /// `tenants`: the tenant handlers of the server being reconfigured, kept (`None`: a
    /// new server's, none yet).
    fn build(
        handler: Arc<dyn DynServerHandler>,
        config: ServerConfig,
        bus: Arc<dyn Bus>,
        user_handlers: Vec<Arc<dyn ErasedHandler>>,
        store: Option<Arc<dyn TaskStore>>,
        tenants: Option<Arc<TenantHandlers>>,
    ) -> Shared {
        let info = handler.info();
        let mut capabilities = handler.capabilities();
        for h in &user_handlers {
            h.capabilities().fold_into(&mut capabilities);
        }
        let mut modern_capabilities = capabilities.clone();
        modern_capabilities.tasks = None;
        let tenants = tenants.unwrap_or_else(|| Arc::new(TenantHandlers::new(handler.clone())));
        let builtin = BuiltIn { capabilities: capabilities.clone(), handlers: tenants.clone() };
        let offered = capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(crate::tasks::TASKS_EXTENSION));
        if offered && capabilities.tasks.is_none() {
            // The same tasks, on the 2025-11-25 wire: advertised to sessions of that
            // revision only (`legacy_capabilities`).
            capabilities.tasks = Some(core_tasks_capability());
        }
        let store = store.unwrap_or_else(|| Arc::new(MemoryTaskStore::new(&config.tasks)));
        let bounds = TenantBounds {
            in_flight: config.max_in_flight_per_tenant,
            in_flight_per_requester: config.max_in_flight_per_requester,
            streams_per_requester: config.max_subscriptions_per_requester,
            running_tasks: config.tasks.max_running,
        };
        let tenant_limits = Arc::new(TenantRegistry::new(config.tenants.clone(), bounds));
        let tasks =
            Arc::new(Tasks::new(config.tasks.clone(), store.clone(), bus.clone(), offered, tenant_limits.clone()));
        // Signals the store carries here from other nodes reach this server's runs.
        store.attach_runs(crate::tasks::weak_runs(&tasks));
        let task_streams = TaskStreams { tasks: tasks.clone() };
        let stream_handlers: Vec<Arc<dyn ErasedHandler>> = user_handlers
            .iter()
            .cloned()
            .chain([Arc::new(Erased(builtin)) as Arc<dyn ErasedHandler>, Arc::new(Erased(task_streams))])
            .collect();
        Shared {
            handshake: Handshake::new(config.supported_versions.clone()),
            per_request: PerRequest::new(config.supported_versions.clone()),
            handler,
            tenants,
            bus,
            user_handlers,
            stream_handlers: stream_handlers.into(),
            info,
            capabilities,
            modern_capabilities,
            tasks,
            result_waiters: Arc::default(),
            config,
            drain: crate::drain::DrainSignal::new(),
            tenant_limits,
        }
    }

    /// The capabilities an `initialize` result advertises under `version`: only members
    /// that revision has.
    pub(crate) fn legacy_capabilities(&self, version: ProtocolVersion) -> ServerCapabilities {
        let mut caps = self.capabilities.clone();
        // Extensions are 2026-07-28 capabilities, except the skills extension, which rides
        // on plain resources and is read from `initialize` in the handshake era (SEP-2640).
        // The tasks extension has the 2025-11-25 core tasks as its legacy form instead.
        caps.extensions = caps
            .extensions
            .take()
            .map(|mut extensions| {
                extensions.retain(|id, _| id == crate::skills::SKILLS_EXTENSION);
                extensions
            })
            .filter(|extensions| !extensions.is_empty());
        if !version.supports(Feature::CompletionsCapability) {
            caps.completions = None;
        }
        if !version.supports(Feature::CoreTasks) {
            caps.tasks = None;
        }
        caps
    }
}

/// An MCP server: a handler, its configuration, and (once running) its supervision tree.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    pub(crate) tree: Arc<OnceCell<Tree>>,
    /// Forwards the handler's list changes onto the bus while the tree runs.
    forwarder: Arc<parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>>,
    /// The periodic sweep of expired task records (`start_task_expiry`).
    expiry: Arc<parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>>,
    /// Escalates tenants past their restart budget (`start_escalator`).
    escalator: Arc<parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.shared.info)
            .field("config", &self.shared.config)
            .field("running", &self.tree.initialized())
            .finish()
    }
}

impl Server {
    /// A server for `handler` with the default configuration.
    pub fn new(handler: impl ServerHandler) -> Server {
        Server::with_config(handler, ServerConfig::default())
    }

    /// A server for `handler` with `config`.
    pub fn with_config(handler: impl ServerHandler, config: ServerConfig) -> Server {
        Server::from_arc(Arc::new(handler), config)
    }

    /// A server on `shared`, not started: its tree, forwarder and expiry sweep begin with
    /// the first connection.
    fn from_shared(shared: Shared) -> Server {
        Server {
            shared: Arc::new(shared),
            tree: Arc::new(OnceCell::new()),
            forwarder: Arc::default(),
            expiry: Arc::default(),
            escalator: Arc::default(),
        }
    }

    /// A server for a shared handler.
    pub fn from_arc<H: ServerHandler>(handler: Arc<H>, config: ServerConfig) -> Server {
        let shared = Shared::build(handler, config, Arc::new(LocalBus::new()), Vec::new(), None, None);
        Server::from_shared(shared)
    }

    /// The same server publishing and subscribing through `bus` (default: an in-process
    /// [`LocalBus`]; a `RedisBus`, arbor-bus's `redis` feature, reaches the clients of every node).
    /// Configure before connecting: a server already serving keeps its bus.
    pub fn with_bus(self, bus: Arc<dyn Bus>) -> Server {
        let s = &self.shared;
        let store = Some(s.tasks.store.clone());
        let tenants = Some(s.tenants.clone());
        let shared = Shared::build(s.handler.clone(), s.config.clone(), bus, s.user_handlers.clone(), store, tenants);
        Server::from_shared(shared)
    }

    /// The same server keeping its task records in `store` (default: a
    /// [`MemoryTaskStore`] with [`ServerConfig::tasks`]' caps). Servers sharing one store
    /// serve each other's tasks to their owners (`tasks/get`, `tasks/result`,
    /// `tasks/list`, `tasks/cancel`); a run stays on the server that started it, and the
    /// server hands the store its runs ([`TaskStore::attach_runs`]) so `tasks/update`
    /// input and `tasks/cancel` arriving elsewhere reach it when the store forwards them
    /// ([`TaskStore::forward`]; the default store has nothing to forward to). Configure
    /// before connecting: a server already serving keeps its store.
    pub fn with_task_store(self, store: Arc<dyn TaskStore>) -> Server {
        let s = &self.shared;
        let (bus, handlers, tenants) = (s.bus.clone(), s.user_handlers.clone(), Some(s.tenants.clone()));
        let shared = Shared::build(s.handler.clone(), s.config.clone(), bus, handlers, Some(store), tenants);
        Server::from_shared(shared)
    }

    /// The same server with a subscription handler, run on every subscription stream
    /// after those registered before it (see [`SubscriptionHandler`]). Its
    /// [`subscription_capabilities`](SubscriptionHandler::subscription_capabilities) are
    /// folded into the advertised capabilities. Configure before connecting.
    pub fn subscription_handler(self, handler: impl SubscriptionHandler) -> Server {
        let s = &self.shared;
        let mut handlers = s.user_handlers.clone();
        handlers.push(Arc::new(Erased(handler)));
        let (store, tenants) = (Some(s.tasks.store.clone()), Some(s.tenants.clone()));
        let shared = Shared::build(s.handler.clone(), s.config.clone(), s.bus.clone(), handlers, store, tenants);
        Server::from_shared(shared)
    }

    /// The bus this server publishes on and its streams subscribe to.
    pub fn bus(&self) -> Arc<dyn Bus> {
        self.shared.bus.clone()
    }

    /// Publishes `message` on the bus: every stream that joined its topic, on every node
    /// sharing the bus, gets it. Broadcasting to every connected client is this one call
    /// on a topic their subscription handler joins.
    pub fn publish(&self, message: BusMessage) -> Result<(), PublishError> {
        self.shared.bus.publish(message)
    }

    /// Announces that the resource `uri` changed: `notifications/resources/updated` reaches
    /// every 2026-07-28 listen with `uri` in its `resourceSubscriptions` and every legacy
    /// session subscribed to it.
    pub fn notify_resource_updated(&self, uri: &str) -> Result<(), PublishError> {
        self.publish(topics::resource_updated_message(uri))
    }

    /// Announces that a list changed: `list_changed` reaches every listen that asked for
    /// it and every initialized legacy session, if the server advertises `listChanged` for
    /// that list. A [`RouterHandle`](crate::RouterHandle) change does this by itself.
    pub fn notify_list_changed(&self, kind: ListKind) -> Result<(), PublishError> {
        self.publish(topics::list_changed_message(kind))
    }

    /// Makes `tenant` (a [`ConnectOptions::tenant`] name; [`DEFAULT_TENANT`] for
    /// connections that name none) run `handler` instead of the server's handler, and
    /// returns the tenant's new handler version (see [`Server::tenant_handler_version`]).
    ///
    /// The swap is atomic per request: a request already running (and a task it started)
    /// finishes on the handler it was admitted with; every request of the tenant admitted
    /// after this call, on connections open now or later, runs on `handler`, as do the
    /// tenant's tool deadlines, client notifications, listen URIs and the tool scopes and
    /// parameter headers an HTTP transport checks. The tenant's clients that follow list
    /// changes (legacy sessions and 2026-07-28 listens) are sent `list_changed` for tools,
    /// prompts and resources, where the server advertises `listChanged`, after the swap;
    /// `handler`'s own [`list_changes`](ServerHandler::list_changes) reach them too (a
    /// [`RouterHandle`](crate::RouterHandle) of its router), until it is swapped out. No
    /// other tenant hears of any of it. Works before the server serves and while it does.
    ///
    /// `handler`'s `info()` and `capabilities()` are never read: every client is told the
    /// server's (see [`Server::new`]), so `handler` should serve within them. A request for
    /// a capability the server does not advertise is -32601 whatever `handler` serves; one
    /// the server advertises and `handler` leaves empty is an empty list, which is still
    /// serving it. A tenant's tool set built on the server's is a
    /// [`Router::fork`](crate::Router::fork) edited:
    ///
    /// ```
    /// use arbor_server::router::{NoArgs, Router};
    /// use arbor_server::Server;
    ///
    /// async fn audit(_: NoArgs) -> &'static str { "audited" }
    /// async fn purge(_: NoArgs) -> &'static str { "purged" }
    ///
    /// let shared = Router::new("demo", "1.0.0").tool("purge", "Deletes everything", purge);
    /// let server = Server::new(shared.clone());
    /// // Tenant `acme`: the shared tools, minus `purge`, plus `audit`.
    /// let acme = shared.fork().without_tool("purge").tool("audit", "Audits", audit);
    /// assert_eq!(server.set_tenant_handler("acme", acme), 1);
    /// assert_eq!(server.tenant_handler_version("acme"), 1);
    /// ```
    ///
    /// The handler is this server's: on several nodes sharing a bus, set it on each (the
    /// `list_changed` travels on the bus, so the tenant's clients on every node hear it).
    pub fn set_tenant_handler(&self, tenant: &str, handler: impl ServerHandler) -> u64 {
        self.shared.tenants.swap(tenant, Some(Arc::new(handler)))
    }

    /// Makes `tenant` run the server's handler again, as [`Server::set_tenant_handler`]
    /// would (atomic per request, `list_changed` to the tenant's clients only), and returns
    /// the tenant's new handler version: a clear is a version too.
    pub fn clear_tenant_handler(&self, tenant: &str) -> u64 {
        self.shared.tenants.swap(tenant, None)
    }

    /// The version of `tenant`'s handler now: 0 while the tenant has only ever run the
    /// server's handler, then one more at each [`set_tenant_handler`](Server::set_tenant_handler)
    /// or [`clear_tenant_handler`](Server::clear_tenant_handler). [`Server::observe`] shows
    /// the version each in-flight request runs.
    pub fn tenant_handler_version(&self, tenant: &str) -> u64 {
        self.shared.tenants.version(tenant)
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    async fn tree(&self) -> Result<&Tree, StartError> {
        self.tree
            .get_or_try_init(|| async {
                let gauge = self.shared.config.gauge.clone().unwrap_or_else(Gauge::global);
                let config = &self.shared.config;
                let tree = Tree::start(gauge, self.shared.tenant_limits.clone(), config.tasks.max_running).await?;
                self.shared.tasks.attach(tree.tasks().clone());
                self.start_forwarder();
                self.shared.tenants.start(self.shared.bus.clone());
                self.start_task_expiry();
                self.start_escalator();
                Ok(tree)
            })
            .await
    }

    /// Serves one peer on `transport` under its own supervised connection actor, and
    /// returns at once with a handle on it. Starts the supervision tree if needed.
    pub async fn connect(&self, transport: Transport, options: ConnectOptions) -> Result<Connection, ConnectError> {
        let (reader, writer) = transport.into_parts();
        let handle = self.start_connection(Io::Stream { reader, writer }, options).await?;
        Ok(Connection::new(handle))
    }

    /// Starts a connection actor on `io` under the tenant's connection supervisor.
    pub(crate) async fn start_connection(
        &self,
        io: Io,
        options: ConnectOptions,
    ) -> Result<ConnectionHandle, ConnectError> {
        let tree = self.tree().await.map_err(ConnectError::Start)?;
        let shared = self.shared.clone();
        let tenant = options.tenant.as_deref().unwrap_or(DEFAULT_TENANT);
        // A byte stream and a legacy HTTP session are sessions of their tenant
        // (`TenantQuota::max_sessions`); a 2026-07-28 pool endpoint is not.
        let is_session = matches!(io, Io::Stream { .. }) || options.session_id.is_some();
        let session_slot = match is_session {
            true => {
                let limits = self.shared.tenant_limits.get(tenant).map_err(ConnectError::Refused)?;
                limits.session_slot().map_err(ConnectError::Refused)?
            }
            false => None,
        };
        tree.start_connection(tenant, |tenant, gauge| ConnectionArgs {
            shared,
            io,
            tenant,
            session_slot,
            auth: options.auth,
            principal: options.principal,
            peer: options.peer,
            session_id: options.session_id,
            gauge,
        })
        .await
    }

    /// The handler the server serves.
    pub(crate) fn handler(&self) -> &Arc<dyn DynServerHandler> {
        &self.shared.handler
    }

    /// Serves one peer on `transport` until it goes away, then stops the server. When its
    /// input ends, the requests in flight are drained first (see [`Server::serve_stdio`]).
    pub async fn serve_transport(self, transport: Transport) -> Result<(), ServeError> {
        let connection = self.connect(transport, ConnectOptions::default()).await?;
        connection.closed().await;
        self.shutdown().await;
        Ok(())
    }

    /// Serves the process's stdin and stdout until stdin ends, then stops: the requests
    /// in flight finish first, within [`ServerConfig::drain_timeout`] (those still running
    /// then are answered with a -32603 saying so), and the output is flushed.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let config = TransportConfig { max_frame_bytes: self.shared.config.max_frame_bytes, ..Default::default() };
        let transport = Transport::stdio().with_config(config);
        self.serve_transport(transport).await
    }

    /// Publishes the handler's list changes (`ServerHandler::list_changes`) on the bus,
    /// once per server, so every stream that asked for them hears them.
    /// Its resource updates (`ServerHandler::resource_updates`) go the same way.
    fn start_forwarder(&self) {
        let mut changes = self.shared.handler.list_changes();
        let mut updates = self.shared.handler.resource_updates();
        if changes.is_none() && updates.is_none() {
            return;
        }
        let bus = self.shared.bus.clone();
        let task = tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    // A lagging `ListChanges` yields every kind once: every list may have changed.
                    kind = next_change(&mut changes), if changes.is_some() => match kind {
                        Some(kind) => topics::list_changed_message(kind),
                        None => { changes = None; continue; }
                    },
                    uri = next_update(&mut updates), if updates.is_some() => match uri {
                        Some(uri) => topics::resource_updated_message(&uri),
                        None => { updates = None; continue; }
                    },
                    else => return,
                };
                if bus.publish(message).is_err() {
                    return;
                }
            }
        });
        *self.forwarder.lock() = Some(task);
    }

    /// Drops expired task records every `TaskConfig::ttl` / 10 (1 s … 60 s), so their
    /// memory comes back on a server no request touches. Holds the tasks weakly: it ends
    /// with the server (or at `shutdown`, like the forwarder).
    fn start_task_expiry(&self) {
        let every = (self.shared.config.tasks.ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let tasks = Arc::downgrade(&self.shared.tasks);
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(tasks) = tasks.upgrade() else { return };
                tasks.store.expire().await;
            }
        });
        *self.expiry.lock() = Some(task);
    }

    /// Escalates each tenant that went past its restart budget (`Tree::escalate`), one
    /// after the other. Holds the tree weakly: it ends with the server, or at `shutdown`.
    fn start_escalator(&self) {
        let Some(mut escalations) = self.shared.tenant_limits.take_escalations() else { return };
        let tree = Arc::downgrade(&self.tree);
        let task = tokio::spawn(async move {
            while let Some(escalation) = escalations.recv().await {
                let Some(tree) = tree.upgrade() else { return };
                if let Some(tree) = tree.get() {
                    tree.escalate(&escalation.tenant, &escalation.reason).await;
                }
            }
        });
        *self.escalator.lock() = Some(task);
    }

    /// Checks a request of `tenant` (`None`: the default tenant) from `requester` against
    /// the tenant's policy before anything is spent on it: its quarantine, the
    /// requester's rate, the tenant's rate. A transport calls it before reading a request
    /// (`arbor-http` does, per POST, and answers a refusal with
    /// [`TenantRefusal::status`] and `Retry-After`); a byte stream's requests are checked
    /// by the runtime itself. Each call that passes takes one token of each rate, and
    /// says what else the transport enforces for the tenant (its body cap).
    pub fn admit(&self, tenant: Option<&str>, requester: &Requester) -> Result<Admission, TenantRefusal> {
        let limits = self.shared.tenant_limits.get(tenant.unwrap_or(DEFAULT_TENANT))?;
        limits.gate(Some(requester), true)?;
        Ok(Admission { max_body_bytes: limits.max_body_bytes() })
    }

    /// Stops every connection and request and waits for them. The server can be
    /// connected again afterwards only through a new `Server`.
    pub async fn shutdown(&self) {
        if let Some(task) = self.forwarder.lock().take() {
            task.abort();
        }
        if let Some(task) = self.expiry.lock().take() {
            task.abort();
        }
        if let Some(task) = self.escalator.lock().take() {
            task.abort();
        }
        self.shared.tenants.shutdown();
        if let Some(tree) = self.tree.get() {
            tree.shutdown().await;
        }
    }

    /// The live supervision tree as a snapshot (empty before the first connection).
    pub async fn snapshot(&self) -> Option<NodeSnapshot> {
        match self.tree.get() {
            Some(tree) => Some(tree.snapshot().await),
            None => None,
        }
    }

    /// The live tree as operators see it ([`observe`](crate::observe)): the snapshot
    /// with every connection's in-flight requests and subscription streams, the tasks
    /// extension's tasks, and each tenant's load. `None` before the first connection.
    pub async fn observe(&self) -> Option<ServerView> {
        let mut view = self.tree.get()?.observe(&self.shared.tasks).await;
        self.stamp_versions(&mut view.tenants);
        Some(view)
    }

    /// Every tenant's load now: in flight, admitted and refused requests, connections,
    /// handler version (empty before the first connection).
    pub async fn tenant_loads(&self) -> Vec<TenantLoad> {
        let mut loads = match self.tree.get() {
            Some(tree) => tree.tenant_loads().await,
            None => Vec::new(),
        };
        self.stamp_versions(&mut loads);
        loads
    }

    /// Fills in each load's handler version (the tree knows bounds, not handlers).
    fn stamp_versions(&self, loads: &mut [TenantLoad]) {
        for load in loads {
            load.handler_version = self.shared.tenants.version(&load.tenant);
        }
    }

    /// Fault injection, for exercising supervision (tests, a chaos drill, watching the
    /// observer): stops `tenant`'s connections supervisor with the failure `reason`, as a
    /// crash would. Its connections stop with it (their in-flight requests unanswered, as
    /// when a connection closes) and the tenant supervisor restarts it, which the tree
    /// then shows as a restart of `tenant:<name>` with `reason`; new connections go to
    /// the restarted one. Returns `false` when the tenant has no running connections
    /// supervisor.
    pub async fn inject_crash(&self, tenant: &str, reason: &str) -> bool {
        match self.tree.get() {
            Some(tree) => tree.crash_connections(tenant, reason).await,
            None => false,
        }
    }

    /// The gauge the server's actors and tasks count in.
    pub fn gauge(&self) -> Gauge {
        match self.tree.get() {
            Some(tree) => tree.gauge().clone(),
            None => self.shared.config.gauge.clone().unwrap_or_else(Gauge::global),
        }
    }
}

async fn next_change(changes: &mut Option<crate::ListChanges>) -> Option<ListKind> {
    match changes {
        Some(changes) => changes.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_update(updates: &mut Option<crate::ResourceUpdates>) -> Option<std::sync::Arc<str>> {
    match updates {
        Some(updates) => updates.recv().await,
        None => std::future::pending().await,
    }
}

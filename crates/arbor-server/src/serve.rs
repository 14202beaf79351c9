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
//! capabilities to every client, as the spec's list-stability rules expect.
//!
//! Invariant: everything a connection shares with the others (handler, config, eras,
//! precomputed capabilities) lives in one read-only [`Shared`], so connections never
//! contend on anything but the tenant's in-flight counter.

use std::sync::Arc;

use arbor_otp::{Gauge, NodeSnapshot};
use arbor_protocol::era::{Handshake, PerRequest};
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::version::{Feature, ProtocolVersion};
use arbor_transport::{Transport, TransportConfig};
use tokio::sync::OnceCell;

use crate::config::ServerConfig;
use crate::connection::{Connection, ConnectionArgs};
use crate::error::{ConnectError, ServeError, StartError};
use crate::handler::{ServerHandler, ServerInfo};
use crate::tree::{Tree, DEFAULT_TENANT};

/// What a connection is told about its peer beyond the bytes: who it is and whose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectOptions {
    /// The tenant the connection belongs to; `None` is the default tenant.
    pub tenant: Option<String>,
    /// The authenticated identity, if the transport established one.
    pub auth: Option<String>,
}

impl ConnectOptions {
    /// A connection of `tenant`.
    pub fn tenant(tenant: impl Into<String>) -> Self {
        ConnectOptions { tenant: Some(tenant.into()), auth: None }
    }

    /// The same options with an authenticated identity.
    pub fn auth(mut self, auth: impl Into<String>) -> Self {
        self.auth = Some(auth.into());
        self
    }
}

/// Read-only state shared by every connection of a server.
pub(crate) struct Shared {
    pub(crate) handler: Arc<dyn ServerHandler>,
    pub(crate) info: ServerInfo,
    /// As the handler declared them.
    pub(crate) capabilities: ServerCapabilities,
    /// As `server/discover` advertises them: without the legacy `tasks`.
    pub(crate) modern_capabilities: ServerCapabilities,
    pub(crate) config: ServerConfig,
    pub(crate) handshake: Handshake,
    pub(crate) per_request: PerRequest,
}

impl Shared {
    /// The capabilities an `initialize` result advertises under `version`: only members
    /// that revision has.
    pub(crate) fn legacy_capabilities(&self, version: ProtocolVersion) -> ServerCapabilities {
        let mut caps = self.capabilities.clone();
        caps.extensions = None;
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
    shared: Arc<Shared>,
    tree: Arc<OnceCell<Tree>>,
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

    /// A server for a shared handler.
    pub fn from_arc(handler: Arc<dyn ServerHandler>, config: ServerConfig) -> Server {
        let info = handler.info();
        let capabilities = handler.capabilities();
        let mut modern_capabilities = capabilities.clone();
        modern_capabilities.tasks = None;
        let shared = Shared {
            handshake: Handshake::new(config.supported_versions.clone()),
            per_request: PerRequest::new(config.supported_versions.clone()),
            handler,
            info,
            capabilities,
            modern_capabilities,
            config,
        };
        Server { shared: Arc::new(shared), tree: Arc::new(OnceCell::new()) }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    async fn tree(&self) -> Result<&Tree, StartError> {
        self.tree
            .get_or_try_init(|| {
                let gauge = self.shared.config.gauge.clone().unwrap_or_else(Gauge::global);
                Tree::start(gauge, self.shared.config.max_in_flight_per_tenant)
            })
            .await
    }

    /// Serves one peer on `transport` under its own supervised connection actor, and
    /// returns at once with a handle on it. Starts the supervision tree if needed.
    pub async fn connect(&self, transport: Transport, options: ConnectOptions) -> Result<Connection, ConnectError> {
        let tree = self.tree().await.map_err(|e| ConnectError::Start(e.to_string()))?;
        let (reader, writer) = transport.into_parts();
        let shared = self.shared.clone();
        let tenant = options.tenant.as_deref().unwrap_or(DEFAULT_TENANT);
        let handle = tree
            .start_connection(tenant, |tenant, gauge| ConnectionArgs {
                shared,
                reader,
                writer,
                tenant,
                auth: options.auth,
                gauge,
            })
            .await?;
        Ok(Connection::new(handle))
    }

    /// Serves one peer on `transport` until it goes away, then stops the server.
    pub async fn serve_transport(self, transport: Transport) -> Result<(), ServeError> {
        let connection = self.connect(transport, ConnectOptions::default()).await?;
        connection.closed().await;
        self.shutdown().await;
        Ok(())
    }

    /// Serves the process's stdin and stdout until stdin ends, then stops: in-flight
    /// requests are stopped unanswered and queued output is flushed.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let config = TransportConfig { max_frame_bytes: self.shared.config.max_frame_bytes, ..Default::default() };
        let transport = Transport::stdio().with_config(config);
        self.serve_transport(transport).await
    }

    /// Stops every connection and request and waits for them. The server can be
    /// connected again afterwards only through a new `Server`.
    pub async fn shutdown(&self) {
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

    /// The gauge the server's actors and tasks count in.
    pub fn gauge(&self) -> Gauge {
        match self.tree.get() {
            Some(tree) => tree.gauge().clone(),
            None => self.shared.config.gauge.clone().unwrap_or_else(Gauge::global),
        }
    }
}

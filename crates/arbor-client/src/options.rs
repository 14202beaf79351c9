//! What a client is told before it connects ([`ClientOptions`]) and before each call
//! ([`CallOptions`]): identity, era mode, timeouts, restart policy, progress, assigns.
//!
//! This module holds settings only; nothing here does IO. Defaults follow ConduitMcp's
//! client: a 60 s call timeout, a 10 min maximum total, progress resetting the timeout.
//! Invariant: a call's effective deadline never passes its maximum total timeout, however
//! often progress resets it or server requests pause it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::model::common::Implementation;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::utilities::ProgressNotificationParams;
use tokio_util::sync::CancellationToken;

use crate::era::EraCache;
use crate::handler::{Assigns, ClientHandler, ClientLimits, DynClientHandler, HostedTasks};

/// Which era to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EraMode {
    /// Probe with `server/discover`, fall back to `initialize` on any other error or
    /// silence; remember the answer per server in the [`EraCache`].
    #[default]
    Detect,
    /// Speak 2026-07-28 only (`server/discover` must succeed).
    ForceModern,
    /// Speak the handshake era only (`initialize` at once, no probe).
    ForceLegacy,
}

/// What happens when a stdio server exits on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RestartPolicy {
    /// Stay disconnected until [`crate::Client::restart`] is called.
    #[default]
    Manual,
    /// Restart at once, at most `max_restarts` times within `within` (then stay down).
    OnExit {
        /// Restarts allowed in the window.
        max_restarts: u32,
        /// The sliding window.
        within: Duration,
    },
}

/// Settings of one client (one server connection).
#[derive(Clone)]
pub struct ClientOptions {
    pub(crate) info: Implementation,
    pub(crate) server_id: Option<String>,
    pub(crate) era_mode: EraMode,
    pub(crate) era_cache: EraCache,
    pub(crate) probe_timeout: Duration,
    pub(crate) handler: Option<Arc<dyn DynClientHandler>>,
    pub(crate) limits: ClientLimits,
    pub(crate) assigns: Option<Assigns>,
    pub(crate) timeout: Duration,
    pub(crate) max_total_timeout: Duration,
    pub(crate) reset_on_progress: bool,
    pub(crate) restart: RestartPolicy,
    pub(crate) max_input_rounds: usize,
    pub(crate) hosted_tasks: Option<HostedTasks>,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("info", &self.info.name)
            .field("server_id", &self.server_id)
            .field("era_mode", &self.era_mode)
            .field("handler", &self.handler.is_some())
            .field("timeout", &self.timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("restart", &self.restart)
            .field("hosted_tasks", &self.hosted_tasks)
            .finish_non_exhaustive()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions::new("arbor-client", env!("CARGO_PKG_VERSION"))
    }
}

impl ClientOptions {
    /// A client that calls itself `name` `version` (its `clientInfo`).
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientOptions {
            info: Implementation::new(name, version),
            server_id: None,
            era_mode: EraMode::Detect,
            era_cache: EraCache::global(),
            probe_timeout: Duration::from_secs(5),
            handler: None,
            limits: ClientLimits::default(),
            assigns: None,
            timeout: Duration::from_secs(60),
            max_total_timeout: Duration::from_secs(600),
            reset_on_progress: true,
            restart: RestartPolicy::Manual,
            max_input_rounds: 8,
            hosted_tasks: None,
        }
    }

    /// The operator's id for the server (handler contexts, logs, the supervisor's name).
    pub fn server_id(mut self, id: impl Into<String>) -> Self {
        self.server_id = Some(id.into());
        self
    }

    /// Which era to speak (default: detect).
    pub fn era(mut self, mode: EraMode) -> Self {
        self.era_mode = mode;
        self
    }

    /// Where detected eras are remembered (default: [`EraCache::global`]).
    pub fn era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = cache;
        self
    }

    /// How long the `server/discover` probe waits before taking silence for a legacy
    /// server (default 5 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// The handler answering the server's input requests; the client advertises only
    /// what it implements. Without one, the client declares no capabilities.
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// The handler, already shared.
    pub fn handler_arc<H: ClientHandler>(mut self, handler: Arc<H>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Limits and safety settings of the handler runtime.
    pub fn limits(mut self, limits: ClientLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Lets a 2025-11-25 server ask for sampling and elicitation as tasks (declared at
    /// `initialize` as `capabilities.tasks`, for the kinds the handler serves), kept and
    /// bounded as `config` says. Off by default; overrides
    /// [`ClientLimits::tasks`](crate::handler::ClientLimits::tasks).
    pub fn host_tasks(mut self, config: HostedTasks) -> Self {
        self.hosted_tasks = Some(config);
        self
    }

    /// The client's own assigns, seen by handler callbacks not tied to a call.
    pub fn assigns(mut self, assigns: Assigns) -> Self {
        self.assigns = Some(assigns);
        self
    }

    /// The default per-call timeout (60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The default maximum total time of a call, whatever progress or pauses (10 min).
    pub fn max_total_timeout(mut self, timeout: Duration) -> Self {
        self.max_total_timeout = timeout;
        self
    }

    /// Whether progress notifications reset a call's timeout by default (true).
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = reset;
        self
    }

    /// What to do when a stdio server exits on its own (default: wait for `restart`).
    pub fn restart_policy(mut self, policy: RestartPolicy) -> Self {
        self.restart = policy;
        self
    }

    /// The bound on `input_required` rounds of one call (default 8).
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }
}

/// One progress update of a call, its numbers as `f64` (the spec's `progress` and
/// `total` are JSON numbers, integers or not).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// How far along; increases with each update.
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// A human-readable status, when sent.
    pub message: Option<&'a str>,
    /// The notification's params as received (the token, `_meta`, exact numbers).
    pub raw: &'a ProgressNotificationParams,
}

impl<'a> Progress<'a> {
    /// Reads a notification's params.
    pub fn new(raw: &'a ProgressNotificationParams) -> Progress<'a> {
        // Without serde_json's arbitrary precision every JSON number has an f64 reading.
        let number = |n: &serde_json::Number| n.as_f64().unwrap_or(f64::NAN);
        Progress {
            progress: number(&raw.progress),
            total: raw.total.as_ref().map(number),
            message: raw.message.as_deref(),
            raw,
        }
    }

    /// `progress / total`, when the total is known and not zero.
    pub fn fraction(&self) -> Option<f64> {
        self.total.filter(|t| *t != 0.0).map(|t| self.progress / t)
    }
}

/// A progress callback.
pub type ProgressFn = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// Settings of one call; unset fields take the client's defaults.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total_timeout: Option<Duration>,
    pub(crate) reset_on_progress: Option<bool>,
    pub(crate) on_progress: Option<ProgressFn>,
    pub(crate) assigns: Option<Assigns>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) log_level: Option<LoggingLevel>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("on_progress", &self.on_progress.is_some())
            .field("assigns", &self.assigns)
            .field("log_level", &self.log_level)
            .finish_non_exhaustive()
    }
}

impl CallOptions {
    /// Default settings.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// The time allowed without an answer (reset by progress when enabled).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The hard bound on the whole call.
    pub fn max_total_timeout(mut self, timeout: Duration) -> Self {
        self.max_total_timeout = Some(timeout);
        self
    }

    /// Whether progress resets the timeout.
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = Some(reset);
        self
    }

    /// Asks for progress (a `progressToken` in `_meta`) and calls `f` with each update.
    pub fn on_progress(mut self, f: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// User data handed to the handler for server requests tied to this call.
    pub fn assigns(mut self, assigns: Assigns) -> Self {
        self.assigns = Some(assigns);
        self
    }

    /// Opts this request into `notifications/message` at `level` and above (2026-07-28,
    /// `_meta` `io.modelcontextprotocol/logLevel`; the legacy era sets a session-wide level
    /// with `Client::set_level` instead, so this is ignored there).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// A token that cancels the call when cancelled (dropping the call's future cancels
    /// it too): tokio-util's [`CancellationToken`], so one token (or a child of one) can
    /// stop a call together with whatever else the caller runs under it.
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

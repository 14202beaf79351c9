//! The server runtime's settings: limits, deadlines, the state key, supported versions.
//!
//! Plain data, read when a [`Server`](crate::Server) is built and shared read-only by every
//! connection; nothing here acts. It is not the handler's configuration (what the server
//! offers is the handler's business) and not the transport's (the frame cap is copied into
//! each transport the server opens).
//!
//! Invariant: every limit has a finite, safe default, so a server built with
//! `ServerConfig::default()` never queues work without bound and never lets a request run
//! forever.

use std::time::Duration;

use arbor_bus::SubscribeOptions;
use arbor_otp::Gauge;
use arbor_protocol::era::SupportedVersions;
use arbor_protocol::model::common::CacheScope;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::version::ProtocolVersion;

use crate::input::StateKey;
use crate::tasks::TaskConfig;
use crate::tenant::TenantPolicy;

/// Settings of a [`Server`](crate::Server).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Requests one connection may have in flight; beyond it a request is refused at once
    /// with the overload error (-32000, retry hint in `data`). Default 1024.
    pub max_in_flight_per_connection: usize,
    /// Requests all connections of one tenant may have in flight together. Default 16384.
    pub max_in_flight_per_tenant: usize,
    /// How long a request may run before it is stopped and answered with a timeout error;
    /// `ServerHandler::tool_deadline` overrides it per tool. Default 60 s.
    pub default_deadline: Duration,
    /// The retry hint sent with an overload error. Default 50 ms.
    pub overload_retry_after: Duration,
    /// The longest frame accepted on stdio and the streams [`Server::serve_transport`]
    /// opens by default, in bytes. Default 4 MiB.
    ///
    /// [`Server::serve_transport`]: crate::Server::serve_transport
    pub max_frame_bytes: usize,
    /// The protocol revisions served, across both eras. Default: all of them.
    pub supported_versions: SupportedVersions,
    /// The secret that seals 2026-07-28 `requestState`. Default: random per process, so
    /// states do not survive a restart; set one to share states across instances.
    pub state_key: StateKey,
    /// The most rounds of legacy input (server-to-client requests) one request may take.
    /// Default 8.
    pub max_input_rounds: usize,
    /// Ask a 2025-11-25 client to run `sampling/createMessage` and `elicitation/create` as
    /// tasks kept for this TTL (`params.task`), when it declared
    /// `capabilities.tasks.requests` for them at `initialize`; the server then polls the
    /// client's `tasks/get` and fetches `tasks/result`, and the handler sees only the
    /// answer. Default `None`: plain requests, which every client answers.
    pub client_tasks: Option<Duration>,
    /// Cache hints put on 2026-07-28 cacheable results whose handler set none.
    /// Default: `ttlMs` 0 (stale at once) and `cacheScope` private, which is always safe.
    pub cache_ttl: Duration,
    /// See [`ServerConfig::cache_ttl`].
    pub cache_scope: CacheScope,
    /// The level legacy sessions log at before the client sends `logging/setLevel`, if the
    /// server advertises `logging`. Default `info`.
    pub default_log_level: Option<LoggingLevel>,
    /// The gauge the runtime's actors and tasks count in; a fresh one per test lets it
    /// assert nothing leaked. Default: the process-wide gauge.
    pub gauge: Option<Gauge>,
    /// Subscription streams (2026-07-28 listens, legacy resource subscriptions) one
    /// connection may hold open; beyond it a listen is refused with the overload error.
    /// Default 256.
    pub max_subscriptions_per_connection: usize,
    /// Requests one requester (principal, else peer address; see
    /// [`Requester`](crate::Requester)) may have in flight in its tenant, across all its
    /// connections, sessions and 2026-07-28 POSTs; beyond it a request is refused at once
    /// with the overload error, scope `requester`. Requests of an unknown requester (stdio,
    /// a router mounted without peer addresses) are not counted. Default 256, a quarter of
    /// the default connection bound, so one client can fill neither a shared 2026-07-28
    /// endpoint nor, through many sessions, the tenant. Behind a proxy every client has the
    /// proxy's address: name principals with the tenant hook, or raise this.
    pub max_in_flight_per_requester: usize,
    /// Subscription streams (2026-07-28 listens, legacy resource subscriptions) one
    /// requester may hold open in its tenant, across all its connections and sessions;
    /// beyond it a listen or subscription is refused with the overload error, scope
    /// `requester`. Default 64, a quarter of the default subscription bound.
    pub max_subscriptions_per_requester: usize,
    /// The bus queue of each topic the runtime joins for a stream (`list_changed`,
    /// `resources/updated`): its bound and what happens when a slow client lets it fill.
    /// Default: 256 entries, coalescing changes of the same list or URI (a client that
    /// falls behind hears each change once, not every time). `EndStream` ends a listen;
    /// a legacy session's streams, which cannot tell their client they ended, drop the
    /// oldest and report the gap instead (`Channel::join`).
    pub subscription_options: SubscribeOptions,
    /// The task store of the tasks extension: TTL, polling interval, bounds.
    pub tasks: TaskConfig,
    /// When a byte stream's input ends (stdin closed), how long the requests still in
    /// flight may run on before each is stopped and answered with a -32603 saying so; the
    /// connection closes once all are answered. Default 5 s.
    pub drain_timeout: Duration,
    /// Whether request spans carry tool calls' arguments and results
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, see
    /// [`telemetry`](crate::telemetry)). They may hold anything a user typed or a tool
    /// read, so they are opt-in. Default false.
    pub trace_tool_payloads: bool,
    /// Per-tenant quotas, rate limits and restart budgets (`crate::tenant`). Default: no
    /// rate limits, no restart budget, and this configuration's bounds for every tenant.
    pub tenants: TenantPolicy,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_in_flight_per_connection: 1024,
            max_in_flight_per_tenant: 16 * 1024,
            default_deadline: Duration::from_secs(60),
            overload_retry_after: Duration::from_millis(50),
            max_frame_bytes: arbor_transport::DEFAULT_MAX_FRAME_BYTES,
            supported_versions: SupportedVersions::all(),
            state_key: StateKey::random(),
            max_input_rounds: 8,
            client_tasks: None,
            cache_ttl: Duration::ZERO,
            cache_scope: CacheScope::Private,
            default_log_level: Some(LoggingLevel::Info),
            gauge: None,
            max_subscriptions_per_connection: 256,
            max_in_flight_per_requester: 256,
            max_subscriptions_per_requester: 64,
            subscription_options: SubscribeOptions::coalesce(),
            tasks: TaskConfig::default(),
            drain_timeout: Duration::from_secs(5),
            trace_tool_payloads: false,
            tenants: TenantPolicy::default(),
        }
    }
}

impl ServerConfig {
    /// Sets [`ServerConfig::trace_tool_payloads`].
    pub fn trace_tool_payloads(mut self, on: bool) -> Self {
        self.trace_tool_payloads = on;
        self
    }

    /// Sets [`ServerConfig::max_in_flight_per_connection`].
    pub fn max_in_flight_per_connection(mut self, max: usize) -> Self {
        self.max_in_flight_per_connection = max;
        self
    }

    /// Sets [`ServerConfig::max_in_flight_per_tenant`].
    pub fn max_in_flight_per_tenant(mut self, max: usize) -> Self {
        self.max_in_flight_per_tenant = max;
        self
    }

    /// Sets [`ServerConfig::default_deadline`].
    pub fn default_deadline(mut self, deadline: Duration) -> Self {
        self.default_deadline = deadline;
        self
    }

    /// Sets [`ServerConfig::max_frame_bytes`].
    pub fn max_frame_bytes(mut self, max: usize) -> Self {
        self.max_frame_bytes = max;
        self
    }

    /// Serves only `versions`.
    pub fn supported_versions(mut self, versions: impl IntoIterator<Item = ProtocolVersion>) -> Self {
        self.supported_versions = SupportedVersions::new(versions);
        self
    }

    /// Sets [`ServerConfig::state_key`].
    pub fn state_key(mut self, key: StateKey) -> Self {
        self.state_key = key;
        self
    }

    /// Sets [`ServerConfig::client_tasks`]: legacy sampling and elicitation requests run
    /// as tasks on clients that support it, kept for `ttl`.
    pub fn client_tasks(mut self, ttl: Duration) -> Self {
        self.client_tasks = Some(ttl);
        self
    }

    /// Sets [`ServerConfig::max_input_rounds`].
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }

    /// Sets the default cache hints ([`ServerConfig::cache_ttl`], [`ServerConfig::cache_scope`]).
    pub fn cache(mut self, ttl: Duration, scope: CacheScope) -> Self {
        self.cache_ttl = ttl;
        self.cache_scope = scope;
        self
    }

    /// Sets [`ServerConfig::subscription_options`].
    pub fn subscription_options(mut self, options: SubscribeOptions) -> Self {
        self.subscription_options = options;
        self
    }

    /// Sets [`ServerConfig::max_subscriptions_per_connection`].
    pub fn max_subscriptions_per_connection(mut self, max: usize) -> Self {
        self.max_subscriptions_per_connection = max;
        self
    }

    /// Sets [`ServerConfig::max_in_flight_per_requester`].
    pub fn max_in_flight_per_requester(mut self, max: usize) -> Self {
        self.max_in_flight_per_requester = max;
        self
    }

    /// Sets [`ServerConfig::max_subscriptions_per_requester`].
    pub fn max_subscriptions_per_requester(mut self, max: usize) -> Self {
        self.max_subscriptions_per_requester = max;
        self
    }

    /// Sets [`ServerConfig::tasks`].
    pub fn tasks(mut self, tasks: TaskConfig) -> Self {
        self.tasks = tasks;
        self
    }

    /// Sets [`ServerConfig::drain_timeout`].
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Sets [`ServerConfig::tenants`].
    pub fn tenant_policy(mut self, policy: TenantPolicy) -> Self {
        self.tenants = policy;
        self
    }

    /// Counts the runtime's actors and tasks in `gauge`.
    pub fn gauge(mut self, gauge: Gauge) -> Self {
        self.gauge = Some(gauge);
        self
    }
}

//! The client's limits and safety settings for answering a server: plain data, defaults
//! from ConduitMcp's client handler (see `ClientLimits::default`).
//!
//! Nothing here acts; the runtime reads these when it starts. Every limit has a finite,
//! safe default, so a default client can be neither flooded nor made to wait forever.

use std::time::Duration;

pub use super::safety::rate::RateLimit;
use super::HostedTasks;

/// Limits and safety settings for one client's handler runtime.
#[derive(Clone, Debug)]
pub struct ClientLimits {
    /// Legacy server requests answered at once; over it the server gets -32000 busy. (8)
    pub max_server_requests: usize,
    /// How long a legacy sampling or roots request, or a modern input request of those
    /// kinds, may run; then it is stopped and answered -32603. (60 s)
    pub handler_timeout: Duration,
    /// The same for elicitation, which waits on a person. (5 min)
    pub elicitation_timeout: Duration,
    /// Input requests (sampling, elicitation, roots) of the server, both eras. (10/s, bursts of 20)
    pub input_rate: RateLimit,
    /// Server log entries (`notifications/message`); the rest are dropped and counted. (50/s, bursts of 100)
    pub log_rate: RateLimit,
    /// Notifications waiting for the handler; beyond it new ones are dropped and counted. (1,000)
    pub notification_queue: usize,
    /// Sampling policy.
    pub sampling: SamplingLimits,
    /// Elicitation policy.
    pub elicitation: ElicitationLimits,
    /// Client-hosted tasks (2025-11-25): `Some` lets a server ask for sampling and
    /// elicitation as tasks, and declares so. (`None`: off)
    pub tasks: Option<HostedTasks>,
}

impl Default for ClientLimits {
    fn default() -> Self {
        ClientLimits {
            max_server_requests: 8,
            handler_timeout: Duration::from_secs(60),
            elicitation_timeout: Duration::from_secs(5 * 60),
            input_rate: RateLimit::new(10, 20),
            log_rate: RateLimit::new(50, 100),
            notification_queue: 1000,
            sampling: SamplingLimits::default(),
            elicitation: ElicitationLimits::default(),
            tasks: None,
        }
    }
}

/// Sampling policy: the handler is the approval point, these bound what reaches it.
#[derive(Clone, Debug)]
pub struct SamplingLimits {
    /// `maxTokens` is clamped to this. (4096)
    pub max_tokens: i64,
    /// Honour `includeContext` (and advertise `sampling.context`); otherwise it is coerced
    /// to `none`. (false)
    pub allow_context: bool,
    /// Answer a legacy sampling request that arrives while no call is in flight. (false)
    pub allow_idle: bool,
    /// Refuse a request whose messages hold more assistant `tool_use` turns than this. (5)
    pub max_tool_iterations: usize,
    /// The JSON-RPC code of policy refusals: idle, tool loop, over the input budget. (-1)
    pub rejection_code: i64,
}

impl Default for SamplingLimits {
    fn default() -> Self {
        SamplingLimits {
            max_tokens: 4096,
            allow_context: false,
            allow_idle: false,
            max_tool_iterations: 5,
            rejection_code: -1,
        }
    }
}

/// Elicitation policy.
#[derive(Clone, Debug, Default)]
pub struct ElicitationLimits {
    /// The server's origin (`https://host[:port]`) for URL-mode origin checks, when the
    /// transport does not report one (HTTP transports do, via `set_server_origin`).
    pub origin: Option<String>,
}

//! How a [`RedisTaskStore`](super::RedisTaskStore) is set up, and why connecting failed.
//!
//! Plain settings with defaults fit for production (a 5 s lease, a 2 s bound on each Redis
//! call, the caps of [`TaskConfig`]); tests shorten the lease. Nothing here talks to Redis.
//! Invariant: the defaults' caps are [`TaskConfig::default`]'s, so a cluster refuses what
//! one node with the in-memory store would.

use std::time::Duration;

use arbor_server::tasks::TaskConfig;

/// How a [`RedisTaskStore`](super::RedisTaskStore) is set up.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RedisTaskStoreOptions {
    /// Every key starts with it (default `arbor:`), so several deployments share a Redis.
    pub prefix: String,
    /// How long a task outlives its node's last renewal (default 5 s; renewed every
    /// lease/3).
    pub lease: Duration,
    /// The most records in the store (default as [`TaskConfig`]'s).
    pub max_tasks: usize,
    /// The most records of one owner (default as [`TaskConfig`]'s).
    pub max_tasks_per_owner: usize,
    /// How often `wait` (`tasks/result`) reads the record again (default 100 ms).
    pub poll_interval: Duration,
    /// How long one Redis call may take, connecting included (default 2 s).
    pub response_timeout: Duration,
    /// How long a `tasks/update` or `tasks/cancel` forwarded to the node running the task
    /// waits for that node's ack before answering that the node is unreachable (default
    /// 5 s).
    pub forward_timeout: Duration,
}

impl Default for RedisTaskStoreOptions {
    fn default() -> Self {
        let config = TaskConfig::default();
        RedisTaskStoreOptions {
            prefix: "arbor:".into(),
            lease: Duration::from_secs(5),
            max_tasks: config.max_tasks,
            max_tasks_per_owner: config.max_tasks_per_owner,
            poll_interval: Duration::from_millis(100),
            response_timeout: Duration::from_secs(2),
            forward_timeout: Duration::from_secs(5),
        }
    }
}

impl RedisTaskStoreOptions {
    /// The key prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The lease duration.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// The caps: in all, and per owner.
    pub fn caps(mut self, max_tasks: usize, max_tasks_per_owner: usize) -> Self {
        self.max_tasks = max_tasks;
        self.max_tasks_per_owner = max_tasks_per_owner;
        self
    }

    /// The caps of a server's [`TaskConfig`].
    pub fn caps_of(self, config: &TaskConfig) -> Self {
        self.caps(config.max_tasks, config.max_tasks_per_owner)
    }

    /// `wait`'s polling interval.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// The bound of one Redis call.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long a forwarded signal waits for the owner node's ack.
    pub fn forward_timeout(mut self, timeout: Duration) -> Self {
        self.forward_timeout = timeout;
        self
    }
}

/// [`RedisTaskStore::connect`](super::RedisTaskStore::connect) failed: a bad URL, or Redis
/// not reachable now.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect the task store to Redis at {url}: {source}")]
pub struct ConnectError {
    /// The URL given.
    pub url: String,
    /// Why.
    #[source]
    pub source: redis::RedisError,
}

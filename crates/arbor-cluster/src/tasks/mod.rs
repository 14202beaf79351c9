//! [`RedisTaskStore`]: an [`arbor_server::TaskStore`] on Redis, shared by every node
//! behind one load balancer, with leases so a task of a dead node ends `failed`.
//!
//! Layout (under the prefix, `arbor:` by default): the record as JSON at `task:{id}`
//! expiring at its TTL from creation (`PEXPIREAT`); `lease:{id}` while its node is alive,
//! holding that node's id (`lease.rs`); `node:{node id}`, the pub/sub channel on which a
//! node takes the input and cancels forwarded to its runs and the acks of its own
//! forwards (`route.rs`); `owner:{hash}`, the owner's ids scored by a creation sequence (`seq`,
//! `INCR`), for `list` and the per-owner cap; `tasks`, every id scored by its expiry, for
//! the global cap and [`TaskStore::expire`]'s sweep. Set entries of expired records are
//! dropped lazily. A change is a read-modify-write in Rust ([`TaskRecord::apply`], the one
//! status machine) committed by compare-and-set, retried a bounded number of times.
//!
//! What it is not: it does not wake `wait` by pub/sub (it polls), and its caps are checked
//! then taken in two steps, so nodes creating at once may overshoot a cap by a few. It
//! needs Redis 7 or later (`PEXPIREAT … NX`/`GT`, `ZRANGE … BYSCORE`).
//! Invariant: every method answers within about [`RedisTaskStoreOptions::response_timeout`]
//! (an unreachable Redis is [`TaskStoreError::Unavailable`], never a hang), `forward`
//! within [`RedisTaskStoreOptions::forward_timeout`] more; a record moves only through
//! `apply`, so it has exactly one terminal status whichever node sets it.

mod lease;
mod options;
mod route;
mod stored;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::jsonrpc::ErrorObject;
use arbor_server::tasks::{Delivery, TaskCap, TaskChange, TaskOwner, TaskPage, TaskRuns, TaskSignal};
use arbor_server::{TaskRecord, TaskStore, TaskStoreError};
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use lease::{Leased, Renewer};
pub use options::{ConnectError, RedisTaskStoreOptions};
use route::{Listener, Routes};
use stored::{now_ms, Keys, Stored, StoredOwner};

/// The status message (and error message) of a task failed because its node stopped.
pub const LEASE_EXPIRED: &str = "the node running this task stopped (its lease expired)";

/// How many compare-and-set attempts a change makes before giving up as unavailable: a
/// record is changed by its own run and rarely by a reader failing it, so a few suffice.
const CHANGE_ATTEMPTS: usize = 16;

/// Sets the record `KEYS[1]` to `ARGV[2]`, expiring at `ARGV[3]`, only if it still holds
/// `ARGV[1]`: the commit of an optimistic change. A script rather than `WATCH`/`MULTI`,
/// because `WATCH` belongs to a connection and the store's one connection is multiplexed
/// between concurrent calls, where another call's `EXEC` would spend it.
const COMPARE_AND_SET: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  return 1
end
return 0";

/// A [`TaskStore`] on Redis. Each node builds its own (`connect`) on the same URL and
/// prefix, and hands it to its server ([`arbor_server::Server::with_task_store`]):
///
/// ```no_run
/// # async fn node() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
///
/// use arbor_cluster::{RedisTaskStore, RedisTaskStoreOptions};
/// use arbor_server::{Router, Server};
///
/// let store = RedisTaskStore::connect("redis://127.0.0.1:6379/", RedisTaskStoreOptions::default()).await?;
/// let server = Server::new(Router::new("node", "1.0.0")).with_task_store(Arc::new(store));
/// # drop(server);
/// # Ok(())
/// # }
/// ```
pub struct RedisTaskStore {
    inner: Arc<Inner>,
    _renewer: Renewer,
    _listener: Listener,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &self.inner;
        f.debug_struct("RedisTaskStore")
            .field("node", &inner.routes.node)
            .field("options", &inner.options)
            .finish_non_exhaustive()
    }
}

/// The state the renewer shares (by `Weak`).
struct Inner {
    conn: ConnectionManager,
    keys: Keys,
    options: RedisTaskStoreOptions,
    leased: Leased,
    /// This node's id and channel: the lease's value, where signals for its runs arrive.
    routes: Arc<Routes>,
}

fn unavailable(error: redis::RedisError) -> TaskStoreError {
    TaskStoreError::Unavailable(error.to_string())
}

fn malformed(error: serde_json::Error) -> TaskStoreError {
    TaskStoreError::Unavailable(format!("a malformed task record: {error}"))
}

impl Inner {
    /// Runs one Redis call, bounded: the connection's own timeouts, and this one over them
    /// in case a reconnection is what the call waits on.
    async fn run<T>(&self, call: impl Future<Output = redis::RedisResult<T>>) -> Result<T, TaskStoreError> {
        let bound = self.options.response_timeout * 2;
        match tokio::time::timeout(bound, call).await {
            Ok(result) => result.map_err(unavailable),
            Err(_) => Err(TaskStoreError::Unavailable(format!("no answer from Redis within {bound:?}"))),
        }
    }

    /// The record `id` as stored (its JSON text too), and whether it has a lease.
    async fn fetch(&self, id: &str) -> Result<Option<(String, Stored, bool)>, TaskStoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(self.keys.task(id)).cmd("EXISTS").arg(self.keys.lease(id));
        let (text, leased): (Option<String>, bool) = self.run(pipe.query_async(&mut self.conn.clone())).await?;
        let Some(text) = text else { return Ok(None) };
        let stored = serde_json::from_str(&text).map_err(malformed)?;
        Ok(Some((text, stored, leased)))
    }

    /// The record `id` if `owner` may see it, failed first if its node's lease is gone.
    async fn get(&self, owner: &TaskOwner, id: &str) -> Result<TaskRecord, TaskStoreError> {
        let (_, stored, leased) = self.fetch(id).await?.ok_or(TaskStoreError::NotFound)?;
        if stored.owner != StoredOwner::of(owner) {
            return Err(TaskStoreError::NotFound);
        }
        let record = stored.to_record();
        if record.is_terminal() || leased {
            return Ok(record);
        }
        self.fail_orphan(id).await
    }

    /// Fails `id`, whose node stopped, through the change path; if another change got
    /// there first, the record as it is now.
    async fn fail_orphan(&self, id: &str) -> Result<TaskRecord, TaskStoreError> {
        let error = ErrorObject { code: -32603, message: LEASE_EXPIRED.into(), data: None };
        let change = TaskChange::Failed { error: Some(error), result: None, message: None };
        if let Some(record) = self.change(id, change).await? {
            tracing::info!(task = id, "failed a task whose node stopped (lease expired)");
            return Ok(record);
        }
        let (_, stored, _) = self.fetch(id).await?.ok_or(TaskStoreError::NotFound)?;
        Ok(stored.to_record())
    }

    async fn change(&self, id: &str, change: TaskChange) -> Result<Option<TaskRecord>, TaskStoreError> {
        for _ in 0..CHANGE_ATTEMPTS {
            let Some((text, stored, _)) = self.fetch(id).await? else {
                self.leased.untrack(id);
                return Err(TaskStoreError::NotFound);
            };
            let mut record = stored.to_record();
            if !record.apply(change.clone()) {
                if record.is_terminal() {
                    self.leased.untrack(id);
                }
                return Ok(None);
            }
            let after = Stored::of(&record);
            let json = serde_json::to_string(&after).map_err(malformed)?;
            let mut cas = redis::cmd("EVAL");
            cas.arg(COMPARE_AND_SET).arg(1).arg(self.keys.task(id)).arg(&text).arg(json).arg(after.expires_at_ms());
            let swapped: i64 = self.run(cas.query_async(&mut self.conn.clone())).await?;
            if swapped == 1 {
                if record.is_terminal() {
                    self.leased.untrack(id);
                }
                return Ok(Some(record));
            }
        }
        Err(TaskStoreError::Unavailable(format!("task {id} kept changing under {CHANGE_ATTEMPTS} attempts")))
    }

    async fn create(&self, record: TaskRecord) -> Result<(), TaskStoreError> {
        let stored = Stored::of(&record);
        let json = serde_json::to_string(&stored).map_err(malformed)?;
        let expires = stored.expires_at_ms();
        let owner_key = self.keys.owner(&stored.owner);
        let (live, mut owned): (usize, usize) = {
            let mut pipe = redis::pipe();
            pipe.cmd("ZREMRANGEBYSCORE").arg(self.keys.live()).arg("-inf").arg(now_ms()).ignore();
            pipe.cmd("ZCARD").arg(self.keys.live()).cmd("ZCARD").arg(&owner_key);
            self.run(pipe.query_async(&mut self.conn.clone())).await?
        };
        let (max, per_owner) = (self.options.max_tasks, self.options.max_tasks_per_owner);
        if live >= max {
            let retry_after = self.first_expiry().await?;
            return Err(TaskStoreError::Full { cap: TaskCap::Store, limit: max, retry_after });
        }
        if owned >= per_owner {
            let (count, retry_after) = self.prune_owner(&owner_key).await?;
            owned = count;
            if owned >= per_owner {
                return Err(TaskStoreError::Full { cap: TaskCap::Owner, limit: per_owner, retry_after });
            }
        }
        let seq: u64 = self.run(redis::cmd("INCR").arg(self.keys.seq()).query_async(&mut self.conn.clone())).await?;
        let lease_ms = self.options.lease.as_millis().max(1) as u64;
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("SET").arg(self.keys.task(&record.id)).arg(json).ignore();
        pipe.cmd("PEXPIREAT").arg(self.keys.task(&record.id)).arg(expires).ignore();
        pipe.cmd("SET").arg(self.keys.lease(&record.id)).arg(&self.routes.node).arg("PX").arg(lease_ms).ignore();
        pipe.cmd("ZADD").arg(&owner_key).arg(seq).arg(&record.id).ignore();
        pipe.cmd("ZADD").arg(self.keys.live()).arg(expires).arg(&record.id).ignore();
        // The owner's set lives as long as its last record (Redis 7: NX sets a first
        // expiry, GT only ever extends it).
        pipe.cmd("PEXPIREAT").arg(&owner_key).arg(expires).arg("NX").ignore();
        pipe.cmd("PEXPIREAT").arg(&owner_key).arg(expires).arg("GT").ignore();
        self.run(pipe.query_async::<()>(&mut self.conn.clone())).await?;
        self.leased.track(&record.id);
        Ok(())
    }

    /// When the first record of the store expires, from now.
    async fn first_expiry(&self) -> Result<Duration, TaskStoreError> {
        let first: Vec<(String, u64)> = self
            .run(
                redis::cmd("ZRANGE")
                    .arg(self.keys.live())
                    .arg(0)
                    .arg(0)
                    .arg("WITHSCORES")
                    .query_async(&mut self.conn.clone()),
            )
            .await?;
        Ok(first.first().map_or(Duration::ZERO, |(_, at)| Duration::from_millis(at.saturating_sub(now_ms()))))
    }

    /// Drops the owner set's entries of expired records: how many are left, and when the
    /// first of them expires. A scan, made only when the owner's cap is reached.
    async fn prune_owner(&self, owner_key: &str) -> Result<(usize, Duration), TaskStoreError> {
        let ids: Vec<String> =
            self.run(redis::cmd("ZRANGE").arg(owner_key).arg(0).arg(-1).query_async(&mut self.conn.clone())).await?;
        let (stale, records) = self.records(&ids).await?;
        self.forget(owner_key, &stale).await?;
        let first = records.iter().map(|(_, s, _)| s.expires_at_ms()).min();
        let retry_after = first.map_or(Duration::ZERO, |at| Duration::from_millis(at.saturating_sub(now_ms())));
        Ok((records.len(), retry_after))
    }

    /// The records of `ids` that still exist (with their leases), and the ids that do not.
    #[allow(clippy::type_complexity)]
    async fn records(&self, ids: &[String]) -> Result<(Vec<String>, Vec<(String, Stored, bool)>), TaskStoreError> {
        let (mut stale, mut found) = (Vec::new(), Vec::new());
        for chunk in ids.chunks(256) {
            let mut pipe = redis::pipe();
            pipe.cmd("MGET").arg(chunk.iter().map(|id| self.keys.task(id)).collect::<Vec<_>>());
            pipe.cmd("MGET").arg(chunk.iter().map(|id| self.keys.lease(id)).collect::<Vec<_>>());
            let (texts, leases): (Vec<Option<String>>, Vec<Option<String>>) =
                self.run(pipe.query_async(&mut self.conn.clone())).await?;
            for ((id, text), lease) in chunk.iter().zip(texts).zip(leases) {
                match text {
                    None => stale.push(id.clone()),
                    Some(text) => {
                        found.push((id.clone(), serde_json::from_str(&text).map_err(malformed)?, lease.is_some()))
                    }
                }
            }
        }
        Ok((stale, found))
    }

    /// Removes `ids` (records gone) from the set `key`.
    async fn forget(&self, key: &str, ids: &[String]) -> Result<(), TaskStoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.run(redis::cmd("ZREM").arg(key).arg(ids).query_async::<()>(&mut self.conn.clone())).await
    }

    async fn remove(&self, id: &str) -> Result<(), TaskStoreError> {
        self.leased.untrack(id);
        let found = self.fetch(id).await?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("DEL").arg(self.keys.task(id)).arg(self.keys.lease(id)).ignore();
        pipe.cmd("ZREM").arg(self.keys.live()).arg(id).ignore();
        if let Some((_, stored, _)) = found {
            pipe.cmd("ZREM").arg(self.keys.owner(&stored.owner)).arg(id).ignore();
        }
        self.run(pipe.query_async::<()>(&mut self.conn.clone())).await
    }

    async fn wait(&self, owner: &TaskOwner, id: &str) -> Result<TaskRecord, TaskStoreError> {
        loop {
            let record = self.get(owner, id).await?;
            if record.is_terminal() {
                return Ok(record);
            }
            tokio::time::sleep(self.options.poll_interval).await;
        }
    }

    async fn list(&self, owner: &TaskOwner, cursor: Option<&str>, limit: usize) -> Result<TaskPage, TaskStoreError> {
        let mut after = match cursor {
            None => 0,
            Some(c) => c.parse::<u64>().map_err(|_| TaskStoreError::InvalidCursor)?,
        };
        let me = StoredOwner::of(owner);
        let owner_key = self.keys.owner(&me);
        let batch = (limit + 1).clamp(16, 256);
        let mut page: Vec<(u64, Stored, bool)> = Vec::new();
        while page.len() <= limit {
            let next: Vec<(String, u64)> = self
                .run(
                    redis::cmd("ZRANGE")
                        .arg(&owner_key)
                        .arg(format!("({after}"))
                        .arg("+inf")
                        .arg("BYSCORE")
                        .arg("LIMIT")
                        .arg(0)
                        .arg(batch)
                        .arg("WITHSCORES")
                        .query_async(&mut self.conn.clone()),
                )
                .await?;
            let Some(&(_, last)) = next.last() else { break };
            after = last;
            let seqs: std::collections::HashMap<String, u64> = next.iter().cloned().collect();
            let ids: Vec<String> = next.into_iter().map(|(id, _)| id).collect();
            let (stale, found) = self.records(&ids).await?;
            self.forget(&owner_key, &stale).await?;
            page.extend(found.into_iter().filter(|(_, s, _)| s.owner == me).map(|(id, s, l)| (seqs[&id], s, l)));
        }
        page.sort_by_key(|(seq, _, _)| *seq);
        let more = page.len() > limit;
        page.truncate(limit);
        let next_cursor = if more { page.last().map(|(seq, _, _)| seq.to_string()) } else { None };
        let mut tasks = Vec::with_capacity(page.len());
        for (_, stored, leased) in page {
            let record = stored.to_record();
            if record.is_terminal() || leased {
                tasks.push(record);
            } else {
                tasks.push(self.fail_orphan(&record.id).await?);
            }
        }
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Forgets this node's leases of records that are gone (expired, or lost with a
    /// Redis restarted empty) or terminal, drops expired ids from the global set, and
    /// fails the lease-less records still live.
    async fn sweep(&self) -> Result<(), TaskStoreError> {
        let (gone, mine) = self.records(&self.leased.ids()).await?;
        let settled = mine.iter().filter(|(_, stored, _)| stored.to_record().is_terminal()).map(|(id, _, _)| id);
        for id in gone.iter().chain(settled) {
            self.leased.untrack(id);
        }
        let live = self.keys.live();
        let mut pipe = redis::pipe();
        pipe.cmd("ZREMRANGEBYSCORE").arg(&live).arg("-inf").arg(now_ms()).ignore();
        pipe.cmd("ZRANGE").arg(&live).arg(0).arg(-1);
        let (ids,): (Vec<String>,) = self.run(pipe.query_async(&mut self.conn.clone())).await?;
        let (stale, found) = self.records(&ids).await?;
        self.forget(&live, &stale).await?;
        for (id, stored, leased) in found {
            if !leased && !stored.to_record().is_terminal() {
                self.fail_orphan(&id).await?;
            }
        }
        Ok(())
    }
}

impl RedisTaskStore {
    /// Connects to the Redis at `url` (`redis://host:port/db`) and starts renewing this
    /// node's leases. Must be called inside a tokio runtime.
    pub async fn connect(url: &str, options: RedisTaskStoreOptions) -> Result<RedisTaskStore, ConnectError> {
        let fail = |source| ConnectError { url: url.to_owned(), source };
        let client = redis::Client::open(url).map_err(fail)?;
        // Few, short reconnection attempts: a call made while Redis is down should fail
        // within the response timeout, and the next one try again.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.response_timeout))
            .set_response_timeout(Some(options.response_timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(200));
        let conn = ConnectionManager::new_with_config(client.clone(), config).await.map_err(fail)?;
        let node = arbor_server::ids::random_id().map_err(|e| fail(std::io::Error::other(e).into()))?;
        let (routes, listener) = Routes::start(node, client, conn.clone(), &options).await.map_err(fail)?;
        let lease = options.lease;
        let keys = Keys::new(&options.prefix);
        let inner = Arc::new(Inner { conn, keys, options, leased: Leased::default(), routes });
        let renewer = lease::spawn(Arc::downgrade(&inner), lease);
        Ok(RedisTaskStore { inner, _renewer: renewer, _listener: listener })
    }

    /// This node's id (random, made by `connect`): the value of its tasks' lease keys, and
    /// the name of its channel `{prefix}node:{id}`.
    pub fn node_id(&self) -> &str {
        &self.inner.routes.node
    }

    /// How many of this node's tasks it renews leases for: those it created whose
    /// records are not known to be terminal, removed or gone.
    pub fn leases_held(&self) -> usize {
        self.inner.leased.len()
    }

    /// The options it was built with.
    pub fn options(&self) -> &RedisTaskStoreOptions {
        &self.inner.options
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        Box::pin(self.inner.create(record))
    }

    fn get<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        Box::pin(self.inner.get(owner, id))
    }

    fn change<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        Box::pin(self.inner.change(id, change))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(self.inner.remove(id))
    }

    fn wait<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        Box::pin(self.inner.wait(owner, id))
    }

    fn list<'a>(
        &'a self,
        owner: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, TaskStoreError>> {
        Box::pin(self.inner.list(owner, cursor, limit))
    }

    fn expire(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            if let Err(error) = self.inner.sweep().await {
                tracing::warn!(%error, "the task store's sweep failed");
            }
        })
    }

    fn forward<'a>(&'a self, id: &'a str, signal: TaskSignal) -> BoxFuture<'a, Result<Delivery, TaskStoreError>> {
        Box::pin(self.inner.routes.forward(id, signal))
    }

    fn attach_runs(&self, runs: std::sync::Weak<dyn TaskRuns>) {
        self.inner.routes.attach(runs);
    }
}

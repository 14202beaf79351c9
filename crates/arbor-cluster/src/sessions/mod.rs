//! [`RedisSessionStore`]: arbor-http's [`SessionStore`] on Redis, so that any node behind a
//! load balancer serves any request of a legacy (2025-03-26 … 2025-11-25) session.
//!
//! Keys under the prefix (default `arbor:`):
//! - `session:{id}`: the record (JSON), expiring after the session's idle timeout unless a
//!   node that used it renews it (`keep`).
//! - `ev:{id}:{stream}`: a stream's events, as a Redis stream whose entry ids are `0-{seq}`
//!   (so a read after seq `n` is one `XRANGE (0-n +`), trimmed to the last `cap`;
//!   `evm:{id}:{stream}`: its last seq and whether it is finished. The session-wide
//!   stream (0), which every node's copy writes, is numbered here (`HINCRBY`).
//! - `ask:{id}:{request id}`: the node waiting for the answer to a server→client request,
//!   taken with `GETDEL` by the node the answer lands on: exactly once.
//! - Channels `sessions:node:{node}` (answers, and acknowledgements of relays waited on, for
//!   one node) and `sessions:all` (relays and ends, for every node), read by one subscriber
//!   task per store (`subscriber.rs`; the waits are in `acks.rs`).
//!
//! It is not the task store nor the keyring (`crate::tasks`, `crate::keyring`), and it
//! holds no session itself: arbor-http's copies do. Invariant: every call is one round
//! trip (a pipeline or a script) bounded by the connection's response timeout, so an
//! outage is an error, never a hang; what pub/sub loses while a node is disconnected is a
//! relay (a cancel, a log level) or an end, which the keeper's next renewal catches.

mod acks;
mod subscriber;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_http::cluster::{Answered, Delivery, EventPage, SessionRecord, SessionStore, SessionStoreError, StoredEvent};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use subscriber::Wire;

/// Messages from other nodes waiting for the server to read them; beyond, the oldest
/// subscriber messages wait in Redis's output buffer, then are dropped (logged).
const DELIVERY_QUEUE: usize = 4096;

/// How long calls fail at once after one found Redis unavailable.
const DOWN_FOR: Duration = Duration::from_millis(500);

/// Settings of a [`RedisSessionStore`].
#[derive(Clone, Debug)]
pub struct RedisSessionStoreOptions {
    /// Prefix of every key and channel (default `arbor:`; nodes of one cluster share it).
    pub prefix: String,
    /// This node's name, unique in the cluster (default: 64 random bits, hex).
    pub node: Option<String>,
    /// How often a node following another's stream asks for new events (default 50 ms).
    pub poll_interval: Duration,
    /// How long one Redis call may take before it is an error (default 2 s).
    pub response_timeout: Duration,
}

impl Default for RedisSessionStoreOptions {
    fn default() -> Self {
        RedisSessionStoreOptions {
            prefix: "arbor:".to_owned(),
            node: None,
            poll_interval: Duration::from_millis(50),
            response_timeout: Duration::from_secs(2),
        }
    }
}

/// Connecting to Redis failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect the session store to Redis: {0}")]
pub struct SessionStoreConnectError(#[from] redis::RedisError);

/// Shared legacy sessions on Redis (see the module's documentation). Each node builds its
/// own ([`connect`](Self::connect)) on the same URL and prefix and hands it to
/// `HttpConfig::session_store`.
#[derive(Debug)]
pub struct RedisSessionStore {
    conn: ConnectionManager,
    prefix: String,
    node: String,
    poll_interval: Duration,
    deliveries: Mutex<Option<mpsc::Receiver<Delivery>>>,
    subscriber: JoinHandle<()>,
    /// Until when calls fail at once, after one found Redis unavailable (`guarded`).
    down_until: Mutex<Option<Instant>>,
    /// The relays waiting for their hearers (`relay_applied`).
    acks: Arc<acks::Acks>,
}

impl Drop for RedisSessionStore {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

fn node_name() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unavailable(e: redis::RedisError) -> SessionStoreError {
    SessionStoreError::Unavailable(e.to_string())
}

fn millis(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}

/// A stream's last seq and finished flag (`HMGET last done`).
type Head = (Option<u64>, Option<u64>);

/// One `XRANGE` entry: its id and its fields.
type Entry = (String, Vec<(String, Vec<u8>)>);

/// Appends one event: ARGV = seq ('' to number it here), data, cap, ttl ms. A seq at or
/// below the last one is a repeat and writes nothing; seq 0 only makes the stream known.
const APPEND: &str = r#"
local seq
if ARGV[1] == '' then
  seq = redis.call('HINCRBY', KEYS[2], 'last', 1)
else
  seq = tonumber(ARGV[1])
  local last = tonumber(redis.call('HGET', KEYS[2], 'last') or '0')
  if seq == 0 or seq <= last then
    if seq == 0 then redis.call('HSETNX', KEYS[2], 'last', 0) end
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    return last
  end
  redis.call('HSET', KEYS[2], 'last', seq)
end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '0-' .. seq, 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return seq
"#;

impl RedisSessionStore {
    /// Connects to Redis at `url` and starts this node's subscriber.
    pub async fn connect(url: &str, options: RedisSessionStoreOptions) -> Result<Self, SessionStoreConnectError> {
        let client = redis::Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.response_timeout))
            .set_response_timeout(Some(options.response_timeout))
            .set_number_of_retries(1);
        let conn = ConnectionManager::new_with_config(client.clone(), config).await?;
        let node = options.node.clone().unwrap_or_else(node_name);
        let (tx, rx) = mpsc::channel(DELIVERY_QUEUE);
        let channels = subscriber::Channels::new(&options.prefix, &node);
        let first = subscriber::connect(&client, &channels).await?;
        let acks = Arc::new(acks::Acks::default());
        let subscriber = tokio::spawn(subscriber::run(client, channels, node.clone(), first, tx, acks.clone()));
        Ok(RedisSessionStore {
            conn,
            prefix: options.prefix,
            node,
            poll_interval: options.poll_interval,
            deliveries: Mutex::new(Some(rx)),
            subscriber,
            down_until: Mutex::new(None),
            acks,
        })
    }

    /// Runs one call, failing it at once for `DOWN_FOR` after a call found Redis
    /// unavailable: during an outage every stream event would otherwise wait out the
    /// response timeout, and a legacy stream's pump would fall behind by that much per event.
    async fn guarded<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, SessionStoreError>>,
    ) -> Result<T, SessionStoreError> {
        if let Some(until) = *self.down_until.lock() {
            if Instant::now() < until {
                return Err(SessionStoreError::Unavailable("Redis was unreachable moments ago".into()));
            }
        }
        let result = call.await;
        let mut down = self.down_until.lock();
        match &result {
            Err(SessionStoreError::Unavailable(_)) => *down = Some(Instant::now() + DOWN_FOR),
            _ => *down = None,
        }
        result
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}session:{id}", self.prefix)
    }

    fn stream_keys(&self, session: &str, stream: u64) -> (String, String) {
        (format!("{}ev:{session}:{stream}", self.prefix), format!("{}evm:{session}:{stream}", self.prefix))
    }

    fn ask_key(&self, session: &str, id: &str) -> String {
        format!("{}ask:{session}:{id}", self.prefix)
    }

    async fn publish(&self, channel: String, wire: &Wire) -> Result<u64, SessionStoreError> {
        let payload = serde_json::to_string(wire).map_err(|e| SessionStoreError::Malformed(e.to_string()))?;
        let mut conn = self.conn.clone();
        redis::cmd("PUBLISH").arg(channel).arg(payload).query_async(&mut conn).await.map_err(unavailable)
    }
}

impl SessionStore for RedisSessionStore {
    fn node(&self) -> &str {
        &self.node
    }

    fn save<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            let json = serde_json::to_string(record).map_err(|e| SessionStoreError::Malformed(e.to_string()))?;
            let mut conn = self.conn.clone();
            redis::cmd("SET")
                .arg(self.session_key(&record.id))
                .arg(json)
                .arg("PX")
                .arg(millis(ttl))
                .query_async::<()>(&mut conn)
                .await
                .map_err(unavailable)
        })
        .boxed()
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreError>> {
        self.guarded(async move {
            let mut conn = self.conn.clone();
            let json: Option<String> =
                redis::cmd("GET").arg(self.session_key(id)).query_async(&mut conn).await.map_err(unavailable)?;
            json.map(|json| serde_json::from_str(&json).map_err(|e| SessionStoreError::Malformed(e.to_string())))
                .transpose()
        })
        .boxed()
    }

    fn set_log_level<'a>(
        &'a self,
        id: &'a str,
        params: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            // Read, change, write back keeping the TTL; two levels set at once through two
            // nodes: the last write wins, as on one node.
            let Some(mut record) = self.load(id).await? else { return Ok(()) };
            record.log_level = Some(params.clone());
            let json = serde_json::to_string(&record).map_err(|e| SessionStoreError::Malformed(e.to_string()))?;
            let mut conn = self.conn.clone();
            redis::cmd("SET")
                .arg(self.session_key(id))
                .arg(json)
                .arg("XX")
                .arg("KEEPTTL")
                .query_async::<()>(&mut conn)
                .await
                .map_err(unavailable)
        })
        .boxed()
    }

    fn end<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            let mut conn = self.conn.clone();
            // Its events expire by their TTL; without the record nothing reaches them.
            redis::cmd("DEL").arg(self.session_key(id)).query_async::<()>(&mut conn).await.map_err(unavailable)?;
            let wire = Wire::Ended { session: id.to_owned(), from: self.node.clone() };
            self.publish(subscriber::all_channel(&self.prefix), &wire).await.map(drop)
        })
        .boxed()
    }

    fn keep<'a>(
        &'a self,
        used: &'a [Arc<str>],
        idle: &'a [Arc<str>],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Vec<Arc<str>>, SessionStoreError>> {
        self.guarded(async move {
            let mut pipe = redis::pipe();
            for id in used {
                pipe.cmd("PEXPIRE").arg(self.session_key(id)).arg(millis(ttl));
            }
            for id in idle {
                pipe.cmd("EXISTS").arg(self.session_key(id));
            }
            let mut conn = self.conn.clone();
            let found: Vec<i64> = pipe.query_async(&mut conn).await.map_err(unavailable)?;
            Ok(used.iter().chain(idle).zip(found).filter(|(_, n)| *n == 0).map(|(id, _)| id.clone()).collect())
        })
        .boxed()
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        seq: Option<u64>,
        data: &'a [u8],
        cap: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, SessionStoreError>> {
        self.guarded(async move {
            let (events, meta) = self.stream_keys(session, stream);
            let mut conn = self.conn.clone();
            redis::Script::new(APPEND)
                .key(events)
                .key(meta)
                .arg(seq.map(|s| s.to_string()).unwrap_or_default())
                .arg(data)
                .arg(cap.max(1))
                .arg(millis(ttl))
                .invoke_async(&mut conn)
                .await
                .map_err(unavailable)
        })
        .boxed()
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            let (_, meta) = self.stream_keys(session, stream);
            let mut conn = self.conn.clone();
            redis::pipe()
                .cmd("HSET")
                .arg(&meta)
                .arg("done")
                .arg(1)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&meta)
                .arg(millis(ttl))
                .ignore()
                .query_async::<()>(&mut conn)
                .await
                .map_err(unavailable)
        })
        .boxed()
    }

    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<EventPage, SessionStoreError>> {
        self.guarded(async move {
            let (events, meta) = self.stream_keys(session, stream);
            let mut pipe = redis::pipe();
            pipe.cmd("HMGET").arg(&meta).arg("last").arg("done");
            let ranged = limit > 0 && after < u64::MAX;
            if ranged {
                pipe.cmd("XRANGE").arg(&events).arg(format!("(0-{after}")).arg("+").arg("COUNT").arg(limit);
            }
            let mut conn = self.conn.clone();
            let (head, entries): (Head, Vec<Entry>) = if ranged {
                pipe.query_async(&mut conn).await.map_err(unavailable)?
            } else {
                let (head,): (Head,) = pipe.query_async(&mut conn).await.map_err(unavailable)?;
                (head, Vec::new())
            };
            let mut page = EventPage {
                exists: head.0.is_some(),
                events: Vec::with_capacity(entries.len()),
                finished: head.1 == Some(1),
                last_seq: head.0.unwrap_or(0),
            };
            for (id, fields) in entries {
                let seq = id.strip_prefix("0-").and_then(|s| s.parse().ok());
                let data = fields.into_iter().find(|(f, _)| f == "d").map(|(_, d)| d);
                match (seq, data) {
                    (Some(seq), Some(data)) => page.events.push(StoredEvent { seq, data: Bytes::from(data) }),
                    _ => return Err(SessionStoreError::Malformed(format!("event {id} of {events}"))),
                }
            }
            Ok(page)
        })
        .boxed()
    }

    fn asked<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            let mut conn = self.conn.clone();
            redis::cmd("SET")
                .arg(self.ask_key(session, id))
                .arg(&self.node)
                .arg("PX")
                .arg(millis(ttl))
                .query_async::<()>(&mut conn)
                .await
                .map_err(unavailable)
        })
        .boxed()
    }

    fn answer<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Answered, SessionStoreError>> {
        self.guarded(async move {
            let mut conn = self.conn.clone();
            let node: Option<String> = redis::cmd("GETDEL")
                .arg(self.ask_key(session, id))
                .query_async(&mut conn)
                .await
                .map_err(unavailable)?;
            let Some(node) = node else { return Ok(Answered::NobodyWaits) };
            if node == self.node {
                return Ok(Answered::Waiting { node, sent: false });
            }
            let body = String::from_utf8_lossy(body).into_owned();
            let wire = Wire::Answer { session: session.to_owned(), body };
            let heard = self.publish(subscriber::node_channel(&self.prefix, &node), &wire).await?;
            Ok(if heard == 0 { Answered::OwnerGone } else { Answered::Waiting { node, sent: true } })
        })
        .boxed()
    }

    fn relay<'a>(&'a self, session: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            let body = String::from_utf8_lossy(body).into_owned();
            let wire = Wire::Relay { session: session.to_owned(), body, from: self.node.clone(), ack: None };
            self.publish(subscriber::all_channel(&self.prefix), &wire).await.map(drop)
        })
        .boxed()
    }

    fn relay_applied<'a>(
        &'a self,
        session: &'a str,
        body: &'a [u8],
        within: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreError>> {
        async move {
            // The entry opens before the publish: a quick hearer's acknowledgement can
            // arrive before PUBLISH's count does.
            let pending = self.acks.open();
            let body = String::from_utf8_lossy(body).into_owned();
            let ack = Some(acks::token(pending.n, &self.node));
            let wire = Wire::Relay { session: session.to_owned(), body, from: self.node.clone(), ack };
            let heard = self.guarded(self.publish(subscriber::all_channel(&self.prefix), &wire)).await?;
            Ok(tokio::time::timeout(within, pending.all_applied(heard)).await.is_ok())
        }
        .boxed()
    }

    fn applied<'a>(&'a self, ack: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        self.guarded(async move {
            let Some((_, node)) = acks::parse(ack) else {
                return Err(SessionStoreError::Malformed(format!("not a relay token: {ack:.64}")));
            };
            let wire = Wire::Applied { ack: ack.to_owned() };
            self.publish(subscriber::node_channel(&self.prefix, node), &wire).await.map(drop)
        })
        .boxed()
    }

    fn deliveries(&self) -> Option<mpsc::Receiver<Delivery>> {
        self.deliveries.lock().take()
    }

    fn poll_interval(&self) -> Duration {
        self.poll_interval
    }
}

//! [`RedisKeyring`]: the `requestState` keys (`arbor_server::StateKey`) kept in Redis and
//! read by every node, rotated in stages that wait for every live node.
//!
//! The ring is one hash under the prefix (`keyring`): `gen` (bumped by every step),
//! `current` (seals), `staged` and `accepted` (only open), keys as base64url. Each node
//! polls it every `every` and, when `gen` moved, replaces its local `StateKey`'s ring with
//! it (`StateKey::set_keys`), then acknowledges that generation (`keyring:ack:{node}`,
//! expiring after three polls, so a stopped node stops counting). A step is written by
//! compare-and-set on `gen`. [`promote`](RedisKeyring::promote) and
//! [`retire`](RedisKeyring::retire) are refused while a live node has not yet applied the
//! ring they change: promoting before every node accepts the staged key, or retiring
//! before every node seals with the new one, would refuse a state in flight.
//!
//! What it is not: a secret store. The keys sit in Redis as they sit in each node's memory;
//! protect Redis accordingly. Invariant: a node's ring only ever becomes a generation read
//! whole from Redis, and a step that would leave a live node behind is refused.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arbor_server::StateKey;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::AsyncCommands;

/// A keyring operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyringError {
    /// Redis could not be reached or failed.
    #[error("the keyring on Redis is unavailable: {0}")]
    Unavailable(#[from] redis::RedisError),
    /// No keyring is in Redis yet ([`RedisKeyring::initialize`] writes one).
    #[error("no keyring in Redis under {0}")]
    Missing(String),
    /// The keyring in Redis does not decode.
    #[error("the keyring in Redis is malformed: {0}")]
    Malformed(String),
    /// Live nodes have not applied the current generation yet; retry after a poll.
    #[error("{} live node(s) have not applied keyring generation {generation} yet", nodes.len())]
    Lagging {
        /// The generation they lack.
        generation: u64,
        /// Their ids.
        nodes: Vec<String>,
    },
    /// Another step was written meanwhile; read again and retry.
    #[error("the keyring changed meanwhile (generation {0} is gone)")]
    Conflict(u64),
    /// `promote` with nothing staged.
    #[error("no key is staged")]
    NothingStaged,
}

/// Writes the ring `ARGV[2..]` (field, value pairs) to `KEYS[1]` only if its `gen` is
/// still `ARGV[1]` ("" for no ring yet).
const STEP: &str = r"
local gen = redis.call('HGET', KEYS[1], 'gen')
if (gen or '') ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1";

/// One generation of the ring as Redis holds it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Ring {
    generation: u64,
    current: Vec<u8>,
    staged: Option<Vec<u8>>,
    accepted: Vec<Vec<u8>>,
}

/// A node's view of the shared keyring: it keeps `local` in step with Redis until dropped.
#[derive(Debug)]
pub struct RedisKeyring {
    inner: Arc<Inner>,
    sync: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct Inner {
    conn: ConnectionManager,
    ring_key: String,
    ack_prefix: String,
    node: String,
    every: Duration,
    local: StateKey,
    applied: AtomicU64,
}

impl Drop for RedisKeyring {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

impl RedisKeyring {
    /// Keeps `local` (the `StateKey` of this node's `ServerConfig`; clones share its ring)
    /// in step with the keyring under `prefix` at `url`, read every `every`; `node` names
    /// this node in acknowledgements (unique per node). A missing keyring leaves `local`
    /// as it is until one is written.
    pub async fn attach(
        url: &str,
        prefix: &str,
        node: &str,
        local: StateKey,
        every: Duration,
    ) -> Result<RedisKeyring, KeyringError> {
        let client = redis::Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(1);
        let conn = ConnectionManager::new_with_config(client, config).await?;
        let inner = Arc::new(Inner {
            conn,
            ring_key: format!("{prefix}keyring"),
            ack_prefix: format!("{prefix}keyring:ack:"),
            node: node.to_owned(),
            every,
            local,
            applied: AtomicU64::new(0),
        });
        inner.sync().await?;
        let sync = tokio::spawn(poll(Arc::downgrade(&inner)));
        Ok(RedisKeyring { inner, sync })
    }

    /// Writes the first keyring, with `current` sealing, unless one exists (then `false`).
    pub async fn initialize(&self, current: &[u8]) -> Result<bool, KeyringError> {
        let ring = Ring { generation: 1, current: current.to_vec(), ..Ring::default() };
        let written = self.inner.write(None, &ring).await?;
        self.inner.sync().await?;
        Ok(written)
    }

    /// The generation this node has applied (0: none yet).
    pub fn generation(&self) -> u64 {
        self.inner.applied.load(Ordering::Acquire)
    }

    /// Reads the keyring now instead of at the next poll; its generation.
    pub async fn sync_now(&self) -> Result<u64, KeyringError> {
        self.inner.sync().await
    }

    /// Rotation, step 1: `new` is accepted everywhere (it seals nowhere yet).
    pub async fn stage(&self, new: &[u8]) -> Result<u64, KeyringError> {
        self.step(false, |ring| {
            ring.staged = Some(new.to_vec());
            Ok(())
        })
        .await
    }

    /// Rotation, step 2: the staged key seals everywhere, the old one still opens. Refused
    /// while a live node has not applied the stage.
    pub async fn promote(&self) -> Result<u64, KeyringError> {
        self.step(true, |ring| {
            let new = ring.staged.take().ok_or(KeyringError::NothingStaged)?;
            let old = std::mem::replace(&mut ring.current, new);
            ring.accepted.push(old);
            Ok(())
        })
        .await
    }

    /// Rotation, step 3: only the current key opens. Refused while a live node has not
    /// applied the promotion. Call it once the old key's states have expired.
    pub async fn retire(&self) -> Result<u64, KeyringError> {
        self.step(true, |ring| {
            ring.accepted.clear();
            Ok(())
        })
        .await
    }

    /// Applies `edit` to the current generation and writes the next; with `everyone`,
    /// only if every live node has applied the current one.
    async fn step(
        &self,
        everyone: bool,
        edit: impl FnOnce(&mut Ring) -> Result<(), KeyringError>,
    ) -> Result<u64, KeyringError> {
        let mut ring = self.inner.read().await?.ok_or_else(|| KeyringError::Missing(self.inner.ring_key.clone()))?;
        if everyone {
            let nodes = self.inner.lagging(ring.generation).await?;
            if !nodes.is_empty() {
                return Err(KeyringError::Lagging { generation: ring.generation, nodes });
            }
        }
        let previous = ring.generation;
        edit(&mut ring)?;
        ring.generation += 1;
        if !self.inner.write(Some(previous), &ring).await? {
            return Err(KeyringError::Conflict(previous));
        }
        self.inner.sync().await
    }
}

/// Reads the ring every `every` until the keyring is dropped; a failed read is logged
/// and retried at the next poll (the local ring stays as it was).
async fn poll(inner: Weak<Inner>) {
    let every = match inner.upgrade() {
        Some(inner) => inner.every,
        None => return,
    };
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        if let Err(error) = inner.sync().await {
            tracing::warn!(%error, "the requestState keyring could not be read; the keys in force stay");
        }
    }
}

impl Inner {
    /// Applies the ring in Redis if it is newer than what this node applied, and
    /// acknowledges the generation applied.
    async fn sync(&self) -> Result<u64, KeyringError> {
        if let Some(ring) = self.read().await? {
            if ring.generation > self.applied.load(Ordering::Acquire) {
                self.local.set_keys(&ring.current, ring.staged.as_deref(), &ring.accepted);
                self.applied.store(ring.generation, Ordering::Release);
                tracing::info!(generation = ring.generation, "requestState keyring applied");
            }
        }
        let applied = self.applied.load(Ordering::Acquire);
        let ttl = (self.every * 3).as_millis().max(1) as u64;
        let mut conn = self.conn.clone();
        let () = conn.pset_ex(format!("{}{}", self.ack_prefix, self.node), applied, ttl).await?;
        Ok(applied)
    }

    async fn read(&self) -> Result<Option<Ring>, KeyringError> {
        let mut conn = self.conn.clone();
        let fields: std::collections::HashMap<String, String> = conn.hgetall(&self.ring_key).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
        let bad = |what: &str| KeyringError::Malformed(what.to_owned());
        let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).map_err(|_| bad("a key is not base64url"));
        let generation = field("gen").parse().map_err(|_| bad("gen is not a number"))?;
        let current = decode(field("current"))?;
        if current.is_empty() {
            return Err(bad("no current key"));
        }
        let staged = match field("staged") {
            "" => None,
            text => Some(decode(text)?),
        };
        let accepted = field("accepted").split(',').filter(|t| !t.is_empty()).map(decode).collect::<Result<_, _>>()?;
        Ok(Some(Ring { generation, current, staged, accepted }))
    }

    /// Writes `ring` if the stored generation is still `previous` (`None`: no ring yet).
    async fn write(&self, previous: Option<u64>, ring: &Ring) -> Result<bool, KeyringError> {
        let encode = |key: &[u8]| URL_SAFE_NO_PAD.encode(key);
        let accepted: Vec<String> = ring.accepted.iter().map(|k| encode(k)).collect();
        let mut conn = self.conn.clone();
        let written: i64 = redis::Script::new(STEP)
            .key(&self.ring_key)
            .arg(previous.map(|g| g.to_string()).unwrap_or_default())
            .arg("gen")
            .arg(ring.generation)
            .arg("current")
            .arg(encode(&ring.current))
            .arg("staged")
            .arg(ring.staged.as_deref().map(encode).unwrap_or_default())
            .arg("accepted")
            .arg(accepted.join(","))
            .invoke_async(&mut conn)
            .await?;
        Ok(written == 1)
    }

    /// The live nodes (an unexpired acknowledgement) that have not applied `generation`.
    async fn lagging(&self, generation: u64) -> Result<Vec<String>, KeyringError> {
        let mut conn = self.conn.clone();
        let pattern = format!("{}*", self.ack_prefix);
        let keys: Vec<String> = {
            let mut iter: redis::AsyncIter<String> = conn.scan_match(&pattern).await?;
            let mut keys = Vec::new();
            while let Some(key) = futures::StreamExt::next(&mut iter).await {
                keys.push(key?);
            }
            keys
        };
        let mut lagging = Vec::new();
        for key in keys {
            let applied: Option<u64> = self.conn.clone().get(&key).await?;
            if applied.is_some_and(|a| a < generation) {
                lagging.push(key.trim_start_matches(&self.ack_prefix).to_owned());
            }
        }
        Ok(lagging)
    }
}

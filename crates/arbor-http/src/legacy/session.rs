//! Legacy sessions: the record kept per `Mcp-Session-Id` (its endpoint, its streams, when
//! it was last used), the registry, and the reaper that closes idle sessions. Reaping
//! gives memory back: the registry's table shrinks once mostly empty, and after a sweep
//! of at least `TRIM_AFTER` sessions, once their endpoints have stopped, the next tick
//! asks glibc's malloc to return its free pages (`give_back`).
//!
//! It is not the session's MCP state: that lives in the endpoint, a connection actor
//! under the server's tree. The record only adds what HTTP needs.
//!
//! Invariants: a session id is 128 random bits from the OS, hex-encoded (visible ASCII),
//! made by `arbor_server::ids`, the one id helper; a session is in the registry exactly
//! until it is deleted, reaped or the server shuts down, and its endpoint is closed and
//! its admission slot given back (exactly once) when it leaves; a session is idle when
//! nothing uses it (no POST being answered, no stream read) and is reaped after
//! `session_idle_timeout` of that.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arbor_protocol::version::ProtocolVersion;
use arbor_server::exchange::Endpoint;
use arbor_server::Requester;
use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use super::admission::{Admission, Slot};
use super::stream::EventStream;
use crate::server::Inner;
use crate::tenant::Tenancy;

/// Finished POST streams a session keeps for resumption beyond those still running.
const KEPT_FINISHED_STREAMS: usize = 8;

/// A stream id for a shared session: random below 2^53, never 0 (the standalone stream).
fn random_stream_id() -> u64 {
    let mut bytes = [0u8; 8];
    // Without randomness (never seen on Linux) the id is still unique on this node.
    let _ = getrandom::fill(&mut bytes);
    (u64::from_le_bytes(bytes) & ((1 << 53) - 1)).max(1)
}

/// A fresh session id: 128 bits from the OS, as 32 hex digits (`arbor_server::ids`).
pub(crate) fn new_session_id() -> Result<Arc<str>, arbor_server::ids::RandomnessError> {
    Ok(arbor_server::ids::random_id()?.into())
}

/// What HTTP keeps for one legacy session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    pub(crate) endpoint: Endpoint,
    /// Stream 0: messages unrelated to any request (the GET stream).
    pub(crate) standalone: Arc<EventStream>,
    streams: Mutex<Streams>,
    /// POSTs being answered plus readers attached.
    busy: AtomicUsize,
    /// Milliseconds since the registry's epoch when it was last used.
    last_used: AtomicU64,
    epoch: Instant,
    /// The session's place in the admission counts, given back when it leaves the
    /// registry (`close`), not when the last request holding the record ends.
    slot: Mutex<Option<Slot>>,
    /// The principal that initialized the session (OAuth on): the only one it serves.
    pub(crate) owner: Option<Requester>,
    /// The tenant and requester it was opened with, which its requests are charged to.
    pub(crate) tenancy: Tenancy,
    /// Shared with other nodes (`HttpConfig::session_store`): stream ids are random, so
    /// unique across nodes, and `standalone` is followed from the store (`shared.rs`).
    pub(crate) shared: bool,
    /// With `shared`: the seq after which this node started following the session-wide
    /// stream, once a GET asked for it.
    pub(crate) following_from: Mutex<Option<u64>>,
    /// Set when it leaves the registry: a record found before (the tenant gate's) is no
    /// longer the session's.
    closed: AtomicBool,
}

#[derive(Debug, Default)]
struct Streams {
    last_id: u64,
    /// The POST streams, oldest first.
    list: Vec<Arc<EventStream>>,
}

/// Marks a session in use until dropped; the drop records the time.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Session>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Session {
    // Every field a session is made of, called from two places (initialize, adopt): a
    // builder would only restate them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: Arc<str>,
        endpoint: Endpoint,
        standalone: Arc<EventStream>,
        slot: Slot,
        epoch: Instant,
        owner: Option<Requester>,
        tenancy: Tenancy,
        shared: bool,
    ) -> Session {
        let session = Session {
            id,
            endpoint,
            standalone,
            streams: Mutex::new(Streams::default()),
            busy: AtomicUsize::new(0),
            last_used: AtomicU64::new(0),
            epoch,
            slot: Mutex::new(Some(slot)),
            owner,
            tenancy,
            shared,
            following_from: Mutex::new(None),
            closed: AtomicBool::new(false),
        };
        session.touch();
        session
    }

    fn touch(&self) {
        self.last_used.store(self.epoch.elapsed().as_millis() as u64, Ordering::Release);
    }

    /// Marks the session in use.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Busy(self.clone())
    }

    /// The revision `initialize` settled, once it was answered.
    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        self.endpoint.negotiated_version()
    }

    /// A new POST stream, after forgetting the oldest finished ones beyond the bound.
    pub(crate) fn new_stream(&self) -> Arc<EventStream> {
        let mut streams = self.streams.lock();
        streams.list.retain(|s| !s.is_spent());
        let finished = streams.list.iter().filter(|s| s.is_done()).count();
        if finished > KEPT_FINISHED_STREAMS {
            let mut excess = finished - KEPT_FINISHED_STREAMS;
            streams.list.retain(|s| {
                if excess > 0 && s.is_done() {
                    excess -= 1;
                    false
                } else {
                    true
                }
            });
        }
        streams.last_id += 1;
        // Shared: an id no other node gives out, below 2^53 (exact for any JSON reader).
        let id = if self.shared { random_stream_id() } else { streams.last_id };
        let stream = Arc::new(EventStream::new(id));
        streams.list.push(stream.clone());
        stream
    }

    /// Keeps a stream another node writes, followed from the session store.
    pub(crate) fn insert_stream(&self, stream: Arc<EventStream>) {
        let mut streams = self.streams.lock();
        streams.list.retain(|s| !s.is_spent());
        streams.list.push(stream);
    }

    /// Whether this node used the session within the last `window`.
    pub(crate) fn used_within(&self, now_ms: u64, window: Duration) -> bool {
        self.busy.load(Ordering::Acquire) > 0
            || now_ms.saturating_sub(self.last_used.load(Ordering::Acquire)) < window.as_millis() as u64
    }

    /// The stream an event id names.
    pub(crate) fn stream(&self, id: u64) -> Option<Arc<EventStream>> {
        if id == 0 {
            return Some(self.standalone.clone());
        }
        self.streams.lock().list.iter().find(|s| s.id == id).cloned()
    }

    /// Idle for at least `timeout` at `now_ms`.
    fn idle(&self, now_ms: u64, timeout: Duration) -> bool {
        self.busy.load(Ordering::Acquire) == 0
            && now_ms.saturating_sub(self.last_used.load(Ordering::Acquire)) >= timeout.as_millis() as u64
    }

    /// Whether it left the registry (deleted, reaped, or the server shut down).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Ends the session's streams and closes its endpoint.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.standalone.finish();
        for stream in self.streams.lock().list.drain(..) {
            stream.finish();
        }
        self.endpoint.close();
        drop(self.slot.lock().take());
    }
}

/// The sessions by id.
pub(crate) struct Sessions {
    /// Hashed with FxHash: every legacy request looks its session up, and SipHash cost
    /// more than the rest of the lookup. Only the server makes session ids (random), so
    /// no client can choose keys that collide.
    map: RwLock<HashMap<Arc<str>, Arc<Session>, rustc_hash::FxBuildHasher>>,
    pub(crate) epoch: Instant,
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// A large reap's endpoints have all stopped: the next tick gives memory back.
    trim_due: Arc<AtomicBool>,
    /// The session caps, shared with the 2024-11-05 transport's sessions.
    pub(crate) admission: Admission,
}

impl Sessions {
    pub(crate) fn new() -> Sessions {
        Sessions {
            map: RwLock::new(HashMap::default()),
            epoch: Instant::now(),
            reaper: Mutex::new(None),
            trim_due: Arc::new(AtomicBool::new(false)),
            admission: Admission::default(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.read().len()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map.read().get(id).cloned()
    }

    pub(crate) fn insert(&self, session: Arc<Session>) {
        self.map.write().insert(session.id.clone(), session);
    }

    /// Inserts `session` unless one with its id is there already; answers the one kept
    /// (two requests adopting one session at once: the first wins, the second's copy is
    /// closed).
    pub(crate) fn insert_or_get(&self, session: Arc<Session>) -> Arc<Session> {
        let kept = {
            let mut map = self.map.write();
            map.entry(session.id.clone()).or_insert_with(|| session.clone()).clone()
        };
        if !Arc::ptr_eq(&kept, &session) {
            session.close();
        }
        kept
    }

    /// Every session's id and whether it was used within `window` (`shared.rs`'s keeper).
    pub(crate) fn usage(&self, window: Duration) -> Vec<(Arc<str>, bool)> {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.map.read().iter().map(|(id, s)| (id.clone(), s.used_within(now, window))).collect()
    }

    /// Removes and closes a session; whether it was there.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let removed = self.map.write().remove(id);
        match removed {
            Some(session) => {
                session.close();
                true
            }
            None => false,
        }
    }

    pub(crate) fn close_all(&self) {
        if let Some(reaper) = self.reaper.lock().take() {
            reaper.abort();
        }
        let all: Vec<_> = self.map.write().drain().map(|(_, s)| s).collect();
        for session in all {
            session.close();
        }
    }

    /// Closes the sessions idle for `timeout`, and those whose endpoint stopped; returns
    /// how many went. Shared sessions (`shared.rs`) are not reaped for idling here: they
    /// end when the store no longer holds them (the keeper), whichever node was used.
    pub(crate) fn reap(&self, timeout: Duration) -> usize {
        let now = self.epoch.elapsed().as_millis() as u64;
        // Scanned under the read lock, so lookups go on; removed under the write lock
        // only if still idle (a request may have come in between).
        let idle: Vec<Arc<str>> = self
            .map
            .read()
            .iter()
            .filter(|(_, s)| (!s.shared && s.idle(now, timeout)) || !s.endpoint.is_open())
            .map(|(id, _)| id.clone())
            .collect();
        if idle.is_empty() {
            return 0;
        }
        let gone: Vec<Arc<Session>> = {
            let mut map = self.map.write();
            let mut gone = Vec::with_capacity(idle.len());
            for id in &idle {
                let still =
                    map.get(&**id).is_some_and(|s| (!s.shared && s.idle(now, timeout)) || !s.endpoint.is_open());
                if let Some(session) = still.then(|| map.remove(&**id)).flatten() {
                    gone.push(session);
                }
            }
            gone
        };
        for session in &gone {
            session.close();
        }
        // A map that held a burst of sessions gives its table back once mostly empty.
        let mut map = self.map.write();
        if map.capacity() > 64 && map.len() < map.capacity() / 4 {
            map.shrink_to_fit();
        }
        drop(map);
        let reaped = gone.len();
        if reaped >= TRIM_AFTER {
            tokio::spawn(trim_once_stopped(gone, self.trim_due.clone()));
        }
        reaped
    }

    /// Starts the reaper once (needs a runtime; called when a session is made).
    pub(crate) fn ensure_reaper(&self, inner: Weak<Inner>, timeout: Duration) {
        let mut reaper = self.reaper.lock();
        if reaper.is_some() {
            return;
        }
        let period = (timeout / 2).clamp(Duration::from_millis(10), Duration::from_secs(30));
        *reaper = Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = inner.upgrade() else { return };
                // A tick after the endpoints of a large reap stopped, so that what their
                // actors held (dropped once their supervisor saw them exit) is free.
                if trim_now(&inner.sessions.trim_due, inner.config.trim_after_reap) {
                    super::give_back::give_back();
                }
                let reaped = inner.sessions.reap(timeout);
                if reaped > 0 {
                    tracing::debug!(reaped, "idle HTTP sessions closed");
                }
                // Shared: renew what this node used since the last tick, close what ended.
                super::shared::keep(&inner, period).await;
            }
        }));
    }
}

/// A sweep that reaps at least this many sessions asks the allocator to give the freed
/// memory back (about 13 KiB each: a thousand are over 12 MiB).
const TRIM_AFTER: usize = 1024;

/// Waits until a large reap's endpoints have stopped, then marks the trim due.
async fn trim_once_stopped(gone: Vec<Arc<Session>>, due: Arc<AtomicBool>) {
    for session in &gone {
        session.endpoint.closed().await;
    }
    drop(gone);
    due.store(true, Ordering::Release);
}

/// Whether to trim now: a large reap's endpoints have stopped (`due`, cleared either way)
/// and the server keeps `HttpConfig::trim_after_reap` on.
fn trim_now(due: &AtomicBool, enabled: bool) -> bool {
    due.swap(false, Ordering::AcqRel) && enabled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_trim_runs_only_with_the_switch_on_and_is_cleared_either_way() {
        let due = AtomicBool::new(true);
        assert!(!trim_now(&due, false), "switched off: no trim");
        assert!(!due.load(Ordering::Acquire), "the due flag is cleared even when off");
        due.store(true, Ordering::Release);
        assert!(trim_now(&due, true));
        assert!(!trim_now(&due, true), "once per large reap");
        assert!(crate::HttpConfig::default().trim_after_reap, "on by default");
    }
}

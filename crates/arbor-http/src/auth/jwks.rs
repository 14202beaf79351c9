//! The JWKS cache behind [`JwtVerifier`](super::JwtVerifier): the issuer's keys by `kid`,
//! refreshed by one supervised actor.
//!
//! Readers take the current [`KeySet`] (an `Arc` swapped under a parking_lot `RwLock`) and
//! never wait on the network. The fetching is done by one ractor actor, a permanent child
//! of an arbor-otp supervisor (`auth` / `jwks`): it fetches at start, again when the set's
//! lifetime lapses (`Cache-Control: max-age` clamped to [30 s, 24 h], else the configured
//! default), and on demand when a token names an unknown `kid` (rotation). That refetch is
//! single-flight (every verification that misses waits on the one fetch in flight) and
//! rate-limited (within `refetch_interval` of the last one, a miss is answered at once,
//! without a fetch). A failed fetch keeps the known keys, is logged with `tracing::warn!`
//! and counted; a set without a usable key counts as a failure.
//!
//! It is not a general HTTP cache (no `ETag`, no `Expires`) and it never sees a token.
//! Invariant: the key set lives outside the actor, so a panic in the actor (restarted by
//! its supervisor) loses no key, and a reader always sees a complete set, old or new.

pub(crate) mod http;
mod keyset;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::ractor::{Actor, ActorProcessingErr, ActorRef};
use arbor_otp::{ChildSpec, SupervisorHandle, SupervisorSpec};
use futures::future::BoxFuture;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;
use tokio::time::Instant;

pub(crate) use http::HttpJwks;
pub(crate) use keyset::{KeySet, Miss};

/// The shortest lifetime a `Cache-Control: max-age` may give the key set.
pub(crate) const MIN_TTL: Duration = Duration::from_secs(30);
/// The longest.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// When a failed fetch is tried again (or the default TTL, if shorter).
pub(crate) const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// A JWKS answer: the body and its `Cache-Control` lifetime, if it gave one.
pub(crate) struct Fetched {
    pub(crate) body: Vec<u8>,
    pub(crate) max_age: Option<Duration>,
}

/// Where the key set comes from: HTTP in production ([`HttpJwks`]), a script in tests.
pub(crate) trait FetchJwks: Send + Sync + 'static {
    /// One fetch; the error text is logged (it holds no token: the fetch sees none).
    fn fetch(&self) -> BoxFuture<'_, Result<Fetched, String>>;
    /// The source, for logs (the JWKS URL).
    fn describe(&self) -> String;
}

/// When the cache fetches.
#[derive(Clone, Debug)]
pub(crate) struct CachePolicy {
    /// The set's lifetime when the answer gives none.
    pub(crate) default_ttl: Duration,
    /// The least time between two fetches caused by an unknown `kid`.
    pub(crate) refetch_interval: Duration,
    /// The bound on one fetch.
    pub(crate) fetch_timeout: Duration,
}

/// Counters of a [`JwtVerifier`](super::JwtVerifier)'s key set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JwksStats {
    /// Fetches attempted (at start, on expiry, for an unknown `kid`).
    pub fetches: u64,
    /// Of which failed (network, HTTP status, not a JWKS, no usable key).
    pub failed: u64,
    /// Keys in the set in use.
    pub keys: usize,
    /// Fetches caused by an unknown `kid` (single-flight and rate-limited, so at most one
    /// per refetch interval).
    pub unknown_kid_refetches: u64,
}

enum Msg {
    /// Fetch now; `done` is told when the fetch is over (or dropped if the actor dies).
    Fetch { cause: Cause, done: Option<watch::Sender<bool>> },
    /// The set's lifetime lapsed (ignored unless `generation` is the latest schedule).
    Expired { generation: u64 },
    #[cfg(test)]
    Panic,
}

enum Cause {
    Start,
    /// Asked for at `requested`: a successful fetch that began after it answers it.
    UnknownKid {
        requested: Instant,
    },
}

#[derive(Default)]
struct Refetch {
    /// The unknown-kid fetch in flight; a closed channel means its actor died.
    in_flight: Option<watch::Receiver<bool>>,
    /// When the last unknown-kid fetch was asked for.
    last: Option<Instant>,
}

struct Shared {
    keys: RwLock<Arc<KeySet>>,
    fetcher: Box<dyn FetchJwks>,
    source: String,
    policy: CachePolicy,
    refetch: Mutex<Refetch>,
    /// When the last successful fetch began.
    last_success: Mutex<Option<Instant>>,
    /// When the set in use is due for a refresh, so a restarted actor resumes the schedule.
    refresh_at: Mutex<Option<Instant>>,
    actor: RwLock<Option<ActorRef<Msg>>>,
    fetches: AtomicU64,
    failed: AtomicU64,
    unknown_kid_refetches: AtomicU64,
}

impl Shared {
    fn send(&self, msg: Msg) -> bool {
        self.actor.read().as_ref().is_some_and(|actor| actor.send_message(msg).is_ok())
    }
}

/// The key set and its fetching actor; dropping it (or [`JwksCache::shutdown`]) stops the
/// actor's supervisor.
pub(crate) struct JwksCache {
    shared: Arc<Shared>,
    supervisor: SupervisorHandle,
}

impl JwksCache {
    /// Starts the actor and waits (bounded by the fetch timeout) for the first fetch; a
    /// failed first fetch is not an error: verifications answer `Unavailable` until a set
    /// arrives.
    pub(crate) async fn start(fetcher: impl FetchJwks, mut policy: CachePolicy) -> Result<JwksCache, String> {
        policy.default_ttl = policy.default_ttl.max(Duration::from_secs(1));
        let shared = Arc::new(Shared {
            keys: RwLock::new(Arc::new(KeySet::default())),
            source: fetcher.describe(),
            fetcher: Box::new(fetcher),
            policy,
            refetch: Mutex::new(Refetch::default()),
            last_success: Mutex::new(None),
            refresh_at: Mutex::new(None),
            actor: RwLock::new(None),
            fetches: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            unknown_kid_refetches: AtomicU64::new(0),
        });
        let args = shared.clone();
        let spec = SupervisorSpec::new("auth").child(ChildSpec::actor("jwks", move || (JwksActor, args.clone())));
        let supervisor = SupervisorHandle::start(spec).await.map_err(|e| e.to_string())?;
        let cache = JwksCache { shared, supervisor };
        let (done, mut over) = watch::channel(false);
        if cache.shared.send(Msg::Fetch { cause: Cause::Start, done: Some(done) }) {
            let _ = tokio::time::timeout(cache.wait_bound(), over.wait_for(|d| *d)).await;
        }
        Ok(cache)
    }

    /// The set in use; never waits on the network.
    pub(crate) fn keys(&self) -> Arc<KeySet> {
        self.shared.keys.read().clone()
    }

    /// A token named a key the set does not hold: joins the fetch in flight, or starts one
    /// unless the last was less than the refetch interval ago, then returns the set in use.
    pub(crate) async fn refetch_for_unknown_kid(&self) -> Arc<KeySet> {
        let waiter = {
            let mut refetch = self.shared.refetch.lock();
            match refetch.in_flight.as_ref().filter(|rx| rx.has_changed().is_ok()).cloned() {
                Some(in_flight) => Some(in_flight),
                None => {
                    refetch.in_flight = None;
                    let now = Instant::now();
                    let recent =
                        refetch.last.is_some_and(|last| now.duration_since(last) < self.shared.policy.refetch_interval);
                    let (done, over) = watch::channel(false);
                    if !recent
                        && self
                            .shared
                            .send(Msg::Fetch { cause: Cause::UnknownKid { requested: now }, done: Some(done) })
                    {
                        refetch.last = Some(now);
                        refetch.in_flight = Some(over.clone());
                        self.shared.unknown_kid_refetches.fetch_add(1, Ordering::Relaxed);
                        Some(over)
                    } else {
                        None
                    }
                }
            }
        };
        if let Some(mut over) = waiter {
            let _ = tokio::time::timeout(self.wait_bound(), over.wait_for(|d| *d)).await;
        }
        self.keys()
    }

    /// A fetch may queue behind another one: two fetch timeouts and a margin.
    fn wait_bound(&self) -> Duration {
        self.shared.policy.fetch_timeout * 2 + Duration::from_secs(1)
    }

    pub(crate) fn stats(&self) -> JwksStats {
        JwksStats {
            fetches: self.shared.fetches.load(Ordering::Relaxed),
            failed: self.shared.failed.load(Ordering::Relaxed),
            keys: self.shared.keys.read().len(),
            unknown_kid_refetches: self.shared.unknown_kid_refetches.load(Ordering::Relaxed),
        }
    }

    /// Stops the actor and its supervisor; the known keys stay readable.
    pub(crate) async fn shutdown(&self) {
        self.supervisor.shutdown().await;
    }

    #[cfg(test)]
    pub(crate) fn supervisor(&self) -> &SupervisorHandle {
        &self.supervisor
    }
}

impl Drop for JwksCache {
    fn drop(&mut self) {
        if !self.supervisor.is_alive() {
            return;
        }
        let supervisor = self.supervisor.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    supervisor.shutdown().await;
                });
            }
            Err(_) => supervisor.cell().stop(Some(arbor_otp::SHUTDOWN.to_owned())),
        }
    }
}

struct JwksActor;

struct ActorState {
    shared: Arc<Shared>,
    generation: u64,
    timer: Option<tokio::task::JoinHandle<Result<(), arbor_otp::ractor::MessagingErr<Msg>>>>,
}

impl ActorState {
    async fn fetch(&mut self, myself: &ActorRef<Msg>) {
        let shared = self.shared.clone();
        shared.fetches.fetch_add(1, Ordering::Relaxed);
        let began = Instant::now();
        let answer = match tokio::time::timeout(shared.policy.fetch_timeout, shared.fetcher.fetch()).await {
            Ok(answer) => answer,
            Err(_) => Err("timed out".to_owned()),
        };
        let parsed = answer.and_then(|fetched| {
            let (set, dropped) = KeySet::parse(&fetched.body)?;
            if set.is_empty() {
                return Err(format!("the set holds no usable signature key ({dropped} dropped)"));
            }
            Ok((set, dropped, fetched.max_age))
        });
        let next = match parsed {
            Ok((set, dropped, max_age)) => {
                let ttl = max_age.map_or(shared.policy.default_ttl, |age| age.clamp(MIN_TTL, MAX_TTL));
                tracing::debug!(jwks_uri = %shared.source, keys = set.len(), dropped, ttl_secs = ttl.as_secs(), "JWKS fetched");
                *shared.keys.write() = Arc::new(set);
                *shared.last_success.lock() = Some(began);
                ttl
            }
            Err(error) => {
                shared.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(jwks_uri = %shared.source, %error, "fetching the JWKS failed; the known keys stay in use");
                RETRY_AFTER_FAILURE.min(shared.policy.default_ttl)
            }
        };
        self.schedule(myself, Instant::now() + next);
    }

    fn schedule(&mut self, myself: &ActorRef<Msg>, at: Instant) {
        self.generation += 1;
        let generation = self.generation;
        if let Some(old) = self.timer.take() {
            old.abort();
        }
        *self.shared.refresh_at.lock() = Some(at);
        let after = at.saturating_duration_since(Instant::now());
        self.timer = Some(myself.send_after(after, move || Msg::Expired { generation }));
    }

    /// Tells the waiters of an unknown-kid fetch that it is over.
    fn finish(&self, done: Option<watch::Sender<bool>>) {
        let Some(done) = done else { return };
        {
            let mut refetch = self.shared.refetch.lock();
            if refetch.in_flight.as_ref().is_some_and(|rx| rx.same_channel(&done.subscribe())) {
                refetch.in_flight = None;
            }
        }
        let _ = done.send(true);
    }
}

impl Actor for JwksActor {
    type Msg = Msg;
    type State = ActorState;
    type Arguments = Arc<Shared>;

    async fn pre_start(&self, myself: ActorRef<Msg>, shared: Arc<Shared>) -> Result<ActorState, ActorProcessingErr> {
        *shared.actor.write() = Some(myself);
        Ok(ActorState { shared, generation: 0, timer: None })
    }

    async fn post_start(&self, myself: ActorRef<Msg>, state: &mut ActorState) -> Result<(), ActorProcessingErr> {
        // After a restart, resume the schedule of the keys that survived.
        let due = *state.shared.refresh_at.lock();
        if let Some(at) = due {
            state.schedule(&myself, at);
        }
        Ok(())
    }

    async fn post_stop(&self, myself: ActorRef<Msg>, state: &mut ActorState) -> Result<(), ActorProcessingErr> {
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        let mut actor = state.shared.actor.write();
        if actor.as_ref().is_some_and(|a| a.get_id() == myself.get_id()) {
            *actor = None;
        }
        Ok(())
    }

    async fn handle(&self, myself: ActorRef<Msg>, msg: Msg, state: &mut ActorState) -> Result<(), ActorProcessingErr> {
        match msg {
            Msg::Fetch { cause, done } => {
                let answered = match cause {
                    Cause::Start => false,
                    Cause::UnknownKid { requested } => state.shared.last_success.lock().is_some_and(|t| t > requested),
                };
                if !answered {
                    state.fetch(&myself).await;
                }
                state.finish(done);
            }
            Msg::Expired { generation } => {
                if generation == state.generation {
                    state.fetch(&myself).await;
                }
            }
            #[cfg(test)]
            Msg::Panic => panic!("test: the JWKS actor panics"),
        }
        Ok(())
    }
}

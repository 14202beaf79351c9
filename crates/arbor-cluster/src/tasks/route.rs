//! Routing: how a [`TaskSignal`] (`tasks/update` input, `tasks/cancel`) reaches the node
//! running a task, and how that node's answer comes back.
//!
//! Each store is a node with a random id, made at `connect`. The node running a task is
//! the one whose id is the value of the task's lease key (`lease.rs` writes it). Each node
//! keeps one dedicated pub/sub connection subscribed to its own channel,
//! `{prefix}node:{id}`, reconnecting by itself. A forward is one `PUBLISH` of a signal to
//! the owner's channel; the owner applies it through the [`TaskRuns`] its servers attached
//! and `PUBLISH`es an ack, with the [`Delivery`], to the caller's channel, which the
//! caller's own subscriber hands to the waiting call. What this is not: a queue. A signal
//! is never stored or retried, so a node that is down when it is sent never sees it.
//!
//! Invariants:
//! - Every forward answers within its bound: `PUBLISH` reaching nobody (the owner gone) or
//!   no ack within [`RedisTaskStoreOptions::forward_timeout`] is
//!   [`TaskStoreError::Unreachable`]; Redis itself down is `Unavailable`.
//! - Exactly once: a signal is published once and never retried; the owner applies each
//!   message id at most once (a bounded memory of the ids it has seen), and not at all if
//!   it arrives after the caller's wait is over (the message carries the caller's
//!   deadline). So a caller told "applied" had it applied once, and one told "unreachable"
//!   had it applied never, except when the owner's ack was lost or late after applying it
//!   (Redis failing between the two, or clocks skewed by more than the wait): for input
//!   the client sees the task move on with `tasks/get`; a cancel is idempotent.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::common::JsonObject;
use arbor_server::tasks::{Delivery, TaskRuns, TaskSignal};
use arbor_server::TaskStoreError;
use futures::StreamExt;
use parking_lot::Mutex;
use redis::aio::{ConnectionManager, PubSub, PubSubSink, PubSubStream};
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinHandle;

use super::stored::{now_ms, Keys};
use super::RedisTaskStoreOptions;

/// How many message ids a node remembers to apply each once.
const SEEN: usize = 4096;
/// How many forwarded signals a node applies at once; more wait for a place.
const CONCURRENT_DELIVERIES: usize = 256;
/// The subscriber's reconnection delays.
const RECONNECT_MIN: Duration = Duration::from_millis(20);
const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// A message on a node's channel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Wire {
    /// A signal for a task the receiving node runs; its ack goes to `from`'s channel.
    Signal { msg: String, from: String, task: String, signal: WireSignal, deadline_ms: u64 },
    /// The answer to the signal `msg` this node sent.
    Ack { msg: String, delivery: WireDelivery },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireSignal {
    Input { responses: JsonObject },
    Cancel,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelivery {
    Applied,
    Refused { error: ErrorObject },
    NotRunning,
}

impl WireDelivery {
    fn of(delivery: Delivery) -> WireDelivery {
        match delivery {
            Delivery::Applied => WireDelivery::Applied,
            Delivery::Refused(error) => WireDelivery::Refused { error },
            // A delivery this build cannot name: nothing the caller can count on happened.
            _ => WireDelivery::NotRunning,
        }
    }

    fn into_delivery(self) -> Delivery {
        match self {
            WireDelivery::Applied => Delivery::Applied,
            WireDelivery::Refused { error } => Delivery::Refused(error),
            WireDelivery::NotRunning => Delivery::NotRunning,
        }
    }
}

/// A signal read on this node's channel, to apply.
struct Incoming {
    msg: String,
    from: String,
    task: String,
    signal: TaskSignal,
    /// When its sender stops waiting (ms since the epoch, the sender's clock).
    deadline_ms: u64,
}

/// The message ids a node has seen, the oldest forgotten first.
#[derive(Default)]
struct Seen {
    order: VecDeque<String>,
    ids: HashSet<String>,
}

impl Seen {
    /// False if `id` was seen already.
    fn first(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > SEEN {
            if let Some(old) = self.order.pop_front() {
                self.ids.remove(&old);
            }
        }
        true
    }
}

/// One node's routing state: its id, its channel, the calls waiting for acks and the runs
/// its servers attached.
pub(super) struct Routes {
    pub(super) node: String,
    keys: Keys,
    conn: ConnectionManager,
    client: redis::Client,
    forward_timeout: Duration,
    response_timeout: Duration,
    pending: Mutex<HashMap<String, oneshot::Sender<Delivery>>>,
    runs: Mutex<Vec<Weak<dyn TaskRuns>>>,
    seen: Mutex<Seen>,
    /// Whether the subscriber holds a subscribed connection now: without one no ack can
    /// come back, so a forward fails at once instead of waiting out its bound.
    subscribed: AtomicBool,
    deliveries: Arc<Semaphore>,
}

/// Stops the subscriber when the store is dropped: a dropped store listens to nothing,
/// which is what a dead node looks like.
#[derive(Debug)]
pub(super) struct Listener(JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Removes a waiting call's entry however the call ends.
struct Waiting<'a>(&'a Routes, String);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.pending.lock().remove(&self.1);
    }
}

impl Routes {
    /// Subscribes node `node`'s channel (so `connect` fails if it cannot) and starts its
    /// subscriber.
    pub(super) async fn start(
        node: String,
        client: redis::Client,
        conn: ConnectionManager,
        options: &RedisTaskStoreOptions,
    ) -> redis::RedisResult<(Arc<Routes>, Listener)> {
        let routes = Arc::new(Routes {
            node,
            keys: Keys::new(&options.prefix),
            conn,
            client,
            forward_timeout: options.forward_timeout,
            response_timeout: options.response_timeout,
            pending: Mutex::default(),
            runs: Mutex::default(),
            seen: Mutex::default(),
            subscribed: AtomicBool::new(false),
            deliveries: Arc::new(Semaphore::new(CONCURRENT_DELIVERIES)),
        });
        let first = routes.subscribe().await?;
        routes.subscribed.store(true, Ordering::SeqCst);
        let listener = Listener(tokio::spawn(listen(routes.clone(), first)));
        Ok((routes, listener))
    }

    pub(super) fn attach(&self, runs: Weak<dyn TaskRuns>) {
        let mut all = self.runs.lock();
        all.retain(|r| r.strong_count() > 0);
        all.push(runs);
    }

    /// A new pub/sub connection subscribed to this node's channel, bounded.
    async fn subscribe(&self) -> redis::RedisResult<PubSub> {
        let channel = self.keys.node(&self.node);
        let connect = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok(pubsub)
        };
        match tokio::time::timeout(self.response_timeout, connect).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "subscribing timed out").into()),
        }
    }

    /// One Redis call on the shared connection, bounded like the store's.
    async fn run<T>(
        &self,
        call: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, TaskStoreError> {
        let bound = self.response_timeout * 2;
        match tokio::time::timeout(bound, call).await {
            Ok(result) => result.map_err(|e| TaskStoreError::Unavailable(e.to_string())),
            Err(_) => Err(TaskStoreError::Unavailable(format!("no answer from Redis within {bound:?}"))),
        }
    }

    /// Carries `signal` to the node running task `id` and waits for its ack.
    pub(super) async fn forward(&self, id: &str, signal: TaskSignal) -> Result<Delivery, TaskStoreError> {
        let signal = match signal {
            TaskSignal::Input(responses) => WireSignal::Input { responses },
            TaskSignal::Cancel => WireSignal::Cancel,
            _ => return Err(TaskStoreError::CannotForward),
        };
        let lease = self.keys.lease(id);
        let owner: Option<String> = self.run(redis::cmd("GET").arg(lease).query_async(&mut self.conn.clone())).await?;
        let Some(owner) = owner else {
            return Err(TaskStoreError::Unreachable("its lease has expired: the node stopped".into()));
        };
        if owner == self.node {
            // Another server on this very store runs it.
            return Ok(self.deliver(id, into_signal(signal)).await);
        }
        if !self.subscribed.load(Ordering::SeqCst) {
            return Err(TaskStoreError::Unavailable("this node is not subscribed to its channel".into()));
        }
        let msg = arbor_server::ids::random_id().map_err(|e| TaskStoreError::Unavailable(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(msg.clone(), tx);
        let _waiting = Waiting(self, msg.clone());
        let deadline_ms = now_ms() + self.forward_timeout.as_millis() as u64;
        let wire = Wire::Signal { msg, from: self.node.clone(), task: id.to_owned(), signal, deadline_ms };
        let payload = serde_json::to_string(&wire).map_err(|e| TaskStoreError::Unavailable(e.to_string()))?;
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(self.keys.node(&owner)).arg(payload);
        let receivers: i64 = self.run(publish.query_async(&mut self.conn.clone())).await?;
        if receivers == 0 {
            return Err(TaskStoreError::Unreachable(format!("node {owner} is not listening")));
        }
        match tokio::time::timeout(self.forward_timeout, rx).await {
            Ok(Ok(delivery)) => Ok(delivery),
            _ => Err(TaskStoreError::Unreachable(format!(
                "node {owner} did not answer within {:?}",
                self.forward_timeout
            ))),
        }
    }

    /// Applies `signal` to the run of `id` through the attached runs, the first that has it.
    async fn deliver(&self, id: &str, signal: TaskSignal) -> Delivery {
        let runs: Vec<Arc<dyn TaskRuns>> = {
            let mut all = self.runs.lock();
            all.retain(|r| r.strong_count() > 0);
            all.iter().filter_map(Weak::upgrade).collect()
        };
        for runs in runs {
            match runs.deliver(id, signal.clone()).await {
                Delivery::NotRunning => continue,
                taken => return taken,
            }
        }
        Delivery::NotRunning
    }

    /// One message read on this node's channel: an ack is handed to its waiting call, a
    /// signal seen for the first time is returned to be applied.
    fn received(&self, payload: &[u8]) -> Option<Incoming> {
        match serde_json::from_slice::<Wire>(payload) {
            Ok(Wire::Ack { msg, delivery }) => {
                if let Some(waiting) = self.pending.lock().remove(&msg) {
                    let _ = waiting.send(delivery.into_delivery());
                }
                None
            }
            Ok(Wire::Signal { msg, from, task, signal, deadline_ms }) => {
                if !self.seen.lock().first(&msg) {
                    return None;
                }
                Some(Incoming { msg, from, task, signal: into_signal(signal), deadline_ms })
            }
            Err(error) => {
                tracing::warn!(node = %self.node, %error, "an unreadable message on the node's channel");
                None
            }
        }
    }

    /// Applies a forwarded signal and answers its sender; drops it unapplied if its sender
    /// has stopped waiting (checked here, after any wait for a place among the deliveries).
    async fn answer(self: Arc<Self>, incoming: Incoming) {
        let Incoming { msg, from, task, signal, deadline_ms } = incoming;
        if now_ms() > deadline_ms {
            tracing::warn!(task, from, "a forwarded task signal arrived after its sender stopped waiting");
            return;
        }
        let delivery = WireDelivery::of(self.deliver(&task, signal).await);
        let Ok(payload) = serde_json::to_string(&Wire::Ack { msg, delivery }) else { return };
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(self.keys.node(&from)).arg(payload);
        // A lost ack is the sender's timeout: it says "unreachable", and the signal stays
        // applied. Nothing better can be done from here.
        if let Err(error) = self.run(publish.query_async::<i64>(&mut self.conn.clone())).await {
            tracing::warn!(task, %error, "could not answer a forwarded task signal");
        }
    }
}

fn into_signal(wire: WireSignal) -> TaskSignal {
    match wire {
        WireSignal::Input { responses } => TaskSignal::Input(responses),
        WireSignal::Cancel => TaskSignal::Cancel,
    }
}

/// The subscriber: reads the node's channel, reconnecting (and subscribing again) when the
/// connection is lost.
async fn listen(routes: Arc<Routes>, first: PubSub) {
    let mut next = Some(first);
    let mut delay = RECONNECT_MIN;
    loop {
        let pubsub = match next.take() {
            Some(pubsub) => pubsub,
            None => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RECONNECT_MAX);
                match routes.subscribe().await {
                    Ok(pubsub) => pubsub,
                    Err(error) => {
                        tracing::debug!(node = %routes.node, %error, "task routes: resubscribing failed");
                        continue;
                    }
                }
            }
        };
        routes.subscribed.store(true, Ordering::SeqCst);
        delay = RECONNECT_MIN;
        let (mut sink, mut stream) = pubsub.split();
        let error = session(&routes, &mut sink, &mut stream).await;
        routes.subscribed.store(false, Ordering::SeqCst);
        tracing::warn!(node = %routes.node, %error, "task routes: channel connection lost; reconnecting");
    }
}

/// Serves one connection until it is lost; returns why. A ping every response timeout
/// finds a connection that died silently.
async fn session(routes: &Arc<Routes>, sink: &mut PubSubSink, stream: &mut PubSubStream) -> redis::RedisError {
    let period = routes.response_timeout.max(Duration::from_millis(100));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(message) => {
                    let Some(incoming) = routes.received(message.get_payload_bytes()) else { continue };
                    // Bounded: past the limit the reader waits, and Redis buffers.
                    let Ok(permit) = routes.deliveries.clone().acquire_owned().await else { continue };
                    let routes = routes.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        routes.answer(incoming).await;
                    });
                }
                None => return std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "closed").into(),
            },
            _ = ping.tick() => match tokio::time::timeout(period, sink.ping::<redis::Value>()).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return error,
                Err(_) => return std::io::Error::new(std::io::ErrorKind::TimedOut, "ping timed out").into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Seen, SEEN};

    #[test]
    fn a_message_id_is_taken_once_and_the_memory_stays_bounded() {
        let mut seen = Seen::default();
        assert!(seen.first("m0"));
        assert!(!seen.first("m0"), "a second copy of one message is dropped");
        for n in 1..=SEEN {
            assert!(seen.first(&format!("m{n}")));
        }
        assert_eq!((seen.order.len(), seen.ids.len()), (SEEN, SEEN));
        assert!(!seen.first(&format!("m{SEEN}")), "the newest are remembered");
        assert!(seen.first("m0"), "the oldest was forgotten to stay bounded");
    }
}

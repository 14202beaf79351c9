//! The subscriber task of a [`super::RedisBus`] node: one dedicated pub/sub connection,
//! kept subscribed to exactly the channels of the topics with local subscriptions, whose
//! messages it fans out to the local queues.
//!
//! Not here: publishing, or the queues themselves (the hub's).
//!
//! Invariants:
//! - It reconciles rather than replays: for each dirty topic it compares "has local
//!   subscriptions now" (the hub) with "subscribed in Redis" (its own set), so subscribe and
//!   unsubscribe notifications may arrive in any order or be merged without leaving Redis
//!   wrong.
//! - After a lost connection, every live topic is subscribed again *before* the reconnection
//!   gap is queued and before any message of the new connection is delivered: a subscriber
//!   that sees the gap sees everything published after it.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use redis::aio::{PubSub, PubSubSink, PubSubStream};

use super::backoff::Backoff;
use super::{wire, Shared, CONNECT_TIMEOUT};

/// (Un)subscribe commands in flight at once when many topics change together.
const CONCURRENT_COMMANDS: usize = 64;

pub(super) async fn connect(client: &redis::Client) -> redis::RedisResult<PubSub> {
    match tokio::time::timeout(CONNECT_TIMEOUT, client.get_async_pubsub()).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out").into()),
    }
}

pub(super) async fn run(shared: Arc<Shared>, first: PubSub) {
    let options = &shared.options;
    let mut backoff = Backoff::new(options.reconnect_min, options.reconnect_max);
    let mut next = Some(first);
    let mut reconnecting = false;
    loop {
        let pubsub = match next.take() {
            Some(pubsub) => pubsub,
            None => {
                tokio::time::sleep(backoff.next_delay()).await;
                match connect(&shared.client).await {
                    Ok(pubsub) => pubsub,
                    Err(error) => {
                        tracing::debug!(node = %shared.node, %error, "redis bus: subscriber reconnect failed");
                        continue;
                    }
                }
            }
        };
        let (mut sink, mut stream) = pubsub.split();
        let mut subscribed = HashSet::new();
        // Take the generation before reading the hub: changes after it stay dirty and are
        // reconciled in the session.
        let generation = shared.dirty.requested.load(Ordering::SeqCst);
        shared.dirty.topics.lock().clear();
        let live = shared.hub.topic_names();
        if let Err(error) = change(&shared, &sink, &live, true, &mut subscribed).await {
            tracing::warn!(node = %shared.node, %error, "redis bus: re-subscribing failed; reconnecting");
            continue;
        }
        shared.dirty.mark_applied(generation);
        *shared.down_since.lock() = None;
        if reconnecting {
            shared.counters.reconnects.fetch_add(1, Ordering::Relaxed);
            crate::metrics::redis_reconnected();
            shared.hub.reconnected(&live);
            tracing::info!(node = %shared.node, topics = live.len(), "redis bus: subscriber reconnected");
        }
        reconnecting = true;
        backoff.reset();
        let error = session(&shared, &mut sink, &mut stream, &mut subscribed).await;
        shared.down_since.lock().get_or_insert_with(tokio::time::Instant::now);
        shared.lost.send_modify(|n| *n += 1);
        tracing::warn!(node = %shared.node, %error, "redis bus: subscriber connection lost; reconnecting");
    }
}

/// Serves one connection until it is lost; returns why.
async fn session(
    shared: &Shared,
    sink: &mut PubSubSink,
    stream: &mut PubSubStream,
    subscribed: &mut HashSet<Arc<str>>,
) -> redis::RedisError {
    let period = shared.options.ping_interval;
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(message) => deliver(shared, subscribed, &message),
                None => return std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "closed").into(),
            },
            () = shared.dirty.wake.notified() => {
                if let Err(error) = reconcile(shared, sink, subscribed).await {
                    return error;
                }
            }
            _ = ping.tick() => {
                match tokio::time::timeout(period, sink.ping::<redis::Value>()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => return error,
                    Err(_) => return std::io::Error::new(std::io::ErrorKind::TimedOut, "ping timed out").into(),
                }
            }
        }
    }
}

/// Brings Redis in line with the hub for the dirty topics.
async fn reconcile(shared: &Shared, sink: &PubSubSink, subscribed: &mut HashSet<Arc<str>>) -> redis::RedisResult<()> {
    let generation = shared.dirty.requested.load(Ordering::SeqCst);
    let dirty: Vec<Arc<str>> = shared.dirty.topics.lock().drain().collect();
    let (mut add, mut remove) = (Vec::new(), Vec::new());
    for topic in dirty {
        match (shared.hub.has_topic(&topic), subscribed.contains(&topic)) {
            (true, false) => add.push(topic),
            (false, true) => remove.push(topic),
            _ => {}
        }
    }
    change(shared, sink, &add, true, subscribed).await?;
    change(shared, sink, &remove, false, subscribed).await?;
    shared.dirty.mark_applied(generation);
    Ok(())
}

/// (Un)subscribes `topics`, one command per channel, several in flight: the client matches
/// replies to commands one for one, so each command names a single channel.
async fn change(
    shared: &Shared,
    sink: &PubSubSink,
    topics: &[Arc<str>],
    add: bool,
    subscribed: &mut HashSet<Arc<str>>,
) -> redis::RedisResult<()> {
    // Owned channel names: a closure over borrowed items trips the `Send` check of the
    // spawned task (rust-lang/rust#102211).
    let channels: Vec<String> = topics.iter().map(|t| shared.channel(t)).collect();
    futures::stream::iter(channels)
        .map(|channel| {
            let mut sink = sink.clone();
            async move {
                if add {
                    sink.subscribe(channel).await
                } else {
                    sink.unsubscribe(channel).await
                }
            }
        })
        .buffer_unordered(CONCURRENT_COMMANDS)
        .try_collect::<()>()
        .await?;
    for topic in topics {
        if add {
            subscribed.insert(topic.clone());
        } else {
            subscribed.remove(topic);
        }
    }
    Ok(())
}

fn deliver(shared: &Shared, subscribed: &HashSet<Arc<str>>, message: &redis::Msg) {
    let counters = &shared.counters;
    let Some(name) = message.get_channel_name().strip_prefix(shared.options.channel_prefix.as_str()) else {
        counters.undecodable.fetch_add(1, Ordering::Relaxed);
        return;
    };
    // Reuse the topic's `Arc` when we have it: one allocation fewer per message.
    let topic = subscribed.get(name).cloned().unwrap_or_else(|| name.into());
    match wire::decode(topic, message.get_payload_bytes()) {
        Some(decoded) if decoded.node == shared.node => {}
        Some(decoded) => {
            counters.received.fetch_add(1, Ordering::Relaxed);
            shared.hub.fan_out(&Arc::new(decoded.message));
        }
        None => {
            counters.undecodable.fetch_add(1, Ordering::Relaxed);
        }
    }
}

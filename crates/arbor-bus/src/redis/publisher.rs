//! The publisher task of a [`super::RedisBus`] node: takes what `publish` queued and sends
//! it to Redis over a multiplexed connection, as one pipeline per batch.
//!
//! Not here: local delivery (done by `publish` itself) or subscribing.
//!
//! Invariant: it never holds more than one batch besides the bounded outbound channel. A
//! batch whose send fails is dropped and counted (`publish_failed`), and the connection is
//! re-made with backoff before the next batch is taken, so while Redis is away the channel
//! fills and `publish` refuses the excess instead of anything growing. When the subscriber
//! task reports a lost connection, this one is re-made too, before it is used again: what
//! is published while Redis restarts waits in the channel instead of failing on a dead
//! socket.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use tokio::sync::mpsc;

use super::backoff::Backoff;
use super::{wire, Shared, CONNECT_TIMEOUT};
use crate::message::BusMessage;

/// The most messages sent in one pipeline.
const BATCH: usize = 256;

pub(super) async fn connect(client: &redis::Client) -> redis::RedisResult<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(CONNECT_TIMEOUT));
    client.get_multiplexed_async_connection_with_config(&config).await
}

pub(super) async fn run(
    shared: Arc<Shared>,
    mut outbound: mpsc::Receiver<Arc<BusMessage>>,
    first: MultiplexedConnection,
) {
    let options = &shared.options;
    let mut backoff = Backoff::new(options.reconnect_min, options.reconnect_max);
    let mut lost = shared.lost.subscribe();
    let mut connection = Some(first);
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let Some(conn) = &mut connection else {
            tokio::time::sleep(backoff.next_delay()).await;
            match connect(&shared.client).await {
                Ok(conn) => {
                    tracing::info!(node = %shared.node, "redis bus: publisher reconnected");
                    backoff.reset();
                    // A loss reported while we connected was the old connection's.
                    lost.borrow_and_update();
                    connection = Some(conn);
                }
                Err(error) => tracing::debug!(node = %shared.node, %error, "redis bus: publisher reconnect failed"),
            }
            continue;
        };
        tokio::select! {
            // The subscriber task sees a dead server at once (its connection is always
            // reading); ours would only fail on the next send and lose that batch. So when
            // it loses Redis we reconnect too, and messages wait in the channel meanwhile.
            changed = lost.changed() => {
                if changed.is_err() {
                    return;
                }
                connection = None;
                continue;
            }
            received = outbound.recv_many(&mut batch, BATCH) => {
                if received == 0 {
                    return;
                }
            }
        }
        let mut pipe = redis::pipe();
        for message in &batch {
            pipe.cmd("PUBLISH").arg(shared.channel(&message.topic)).arg(wire::encode(&shared.node, message)).ignore();
        }
        let n = batch.len() as u64;
        batch.clear();
        match pipe.query_async::<()>(conn).await {
            Ok(()) => {
                shared.counters.published.fetch_add(n, Ordering::Relaxed);
            }
            Err(error) => {
                shared.counters.publish_failed.fetch_add(n, Ordering::Relaxed);
                tracing::warn!(node = %shared.node, %error, lost = n, "redis bus: publish failed; reconnecting");
                connection = None;
            }
        }
    }
}

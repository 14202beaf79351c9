//! The subscriber of a [`super::RedisSessionStore`]: one dedicated pub/sub connection
//! subscribed to this node's channel and to the channel every node hears, turning what
//! arrives into [`Delivery`]s for arbor-http; and the wire form of those messages.
//!
//! It is not the store's request/response connection. Invariant: a lost connection is
//! re-established with backoff (100 ms doubling to 5 s) and both channels subscribed again
//! before anything more is read; what was published meanwhile is lost (pub/sub keeps
//! nothing), which the callers tolerate (an answer sent then is reported as unheard, an
//! end is caught by the keeper).

use std::time::Duration;

use std::sync::Arc;

use arbor_http::cluster::Delivery;
use bytes::Bytes;
use futures::StreamExt;
use redis::aio::PubSub;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::acks::{self, Acks};

/// A message between nodes, as published (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Wire {
    /// The client's answer, for the node that asked.
    Answer {
        /// The session.
        session: String,
        /// The JSON-RPC response.
        body: String,
    },
    /// A message every copy of the session applies.
    Relay {
        /// The session.
        session: String,
        /// The JSON-RPC message.
        body: String,
        /// The node that sent it (which does not apply it again).
        from: String,
        /// When the sender waits for every hearer to apply it: the token to answer with
        /// [`Wire::Applied`] on the sender's channel (`acks.rs`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ack: Option<String>,
    },
    /// A hearer applied the relay that carried `ack`, for the node that sent it.
    Applied {
        /// The relay's token.
        ack: String,
    },
    /// The session ended.
    Ended {
        /// The session.
        session: String,
        /// The node that ended it.
        from: String,
    },
}

/// The channels one node reads.
#[derive(Clone, Debug)]
pub(super) struct Channels {
    own: String,
    all: String,
}

impl Channels {
    pub(super) fn new(prefix: &str, node: &str) -> Channels {
        Channels { own: node_channel(prefix, node), all: all_channel(prefix) }
    }
}

pub(super) fn node_channel(prefix: &str, node: &str) -> String {
    format!("{prefix}sessions:node:{node}")
}

pub(super) fn all_channel(prefix: &str) -> String {
    format!("{prefix}sessions:all")
}

/// A subscribed connection.
pub(super) async fn connect(client: &redis::Client, channels: &Channels) -> redis::RedisResult<PubSub> {
    let connecting = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(&channels.own).await?;
        pubsub.subscribe(&channels.all).await?;
        Ok(pubsub)
    };
    match tokio::time::timeout(Duration::from_secs(2), connecting).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "subscribing timed out").into()),
    }
}

/// Reads deliveries until the receiver is gone, reconnecting whenever the connection is lost.
pub(super) async fn run(
    client: redis::Client,
    channels: Channels,
    node: String,
    first: PubSub,
    tx: mpsc::Sender<Delivery>,
    acks: Arc<Acks>,
) {
    let mut next = Some(first);
    let mut delay = Duration::from_millis(100);
    loop {
        let pubsub = match next.take() {
            Some(pubsub) => pubsub,
            None => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
                match connect(&client, &channels).await {
                    Ok(pubsub) => {
                        tracing::info!(%node, "session store: subscriber reconnected");
                        pubsub
                    }
                    Err(error) => {
                        tracing::debug!(%node, %error, "session store: subscriber reconnect failed");
                        continue;
                    }
                }
            }
        };
        delay = Duration::from_millis(100);
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let Ok(payload) = message.get_payload::<String>() else { continue };
            let wire = match serde_json::from_str::<Wire>(&payload) {
                Ok(wire) => wire,
                Err(error) => {
                    tracing::warn!(%node, %error, "session store: a malformed message on the channel; ignored");
                    continue;
                }
            };
            if let Some(n) = applied(&wire, &node) {
                acks.applied(n);
                continue;
            }
            let Some(delivery) = delivery(wire, &node) else { continue };
            if tx.send(delivery).await.is_err() {
                return;
            }
        }
        if tx.is_closed() {
            return;
        }
        tracing::warn!(%node, "session store: subscriber connection lost; reconnecting");
    }
}

/// The relay of this node's that a message says was applied: another node's
/// [`Wire::Applied`], or this node's own relay heard back (`PUBLISH` counted this
/// subscriber among the hearers, and the sender applied it already).
fn applied(wire: &Wire, node: &str) -> Option<u64> {
    let token = match wire {
        Wire::Applied { ack } => ack,
        Wire::Relay { from, ack: Some(ack), .. } if from == node => ack,
        _ => return None,
    };
    acks::parse(token).filter(|(_, to)| *to == node).map(|(n, _)| n)
}

/// What a message means for this node (`None`: its own relay or end, already applied).
fn delivery(wire: Wire, node: &str) -> Option<Delivery> {
    match wire {
        Wire::Answer { session, body } => Some(Delivery::Answer { session, body: Bytes::from(body) }),
        Wire::Relay { session, body, from, ack } => {
            (from != node).then(|| Delivery::Relay { session, body: Bytes::from(body), ack })
        }
        Wire::Applied { .. } => None,
        Wire::Ended { session, from } => (from != node).then_some(Delivery::Ended { session }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_does_not_apply_its_own_relays_and_ends_again() {
        let relay = Wire::Relay { session: "s".into(), body: "{}".into(), from: "a".into(), ack: None };
        assert_eq!(delivery(relay.clone(), "a"), None);
        assert_eq!(
            delivery(relay, "b"),
            Some(Delivery::Relay { session: "s".into(), body: Bytes::from("{}"), ack: None })
        );
        let ended = Wire::Ended { session: "s".into(), from: "a".into() };
        assert_eq!(delivery(ended.clone(), "a"), None);
        assert_eq!(delivery(ended, "b"), Some(Delivery::Ended { session: "s".into() }));
        let answer = Wire::Answer { session: "s".into(), body: "{}".into() };
        assert!(delivery(answer, "a").is_some(), "an answer is always for this node");
    }

    #[test]
    fn a_relay_waited_on_is_acknowledged_to_its_sender_only() {
        let token = acks::token(3, "a");
        let relay = Wire::Relay { session: "s".into(), body: "{}".into(), from: "a".into(), ack: Some(token.clone()) };
        assert_eq!(applied(&relay, "a"), Some(3), "the sender's own subscriber counts as a hearer");
        assert_eq!(applied(&relay, "b"), None);
        assert_eq!(
            delivery(relay, "b"),
            Some(Delivery::Relay { session: "s".into(), body: "{}".into(), ack: Some(token.clone()) })
        );
        let ack = Wire::Applied { ack: token };
        assert_eq!(applied(&ack, "a"), Some(3));
        assert_eq!(applied(&ack, "b"), None, "another node's token");
        assert_eq!(delivery(ack, "a"), None);
        // A relay without a token (a cancel) predates acknowledgements on the wire.
        let old: Wire = serde_json::from_str(r#"{"kind":"relay","session":"s","body":"{}","from":"a"}"#).unwrap();
        assert!(matches!(old, Wire::Relay { ack: None, .. }));
    }

    #[test]
    fn the_wire_form_is_tagged_json() {
        let wire = Wire::Answer { session: "s".into(), body: "{\"id\":1}".into() };
        let json = serde_json::to_string(&wire).unwrap();
        assert!(json.contains("\"kind\":\"answer\""), "{json}");
        assert_eq!(serde_json::from_str::<Wire>(&json).unwrap(), wire);
    }
}

//! The fault kit's stream side: a subscription handler that numbers what it streams, the
//! numbered bus messages it streams, and a consumer that reads a stream into a
//! [`NotificationLedger`] (and its connection's answers into the request [`Ledger`]).
//!
//! `Numbered` turns each message of its topic into a `notifications/resources/updated` of
//! [`FEED`] carrying the message's number in `_meta` (the kit's [`SEQ`](tests::kit::notifications::SEQ)
//! key), and each gap the runtime hands it into one carrying the kit's gap marker: so what
//! a client reads says exactly which events reached it, where the runtime reported a loss,
//! and how its stream ended. It runs on the runtime's real streams, in both eras (a listen,
//! or a legacy `resources/subscribe` of [`FEED`]). It is not a scenario: the scenario
//! modules drive it.
//!
//! Invariant: a consumer records every message it reads, in order, and stops only when the
//! ledger says its stream is done and its connection is owed nothing, or after
//! [`SILENCE`] without a message (then the ledger reports the silence).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{BusMessage, SubscribeOptions};
use arbor_protocol::meta::Meta;
use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::subscriptions::{ResourceUpdatedNotificationParams, SubscriptionFilter};
use arbor_server::{Channel, Flow, Server, Subscribe, SubscriptionCapabilities, SubscriptionHandler};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger};
use tests::kit::notifications::{classify, gap_meta, seq_meta, NotificationLedger, Seen};
use tests::kit::peer::SlowReads;

use crate::kit::Era;
use crate::support::{modern_meta, ScriptedPeer};

/// The resource whose updates the numbered stream carries.
pub const FEED: &str = "test://numbered";
/// The bus topic of the numbered events.
pub const TOPIC: &str = "kit/numbered";
/// How long a consumer waits for a message before it calls the stream silent (of the
/// test's clock: virtual on the paused clock).
pub const SILENCE: Duration = Duration::from_secs(10);

/// Streams [`TOPIC`] as numbered updates of [`FEED`], joined with `options`.
pub struct Numbered {
    pub options: SubscribeOptions,
}

impl SubscriptionHandler for Numbered {
    type State = ();

    async fn subscribe(&self, filter: &SubscriptionFilter, channel: &Channel) -> Subscribe<()> {
        if filter.resource_subscriptions.iter().flatten().any(|uri| uri == FEED) {
            channel.join(TOPIC, self.options).expect("the stream is opening");
        }
        Subscribe::Accept(())
    }

    async fn handle_message(&self, message: Arc<BusMessage>, channel: &Channel, _: &mut ()) -> Flow {
        let mut meta = seq_meta(message.payload["seq"].as_u64().expect("a numbered message"));
        meta["pad"] = message.payload["pad"].clone();
        send(channel, meta);
        Flow::Stream
    }

    async fn handle_gap(&self, _: &str, channel: &Channel, _: &mut ()) -> Flow {
        send(channel, gap_meta());
        Flow::Stream
    }

    fn subscription_capabilities(&self) -> SubscriptionCapabilities {
        SubscriptionCapabilities { resources_updated: true, ..Default::default() }
    }
}

fn send(channel: &Channel, meta: Value) {
    let mut params = ResourceUpdatedNotificationParams::new(FEED);
    params.meta = Some(Meta::from(meta.as_object().expect("an object").clone()));
    // A closed stream refuses: what it would have carried is the end's to account for.
    let _ = channel.send(ServerNotification::ResourceUpdated(params));
}

/// Event `seq` on [`TOPIC`], keyed by `seq % keys`, padded with `pad`.
pub fn numbered(seq: u64, keys: u64, pad: &Value) -> (BusMessage, String) {
    let key = format!("k{}", seq % keys);
    (BusMessage::new(TOPIC, json!({"seq": seq, "pad": pad})).with_key(key.clone()), key)
}

/// The deepest bus queue of any subscription stream the server shows now.
pub async fn deepest_stream_queue(server: &Server) -> usize {
    fn walk(node: &Value, deepest: &mut usize) {
        if node["kind"] == "stream" {
            *deepest = (*deepest).max(node["queue_depth"].as_u64().unwrap_or(0) as usize);
        }
        for child in node["children"].as_array().into_iter().flatten() {
            walk(child, deepest);
        }
    }
    let view = serde_json::to_value(server.observe().await.expect("a connection was made")).unwrap();
    let mut deepest = 0;
    walk(&view["root"], &mut deepest);
    deepest
}

/// The request that opens a numbered stream on a connection of `era`: a listen with `id`,
/// or a `resources/subscribe` of [`FEED`].
pub fn open(era: Era, id: &Value) -> Value {
    match era {
        Era::Modern => json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {"_meta": modern_meta(json!({})), "notifications": {"resourceSubscriptions": [FEED]}}}),
        Era::Legacy => json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": FEED}}),
    }
}

/// An `echo` call of `era` with `id`.
pub fn echo(era: Era, id: &Value) -> Value {
    let mut params = json!({"name": "echo", "arguments": {"message": "still here"}});
    if era == Era::Modern {
        params["_meta"] = modern_meta(json!({}));
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A `fault` call of `era` with `id` that answers after `ms`.
pub fn delayed(era: Era, id: &Value, ms: u64) -> Value {
    let mut call = crate::kit::fault_call(id, tests::kit::plan::Fault::Delay { ms });
    if era == Era::Modern {
        call["params"]["_meta"] = modern_meta(json!({}));
    }
    call
}

/// Opens the numbered stream on `peer` (connection `conn` of `ledger`): sends the opening
/// request and reads until the stream is open (the acknowledgement, or the subscribe's
/// answer).
pub async fn open_stream(peer: &mut ScriptedPeer, era: Era, conn: usize, id: &Value, ledger: &Mutex<Ledger>) {
    peer.send(open(era, id));
    ledger.lock().sent(conn, id, &[Kind::Result]);
    let first = peer.recv().await;
    match era {
        Era::Modern => assert_eq!(first["method"], "notifications/subscriptions/acknowledged", "{first}"),
        Era::Legacy => {
            assert_eq!(ledger.lock().received(conn, &first), Some(Kind::Result), "{first}");
        }
    }
}

/// A reader of one numbered stream.
pub struct Consumer {
    pub name: String,
    pub era: Era,
    pub conn: usize,
    /// The listen's id (modern): its answer is the stream's graceful end.
    pub listen: Option<Value>,
    pub pace: SlowReads,
    /// An echo request every this many messages read (0: none).
    pub echo_every: usize,
    /// When set, the requests are `fault` calls that answer after this many ms (of the
    /// test's clock) instead of echoes, so some are in flight whenever a fault strikes.
    pub delay_ms: Option<u64>,
    /// Set once the publisher is done: before, the last event published is not the last.
    pub published_all: Arc<AtomicBool>,
    /// Read on past the last event until the stream ends or reports a gap after it (a
    /// source that failed must say so).
    pub until_signalled: bool,
}

impl Consumer {
    /// Reads `peer` slowly into the ledgers until the stream is done and nothing is owed
    /// (or it falls silent); returns the peer and the echo requests sent.
    pub async fn run(
        &self,
        mut peer: ScriptedPeer,
        notes: &Mutex<NotificationLedger>,
        ledger: &Mutex<Ledger>,
    ) -> (ScriptedPeer, usize) {
        let (mut read, mut echoes) = (0usize, 0usize);
        loop {
            let done = self.published_all.load(Ordering::SeqCst)
                && if self.until_signalled {
                    notes.lock().signalled(&self.name)
                } else {
                    notes.lock().is_done(&self.name)
                };
            if done && ledger.lock().owed(self.conn) == 0 {
                break;
            }
            let Ok(message) = tokio::time::timeout(SILENCE, peer.recv()).await else {
                break;
            };
            read += 1;
            if let Some(seen) = classify(&message) {
                notes.lock().seen(&self.name, seen);
            } else if message["method"] == "notifications/resources/updated" && message["params"]["uri"] == FEED {
                // The runtime's own handler telling the client to re-read the resource:
                // the product's resync signal, a gap as far as the events are concerned.
                notes.lock().seen(&self.name, Seen::Gap);
            } else if message["method"].as_str().is_some_and(|m| m.ends_with("/list_changed")) {
                // A legacy session's list stream, resyncing after its bus ended.
            } else if message["method"] == "notifications/cancelled" {
                // On stdio a server that ends a listen also cancels it; the answer is the end.
                assert_eq!(Some(&message["params"]["requestId"]), self.listen.as_ref(), "{message}");
            } else if message.get("method").is_some() {
                panic!("{}: an unexpected notification {message}", self.name);
            } else {
                if self.listen.as_ref() == message.get("id") {
                    assert_eq!(message["result"]["resultType"], "complete", "{message}");
                    notes.lock().seen(&self.name, Seen::End);
                }
                ledger.lock().received(self.conn, &message);
            }
            if self.echo_every > 0 && read.is_multiple_of(self.echo_every) {
                echoes += 1;
                let id = json!(format!("echo-{echoes}"));
                ledger.lock().sent(self.conn, &id, &[Kind::Result]);
                peer.send(match self.delay_ms {
                    None => echo(self.era, &id),
                    Some(ms) => delayed(self.era, &id, ms),
                });
            }
            if let Some(pause) = self.pace.pause_after(read) {
                tokio::time::sleep(pause).await;
            }
        }
        (peer, echoes)
    }
}

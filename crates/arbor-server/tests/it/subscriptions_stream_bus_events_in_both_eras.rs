//! Subscription streams: a 2026-07-28 `subscriptions/listen` is acknowledged first, carries
//! its id on every notification, reports the honoured filter, ends exactly one way and
//! leaves no bus subscription behind; legacy `resources/subscribe` and `list_changed` ride
//! the same streams. Raw JSON over the in-memory transport, every message checked against
//! the schema of its revision.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_bus::{Bus, BusMessage, LocalBus, SubscribeOptions};
use arbor_otp::Gauge;
use arbor_protocol::error::McpError;
use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::subscriptions::{ResourceUpdatedNotificationParams, SubscriptionFilter};
use arbor_server::{
    Channel, ConnectOptions, Connection, Flow, ListKind, Server, ServerConfig, Subscribe, SubscriptionCapabilities,
    SubscriptionHandler, Transport,
};
use serde_json::{json, Value};

use crate::schema::check_message;
use crate::support::{modern_meta, ScriptedPeer, TestHandler};

const FEED: &str = "test://feed";
const SECRET: &str = "test://secret";

/// A user handler: streams the `feed` topic as `updated` of `test://feed`, refuses callers
/// whose identity is `banned`, keeps `test://secret` from anonymous callers, stops on a
/// `"stop"` message, and counts its `handle_close` calls.
struct Feed {
    closed: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl SubscriptionHandler for Feed {
    type State = ();

    async fn subscribe(&self, filter: &SubscriptionFilter, channel: &Channel) -> Subscribe<()> {
        let auth = channel.connection().auth.as_deref();
        if auth == Some("banned") {
            return Subscribe::Reject(McpError::invalid_params("This caller may not subscribe"));
        }
        let uris = filter.resource_subscriptions.clone().unwrap_or_default();
        if uris.iter().any(|u| u == FEED) {
            channel.join("feed", SubscribeOptions::drop_oldest()).unwrap();
        }
        if auth.is_none() && uris.iter().any(|u| u == SECRET) {
            let mut honoured = filter.clone();
            honoured.resource_subscriptions = Some(uris.into_iter().filter(|u| u != SECRET).collect());
            return Subscribe::Narrow(honoured, ());
        }
        Subscribe::Accept(())
    }

    async fn handle_message(&self, message: Arc<BusMessage>, channel: &Channel, _: &mut ()) -> Flow {
        if message.payload == json!("stop") {
            return Flow::Stop;
        }
        if message.payload == json!("misbehave") {
            // Request-scoped notifications never travel on a stream, nor types it lacks.
            let progress = serde_json::from_value(json!({"progressToken": 1, "progress": 1})).unwrap();
            let log = serde_json::from_value(json!({"level": "info", "data": "x"})).unwrap();
            let attempts = [
                ServerNotification::Progress(progress),
                ServerNotification::LoggingMessage(log),
                ServerNotification::ResourceListChanged(Default::default()),
            ];
            for attempt in attempts {
                if channel.send(attempt).is_err() {
                    self.refused.fetch_add(1, Ordering::SeqCst);
                }
            }
            return Flow::Stream;
        }
        let params = ResourceUpdatedNotificationParams::new(FEED);
        let _ = channel.send(ServerNotification::ResourceUpdated(params));
        Flow::Stream
    }

    async fn handle_close(&self, _: &Channel, _: ()) {
        self.closed.fetch_add(1, Ordering::SeqCst);
    }

    fn subscription_capabilities(&self) -> SubscriptionCapabilities {
        SubscriptionCapabilities { prompts_list_changed: true, resources_updated: true, ..Default::default() }
    }
}

struct Setup {
    server: Server,
    bus: Arc<LocalBus>,
    gauge: Gauge,
    changes: arbor_server::ListChangeSender,
    closed: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl Setup {
    fn new() -> Setup {
        Setup::with_config(ServerConfig::default())
    }

    fn with_config(config: ServerConfig) -> Setup {
        let gauge = Gauge::new();
        let handler = TestHandler::new();
        let changes = handler.changes.clone();
        let bus = Arc::new(LocalBus::new());
        let closed = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicUsize::new(0));
        let server = Server::with_config(handler, config.gauge(gauge.clone()))
            .with_bus(bus.clone())
            .subscription_handler(Feed { closed: closed.clone(), refused: refused.clone() });
        Setup { server, bus, gauge, changes, closed, refused }
    }

    async fn connect(&self, options: ConnectOptions) -> (Connection, Peer) {
        let (server_side, client_side) = Transport::memory_pair();
        let connection = self.server.connect(server_side, options).await.unwrap();
        (connection, Peer { peer: ScriptedPeer::new(client_side), revision: "2026-07-28" })
    }

    fn publish(&self, payload: Value) {
        self.bus.publish(BusMessage::new("feed", payload)).unwrap();
    }

    async fn finish(self, connections: Vec<(Connection, Peer)>) {
        for (connection, peer) in connections {
            peer.peer.close().await;
            connection.closed().await;
        }
        self.server.shutdown().await;
        assert_eq!(self.bus.subscriber_count(), 0, "bus subscriptions leaked");
        assert_eq!(self.gauge.alive_tasks(), 0, "tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

/// A peer that checks every message against its revision's schema.
struct Peer {
    peer: ScriptedPeer,
    revision: &'static str,
}

impl Peer {
    async fn recv(&mut self, answering: Option<&str>) -> Value {
        let message = self.peer.recv().await;
        let method = if message.get("method").is_none() { answering } else { None };
        check_message(self.revision, &message, method);
        message
    }

    fn listen(&self, id: Value, filter: Value) {
        let params = json!({"_meta": modern_meta(json!({})), "notifications": filter});
        self.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params}));
    }

    fn cancel(&self, id: Value) {
        self.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}));
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.recv(Some(method)).await;
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    async fn initialize(&mut self, version: &'static str) {
        self.revision = version;
        let params =
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}});
        self.call(0, "initialize", params).await;
        self.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // A round trip, so `initialized` was handled before the test goes on.
        self.call(1, "ping", json!({})).await;
    }
}

fn subscription_id(message: &Value) -> &Value {
    &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

#[tokio::test(start_paused = true)]
async fn the_acknowledgement_comes_first_and_every_notification_carries_the_listen_id() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    let before = s.bus.subscriber_count();
    for id in [json!("listen-1"), json!(7)] {
        p.listen(
            id.clone(),
            json!({"resourceSubscriptions": [FEED], "toolsListChanged": true, "promptsListChanged": true, "taskIds": ["t"]}),
        );
        let ack = p.recv(None).await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        // The id keeps its JSON type: a string stays a string, a number a number.
        assert_eq!(subscription_id(&ack), &id);
        // Unsupported types (task ids) are left out.
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": [FEED]})
        );
        s.publish(json!("hello"));
        let updated = p.recv(None).await;
        assert_eq!(updated["method"], "notifications/resources/updated");
        assert_eq!(updated["params"]["uri"], FEED);
        assert_eq!(subscription_id(&updated), &id);
        s.changes.send(ListKind::Tools);
        let changed = p.recv(None).await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(subscription_id(&changed), &id);
        // Resources did not ask for list changes: nothing comes for them.
        s.changes.send(ListKind::Resources);
        p.peer.expect_silence(Duration::from_millis(50)).await;
        p.cancel(id);
        p.peer.expect_silence(Duration::from_millis(50)).await;
    }
    assert_eq!(s.bus.subscriber_count(), before);
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn several_listens_share_a_connection_and_are_told_apart_by_id() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    p.listen(json!("a"), json!({"resourceSubscriptions": [FEED]}));
    assert_eq!(subscription_id(&p.recv(None).await), "a");
    p.listen(json!("b"), json!({"toolsListChanged": true}));
    assert_eq!(subscription_id(&p.recv(None).await), "b");
    s.publish(json!("x"));
    let first = p.recv(None).await;
    assert_eq!(
        (first["method"].as_str().unwrap(), subscription_id(&first)),
        ("notifications/resources/updated", &json!("a"))
    );
    s.changes.send(ListKind::Tools);
    let second = p.recv(None).await;
    assert_eq!(
        (second["method"].as_str().unwrap(), subscription_id(&second)),
        ("notifications/tools/list_changed", &json!("b"))
    );
    // A request may not reuse an id whose stream is open.
    let duplicate = p.call(99, "tools/list", json!({"_meta": modern_meta(json!({}))})).await;
    assert!(duplicate.get("result").is_some());
    p.listen(json!("a"), json!({}));
    let refused = p.recv(Some("subscriptions/listen")).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_narrowed_filter_is_what_the_acknowledgement_reports() {
    let s = Setup::new();
    let (anonymous, mut p) = s.connect(ConnectOptions::default()).await;
    p.listen(json!(1), json!({"resourceSubscriptions": [FEED, SECRET]}));
    let ack = p.recv(None).await;
    assert_eq!(ack["params"]["notifications"], json!({"resourceSubscriptions": [FEED]}));
    let (known, mut q) = s.connect(ConnectOptions::default().auth("ada")).await;
    q.listen(json!(1), json!({"resourceSubscriptions": [FEED, SECRET]}));
    let ack = q.recv(None).await;
    assert_eq!(ack["params"]["notifications"], json!({"resourceSubscriptions": [FEED, SECRET]}));
    // The built-in stream honours what the handler left: an update of the secret reaches
    // only the caller allowed to see it.
    s.server.notify_resource_updated(SECRET).unwrap();
    let updated = q.recv(None).await;
    assert_eq!(updated["params"]["uri"], SECRET);
    p.peer.expect_silence(Duration::from_millis(50)).await;
    s.finish(vec![(anonymous, p), (known, q)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_rejected_listen_gets_an_error_response_and_no_acknowledgement() {
    let s = Setup::new();
    let before = s.bus.subscriber_count();
    let (connection, mut p) = s.connect(ConnectOptions::default().auth("banned")).await;
    p.listen(json!("no"), json!({"resourceSubscriptions": [FEED], "toolsListChanged": true}));
    let refused = p.recv(Some("subscriptions/listen")).await;
    assert_eq!(refused["id"], "no");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    p.peer.expect_silence(Duration::from_millis(50)).await;
    s.publish(json!("hello"));
    p.peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(s.closed.load(Ordering::SeqCst), 0);
    assert_eq!(s.bus.subscriber_count(), before);
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_handler_stop_completes_the_listen_without_handle_close() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    let before = s.bus.subscriber_count();
    p.listen(json!("s"), json!({"resourceSubscriptions": [FEED], "toolsListChanged": true}));
    p.recv(None).await;
    s.publish(json!("stop"));
    let complete = p.recv(Some("subscriptions/listen")).await;
    assert_eq!(complete["id"], "s");
    assert_eq!(
        complete["result"],
        json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "s"}, "resultType": "complete"})
    );
    // On stdio the server also cancels the listen it ended.
    let cancelled = p.recv(None).await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], "s");
    assert_eq!(subscription_id(&cancelled), "s");
    p.peer.expect_silence(Duration::from_millis(50)).await;
    // The user handler stopped itself: no handle_close. The built-in one was closed, but
    // counts nothing.
    assert_eq!(s.closed.load(Ordering::SeqCst), 0);
    assert_eq!(s.bus.subscriber_count(), before);
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_cancel_runs_handle_close_exactly_once_and_drops_the_bus_subscriptions() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    let before = s.bus.subscriber_count();
    p.listen(json!(3), json!({"resourceSubscriptions": [FEED], "toolsListChanged": true}));
    p.recv(None).await;
    assert_eq!(s.bus.subscriber_count(), before + 4, "feed, the feed URI, the tools list and the tenant's lists");
    assert_eq!(s.gauge.alive_tasks(), 1);
    p.cancel(json!(3));
    // Nothing is sent for a cancelled listen, whatever is published afterwards.
    p.peer.expect_silence(Duration::from_millis(50)).await;
    s.publish(json!("late"));
    p.peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(s.closed.load(Ordering::SeqCst), 1);
    assert_eq!(s.bus.subscriber_count(), before);
    assert_eq!(s.gauge.alive_tasks(), 0);
    // A second cancel of the same id finds nothing.
    p.cancel(json!(3));
    p.call(4, "tools/list", json!({"_meta": modern_meta(json!({}))})).await;
    let closed = s.closed.clone();
    s.finish(vec![(connection, p)]).await;
    assert_eq!(closed.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_closed_connection_closes_its_streams_once() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    p.listen(json!(1), json!({"resourceSubscriptions": [FEED]}));
    p.recv(None).await;
    p.listen(json!(2), json!({"resourceSubscriptions": [FEED]}));
    p.recv(None).await;
    assert!(s.bus.subscriber_count() > 0);
    connection.close();
    connection.closed().await;
    assert_eq!(s.closed.load(Ordering::SeqCst), 2);
    assert_eq!(s.bus.subscriber_count(), 0);
    p.peer.expect_end().await;
    let closed = s.closed.clone();
    s.finish(vec![]).await;
    assert_eq!(closed.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn legacy_sessions_subscribe_get_updates_and_unsubscribe() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    p.initialize("2025-06-18").await;
    let before = s.bus.subscriber_count();
    assert_eq!(p.call(2, "resources/subscribe", json!({"uri": FEED})).await["result"], json!({}));
    assert_eq!(p.call(3, "resources/subscribe", json!({"uri": "test://a"})).await["result"], json!({}));
    // The user handler's own topic, and the built-in one of each URI.
    assert_eq!(s.bus.subscriber_count(), before + 3);
    s.publish(json!("hello"));
    let updated = p.recv(None).await;
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"], json!({"uri": FEED}), "legacy notifications carry no subscription id");
    s.server.notify_resource_updated("test://a").unwrap();
    assert_eq!(p.recv(None).await["params"]["uri"], "test://a");
    s.server.notify_resource_updated("test://elsewhere").unwrap();
    p.peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(p.call(4, "resources/unsubscribe", json!({"uri": FEED})).await["result"], json!({}));
    s.publish(json!("after"));
    s.server.notify_resource_updated(FEED).unwrap();
    p.peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(s.bus.subscriber_count(), before + 1);
    assert_eq!(s.closed.load(Ordering::SeqCst), 1, "unsubscribing tears the stream down from outside");
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_list_change_reaches_modern_and_legacy_subscribers_that_asked() {
    let s = Setup::new();
    let (modern, mut m) = s.connect(ConnectOptions::default()).await;
    let (quiet, mut q) = s.connect(ConnectOptions::default()).await;
    let (legacy, mut l) = s.connect(ConnectOptions::default()).await;
    m.listen(json!("tools"), json!({"toolsListChanged": true}));
    m.recv(None).await;
    q.listen(json!("feed"), json!({"resourceSubscriptions": [FEED]}));
    q.recv(None).await;
    l.initialize("2025-11-25").await;
    s.changes.send(ListKind::Tools);
    let note = m.recv(None).await;
    assert_eq!(
        (note["method"].as_str().unwrap(), subscription_id(&note)),
        ("notifications/tools/list_changed", &json!("tools"))
    );
    let note = l.recv(None).await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(note["params"].get("_meta").is_none(), "{note}");
    q.peer.expect_silence(Duration::from_millis(50)).await;
    // The one-liner on the server handle does the same.
    s.server.notify_list_changed(ListKind::Tools).unwrap();
    assert_eq!(m.recv(None).await["method"], "notifications/tools/list_changed");
    assert_eq!(l.recv(None).await["method"], "notifications/tools/list_changed");
    s.finish(vec![(modern, m), (quiet, q), (legacy, l)]).await;
}

#[tokio::test(start_paused = true)]
async fn subscription_capabilities_are_folded_into_what_is_advertised() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    let discover = p.call(1, "server/discover", json!({"_meta": modern_meta(json!({}))})).await;
    let caps = &discover["result"]["capabilities"];
    // The test handler has prompts without listChanged; the feed handler adds it.
    assert_eq!(caps["prompts"]["listChanged"], true, "{caps}");
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    let (legacy, mut l) = s.connect(ConnectOptions::default()).await;
    l.revision = "2025-11-25";
    let init = l
        .call(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["capabilities"]["prompts"]["listChanged"], true);
    s.finish(vec![(connection, p), (legacy, l)]).await;
}

#[tokio::test(start_paused = true)]
async fn changes_a_client_has_not_yet_heard_are_coalesced_by_default() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    p.listen(json!("c"), json!({"toolsListChanged": true}));
    p.recv(None).await;
    // Published faster than the stream runs (nothing yields in between): one fact, told once.
    for _ in 0..10 {
        s.server.notify_list_changed(ListKind::Tools).unwrap();
    }
    assert_eq!(p.recv(None).await["method"], "notifications/tools/list_changed");
    p.peer.expect_silence(Duration::from_millis(50)).await;
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_under_end_stream_completes_the_listen() {
    let options = SubscribeOptions::end_stream().with_capacity(2);
    let s = Setup::with_config(ServerConfig::default().subscription_options(options));
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    let (other, mut q) = s.connect(ConnectOptions::default()).await;
    p.listen(json!("slow"), json!({"resourceSubscriptions": [FEED, "test://a"]}));
    p.recv(None).await;
    q.listen(json!("fine"), json!({"resourceSubscriptions": ["test://b"]}));
    q.recv(None).await;
    for _ in 0..5 {
        s.server.notify_resource_updated("test://a").unwrap();
    }
    s.server.notify_resource_updated("test://b").unwrap();
    // What was queued arrives, then the stream ends gracefully and the handlers are closed.
    let mut updates = 0;
    let end = loop {
        let message = p.recv(Some("subscriptions/listen")).await;
        if message["method"] == "notifications/resources/updated" {
            updates += 1;
            continue;
        }
        break message;
    };
    assert_eq!(updates, 2);
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(p.recv(None).await["method"], "notifications/cancelled");
    assert_eq!(s.closed.load(Ordering::SeqCst), 1, "the feed handler was closed from outside");
    // The other stream is untouched.
    assert_eq!(q.recv(None).await["params"]["uri"], "test://b");
    s.finish(vec![(connection, p), (other, q)]).await;
}

#[tokio::test(start_paused = true)]
async fn progress_logs_and_unrequested_types_never_reach_a_stream() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default()).await;
    p.listen(json!("m"), json!({"resourceSubscriptions": [FEED]}));
    p.recv(None).await;
    s.publish(json!("misbehave"));
    p.peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(s.refused.load(Ordering::SeqCst), 3);
    s.finish(vec![(connection, p)]).await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_subscription_a_handler_refuses_is_an_error_response() {
    let s = Setup::new();
    let (connection, mut p) = s.connect(ConnectOptions::default().auth("banned")).await;
    p.initialize("2025-11-25").await;
    let before = s.bus.subscriber_count();
    let refused = p.call(2, "resources/subscribe", json!({"uri": FEED})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    s.publish(json!("hello"));
    p.peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(s.bus.subscriber_count(), before);
    s.finish(vec![(connection, p)]).await;
}

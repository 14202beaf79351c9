//! A slow SSE reader of 10,000 notifications over a real loopback socket, in both eras:
//! a 2026-07-28 `subscriptions/listen` answered as `text/event-stream`, and a legacy
//! session's `resources/subscribe`, whose notifications ride the session's standalone GET
//! stream. The reader takes the stream's first event, then reads nothing while 10,000
//! notifications of 2 KiB are published (about 20 MiB, more than the socket, the server's
//! unread-output bound and the session's replay buffer hold together), then reads the
//! rest in bursts; meanwhile 1,000 echo requests are sent beside it (POSTs, on the
//! session for the legacy reader), each answered once.
//!
//! The notification ledger proves every event was delivered once and in order (per key
//! under `coalesce`), superseded, lost at a gap the client was told of, or cut by the
//! stream's graceful end; the tree view's bus queue depth never passes the queue's
//! capacity; afterwards the bus subscriptions and the live counts are back to their
//! baseline. Real sockets, so the real clock; every wait is bounded.

use std::sync::Arc;
use std::time::Duration;

use arbor_http::{HttpConfig, HttpServer};
use arbor_otp::Gauge;
use arbor_protocol::meta::Meta;
use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::subscriptions::{ResourceUpdatedNotificationParams, SubscriptionFilter};
use arbor_server::bus::{Bus, BusMessage, LocalBus, SubscribeOptions};
use arbor_server::{
    Channel, Flow, Router, Server, ServerConfig, Subscribe, SubscriptionCapabilities, SubscriptionHandler,
};
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger, Live};
use tests::kit::notifications::{classify, gap_meta, seq_meta, NotificationLedger, Policy, Seen};
use tests::kit::Seed;
use tests::peer::http::EventBuffer;

use crate::support::{EchoArgs, MODERN};

const FEED: &str = "test://numbered";
const TOPIC: &str = "kit/numbered";
const EVENTS: u64 = 10_000;
const PAD: usize = 2048;
const KEYS: u64 = 1_000;
const ECHOES: usize = 1_000;
/// The bound on every wait for the next event.
const SILENCE: Duration = Duration::from_secs(10);

/// Streams [`TOPIC`] as numbered updates of [`FEED`] (the kit's `_meta` keys), and each
/// gap the runtime hands it as the kit's gap marker.
struct Numbered {
    options: SubscribeOptions,
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
    let _ = channel.send(ServerNotification::ResourceUpdated(params));
}

/// A served server with a bus, the numbered handler and an `echo` tool.
struct Scene {
    url: String,
    client: reqwest::Client,
    server: Server,
    bus: Arc<LocalBus>,
    stop: arbor_http::ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Scene {
    async fn start(options: SubscribeOptions) -> Scene {
        let bus = Arc::new(LocalBus::new());
        let router = Router::new("streams", "1.0.0")
            .subscriptions()
            .resource(FEED, "numbered", "Numbered events", "text/plain", || async { "n" })
            .tool("echo", "Says it back", |args: EchoArgs| async move { args.message });
        let config = ServerConfig::default().subscription_options(options).gauge(Gauge::new());
        let server =
            Server::with_config(router, config).with_bus(bus.clone()).subscription_handler(Numbered { options });
        let http = HttpServer::with_config(server.clone(), HttpConfig::default().bind("127.0.0.1:0".parse().unwrap()));
        let bound = http.bind().await.expect("bind");
        let url = format!("http://{}/mcp", bound.local_addr());
        let stop = bound.shutdown_handle();
        let run = tokio::spawn(bound.run());
        // No overall timeout: a stream is read for longer than any one request takes;
        // every read is bounded by `SILENCE` instead.
        let client = reqwest::Client::builder().connect_timeout(SILENCE).build().unwrap();
        Scene { url, client, server, bus, stop, run }
    }

    fn post(&self, body: &Value, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut request = tests::peer::http::post(&self.client, &self.url, body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    }

    /// A 2026-07-28 request of `method` with `params`, every header it needs.
    fn modern(&self, id: &Value, method: &str, mut params: Value) -> reqwest::RequestBuilder {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}});
        let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(name) = name.as_deref() {
            headers.push(("mcp-name", name));
        }
        self.post(&body, &headers)
    }

    async fn live(&self) -> Live {
        let view = serde_json::to_value(self.server.observe().await.expect("a request was served")).unwrap();
        let gauge = self.server.gauge();
        Live::from_view(&view, gauge.alive_actors(), gauge.alive_tasks())
    }

    /// The deepest bus queue of any stream the tree view shows.
    async fn deepest_queue(&self) -> usize {
        fn walk(node: &Value, deepest: &mut usize) {
            if node["kind"] == "stream" {
                *deepest = (*deepest).max(node["queue_depth"].as_u64().unwrap_or(0) as usize);
            }
            for child in node["children"].as_array().into_iter().flatten() {
                walk(child, deepest);
            }
        }
        let view = serde_json::to_value(self.server.observe().await.expect("a request was served")).unwrap();
        let mut deepest = 0;
        walk(&view["root"], &mut deepest);
        deepest
    }

    async fn finish(self) {
        self.stop.shutdown();
        tokio::time::timeout(SILENCE, self.run).await.expect("shut down in time").unwrap().unwrap();
    }
}

/// The JSON-RPC answer in a POST's response: its JSON body, or its SSE body's response.
async fn answer(response: reqwest::Response) -> Value {
    let sse = response.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !sse {
        return response.json().await.expect("a JSON body");
    }
    let mut events = Events::new(response);
    loop {
        let message = events.next().await.expect("a response before the end");
        if message.get("id").is_some() && message.get("method").is_none() {
            return message;
        }
    }
}

/// The data events of an SSE body, each as JSON; `None` at its end.
struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: EventBuffer,
}

impl Events {
    fn new(response: reqwest::Response) -> Events {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Events { body: response.bytes_stream().boxed(), buf: EventBuffer::default() }
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            while let Some(event) = self.buf.next_event() {
                if !event.data.is_empty() {
                    return Some(event.json());
                }
            }
            let chunk = tokio::time::timeout(SILENCE, self.body.next()).await.ok()??;
            self.buf.push(&chunk.ok()?);
        }
    }
}

/// Which era the slow reader speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Modern,
    Legacy,
}

async fn slow_sse_reader(test: &str, era: Era, options: SubscribeOptions, policy: Policy) {
    let seed = Seed::for_test(test);
    let scene = Scene::start(options).await;
    let ledger = Mutex::new(Ledger::new(test));
    // The stream: a listen's own response, or the session's standalone GET.
    let (mut events, session, listen) = match era {
        Era::Modern => {
            let id = json!("listen");
            ledger.lock().sent(0, &id, &[Kind::Result]);
            let response =
                scene.modern(&id, "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": [FEED]}}));
            let mut events = Events::new(response.send().await.unwrap());
            let ack = events.next().await.expect("the acknowledgement");
            assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
            (events, None, Some(id))
        }
        Era::Legacy => {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "slow", "version": "1"}}});
            let response = scene.post(&init, &[]).send().await.unwrap();
            let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
            assert!(response.json::<Value>().await.unwrap().get("result").is_some());
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            assert_eq!(scene.post(&initialized, &[("mcp-session-id", &session)]).send().await.unwrap().status(), 202);
            let get = scene.client.get(&scene.url).header("accept", "text/event-stream");
            let events = Events::new(get.header("mcp-session-id", &session).send().await.unwrap());
            let id = json!("subscribe");
            ledger.lock().sent(0, &id, &[Kind::Result]);
            let subscribe =
                json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": FEED}});
            let subscribed =
                answer(scene.post(&subscribe, &[("mcp-session-id", &session)]).send().await.unwrap()).await;
            ledger.lock().received(0, &subscribed);
            (events, Some(session), None)
        }
    };
    let notes = Mutex::new(NotificationLedger::new(test, policy));
    notes.lock().subscriber("reader");
    let pad = Value::from("x".repeat(PAD));
    let mut deepest = 0;
    // Publishing while the reader reads nothing, and the echo requests beside it.
    let publish = async {
        for seq in 1..=EVENTS {
            let key = format!("k{}", seq % KEYS);
            notes.lock().published(seq, Some(&key));
            let message = BusMessage::new(TOPIC, json!({"seq": seq, "pad": pad})).with_key(key);
            scene.bus.publish(message).unwrap();
            if seq % 100 == 0 {
                deepest = deepest.max(scene.deepest_queue().await);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    };
    let echoes = futures::stream::iter(0..ECHOES)
        .map(|n| {
            let (scene, ledger, session) = (&scene, &ledger, session.as_deref());
            async move {
                let id = json!(format!("echo-{n}"));
                ledger.lock().sent(0, &id, &[Kind::Result]);
                let params = json!({"name": "echo", "arguments": {"message": "still here"}});
                let request = match session {
                    None => scene.modern(&id, "tools/call", params),
                    Some(session) => {
                        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
                        scene.post(&body, &[("mcp-session-id", session)])
                    }
                };
                let answered = answer(request.send().await.expect("an echo was answered")).await;
                ledger.lock().received(0, &answered);
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>();
    tokio::join!(publish, echoes);
    // Now the reader reads, in bursts, until the last event or the stream's end.
    let mut pace = seed.rng(1);
    let mut read = 0usize;
    while !notes.lock().is_done("reader") {
        let Some(message) = events.next().await else { break };
        read += 1;
        if let Some(seen) = classify(&message) {
            notes.lock().seen("reader", seen);
        } else if message.get("id").is_some() && message.get("id") == listen.as_ref() {
            assert_eq!(message["result"]["resultType"], "complete", "{message}");
            notes.lock().seen("reader", Seen::End);
            ledger.lock().received(0, &message);
        } else if message["method"] == "notifications/resources/updated" {
            // The runtime's own "re-read" for a gap on the resource's topic.
            notes.lock().seen("reader", Seen::Gap);
        }
        if read.is_multiple_of(pace.usize(20..=200)) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    println!("[kit] {test}: deepest stream queue {deepest} (capacity {})", options.capacity);
    assert!(deepest <= options.capacity, "a stream queued {deepest}, past its capacity {}", options.capacity);
    // The reader leaves: it closes the listen's response, or unsubscribes and ends the session.
    drop(events);
    if let Some(listen) = &listen {
        if !notes.lock().ended("reader") {
            ledger.lock().cancelled(0, listen, tests::kit::ledger::Cancel::Accepted);
        }
    }
    if let Some(session) = &session {
        let id = json!("leave");
        ledger.lock().sent(0, &id, &[Kind::Result]);
        let leave = json!({"jsonrpc": "2.0", "id": id, "method": "resources/unsubscribe", "params": {"uri": FEED}});
        let left = answer(scene.post(&leave, &[("mcp-session-id", session)]).send().await.unwrap()).await;
        ledger.lock().received(0, &left);
        let delete = scene.client.delete(&scene.url).header("mcp-session-id", session).send().await.unwrap();
        assert!(delete.status().is_success(), "{}", delete.status());
    }
    // The listen, or the session with its streams, is gone, and every bus subscription.
    tests::poll::until("the stream's bus subscriptions are dropped", SILENCE, || scene.bus.subscriber_count() == 0)
        .await;
    let summary = notes.into_inner().finish();
    assert_eq!(summary.published, EVENTS as usize);
    let after = tokio::time::timeout(SILENCE, async {
        loop {
            let live = scene.live().await;
            if live.streams == 0 && live.requests == 0 {
                return live;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the streams and requests ended");
    ledger.into_inner().finish(after, after);
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sse_listen_reader_under_the_default_coalesce_policy() {
    let test = "a_slow_sse_listen_reader_under_the_default_coalesce_policy";
    slow_sse_reader(test, Era::Modern, SubscribeOptions::coalesce(), Policy::Coalesce).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sse_listen_reader_under_end_stream() {
    let test = "a_slow_sse_listen_reader_under_end_stream";
    slow_sse_reader(test, Era::Modern, SubscribeOptions::end_stream(), Policy::EndStream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_legacy_sse_reader_under_the_default_coalesce_policy() {
    let test = "a_slow_legacy_sse_reader_under_the_default_coalesce_policy";
    slow_sse_reader(test, Era::Legacy, SubscribeOptions::coalesce(), Policy::Coalesce).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_legacy_sse_reader_under_drop_oldest() {
    let test = "a_slow_legacy_sse_reader_under_drop_oldest";
    slow_sse_reader(test, Era::Legacy, SubscribeOptions::drop_oldest(), Policy::DropOldest).await;
}

//! The fixture of the cluster fault tests: `demo_server --redis URL --cluster` nodes behind
//! a real round-robin HAProxy (`tests::haproxy`, no stickiness) on one real `redis-server`
//! (`tests::redis`), and a [`Ledger`] that sends 2026-07-28 requests through the balancer
//! and keeps every request sent with the one answer it got.
//!
//! It is not a client library: no retries, no era negotiation; a request is one POST and
//! its outcome is what came back, classified ([`Outcome`]), including "nothing within the
//! client's bound" ([`Outcome::TimedOut`]), which the tests count as a failure. Invariant:
//! every [`Ledger::send`] records exactly one outcome, so `sent == recorded` always, and a
//! missing answer shows up as `TimedOut` rather than as a hung test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::haproxy::{backend_index, Haproxy, BACKEND_HEADER};
use tests::peer::http::EventBuffer;
use tests::redis::RedisServer;

use crate::http::{Client, ServerProcess};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// How long one request may take, answer read whole, before the ledger says it got none.
/// Generous: a balancer retrying a dead backend (about 3 s) or a store bounding a dead
/// Redis (2 × 2 s) both answer well within it; only a real hang reaches it.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// Nodes, their Redis and the balancer in front of them.
pub struct Cluster {
    pub redis: RedisServer,
    /// `None` once killed.
    nodes: Vec<Option<ServerProcess>>,
    proxy: Haproxy,
}

impl Cluster {
    /// `count` nodes on a fresh Redis (`--feed-interval-ms 0` and `extra` besides), behind
    /// a round-robin balancer listing them in order.
    pub async fn start(count: usize, extra: &[&str]) -> Cluster {
        let redis = RedisServer::start();
        let url = redis.url();
        let mut args = vec!["--redis", &url, "--cluster", "--feed-interval-ms", "0"];
        args.extend_from_slice(extra);
        let mut nodes = Vec::new();
        // One at a time: the first writes the keyring, the others adopt it.
        for _ in 0..count {
            nodes.push(Some(ServerProcess::spawn("demo_server", &args).await));
        }
        let addrs: Vec<_> = nodes.iter().flatten().map(ServerProcess::addr).collect();
        let proxy = Haproxy::round_robin(&addrs);
        Cluster { redis, nodes, proxy }
    }

    /// A client of the balancer's MCP endpoint.
    pub fn client(&self) -> Client {
        Client::new(&format!("{}/mcp", self.proxy.base_url()))
    }

    /// A client of the balancer that opens a connection per request. HAProxy answers a
    /// request whose node died before answering with a 502 only when the request was the
    /// first on its client connection; a later one on a kept-alive connection is answered
    /// by closing that connection without a word (so that a browser retries it), which a
    /// client sees as "connection closed before message completed".
    pub fn client_without_keep_alive(&self) -> Client {
        Client::connection_per_request(&format!("{}/mcp", self.proxy.base_url()))
    }

    /// SIGKILLs node `index`: no drain, no lease released, its connections reset.
    pub async fn kill(&mut self, index: usize) {
        self.nodes[index].take().expect("a live node").kill().await;
    }

    /// Stops the balancer, then every node still alive (SIGTERM, bounded).
    pub async fn stop(self) {
        drop(self.proxy);
        for node in self.nodes.into_iter().flatten() {
            node.stop().await;
        }
    }
}

/// What one request got back.
#[derive(Clone, Debug)]
// Some fields are only read through `Debug`, in the tests' failure messages.
#[allow(dead_code)]
pub enum Outcome {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error, with the HTTP status it came with.
    Error { status: u16, code: i64, message: String },
    /// An HTTP answer without a JSON-RPC message (a balancer's 502 or 503).
    Http { status: u16, body: String },
    /// No HTTP answer at all (the connection failed or was cut).
    Transport(String),
    /// Nothing within [`CLIENT_TIMEOUT`].
    TimedOut,
}

impl Outcome {
    /// The result, if the request succeeded.
    pub fn result(&self) -> Option<&Value> {
        match self {
            Outcome::Result(result) => Some(result),
            _ => None,
        }
    }

    /// A task creation's task id.
    pub fn task_id(&self) -> Option<String> {
        let result = self.result()?;
        (result["resultType"] == "task").then(|| result["taskId"].as_str().map(str::to_owned))?
    }

    /// A `tasks/get` answer's status.
    pub fn status(&self) -> Option<&str> {
        self.result()?["status"].as_str()
    }

    /// Whether this is a JSON-RPC error `code` whose message contains `text`.
    pub fn is_error(&self, code: i64, text: &str) -> bool {
        matches!(self, Outcome::Error { code: c, message, .. } if *c == code && message.contains(text))
    }
}

/// Every request sent through [`Ledger::send`] with its outcome, by kind.
#[derive(Default)]
pub struct Ledger {
    next_id: AtomicU64,
    sent: AtomicU64,
    entries: Mutex<Vec<(&'static str, Outcome)>>,
}

/// The ledger's counts.
#[derive(Debug, PartialEq)]
pub struct Summary {
    pub sent: u64,
    /// Requests that got an answer: a result or an error, JSON-RPC or HTTP.
    pub answered: usize,
    pub results: usize,
    pub rpc_errors: usize,
    pub http_errors: usize,
    pub transport_errors: usize,
    pub timed_out: usize,
}

impl Ledger {
    /// POSTs `method` through `client` declaring elicitation and the tasks extension,
    /// bounded by [`CLIENT_TIMEOUT`]; records and returns the outcome under `kind`.
    pub async fn send(&self, client: &Client, kind: &'static str, method: &str, params: Value) -> Outcome {
        self.send_to_some_node(client, kind, method, params).await.0
    }

    /// [`Ledger::send`], and which node answered (its index in start order), as the
    /// balancer names it.
    pub async fn send_to_some_node(
        &self,
        client: &Client,
        kind: &'static str,
        method: &str,
        params: Value,
    ) -> (Outcome, Option<usize>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let capabilities = json!({"elicitation": {}, "extensions": {TASKS: {}}});
        let request = client.modern_request(json!(id), method, params, capabilities);
        self.sent.fetch_add(1, Ordering::Relaxed);
        let (outcome, node) =
            tokio::time::timeout(CLIENT_TIMEOUT, read(request)).await.unwrap_or((Outcome::TimedOut, None));
        self.entries.lock().push((kind, outcome.clone()));
        (outcome, node)
    }

    /// `slow_square` of `n` after `delay_ms`, as a task; the node that created it (and
    /// runs it), as the balancer names it.
    pub async fn create_task_on_some_node(&self, client: &Client, n: i64, delay_ms: u64) -> (Outcome, Option<usize>) {
        let call = json!({"name": "slow_square", "arguments": {"n": n, "delay_ms": delay_ms}});
        self.send_to_some_node(client, "create", "tools/call", call).await
    }

    /// `slow_square` of `n` after `delay_ms`, as a task.
    pub async fn create_task(&self, client: &Client, n: i64, delay_ms: u64) -> Outcome {
        self.create_task_on_some_node(client, n, delay_ms).await.0
    }

    /// `tasks/get` of `task`.
    pub async fn get_task(&self, client: &Client, task: &str) -> Outcome {
        self.send(client, "poll", "tasks/get", json!({"taskId": task})).await
    }

    /// `echo` of `message`; whether it came back unchanged.
    pub async fn echo(&self, client: &Client, message: &str) -> Outcome {
        let call = json!({"name": "echo", "arguments": {"message": message}});
        self.send(client, "echo", "tools/call", call).await
    }

    /// `confirm_delete` of `path`: the first call, answered `input_required` with a
    /// `requestState`; that state, if it was.
    pub async fn ask(&self, client: &Client, path: &str) -> (Outcome, Option<Value>) {
        let call = json!({"name": "confirm_delete", "arguments": {"path": path}});
        let asked = self.send(client, "mrtr ask", "tools/call", call).await;
        let state = asked.result().filter(|r| r["resultType"] == "input_required").map(|r| r["requestState"].clone());
        (asked, state)
    }

    /// The retry of `confirm_delete` of `path` with `state` and an accepting answer.
    pub async fn answer(&self, client: &Client, path: &str, state: &Value) -> Outcome {
        let call = json!({
            "name": "confirm_delete",
            "arguments": {"path": path},
            "requestState": state,
            "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}
        });
        self.send(client, "mrtr answer", "tools/call", call).await
    }

    /// A whole MRTR round trip (ask, then answer with the state, each balanced on its
    /// own); `Ok` when it ended `Deleted <path>`, else the outcome that did not.
    pub async fn round_trip(&self, client: &Client, path: &str) -> Result<(), Outcome> {
        let (asked, state) = self.ask(client, path).await;
        let Some(state) = state else { return Err(asked) };
        let done = self.answer(client, path, &state).await;
        let text = done.result().map(|r| r["content"][0]["text"].clone());
        if text == Some(json!(format!("Deleted {path}"))) {
            Ok(())
        } else {
            Err(done)
        }
    }

    /// Every outcome recorded, with its kind.
    pub fn all(&self) -> Vec<(&'static str, Outcome)> {
        self.entries.lock().clone()
    }

    /// The counts, printed as one line under `name` and returned.
    pub fn summary(&self, name: &str) -> Summary {
        let entries = self.entries.lock();
        let count = |f: fn(&Outcome) -> bool| entries.iter().filter(|(_, o)| f(o)).count();
        let summary = Summary {
            sent: self.sent.load(Ordering::Relaxed),
            answered: count(|o| matches!(o, Outcome::Result(_) | Outcome::Error { .. } | Outcome::Http { .. })),
            results: count(|o| matches!(o, Outcome::Result(_))),
            rpc_errors: count(|o| matches!(o, Outcome::Error { .. })),
            http_errors: count(|o| matches!(o, Outcome::Http { .. })),
            transport_errors: count(|o| matches!(o, Outcome::Transport(_))),
            timed_out: count(|o| matches!(o, Outcome::TimedOut)),
        };
        let mut kinds: Vec<&str> = entries.iter().map(|(k, _)| *k).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let by_kind: Vec<String> =
            kinds.iter().map(|k| format!("{k} {}", entries.iter().filter(|(e, _)| e == k).count())).collect();
        eprintln!(
            "ledger {name}: sent {}, answered {} (results {}, JSON-RPC errors {}, HTTP errors {}), \
             no answer: transport {}, timed out {}; by kind: {}",
            summary.sent,
            summary.answered,
            summary.results,
            summary.rpc_errors,
            summary.http_errors,
            summary.transport_errors,
            summary.timed_out,
            by_kind.join(", ")
        );
        summary
    }
}

/// Sends `request` and reads its answer whole: the JSON body, or the first response on
/// an SSE body (the server ends a 2026-07-28 POST's stream after it); with the index of
/// the node that answered, when the balancer named one.
async fn read(request: reqwest::RequestBuilder) -> (Outcome, Option<usize>) {
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => return (Outcome::Transport(chain(&e)), None),
    };
    let node = response.headers().get(BACKEND_HEADER).and_then(|v| v.to_str().ok()).and_then(backend_index);
    (outcome(response).await, node)
}

/// A response's outcome.
async fn outcome(response: reqwest::Response) -> Outcome {
    let status = response.status().as_u16();
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let bytes = match response.bytes().await {
        Ok(bytes) => bytes,
        Err(e) => return Outcome::Transport(format!("reading the body: {}", chain(&e))),
    };
    let message = if sse {
        let mut events = EventBuffer::default();
        events.push(&bytes);
        std::iter::from_fn(|| events.next_event())
            .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .find(|m| m.get("id").is_some() && m.get("method").is_none())
    } else {
        serde_json::from_slice::<Value>(&bytes).ok()
    };
    match message {
        Some(m) if m.get("result").is_some() => Outcome::Result(m["result"].clone()),
        Some(m) if m.get("error").is_some() => Outcome::Error {
            status,
            code: m["error"]["code"].as_i64().unwrap_or_default(),
            message: m["error"]["message"].as_str().unwrap_or_default().to_owned(),
        },
        _ => Outcome::Http { status, body: String::from_utf8_lossy(&bytes).chars().take(200).collect() },
    }
}

/// An error and its causes, one after the other (reqwest's own text names none).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

//! An example server run as a process serving Streamable HTTP on a port of its own
//! choosing, and a raw HTTP client for it: JSON-RPC bodies and SSE streams read by hand
//! (cut into events by the shared `tests::peer::http`), so the tests see exactly what went
//! over the wire.
//!
//! The server is started with `--port 0` and prints its URL on stderr; [`ServerProcess`]
//! reads that line (bounded), then keeps copying the rest of its stderr to the test's.
//! Every wait is bounded and the process is killed when dropped, so a hung server fails
//! the test instead of hanging it.

use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::peer::http::EventBuffer;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::example;

/// How long any one expected answer or event may take.
const WAIT: Duration = Duration::from_secs(15);

/// An example server process serving HTTP on a free loopback port.
pub struct ServerProcess {
    child: Child,
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The lines the server wrote on stderr but its URL's (also copied to the test's).
    log: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts `example --port 0 ARGS...` and waits for the URL it prints.
    pub async fn spawn(example_name: &str, args: &[&str]) -> ServerProcess {
        ServerProcess::spawn_logging(example_name, args, "warn").await
    }

    /// [`ServerProcess::spawn`] with `RUST_LOG` set to `filter`.
    pub async fn spawn_logging(example_name: &str, args: &[&str], filter: &str) -> ServerProcess {
        let mut child = Command::new(example(example_name))
            .args(["--port", "0"])
            .args(args)
            .env("RUST_LOG", filter)
            .stdin(Stdio::null())
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the example server");
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let marker = format!("{example_name}: listening on ");
        let log = Arc::new(Mutex::new(Vec::new()));
        let url = tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await.expect("reading the server's stderr") {
                if let Some(url) = line.strip_prefix(&marker) {
                    return url.trim().to_owned();
                }
                eprintln!("{line}");
                log.lock().push(line);
            }
            panic!("{example_name} exited without saying where it listens");
        })
        .await
        .expect("the server did not print its URL in time");
        // Keep draining stderr so the server never blocks on a full pipe.
        let kept = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{line}");
                kept.lock().push(line);
            }
        });
        ServerProcess { child, url, log }
    }

    /// How many lines the server has logged so far that contain `text`.
    pub fn logged(&self, text: &str) -> usize {
        self.log.lock().iter().filter(|line| line.contains(text)).count()
    }

    /// The server's process id (for `/proc` readings: fds, RSS, CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    /// The address it listens on, from its URL (a load balancer's backend).
    pub fn addr(&self) -> std::net::SocketAddr {
        let authority = self.url.trim_start_matches("http://").trim_end_matches("/mcp");
        authority.parse().unwrap_or_else(|_| panic!("an address in {}", self.url))
    }

    /// Kills the process with SIGKILL, as a crash would (no drain, nothing said), and
    /// reaps it.
    pub async fn kill(mut self) {
        tokio::time::timeout(WAIT, self.child.kill())
            .await
            .expect("the server did not die of SIGKILL in time")
            .expect("killing the server");
    }

    /// Sends SIGTERM and waits for the process to exit on its own.
    pub async fn stop(mut self) -> ExitStatus {
        self.terminate();
        self.wait().await
    }

    /// Sends SIGTERM, without waiting.
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends the signal `name` (`TERM`, `HUP`), without waiting.
    pub fn signal(&self, name: &str) {
        let pid = self.child.id().expect("the server is running");
        let sent = std::process::Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -{name} {pid}");
    }

    /// Waits (bounded) for the process to exit on its own.
    pub async fn wait(&mut self) -> ExitStatus {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server did not exit after SIGTERM")
            .expect("waiting for the server")
    }
}

/// The 2026-07-28 `_meta` of a request declaring no client capabilities.
pub fn modern_meta() -> Value {
    crate::support::modern_meta(json!({}))
}

/// A plain HTTP client of one endpoint.
pub struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    pub fn new(url: &str) -> Client {
        Client { http: reqwest::Client::new(), url: url.to_owned() }
    }

    /// A client that opens a connection for every request (no keep-alive pool).
    pub fn connection_per_request(url: &str) -> Client {
        let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("a client");
        Client { http, url: url.to_owned() }
    }

    /// A client whose every connection leaves from `from` (a loopback address such as
    /// 127.0.0.2: another requester to the server).
    pub fn from_address(url: &str, from: std::net::IpAddr) -> Client {
        let http = reqwest::Client::builder().local_address(from).build().expect("a client");
        Client { http, url: url.to_owned() }
    }

    /// POSTs a 2026-07-28 request (`_meta` added) with the headers the revision requires:
    /// `MCP-Protocol-Version`, `Mcp-Method` and, where the method has one, `Mcp-Name`.
    pub async fn modern(&self, id: Value, method: &str, params: Value) -> reqwest::Response {
        self.modern_declaring(id, method, params, json!({})).await
    }

    /// [`Client::modern`] declaring `capabilities` in `_meta`; `Mcp-Name` is a `tasks/*`
    /// request's `taskId` too.
    pub async fn modern_declaring(
        &self,
        id: Value,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> reqwest::Response {
        let request = self.modern_request(id, method, params, capabilities);
        tokio::time::timeout(WAIT, request.send()).await.expect("an answer in time").expect("POST to the server")
    }

    /// The POST [`Client::modern_declaring`] sends, unsent: for callers that bound it and
    /// read its failures themselves (the cluster tests' ledger).
    pub fn modern_request(
        &self,
        id: Value,
        method: &str,
        mut params: Value,
        capabilities: Value,
    ) -> reqwest::RequestBuilder {
        params["_meta"] = crate::support::modern_meta(capabilities);
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
            "resources/read" => params["uri"].as_str().map(str::to_owned),
            m if m.starts_with("tasks/") => params["taskId"].as_str().map(str::to_owned),
            _ => None,
        };
        let mut request = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request
    }

    /// POSTs a legacy message, in `session` when given.
    pub async fn legacy(&self, session: Option<&str>, message: Value) -> reqwest::Response {
        let mut request = self.post(message);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
        }
        request.send().await.expect("POST to the server")
    }

    /// `initialize` at 2025-11-25 then `notifications/initialized`: the session's id.
    pub async fn open_session(&self) -> String {
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "arbor-examples-test", "version": "0.0.0"}
        });
        let response =
            self.legacy(None, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})).await;
        assert_eq!(response.status(), 200);
        let session = response.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
        let answer = answer(response).await;
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
        let initialized =
            self.legacy(Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(initialized.status(), 202);
        session
    }

    /// DELETEs the legacy session: the status.
    pub async fn delete_session(&self, session: &str) -> reqwest::StatusCode {
        let request =
            self.http.delete(&self.url).header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
        request.send().await.expect("DELETE to the server").status()
    }

    /// Opens the legacy session's standalone GET stream.
    pub async fn standalone_stream(&self, session: &str) -> Sse {
        self.get(session, None).await
    }

    /// Resumes a stream of the session after the event `last_event_id` (SEP-1699).
    pub async fn resume(&self, session: &str, last_event_id: &str) -> Sse {
        self.get(session, Some(last_event_id)).await
    }

    async fn get(&self, session: &str, last_event_id: Option<&str>) -> Sse {
        let mut request = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("GET to the server");
        assert_eq!(response.status(), 200);
        Sse::new(response)
    }

    fn post(&self, body: Value) -> reqwest::RequestBuilder {
        tests::peer::http::post(&self.http, &self.url, &body)
    }
}

/// The JSON-RPC response a POST was answered with, as JSON or as the first response on an
/// SSE stream (notifications before it are skipped).
pub async fn answer(response: reqwest::Response) -> Value {
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        let bytes = tokio::time::timeout(WAIT, response.bytes()).await.expect("the body in time").expect("a body");
        return serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {bytes:?}"));
    }
    let mut events = Sse::new(response);
    loop {
        let event = events.next().await.expect("a response on the stream");
        if event.get("id").is_some() && event.get("method").is_none() {
            return event;
        }
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// The events of one SSE response body, read as JSON-RPC messages: comments (keep-alives)
/// and events without data (priming) are skipped.
pub struct Sse {
    body: Body,
    buffer: EventBuffer,
    /// The id of the last event read, for `Last-Event-ID`.
    pub last_event_id: Option<String>,
}

impl Sse {
    pub fn new(response: reqwest::Response) -> Sse {
        Sse { body: Box::pin(response.bytes_stream()), buffer: EventBuffer::default(), last_event_id: None }
    }

    /// The next message; fails the test if the stream ends or none comes in time.
    pub async fn next(&mut self) -> Option<Value> {
        Some(self.next_within(WAIT).await.expect("an event on the stream in time"))
    }

    /// The next message, or `None` if none arrives `within`; fails the test if the stream
    /// ends.
    pub async fn next_within(&mut self, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(message) = self.take_event() {
                return Some(message);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(chunk))) => self.buffer.push(&chunk),
                Ok(Some(Err(e))) => panic!("reading the SSE stream: {e}"),
                Ok(None) => panic!("the server ended the SSE stream"),
            }
        }
    }

    /// Every message until the server ends the stream (bounded by the usual wait).
    pub async fn until_end(&mut self) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut messages = Vec::new();
        loop {
            while let Some(message) = self.take_event() {
                messages.push(message);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => panic!("the server did not end the SSE stream in time"),
                Ok(Some(Ok(chunk))) => self.buffer.push(&chunk),
                Ok(Some(Err(e))) => panic!("reading the SSE stream: {e}"),
                Ok(None) => return messages,
            }
        }
    }

    /// The first complete event with data in the buffer, parsed.
    fn take_event(&mut self) -> Option<Value> {
        loop {
            let event = self.buffer.next_event()?;
            if let Some(id) = event.id {
                self.last_event_id = Some(id.trim().to_owned());
            }
            let data = event.data;
            if !data.trim().is_empty() {
                return Some(serde_json::from_str(&data).unwrap_or_else(|e| panic!("SSE data not JSON ({e}): {data}")));
            }
        }
    }
}

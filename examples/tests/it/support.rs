//! A raw JSON-lines peer over real stdio pipes to an example server process.
//!
//! Each example is built with `cargo build` before its first use (see [`example`]). Every
//! wait is bounded, and the child is killed when the peer is dropped, so a hung server
//! fails the test instead of hanging it.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long any one expected message may take.
const WAIT: Duration = Duration::from_secs(15);

/// The path of the example `name`, built for this test run.
///
/// `cargo test` compiles the examples, but in its own flavour under a hashed file name,
/// and leaves `target/<profile>/examples/<name>` as the last `cargo build` left it, which
/// may be stale. So each example is built once per test run with `cargo build` (a no-op
/// when it is up to date); cargo holds no lock on the target directory while tests run.
pub fn example(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock();
    // The test binary is `target/<profile>/deps/it-<hash>`; examples land in
    // `target/<profile>/examples/`.
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>");
    let path = profile_dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| option_env!("CARGO").unwrap_or("cargo").to_owned());
        let mut command = std::process::Command::new(cargo);
        command.current_dir(env!("CARGO_MANIFEST_DIR")).args(["build", "--quiet", "-p", "examples", "--example", name]);
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            command.arg("--release");
        }
        let output = command.output().expect("running cargo build");
        assert!(
            output.status.success(),
            "cargo build --example {name} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        built.push(name.to_owned());
    }
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// Starts `example --stdio ARGS...` with piped stdin and stdout (stderr inherited), killed
/// when dropped: for tests that drive the pipes by hand rather than through a [`Peer`].
pub fn spawn_stdio(example_name: &str, args: &[&str]) -> Child {
    Command::new(example(example_name))
        .arg("--stdio")
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the example server")
}

/// One server process and the client end of its stdio.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Notifications received while waiting for responses, in arrival order.
    pub notifications: Vec<Value>,
}

impl Peer {
    /// Starts `example --stdio`.
    pub fn spawn(example_name: &str) -> Peer {
        Peer::spawn_with(example_name, &[])
    }

    /// Starts `example --stdio` with more arguments.
    pub fn spawn_with(example_name: &str, args: &[&str]) -> Peer {
        let mut child = spawn_stdio(example_name, args);
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Peer { child, stdin, lines, notifications: Vec::new() }
    }

    /// Writes one message as one line.
    pub async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("a JSON value serialises");
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(&line).await.expect("writing to the server");
        stdin.flush().await.expect("flushing to the server");
    }

    /// The next message, or `None` if none arrives within `within`.
    pub async fn recv_within(&mut self, within: Duration) -> Option<Value> {
        match tokio::time::timeout(within, self.lines.next_line()).await {
            Err(_) => None,
            Ok(Ok(Some(line))) => {
                Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
            }
            Ok(Ok(None)) => panic!("the server closed stdout"),
            Ok(Err(e)) => panic!("reading from the server: {e}"),
        }
    }

    /// The next message; fails the test if none arrives in time.
    pub async fn recv(&mut self) -> Value {
        self.recv_within(WAIT).await.expect("the server did not answer in time")
    }

    /// The next message that is not a notification; notifications are kept.
    pub async fn next_non_notification(&mut self) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("id").is_some() {
                return message;
            }
            self.notifications.push(message);
        }
    }

    /// Sends a request and returns its response. A server-to-client request meanwhile
    /// fails the test: use `send` and answer it by hand where one is expected.
    pub async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let response = self.next_non_notification().await;
        assert!(response.get("method").is_none(), "expected the response to {method}, got a request: {response}");
        assert_eq!(response["id"], id, "a response to another request: {response}");
        response
    }

    /// The legacy handshake at `version`, declaring `capabilities`.
    pub async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let params = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name": "arbor-examples-test", "version": "0.0.0"}
        });
        let response = self.call(0, "initialize", params).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        response["result"].clone()
    }

    /// Takes the notifications received so far with `method`.
    pub fn take_notifications(&mut self, method: &str) -> Vec<Value> {
        let (taken, kept) = std::mem::take(&mut self.notifications).into_iter().partition(|n| n["method"] == method);
        self.notifications = kept;
        taken
    }

    /// Closes stdin and waits for the server to exit on its own.
    pub async fn close(mut self) -> ExitStatus {
        drop(self.stdin.take());
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server did not exit after stdin closed")
            .expect("waiting for the server")
    }
}

/// `_meta` of a 2026-07-28 request declaring `capabilities`.
pub fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "arbor-examples-test", "version": "0.0.0"}
    })
}

/// The text of a result's only text block.
pub fn only_text(response: &Value) -> &str {
    let content = response["result"]["content"].as_array().unwrap_or_else(|| panic!("no content: {response}"));
    assert_eq!(content.len(), 1, "{response}");
    content[0]["text"].as_str().unwrap_or_else(|| panic!("not text: {response}"))
}

//! A raw JSON-lines peer over real stdio pipes to an example server process.
//!
//! Each example is built with `cargo build` before its first use (see [`example`]). Every
//! wait is bounded, and the child is killed when the peer is dropped, so a hung server
//! fails the test instead of hanging it.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::peer::stdio::LinePeer;
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

/// One server process and the client end of its stdio: the shared `tests` line peer
/// (`send`, `recv`, `call`, `initialize`, … through `Deref`), plus the process.
pub struct Peer {
    child: Child,
    lines: LinePeer<ChildStdout, ChildStdin>,
}

impl Peer {
    /// Starts `example --stdio`.
    pub fn spawn(example_name: &str) -> Peer {
        Peer::spawn_with(example_name, &[])
    }

    /// Starts `example --stdio` with more arguments.
    pub fn spawn_with(example_name: &str, args: &[&str]) -> Peer {
        let mut child = spawn_stdio(example_name, args);
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = LinePeer::new(stdout, stdin, WAIT).with_client_info(client_info());
        Peer { child, lines }
    }

    /// Closes stdin and waits for the server to exit on its own.
    pub async fn close(mut self) -> ExitStatus {
        self.lines.close_input();
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server did not exit after stdin closed")
            .expect("waiting for the server")
    }
}

impl Deref for Peer {
    type Target = LinePeer<ChildStdout, ChildStdin>;

    fn deref(&self) -> &Self::Target {
        &self.lines
    }
}

impl DerefMut for Peer {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.lines
    }
}

/// The `clientInfo` the tests declare.
fn client_info() -> Value {
    json!({"name": "arbor-examples-test", "version": "0.0.0"})
}

/// `_meta` of a 2026-07-28 request declaring `capabilities`.
pub fn modern_meta(capabilities: Value) -> Value {
    tests::peer::modern_meta(capabilities, Some(client_info()))
}

/// The text of a result's only text block.
pub fn only_text(response: &Value) -> &str {
    let content = response["result"]["content"].as_array().unwrap_or_else(|| panic!("no content: {response}"));
    assert_eq!(content.len(), 1, "{response}");
    content[0]["text"].as_str().unwrap_or_else(|| panic!("not text: {response}"))
}

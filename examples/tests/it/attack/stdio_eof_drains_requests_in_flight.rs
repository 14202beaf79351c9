//! Issue 11, item 5: `printf '<slow call>' | demo_server --stdio` used to exit at once
//! without answering the call. On the end of its input a stdio server now stops reading,
//! lets the requests in flight finish within its drain deadline, answers each exactly once
//! (its result, or past the deadline a -32603 saying why), flushes, and exits 0.
//!
//! Each case writes its whole script to a real pipe, closes it at once (as `printf |` does),
//! then reads stdout to its end; every wait is bounded.

use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{modern_meta, spawn_stdio};

/// The most any one case may take, the drain included.
const BOUND: Duration = Duration::from_secs(20);

/// Runs `demo_server --stdio args`, writes `script` (one message per line), closes stdin,
/// and returns every line written to stdout until it closed, and the exit status.
async fn pipe_through(args: &[&str], script: &[Value]) -> (Vec<Value>, ExitStatus) {
    let mut child = spawn_stdio("demo_server", args);
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut bytes = Vec::new();
    for message in script {
        bytes.extend_from_slice(&serde_json::to_vec(message).expect("JSON"));
        bytes.push(b'\n');
    }
    stdin.write_all(&bytes).await.expect("writing the script");
    drop(stdin);
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let read_all = async {
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().await.expect("reading stdout") {
            out.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")));
        }
        out
    };
    let out = tokio::time::timeout(BOUND, read_all).await.expect("stdout closed within the bound");
    let status = tokio::time::timeout(BOUND, child.wait()).await.expect("the server exited").expect("waiting");
    (out, status)
}

/// The responses (messages with an id and no method) to request `id`.
fn answers_to(out: &[Value], id: u64) -> Vec<&Value> {
    out.iter().filter(|m| m.get("method").is_none() && m["id"] == id).collect()
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn modern_call(id: u64, name: &str, arguments: Value) -> Value {
    let mut message = call(id, name, arguments);
    message["params"]["_meta"] = modern_meta(json!({}));
    message
}

fn legacy_opening() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "attack", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {answer}"))
}

#[tokio::test]
async fn a_legacy_slow_call_piped_in_is_answered_before_the_server_exits() {
    let mut script = legacy_opening();
    script.push(call(1, "slow_count", json!({"to": 3, "interval_ms": 100})));
    script.push(call(2, "echo", json!({"message": "fast"})));
    let (out, status) = pipe_through(&[], &script).await;
    let (slow, fast) = (answers_to(&out, 1), answers_to(&out, 2));
    eprintln!("legacy: slow call answered {} time(s), fast call {} time(s)", slow.len(), fast.len());
    assert_eq!(answers_to(&out, 0).len(), 1, "initialize: {out:?}");
    assert_eq!(slow.len(), 1, "the slow call, exactly once: {out:?}");
    assert_eq!(text_of(slow[0]), "Counted to 3");
    assert_eq!(fast.len(), 1, "the fast call, exactly once: {out:?}");
    assert_eq!(text_of(fast[0]), "fast");
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn a_modern_slow_call_piped_in_is_answered_before_the_server_exits() {
    let script = [
        modern_call(1, "slow_count", json!({"to": 3, "interval_ms": 100})),
        modern_call(2, "echo", json!({"message": "fast"})),
    ];
    let (out, status) = pipe_through(&[], &script).await;
    let (slow, fast) = (answers_to(&out, 1), answers_to(&out, 2));
    eprintln!("2026-07-28: slow call answered {} time(s), fast call {} time(s)", slow.len(), fast.len());
    assert_eq!(slow.len(), 1, "the slow call, exactly once: {out:?}");
    assert_eq!(text_of(slow[0]), "Counted to 3");
    assert_eq!(slow[0]["result"]["resultType"], "complete");
    assert_eq!(fast.len(), 1, "the fast call, exactly once: {out:?}");
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn a_call_that_outlives_the_drain_deadline_gets_one_error_saying_so() {
    for modern in [false, true] {
        let mut script = if modern { Vec::new() } else { legacy_opening() };
        // 100 steps of 2 s: far past a 300 ms drain deadline.
        let slow = json!({"to": 100, "interval_ms": 2000});
        let fast = json!({"message": "fast"});
        if modern {
            script.extend([modern_call(1, "slow_count", slow), modern_call(2, "echo", fast)]);
        } else {
            script.extend([call(1, "slow_count", slow), call(2, "echo", fast)]);
        }
        let (out, status) = pipe_through(&["--drain-timeout-ms", "300"], &script).await;
        let slow = answers_to(&out, 1);
        eprintln!("drain deadline (modern: {modern}): slow call answered {} time(s): {slow:?}", slow.len());
        assert_eq!(slow.len(), 1, "the slow call, exactly once: {out:?}");
        let error = &slow[0]["error"];
        assert_eq!(error["code"], -32603, "{error}");
        assert_eq!(error["data"]["reason"], "drain", "{error}");
        assert_eq!(error["data"]["drainTimeoutMs"], 300, "{error}");
        assert_eq!(answers_to(&out, 2).len(), 1, "the fast call, exactly once: {out:?}");
        assert!(status.success(), "exit status {status}");
    }
}

//! When a byte stream's input ends, the connection stops reading, lets its requests in
//! flight finish within `ServerConfig::drain_timeout`, answers each exactly once (its
//! result, or past the deadline a -32603 with `data.reason: "drain"`), closes its streams,
//! flushes and only then closes. Deadlines on tokio's paused clock.

use std::time::Duration;

use arbor_otp::Gauge;
use arbor_server::{ConnectOptions, Server, ServerConfig, Transport};
use arbor_transport::{FrameReader, FrameWriter};
use serde_json::{json, Value};

use crate::support::TestHandler;

/// A server with a `drain` deadline and a client whose two halves are apart, so it can
/// close its input (end of stream for the server) and go on reading.
async fn start(drain: Duration) -> (Server, arbor_server::Connection, FrameReader, FrameWriter, Gauge) {
    let gauge = Gauge::new();
    let config = ServerConfig::default().gauge(gauge.clone()).drain_timeout(drain);
    let server = Server::with_config(TestHandler::new(), config);
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let (reader, writer) = client_side.into_parts();
    (server, connection, reader, writer, gauge)
}

fn send(writer: &FrameWriter, message: Value) {
    writer.send(message.to_string().as_bytes()).unwrap();
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// Everything the server writes until its output ends (bounded by the test's clock).
async fn read_to_end(reader: &mut FrameReader) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(120), reader.recv()).await.expect("the output ended");
        match next.unwrap() {
            Some(frame) => out.push(serde_json::from_slice(&frame.unwrap()).unwrap()),
            None => return out,
        }
    }
}

fn answers_to(out: &[Value], id: i64) -> Vec<&Value> {
    out.iter().filter(|m| m.get("method").is_none() && m["id"] == id).collect()
}

fn legacy_opening(writer: &FrameWriter) {
    send(
        writer,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
    );
    send(writer, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

#[tokio::test(start_paused = true)]
async fn requests_that_finish_within_the_drain_deadline_are_answered_before_the_output_closes() {
    let (server, connection, mut reader, writer, gauge) = start(Duration::from_secs(5)).await;
    legacy_opening(&writer);
    send(&writer, call(1, "sleep", json!({"ms": 3000})));
    send(&writer, call(2, "sleep", json!({"ms": 10})));
    send(&writer, call(3, "echo", json!({"message": "now"})));
    // End of input: the server's reader sees the end of the stream.
    writer.close().await;
    let out = read_to_end(&mut reader).await;
    for id in [0, 1, 2, 3] {
        assert_eq!(answers_to(&out, id).len(), 1, "request {id}, exactly once: {out:?}");
    }
    assert_eq!(answers_to(&out, 1)[0]["result"]["content"][0]["text"], "slept");
    connection.closed().await;
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_request_still_running_at_the_drain_deadline_is_answered_once_with_the_drain_error() {
    let (server, connection, mut reader, writer, gauge) = start(Duration::from_secs(2)).await;
    legacy_opening(&writer);
    send(&writer, call(1, "hang", json!({})));
    send(&writer, call(2, "sleep", json!({"ms": 1000})));
    // A modern request on the same connection drains alike.
    let mut modern = call(3, "hang", json!({}));
    modern["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}
    });
    send(&writer, modern);
    writer.close().await;
    let started = tokio::time::Instant::now();
    let out = read_to_end(&mut reader).await;
    for id in [1, 3] {
        let answers = answers_to(&out, id);
        assert_eq!(answers.len(), 1, "request {id}, exactly once: {out:?}");
        let error = &answers[0]["error"];
        assert_eq!(error["code"], -32603, "{error}");
        assert_eq!(error["data"], json!({"reason": "drain", "drainTimeoutMs": 2000}), "{error}");
    }
    assert_eq!(answers_to(&out, 2)[0]["result"]["content"][0]["text"], "slept");
    // The paused clock: the connection closed at the deadline, not at a request's own
    // 60 s deadline.
    assert!(started.elapsed() >= Duration::from_secs(2) && started.elapsed() < Duration::from_secs(60));
    connection.closed().await;
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_listen_open_at_the_end_of_input_is_closed_and_does_not_hold_the_connection() {
    let (server, connection, mut reader, writer, gauge) = start(Duration::from_secs(30)).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}
    });
    send(
        &writer,
        json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": true}, "_meta": meta}}),
    );
    // The acknowledgement shows the stream is open before the input ends.
    let ack = tokio::time::timeout(Duration::from_secs(10), reader.recv()).await.unwrap().unwrap().unwrap();
    let ack: Value = serde_json::from_slice(&ack.unwrap()).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    let started = tokio::time::Instant::now();
    writer.close().await;
    let out = read_to_end(&mut reader).await;
    // Nothing is sent for a listen closed from outside, and nothing waited for the deadline.
    assert!(answers_to(&out, 7).is_empty(), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(30), "the listen held the drain: {:?}", started.elapsed());
    connection.closed().await;
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_broken_output_stops_the_connection_without_waiting_for_the_deadline() {
    let (server, connection, reader, writer, gauge) = start(Duration::from_secs(30)).await;
    legacy_opening(&writer);
    send(&writer, call(1, "hang", json!({})));
    let started = tokio::time::Instant::now();
    // The client goes away entirely: nobody could read an answer.
    drop(reader);
    writer.close().await;
    connection.closed().await;
    assert!(started.elapsed() < Duration::from_secs(30), "waited {:?}", started.elapsed());
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn requests_finishing_in_the_very_instant_of_the_deadline_are_still_answered_exactly_once() {
    // On the paused clock, sleeps of exactly the drain deadline end in the same instant as
    // the drain's own timer: each request must get either its result or the drain error.
    let (server, connection, mut reader, writer, gauge) = start(Duration::from_millis(500)).await;
    legacy_opening(&writer);
    let ids = 1..=60;
    for id in ids.clone() {
        let ms = 499 + id % 3;
        send(&writer, call(id, "sleep", json!({"ms": ms})));
    }
    writer.close().await;
    let out = read_to_end(&mut reader).await;
    let (mut results, mut drained) = (0, 0);
    for id in ids {
        let answers = answers_to(&out, id);
        assert_eq!(answers.len(), 1, "request {id}, exactly once: {answers:?}");
        if answers[0]["result"].is_object() {
            results += 1;
        } else {
            assert_eq!(answers[0]["error"]["data"]["reason"], "drain", "{}", answers[0]);
            drained += 1;
        }
    }
    eprintln!("at the deadline instant: {results} answered with their result, {drained} with the drain error");
    connection.closed().await;
    server.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_two_workers_requests_ending_around_the_deadline_are_each_answered_exactly_once() {
    // Real time, two workers: completions and the drain's cancels interleave for real.
    for round in 0..5 {
        let (server, connection, mut reader, writer, gauge) = start(Duration::from_millis(50)).await;
        legacy_opening(&writer);
        let ids = 1..=200;
        for id in ids.clone() {
            send(&writer, call(id, "sleep", json!({"ms": 45 + id % 10})));
        }
        writer.close().await;
        let out = read_to_end(&mut reader).await;
        let mut drained = 0;
        for id in ids {
            let answers = answers_to(&out, id);
            assert_eq!(answers.len(), 1, "round {round}, request {id}, exactly once: {answers:?}");
            drained += usize::from(answers[0]["error"]["data"]["reason"] == "drain");
        }
        eprintln!("round {round}: 200 requests, {drained} drained at the deadline, the rest answered by themselves");
        connection.closed().await;
        server.shutdown().await;
        assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
    }
}

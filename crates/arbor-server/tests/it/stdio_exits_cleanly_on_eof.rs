//! Over real OS pipes: the server's output is a pipe, and closing its input pipe ends
//! the serve call once the requests in flight are drained: a hung one is answered once
//! with the drain error when `drain_timeout` passes, then the output closes.

use crate::support::TestHandler;
use arbor_otp::Gauge;
use arbor_server::{Server, ServerConfig, Transport};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_answers_the_hung_request_at_the_drain_deadline_then_stops_the_server() {
    let (mut to_server, server_in) = pipe::pipe().unwrap();
    let (server_out, from_server) = pipe::pipe().unwrap();
    let gauge = Gauge::new();
    let config = ServerConfig::default().gauge(gauge.clone()).drain_timeout(Duration::from_millis(200));
    let server = Server::with_config(TestHandler::new(), config);
    let serving = tokio::spawn(server.serve_transport(Transport::new(server_in, server_out)));
    let mut lines = BufReader::new(from_server).lines();
    let send = |v: Value| {
        let mut line = v.to_string();
        line.push('\n');
        line
    };
    let init = send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}}}),
    );
    to_server.write_all(init.as_bytes()).await.unwrap();
    let line = lines.next_line().await.unwrap().unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
    let mut burst = String::new();
    burst.push_str(&send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
    burst.push_str(&send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}})));
    for id in 2..50 {
        burst.push_str(&send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": id.to_string()}}})));
    }
    to_server.write_all(burst.as_bytes()).await.unwrap();
    let mut answered = Vec::new();
    while answered.len() < 48 {
        let line = lines.next_line().await.unwrap().unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        answered.push(reply["id"].as_i64().unwrap());
    }
    assert!(!answered.contains(&1));
    drop(to_server);
    // After the drain deadline, the hung request's one answer, then the end of the output.
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["data"], json!({"reason": "drain", "drainTimeoutMs": 200}), "{reply}");
    assert_eq!(lines.next_line().await.unwrap(), None);
    tokio::time::timeout(Duration::from_secs(10), serving).await.expect("serve returned").unwrap().unwrap();
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

//! Over real OS pipes: the server's output is a pipe, and closing its input pipe ends
//! the serve call once the requests in flight are drained: a hung one is answered once
//! with the drain error when `drain_timeout` passes, then the output closes.

use crate::support::TestHandler;
use arbor_otp::Gauge;
use arbor_server::{Server, ServerConfig, Transport};
use serde_json::{json, Value};
use std::time::Duration;
use tests::peer::stdio::LinePeer;
use tokio::net::unix::pipe;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_answers_the_hung_request_at_the_drain_deadline_then_stops_the_server() {
    let (to_server, server_in) = pipe::pipe().unwrap();
    let (server_out, from_server) = pipe::pipe().unwrap();
    let gauge = Gauge::new();
    let config = ServerConfig::default().gauge(gauge.clone()).drain_timeout(Duration::from_millis(200));
    let server = Server::with_config(TestHandler::new(), config);
    let serving = tokio::spawn(server.serve_transport(Transport::new(server_in, server_out)));
    let mut peer = LinePeer::new(from_server, to_server, Duration::from_secs(10));
    let send = |v: Value| {
        let mut line = v.to_string();
        line.push('\n');
        line
    };
    let params =
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}});
    let reply = peer.call(0, "initialize", params).await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
    let mut burst = String::new();
    burst.push_str(&send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
    burst.push_str(&send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}})));
    for id in 2..50 {
        burst.push_str(&send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": id.to_string()}}})));
    }
    peer.send_raw(burst.as_bytes()).await;
    let mut answered = Vec::new();
    while answered.len() < 48 {
        let reply = peer.recv().await;
        answered.push(reply["id"].as_i64().unwrap());
    }
    assert!(!answered.contains(&1));
    peer.close_input();
    // After the drain deadline, the hung request's one answer, then the end of the output.
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["data"], json!({"reason": "drain", "drainTimeoutMs": 200}), "{reply}");
    peer.expect_end().await;
    tokio::time::timeout(Duration::from_secs(10), serving).await.expect("serve returned").unwrap().unwrap();
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

//! Two `demo_server --redis URL --cluster` processes behind a real HAProxy balancing round
//! robin without stickiness (`tests::haproxy`), on one real `redis-server` (issue 18's
//! first parts): consecutive requests land on alternate nodes, yet a 2026-07-28
//! `requestState` sealed by one node opens on the other (the shared keyring), and a task
//! created through one node is polled to its result through both (the Redis task store).
//!
//! `redis-server` and `haproxy` must be installed (`scripts/test` installs both). Every wait
//! is bounded; Redis, the balancer and both servers are killed when the test ends.

use std::time::Duration;

use serde_json::{json, Value};
use tests::haproxy::Haproxy;
use tests::redis::RedisServer;

use crate::http::{answer, Client, ServerProcess};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A 2026-07-28 request through the balancer, declaring elicitation and the tasks
/// extension; its answer.
async fn post(client: &Client, id: u64, method: &str, params: Value) -> Value {
    let capabilities = json!({"elicitation": {}, "extensions": {TASKS: {}}});
    answer(client.modern_declaring(json!(id), method, params, capabilities).await).await
}

#[tokio::test]
async fn two_nodes_behind_a_round_robin_balancer_open_each_others_states_and_serve_each_others_tasks() {
    let redis = RedisServer::start();
    let args = ["--redis", &redis.url(), "--cluster", "--feed-interval-ms", "0"];
    let (one, two) =
        (ServerProcess::spawn("demo_server", &args).await, ServerProcess::spawn("demo_server", &args).await);
    let proxy = Haproxy::round_robin(&[one.addr(), two.addr()]);
    let client = Client::new(&format!("{}/mcp", proxy.base_url()));

    // Each state is sealed by one node and its retry, the next request, lands on the other.
    for round in 0..4u64 {
        let path = format!("/tmp/file-{round}");
        let call = json!({"name": "confirm_delete", "arguments": {"path": path}});
        let asked = post(&client, 10 * round, "tools/call", call.clone()).await;
        assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
        let mut retry = call;
        retry["requestState"] = asked["result"]["requestState"].clone();
        retry["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
        let done = post(&client, 10 * round + 1, "tools/call", retry).await;
        assert_eq!(done["result"]["content"][0]["text"], format!("Deleted {path}"), "round {round}: {done}");
    }

    // A task created through one node, polled through both until it completes.
    let call = json!({"name": "slow_square", "arguments": {"n": 7, "delay_ms": 200}});
    let created = post(&client, 100, "tools/call", call).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().expect("a task id").to_owned();
    let mut polls = Vec::new();
    for n in 0..150u64 {
        let got = post(&client, 200 + n, "tasks/get", json!({"taskId": task})).await;
        let status =
            got["result"]["status"].as_str().unwrap_or_else(|| panic!("a task on every node: {got}")).to_owned();
        polls.push(status.clone());
        if status == "completed" {
            assert_eq!(got["result"]["result"]["content"][0]["text"], "49", "{got}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(polls.last().map(String::as_str), Some("completed"), "{polls:?}");
    assert!(polls.len() >= 2, "polled through both nodes: {polls:?}");
    drop(proxy);
    one.stop().await;
    two.stop().await;
}

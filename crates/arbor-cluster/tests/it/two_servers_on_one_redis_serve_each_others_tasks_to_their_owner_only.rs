//! Two `arbor_server::Server`s, each with its own `RedisTaskStore` on one Redis (two nodes
//! behind a load balancer): a 2025-11-25 task created through the first is seen by
//! `tasks/get`, `tasks/list` and a blocking `tasks/result` through the second, by its
//! owner only; another owner gets the same error as for an unknown id.

use std::sync::Arc;
use std::time::Duration;

use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::TaskConfig;
use arbor_server::{ConnectOptions, Connection, Router, Server, ServerConfig, TaskSupport, Transport};
use serde_json::{json, Value};
use tests::peer::Exchange;
use tests::redis::RedisServer;

use crate::support::{options, store, Peer};

const V: &str = "2025-11-25";

fn router() -> Router {
    let sleepy = ToolRoute::new("sleepy", |_: NoArgs| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        "slept".to_owned()
    });
    Router::new("cluster-test", "1").tool_route(sleepy.description("sleeps").task_support(TaskSupport::Optional))
}

async fn node(url: &str) -> Server {
    let config = ServerConfig::default().tasks(TaskConfig::default());
    Server::with_config(router(), config).with_task_store(Arc::new(store(url, options()).await))
}

async fn session(server: &Server, options: ConnectOptions, connections: &mut Vec<Connection>) -> Peer {
    let (server_side, client_side) = Transport::memory_pair();
    connections.push(server.connect(server_side, options).await.unwrap());
    let mut peer = Peer::new(client_side);
    peer.initialize(V, json!({})).await;
    peer
}

#[tokio::test]
async fn a_task_created_on_one_node_is_read_listed_and_awaited_on_the_other() {
    let redis = RedisServer::start();
    let (one, two) = (node(&redis.url()).await, node(&redis.url()).await);
    let alice = || ConnectOptions::tenant("acme").auth("alice");
    let mut connections = Vec::new();
    let mut on_one = session(&one, alice(), &mut connections).await;
    let mut on_two = session(&two, alice(), &mut connections).await;
    let mut mallory = session(&two, ConnectOptions::tenant("acme").auth("mallory"), &mut connections).await;

    let call = json!({"name": "sleepy", "arguments": {}, "task": {"ttl": 60_000}});
    let created: Value = on_one.call(2, "tools/call", call).await;
    let id = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task in {created}")).to_owned();

    let got = on_two.call(2, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["taskId"], json!(id), "{got}");
    assert_eq!(got["result"]["ttl"], 60_000, "{got}");
    let listed = on_two.call(3, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], json!(id), "{listed}");
    let result = on_two.call(4, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["content"][0]["text"], "slept", "{result}");
    let done = on_two.call(5, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");

    mallory.assert_task_hidden(&id).await;

    for peer in [&on_one, &on_two, &mallory] {
        peer.close().await;
    }
    for connection in &connections {
        connection.closed().await;
    }
    one.shutdown().await;
    two.shutdown().await;
}

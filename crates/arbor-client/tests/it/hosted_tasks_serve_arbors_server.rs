//! Client-hosted 2025-11-25 tasks end to end, Arbor's client against Arbor's server: a
//! server configured with `ServerConfig::client_tasks` asks a client that hosts tasks
//! (`ClientOptions::host_tasks`) to run its elicitation as a task, polls the client's
//! `tasks/get` and fetches `tasks/result`; the tool's handler sees only the answer. Once
//! in a direct call, once inside a task of the server's own (a task asking for input that
//! runs as a task on the client). The frames are read off a relay between the two, so the
//! test fails if either side falls back to a plain request.

use std::sync::Arc;
use std::time::Duration;

use arbor_client::handler::HostedTasks;
use arbor_client::{Client, ClientOptions, EraCache, EraMode, ServerTarget};
use arbor_server::router::ToolRoute;
use arbor_server::{ConnectOptions, Router, Server, ServerConfig, TaskSupport};
use arbor_transport::Transport;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use crate::support::{confirm, AnsweringHandler};

/// Every frame each way, as JSON.
#[derive(Default)]
struct Wire {
    to_client: Mutex<Vec<Value>>,
    to_server: Mutex<Vec<Value>>,
}

/// Copies lines from `from` to `to`, recording each.
fn relay(
    from: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    mut to: impl AsyncWrite + Send + Unpin + 'static,
    wire: Arc<Wire>,
    to_client: bool,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(from).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(frame) = serde_json::from_str::<Value>(&line) {
                let log = if to_client { &wire.to_client } else { &wire.to_server };
                log.lock().push(frame);
            }
            if to.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                break;
            }
        }
    });
}

/// A target connecting a fresh pair to `server` through a recording relay.
fn relayed_target(server: &Server, wire: Arc<Wire>) -> ServerTarget {
    let server = server.clone();
    ServerTarget::transport_factory(None, move || {
        let (server, wire) = (server.clone(), wire.clone());
        async move {
            let (client_io, client_relay) = tokio::io::duplex(1 << 16);
            let (server_io, server_relay) = tokio::io::duplex(1 << 16);
            let (client_relay_read, client_relay_write) = tokio::io::split(client_relay);
            let (server_relay_read, server_relay_write) = tokio::io::split(server_relay);
            relay(client_relay_read, server_relay_write, wire.clone(), false);
            relay(server_relay_read, client_relay_write, wire, true);
            let (read, write) = tokio::io::split(server_io);
            server
                .connect(Transport::new(read, write), ConnectOptions::default())
                .await
                .map_err(std::io::Error::other)?;
            let (read, write) = tokio::io::split(client_io);
            Ok(Transport::new(read, write))
        }
    })
}

#[tokio::test]
async fn the_servers_elicitation_runs_as_a_task_on_the_client_in_a_call_and_inside_a_task() {
    let router = Router::new("hosted-tasks-test", "1")
        .tool_route(ToolRoute::new("confirm", confirm).description("asks").task_support(TaskSupport::Optional));
    let server = Server::with_config(router, ServerConfig::default().client_tasks(Duration::from_secs(60)));
    let wire = Arc::new(Wire::default());
    let hosted = HostedTasks { poll_interval: Duration::from_millis(50), ..HostedTasks::default() };
    let options = ClientOptions::new("hosting-client", "1")
        .era(EraMode::ForceLegacy)
        .handler(AnsweringHandler)
        .era_cache(EraCache::new())
        .host_tasks(hosted);
    let client = Client::connect(relayed_target(&server, wire.clone()), options).await.unwrap();

    // A direct call: the handler's elicitation is a task on the client.
    let plain = client.call_tool("confirm", json!({})).await.unwrap();
    assert_eq!(serde_json::to_value(&plain.content).unwrap()[0]["text"], "confirmed by Ada");
    // Inside a server task: the task's elicitation, tied to it, is a task on the client.
    let handle = client.call_tool_as_task("confirm", json!({}), Some(Duration::from_secs(60))).await.unwrap();
    let server_task = handle.id().expect("a server task").to_owned();
    let result = handle.result().await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "confirmed by Ada");
    client.close().await;

    let to_client = wire.to_client.lock().clone();
    let to_server = wire.to_server.lock().clone();
    let elicitations: Vec<&Value> = to_client.iter().filter(|f| f["method"] == "elicitation/create").collect();
    assert_eq!(elicitations.len(), 2, "{to_client:?}");
    for elicitation in &elicitations {
        assert!(elicitation["params"]["task"].is_object(), "task-augmented: {elicitation}");
    }
    let related = &elicitations[1]["params"]["_meta"]["io.modelcontextprotocol/related-task"];
    assert_eq!(related["taskId"], json!(server_task), "the second is tied to the server's task");
    // The client answered each with a task, which the server followed to its result.
    let created: Vec<String> =
        to_server.iter().filter_map(|f| f["result"]["task"]["taskId"].as_str().map(str::to_owned)).collect();
    assert_eq!(created.len(), 2, "{to_server:?}");
    for id in &created {
        let fetched = to_client.iter().any(|f| f["method"] == "tasks/result" && f["params"]["taskId"] == json!(id));
        assert!(fetched, "the server fetched the result of {id}: {to_client:?}");
    }
}

//! `Client::call_tool_as_task` against Arbor's server in both eras, over the in-memory
//! transport and Streamable HTTP: a task is created, its statuses stream by polling, its
//! result is fetched (2025-11-25 by `tasks/result`, 2026-07-28 by `tasks/get`), it can be
//! cancelled and listed, input a task asks for is answered by the client's handler (with
//! `tasks/update` in 2026-07-28, as the answer to the server's own request tied to the task
//! in 2025-11-25), and a failing task is its error. In 2026-07-28 the statuses also
//! arrive on a `subscriptions/listen` naming the task.

use std::time::Duration;

use arbor_client::{Client, ClientError, ClientOptions, EraCache, EraMode};
use arbor_protocol::model::tasks::TaskStatus;
use arbor_protocol::version::Era;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{Router, Server, ServerConfig, TaskConfig, TaskSupport};
use futures::StreamExt;
use serde_json::json;

use crate::support::{confirm, memory_target, AnsweringHandler};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Work {
    millis: u64,
}

fn server() -> Server {
    Server::new(router())
}

fn router() -> Router {
    Router::new("tasks-client-test", "1")
        .tool_route(
            ToolRoute::new("sleepy", |w: Work| async move {
                tokio::time::sleep(Duration::from_millis(w.millis)).await;
                format!("slept {}ms", w.millis)
            })
            .description("sleeps")
            .task_support(TaskSupport::Optional),
        )
        .tool_route(
            ToolRoute::new("fails", |_: NoArgs| async {
                Err::<String, _>(arbor_protocol::error::McpError::invalid_params("bad input for fails"))
            })
            .description("fails")
            .task_support(TaskSupport::Optional),
        )
        .tool_route(ToolRoute::new("confirm", confirm).description("asks").task_support(TaskSupport::Optional))
}

fn options(era: EraMode) -> ClientOptions {
    ClientOptions::new("tasks-client", "1").era(era).handler(AnsweringHandler).era_cache(EraCache::new())
}

async fn exercise(client: Client, era: Era) {
    assert_eq!(client.era(), Some(era));
    let handle =
        client.call_tool_as_task("sleepy", json!({"millis": 300}), Some(Duration::from_secs(60))).await.unwrap();
    let id = handle.id().expect("a task").to_owned();
    assert_eq!(id.len(), 32);
    assert_eq!(handle.created().unwrap().status, TaskStatus::Working);
    let statuses: Vec<TaskStatus> = handle.statuses().map(|s| s.unwrap()).collect().await;
    assert_eq!(statuses.first(), Some(&TaskStatus::Working), "{era:?}: {statuses:?}");
    assert_eq!(statuses.last(), Some(&TaskStatus::Completed), "{era:?}: {statuses:?}");
    let result = handle.result().await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "slept 300ms", "{era:?}");
    assert_eq!(handle.status().await.unwrap(), TaskStatus::Completed);

    // A failing tool: its task failed, and the result is the error.
    let failing = client.call_tool_as_task("fails", json!({}), None).await.unwrap();
    let err = failing.result().await.unwrap_err();
    assert!(matches!(&err, ClientError::Rpc(e) if e.message().contains("bad input for fails")), "{era:?}: {err}");

    // Cancel: the task ends cancelled, and its result is an error.
    let long = client.call_tool_as_task("sleepy", json!({"millis": 60_000}), None).await.unwrap();
    long.cancel().await.unwrap();
    assert_eq!(long.status().await.unwrap(), TaskStatus::Cancelled, "{era:?}");
    assert!(long.result().await.is_err());

    match era {
        Era::Legacy => {
            // 2025-11-25 lists the caller's tasks; the handler answers the elicitation the
            // server sends tied to the task, which resumes it.
            let listed = client.list_tasks(None).await.unwrap();
            let ids: Vec<&str> = listed.tasks.iter().map(|t| t.task_id.as_str()).collect();
            assert!(ids.contains(&id.as_str()) && ids.len() == 3, "{ids:?}");
            let asks = client.call_tool_as_task("confirm", json!({}), None).await.unwrap();
            let result = asks.result().await.unwrap();
            assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "confirmed by Ada");
        }
        Era::Modern => {
            assert!(matches!(client.list_tasks(None).await, Err(ClientError::Unsupported { .. })));
            // The handler answers the task's input request; tasks/update resumes it.
            let asks = client.call_tool_as_task("confirm", json!({}), None).await.unwrap();
            let result = asks.result().await.unwrap();
            assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "confirmed by Ada");
        }
    }
    // A plain call of the same tool is still inline.
    let plain = client.call_tool("sleepy", json!({"millis": 1})).await.unwrap();
    assert_eq!(serde_json::to_value(&plain.content).unwrap()[0]["text"], "slept 1ms");
    client.close().await;
}

#[tokio::test]
async fn tasks_are_awaited_over_the_memory_transport_in_both_eras() {
    let server = server();
    for (mode, era) in [(EraMode::ForceLegacy, Era::Legacy), (EraMode::ForceModern, Era::Modern)] {
        let client = Client::connect(memory_target(&server), options(mode)).await.unwrap();
        exercise(client, era).await;
    }
}

#[tokio::test]
async fn tasks_are_awaited_over_streamable_http_in_both_eras() {
    let server = server();
    let config = arbor_http::HttpConfig { bind: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let bound = arbor_http::HttpServer::with_config(server, config).bind().await.unwrap();
    let url = format!("http://{}/mcp", bound.local_addr());
    let shutdown = bound.shutdown_handle();
    tokio::spawn(bound.run());
    for (mode, era) in [(EraMode::ForceLegacy, Era::Legacy), (EraMode::ForceModern, Era::Modern)] {
        let client = Client::connect_http(arbor_client::HttpTarget::new(url.clone()), options(mode)).await.unwrap();
        exercise(client, era).await;
    }
    shutdown.shutdown();
}

/// 2026-07-28: `statuses()` hears `notifications/tasks` on a listen naming the task, so a
/// server suggesting one poll a minute is not waited on (paused clock: without the
/// listen, `completed` would come with the poll a minute after `working`).
#[tokio::test(start_paused = true)]
async fn a_modern_task_status_arrives_on_a_listen_before_the_next_poll() {
    let tasks = TaskConfig { poll_interval: Duration::from_secs(60), ..TaskConfig::default() };
    let server = Server::with_config(router(), ServerConfig::default().tasks(tasks));
    let client = Client::connect(memory_target(&server), options(EraMode::ForceModern)).await.unwrap();
    let handle = client.call_tool_as_task("sleepy", json!({"millis": 300}), None).await.unwrap();
    assert_eq!(handle.created().unwrap().poll_interval_ms, Some(60_000));
    let started = tokio::time::Instant::now();
    let statuses: Vec<TaskStatus> = handle.statuses().map(|s| s.unwrap()).collect().await;
    assert_eq!(statuses, [TaskStatus::Working, TaskStatus::Completed]);
    assert!(started.elapsed() < Duration::from_secs(60), "pushed, not polled: {:?}", started.elapsed());
    client.close().await;
}

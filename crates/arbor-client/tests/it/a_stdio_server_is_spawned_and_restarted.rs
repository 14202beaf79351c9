//! Over stdio: the client spawns the server process (our example server, built by
//! `cargo test -p arbor-client`), detects its era, survives its unexpected exit, and
//! restarts it on request or by policy.

use std::path::PathBuf;
use std::time::Duration;

use arbor_client::{Client, ClientError, ClientOptions, EraCache, EraMode, RestartPolicy, StdioCommand};
use arbor_protocol::version::Era;
use serde_json::json;

pub fn server_binary() -> PathBuf {
    // target/debug/deps/it-<hash> → target/debug/examples/stdio_test_server
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join("stdio_test_server");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p arbor-client`, which builds the examples",
        path.display()
    );
    path
}

fn text(r: &arbor_protocol::model::tools::CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

async fn wait_connected(client: &Client) {
    tests::poll::until("the client reconnected", Duration::from_secs(5), || client.is_connected()).await;
}

#[tokio::test]
async fn a_spawned_server_is_detected_called_and_restarted_on_request() {
    let cache = EraCache::new();
    let command = StdioCommand::new(server_binary()).arg("--stdio");
    let options = ClientOptions::default().era_cache(cache.clone());
    let client = Client::connect_stdio(command.clone(), options).await.unwrap();
    assert_eq!(client.era(), Some(Era::Modern), "our server is dual-era: the probe finds it modern");
    assert_eq!(cache.get(&format!("stdio:{} --stdio", command.program.display())), Some(Era::Modern));
    assert_eq!(text(&client.call_tool("echo", json!({"message": "over a pipe"})).await.unwrap()), "over a pipe");
    let first_pid = text(&client.call_tool("whoami", json!({})).await.unwrap());

    // The process exits under a call: the call fails at once, later calls are refused.
    let err = client.call_tool("exit", json!({})).await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_) | ClientError::Disconnected), "{err}");
    for _ in 0..500 {
        if !client.is_connected() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(matches!(client.call_tool("echo", json!({"message": "x"})).await, Err(ClientError::Disconnected)));

    client.restart().await.unwrap();
    let second_pid = text(&client.call_tool("whoami", json!({})).await.unwrap());
    assert_ne!(first_pid, second_pid, "a new process");
    client.close().await;
}

#[tokio::test]
async fn a_restart_policy_brings_a_legacy_server_back_by_itself() {
    let command = StdioCommand::new(server_binary());
    let options = ClientOptions::default()
        .era_cache(EraCache::new())
        .era(EraMode::ForceLegacy)
        .restart_policy(RestartPolicy::OnExit { max_restarts: 3, within: Duration::from_secs(60) });
    let client = Client::connect_stdio(command, options).await.unwrap();
    assert_eq!(client.era(), Some(Era::Legacy));
    let first_pid = text(&client.call_tool("whoami", json!({})).await.unwrap());
    let _ = client.call_tool("exit", json!({})).await;
    // Reconnection happens in the background: calls fail until the new process answers.
    let mut second_pid = None;
    for _ in 0..500 {
        if let Ok(r) = client.call_tool("whoami", json!({})).await {
            if text(&r) != first_pid {
                second_pid = Some(text(&r));
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(second_pid.is_some(), "a new process answered");
    wait_connected(&client).await;
    assert_eq!(client.era(), Some(Era::Legacy));
    client.close().await;
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let err = Client::connect_stdio(StdioCommand::new("/nonexistent/mcp-server"), ClientOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, arbor_client::ConnectError::Spawn(_)), "{err}");
}

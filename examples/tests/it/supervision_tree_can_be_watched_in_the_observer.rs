//! `supervision_tree --observe 0` serves the observer for its own arbor-otp tree on a free
//! loopback port it prints: the JSON snapshot shows that tree, and after the first
//! injected crash the root's restart with its reason.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::example;

#[tokio::test]
async fn supervision_tree_can_be_watched_in_the_observer() {
    let mut child = Command::new(example("supervision_tree"))
        .args(["--observe", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("starting supervision_tree");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let url = tokio::time::timeout(Duration::from_secs(15), async {
        while let Some(line) = lines.next_line().await.expect("reading its stdout") {
            if let Some(url) = line.strip_prefix("observer: ") {
                return url.trim().to_owned();
            }
        }
        panic!("supervision_tree exited without saying where the observer is");
    })
    .await
    .expect("the observer's URL in time");
    // Keep draining stdout so the experiment never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let page = http.get(&url).send().await.expect("GET /observer");
    assert_eq!(page.status(), 200);
    // The clock crashes in the first step (after its pause): the root restarts it.
    let snapshot = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let snapshot: Value = http.get(format!("{url}/snapshot")).send().await.unwrap().json().await.unwrap();
            if snapshot["root"]["restarts"].as_u64().is_some_and(|n| n >= 1) {
                return snapshot;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the clock's restart in time");
    assert_eq!(snapshot["source"], "tree", "{snapshot}");
    assert_eq!(snapshot["root"]["id"], "root", "{snapshot}");
    let ids: Vec<&str> =
        snapshot["root"]["children"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["clock", "pipeline", "sessions", "requests"], "{snapshot}");
    let crash = snapshot["root"]["last_crash"].as_str().unwrap_or_default();
    assert!(crash.starts_with("clock:") && crash.contains("injected crash"), "{snapshot}");
    child.kill().await.expect("stopping supervision_tree");
}

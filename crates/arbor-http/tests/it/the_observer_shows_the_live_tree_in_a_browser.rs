//! The observer page in a real browser: headless Chromium (Debian's `chromium`, driven by
//! playwright-core through `tests/observer/observe.mjs`) loads `/observer` from a server
//! under load (three tenants, legacy sessions, a 2026-07-28 listen, a held call, a task,
//! calls all along) after a crash was injected into one tenant, and the DOM shows the
//! tenants, each one's connection count and the restart with its reason. The screenshot
//! is written to `<target dir>/observer/observer.png`.
//!
//! Needs `chromium` (or `CHROMIUM=<path>`) and `npm ci --prefix tests/observer`;
//! `scripts/test` installs both. Without them the test fails, saying which is missing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use arbor_http::{HttpConfig, Observer};
use serde_json::{json, Value};

use crate::support::{serve_observed, until_async, PATIENCE};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// `<target dir>/observer`: the test binary is `<target dir>/<profile>/deps/it-…`.
fn output_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe.ancestors().nth(3).expect("the target dir").to_path_buf();
    let dir = target.join("observer");
    std::fs::create_dir_all(&dir).expect("the output folder");
    dir
}

/// The browser and the driver's modules, or a failure naming what is missing and how to
/// get it.
fn prerequisites() -> (PathBuf, PathBuf) {
    let chromium = std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        chromium.exists(),
        "the observer's browser test needs Chromium at {}: `apt-get install -y chromium` (scripts/test does it), \
         or set CHROMIUM to a Chromium binary",
        chromium.display()
    );
    let driver = repo_root().join("tests/observer");
    assert!(
        driver.join("node_modules/playwright-core/package.json").exists(),
        "the observer's browser test needs playwright-core: `npm ci --prefix tests/observer` (scripts/test does it)"
    );
    let node = std::process::Command::new("node").arg("--version").output();
    assert!(node.is_ok_and(|o| o.status.success()), "the observer's browser test needs Node.js (`node` on PATH)");
    (chromium, driver)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_shows_the_live_tree_in_a_browser() {
    let (chromium, driver) = prerequisites();
    let observer = Observer::new().interval(Duration::from_millis(250));
    let mut f = serve_observed(HttpConfig::default().observer(observer)).await;

    let acme = [f.session("acme").await, f.session("acme").await, f.session("acme").await];
    let globex = [f.session("globex").await, f.session("globex").await];
    let initech = f.session("initech").await;
    f.hold("acme", &acme[0], 99).await;
    f.listen("acme", 7).await;
    let _ = f.start_task("initech", 8).await;

    // A crash in globex: its connections supervisor is restarted by the tenant's, and
    // its sessions' connections go with the crashed one; a new session comes back.
    until_async("the held call reaches the tree", || async {
        let view = f.snapshot().await;
        view.to_string().contains("\"id 99\"").then_some(())
    })
    .await;
    assert!(f.server.inject_crash("globex", "injected crash (browser test)").await);
    until_async("the restart", || async {
        let view = f.snapshot().await;
        crate::support::node(&view, &["tenant:globex"]).is_some_and(|t| t["restarts"] == 1).then_some(())
    })
    .await;
    let _back = f.session("globex").await;
    drop(globex);

    // Calls keep coming while the browser watches: the chart and requests/s move.
    let load = {
        let (client, url) = (f.client.clone(), f.url.clone());
        let (acme, initech) = (acme[1].clone(), initech.clone());
        tokio::spawn(async move {
            for id in 1000i64.. {
                // acme at twice initech's rate, so their chart lines part.
                for (tenant, session) in [("acme", &acme), ("acme", &acme), ("initech", &initech)] {
                    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"message": "load"}}});
                    let request = tests::peer::http::post(&client, &url, &call)
                        .header("x-tenant", tenant)
                        .header("mcp-session-id", session.as_str());
                    if let Ok(response) = request.send().await {
                        let _ = response.bytes().await;
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };

    let screenshot = output_dir().join("observer.png");
    let _ = std::fs::remove_file(&screenshot);
    // acme: three sessions and the tenant's 2026-07-28 endpoint (the listen's); initech:
    // one session and its endpoint (the task's call).
    let expected = json!({"connections": {"acme": 4, "globex": 1, "initech": 2}, "restarted": ["globex"]});
    let run = tokio::process::Command::new("node")
        .arg(driver.join("observe.mjs"))
        .arg(format!("{}/observer", f.base))
        .arg(&screenshot)
        .arg(expected.to_string())
        .env("CHROMIUM", &chromium)
        .current_dir(&driver)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE * 6, run).await.expect("the browser finished in time").unwrap();
    load.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the browser driver failed:\n{stdout}\n{stderr}");
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the driver's report is JSON ({e}):\n{stdout}\n{stderr}"));

    assert_eq!(seen["errors"], json!([]), "no script error on the page: {seen}");
    assert_eq!(seen["status"], "live", "the page follows the events stream: {seen}");
    for (tenant, connections) in [("acme", 4), ("globex", 1), ("initech", 2)] {
        assert_eq!(seen["tenants"][tenant]["connections"], connections, "{tenant}'s connections: {seen}");
        assert_eq!(seen["tree"][tenant]["connections"], connections, "{tenant}'s connections in the tree: {seen}");
    }
    assert_eq!(seen["tree"]["globex"]["restarts"], 1, "{seen}");
    let crash = seen["tree"]["globex"]["last_crash"].as_str().unwrap_or_default();
    assert!(crash.contains("connections") && crash.contains("injected crash (browser test)"), "{seen}");
    assert_eq!(seen["tree"]["acme"]["restarts"], 0, "{seen}");
    assert!(seen["requests"].as_u64().unwrap() >= 1, "the held call shows: {seen}");
    assert!(seen["streams"].as_u64().unwrap() >= 1, "the listen shows: {seen}");
    assert!(seen["tasks"].as_u64().unwrap() >= 1, "the task shows: {seen}");
    assert!(seen["chart_lines"].as_u64().unwrap() >= 3, "one chart line per tenant: {seen}");
    assert!(seen["tenants"]["acme"]["admitted"].as_u64().unwrap() >= 1, "{seen}");
    let size = std::fs::metadata(&screenshot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "a screenshot at {} ({size} bytes)", screenshot.display());
    println!("observer screenshot: {}", screenshot.display());
    f.finish().await;
}

//! `demo_server --tenants` (a temporary copy of `examples/tenants.toml`): the tenant
//! comes from the `x-arbor-tenant` header; `acme` past its rate is refused 429 with
//! `Retry-After` and the -32000 naming the limit while `globex` goes on; after `[tools]`
//! is rewritten, SIGHUP makes the server read the file again and apply the new sets (one
//! log line per tenant); each tenant lists its own tools, and the new ones after the swap.
//!
//! Every wait is bounded (the server process is killed when dropped); nothing asserts a
//! time.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::http::{answer, modern_meta, ServerProcess};

/// Every wait here is bounded by this.
const WAIT: Duration = Duration::from_secs(15);

/// A copy of `examples/tenants.toml` the test may rewrite, removed when dropped.
struct PolicyCopy(PathBuf);

impl PolicyCopy {
    fn new() -> PolicyCopy {
        let original = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tenants.toml");
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let path = std::env::temp_dir().join(format!("arbor-tenants-{}-{nanos}.toml", std::process::id()));
        std::fs::copy(&original, &path).expect("copying examples/tenants.toml");
        PolicyCopy(path)
    }

    /// Replaces the `[tools]` table (the file's last) with `tools`.
    fn set_tools(&self, tools: &str) {
        let text = std::fs::read_to_string(&self.0).unwrap();
        // The table's header, not a mention of it in a comment.
        let (policy, _) = text.split_once("\n[tools]\n").expect("the file has a [tools] table");
        std::fs::write(&self.0, format!("{policy}\n[tools]\n{tools}\n")).unwrap();
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for PolicyCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A 2026-07-28 `tools/list` as `tenant`.
async fn list(http: &reqwest::Client, server: &ServerProcess, tenant: &str) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    tests::peer::http::post(http, &server.url, &body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .header("x-arbor-tenant", tenant)
        .send()
        .await
        .expect("POST to the server")
}

/// The tool names `tenant` lists, retried while its rate refuses it (bounded).
async fn tools_of(http: &reqwest::Client, server: &ServerProcess, tenant: &str) -> Vec<String> {
    let listed = tokio::time::timeout(WAIT, async {
        loop {
            let response = list(http, server, tenant).await;
            if response.status() == 429 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            assert_eq!(response.status(), 200);
            break answer(response).await;
        }
    })
    .await
    .expect("a tools/list answered in time");
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("no tools: {listed}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// Waits (bounded) until the server has logged `count` lines containing `text`.
async fn logged(server: &ServerProcess, text: &str, count: usize) {
    tokio::time::timeout(WAIT, async {
        while server.logged(text) < count {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{count} log lines with {text:?} in time"));
}

#[tokio::test]
async fn a_tenant_past_its_rate_is_refused_and_sighup_rereads_the_tool_sets() {
    let policy = PolicyCopy::new();
    let server = ServerProcess::spawn_logging(
        "demo_server",
        &["--tenants", policy.arg(), "--feed-interval-ms", "0", "--no-metrics"],
        "info",
    )
    .await;
    let http = reqwest::Client::new();
    logged(&server, "tool set", 2).await;
    assert!(!tools_of(&http, &server, "acme").await.is_empty());
    assert!(!tools_of(&http, &server, "globex").await.is_empty());

    // acme allows 10 at once (6 per client): a few more than that are refused.
    let mut refused = None;
    for _ in 0..30 {
        let response = list(&http, &server, "acme").await;
        if response.status() == 429 {
            refused = Some(response);
            break;
        }
        assert_eq!(response.status(), 200);
    }
    let refused = refused.expect("acme was refused past its rate");
    let retry: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "rate_limited", "{body}");
    let limit = body["error"]["data"]["limit"].as_str().unwrap();
    assert!(["principal_rate", "tenant_rate"].contains(&limit), "{body}");
    assert!(body["error"]["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0), "{body}");
    // globex has buckets of its own.
    assert_eq!(list(&http, &server, "globex").await.status(), 200);

    policy.set_tools("acme = [\"echo\"]\nglobex = [\"echo\", \"add\"]");
    server.signal("HUP");
    logged(&server, "SIGHUP: re-reading the tenant policy", 1).await;
    logged(&server, "tool set", 4).await;
    assert_eq!(server.logged("tools=[\"echo\"]"), 1, "acme's new set");
    assert_eq!(server.logged("tools=[\"echo\", \"add\"]"), 1, "globex's new set");
    // Only [tools] changed: no word of the limits.
    assert_eq!(server.logged("tenant limits changed"), 0);
    // The server serves on after the reload.
    assert!(!tools_of(&http, &server, "globex").await.is_empty());
    let status = server.stop().await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn each_tenant_lists_its_own_tools_and_sighup_swaps_them() {
    let policy = PolicyCopy::new();
    let server =
        ServerProcess::spawn_logging("demo_server", &["--tenants", policy.arg(), "--feed-interval-ms", "0"], "info")
            .await;
    let http = reqwest::Client::new();
    assert_eq!(tools_of(&http, &server, "acme").await, ["echo", "add", "slow_square", "build_report"]);
    assert_eq!(tools_of(&http, &server, "globex").await, ["echo", "slow_count", "publish_feed"]);
    // A tenant not in [tools] sees every tool.
    assert_eq!(tools_of(&http, &server, "initech").await.len(), 8);

    policy.set_tools("acme = [\"echo\"]\nglobex = [\"echo\", \"add\"]");
    server.signal("HUP");
    logged(&server, "tool set applied", 4).await;
    assert_eq!(tools_of(&http, &server, "acme").await, ["echo"]);
    assert_eq!(tools_of(&http, &server, "globex").await, ["echo", "add"]);
    let status = server.stop().await;
    assert!(status.success(), "{status:?}");
}

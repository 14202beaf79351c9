//! Issue 11, item 4: every anonymous requester was one owner for the tasks extension.
//!
//! `conformance_server` serves tasks; without authorization a task's owner was its tenant
//! alone, so 1,000 tasks from one client (the per-owner cap) blocked task creation for
//! every other anonymous client for the TTL (10 minutes), and any other client could
//! `tasks/get` or `tasks/cancel` a task by its id. Now the owner is the tenant and the
//! requester (the principal, else the peer's address): requester A (loopback source
//! 127.0.0.2) creates tasks up to its cap and is refused past it; requester B (127.0.0.3)
//! still creates one, and B's `tasks/get` and `tasks/cancel` of A's task are answered as
//! for an unknown id, while A still sees its task untouched.

use std::net::{IpAddr, Ipv4Addr};

use futures::future::join_all;
use serde_json::{json, Value};

use crate::http::{Client, ServerProcess};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// `TaskConfig::max_tasks_per_owner`'s default.
const TASKS_PER_OWNER: usize = 1000;
const BATCH: usize = 16;
const EXT: &str = "io.modelcontextprotocol/tasks";

/// A 2026-07-28 client declaring the tasks extension, every connection leaving from `from`.
struct Requester {
    client: Client,
}

impl Requester {
    fn new(url: &str, from: IpAddr) -> Requester {
        Requester { client: Client::from_address(url, from) }
    }

    async fn call(&self, id: u64, method: &str, params: Value) -> Value {
        let capabilities = json!({"extensions": {EXT: {}}});
        crate::http::answer(self.client.modern_declaring(json!(id), method, params, capabilities).await).await
    }

    /// A task that finishes at once; its record stays for the TTL.
    async fn create(&self, id: u64) -> Value {
        let params = json!({"name": "slow_compute", "arguments": {"seconds": 0}});
        self.call(id, "tools/call", params).await
    }

    async fn task(&self, id: u64, method: &str, task_id: &str) -> Value {
        self.call(id, method, json!({"taskId": task_id})).await
    }
}

fn task_id(created: &Value) -> Option<&str> {
    (created["result"]["resultType"] == "task").then(|| created["result"]["taskId"].as_str()).flatten()
}

#[tokio::test]
async fn a_requester_at_its_task_cap_blocks_no_one_else_and_its_tasks_are_its_own() {
    let server = ServerProcess::spawn("conformance_server", &[]).await;
    let (a, b) = (Requester::new(&server.url, A), Requester::new(&server.url, B));

    let mut a_tasks = Vec::new();
    let mut next = 0;
    while next < TASKS_PER_OWNER {
        let batch: Vec<_> = (next..(next + BATCH).min(TASKS_PER_OWNER)).map(|n| a.create(n as u64)).collect();
        next += batch.len();
        for created in join_all(batch).await {
            let id = task_id(&created).unwrap_or_else(|| panic!("A's task {} was refused: {created}", a_tasks.len()));
            a_tasks.push(id.to_owned());
        }
    }
    let past_cap = a.create(5_000).await;
    let b_created = b.create(1).await;
    let b_task = task_id(&b_created).map(str::to_owned);
    let b_get = b.task(2, "tasks/get", &a_tasks[0]).await;
    let b_cancel = b.task(3, "tasks/cancel", &a_tasks[1]).await;
    let a_get = a.task(5_001, "tasks/get", &a_tasks[1]).await;
    eprintln!(
        "item 4: A holds {} tasks; A past its cap: {}; B creates: {}; B's tasks/get of A's task: {}; \
         B's tasks/cancel of A's task: {}; A's task afterwards: {}",
        a_tasks.len(),
        past_cap["error"]["data"]["scope"],
        if b_task.is_some() { "yes".to_owned() } else { b_created["error"]["message"].to_string() },
        b_get.get("error").map_or("answered".to_owned(), |e| e["code"].to_string()),
        b_cancel.get("error").map_or("answered".to_owned(), |e| e["code"].to_string()),
        a_get["result"]["status"],
    );

    assert_eq!(past_cap["error"]["code"], -32000, "{past_cap}");
    assert_eq!(past_cap["error"]["data"]["scope"], "owner", "{past_cap}");
    assert!(past_cap["error"]["message"].as_str().is_some_and(|m| m.contains("for this requester")), "{past_cap}");
    let b_task = b_task.unwrap_or_else(|| panic!("B could not create a task while A holds its cap: {b_created}"));
    // Another requester's id is answered exactly as an id that never existed.
    let never = b.task(4, "tasks/get", "0123456789abcdef0123456789abcdef").await;
    for (what, refused) in [("tasks/get", &b_get), ("tasks/cancel", &b_cancel)] {
        assert_eq!(refused["error"]["code"], -32602, "B's {what} of A's task: {refused}");
        assert_eq!(refused["error"]["message"], never["error"]["message"], "B's {what} of A's task: {refused}");
    }
    assert_eq!(a_get["result"]["taskId"], a_tasks[1].as_str(), "{a_get}");
    assert_ne!(a_get["result"]["status"], "cancelled", "B's cancel did not touch A's task: {a_get}");
    // B's own task is B's: A cannot read it either.
    let a_of_b = a.task(5_002, "tasks/get", &b_task).await;
    assert_eq!(a_of_b["error"]["code"], -32602, "{a_of_b}");

    server.stop().await;
}

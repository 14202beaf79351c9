//! DNS rebinding and cross-site requests under load: a seeded mix of POSTs (both eras)
//! and session DELETEs with foreign `Origin` values or `Host` names that are not this
//! loopback server's, among good calls with and without loopback `Host` and `Origin`
//! headers, 1,200 requests in all, each accounted for by the kit's ledger. Every bad one
//! is 403 with a JSON-RPC error and no id (it is refused before its body is read) and
//! changes nothing (a refused DELETE leaves its session open); every good one is served.

use std::sync::Arc;

use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger};
use tests::kit::Seed;

use crate::every_hostile_post_is_answered_with_the_spec_status::{finish_run, post_with, refused, start, SESSIONS};

/// Origins a browser could send from another site, or that are opaque.
const FOREIGN_ORIGINS: [&str; 8] = [
    "https://evil.example",
    "null",
    "http://localhost.evil.example",
    "http://127.0.0.1.nip.io:8080",
    "http://evil.example:80",
    "file://",
    "http://localhost:8080/path",
    "chrome-extension://abcdefghijklmnop",
];

/// `Host` names a rebinding attacker's DNS points at this server.
const FOREIGN_HOSTS: [&str; 5] =
    ["evil.example", "evil.example:80", "localhost.evil.example", "127.0.0.1.nip.io", "attacker.test:3000"];

/// Loopback origins (a local page on any port): allowed.
const LOCAL_ORIGINS: [&str; 4] =
    ["http://localhost:8080", "http://127.0.0.1:5173", "https://localhost", "http://[::1]:3000"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origins_and_rebinding_hosts_get_403_and_good_calls_are_served() {
    let name = "foreign Origin and Host among good calls over HTTP";
    let seed = Seed::for_test(name);
    let (served, sessions, baseline) = start().await;
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let port = served.port;
    let local_hosts = [format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")];
    let mut rng = seed.rng(0);
    let plan: Vec<(usize, u8)> = (0..1200).map(|_| (rng.usize(..=SESSIONS), rng.u8(..4))).collect();
    let (served_ref, sessions_ref, local_hosts) = (&served, &sessions, &local_hosts);
    let posts = plan.into_iter().enumerate().map(|(n, (conn, what))| {
        let (ledger, mut rng) = (ledger.clone(), seed.rng(1 + n as u64));
        async move {
            let id = json!(1000 + n);
            let session = (conn > 0).then(|| sessions_ref[conn - 1].as_str());
            let body = match session {
                None => {
                    let meta = json!({"io.modelcontextprotocol/protocolVersion": crate::support::MODERN,
                                      "io.modelcontextprotocol/clientCapabilities": {}});
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": "fault", "arguments": {"fault": "none"}, "_meta": meta}})
                }
                Some(_) => tests::kit::peer::call(&id, "fault", json!({"fault": "none"})),
            };
            let origin = FOREIGN_ORIGINS[rng.usize(..FOREIGN_ORIGINS.len())];
            let host = FOREIGN_HOSTS[rng.usize(..FOREIGN_HOSTS.len())];
            let local_host = local_hosts[rng.usize(..local_hosts.len())].as_str();
            let local_origin = LOCAL_ORIGINS[rng.usize(..LOCAL_ORIGINS.len())];
            let mut extra: Vec<(&str, &str)> = match what {
                0 => vec![],
                1 => vec![("host", local_host), ("origin", local_origin)],
                2 => vec![("origin", origin)],
                _ => vec![("host", host)],
            };
            if session.is_none() {
                extra.push(("mcp-name", "fault"));
            }
            if what < 2 {
                ledger.lock().sent(conn, &id, &[Kind::Result]);
                let (status, answer) = post_with(served_ref, session, "tools/call", body.to_string(), &extra).await;
                assert_eq!(status, 200, "{extra:?} on conn {conn}: {answer:?}");
                ledger.lock().received(conn, &answer.expect("an answer"));
                return;
            }
            ledger.lock().sent(conn, &Value::Null, &[Kind::Error(-32000)]);
            let what = format!("{extra:?} on conn {conn}");
            match session {
                // A refused DELETE must not end the session (checked at the end).
                Some(session) if rng.u8(..4) == 0 => {
                    let mut delete = served_ref.client.delete(&served_ref.url).header("mcp-session-id", session);
                    for (name, value) in &extra {
                        delete = delete.header(*name, *value);
                    }
                    let response = delete.send().await.expect("the DELETE was answered");
                    let status = response.status().as_u16();
                    let answer = crate::kit::legacy_answer(response).await;
                    refused(&ledger, conn, (status, 403), answer, &what);
                }
                _ => {
                    let (status, answer) = post_with(served_ref, session, "tools/call", body.to_string(), &extra).await;
                    refused(&ledger, conn, (status, 403), answer, &what);
                }
            }
        }
    });
    futures::stream::iter(posts).buffer_unordered(32).collect::<Vec<()>>().await;
    let summary = finish_run(served, sessions, baseline, ledger).await;
    assert!(summary.contains("error -32000") && summary.contains("result"), "{summary}");
}

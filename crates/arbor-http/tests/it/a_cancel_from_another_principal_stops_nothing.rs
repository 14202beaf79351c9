//! Cancels across principals under load, with OAuth on (the static verifier: alice and
//! bob): bob sends `notifications/cancelled` for alice's request ids (in alice's legacy
//! session, in his own, and on the 2026-07-28 path) and `tasks/cancel` for alice's task
//! ids, while alice's requests run. Every alice request ends with its own result (her task
//! is still working after bob's cancel), bob gets the spec's answer each time (404 in a
//! session that is not his, 202 for a notification, -32602 for a task that is not his, of
//! either era),
//! and alice's own cancels still work: her hung request in her session gets no answer,
//! her task ends `cancelled`. Over 1,000 requests, each accounted for by the kit's ledger.

use std::time::Duration;

use arbor_http::auth::{AuthConfig, Principal, StaticVerifier};
use arbor_http::HttpConfig;
use arbor_otp::Gauge;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{Router, Server, ServerConfig, TaskConfig, TaskSupport};
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Cancel, Kind, Ledger};
use tests::kit::peer::cancel;
use tests::kit::plan::Fault;
use tests::kit::Seed;

use crate::kit::{fault_body, legacy_answer};
use crate::support::MODERN;

const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const EXT: &str = "io.modelcontextprotocol/tasks";
/// Ledger connections: alice's stateless requests, alice's session, bob's everything.
const ALICE_MODERN: usize = 0;
const ALICE_SESSION: usize = 1;
const BOB_CONN: usize = 2;

/// The server: the kit's `fault` tool and a task that runs until it is cancelled.
struct Fixture {
    url: String,
    client: reqwest::Client,
    http: arbor_http::HttpServer,
    stop: arbor_http::ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start() -> Fixture {
    let principal = |who: &str| Principal::new("https://as.example", who).with_scopes(["mcp"]);
    let verifier = StaticVerifier::new().token(ALICE, principal("alice")).token(BOB, principal("bob"));
    let auth = AuthConfig::new("https://mcp.example/mcp", "https://as.example", verifier).required_scopes(["mcp"]);
    let router = Router::new("cross-principal", "1").tool("fault", "acts out a fault", crate::kit::act).tool_route(
        ToolRoute::new("forever", |_: NoArgs| async {
            std::future::pending::<()>().await;
            "unreachable"
        })
        .task_support(TaskSupport::Optional),
    );
    let config = ServerConfig::default().gauge(Gauge::new()).tasks(TaskConfig::default());
    // A request's answer turns into a stream at once, so its head says it is running.
    let http = HttpConfig { json_wait: Duration::from_millis(20), ..HttpConfig::default() };
    let http = arbor_http::HttpServer::with_config(Server::with_config(router, config), http.auth(auth));
    let bound = http.clone().bind().await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(crate::support::PATIENCE).build().unwrap();
    Fixture { url, client, http, stop, run }
}

impl Fixture {
    /// A request as `token`: on the 2026-07-28 path (with the tasks extension), or in `session`.
    fn request(&self, token: &str, session: Option<&str>, body: Value) -> reqwest::RequestBuilder {
        let mut body = body;
        let mut request = tests::peer::http::post(&self.client, &self.url, &Value::Null).bearer_auth(token);
        match session {
            Some(session) => {
                request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
            }
            None => {
                let method = body["method"].as_str().unwrap_or_default().to_owned();
                body["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}});
                request = request.header("mcp-protocol-version", MODERN).header("mcp-method", method);
                let name = ["name", "taskId"].iter().find_map(|k| body["params"][*k].as_str().map(str::to_owned));
                if let Some(name) = name {
                    request = request.header("mcp-name", name);
                }
            }
        }
        request.body(body.to_string())
    }

    /// [`Fixture::request`] sent: the status and the JSON-RPC answer (none for a 202).
    async fn send(&self, token: &str, session: Option<&str>, body: Value) -> (u16, Option<Value>) {
        let response = self.request(token, session, body).send().await.expect("answered");
        (response.status().as_u16(), legacy_answer(response).await)
    }

    async fn initialize(&self, token: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
        let request = tests::peer::http::post(&self.client, &self.url, &init).bearer_auth(token);
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.send(token, Some(&session), initialized).await.0, 202);
        session
    }
}

fn rpc(id: &Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One unit of the run: alice's request (or task) and bob's cancel for it, in one of six
/// ways, and alice's own cancel where the unit says so.
async fn unit(f: &Fixture, sessions: &(String, String), ledger: &Mutex<Ledger>, n: usize, way: u8) {
    let (alice_session, bob_session) = (sessions.0.as_str(), sessions.1.as_str());
    let id = json!(1000 + n);
    let bob_id = json!(format!("bob-{n}"));
    match way {
        // In alice's session: bob's cancel there is refused (the session is not his), his
        // cancel in his own session reaches nothing of hers.
        0 | 1 => {
            ledger.lock().sent(ALICE_SESSION, &id, &[Kind::Result]);
            let call = f.request(ALICE, Some(alice_session), fault_body(&id, Fault::Delay { ms: 100 }));
            let head = call.send().await.expect("the call's head");
            if way == 0 {
                ledger.lock().sent(BOB_CONN, &Value::Null, &[Kind::Error(-32001)]);
                let (status, answer) = f.send(BOB, Some(alice_session), cancel(&id)).await;
                assert_eq!(status, 404, "bob in alice's session: {answer:?}");
                ledger.lock().received(BOB_CONN, &answer.expect("a JSON-RPC error"));
            } else {
                assert_eq!(f.send(BOB, Some(bob_session), cancel(&id)).await, (202, None));
            }
            let answer = legacy_answer(head).await.expect("alice's answer");
            ledger.lock().received(ALICE_SESSION, &answer);
        }
        // On the 2026-07-28 path: bob's cancel is accepted (202) and reaches nothing.
        2 => {
            ledger.lock().sent(ALICE_MODERN, &id, &[Kind::Result]);
            let params = json!({"name": "fault", "arguments": Fault::Delay { ms: 100 }.arguments()});
            let head = f.request(ALICE, None, rpc(&id, "tools/call", params)).send().await.expect("the head");
            assert_eq!(f.send(BOB, None, cancel(&id)).await, (202, None));
            let answer = legacy_answer(head).await.expect("alice's answer");
            ledger.lock().received(ALICE_MODERN, &answer);
        }
        // Alice's task (the extension's on the 2026-07-28 path, a 2025-11-25 core task in
        // her session): bob's `tasks/cancel` (in his own session) is -32602, not his, and
        // it is still working; alice's own cancel ends it `cancelled`.
        3 | 5 => {
            let legacy = way == 5;
            let ask = |conn: usize, token: &'static str, id: Value, method: &'static str, params: Value| async move {
                let session = match (legacy, token) {
                    (false, _) => None,
                    (true, ALICE) => Some(alice_session),
                    (true, _) => Some(bob_session),
                };
                ledger.lock().sent(conn, &id, &[]);
                let (_, answer) = f.send(token, session, rpc(&id, method, params)).await;
                let answer = answer.expect("an answer");
                ledger.lock().received(conn, &answer);
                answer
            };
            let alice = if legacy { ALICE_SESSION } else { ALICE_MODERN };
            let call =
                if legacy { json!({"name": "forever", "task": {"ttl": 60_000}}) } else { json!({"name": "forever"}) };
            let created = ask(alice, ALICE, id.clone(), "tools/call", call).await;
            let task = if legacy { &created["result"]["task"]["taskId"] } else { &created["result"]["taskId"] };
            let task = task.as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
            let theirs = ask(BOB_CONN, BOB, bob_id, "tasks/cancel", json!({"taskId": task})).await;
            assert_eq!(theirs["error"]["code"], -32602, "bob cannot cancel alice's task: {theirs}");
            let get = json!({"taskId": task});
            let still = ask(alice, ALICE, json!(format!("get-{n}")), "tasks/get", get.clone()).await;
            assert_eq!(still["result"]["status"], "working", "{still}");
            let own = ask(alice, ALICE, json!(format!("cancel-{n}")), "tasks/cancel", get.clone()).await;
            assert!(own.get("result").is_some(), "alice cancels her own task: {own}");
            let ended = ask(alice, ALICE, json!(format!("end-{n}")), "tasks/get", get).await;
            assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
        }
        // Alice's own cancel in her session, of a call that never ends: accepted, no answer.
        _ => {
            ledger.lock().sent(ALICE_SESSION, &id, &[]);
            let call = f.request(ALICE, Some(alice_session), fault_body(&id, Fault::Hang));
            let head = call.send().await.expect("the call's head");
            ledger.lock().cancelled(ALICE_SESSION, &id, Cancel::Accepted);
            assert_eq!(f.send(ALICE, Some(alice_session), cancel(&id)).await, (202, None));
            if let Some(answer) = legacy_answer(head).await {
                ledger.lock().received(ALICE_SESSION, &answer);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_cancels_stop_nothing_and_ones_own_still_work() {
    let name = "cross-principal cancels over HTTP";
    let seed = Seed::for_test(name);
    let f = start().await;
    let sessions = (f.initialize(ALICE).await, f.initialize(BOB).await);
    // Warm the endpoint pool's shards (opened on first use) before the baseline.
    for n in 0..8 {
        let params = json!({"name": "fault", "arguments": Fault::None.arguments()});
        assert_eq!(f.send(ALICE, None, rpc(&json!(n), "tools/call", params)).await.0, 200);
    }
    let baseline = crate::kit::live_of(&f.http).await;
    let ledger = Mutex::new(Ledger::new(name));
    let mut rng = seed.rng(0);
    let ways: Vec<u8> = (0..600).map(|_| rng.u8(..6)).collect();
    let (f_ref, sessions_ref, ledger_ref) = (&f, &sessions, &ledger);
    let units = ways.into_iter().enumerate().map(|(n, way)| unit(f_ref, sessions_ref, ledger_ref, n, way));
    futures::stream::iter(units).buffer_unordered(16).collect::<Vec<()>>().await;
    let after = crate::kit::settle_of(&f.http, baseline).await;
    let summary = ledger.into_inner().finish(baseline, after);
    // Cancels are notifications (202, no answer), not in the ledger's count of requests.
    assert!(summary.requests >= 1000, "{summary}");
    assert!(summary.cancelled_unanswered > 0 && summary.outcomes.contains_key(&Kind::Error(-32602)), "{summary}");
    f.stop.shutdown();
    let ran = tokio::time::timeout(crate::support::PATIENCE, f.run).await.expect("shut down in time");
    ran.unwrap().unwrap();
}

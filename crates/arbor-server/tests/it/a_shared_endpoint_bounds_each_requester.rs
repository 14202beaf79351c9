//! Endpoints fed in process with `Endpoint::submit_from` (the 2026-07-28 HTTP pool) and
//! `submit` (legacy sessions opened for a peer): each requester gets its share of the
//! tenant's request and listen slots and no more, across every endpoint and session it
//! uses; a refusal names the bound that refused it (requester, endpoint, session); a slot
//! comes back when its request or listen ends; an endpoint with a principal of its own
//! counts everything against that principal; and tasks belong to the requester that
//! created them. Time is tokio's paused clock; bounds are small on purpose.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use arbor_otp::Gauge;
use arbor_server::exchange::{Endpoint, OnClose, Outgoing, Parsed, Route, RouteReceiver};
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::TaskConfig;
use arbor_server::{ConnectOptions, Requester, Router, Server, ServerConfig, TaskSupport};
use serde_json::{json, Value};

use crate::support::modern_meta;

const PER_REQUESTER: usize = 3;
const LISTENS_PER_REQUESTER: usize = 2;
const PER_ENDPOINT: usize = 5;
const TASKS_PER_OWNER: usize = 2;
const EXT: &str = "io.modelcontextprotocol/tasks";

fn peer(last: u8) -> Requester {
    Requester::peer(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
}

fn router() -> Router {
    Router::new("requesters-test", "1")
        .tool("echo", "echoes", |_: NoArgs| async { "echo" })
        .tool("hang", "never answers", |_: NoArgs| async {
            std::future::pending::<()>().await;
            "unreachable"
        })
        .tool_route(
            ToolRoute::new("job", |_: NoArgs| async { "done" })
                .description("a task")
                .task_support(TaskSupport::Optional),
        )
}

struct Setup {
    server: Server,
    gauge: Gauge,
    endpoint: Endpoint,
}

impl Setup {
    async fn new(options: ConnectOptions) -> Setup {
        let gauge = Gauge::new();
        let config = ServerConfig::default()
            .max_in_flight_per_connection(PER_ENDPOINT)
            .max_in_flight_per_requester(PER_REQUESTER)
            .max_subscriptions_per_requester(LISTENS_PER_REQUESTER)
            .tasks(TaskConfig { max_tasks_per_owner: TASKS_PER_OWNER, ..TaskConfig::default() })
            .gauge(gauge.clone());
        let server = Server::with_config(router(), config);
        let endpoint = server.open_endpoint(options, Route::discard()).await.unwrap();
        Setup { server, gauge, endpoint }
    }

    /// Submits a 2026-07-28 request from `from`, scoped to its exchange as over HTTP.
    fn send(&self, from: &Requester, id: u64, method: &str, mut params: Value) -> RouteReceiver {
        params["_meta"] = modern_meta(json!({"extensions": {EXT: {}}}));
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (route, receiver) = Route::channel();
        self.endpoint.submit_from(Parsed::parse(body.to_string().as_bytes()), route, OnClose::Cancel, from.clone());
        receiver
    }

    fn call(&self, from: &Requester, id: u64, tool: &str) -> RouteReceiver {
        self.send(from, id, "tools/call", json!({"name": tool, "arguments": {}}))
    }

    fn listen(&self, from: &Requester, id: u64, task_ids: Option<Vec<&str>>) -> RouteReceiver {
        let filter = match task_ids {
            Some(ids) => json!({"taskIds": ids}),
            None => json!({}),
        };
        self.send(from, id, "subscriptions/listen", json!({"notifications": filter}))
    }

    async fn finish(self) {
        self.endpoint.close();
        self.endpoint.closed().await;
        self.server.shutdown().await;
        assert_eq!(self.gauge.alive_tasks(), 0, "tasks leaked");
        assert_eq!(self.gauge.alive_actors(), 0, "actors leaked");
    }
}

/// The first message on a route, or `None` if there is none once everything is idle (the
/// paused clock moves on only then): the request is in flight.
async fn first(route: &mut RouteReceiver) -> Option<Value> {
    match tokio::time::timeout(Duration::from_secs(1), route.recv()).await {
        Ok(Some(message)) => Some(serde_json::from_slice(message.bytes()).unwrap()),
        Ok(None) => panic!("the route ended without a message"),
        Err(_) => None,
    }
}

/// The response on a route (after any notifications).
async fn answer(route: &mut RouteReceiver) -> Value {
    loop {
        match tokio::time::timeout(Duration::from_secs(30), route.recv()).await.expect("an answer in time") {
            Some(message @ Outgoing::Response(_)) => return serde_json::from_slice(message.bytes()).unwrap(),
            Some(_) => continue,
            None => panic!("the route ended without an answer"),
        }
    }
}

fn assert_refused(answer: &Value, scope: &str, limit: usize, text: &str) {
    let error = &answer["error"];
    assert_eq!(error["code"], -32000, "{answer}");
    assert_eq!(error["data"]["reason"], "overloaded", "{answer}");
    assert_eq!(error["data"]["scope"], scope, "{answer}");
    assert_eq!(error["data"]["limit"], limit, "{answer}");
    assert_eq!(error["data"]["retryAfterMs"], 50, "{answer}");
    assert_eq!(error["message"], format!("Server busy: {limit} {text}; retry later"), "{answer}");
}

#[tokio::test(start_paused = true)]
async fn a_requester_past_its_share_is_refused_while_others_are_served() {
    let s = Setup::new(ConnectOptions::default()).await;
    let (a, b) = (peer(2), peer(3));
    let mut held = Vec::new();
    for n in 0..PER_REQUESTER as u64 {
        let mut route = s.call(&a, n, "hang");
        assert_eq!(first(&mut route).await, None, "A's call {n} is in flight");
        held.push(route);
    }
    let refused = answer(&mut s.call(&a, 10, "echo")).await;
    assert_refused(&refused, "requester", PER_REQUESTER, "requests already in flight for this requester");

    // B is another requester: its calls go through while A holds its share.
    assert_eq!(answer(&mut s.call(&b, 11, "echo")).await["result"]["content"][0]["text"], "echo");
    let mut b_held = s.call(&b, 12, "hang");
    assert_eq!(first(&mut b_held).await, None);

    // A's slot comes back when one of its calls ends (its exchange closed: a cancel).
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut again = s.call(&a, 13, "hang");
    assert_eq!(first(&mut again).await, None, "A has room again");
    held.push(again);

    // The endpoint's own bound is every requester's together, and says so.
    let mut c_held = s.call(&peer(4), 14, "hang");
    assert_eq!(first(&mut c_held).await, None);
    let full = answer(&mut s.call(&peer(5), 15, "echo")).await;
    assert_refused(&full, "endpoint", PER_ENDPOINT, "requests already in flight for this endpoint");
    drop((held, b_held, c_held));
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_requester_past_its_listens_is_refused_while_others_listen() {
    let s = Setup::new(ConnectOptions::default()).await;
    let (a, b) = (peer(2), peer(3));
    let mut held = Vec::new();
    for n in 0..LISTENS_PER_REQUESTER as u64 {
        let mut route = s.listen(&a, n, None);
        let ack = first(&mut route).await.expect("an acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        held.push(route);
    }
    let refused = answer(&mut s.listen(&a, 10, None)).await;
    assert_refused(&refused, "requester", LISTENS_PER_REQUESTER, "listens already open for this requester");

    let mut b_listen = s.listen(&b, 11, None);
    assert_eq!(
        first(&mut b_listen).await.expect("B's acknowledgement")["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        answer(&mut s.call(&a, 12, "echo")).await["result"]["content"][0]["text"],
        "echo",
        "listens take no request slots"
    );

    // A closed listen gives its place back.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut again = s.listen(&a, 13, None);
    assert_eq!(first(&mut again).await.expect("A listens again")["method"], "notifications/subscriptions/acknowledged");
    drop((held, again, b_listen));
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_with_its_own_principal_counts_everything_against_that_principal() {
    let s = Setup::new(ConnectOptions::default().auth("alice")).await;
    // Whatever addresses alice's requests come from, they are alice's: her share is
    // reached from any mix of them, and her tasks are hers from any of them.
    let mut held = Vec::new();
    for n in 0..PER_REQUESTER as u64 {
        let mut route = s.call(&peer(2 + n as u8 % 2), n, "hang");
        assert_eq!(first(&mut route).await, None, "call {n} is in flight");
        held.push(route);
    }
    let full = answer(&mut s.call(&peer(4), 10, "echo")).await;
    assert_refused(&full, "requester", PER_REQUESTER, "requests already in flight for this requester");
    drop(held);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let created = answer(&mut s.call(&peer(2), 11, "job")).await;
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    let got = answer(&mut s.send(&peer(3), 12, "tasks/get", json!({"taskId": id}))).await;
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_session_names_itself_when_full() {
    let s = Setup::new(ConnectOptions::default()).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let submit = |body: Value| {
        let (route, receiver) = Route::channel();
        s.endpoint.submit(Parsed::parse(body.to_string().as_bytes()), route, OnClose::Continue);
        receiver
    };
    assert!(answer(&mut submit(init)).await["result"]["protocolVersion"].is_string());
    let call =
        |id: u64, tool: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool}});
    // A session is one client: no per-requester share, its own bound only.
    let mut held = Vec::new();
    for n in 1..=PER_ENDPOINT as u64 {
        let mut route = submit(call(n, "hang"));
        assert_eq!(first(&mut route).await, None, "call {n} is in flight");
        held.push(route);
    }
    let full = answer(&mut submit(call(99, "echo"))).await;
    assert_refused(&full, "session", PER_ENDPOINT, "requests already in flight for this session");
    drop(held);
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn tasks_count_against_and_belong_to_their_requester() {
    let s = Setup::new(ConnectOptions::default()).await;
    let (a, b) = (peer(2), peer(3));
    let mut a_tasks = Vec::new();
    for n in 0..TASKS_PER_OWNER as u64 {
        let created = answer(&mut s.call(&a, n, "job")).await;
        a_tasks.push(created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned());
    }
    let refused = answer(&mut s.call(&a, 10, "job")).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(refused["error"]["data"]["scope"], "owner", "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], TASKS_PER_OWNER, "{refused}");
    assert!(refused["error"]["data"]["retryAfterMs"].is_u64(), "{refused}");
    assert_eq!(
        refused["error"]["message"],
        format!("Server busy: {TASKS_PER_OWNER} tasks already held for this requester; retry later")
    );

    // B is not A: it still creates a task, and A's ids are unknown to it.
    let b_created = answer(&mut s.call(&b, 11, "job")).await;
    assert_eq!(b_created["result"]["resultType"], "task", "{b_created}");
    let unknown = answer(&mut s.send(&b, 12, "tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"}))).await;
    for (n, method) in [(13, "tasks/get"), (14, "tasks/cancel"), (15, "tasks/update")] {
        let params = json!({"taskId": a_tasks[0], "inputResponses": {}});
        let refused = answer(&mut s.send(&b, n, method, params)).await;
        assert_eq!(refused["error"], unknown["error"], "B's {method} of A's task is as for an unknown id");
    }
    let mut b_listen = s.listen(&b, 16, Some(vec![&a_tasks[0]]));
    let ack = first(&mut b_listen).await.expect("an acknowledgement");
    assert!(ack["params"]["notifications"].get("taskIds").is_none(), "A's task is left out of B's listen: {ack}");

    // A still sees its task, untouched by B's cancel.
    let got = answer(&mut s.send(&a, 17, "tasks/get", json!({"taskId": a_tasks[0]}))).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    drop(b_listen);
    s.finish().await;
}

#[tokio::test(start_paused = true)]
async fn one_peers_sessions_and_posts_share_one_share_of_the_tenant() {
    // The legacy attack: one client opens many sessions (each its own connection, with its
    // own bound) and fills them all. Its requests count against one share of the tenant,
    // with its 2026-07-28 POSTs, so another client is still served.
    let s = Setup::new(ConnectOptions::default()).await;
    let at = |last: u8, port: u16| std::net::SocketAddr::from((Ipv4Addr::new(127, 0, 0, last), port));
    let mut sessions = Vec::new();
    for port in [4000, 4001] {
        let session = s.server.open_endpoint(ConnectOptions::default().peer(at(2, port)), Route::discard()).await;
        sessions.push(session.expect("a session endpoint"));
    }
    let b_session = s.server.open_endpoint(ConnectOptions::default().peer(at(3, 4000)), Route::discard()).await;
    let b_session = b_session.expect("B's session endpoint");
    let submit = |endpoint: &Endpoint, body: Value| {
        let (route, receiver) = Route::channel();
        endpoint.submit(Parsed::parse(body.to_string().as_bytes()), route, OnClose::Continue);
        receiver
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for session in sessions.iter().chain([&b_session]) {
        assert!(answer(&mut submit(session, init.clone())).await["result"]["protocolVersion"].is_string());
    }
    let call =
        |id: u64, tool: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool}});
    // A's share, spread over its two sessions (each far below its own bound of 5).
    let mut held = Vec::new();
    for n in 0..PER_REQUESTER as u64 {
        let mut route = submit(&sessions[n as usize % 2], call(n + 1, "hang"));
        assert_eq!(first(&mut route).await, None, "A's call {n} is in flight");
        held.push(route);
    }
    for session in &sessions {
        let refused = answer(&mut submit(session, call(90, "echo"))).await;
        assert_refused(&refused, "requester", PER_REQUESTER, "requests already in flight for this requester");
    }
    // The same client over 2026-07-28 is the same requester, whatever its port.
    let refused = answer(&mut s.call(&Requester::new(None, Some(at(2, 5000))), 91, "echo")).await;
    assert_refused(&refused, "requester", PER_REQUESTER, "requests already in flight for this requester");
    // B, in its session and over 2026-07-28, is served.
    let b_answer = answer(&mut submit(&b_session, call(92, "echo"))).await;
    assert_eq!(b_answer["result"]["content"][0]["text"], "echo", "{b_answer}");
    assert_eq!(answer(&mut s.call(&peer(3), 93, "echo")).await["result"]["content"][0]["text"], "echo");
    // A slot A's session gives back is A's again, in either session. A legacy request
    // ends by the client's cancel (a dropped route is not one): A's third call, id 3, is
    // in its first session.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}});
    drop(submit(&sessions[0], cancel));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut again = submit(&sessions[0], call(94, "hang"));
    assert_eq!(first(&mut again).await, None, "A has room again");
    drop((held, again));
    for session in sessions.into_iter().chain([b_session]) {
        session.close();
        session.closed().await;
    }
    s.finish().await;
}

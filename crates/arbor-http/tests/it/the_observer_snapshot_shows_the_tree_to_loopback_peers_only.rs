//! The observer without a browser: its JSON snapshot lists tenants, connections, their
//! in-flight requests and subscription streams, the tasks, each tenant's load and a
//! restart after an injected crash; its events stream pushes the same JSON; it is off by
//! default, refuses peers that are not on loopback, and sits behind the authenticator.

use std::net::SocketAddr;

use arbor_http::auth::{AuthConfig, Principal, StaticVerifier};
use arbor_http::{HttpConfig, HttpServer, Observer};
use arbor_server::{Router, Server};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use serde_json::Value;
use tower::ServiceExt;

use crate::support::{load, node, serve_observed, until_async, SseReader, PATIENCE};

fn children<'a>(node: &'a Value, kind: &str) -> Vec<&'a Value> {
    node["children"].as_array().map(|c| c.iter().filter(|n| n["kind"] == kind).collect()).unwrap_or_default()
}

#[tokio::test]
async fn the_snapshot_lists_connections_requests_streams_tasks_and_a_restart() {
    let mut f = serve_observed(HttpConfig::default().observer(Observer::new())).await;
    let before = f.snapshot().await;
    assert_eq!(before["root"]["state"], "not_started", "{before}");

    let acme = [f.session("acme").await, f.session("acme").await];
    let globex = f.session("globex").await;
    for (i, session) in acme.iter().enumerate() {
        f.echo("acme", session, 10 + i as i64).await;
    }
    f.echo("globex", &globex, 20).await;
    f.hold("acme", &acme[0], 99).await;
    f.listen("acme", 7).await;
    let task = f.start_task("globex", 8).await;
    assert_eq!(task["result"]["resultType"], "task", "{task}");

    // The held call and the listen are seen once their requests reached the tree.
    let view = until_async("the held call and the listen show", || async {
        let view = f.snapshot().await;
        let connections = node(&view, &["tenant:acme", "connections"]).cloned().unwrap_or_default();
        let requests: usize = children(&connections, "connection").iter().map(|c| children(c, "request").len()).sum();
        let streams: usize = children(&connections, "connection").iter().map(|c| children(c, "stream").len()).sum();
        (requests >= 1 && streams >= 1).then_some(view)
    })
    .await;
    let connections = node(&view, &["tenant:acme", "connections"]).unwrap();
    // Two legacy sessions and the tenant's 2026-07-28 endpoint.
    assert_eq!(children(connections, "connection").len(), 3, "{connections}");
    let held = children(connections, "connection")
        .into_iter()
        .flat_map(|c| children(c, "request"))
        .find(|r| r["id"] == "tools/call")
        .expect("the held call");
    assert_eq!(held["detail"], "id 99", "{held}");
    assert!(held["age_ms"].is_u64(), "{held}");
    let listen = children(connections, "connection")
        .into_iter()
        .flat_map(|c| children(c, "stream"))
        .find(|s| s["id"] == "listen")
        .expect("the listen");
    assert_eq!(listen["state"], "open", "{listen}");
    assert_eq!(listen["queue_depth"], 0, "{listen}");
    let tasks = node(&view, &["tasks"]).unwrap();
    let task_node = &children(tasks, "task")[0];
    assert_eq!(task_node["state"], "working", "{tasks}");
    assert_eq!(task_node["detail"], "tenant globex", "{tasks}");
    // Only a prefix of the task id: the full id lets its owner poll it.
    let task_id = task["result"]["taskId"].as_str().unwrap();
    assert_eq!(task_node["id"], format!("task {}", &task_id[..8]), "{tasks}");
    assert!(!view.to_string().contains(task_id), "{view}");

    let acme_load = load(&view, "acme").unwrap();
    assert_eq!(acme_load["connections"], 3, "{acme_load}");
    assert!(acme_load["admitted"].as_u64().unwrap() >= 3, "{acme_load}");
    assert!(acme_load["in_flight"].as_u64().unwrap() >= 1, "{acme_load}");
    assert_eq!(load(&view, "globex").unwrap()["connections"], 2);

    // A crash of globex's connections supervisor: the tenant restarts it.
    assert!(f.server.inject_crash("globex", "injected crash (test)").await);
    let view = until_async("the restart shows", || async {
        let view = f.snapshot().await;
        let restarted = node(&view, &["tenant:globex"]).is_some_and(|t| t["restarts"] == 1);
        restarted.then_some(view)
    })
    .await;
    let tenant = node(&view, &["tenant:globex"]).unwrap();
    let crash = tenant["last_crash"].as_str().unwrap();
    assert!(crash.starts_with("connections:") && crash.contains("injected crash (test)"), "{tenant}");
    // Its connections went with it; a new session lands in the restarted supervisor.
    let _again = f.session("globex").await;
    let view = f.snapshot().await;
    assert_eq!(children(node(&view, &["tenant:globex", "connections"]).unwrap(), "connection").len(), 1);
    assert_eq!(load(&view, "globex").unwrap()["connections"], 1);
    assert_eq!(node(&view, &["tenant:acme"]).unwrap()["restarts"], 0);

    // The events stream pushes the same JSON.
    let response = f.client.get(format!("{}/observer/events", f.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = SseReader::new(response);
    let pushed: Value = events.next_data().await.json();
    assert!(node(&pushed, &["tenant:acme", "connections"]).is_some(), "{pushed}");
    assert!(pushed["history"].is_array(), "{pushed}");
    let page = f.client.get(format!("{}/observer", f.base)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Arbor observer"));
    drop(events);
    f.finish().await;
}

fn get(path: &str, peer: Option<&str>, token: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path).header("host", "localhost").body(Body::empty()).unwrap();
    if let Some(peer) = peer {
        request.extensions_mut().insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
    }
    if let Some(token) = token {
        request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    request
}

async fn status(router: &axum::Router, request: Request<Body>) -> u16 {
    let answer = tokio::time::timeout(PATIENCE, router.clone().oneshot(request)).await.expect("answered");
    answer.unwrap().status().as_u16()
}

#[tokio::test]
async fn the_observer_is_off_by_default_loopback_only_and_behind_the_authenticator() {
    let server = || Server::new(Router::new("quiet", "1.0.0"));
    let off = HttpServer::with_config(server(), HttpConfig::default()).router();
    assert_eq!(status(&off, get("/observer", Some("127.0.0.1:4000"), None)).await, 404);

    let on = HttpServer::with_config(server(), HttpConfig::default().observer(Observer::new())).router();
    for path in ["/observer", "/observer/snapshot", "/observer/events"] {
        assert_eq!(status(&on, get(path, Some("192.0.2.7:4000"), None)).await, 403, "{path} from afar");
        // A peer nobody told the router about is not taken for a local one.
        assert_eq!(status(&on, get(path, None, None)).await, 403, "{path} from nowhere");
    }
    assert_eq!(status(&on, get("/observer/snapshot", Some("127.0.0.1:4000"), None)).await, 200);
    assert_eq!(status(&on, get("/observer/snapshot", Some("[::1]:4000"), None)).await, 200);
    let mut rebinding = get("/observer/snapshot", Some("127.0.0.1:4000"), None);
    rebinding.headers_mut().insert("host", "evil.example".parse().unwrap());
    assert_eq!(status(&on, rebinding).await, 403, "a foreign Host is refused first");

    let remote = Observer::new().allow_remote();
    let remote = HttpServer::with_config(server(), HttpConfig::default().observer(remote)).router();
    assert_eq!(status(&remote, get("/observer/snapshot", Some("192.0.2.7:4000"), None)).await, 200);

    let verifier = StaticVerifier::new().token("operator-token", Principal::new("https://as.example", "operator"));
    let auth = AuthConfig::new("http://localhost/mcp", "https://as.example", verifier);
    let guarded =
        HttpServer::with_config(server(), HttpConfig::default().auth(auth).observer(Observer::new())).router();
    for path in ["/observer", "/observer/snapshot", "/observer/events"] {
        assert_eq!(status(&guarded, get(path, Some("127.0.0.1:4000"), None)).await, 401, "{path} without a token");
        let wrong = get(path, Some("127.0.0.1:4000"), Some("guessed"));
        assert_eq!(status(&guarded, wrong).await, 401, "{path} with a wrong token");
    }
    let bearer = get("/observer/snapshot", Some("127.0.0.1:4000"), Some("operator-token"));
    assert_eq!(status(&guarded, bearer).await, 200);
}

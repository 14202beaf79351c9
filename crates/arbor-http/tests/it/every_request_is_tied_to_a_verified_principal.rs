//! OAuth on the endpoint, with the static verifier (the real authorization server's
//! tests are in `oauth_against_a_real_authorization_server`): the protected resource
//! metadata, the 400/401/403 answers and their challenges on every method of both eras,
//! the scope policy (per method, per tool, with a hierarchy), the principal handlers see,
//! the verified-token cache, the tenant taken from a claim, and the bindings of legacy
//! sessions, `requestState` and task ids to the principal that made them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_http::auth::challenge::parse_challenges;
use arbor_http::auth::{
    AuthConfig, Principal, ScopeHierarchy, StaticVerifier, TenantSource, TokenVerifier, VerifyError,
};
use arbor_http::{CorsConfig, HttpConfig, HttpServer, ShutdownHandle};
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{RequestContext, Router, Server};
use serde_json::{json, Value};

use crate::support::{MODERN, PATIENCE};

const ISSUER: &str = "https://as.example";
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const READER: &str = "reader-token";
const EXT: &str = "io.modelcontextprotocol/tasks";

fn principal(subject: &str, scopes: &[&str]) -> Principal {
    let mut claims = serde_json::Map::new();
    claims.insert("org".into(), json!(format!("org-of-{subject}")));
    Principal::new(ISSUER, subject).with_scopes(scopes.iter().copied()).with_claims(claims)
}

fn verifier() -> StaticVerifier {
    StaticVerifier::new()
        .token(ALICE, principal("alice", &["mcp", "files:write"]))
        .token(BOB, principal("bob", &["mcp", "files:write"]))
        .token(READER, principal("reader", &["mcp"]))
}

fn router() -> Router {
    let router = dynamic_router();
    // Dynamic, so a listen for tool list changes is served.
    let _ = router.handle();
    router
}

fn dynamic_router() -> Router {
    Router::new("oauth-fixture", "1.0.0")
        .hide_unauthorized_tools()
        .tool("whoami", "Says who is calling", |_: NoArgs, cx: RequestContext| async move {
            let p = cx.principal().expect("a principal");
            json!({"subject": p.subject, "issuer": p.issuer, "scopes": p.effective_scopes,
                   "tenant": cx.connection().tenant})
            .to_string()
        })
        .tool_route(ToolRoute::new("read_file", |_: NoArgs| async { "contents" }).scopes(["files:read"]))
        .tool_route(ToolRoute::new("write_file", |_: NoArgs| async { "written" }).scopes(["files:write", "audit"]))
        .tool_route(crate::support::background_task())
        .tool_route(crate::support::ask_name())
}

struct Fixture {
    url: String,
    base: String,
    client: reqwest::Client,
    stop: ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(auth: impl FnOnce(String) -> AuthConfig) -> Fixture {
    serve_with(HttpConfig::default(), auth).await
}

async fn serve_with(config: HttpConfig, auth: impl FnOnce(String) -> AuthConfig) -> Fixture {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let resource = format!("http://{addr}/mcp");
    let config = config.bind(addr).auth(auth(resource.clone()));
    let http = HttpServer::with_config(Server::new(router()), config);
    let bound = http.bind().await.expect("bind");
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    Fixture { url: resource, base: format!("http://{addr}"), client, stop, run }
}

fn standard(resource: String) -> AuthConfig {
    AuthConfig::new(resource, ISSUER, verifier())
        .required_scopes(["mcp"])
        .hierarchy(ScopeHierarchy::new().implies("files:write", ["files:read"]))
}

impl Fixture {
    async fn finish(self) {
        self.stop.shutdown();
        tokio::time::timeout(PATIENCE, self.run).await.expect("shut down in time").unwrap().unwrap();
    }

    fn post(&self, token: Option<&str>, body: &Value, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut r = tests::peer::http::post(&self.client, &self.url, body);
        if let Some(token) = token {
            r = r.bearer_auth(token);
        }
        for (name, value) in headers {
            r = r.header(*name, *value);
        }
        r
    }

    async fn modern(&self, token: Option<&str>, method: &str, mut params: Value, caps: Value) -> (u16, Value, String) {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                                 "io.modelcontextprotocol/clientCapabilities": caps});
        let name = ["name", "uri", "taskId"].iter().find_map(|k| params.get(*k)).and_then(Value::as_str);
        let name = name.map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(name) = name.as_deref() {
            headers.push(("mcp-name", name));
        }
        answer(self.post(token, &body, &headers).send().await.unwrap()).await
    }

    async fn call(&self, token: &str, tool: &str) -> (u16, Value, String) {
        self.modern(Some(token), "tools/call", json!({"name": tool, "arguments": {}}), json!({})).await
    }

    async fn initialize(&self, token: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
        let response = self.post(Some(token), &init, &[]).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = self.post(Some(token), &initialized, &[("mcp-session-id", &session)]).send().await.unwrap();
        assert_eq!(r.status(), 202);
        session
    }
}

/// Status, JSON body (Null when none) and the `WWW-Authenticate` header ("" when none).
async fn answer(response: reqwest::Response) -> (u16, Value, String) {
    let status = response.status().as_u16();
    let challenge =
        response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let text = response.text().await.unwrap();
    let body = if text.starts_with("data:") || text.starts_with("id:") || text.starts_with(':') {
        let data = text.lines().filter_map(|l| l.strip_prefix("data: ")).next_back().unwrap_or("null");
        serde_json::from_str(data).unwrap_or(Value::Null)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    (status, body, challenge)
}

fn param(challenge: &str, name: &str) -> Option<String> {
    let parsed = parse_challenges(challenge).expect("a well-formed challenge");
    assert_eq!(parsed.len(), 1, "{challenge}");
    assert_eq!(parsed[0].scheme, "Bearer");
    parsed[0].param(name).map(str::to_owned)
}

fn text(body: &Value) -> String {
    body["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_protected_resource_metadata_is_public_and_names_the_resource_verbatim() {
    let f = serve(standard).await;
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let response = f.client.get(format!("{}{path}", f.base)).header("origin", "https://app.example").send().await;
        let response = response.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*", "{path}: CORS-open");
        let doc: Value = response.json().await.unwrap();
        assert_eq!(doc["resource"], json!(f.url), "{path}");
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
    f.finish().await;
}

#[tokio::test]
async fn a_request_without_a_valid_token_gets_401_and_a_challenge_on_every_method() {
    let f = serve(standard).await;
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", f.base);
    // No token: no `error` (RFC 6750 §3.1), but where to get one and what to ask for.
    let (status, body, challenge) = f.modern(None, "tools/list", json!({}), json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(param(&challenge, "resource_metadata"), Some(metadata.clone()));
    assert_eq!(param(&challenge, "scope").as_deref(), Some("mcp"));
    assert_eq!(param(&challenge, "error"), None);
    assert!(body["error"]["data"].get("error").is_none(), "{body}");
    // An unknown token, and a malformed one: invalid_token, with the token nowhere.
    for token in ["forged-token", "not a token"] {
        let response = f
            .client
            .post(&f.url)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
            .send()
            .await
            .unwrap();
        let (status, body, challenge) = answer(response).await;
        assert_eq!(status, 401, "{token}: {body}");
        assert_eq!(param(&challenge, "error").as_deref(), Some("invalid_token"), "{token}");
        assert_eq!(param(&challenge, "resource_metadata"), Some(metadata.clone()));
        assert!(!challenge.contains(token) && !body.to_string().contains(token), "{token} echoed back");
    }
    // GET and DELETE of a legacy session need a token too, before the session is looked at.
    let session = f.initialize(ALICE).await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = f.client.request(method.clone(), &f.url).header("mcp-session-id", &session);
        let r = r.header("accept", "text/event-stream").send().await.unwrap();
        assert_eq!(r.status(), 401, "{method}");
        assert!(r.headers().contains_key("www-authenticate"), "{method}");
    }
    // A token in the query string is refused outright.
    let r = f.client.post(format!("{}?access_token={ALICE}", f.url)).send().await.unwrap();
    let (status, _, challenge) = answer(r).await;
    assert_eq!((status, param(&challenge, "error").as_deref()), (400, Some("invalid_request")));
    // Two Authorization headers: 400.
    let two = f
        .post(None, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}), &[])
        .header("authorization", format!("Bearer {ALICE}"))
        .header("authorization", format!("Bearer {BOB}"));
    assert_eq!(two.send().await.unwrap().status(), 400);
    f.finish().await;
}

#[tokio::test]
async fn a_call_lacking_scopes_gets_403_naming_every_scope_it_needs() {
    let f = serve(standard).await;
    // files:write implies files:read: alice may read.
    assert_eq!(text(&f.call(ALICE, "read_file").await.1), "contents");
    // The reader holds only `mcp`.
    let (status, body, challenge) = f.call(READER, "read_file").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(param(&challenge, "error").as_deref(), Some("insufficient_scope"));
    assert_eq!(param(&challenge, "scope").as_deref(), Some("files:read mcp"));
    assert!(param(&challenge, "resource_metadata").is_some());
    // All the operation needs, in one challenge, even what the token already has.
    let (status, _, challenge) = f.call(ALICE, "write_file").await;
    assert_eq!(status, 403);
    assert_eq!(param(&challenge, "scope").as_deref(), Some("audit files:write mcp"));
    // The same in a legacy session.
    let session = f.initialize(READER).await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "read_file"}});
    let (status, _, challenge) =
        answer(f.post(Some(READER), &call, &[("mcp-session-id", &session)]).send().await.unwrap()).await;
    assert_eq!((status, param(&challenge, "scope").as_deref()), (403, Some("files:read mcp")));
    // Tools the principal cannot call are not listed to it.
    let names = |body: &Value| {
        body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let (_, listed, _) = f.modern(Some(READER), "tools/list", json!({}), json!({})).await;
    assert!(!names(&listed).contains(&"read_file".to_owned()), "{listed}");
    let (_, listed, _) = f.modern(Some(ALICE), "tools/list", json!({}), json!({})).await;
    assert!(names(&listed).contains(&"read_file".to_owned()) && !names(&listed).contains(&"write_file".to_owned()));
    f.finish().await;
}

#[tokio::test]
async fn handlers_see_the_principal_and_its_tenant_never_the_token() {
    let f = serve(|resource| standard(resource).tenant(TenantSource::Claim("org".into()))).await;
    let (status, body, _) = f.call(ALICE, "whoami").await;
    assert_eq!(status, 200, "{body}");
    let me: Value = serde_json::from_str(&text(&body)).unwrap();
    assert_eq!(me["subject"], "alice");
    assert_eq!(me["issuer"], ISSUER);
    assert_eq!(me["tenant"], "org-of-alice");
    assert_eq!(me["scopes"], json!(["files:read", "files:write", "mcp"]), "the hierarchy applied");
    let session = f.initialize(BOB).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}});
    let (_, body, _) = answer(f.post(Some(BOB), &call, &[("mcp-session-id", &session)]).send().await.unwrap()).await;
    let me: Value = serde_json::from_str(&text(&body)).unwrap();
    assert_eq!((me["subject"].as_str(), me["tenant"].as_str()), (Some("bob"), Some("org-of-bob")));
    assert!(!body.to_string().contains(BOB));
    f.finish().await;
}

#[tokio::test]
async fn a_session_serves_only_the_principal_that_opened_it() {
    let f = serve(standard).await;
    let session = f.initialize(ALICE).await;
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    // Bob's token is valid, but the session is not his: it is unknown to him.
    let (status, body, _) =
        answer(f.post(Some(BOB), &ping, &[("mcp-session-id", &session)]).send().await.unwrap()).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (404, Some(-32001)), "{body}");
    let r = f.client.delete(&f.url).bearer_auth(BOB).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status(), 404, "bob cannot end alice's session");
    // It is untouched for alice.
    let (status, body, _) =
        answer(f.post(Some(ALICE), &ping, &[("mcp-session-id", &session)]).send().await.unwrap()).await;
    assert_eq!((status, &body["result"]), (200, &json!({})), "{body}");
    f.finish().await;
}

#[tokio::test]
async fn request_state_and_task_ids_are_useless_to_another_principal() {
    let f = serve(standard).await;
    let caps = json!({"elicitation": {"form": {}}});
    let (_, first, _) =
        f.modern(Some(ALICE), "tools/call", json!({"name": "ask", "arguments": {}}), caps.clone()).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = json!({"name": "ask", "arguments": {}, "requestState": state,
                       "inputResponses": {"name": {"action": "accept", "content": {"name": "x"}}}});
    let (_, stolen, _) = f.modern(Some(BOB), "tools/call", retry.clone(), caps.clone()).await;
    assert_eq!(stolen["error"]["code"], -32602, "bob's retry with alice's state: {stolen}");
    let (_, own, _) = f.modern(Some(ALICE), "tools/call", retry, caps).await;
    assert_eq!(text(&own), "hi", "{own}");

    let ext = json!({"extensions": {EXT: {}}});
    let (_, created, _) =
        f.modern(Some(ALICE), "tools/call", json!({"name": "background", "arguments": {}}), ext.clone()).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let (_, theirs, _) = f.modern(Some(BOB), "tasks/get", json!({"taskId": task}), ext.clone()).await;
    assert_eq!(theirs["error"]["code"], -32602, "bob cannot see alice's task: {theirs}");
    let (_, cancel, _) = f.modern(Some(BOB), "tasks/cancel", json!({"taskId": task}), ext.clone()).await;
    assert_eq!(cancel["error"]["code"], -32602, "nor cancel it: {cancel}");
    let (_, mine, _) = f.modern(Some(ALICE), "tasks/get", json!({"taskId": task}), ext).await;
    assert!(mine["result"]["status"].is_string(), "{mine}");
    f.finish().await;
}

/// A verifier that counts its calls: a repeated token must be served from the cache.
struct Counting {
    inner: StaticVerifier,
    calls: Arc<AtomicUsize>,
}

impl TokenVerifier for Counting {
    async fn verify(&self, token: &str) -> Result<Principal, VerifyError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.verify(token).await
    }
}

#[tokio::test]
async fn a_repeated_token_is_verified_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counting = Counting { inner: verifier(), calls: calls.clone() };
    let f = serve(|resource| AuthConfig::new(resource, ISSUER, counting).required_scopes(["mcp"])).await;
    for _ in 0..5 {
        assert_eq!(f.call(ALICE, "whoami").await.0, 200);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "verified once, then cached");
    assert_eq!(f.call(BOB, "whoami").await.0, 200);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // A refused token is not cached as good.
    assert_eq!(f.call("nobody", "whoami").await.0, 401);
    assert_eq!(f.call("nobody", "whoami").await.0, 401);
    f.finish().await;
}

#[tokio::test]
async fn method_scopes_apply_and_browsers_can_read_the_challenge() {
    let cors = HttpConfig { cors: Some(CorsConfig::default()), ..HttpConfig::default() };
    let f = serve_with(cors, |resource| standard(resource).method_scopes("ping", ["ops"])).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let r = f.post(Some(READER), &ping, &[("origin", "http://localhost:5173")]).send().await.unwrap();
    let exposed = r.headers().get("access-control-expose-headers").map(|v| v.to_str().unwrap().to_ascii_lowercase());
    let (status, _, challenge) = answer(r).await;
    assert_eq!((status, param(&challenge, "scope").as_deref()), (403, Some("mcp ops")));
    assert!(exposed.is_some_and(|e| e.contains("www-authenticate")), "WWW-Authenticate is exposed to browsers");
    // A preflight is answered without a token.
    let preflight = f
        .client
        .request(reqwest::Method::OPTIONS, &f.url)
        .header("origin", "http://localhost:5173")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    f.finish().await;
}

#[tokio::test]
async fn a_stream_a_client_holds_open_ends_when_its_token_expires() {
    let soon = std::time::SystemTime::now() + std::time::Duration::from_millis(1500);
    let short = StaticVerifier::new().token("short-lived", principal("brief", &["mcp"]).with_expiry(soon));
    let f = serve(|resource| AuthConfig::new(resource, ISSUER, short).required_scopes(["mcp"])).await;
    // A 2026-07-28 listen.
    let meta =
        json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
                        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}});
    let headers = [("mcp-protocol-version", MODERN), ("mcp-method", "subscriptions/listen")];
    let response = f.post(Some("short-lived"), &listen, &headers).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut listening = crate::support::SseReader::new(response);
    let ack = listening.next_data().await.json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    // A legacy session's standalone GET stream.
    let session = f.initialize("short-lived").await;
    let r = f.client.get(&f.url).bearer_auth("short-lived").header("mcp-session-id", &session);
    let r = r.header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let mut standalone = crate::support::SseReader::new(r);
    // Both end by themselves once the token has expired (each read is bounded by PATIENCE).
    while listening.next().await.is_some() {}
    while standalone.next().await.is_some() {}
    assert!(std::time::SystemTime::now() >= soon, "the streams ended at the expiry, not before");
    // And the token opens nothing any more.
    assert_eq!(f.call("short-lived", "whoami").await.0, 401);
    f.finish().await;
}

#[tokio::test]
async fn the_2024_transport_is_authenticated_and_bound_to_its_principal() {
    let legacy_sse = HttpConfig { legacy_sse: true, ..HttpConfig::default() };
    let f = serve_with(legacy_sse, standard).await;
    let sse = format!("{}/sse", f.base);
    let r = f.client.get(&sse).header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    let r = f.client.get(&sse).bearer_auth(ALICE).header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let mut events = crate::support::SseReader::new(r);
    let endpoint = events.next().await.unwrap();
    let post_url = format!("{}{}", f.base, endpoint.data);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let send = |token: Option<&'static str>, body: Value| {
        let r = f.client.post(&post_url).header("content-type", "application/json").body(body.to_string());
        match token {
            Some(token) => r.bearer_auth(token).send(),
            None => r.send(),
        }
    };
    assert_eq!(send(None, init.clone()).await.unwrap().status(), 401);
    assert_eq!(send(Some(BOB), init.clone()).await.unwrap().status(), 404, "bob cannot use alice's stream");
    assert_eq!(send(Some(ALICE), init).await.unwrap().status(), 202);
    assert_eq!(events.next_data().await.json()["result"]["protocolVersion"], "2024-11-05");
    // The scope policy holds on this transport too.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write_file"}});
    let r = send(Some(ALICE), call).await.unwrap();
    assert_eq!(r.status(), 403);
    f.finish().await;
}

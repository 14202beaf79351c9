//! OAuth against a real authorization server (`oidc-provider`, `tests::auth_server`): the
//! endpoint verifies its RS256 JWT access tokens against its JWKS. Real tokens work in
//! both eras; every forged or misdirected one gets its exact status and challenge;
//! principals are kept apart; key rotation while clients keep calling fails nothing; a
//! JWKS outage keeps the known keys working.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arbor_http::auth::challenge::parse_challenges;
use arbor_http::auth::{AuthConfig, IntrospectionConfig, IntrospectionVerifier, JwtConfig, JwtVerifier};
use arbor_http::{HttpConfig, HttpServer, ShutdownHandle};
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{RequestContext, Router, Server};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tests::auth_server::{base64url_encode, jwt_parts, AuthServer};

use crate::support::{MODERN, PATIENCE};

struct Fixture {
    url: String,
    client: reqwest::Client,
    verifier: JwtVerifier,
    stop: ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

fn router() -> Router {
    Router::new("oauth-real", "1.0.0")
        .tool("whoami", "Says who is calling", |_: NoArgs, cx: RequestContext| async move {
            let p = cx.principal().expect("a principal");
            format!("{}|{}", p.subject, p.client_id.clone().unwrap_or_default())
        })
        .tool_route(ToolRoute::new("write_file", |_: NoArgs| async { "written" }).scopes(["files:write"]))
        .tool_route(crate::support::background_task())
        .tool_route(crate::support::ask_name())
}

async fn serve(issuer: &str, refetch: Duration) -> Fixture {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let url = format!("http://{addr}/mcp");
    let jwt = JwtConfig::new(issuer, url.clone()).refetch_interval(refetch);
    let verifier = JwtVerifier::start(jwt).await.expect("the verifier starts");
    let auth = AuthConfig::new(url.clone(), issuer, verifier.clone()).required_scopes(["mcp:tools"]);
    let http = HttpServer::with_config(Server::new(router()), HttpConfig::default().bind(addr).auth(auth));
    let bound = http.bind().await.expect("bind");
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    Fixture { url, client, verifier, stop, run }
}

impl Fixture {
    async fn finish(self) {
        self.stop.shutdown();
        tokio::time::timeout(PATIENCE, self.run).await.expect("shut down in time").unwrap().unwrap();
        self.verifier.shutdown().await;
    }

    /// A 2026-07-28 `tools/call` of `tool` with `token`: status, body, challenge.
    async fn call(&self, token: Option<&str>, tool: &str) -> (u16, Value, String) {
        self.modern(token, "tools/call", json!({"name": tool, "arguments": {}}), json!({})).await
    }

    /// A 2026-07-28 request with `token` and the client capabilities `caps`.
    async fn modern(&self, token: Option<&str>, method: &str, mut params: Value, caps: Value) -> (u16, Value, String) {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                                 "io.modelcontextprotocol/clientCapabilities": caps});
        let name = ["name", "taskId"].iter().find_map(|k| params.get(*k)).and_then(Value::as_str).unwrap().to_owned();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut r = tests::peer::http::post(&self.client, &self.url, &body)
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method)
            .header("mcp-name", name);
        if let Some(token) = token {
            r = r.bearer_auth(token);
        }
        let response = r.send().await.unwrap();
        let status = response.status().as_u16();
        let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body, challenge.unwrap_or_default())
    }

    async fn legacy(&self, token: &str, session: Option<&str>, body: Value) -> reqwest::Response {
        let mut r = tests::peer::http::post(&self.client, &self.url, &body).bearer_auth(token);
        if let Some(session) = session {
            r = r.header("mcp-session-id", session);
        }
        r.send().await.unwrap()
    }
}

fn error_of(challenge: &str) -> Option<String> {
    let parsed = parse_challenges(challenge).expect("a well-formed challenge");
    parsed[0].param("error").map(str::to_owned)
}

fn text(body: &Value) -> &str {
    body["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A token signed with the authorization server's real current RS256 key, with `claims`
/// (and `kid` unless replaced).
fn forge(auth: &AuthServer, claims: &Value, kid: Option<&str>) -> String {
    let key = auth.signing_keys().into_iter().find(|k| k.alg == "RS256").expect("an RS256 key");
    let mut header = Header::new(Algorithm::RS256);
    header.typ = Some("at+jwt".into());
    header.kid = Some(kid.unwrap_or(&key.kid).to_owned());
    let encoding = EncodingKey::from_rsa_pem(key.pem.as_bytes()).expect("the PEM reads");
    jsonwebtoken::encode(&header, claims, &encoding).expect("signs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tokens_work_and_every_forged_or_misdirected_one_is_refused() {
    let auth = AuthServer::start();
    let f = serve(auth.issuer(), Duration::from_secs(10)).await;
    let token = auth.client_credentials("client-a", "secret-a", &f.url, "mcp:tools");
    let (_, good_claims) = jwt_parts(&token);

    // The real token, both eras.
    let (status, body, _) = f.call(Some(&token), "whoami").await;
    assert_eq!((status, text(&body)), (200, "client-a|client-a"), "{body}");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let r = f.legacy(&token, None, init.clone()).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();

    // Each forgery changes one thing of an otherwise valid token.
    let with = |patch: Value| {
        let mut claims = good_claims.clone();
        for (k, v) in patch.as_object().unwrap() {
            claims[k] = v.clone();
        }
        claims
    };
    let wrong_audience = auth.client_credentials("client-a", "secret-a", "http://127.0.0.1:1/other", "mcp:tools");
    let [h, p, s]: [&str; 3] = token.split('.').collect::<Vec<_>>().try_into().unwrap();
    let tampered = {
        let mut claims = good_claims.clone();
        claims["sub"] = json!("admin");
        format!("{h}.{}.{s}", base64url_encode(claims.to_string().as_bytes()))
    };
    let none = {
        let header = base64url_encode(br#"{"alg":"none","typ":"at+jwt"}"#);
        format!("{header}.{p}.")
    };
    let hs256_with_the_public_key = {
        // The alg-confusion attack: HMAC keyed with the public key as the JWKS serves it.
        let jwks_path = auth.jwks_uri().strip_prefix(auth.issuer()).expect("the JWKS is the issuer's").to_owned();
        let jwks = auth.get(&jwks_path).body;
        let header = base64url_encode(br#"{"alg":"HS256","typ":"at+jwt"}"#);
        let kid_header = {
            let (hdr, _) = jwt_parts(&token);
            let kid = hdr["kid"].as_str().unwrap().to_owned();
            base64url_encode(json!({"alg": "HS256", "typ": "at+jwt", "kid": kid}).to_string().as_bytes())
        };
        let mut forged = Vec::new();
        for (secret, head) in [(jwks.clone(), &header), (jwks, &kid_header)] {
            let mut h = Header::new(Algorithm::HS256);
            h.typ = Some("at+jwt".into());
            let signed = jsonwebtoken::encode(&h, &good_claims, &EncodingKey::from_secret(&secret).unwrap()).unwrap();
            let sig = signed.rsplit('.').next().unwrap().to_owned();
            forged.push(format!("{head}.{p}.{sig}"));
        }
        forged
    };
    let cases: Vec<(&str, String, u16, Option<&str>)> = vec![
        (
            "expired",
            forge(&auth, &with(json!({"exp": now() - 3600, "iat": now() - 7200})), None),
            401,
            Some("invalid_token"),
        ),
        ("not yet valid", forge(&auth, &with(json!({"nbf": now() + 3600})), None), 401, Some("invalid_token")),
        ("wrong audience", wrong_audience, 401, Some("invalid_token")),
        (
            "wrong issuer",
            forge(&auth, &with(json!({"iss": format!("{}/", auth.issuer())})), None),
            401,
            Some("invalid_token"),
        ),
        ("alg none", none, 401, Some("invalid_token")),
        ("HS256 keyed with the JWKS", hs256_with_the_public_key[0].clone(), 401, Some("invalid_token")),
        ("HS256 with the real kid", hs256_with_the_public_key[1].clone(), 401, Some("invalid_token")),
        ("tampered payload", tampered, 401, Some("invalid_token")),
    ];
    for (case, forged, want_status, want_error) in cases {
        let (status, body, challenge) = f.call(Some(&forged), "whoami").await;
        assert_eq!(status, want_status, "{case}: {body}");
        assert_eq!(error_of(&challenge).as_deref(), want_error, "{case}: {challenge}");
        assert!(!challenge.contains(&forged) && !body.to_string().contains(&forged), "{case}: token echoed");
    }
    // No token: 401 without an error code.
    let (status, _, challenge) = f.call(None, "whoami").await;
    assert_eq!((status, error_of(&challenge)), (401, None));
    // The token in the query string: 400.
    let r = f.client.post(format!("{}?access_token={token}", f.url)).send().await.unwrap();
    assert_eq!(r.status(), 400);
    // Insufficient scope: 403 naming what the call needs.
    let (status, _, challenge) = f.call(Some(&token), "write_file").await;
    assert_eq!((status, error_of(&challenge).as_deref()), (403, Some("insufficient_scope")));
    let scope = parse_challenges(&challenge).unwrap()[0].param("scope").map(str::to_owned);
    assert_eq!(scope.as_deref(), Some("files:write mcp:tools"));
    let writer = auth.client_credentials("client-a", "secret-a", &f.url, "mcp:tools files:write");
    assert_eq!(f.call(Some(&writer), "write_file").await.0, 200);

    // Another principal's valid token on client-a's session: unknown to it.
    let other = auth.client_credentials("client-b", "secret-b", &f.url, "mcp:tools");
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    assert_eq!(f.legacy(&other, Some(&session), ping.clone()).await.status(), 404);
    assert_eq!(f.legacy(&token, Some(&session), ping).await.status(), 200);

    // client-a's requestState and task id are useless to client-b.
    let caps = json!({"elicitation": {"form": {}}});
    let (_, first, _) =
        f.modern(Some(&token), "tools/call", json!({"name": "ask", "arguments": {}}), caps.clone()).await;
    let state = first["result"]["requestState"].as_str().expect("a requestState").to_owned();
    let retry = json!({"name": "ask", "arguments": {}, "requestState": state,
                       "inputResponses": {"name": {"action": "accept", "content": {"name": "x"}}}});
    let (_, stolen, _) = f.modern(Some(&other), "tools/call", retry.clone(), caps.clone()).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    assert_eq!(text(&f.modern(Some(&token), "tools/call", retry, caps).await.1), "hi");
    let ext = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let background = json!({"name": "background", "arguments": {}});
    let (_, created, _) = f.modern(Some(&token), "tools/call", background, ext.clone()).await;
    let task = created["result"]["taskId"].as_str().expect("a task").to_owned();
    let (_, theirs, _) = f.modern(Some(&other), "tasks/get", json!({"taskId": task}), ext.clone()).await;
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
    let (_, mine, _) = f.modern(Some(&token), "tasks/get", json!({"taskId": task}), ext).await;
    assert!(mine["result"]["status"].is_string(), "{mine}");

    // An unknown kid: one refetch of the JWKS, then 401; another at once: no refetch.
    let before = auth.jwks_requests();
    let stranger = forge(&auth, &good_claims, Some("no-such-kid"));
    let (status, _, challenge) = f.call(Some(&stranger), "whoami").await;
    assert_eq!((status, error_of(&challenge).as_deref()), (401, Some("invalid_token")));
    assert_eq!(auth.jwks_requests(), before + 1, "one refetch for the unknown kid");
    let stranger2 = forge(&auth, &good_claims, Some("another-unknown-kid"));
    assert_eq!(f.call(Some(&stranger2), "whoami").await.0, 401);
    assert_eq!(auth.jwks_requests(), before + 1, "rate-limited: no second fetch");
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_while_clients_call_fails_nothing_and_a_jwks_outage_keeps_known_keys() {
    let auth = Arc::new(AuthServer::start());
    // Rotation at the authorization server is rarer than this test's: no rate limit here.
    let f = Arc::new(serve(auth.issuer(), Duration::ZERO).await);
    let failures = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Four clients keep calling, each taking a fresh token every few calls, so tokens
    // signed with each new key arrive while the old ones are still in use.
    let mut clients = Vec::new();
    for (n, (id, secret)) in [("client-a", "secret-a"), ("client-b", "secret-b")].repeat(2).into_iter().enumerate() {
        let (auth, f, failures, calls, stop) = (auth.clone(), f.clone(), failures.clone(), calls.clone(), stop.clone());
        clients.push(tokio::spawn(async move {
            let mut i = n;
            while !stop.load(Ordering::SeqCst) {
                let (a, url) = (auth.clone(), f.url.clone());
                let token = tokio::task::spawn_blocking(move || a.client_credentials(id, secret, &url, "mcp:tools"))
                    .await
                    .unwrap();
                for _ in 0..5 {
                    let (status, body, _) = f.call(Some(&token), "whoami").await;
                    calls.fetch_add(1, Ordering::SeqCst);
                    if status != 200 {
                        eprintln!("call {i} failed: {status} {body}");
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                    i += 1;
                }
            }
        }));
    }
    let wait_calls = |at_least: usize| {
        let calls = calls.clone();
        async move { tests::poll::until("calls go on", PATIENCE, || calls.load(Ordering::SeqCst) >= at_least).await }
    };
    wait_calls(40).await;
    // Two rotations as authorization servers do them: the new key first, the old one
    // still published for the tokens it signed.
    for _ in 0..2 {
        let a = auth.clone();
        let kids = tokio::task::spawn_blocking(move || a.rotate(false)).await.unwrap();
        assert!(kids.len() >= 4, "old keys stay published: {kids:?}");
        wait_calls(calls.load(Ordering::SeqCst) + 60).await;
    }
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(failures.load(Ordering::SeqCst), 0, "no call failed across two rotations");
    assert!(f.verifier.stats().unknown_kid_refetches >= 2, "the new keys were fetched: {:?}", f.verifier.stats());

    // The old keys withdrawn: a token of the newest key verifies (after one refetch).
    let a = auth.clone();
    tokio::task::spawn_blocking(move || a.rotate(true)).await.unwrap();
    let (a, url) = (auth.clone(), f.url.clone());
    let newest = tokio::task::spawn_blocking(move || a.client_credentials("client-b", "secret-b", &url, "mcp:tools"))
        .await
        .unwrap();
    assert_eq!(f.call(Some(&newest), "whoami").await.0, 200);

    // The JWKS endpoint goes down: tokens of the known key keep working.
    let a = auth.clone();
    tokio::task::spawn_blocking(move || a.jwks_down(true)).await.unwrap();
    let (a, url) = (auth.clone(), f.url.clone());
    let fresh = tokio::task::spawn_blocking(move || a.client_credentials("client-a", "secret-a", &url, "mcp:tools"))
        .await
        .unwrap();
    let (status, body, _) = f.call(Some(&fresh), "whoami").await;
    assert_eq!(status, 200, "a known key verifies while the JWKS is down: {body}");
    let a = auth.clone();
    tokio::task::spawn_blocking(move || a.jwks_down(false)).await.unwrap();
    match Arc::try_unwrap(f) {
        Ok(f) => f.finish().await,
        Err(_) => panic!("the fixture is still shared"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected_at_the_authorization_server() {
    let auth = AuthServer::start();
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let url = format!("http://{addr}/mcp");
    let introspection = IntrospectionConfig::new(auth.introspection_endpoint(), "client-a")
        .client_secret("secret-a")
        .audience(url.clone())
        .issuer(auth.issuer());
    let verifier = IntrospectionVerifier::new(introspection).expect("a valid configuration");
    let config = AuthConfig::new(url.clone(), auth.issuer(), verifier).required_scopes(["mcp:tools"]);
    let http = HttpServer::with_config(Server::new(router()), HttpConfig::default().bind(addr).auth(config));
    let bound = http.bind().await.unwrap();
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let jwt = JwtVerifier::start(JwtConfig::new(auth.issuer(), url.clone())).await.unwrap();
    let f = Fixture { url: url.clone(), client: reqwest::Client::new(), verifier: jwt, stop, run };

    let opaque = auth.client_credentials("client-opaque", "secret-opaque", &url, "mcp:tools");
    assert_eq!(opaque.split('.').count(), 1, "an opaque token, not a JWT");
    let (status, body, _) = f.call(Some(&opaque), "whoami").await;
    assert_eq!((status, text(&body)), (200, "client-opaque|client-opaque"), "{body}");
    let elsewhere = auth.client_credentials("client-opaque", "secret-opaque", "http://127.0.0.1:1/other", "mcp:tools");
    let (status, _, challenge) = f.call(Some(&elsewhere), "whoami").await;
    assert_eq!((status, error_of(&challenge).as_deref()), (401, Some("invalid_token")), "another resource's token");
    let (status, _, _) = f.call(Some("not-issued-by-anyone"), "whoami").await;
    assert_eq!(status, 401, "inactive at introspection");
    f.finish().await;
}

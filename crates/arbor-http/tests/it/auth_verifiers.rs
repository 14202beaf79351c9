//! The JWT and introspection verifiers against real HTTP servers on loopback: an axum
//! authorization-server stand-in serving metadata and a JWKS that rotates and fails, and
//! an RFC 7662 introspection endpoint. Requests are counted; nothing here asserts timing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arbor_http::auth::{
    Algorithm, IntrospectionAuth, IntrospectionConfig, IntrospectionVerifier, JwtConfig, JwtConfigError, JwtVerifier,
    TokenVerifier, VerifyError,
};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{encode, EncodingKey, Header};
use parking_lot::Mutex;
use serde_json::{json, Value};

const RESOURCE: &str = "https://mcp.example/mcp";
const RSA_A: &[u8] = include_bytes!("../keys/rsa-a.der");
const RSA_B: &[u8] = include_bytes!("../keys/rsa-b.der");
const EC_A: &[u8] = include_bytes!("../keys/ec-a.der");

fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

/// A signing key with its kid and algorithm.
struct Key {
    kid: &'static str,
    alg: Algorithm,
    key: EncodingKey,
}

fn rsa(kid: &'static str, der: &[u8]) -> Key {
    Key { kid, alg: Algorithm::RS256, key: EncodingKey::from_rsa_der(der) }
}

fn ec(kid: &'static str, der: &[u8]) -> Key {
    Key { kid, alg: Algorithm::ES256, key: EncodingKey::from_ec_der(der) }
}

impl Key {
    fn public(&self) -> Value {
        let mut jwk = serde_json::to_value(Jwk::from_encoding_key(&self.key, self.alg).unwrap()).unwrap();
        jwk["kid"] = json!(self.kid);
        jwk["use"] = json!("sig");
        jwk
    }

    fn token(&self, issuer: &str, sub: &str) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.to_owned());
        header.typ = Some("at+jwt".into());
        let claims = json!({"iss": issuer, "aud": RESOURCE, "sub": sub, "exp": now() + 300, "scope": "mcp:tools"});
        encode(&header, &claims, &self.key).unwrap()
    }
}

fn jwks(keys: &[&Key]) -> String {
    json!({ "keys": keys.iter().map(|k| k.public()).collect::<Vec<_>>() }).to_string()
}

/// What the stand-in authorization server answers.
struct AsState {
    jwks: String,
    jwks_status: StatusCode,
    /// The issuer each metadata document names (`None`: 404).
    rfc8414_issuer: Option<String>,
    oidc_issuer: Option<String>,
    jwks_delay: Duration,
}

struct AuthServer {
    issuer: String,
    state: Arc<Mutex<AsState>>,
    jwks_requests: Arc<AtomicUsize>,
    metadata_requests: Arc<Mutex<Vec<String>>>,
}

impl AuthServer {
    /// Serves metadata and the JWKS; the issuer is the server's origin plus `path`.
    async fn start(path: &str, keys: &[&Key]) -> AuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}{path}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(AsState {
            jwks: jwks(keys),
            jwks_status: StatusCode::OK,
            rfc8414_issuer: Some(issuer.clone()),
            oidc_issuer: Some(issuer.clone()),
            jwks_delay: Duration::ZERO,
        }));
        let jwks_requests = Arc::new(AtomicUsize::new(0));
        let metadata_requests = Arc::new(Mutex::new(Vec::new()));
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let (s, count) = (state.clone(), jwks_requests.clone());
        let jwks_route = axum::routing::get(move || {
            let (s, count) = (s.clone(), count.clone());
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                let (status, body, delay) = {
                    let s = s.lock();
                    (s.jwks_status, s.jwks.clone(), s.jwks_delay)
                };
                tokio::time::sleep(delay).await;
                (status, [("content-type", "application/json"), ("cache-control", "public, max-age=600")], body)
            }
        });
        let (s, seen, o) = (state.clone(), metadata_requests.clone(), origin.clone());
        let metadata = move |uri: axum::http::Uri| {
            let (s, seen, o) = (s.clone(), seen.clone(), o.clone());
            async move {
                seen.lock().push(uri.path().to_owned());
                let s = s.lock();
                let named = if uri.path().starts_with("/.well-known/oauth-authorization-server") {
                    s.rfc8414_issuer.clone()
                } else {
                    s.oidc_issuer.clone()
                };
                match named {
                    Some(issuer) => {
                        (StatusCode::OK, json!({"issuer": issuer, "jwks_uri": format!("{o}/jwks")}).to_string())
                    }
                    None => (StatusCode::NOT_FOUND, String::new()),
                }
            }
        };
        let app = axum::Router::new().route("/jwks", jwks_route).fallback(metadata);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        AuthServer { issuer, state, jwks_requests, metadata_requests }
    }

    fn jwks_requests(&self) -> usize {
        self.jwks_requests.load(Ordering::SeqCst)
    }

    fn config(&self) -> JwtConfig {
        JwtConfig::new(self.issuer.clone(), RESOURCE).http_timeout(Duration::from_secs(5))
    }
}

#[tokio::test]
async fn the_jwks_is_found_by_rfc8414_discovery_with_path_insertion() {
    let a = rsa("a", RSA_A);
    let server = AuthServer::start("/tenant/one", &[&a]).await;
    let verifier = JwtVerifier::start(server.config()).await.unwrap();
    let principal = verifier.verify(&a.token(&server.issuer, "alice")).await.unwrap();
    assert_eq!((principal.issuer.as_str(), principal.subject.as_str()), (server.issuer.as_str(), "alice"));
    assert_eq!(*server.metadata_requests.lock(), ["/.well-known/oauth-authorization-server/tenant/one"]);
    verifier.shutdown().await;
}

#[tokio::test]
async fn discovery_falls_back_to_openid_configuration_and_wants_the_exact_issuer() {
    let e = ec("e", EC_A);
    let server = AuthServer::start("", &[&e]).await;
    {
        let mut s = server.state.lock();
        s.rfc8414_issuer = Some(format!("{}/", server.issuer)); // not the exact issuer: skipped
    }
    let verifier = JwtVerifier::start(server.config()).await.unwrap();
    assert!(verifier.verify(&e.token(&server.issuer, "bob")).await.is_ok());
    assert_eq!(
        *server.metadata_requests.lock(),
        ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
    );
    server.state.lock().oidc_issuer = None;
    let err = JwtVerifier::start(server.config()).await.unwrap_err();
    assert!(matches!(err, JwtConfigError::Discovery(_)), "{err}");
}

#[tokio::test]
async fn an_unknown_kid_costs_one_refetch_then_is_refused() {
    let (a, b) = (rsa("a", RSA_A), rsa("b", RSA_B));
    let server = AuthServer::start("", &[&a]).await;
    let verifier = JwtVerifier::start(server.config().refetch_interval(Duration::from_secs(3600))).await.unwrap();
    assert_eq!(server.jwks_requests(), 1);
    let stranger = b.token(&server.issuer, "mallory");
    assert_eq!(verifier.verify(&stranger).await, Err(VerifyError::Invalid("unknown key id".into())));
    assert_eq!(server.jwks_requests(), 2, "one refetch");
    for _ in 0..5 {
        assert_eq!(verifier.verify(&stranger).await, Err(VerifyError::Invalid("unknown key id".into())));
    }
    assert_eq!(server.jwks_requests(), 2, "then refused at once, without a fetch");
    assert!(verifier.verify(&a.token(&server.issuer, "alice")).await.is_ok());
    let stats = verifier.stats();
    assert_eq!((stats.fetches, stats.failed, stats.keys, stats.unknown_kid_refetches), (2, 0, 1, 1));
}

#[tokio::test]
async fn concurrent_tokens_with_new_kids_share_one_fetch_after_a_rotation() {
    let (a, b, e) = (rsa("a", RSA_A), rsa("b", RSA_B), ec("e", EC_A));
    let server = AuthServer::start("", &[&a]).await;
    let verifier = JwtVerifier::start(server.config()).await.unwrap();
    {
        let mut s = server.state.lock();
        s.jwks = jwks(&[&a, &b, &e]);
        s.jwks_delay = Duration::from_millis(200);
    }
    let tokens: Vec<String> =
        (0..16).map(|i| if i % 2 == 0 { &b } else { &e }).map(|k| k.token(&server.issuer, "u")).collect();
    let results = futures::future::join_all(tokens.iter().map(|t| verifier.verify(t))).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(server.jwks_requests(), 2, "sixteen misses, one fetch");
    // The old key keeps working while it is published.
    assert!(verifier.verify(&a.token(&server.issuer, "alice")).await.is_ok());
    // Once the issuer has dropped it, a verifier holding the new set refuses its tokens.
    server.state.lock().jwks = jwks(&[&b]);
    let verifier = JwtVerifier::start(server.config()).await.unwrap();
    assert_eq!(
        verifier.verify(&a.token(&server.issuer, "alice")).await,
        Err(VerifyError::Invalid("unknown key id".into()))
    );
}

#[tokio::test]
async fn the_jwks_server_down_leaves_the_known_keys_verifying() {
    let (a, b) = (rsa("a", RSA_A), rsa("b", RSA_B));
    let server = AuthServer::start("", &[&a]).await;
    let verifier = JwtVerifier::start(server.config().refetch_interval(Duration::ZERO)).await.unwrap();
    server.state.lock().jwks_status = StatusCode::SERVICE_UNAVAILABLE;
    // An unknown kid makes the cache fetch, and the fetch fails.
    assert_eq!(
        verifier.verify(&b.token(&server.issuer, "x")).await,
        Err(VerifyError::Invalid("unknown key id".into()))
    );
    for _ in 0..3 {
        assert!(verifier.verify(&a.token(&server.issuer, "alice")).await.is_ok(), "known keys keep verifying");
    }
    let stats = verifier.stats();
    assert_eq!((stats.fetches, stats.failed, stats.keys), (2, 1, 1));
    // Back up: the next miss fetches the set again.
    server.state.lock().jwks_status = StatusCode::OK;
    server.state.lock().jwks = jwks(&[&a, &b]);
    assert!(verifier.verify(&b.token(&server.issuer, "x")).await.is_ok());
}

#[tokio::test]
async fn with_no_key_ever_fetched_tokens_are_unavailable_not_invalid() {
    let a = rsa("a", RSA_A);
    let server = AuthServer::start("", &[&a]).await;
    server.state.lock().jwks_status = StatusCode::SERVICE_UNAVAILABLE;
    let verifier = JwtVerifier::start(server.config().jwks_uri(format!("{}/jwks", server.issuer))).await.unwrap();
    assert!(matches!(verifier.verify(&a.token(&server.issuer, "alice")).await, Err(VerifyError::Unavailable(_))));
    assert!(server.metadata_requests.lock().is_empty(), "a configured jwks_uri skips discovery");
}

#[tokio::test]
async fn an_unreachable_jwks_is_unavailable_and_bounded() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let issuer = format!("http://127.0.0.1:{port}");
    let config = JwtConfig::new(issuer.clone(), RESOURCE)
        .jwks_uri(format!("{issuer}/jwks"))
        .http_timeout(Duration::from_secs(2));
    let verifier = JwtVerifier::start(config).await.unwrap();
    let a = rsa("a", RSA_A);
    assert!(matches!(verifier.verify(&a.token(&issuer, "alice")).await, Err(VerifyError::Unavailable(_))));
    assert!(verifier.stats().failed >= 1);
}

/// One introspection request as received: its `Authorization` header and its body.
type Seen = Arc<Mutex<Vec<(Option<String>, String)>>>;

/// The introspection endpoint: answers by token, records what it was sent.
struct Introspection {
    url: String,
    seen: Seen,
    status: Arc<Mutex<StatusCode>>,
}

async fn introspection() -> Introspection {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let status = Arc::new(Mutex::new(StatusCode::OK));
    let (s, st) = (seen.clone(), status.clone());
    let route = axum::routing::post(move |headers: HeaderMap, body: String| {
        let (s, st) = (s.clone(), st.clone());
        async move {
            let auth = headers.get("authorization").map(|v| v.to_str().unwrap().to_owned());
            let form_ok = headers.get("content-type").is_some_and(|v| v == "application/x-www-form-urlencoded");
            s.lock().push((auth, body.clone()));
            let token = body.split('&').find_map(|kv| kv.strip_prefix("token=")).unwrap_or("").to_owned();
            let exp = now() + 300;
            let answer = match token.as_str() {
                _ if !form_ok => json!({"error": "invalid_request"}),
                "good%2Ftoken" => {
                    json!({"active": true, "sub": "alice", "client_id": "app", "scope": "mcp:tools files:read",
                                          "aud": [RESOURCE], "iss": "https://as.example", "exp": exp})
                }
                "machine" => json!({"active": true, "client_id": "svc", "aud": RESOURCE, "exp": exp}),
                "old" => json!({"active": true, "sub": "alice", "aud": RESOURCE, "exp": now() - 10}),
                "elsewhere" => json!({"active": true, "sub": "alice", "aud": "https://other.example", "exp": exp}),
                "no-aud" => json!({"active": true, "sub": "alice", "exp": exp}),
                "foreign" => json!({"active": true, "sub": "alice", "aud": RESOURCE, "iss": "https://evil.example"}),
                _ => json!({"active": false}),
            };
            (*st.lock(), [("content-type", "application/json")], answer.to_string())
        }
    });
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route("/introspect", route)).await.unwrap() });
    Introspection { url, seen, status }
}

fn introspection_config(endpoint: &str) -> IntrospectionConfig {
    IntrospectionConfig::new(endpoint, "rs client")
        .client_secret("s3cret:&")
        .issuer("https://as.example")
        .audience(RESOURCE)
}

#[tokio::test]
async fn introspection_posts_the_token_and_maps_the_answer() {
    let endpoint = introspection().await;
    let verifier = IntrospectionVerifier::new(introspection_config(&endpoint.url)).unwrap();
    assert_eq!(verifier.cache_ttl(), Some(Duration::from_secs(60)));
    let p = verifier.verify("good/token").await.unwrap();
    assert_eq!(
        (p.issuer.as_str(), p.subject.as_str(), p.client_id.as_deref()),
        ("https://as.example", "alice", Some("app"))
    );
    assert_eq!(p.scopes.len(), 2);
    assert!(p.expires_at.is_some());
    let (auth, body) = endpoint.seen.lock()[0].clone();
    assert_eq!(body, "token=good%2Ftoken&token_type_hint=access_token");
    let basic = base64::engine::general_purpose::STANDARD.encode("rs+client:s3cret%3A%26");
    assert_eq!(auth.as_deref(), Some(format!("Basic {basic}").as_str()), "client_secret_basic, form-encoded first");
    // Without `iss` in the answer, the configured issuer; without `sub`, the client.
    let machine = verifier.verify("machine").await.unwrap();
    assert_eq!((machine.issuer.as_str(), machine.subject.as_str()), ("https://as.example", "svc"));
}

#[tokio::test]
async fn introspection_refusals_are_typed() {
    let endpoint = introspection().await;
    let verifier = IntrospectionVerifier::new(introspection_config(&endpoint.url)).unwrap();
    assert_eq!(verifier.verify("revoked").await, Err(VerifyError::Invalid("inactive".into())));
    assert_eq!(verifier.verify("old").await, Err(VerifyError::Expired));
    assert!(matches!(verifier.verify("elsewhere").await, Err(VerifyError::Invalid(_))));
    assert!(matches!(verifier.verify("no-aud").await, Err(VerifyError::Invalid(_))), "RFC 8707: no aud, no access");
    assert!(matches!(verifier.verify("foreign").await, Err(VerifyError::Invalid(_))));
    *endpoint.status.lock() = StatusCode::INTERNAL_SERVER_ERROR;
    let err = verifier.verify("good/token").await.unwrap_err();
    assert!(matches!(err, VerifyError::Unavailable(_)));
    assert!(!err.to_string().contains("good"), "no token in the error: {err}");
}

#[tokio::test]
async fn introspection_with_client_secret_post_and_an_unreachable_endpoint() {
    let endpoint = introspection().await;
    let verifier =
        IntrospectionVerifier::new(introspection_config(&endpoint.url).auth_method(IntrospectionAuth::Post)).unwrap();
    assert!(verifier.verify("good/token").await.is_ok());
    let (auth, body) = endpoint.seen.lock()[0].clone();
    assert_eq!(auth, None);
    assert_eq!(body, "token=good%2Ftoken&token_type_hint=access_token&client_id=rs+client&client_secret=s3cret%3A%26");

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gone = IntrospectionVerifier::new(
        introspection_config(&format!("http://127.0.0.1:{port}/introspect")).http_timeout(Duration::from_secs(2)),
    )
    .unwrap();
    let err = gone.verify("secret-token-value").await.unwrap_err();
    assert!(matches!(err, VerifyError::Unavailable(_)));
    assert!(!err.to_string().contains("secret-token-value") && !format!("{gone:?}").contains("s3cret"));
}

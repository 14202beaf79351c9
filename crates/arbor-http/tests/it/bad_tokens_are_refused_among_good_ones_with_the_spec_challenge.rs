//! Authorization negatives under load, with real JWTs (RS256, the test keys in
//! `tests/keys`) checked by the `JwtVerifier` against a key set served on loopback: a
//! seeded mix of POSTs of both eras carrying no token, a malformed one, an expired one,
//! one for another audience, from another issuer, signed by another key, or one lacking
//! a scope, among valid ones, 1,200 POSTs accounted for by the kit's ledger. Each bad one
//! is 401 (`invalid_token`, or no `error` when there was no token) or 403
//! (`insufficient_scope`, naming every scope needed) with `resource_metadata`, no token
//! text is in any answer, every valid call is served, and the counts come back to the
//! baseline.

use std::sync::Arc;
use std::time::SystemTime;

use arbor_http::auth::challenge::parse_challenges;
use arbor_http::auth::{AuthConfig, JwtConfig, JwtVerifier};
use arbor_http::HttpConfig;
use arbor_otp::Gauge;
use arbor_server::ServerConfig;
use futures::StreamExt;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Kind, Ledger};
use tests::kit::Seed;

use crate::kit::{legacy_answer, live, settle};
use crate::support::{serve_with, Served};

const RSA_A: &[u8] = include_bytes!("../keys/rsa-a.der");
const RSA_B: &[u8] = include_bytes!("../keys/rsa-b.der");
const RESOURCE: &str = "https://mcp.example/mcp";

/// What a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Token {
    Valid,
    Missing,
    Malformed,
    Expired,
    WrongAudience,
    WrongIssuer,
    ForeignKey,
    LacksScope,
}

const TOKENS: [Token; 8] = [
    Token::Valid,
    Token::Missing,
    Token::Malformed,
    Token::Expired,
    Token::WrongAudience,
    Token::WrongIssuer,
    Token::ForeignKey,
    Token::LacksScope,
];

fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

/// A JWT signed with `key` (as kid `a`), with claims made of the defaults and `changes`.
fn jwt(key: &[u8], issuer: &str, n: usize, changes: Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("a".into());
    header.typ = Some("at+jwt".into());
    // `jti` makes each token distinct, so the verified-token cache does not answer for it.
    let mut claims = json!({"iss": issuer, "aud": RESOURCE, "sub": "user", "exp": now() + 600,
                            "scope": "mcp calls", "jti": format!("t{n}")});
    for (k, v) in changes.as_object().unwrap() {
        claims[k] = v.clone();
    }
    encode(&header, &claims, &EncodingKey::from_rsa_der(key)).unwrap()
}

/// The `Authorization` value for `token`, drawn for request `n`.
fn authorization(token: Token, issuer: &str, n: usize, rng: &mut tests::kit::Rng) -> Option<String> {
    let bearer = |t: String| Some(format!("Bearer {t}"));
    match token {
        Token::Valid => bearer(jwt(RSA_A, issuer, n, json!({}))),
        Token::Missing => None,
        Token::Malformed => {
            let long = "x".repeat(3000);
            let forms = ["not-a-jwt", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", "e30.e30.e30", "%%%", &long];
            bearer(forms[rng.usize(..forms.len())].to_owned())
        }
        Token::Expired => bearer(jwt(RSA_A, issuer, n, json!({"exp": now() - 3600}))),
        Token::WrongAudience => bearer(jwt(RSA_A, issuer, n, json!({"aud": "https://other.example/mcp"}))),
        Token::WrongIssuer => bearer(jwt(RSA_A, "https://other-issuer.example", n, json!({}))),
        Token::ForeignKey => bearer(jwt(RSA_B, issuer, n, json!({}))),
        Token::LacksScope => bearer(jwt(RSA_A, issuer, n, json!({"scope": "mcp"}))),
    }
}

/// Serves the public half of `rsa-a` as a JWKS on loopback; returns its URL.
async fn key_set() -> String {
    let key = EncodingKey::from_rsa_der(RSA_A);
    let mut jwk = serde_json::to_value(Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap()).unwrap();
    jwk["kid"] = json!("a");
    jwk["use"] = json!("sig");
    let body = json!({"keys": [jwk]}).to_string();
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A POST of a `fault` call: stateless (`session` none) or in a session.
fn call(served: &Served, session: Option<&str>, id: usize, auth: Option<&str>) -> reqwest::RequestBuilder {
    let arguments = json!({"fault": "none"});
    let request = match session {
        None => served.modern(id as i64, "tools/call", json!({"name": "fault", "arguments": arguments}), &[]),
        Some(session) => {
            served.post(&tests::kit::peer::call(&json!(id), "fault", arguments), &[("mcp-session-id", session)])
        }
    };
    match auth {
        Some(value) => request.header("authorization", value),
        None => request,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_get_401_or_403_with_their_challenge_and_valid_ones_are_served() {
    let name = "authorization negatives under load";
    let seed = Seed::for_test(name);
    let issuer = "https://as.example";
    let jwks = key_set().await;
    let verifier = JwtVerifier::start(JwtConfig::new(issuer, RESOURCE).jwks_uri(jwks)).await.expect("the verifier");
    let auth = AuthConfig::new(RESOURCE, issuer, verifier.clone())
        .required_scopes(["mcp"])
        .method_scopes("tools/call", ["calls"]);
    let served = serve_with(ServerConfig::default().gauge(Gauge::new()), HttpConfig::default().auth(auth)).await;
    let mut warm = seed.rng(u64::MAX);
    // Warm every shard of the endpoint pool, and open the sessions, before the baseline.
    for n in 0..8 {
        let value = authorization(Token::Valid, issuer, n, &mut warm);
        assert_eq!(call(&served, None, n, value.as_deref()).send().await.unwrap().status(), 200);
    }
    let mut sessions = Vec::new();
    for n in 0..3 {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
        let value = authorization(Token::Valid, issuer, 100 + n, &mut warm).unwrap();
        let response = served.post(&init, &[]).header("authorization", &value).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = served.post(&initialized, &[("mcp-session-id", &session)]).header("authorization", &value);
        assert_eq!(r.send().await.unwrap().status(), 202);
        sessions.push(session);
    }
    let baseline = live(&served).await;
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let counts = Arc::new(Mutex::new(std::collections::HashMap::<Token, usize>::new()));
    let mut rng = seed.rng(0);
    let plan: Vec<(usize, Token)> =
        (0..1200).map(|_| (rng.usize(..=sessions.len()), TOKENS[rng.usize(..TOKENS.len())])).collect();
    let (served_ref, sessions_ref) = (&served, &sessions);
    let posts = plan.into_iter().enumerate().map(|(n, (conn, token))| {
        let (ledger, counts, mut rng) = (ledger.clone(), counts.clone(), seed.rng(1 + n as u64));
        async move {
            *counts.lock().entry(token).or_default() += 1;
            let id = 1000 + n;
            let value = authorization(token, issuer, id, &mut rng);
            let session = (conn > 0).then(|| sessions_ref[conn - 1].as_str());
            let response = call(served_ref, session, id, value.as_deref()).send().await.expect("answered");
            let status = response.status().as_u16();
            let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
            let answer = legacy_answer(response).await.expect("a JSON-RPC answer");
            let what = format!("{token:?} on conn {conn}: {status} {challenge:?} {answer}");
            if let Some(value) = &value {
                let secret = value.trim_start_matches("Bearer ");
                // The whole token, and each of a JWT's parts (the signature above all).
                for part in std::iter::once(secret).chain(secret.split('.').filter(|p| p.len() > 8)) {
                    let seen =
                        answer.to_string().contains(part) || challenge.as_deref().is_some_and(|c| c.contains(part));
                    assert!(!seen, "token text in the answer: {what}");
                }
            }
            if token == Token::Valid {
                ledger.lock().sent(conn, &json!(id), &[Kind::Result]);
                assert_eq!(status, 200, "{what}");
                ledger.lock().received(conn, &answer);
                return;
            }
            // Refused by the authenticator (before the body is read) or by the scope policy
            // (after the parse): neither answer carries the id.
            ledger.lock().sent(conn, &Value::Null, &[Kind::Error(-32000)]);
            let parsed = parse_challenges(challenge.as_deref().unwrap_or_else(|| panic!("a challenge: {what}")));
            let parsed = parsed.unwrap_or_else(|| panic!("a well-formed challenge: {what}"));
            assert_eq!(parsed.len(), 1, "{what}");
            let param = |name: &str| parsed[0].param(name).map(str::to_owned);
            assert_eq!(parsed[0].scheme, "Bearer", "{what}");
            assert!(param("resource_metadata").is_some(), "{what}");
            match token {
                Token::Missing => assert_eq!((status, param("error")), (401, None), "{what}"),
                Token::LacksScope => {
                    assert_eq!(status, 403, "{what}");
                    assert_eq!(param("error").as_deref(), Some("insufficient_scope"), "{what}");
                    assert_eq!(param("scope").as_deref(), Some("calls mcp"), "every scope needed: {what}");
                }
                _ => assert_eq!((status, param("error").as_deref()), (401, Some("invalid_token")), "{what}"),
            }
            ledger.lock().received(conn, &answer);
        }
    });
    futures::stream::iter(posts).buffer_unordered(32).collect::<Vec<()>>().await;
    println!("[kit] {name}: tokens {:?}", counts.lock());
    assert_eq!(counts.lock().len(), TOKENS.len(), "every kind of token was sent");
    let after = settle(&served, baseline).await;
    let summary = Arc::try_unwrap(ledger).expect("the posts are done").into_inner().finish(baseline, after);
    assert!(summary.outcomes.get(&Kind::Result).is_some_and(|n| *n > 0), "{summary}");
    served.finish().await;
    verifier.shutdown().await;
}

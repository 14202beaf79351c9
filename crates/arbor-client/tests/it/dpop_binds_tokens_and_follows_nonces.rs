//! DPoP (RFC 9449) from the client's side, where the conformance scenarios (`auth/dpop`,
//! `auth/dpop-nonce`) do not look: a refresh of a bound token carries a proof with the
//! authorization server's nonce, a resource server's nonce rotated on every answer is
//! followed, every proof verifies against the key the token is bound to, in both eras;
//! a server that requires DPoP from an authorization server without it is refused before
//! any authorization; a server that never takes a nonce ends the call with an error.
//!
//! The authorization server and the resource server's DPoP check are written here, in
//! front of a real Arbor server (`arbor-http`'s router): they verify each proof
//! (signature, `typ`, `htm`, `htu`, `ath`, the key's thumbprint against the token's
//! binding, `jti` unique) and record what they saw.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arbor_client::auth::{ClientCredentials, HeadlessUserAgent, OAuth};
use arbor_client::{Client, ClientOptions, EraMode, HttpTarget};
use arbor_http::HttpServer;
use arbor_server::router::NoArgs;
use arbor_server::{Router, Server};
use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json};
use base64::Engine;
use parking_lot::Mutex;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;
const AS_NONCE: &str = "as-nonce-1";

/// How the servers behave.
#[derive(Clone, Copy)]
struct Rules {
    /// The authorization server offers ES256 DPoP.
    as_offers_dpop: bool,
    /// The resource server sends a new nonce with every answer and wants the newest.
    rotate_rs_nonce: bool,
    /// The resource server refuses every nonce (always asks for a new one).
    never_accept_nonce: bool,
}

#[derive(Default)]
struct Seen {
    /// (grant_type, nonce in the proof) of every token request with a valid proof.
    token_requests: Vec<(String, Option<String>)>,
    authorize_hits: usize,
    /// Proofs the resource server verified, with the method.
    rs_proofs: Vec<String>,
    jtis: HashSet<String>,
    failures: Vec<String>,
    refused_nonce: usize,
    /// Tokens and the key thumbprint each is bound to.
    bound: HashMap<String, String>,
    issued: usize,
    rs_nonce: usize,
    /// The first token was refused once as expired.
    expired_once: bool,
}

struct Mock {
    base: String,
    rules: Rules,
    seen: Mutex<Seen>,
}

/// Verifies a proof for `method url` (and `token`): its thumbprint, nonce.
fn verify(
    proof: &str,
    method: &str,
    url: &str,
    token: Option<&str>,
) -> Result<(String, Option<String>, String), String> {
    let parts: Vec<&str> = proof.split('.').collect();
    let [h, c, s] = parts[..] else { return Err("not a compact JWS".into()) };
    let header: Value =
        serde_json::from_slice(&B64.decode(h).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let claims: Value =
        serde_json::from_slice(&B64.decode(c).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" || header["jwk"].get("d").is_some() {
        return Err(format!("bad header {header}"));
    }
    let (x, y) = (header["jwk"]["x"].as_str().unwrap_or(""), header["jwk"]["y"].as_str().unwrap_or(""));
    let mut point = vec![4u8];
    point.extend(B64.decode(x).map_err(|e| e.to_string())?);
    point.extend(B64.decode(y).map_err(|e| e.to_string())?);
    let signature = B64.decode(s).map_err(|e| e.to_string())?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{h}.{c}").as_bytes(), &signature)
        .map_err(|_| "the signature does not verify".to_owned())?;
    if claims["htm"] != method || claims["htu"] != url {
        return Err(format!("htm/htu {} {} for {method} {url}", claims["htm"], claims["htu"]));
    }
    let ath = token.map(|t| B64.encode(Sha256::digest(t.as_bytes())));
    if claims.get("ath").and_then(Value::as_str).map(str::to_owned) != ath {
        return Err("ath is not the token's hash".into());
    }
    let jkt = B64.encode(Sha256::digest(format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#)));
    let nonce = claims.get("nonce").and_then(Value::as_str).map(str::to_owned);
    Ok((jkt, nonce, claims["jti"].as_str().unwrap_or_default().to_owned()))
}

fn oauth_error(status: StatusCode, error: &str, nonce: Option<&str>) -> Response {
    let mut response = (status, Json(json!({"error": error}))).into_response();
    if let Some(n) = nonce {
        response.headers_mut().insert("dpop-nonce", n.parse().unwrap());
    }
    response
}

async fn token(
    State(m): State<Arc<Mock>>,
    headers: axum::http::HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    let Some(proof) = headers.get("dpop").and_then(|v| v.to_str().ok()) else {
        if m.rules.as_offers_dpop {
            m.seen.lock().failures.push(format!("{grant}: token request without a proof"));
        }
        return Json(json!({"access_token": "bearer-token", "token_type": "Bearer", "expires_in": 3600}))
            .into_response();
    };
    let (jkt, nonce, jti) = match verify(proof, "POST", &format!("{}/token", m.base), None) {
        Ok(v) => v,
        Err(e) => {
            m.seen.lock().failures.push(format!("token proof: {e}"));
            return oauth_error(StatusCode::BAD_REQUEST, "invalid_dpop_proof", None);
        }
    };
    let mut seen = m.seen.lock();
    if !seen.jtis.insert(jti) {
        seen.failures.push("a token proof's jti was reused".into());
    }
    seen.token_requests.push((grant.clone(), nonce.clone()));
    if nonce.as_deref() != Some(AS_NONCE) {
        return oauth_error(StatusCode::BAD_REQUEST, "use_dpop_nonce", Some(AS_NONCE));
    }
    seen.issued += 1;
    let access = format!("dpop-token-{}", seen.issued);
    seen.bound.insert(access.clone(), jkt);
    let mut response =
        Json(json!({"access_token": access, "token_type": "DPoP", "expires_in": 3600, "refresh_token": "refresh-1"}))
            .into_response();
    response.headers_mut().insert("dpop-nonce", AS_NONCE.parse().unwrap());
    response
}

/// The resource server's check in front of the MCP endpoint.
async fn resource(State(m): State<Arc<Mock>>, request: Request, next: Next) -> Response {
    let url = format!("{}/mcp", m.base);
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", m.base);
    let challenge = |error: Option<&str>| {
        let error = error.map(|e| format!("error=\"{e}\", ")).unwrap_or_default();
        format!("DPoP {error}algs=\"ES256\", resource_metadata=\"{metadata}\"")
    };
    let refuse = |error: Option<&str>, nonce: Option<String>| {
        let mut response = StatusCode::UNAUTHORIZED.into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(error).parse().unwrap());
        if let Some(n) = nonce {
            response.headers_mut().insert("dpop-nonce", n.parse().unwrap());
        }
        response
    };
    let authorization = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let Some(authorization) = authorization else { return refuse(None, None) };
    let Some(token) = authorization.strip_prefix("DPoP ").map(str::to_owned) else {
        m.seen.lock().failures.push(format!("sent with another scheme: {authorization:.7}"));
        return refuse(Some("invalid_token"), None);
    };
    let method = request.method().as_str().to_owned();
    let proof = request.headers().get("dpop").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let fresh_nonce;
    {
        let mut seen = m.seen.lock();
        let (jkt, nonce, jti) = match verify(&proof, &method, &url, Some(&token)) {
            Ok(v) => v,
            Err(e) => {
                seen.failures.push(format!("{method} proof: {e}"));
                return refuse(Some("invalid_dpop_proof"), None);
            }
        };
        if seen.bound.get(&token) != Some(&jkt) {
            seen.failures.push("the proof's key is not the one the token is bound to".into());
        }
        if !seen.jtis.insert(jti) {
            seen.failures.push("a proof's jti was reused".into());
        }
        // The newest nonce, or the one before it (a request sent while another's answer
        // was rotating it), as servers allow.
        let fits = |n: usize| nonce.as_deref() == Some(format!("rs-nonce-{n}").as_str());
        let fresh = fits(seen.rs_nonce) || (seen.rs_nonce > 0 && fits(seen.rs_nonce - 1));
        if m.rules.never_accept_nonce || !fresh {
            seen.refused_nonce += 1;
            seen.rs_nonce += usize::from(m.rules.never_accept_nonce);
            return refuse(Some("use_dpop_nonce"), Some(format!("rs-nonce-{}", seen.rs_nonce)));
        }
        seen.rs_proofs.push(method.clone());
        if token == "dpop-token-1" && method == "POST" && !seen.expired_once && seen.rs_proofs.len() > 2 {
            seen.expired_once = true;
            return refuse(Some("invalid_token"), None);
        }
        seen.rs_nonce += usize::from(m.rules.rotate_rs_nonce);
        fresh_nonce = format!("rs-nonce-{}", seen.rs_nonce);
    }
    let mut response = next.run(request).await;
    response.headers_mut().insert("dpop-nonce", fresh_nonce.parse().unwrap());
    response
}

async fn serve(rules: Rules) -> (Arc<Mock>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mock = Arc::new(Mock { base: base.clone(), rules, seen: Mutex::new(Seen::default()) });
    let router = Router::new("dpop", "1.0.0").tool("ping", "Answers pong", |_: NoArgs| async { "pong" });
    let mcp = HttpServer::new(Server::new(router))
        .router()
        .layer(axum::middleware::from_fn_with_state(mock.clone(), resource));
    let b = base.clone();
    let as_offers = rules.as_offers_dpop;
    let oauth =
        axum::Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(move || {
                    let b = b.clone();
                    async move {
                        Json(json!({
                            "resource": format!("{b}/mcp"),
                            "authorization_servers": [b],
                            "dpop_bound_access_tokens_required": true,
                            "dpop_signing_alg_values_supported": ["ES256"],
                        }))
                    }
                }),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get({
                    let b = base.clone();
                    move || {
                        let b = b.clone();
                        async move {
                            let mut doc = json!({
                                "issuer": b,
                                "authorization_endpoint": format!("{b}/authorize"),
                                "token_endpoint": format!("{b}/token"),
                                "response_types_supported": ["code"],
                                "code_challenge_methods_supported": ["S256"],
                                "token_endpoint_auth_methods_supported": ["none"],
                            });
                            if as_offers {
                                doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
                            }
                            Json(doc)
                        }
                    }
                }),
            )
            .route(
                "/authorize",
                get(
                    |State(m): State<Arc<Mock>>,
                     axum::extract::Query(q): axum::extract::Query<HashMap<String, String>>| async move {
                        m.seen.lock().authorize_hits += 1;
                        let to = format!("{}?code=code-1&state={}&iss={}", q["redirect_uri"], q["state"], m.base);
                        (StatusCode::FOUND, [(header::LOCATION, to)])
                    },
                ),
            )
            .route("/token", post(token))
            .with_state(mock.clone());
    let app = oauth.merge(mcp);
    let run = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (mock, run)
}

fn oauth() -> OAuth {
    OAuth::authorization_code("dpop-test", "http://localhost:3000/callback", HeadlessUserAgent::new())
        .preregistered(ClientCredentials { client_id: "dpop-client".into(), client_secret: None, issuer: None })
        .allow_http_loopback()
}

async fn connect(mock: &Mock, era: EraMode) -> Result<Client, arbor_client::ConnectError> {
    let target = HttpTarget::new(format!("{}/mcp", mock.base)).oauth(oauth());
    Client::connect_http(target, ClientOptions::new("dpop-test", "1.0.0").era(era)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_token_carries_a_fresh_proof_everywhere_and_follows_both_servers_nonces() {
    for era in [EraMode::ForceLegacy, EraMode::ForceModern] {
        let rules = Rules { as_offers_dpop: true, rotate_rs_nonce: true, never_accept_nonce: false };
        let (mock, run) = serve(rules).await;
        let client = connect(&mock, era).await.expect("connects with a DPoP-bound token");
        for _ in 0..3 {
            let answer = client.call_tool("ping", json!({})).await.expect("called");
            assert_eq!(answer.text(), "pong", "{era:?}");
        }
        client.close().await;
        let seen = mock.seen.lock();
        assert!(seen.failures.is_empty(), "{era:?}: {:?}", seen.failures);
        // The code exchange: refused once for the nonce, then sent with it; the refresh
        // after the resource server called the token expired: with the nonce at once.
        let grants: Vec<(&str, Option<&str>)> =
            seen.token_requests.iter().map(|(g, n)| (g.as_str(), n.as_deref())).collect();
        assert_eq!(
            grants,
            [("authorization_code", None), ("authorization_code", Some(AS_NONCE)), ("refresh_token", Some(AS_NONCE))],
            "{era:?}"
        );
        assert!(seen.expired_once, "{era:?}: the expiry was seen");
        assert_eq!(seen.issued, 2, "{era:?}: one token from the code, one from the refresh");
        // Every accepted request carried a fresh nonce; only the first, without one, was
        // refused for it (each answer rotated it).
        assert_eq!(seen.refused_nonce, 1, "{era:?}: the nonce was followed as it rotated");
        assert!(seen.rs_proofs.iter().filter(|m| *m == "POST").count() >= 4, "{era:?}: {:?}", seen.rs_proofs);
        drop(seen);
        run.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_required_from_an_authorization_server_without_it_is_refused_before_authorizing() {
    let rules = Rules { as_offers_dpop: false, rotate_rs_nonce: false, never_accept_nonce: false };
    let (mock, run) = serve(rules).await;
    let error = match connect(&mock, EraMode::ForceModern).await {
        Ok(_) => panic!("connected with a bearer token where DPoP is required"),
        Err(e) => format!("{e}"),
    };
    assert!(error.contains("DPoP") && error.contains("offers no ES256 DPoP"), "{error}");
    let seen = mock.seen.lock();
    assert_eq!(seen.authorize_hits, 0, "no authorization request");
    assert!(seen.token_requests.is_empty(), "no token request");
    drop(seen);
    run.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_takes_a_nonce_ends_the_request_with_an_error() {
    let rules = Rules { as_offers_dpop: true, rotate_rs_nonce: false, never_accept_nonce: true };
    let (mock, run) = serve(rules).await;
    let error = match connect(&mock, EraMode::ForceModern).await {
        Ok(_) => panic!("connected although every proof was refused"),
        Err(e) => format!("{e}"),
    };
    assert!(error.contains("nonce"), "{error}");
    let seen = mock.seen.lock();
    // Per request: one token obtained, then at most MAX_NONCE_RETRIES (2) nonce retries.
    assert!(seen.refused_nonce <= 3, "bounded: {} refusals", seen.refused_nonce);
    assert!(seen.failures.is_empty(), "{:?}", seen.failures);
    drop(seen);
    run.abort();
}

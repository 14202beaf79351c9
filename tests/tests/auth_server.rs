//! Self-test of `tests::auth_server`: the real authorization server starts, issues an RFC
//! 9068 JWT access token for a loopback resource by client credentials, and its admin
//! routes rotate keys, take the JWKS down and count JWKS requests.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tests::auth_server::{jwt_parts, AuthServer};

const RESOURCE: &str = "http://127.0.0.1:4321/mcp";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[test]
fn client_credentials_token_is_an_rfc_9068_jwt_for_the_resource() {
    let server = AuthServer::start();
    let issuer = server.issuer().to_string();
    assert!(issuer.starts_with("http://127.0.0.1:") && !issuer.ends_with('/'), "{issuer}");

    // Discovery at both well-known paths, the same document.
    let oidc = server.get("/.well-known/openid-configuration").json();
    let oauth = server.get("/.well-known/oauth-authorization-server").json();
    assert_eq!(oidc, oauth);
    assert_eq!(oidc["issuer"], issuer.as_str());
    assert!(oidc["code_challenge_methods_supported"].as_array().unwrap().contains(&Value::from("S256")), "{oidc}");
    assert!(oidc["registration_endpoint"].is_string(), "{oidc}");
    assert_eq!(oidc["token_endpoint"], server.token_endpoint().as_str());
    assert_eq!(oidc["jwks_uri"], server.jwks_uri().as_str());
    assert_eq!(oidc["introspection_endpoint"], server.introspection_endpoint().as_str());

    let token = server.client_credentials("client-a", "secret-a", RESOURCE, "mcp:tools files:read");
    let (header, payload) = jwt_parts(&token);
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert_eq!(header["alg"], "RS256", "{header}");
    let kid = header["kid"].as_str().expect("a kid").to_string();
    let keys = server.signing_keys();
    assert!(
        keys.iter().any(|k| k.kid == kid && k.alg == "RS256" && k.pem.starts_with("-----BEGIN PRIVATE KEY-----")),
        "{keys:?}"
    );

    assert_eq!(payload["iss"], issuer.as_str(), "{payload}");
    assert_eq!(payload["aud"], RESOURCE, "{payload}");
    assert_eq!(payload["sub"], "client-a", "{payload}");
    assert_eq!(payload["client_id"], "client-a", "{payload}");
    assert_eq!(payload["scope"], "mcp:tools files:read", "{payload}");
    let exp = payload["exp"].as_u64().expect("exp");
    let iat = payload["iat"].as_u64().expect("iat");
    assert!(iat <= now() + 5 && exp > now() && exp <= now() + 3700, "iat {iat} exp {exp} now {}", now());
    assert!(payload["jti"].is_string(), "{payload}");

    // The JWKS publishes the kid; the GET is counted.
    let before = server.jwks_requests();
    let jwks = server.get("/jwks").json();
    assert!(jwks["keys"].as_array().unwrap().iter().any(|k| k["kid"] == kid.as_str()), "{jwks}");
    assert!(jwks["keys"].as_array().unwrap().iter().all(|k| k.get("d").is_none()), "private parts in the JWKS: {jwks}");
    assert_eq!(server.jwks_requests(), before + 1);

    // Introspection (RFC 7662): oidc-provider refuses its JWT access tokens there; the
    // opaque client's tokens are introspectable.
    let opaque = server.client_credentials("client-opaque", "secret-opaque", RESOURCE, "mcp:tools");
    assert_eq!(opaque.matches('.').count(), 0, "not opaque: {opaque}");
    let info = server.introspect("client-b", "secret-b", &opaque);
    assert_eq!(info["active"], true, "{info}");
    assert_eq!(info["client_id"], "client-opaque", "{info}");
    assert_eq!(info["aud"], RESOURCE, "{info}");
    assert_eq!(info["scope"], "mcp:tools", "{info}");
    assert_eq!(info["iss"], issuer.as_str(), "{info}");
    assert_eq!(server.introspect("client-b", "secret-b", "not-a-token")["active"], false);

    // Another client, client_secret_basic too; a localhost resource.
    let other = server.client_credentials("client-b", "secret-b", "http://localhost:9/x", "mcp:read");
    let (_, payload) = jwt_parts(&other);
    assert_eq!(payload["sub"], "client-b");
    assert_eq!(payload["aud"], "http://localhost:9/x");

    // Refusals: a non-loopback resource, a wrong secret, an unknown scope is dropped.
    let refused = server.try_client_credentials("client-a", "secret-a", "https://evil.example/mcp", "mcp:tools");
    assert_eq!(refused.status, 400, "{}", String::from_utf8_lossy(&refused.body));
    assert_eq!(refused.json()["error"], "invalid_target");
    let refused = server.try_client_credentials("client-a", "wrong", RESOURCE, "mcp:tools");
    assert_eq!(refused.status, 401);
    let narrowed = server.try_client_credentials("client-a", "secret-a", RESOURCE, "mcp:tools admin:all").json();
    assert_eq!(narrowed["scope"], "mcp:tools", "{narrowed}");
}

#[test]
fn rotation_changes_the_kid_and_keeps_the_old_key_until_dropped() {
    let server = AuthServer::start();
    let first = server.client_credentials("client-a", "secret-a", RESOURCE, "mcp:tools");
    let old_kid = jwt_parts(&first).0["kid"].as_str().unwrap().to_string();

    let kids = server.rotate(false);
    let second = server.client_credentials("client-a", "secret-a", RESOURCE, "mcp:tools");
    let new_kid = jwt_parts(&second).0["kid"].as_str().unwrap().to_string();
    assert_ne!(new_kid, old_kid);
    assert_eq!(kids[0], new_kid, "{kids:?}");
    assert!(kids.contains(&old_kid), "{kids:?}");
    let published: Vec<String> = server.get("/jwks").json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_string())
        .collect();
    assert!(published.contains(&old_kid) && published.contains(&new_kid), "{published:?}");
    assert_eq!(server.signing_keys().len(), 4, "two generations of RS256 + ES256");
    assert_eq!(server.signing_keys()[0].kid, new_kid);
    // An opaque token issued before a swap is still known after it (shared storage).
    let opaque = server.client_credentials("client-opaque", "secret-opaque", RESOURCE, "mcp:tools");
    server.rotate(false);
    assert_eq!(server.introspect("client-b", "secret-b", &opaque)["active"], true);

    let kids = server.rotate(true);
    assert_eq!(kids.len(), 2, "{kids:?}");
    let published: Vec<String> = server.get("/jwks").json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_string())
        .collect();
    assert!(!published.contains(&old_kid) && !published.contains(&new_kid), "{published:?}");
    let third = server.client_credentials("client-a", "secret-a", RESOURCE, "mcp:tools");
    assert_eq!(jwt_parts(&third).0["kid"], kids[0].as_str());
}

#[test]
fn jwks_outage_answers_503_and_is_counted() {
    let server = AuthServer::start();
    let before = server.jwks_requests();
    server.jwks_down(true);
    assert_eq!(server.get("/jwks").status, 503);
    // Tokens are still issued while the JWKS is down.
    server.client_credentials("client-a", "secret-a", RESOURCE, "mcp:tools");
    server.jwks_down(false);
    let jwks = server.get("/jwks");
    assert_eq!(jwks.status, 200);
    assert_eq!(jwks.header("cache-control"), None);
    server.jwks_max_age(Some(300));
    assert_eq!(server.get("/jwks").header("cache-control"), Some("public, max-age=300"));
    server.jwks_max_age(None);
    assert_eq!(server.get("/jwks").header("cache-control"), None);
    assert_eq!(server.jwks_requests(), before + 4);
}

#[test]
fn dynamic_registration_is_open_and_can_ask_for_es256_tokens() {
    let server = AuthServer::start();
    let metadata = serde_json::json!({
        "client_name": "es256 test client",
        "redirect_uris": ["http://127.0.0.1:5555/callback"],
        "grant_types": ["client_credentials"],
        "response_types": [],
        "token_endpoint_auth_method": "client_secret_basic",
        "access_token_signed_response_alg": "ES256",
    });
    let body = serde_json::to_vec(&metadata).unwrap();
    let registered = server.request("POST", "/reg", &[], Some(("application/json", &body)));
    assert_eq!(registered.status, 201, "{}", String::from_utf8_lossy(&registered.body));
    let client = registered.json();
    let (id, secret) = (client["client_id"].as_str().unwrap(), client["client_secret"].as_str().unwrap());
    let token = server.client_credentials(id, secret, RESOURCE, "mcp:tools");
    let (header, payload) = jwt_parts(&token);
    assert_eq!(header["alg"], "ES256", "{header}");
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert_eq!(payload["sub"], id);
    let es256 = server.signing_keys().into_iter().find(|k| k.alg == "ES256").unwrap();
    assert_eq!(header["kid"], es256.kid.as_str());
}

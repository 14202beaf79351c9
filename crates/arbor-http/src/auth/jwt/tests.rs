//! The verifier's checks with real RS256/ES256 keys (tests/keys), the key set served by a
//! scripted fetch: each refusal typed, and the alg-confusion and `alg: none` attacks.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

use super::*;
use crate::auth::jwks::tests::Script;

const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "https://mcp.example/mcp";

const RSA_A: &[u8] = include_bytes!("../../../tests/keys/rsa-a.der");
const RSA_A_PUB_PEM: &[u8] = include_bytes!("../../../tests/keys/rsa-a.pub.pem");
const RSA_B: &[u8] = include_bytes!("../../../tests/keys/rsa-b.der");
const EC_A: &[u8] = include_bytes!("../../../tests/keys/ec-a.der");

fn rsa(der: &[u8]) -> EncodingKey {
    super::ensure_crypto_provider();
    EncodingKey::from_rsa_der(der)
}

fn ec(der: &[u8]) -> EncodingKey {
    super::ensure_crypto_provider();
    EncodingKey::from_ec_der(der)
}

/// The public JWK of `key` with `kid`, declaring `alg` if given.
fn jwk(key: &EncodingKey, signing: Algorithm, kid: &str, declare: bool) -> Value {
    let mut jwk = serde_json::to_value(Jwk::from_encoding_key(key, signing).unwrap()).unwrap();
    jwk["kid"] = json!(kid);
    if !declare {
        jwk.as_object_mut().unwrap().remove("alg");
    }
    jwk
}

fn set(keys: Vec<Value>) -> Vec<u8> {
    json!({ "keys": keys }).to_string().into_bytes()
}

fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 600, "iat": now(), "client_id": "app", "scope": "mcp:tools files:read"})
}

fn sign(alg: Algorithm, kid: Option<&str>, typ: Option<&str>, claims: &Value, key: &EncodingKey) -> String {
    // Signing comes before any verifier starts; with both backend features on, jsonwebtoken
    // needs its provider chosen first.
    super::ensure_crypto_provider();
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    header.typ = typ.map(str::to_owned);
    encode(&header, claims, key).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The standard set: RSA key `rsa-a` (RS256 declared) and EC key `ec-a`.
fn standard_set() -> Vec<u8> {
    set(vec![jwk(&rsa(RSA_A), Algorithm::RS256, "rsa-a", true), jwk(&ec(EC_A), Algorithm::ES256, "ec-a", false)])
}

async fn verifier_with(config: JwtConfig, body: Vec<u8>) -> JwtVerifier {
    let (script, _) = Script::new(body, None);
    JwtVerifier::with_fetcher(config, script).await.unwrap()
}

async fn verifier() -> JwtVerifier {
    verifier_with(JwtConfig::new(ISSUER, RESOURCE), standard_set()).await
}

fn rs(claims: &Value) -> String {
    sign(Algorithm::RS256, Some("rsa-a"), Some("at+jwt"), claims, &rsa(RSA_A))
}

/// Asserts the refusal, and that its text holds no part of the token's signature.
async fn refused(v: &JwtVerifier, token: &str) -> VerifyError {
    let err = v.verify(token).await.expect_err("the token must be refused");
    let signature = token.rsplit('.').next().unwrap_or("");
    if signature.len() > 8 {
        assert!(!err.to_string().contains(signature) && !format!("{err:?}").contains(signature));
    }
    err
}

#[tokio::test]
async fn rs256_and_es256_tokens_give_their_principal() {
    let v = verifier().await;
    let given = claims();
    let p = v.verify(&rs(&given)).await.unwrap();
    assert_eq!((p.issuer.as_str(), p.subject.as_str(), p.client_id.as_deref()), (ISSUER, "alice", Some("app")));
    assert_eq!(p.scopes.iter().map(String::as_str).collect::<Vec<_>>(), ["files:read", "mcp:tools"]);
    let exp = given["exp"].as_u64().unwrap();
    assert_eq!(p.expires_at, Some(SystemTime::UNIX_EPOCH + Duration::from_secs(exp)));
    assert_eq!(p.claim("iat"), given.get("iat"));

    let mut c = claims();
    c["aud"] = json!(["https://other.example", RESOURCE]);
    c.as_object_mut().unwrap().remove("client_id");
    c.as_object_mut().unwrap().remove("scope");
    c["azp"] = json!("spa");
    c["scp"] = json!(["a", "b"]);
    let p = v.verify(&sign(Algorithm::ES256, Some("ec-a"), None, &c, &ec(EC_A))).await.unwrap();
    assert_eq!(p.client_id.as_deref(), Some("spa"), "azp when client_id is absent");
    assert_eq!(p.scopes.len(), 2);
    assert_eq!(v.stats().keys, 2);
}

#[tokio::test]
async fn hs256_signed_with_the_public_key_is_refused() {
    let v = verifier().await;
    let public = jwk(&rsa(RSA_A), Algorithm::RS256, "rsa-a", true);
    let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(public["n"].as_str().unwrap()).unwrap();
    let whole = public.to_string();
    let secrets: [&[u8]; 4] = [RSA_A_PUB_PEM, &n, public["n"].as_str().unwrap().as_bytes(), whole.as_bytes()];
    for secret in secrets {
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            for kid in [Some("rsa-a"), None] {
                let token = sign(alg, kid, Some("at+jwt"), &claims(), &EncodingKey::from_secret(secret).unwrap());
                assert!(matches!(refused(&v, &token).await, VerifyError::Invalid(_)), "{alg:?} with the public key");
            }
        }
    }
    // And no configuration can let HMAC in.
    for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
        let config = JwtConfig::new(ISSUER, RESOURCE).algorithms([Algorithm::RS256, alg]);
        let (script, _) = Script::new(standard_set(), None);
        assert_eq!(JwtVerifier::with_fetcher(config, script).await.err(), Some(JwtConfigError::HmacAlgorithm(alg)));
    }
}

#[tokio::test]
async fn alg_none_is_refused() {
    let v = verifier().await;
    let body = b64(claims().to_string().as_bytes());
    for header in
        [json!({"alg": "none"}), json!({"alg": "none", "typ": "at+jwt", "kid": "rsa-a"}), json!({"alg": "None"})]
    {
        let unsigned = format!("{}.{body}.", b64(header.to_string().as_bytes()));
        assert!(matches!(refused(&v, &unsigned).await, VerifyError::Invalid(_)));
        // With a signature borrowed from a real token, too.
        let real = rs(&claims());
        let forged = format!("{}.{body}.{}", b64(header.to_string().as_bytes()), real.rsplit('.').next().unwrap());
        assert!(matches!(refused(&v, &forged).await, VerifyError::Invalid(_)));
    }
}

#[tokio::test]
async fn a_key_verifies_only_the_algorithms_it_fits() {
    let config = JwtConfig::new(ISSUER, RESOURCE).algorithms([Algorithm::RS256, Algorithm::PS256, Algorithm::ES256]);
    let v = verifier_with(config, standard_set()).await;
    // ES256 naming the RSA key, RS256 naming the EC key.
    let es_on_rsa = sign(Algorithm::ES256, Some("rsa-a"), None, &claims(), &ec(EC_A));
    assert!(matches!(refused(&v, &es_on_rsa).await, VerifyError::Invalid(_)));
    let rs_on_ec = sign(Algorithm::RS256, Some("ec-a"), None, &claims(), &rsa(RSA_A));
    assert!(matches!(refused(&v, &rs_on_ec).await, VerifyError::Invalid(_)));
    // rsa-a declares RS256: a PS256 token signed by the very same key is refused.
    let ps = sign(Algorithm::PS256, Some("rsa-a"), None, &claims(), &rsa(RSA_A));
    assert!(matches!(refused(&v, &ps).await, VerifyError::Invalid(_)));
    // An algorithm outside the allowlist, even with a fitting key.
    let rs384 = sign(Algorithm::RS384, Some("rsa-a"), None, &claims(), &rsa(RSA_A));
    assert!(matches!(refused(&v, &rs384).await, VerifyError::Invalid(_)));
    // Another key's signature under rsa-a's kid.
    let other = sign(Algorithm::RS256, Some("rsa-a"), None, &claims(), &rsa(RSA_B));
    assert_eq!(refused(&v, &other).await, VerifyError::Invalid("the signature does not verify".into()));
}

#[tokio::test]
async fn typ_must_be_an_access_token_type() {
    let lax = verifier().await;
    let strict = verifier_with(JwtConfig::new(ISSUER, RESOURCE).strict_typ(true), standard_set()).await;
    for typ in [Some("at+jwt"), Some("application/at+jwt"), Some("AT+JWT")] {
        let token = sign(Algorithm::RS256, Some("rsa-a"), typ, &claims(), &rsa(RSA_A));
        assert!(lax.verify(&token).await.is_ok() && strict.verify(&token).await.is_ok(), "{typ:?}");
    }
    for typ in [Some("JWT"), None] {
        let token = sign(Algorithm::RS256, Some("rsa-a"), typ, &claims(), &rsa(RSA_A));
        assert!(lax.verify(&token).await.is_ok(), "{typ:?}");
        assert!(matches!(refused(&strict, &token).await, VerifyError::Invalid(_)), "{typ:?}");
    }
    for typ in ["id+jwt", "secevent+jwt", "JOSE"] {
        let token = sign(Algorithm::RS256, Some("rsa-a"), Some(typ), &claims(), &rsa(RSA_A));
        assert!(matches!(refused(&lax, &token).await, VerifyError::Invalid(_)), "{typ}");
    }
}

#[tokio::test]
async fn claims_are_checked_in_order_with_typed_refusals() {
    let v = verifier_with(JwtConfig::new(ISSUER, RESOURCE).audience("https://mcp.example/alt"), standard_set()).await;
    let with = |edit: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut c = claims();
        edit(c.as_object_mut().unwrap());
        rs(&c)
    };
    let invalid = |e: VerifyError| matches!(e, VerifyError::Invalid(_));
    assert!(invalid(refused(&v, &with(&|c| drop(c.insert("iss".into(), json!("https://as.example/"))))).await));
    assert!(invalid(refused(&v, &with(&|c| drop(c.remove("iss")))).await));
    assert!(invalid(refused(&v, &with(&|c| drop(c.insert("aud".into(), json!("https://mcp.example"))))).await));
    assert!(invalid(refused(&v, &with(&|c| drop(c.insert("aud".into(), json!(["a", "b"]))))).await));
    assert!(invalid(refused(&v, &with(&|c| drop(c.remove("aud")))).await));
    assert!(v.verify(&with(&|c| drop(c.insert("aud".into(), json!("https://mcp.example/alt"))))).await.is_ok());
    assert!(invalid(refused(&v, &with(&|c| drop(c.remove("exp")))).await), "exp is required");
    let past = now() - 31;
    assert_eq!(refused(&v, &with(&|c| drop(c.insert("exp".into(), json!(past))))).await, VerifyError::Expired);
    let within = now() - 20;
    assert!(v.verify(&with(&|c| drop(c.insert("exp".into(), json!(within))))).await.is_ok(), "within the leeway");
    let future = now() + 60;
    assert_eq!(refused(&v, &with(&|c| drop(c.insert("nbf".into(), json!(future))))).await, VerifyError::NotYetValid);
    let soon = now() + 20;
    assert!(v.verify(&with(&|c| drop(c.insert("nbf".into(), json!(soon))))).await.is_ok());
    assert!(invalid(refused(&v, &with(&|c| drop(c.remove("sub")))).await));
    assert!(invalid(refused(&v, &with(&|c| drop(c.insert("sub".into(), json!(""))))).await));
    // An expired token from another issuer is refused for the issuer (iss comes first).
    let both = with(&|c| {
        c.insert("iss".into(), json!("https://evil.example"));
        c.insert("exp".into(), json!(past));
    });
    assert!(invalid(refused(&v, &both).await));
}

#[tokio::test]
async fn malformed_and_tampered_tokens() {
    let v = verifier().await;
    for bad in ["", "abc", "a.b", "a.b.c.d.e", "!!!.e30.sig", "e30.e30.sig", "bm90IGpzb24.e30.sig"] {
        assert!(matches!(refused(&v, bad).await, VerifyError::Malformed(_)), "{bad:?}");
    }
    let token = rs(&claims());
    let mut parts: Vec<&str> = token.split('.').collect();
    let mut c = claims();
    c["sub"] = json!("mallory");
    let tampered_body = b64(c.to_string().as_bytes());
    parts[1] = &tampered_body;
    assert_eq!(refused(&v, &parts.join(".")).await, VerifyError::Invalid("the signature does not verify".into()));
    let mut flipped = token.clone().into_bytes();
    let last = flipped.len() - 3;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    assert!(matches!(refused(&v, std::str::from_utf8(&flipped).unwrap()).await, VerifyError::Invalid(_)));
}

#[tokio::test]
async fn a_token_without_kid_needs_exactly_one_fitting_key() {
    let v = verifier().await;
    assert!(v.verify(&sign(Algorithm::RS256, None, None, &claims(), &rsa(RSA_A))).await.is_ok());
    let two =
        set(vec![jwk(&rsa(RSA_A), Algorithm::RS256, "rsa-a", true), jwk(&rsa(RSA_B), Algorithm::RS256, "rsa-b", true)]);
    let v = verifier_with(JwtConfig::new(ISSUER, RESOURCE), two).await;
    let token = sign(Algorithm::RS256, None, None, &claims(), &rsa(RSA_A));
    assert!(matches!(refused(&v, &token).await, VerifyError::Invalid(_)));
}

#[tokio::test]
async fn without_any_key_verification_is_unavailable() {
    let (script, state) = Script::new(Vec::new(), None);
    state.lock().answer = Err("connection refused".into());
    let v = JwtVerifier::with_fetcher(JwtConfig::new(ISSUER, RESOURCE), script).await.unwrap();
    assert!(matches!(refused(&v, &rs(&claims())).await, VerifyError::Unavailable(_)));
    assert!(matches!(refused(&v, &rs(&claims())).await, VerifyError::Unavailable(_)), "within the rate limit, too");
    let stats = v.stats();
    assert_eq!((stats.fetches, stats.failed, stats.keys, stats.unknown_kid_refetches), (2, 2, 0, 1));
}

#[tokio::test]
async fn an_unknown_kid_is_refused_after_one_refetch() {
    let (script, state) = Script::new(standard_set(), None);
    let v = JwtVerifier::with_fetcher(JwtConfig::new(ISSUER, RESOURCE), script).await.unwrap();
    let stranger = sign(Algorithm::RS256, Some("rsa-b"), None, &claims(), &rsa(RSA_B));
    assert_eq!(refused(&v, &stranger).await, VerifyError::Invalid("unknown key id".into()));
    assert_eq!(refused(&v, &stranger).await, VerifyError::Invalid("unknown key id".into()));
    assert_eq!(state.lock().calls, 2, "one refetch, then the rate limit");
    let debug = format!("{v:?}");
    assert!(debug.contains(ISSUER) && !debug.contains(stranger.rsplit('.').next().unwrap()));
}

#[tokio::test]
async fn clones_share_one_actor_that_stops_with_the_last_handle() {
    let v = verifier().await;
    let supervisor = v.inner.cache.supervisor().clone();
    let clone = v.clone();
    drop(v);
    tokio::task::yield_now().await;
    assert!(supervisor.is_alive(), "a clone still holds the verifier");
    assert!(clone.verify(&rs(&claims())).await.is_ok());
    drop(clone);
    tokio::time::timeout(Duration::from_secs(10), supervisor.wait()).await.expect("the last drop stops the actor");
    assert!(!supervisor.is_alive());
}

//! First-seen verification cost of a JWT access token: what a token the authenticator's
//! cache does not hold costs, signature and claims, with the backend arbor-http is built
//! with: aws-lc-rs by default, RustCrypto with `--no-default-features --features
//! rust-crypto`.
//!
//! `verifier/*`: [`JwtVerifier::verify`] end to end (header, key lookup, signature, claims,
//! principal), the key set fetched once from a loopback JWKS server before measuring.
//! `decode/*`: `jsonwebtoken::decode` alone with the same key.
//!
//! `cargo bench -p arbor-http --bench verify` (aws-lc), then
//! `cargo bench -p arbor-http --no-default-features --features rust-crypto --bench verify`.

use std::time::{Duration, SystemTime};

use arbor_http::auth::{Algorithm, JwtConfig, JwtVerifier, TokenVerifier};
use criterion::{criterion_group, criterion_main, Criterion};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation};
use serde_json::{json, Map, Value};

const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "https://mcp.example/mcp";
const RSA_2048: &[u8] = include_bytes!("../tests/keys/rsa-a.der");
const EC_P256: &[u8] = include_bytes!("../tests/keys/ec-a.der");

struct Case {
    alg: Algorithm,
    kid: &'static str,
    key: EncodingKey,
}

impl Case {
    fn jwk(&self) -> Value {
        let mut jwk = serde_json::to_value(Jwk::from_encoding_key(&self.key, self.alg).unwrap()).unwrap();
        jwk["kid"] = json!(self.kid);
        jwk
    }

    fn token(&self) -> String {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.into());
        header.typ = Some("at+jwt".into());
        let claims = json!({
            "iss": ISSUER, "aud": RESOURCE, "sub": "user-1234", "client_id": "app",
            "scope": "mcp:tools files:read", "iat": now, "exp": now + 3600, "jti": "b7c1d2e3",
        });
        jsonwebtoken::encode(&header, &claims, &self.key).unwrap()
    }
}

fn cases() -> [Case; 2] {
    [
        Case { alg: Algorithm::RS256, kid: "rsa", key: EncodingKey::from_rsa_der(RSA_2048) },
        Case { alg: Algorithm::ES256, kid: "ec", key: EncodingKey::from_ec_der(EC_P256) },
    ]
}

/// Serves `body` at `/jwks` on loopback; returns its URL.
fn serve_jwks(runtime: &tokio::runtime::Runtime, body: String) -> String {
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let app = axum::Router::new().route("/jwks", axum::routing::get(move || std::future::ready(body.clone())));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let cases = cases();
    let body = json!({ "keys": cases.iter().map(Case::jwk).collect::<Vec<_>>() }).to_string();
    let url = serve_jwks(&runtime, body);
    let verifier = runtime
        .block_on(JwtVerifier::start(JwtConfig::new(ISSUER, RESOURCE).jwks_uri(url)))
        .expect("the verifier starts");
    assert_eq!(verifier.stats().keys, 2);

    let mut group = c.benchmark_group("verifier");
    for case in &cases {
        let token = case.token();
        runtime.block_on(verifier.verify(&token)).expect("the token verifies");
        group.bench_function(format!("{:?}", case.alg), |b| {
            b.iter(|| runtime.block_on(verifier.verify(std::hint::black_box(&token))).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("decode");
    for case in &cases {
        let token = case.token();
        let jwk: Jwk = serde_json::from_value(case.jwk()).unwrap();
        let key = DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = Validation::new(case.alg);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[RESOURCE]);
        group.bench_function(format!("{:?}", case.alg), |b| {
            b.iter(|| {
                jsonwebtoken::decode::<Map<String, Value>>(std::hint::black_box(&token), &key, &validation).unwrap()
            })
        });
    }
    group.finish();
    runtime.block_on(verifier.shutdown());
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);

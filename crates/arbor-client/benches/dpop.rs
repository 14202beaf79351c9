//! What DPoP adds to each request the client sends: one proof (a P-256 ES256 signature
//! over a small JWT, with the token's SHA-256 for the resource server), and the key made
//! once per client.

use arbor_client::auth::DpopKey;
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn proofs(c: &mut Criterion) {
    let key = DpopKey::generate().unwrap();
    // An access token the size of a typical RS256 JWT.
    let token = "t".repeat(803);
    c.bench_function("dpop/proof for the resource server", |b| {
        b.iter(|| key.proof("POST", black_box("https://mcp.example.com/mcp"), Some(&token), Some("nonce-1")).unwrap())
    });
    c.bench_function("dpop/proof for the token endpoint", |b| {
        b.iter(|| key.proof("POST", black_box("https://as.example.com/token"), None, None).unwrap())
    });
    c.bench_function("dpop/key generation", |b| b.iter(|| DpopKey::generate().unwrap()));
}

criterion_group!(benches, proofs);
criterion_main!(benches);

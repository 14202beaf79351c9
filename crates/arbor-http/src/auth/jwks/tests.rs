//! The cache's timing and failure rules on tokio's paused clock, behind a scripted fetch.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::FutureExt;
use jsonwebtoken::Algorithm;
use parking_lot::Mutex;
use serde_json::json;

use super::*;

/// What the scripted key set answers, and how often it was asked.
pub(crate) struct ScriptState {
    pub(crate) answer: Result<(Vec<u8>, Option<Duration>), String>,
    pub(crate) calls: usize,
    pub(crate) delay: Duration,
}

/// A [`FetchJwks`] answering from a [`ScriptState`] the test keeps changing.
pub(crate) struct Script(pub(crate) Arc<Mutex<ScriptState>>);

impl Script {
    pub(crate) fn new(body: Vec<u8>, max_age: Option<Duration>) -> (Script, Arc<Mutex<ScriptState>>) {
        let state = Arc::new(Mutex::new(ScriptState { answer: Ok((body, max_age)), calls: 0, delay: Duration::ZERO }));
        (Script(state.clone()), state)
    }
}

impl FetchJwks for Script {
    fn fetch(&self) -> BoxFuture<'_, Result<Fetched, String>> {
        async move {
            let (answer, delay) = {
                let mut state = self.0.lock();
                state.calls += 1;
                (state.answer.clone(), state.delay)
            };
            tokio::time::sleep(delay).await;
            answer.map(|(body, max_age)| Fetched { body, max_age })
        }
        .boxed()
    }

    fn describe(&self) -> String {
        "script://jwks".into()
    }
}

/// A JWKS body with an RSA key per kid (a made-up 2048-bit modulus: parsing only).
fn jwks(kids: &[&str]) -> Vec<u8> {
    let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xC5u8; 256]);
    let keys: Vec<_> = kids.iter().map(|kid| json!({"kty": "RSA", "kid": kid, "n": n, "e": "AQAB"})).collect();
    json!({ "keys": keys }).to_string().into_bytes()
}

fn policy() -> CachePolicy {
    CachePolicy {
        default_ttl: Duration::from_secs(300),
        refetch_interval: Duration::from_secs(10),
        fetch_timeout: Duration::from_secs(5),
    }
}

fn has(set: &KeySet, kid: &str) -> bool {
    set.find(Some(kid), Algorithm::RS256).is_ok()
}

/// Lets time pass, then lets the actor run what became due.
async fn pass(d: Duration) {
    tokio::time::sleep(d).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn calls(state: &Arc<Mutex<ScriptState>>) -> usize {
    state.lock().calls
}

#[tokio::test(start_paused = true)]
async fn fetches_at_start_and_again_when_max_age_lapses() {
    let (script, state) = Script::new(jwks(&["a"]), Some(Duration::from_secs(60)));
    let cache = JwksCache::start(script, policy()).await.unwrap();
    assert_eq!(calls(&state), 1);
    assert!(has(&cache.keys(), "a"));
    state.lock().answer = Ok((jwks(&["b"]), Some(Duration::from_secs(60))));
    pass(Duration::from_secs(59)).await;
    assert_eq!(calls(&state), 1);
    pass(Duration::from_secs(2)).await;
    assert_eq!(calls(&state), 2);
    let keys = cache.keys();
    assert!(has(&keys, "b") && !has(&keys, "a"), "the new set replaces the old one");
    assert_eq!(cache.stats(), JwksStats { fetches: 2, failed: 0, keys: 1, unknown_kid_refetches: 0 });
}

#[tokio::test(start_paused = true)]
async fn max_age_is_clamped_to_30_seconds() {
    let (script, state) = Script::new(jwks(&["a"]), Some(Duration::from_secs(1)));
    let _cache = JwksCache::start(script, policy()).await.unwrap();
    pass(Duration::from_secs(29)).await;
    assert_eq!(calls(&state), 1);
    pass(Duration::from_secs(2)).await;
    assert_eq!(calls(&state), 2);
}

#[tokio::test(start_paused = true)]
async fn max_age_is_clamped_to_a_day() {
    let (script, state) = Script::new(jwks(&["a"]), Some(Duration::from_secs(10 * 24 * 3600)));
    let _cache = JwksCache::start(script, policy()).await.unwrap();
    pass(Duration::from_secs(24 * 3600 - 1)).await;
    assert_eq!(calls(&state), 1);
    pass(Duration::from_secs(2)).await;
    assert_eq!(calls(&state), 2);
}

#[tokio::test(start_paused = true)]
async fn without_max_age_the_default_ttl_applies() {
    let (script, state) = Script::new(jwks(&["a"]), None);
    let _cache = JwksCache::start(script, policy()).await.unwrap();
    pass(Duration::from_secs(299)).await;
    assert_eq!(calls(&state), 1);
    pass(Duration::from_secs(2)).await;
    assert_eq!(calls(&state), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_unknown_kids_share_one_fetch() {
    let (script, state) = Script::new(jwks(&["a"]), None);
    let cache = JwksCache::start(script, policy()).await.unwrap();
    {
        let mut state = state.lock();
        state.answer = Ok((jwks(&["a", "b"]), None));
        state.delay = Duration::from_secs(1);
    }
    let started = Instant::now();
    let sets = futures::future::join_all((0..8).map(|_| cache.refetch_for_unknown_kid())).await;
    assert!(sets.iter().all(|set| has(set, "b")), "every waiter sees the new key");
    assert_eq!(calls(&state), 2, "one fetch at start, one for all eight misses");
    assert_eq!(started.elapsed(), Duration::from_secs(1), "they all waited on the one fetch");
    assert_eq!(cache.stats().unknown_kid_refetches, 1);
}

#[tokio::test(start_paused = true)]
async fn unknown_kid_refetches_are_rate_limited() {
    let (script, state) = Script::new(jwks(&["a"]), None);
    let cache = JwksCache::start(script, policy()).await.unwrap();
    cache.refetch_for_unknown_kid().await;
    assert_eq!(calls(&state), 2);
    pass(Duration::from_secs(9)).await;
    let asked = Instant::now();
    let set = cache.refetch_for_unknown_kid().await;
    assert_eq!((calls(&state), asked.elapsed()), (2, Duration::ZERO), "within the interval: no fetch, no wait");
    assert!(has(&set, "a"));
    pass(Duration::from_secs(1)).await;
    cache.refetch_for_unknown_kid().await;
    assert_eq!(calls(&state), 3);
    assert_eq!(cache.stats().unknown_kid_refetches, 2);
}

#[tokio::test(start_paused = true)]
async fn a_failed_fetch_keeps_the_known_keys_and_is_retried() {
    let (script, state) = Script::new(jwks(&["a"]), Some(Duration::from_secs(60)));
    let cache = JwksCache::start(script, policy()).await.unwrap();
    state.lock().answer = Err("HTTP 503".into());
    pass(Duration::from_secs(61)).await;
    assert_eq!(calls(&state), 2);
    assert!(has(&cache.keys(), "a"));
    assert_eq!(cache.stats(), JwksStats { fetches: 2, failed: 1, keys: 1, unknown_kid_refetches: 0 });
    // A set with no usable key is a failure too, and keeps the known keys.
    state.lock().answer = Ok((br#"{"keys": [{"kty": "oct", "kid": "x", "k": "c2VjcmV0"}]}"#.to_vec(), None));
    pass(Duration::from_secs(28)).await;
    assert_eq!(calls(&state), 2, "the retry comes 30 s after the failure (at 90 s)");
    pass(Duration::from_secs(2)).await;
    assert_eq!(calls(&state), 3);
    assert!(has(&cache.keys(), "a"));
    assert_eq!(cache.stats().failed, 2);
}

#[tokio::test(start_paused = true)]
async fn a_slow_fetch_times_out_and_counts_as_failed() {
    let (script, state) = Script::new(jwks(&["a"]), None);
    state.lock().delay = Duration::from_secs(60);
    let started = Instant::now();
    let cache = JwksCache::start(script, policy()).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(5), "the start waits for the first fetch, bounded");
    assert!(cache.keys().is_empty());
    assert_eq!(cache.stats().failed, 1);
}

#[tokio::test(start_paused = true)]
async fn the_actor_restarts_after_a_panic_and_the_keys_survive() {
    let (script, state) = Script::new(jwks(&["a"]), Some(Duration::from_secs(60)));
    let cache = JwksCache::start(script, policy()).await.unwrap();
    let first = cache.shared.actor.read().as_ref().unwrap().get_id();
    assert!(cache.shared.send(Msg::Panic));
    let mut restarted = None;
    for _ in 0..100 {
        pass(Duration::from_millis(10)).await;
        restarted = cache.shared.actor.read().as_ref().map(|a| a.get_id()).filter(|id| *id != first);
        if restarted.is_some() {
            break;
        }
    }
    assert!(restarted.is_some(), "the supervisor restarted the actor");
    assert!(has(&cache.keys(), "a"), "the keys live outside the actor");
    // The restarted actor resumes the refresh schedule and serves refetches.
    state.lock().answer = Ok((jwks(&["b"]), Some(Duration::from_secs(60))));
    pass(Duration::from_secs(60)).await;
    assert_eq!(calls(&state), 2);
    assert!(has(&cache.keys(), "b"));
    state.lock().answer = Ok((jwks(&["c"]), Some(Duration::from_secs(60))));
    assert!(has(&*cache.refetch_for_unknown_kid().await, "c"));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_cache_stops_its_supervisor() {
    let (script, _state) = Script::new(jwks(&["a"]), None);
    let cache = JwksCache::start(script, policy()).await.unwrap();
    let supervisor = cache.supervisor().clone();
    let actor = cache.shared.actor.read().clone().unwrap();
    drop(cache);
    tokio::time::timeout(Duration::from_secs(10), supervisor.wait()).await.expect("the supervisor stops");
    assert!(!supervisor.is_alive());
    assert!(actor.get_status() >= arbor_otp::ractor::ActorStatus::Stopping);
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_actor_and_keeps_the_keys_readable() {
    let (script, state) = Script::new(jwks(&["a"]), Some(Duration::from_secs(30)));
    let cache = JwksCache::start(script, policy()).await.unwrap();
    cache.shutdown().await;
    assert!(!cache.supervisor().is_alive());
    pass(Duration::from_secs(120)).await;
    assert_eq!(calls(&state), 1, "no more fetches");
    assert!(has(&*cache.refetch_for_unknown_kid().await, "a"));
}

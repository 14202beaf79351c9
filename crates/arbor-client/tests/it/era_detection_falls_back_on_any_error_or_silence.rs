//! Era detection as the spec prescribes: `server/discover` first; any error that is not a
//! modern one, or silence until the probe timeout, means a legacy server and the client
//! falls back to `initialize`. The answer is cached per server identity.
//!
//! The legacy servers here are scripted (a real legacy server is the Python SDK's, tested
//! end to end elsewhere): they answer `initialize` and `tools/list` like one, and the probe
//! with whatever the test asks for.

use std::sync::Arc;
use std::time::Duration;

use arbor_client::{Client, ClientOptions, EraCache, EraMode, ServerTarget};
use arbor_protocol::version::{Era, ProtocolVersion};
use arbor_transport::{Inbound, Transport};
use parking_lot::Mutex;
use serde_json::{json, Value};

#[derive(Clone, Copy)]
enum Probe {
    Error(i64),
    Silent,
}

/// Starts a scripted legacy server on a fresh pair; returns the client's end.
fn legacy_server(probe: Probe, seen: Arc<Mutex<Vec<String>>>) -> Transport {
    let (server, client) = Transport::memory_pair();
    let (mut rx, tx) = server.into_parts();
    tokio::spawn(async move {
        loop {
            while let Some(Inbound::Frame(bytes)) = rx.next_buffered() {
                let msg: Value = serde_json::from_slice(bytes).unwrap();
                let method = msg["method"].as_str().unwrap_or_default().to_owned();
                seen.lock().push(method.clone());
                let id = msg["id"].clone();
                let answer = match (method.as_str(), probe) {
                    (_, _) if id.is_null() => continue,
                    ("server/discover", Probe::Error(code)) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "not initialized"}})
                    }
                    ("server/discover", Probe::Silent) => continue,
                    ("initialize", _) => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted-legacy", "version": "1"}}}),
                    ("tools/list", _) => {
                        // Garbage first: counted and skipped, never the end of the connection.
                        tx.send(b"this is not JSON").unwrap();
                        tx.send(br#"{"jsonrpc":"2.0","id":999999,"result":{}}"#).unwrap();
                        json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                        {"name": "only", "inputSchema": {"type": "object"}}]}})
                    }
                    _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
                };
                tx.send(&serde_json::to_vec(&answer).unwrap()).unwrap();
            }
            if !matches!(rx.fill().await, Ok(true)) {
                return;
            }
        }
    });
    client
}

fn target(probe: Probe, seen: Arc<Mutex<Vec<String>>>) -> ServerTarget {
    ServerTarget::transport_factory(Some("scripted-legacy".into()), move || {
        let t = legacy_server(probe, seen.clone());
        async move { Ok(t) }
    })
}

#[tokio::test]
async fn any_probe_error_falls_back_to_initialize() {
    // Not keyed on one code: the usual ones, an implementation-defined one, an application one.
    for code in [-32601, -32602, -32000, -32603, 42] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let options = ClientOptions::default().era_cache(EraCache::new());
        let client = Client::connect(target(Probe::Error(code), seen.clone()), options).await.unwrap();
        assert_eq!(client.era(), Some(Era::Legacy), "code {code}");
        assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_06_18));
        assert_eq!(client.list_all_tools().await.unwrap()[0].name, "only");
        assert_eq!(client.malformed_messages(), 1, "the garbage line was counted; the late response dropped");
        assert_eq!(seen.lock()[..3], ["server/discover", "initialize", "notifications/initialized"], "code {code}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_silent_probe_times_out_into_initialize() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = ClientOptions::default().era_cache(EraCache::new()).probe_timeout(Duration::from_secs(3));
    let started = tokio::time::Instant::now();
    let client = Client::connect(target(Probe::Silent, seen.clone()), options).await.unwrap();
    assert_eq!(client.era(), Some(Era::Legacy));
    assert!(started.elapsed() >= Duration::from_secs(3), "the probe waited its timeout");
    assert_eq!(client.list_all_tools().await.unwrap().len(), 1);
    // The probe is never cancelled: a legacy server expects nothing before `initialize`.
    assert_eq!(seen.lock()[..], ["server/discover", "initialize", "notifications/initialized", "tools/list"]);
}

#[tokio::test]
async fn the_era_is_cached_per_server_and_forced_modes_skip_the_probe() {
    let cache = EraCache::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = ClientOptions::default().era_cache(cache.clone());
    let first = Client::connect(target(Probe::Error(-32601), seen.clone()), options.clone()).await.unwrap();
    assert_eq!(cache.get("scripted-legacy"), Some(Era::Legacy));
    first.close().await;
    seen.lock().clear();
    let second = Client::connect(target(Probe::Error(-32601), seen.clone()), options).await.unwrap();
    assert_eq!(second.era(), Some(Era::Legacy));
    assert_eq!(seen.lock()[0], "initialize", "a known legacy server is not probed again");

    seen.lock().clear();
    let forced = ClientOptions::default().era_cache(EraCache::new()).era(EraMode::ForceLegacy);
    let third = Client::connect(target(Probe::Error(-32601), seen.clone()), forced).await.unwrap();
    assert_eq!(third.era(), Some(Era::Legacy));
    assert_eq!(seen.lock()[0], "initialize");

    let modern_only = ClientOptions::default().era_cache(EraCache::new()).era(EraMode::ForceModern);
    let refused = Client::connect(target(Probe::Error(-32601), seen.clone()), modern_only).await.unwrap_err();
    assert!(matches!(refused, arbor_client::ConnectError::Discover(_)), "{refused}");
}

#[tokio::test]
async fn a_legacy_only_arbor_server_is_detected_through_its_modern_refusal() {
    // Our server configured without 2026-07-28 answers the probe -32022 listing legacy
    // versions: a modern error, yet one that sends the client to `initialize`.
    use arbor_server::{ConnectOptions, Server, ServerConfig};
    let fixture = crate::support::Fixture::new();
    let legacy_config =
        ServerConfig::default().supported_versions(ProtocolVersion::ALL.into_iter().filter(|v| v.era() == Era::Legacy));
    let server = Server::with_config(crate::support::TestServer { seen: fixture.seen.clone() }, legacy_config);
    let (server_side, client_side) = Transport::memory_pair();
    server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let client =
        Client::connect_transport(client_side, ClientOptions::default().era_cache(EraCache::new())).await.unwrap();
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(client.list_all_tools().await.unwrap().len(), crate::support::TOOLS.len());
}

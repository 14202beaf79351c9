use crate::support::{modern_meta, Harness};
use serde_json::json;

#[tokio::test]
async fn discover_lists_versions_capabilities_and_cache_hints() {
    let mut h = Harness::start().await;
    let r = h.peer.call(1, "server/discover", json!({"_meta": modern_meta(json!({}))})).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete", "{r}");
    assert_eq!(result["supportedVersions"][0], "2026-07-28");
    assert!(result["supportedVersions"].as_array().unwrap().iter().any(|v| v == "2024-11-05"));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "arbor-test");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["instructions"], "test server");
    h.finish().await;
}

#[tokio::test]
async fn every_result_carries_result_type_and_lists_carry_cache_fields() {
    let mut h = Harness::start().await;
    let meta = modern_meta(json!({}));
    let listed = h.peer.call(1, "tools/list", json!({"_meta": meta})).await;
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["cacheScope"], "private");
    let called =
        h.peer.call(2, "tools/call", json!({"_meta": meta, "name": "echo", "arguments": {"message": "hi"}})).await;
    assert_eq!(called["result"]["resultType"], "complete");
    assert_eq!(called["result"]["content"][0]["text"], "hi");
    assert!(called["result"].get("ttlMs").is_none());
    let read = h.peer.call(3, "resources/read", json!({"_meta": meta, "uri": "test://x"})).await;
    assert_eq!(read["result"]["contents"][0]["text"], "hello");
    assert_eq!(read["result"]["ttlMs"], 0);
    h.finish().await;
}

#[tokio::test]
async fn missing_terms_and_unsupported_versions_get_their_errors() {
    let mut h = Harness::start().await;
    let missing =
        h.peer.call(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})).await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
    let unsupported = h.peer.call(2, "tools/list", json!({"_meta": meta})).await;
    assert_eq!(unsupported["error"]["code"], -32022);
    assert_eq!(unsupported["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(unsupported["error"]["data"]["supported"][0], "2026-07-28");
    h.finish().await;
}

#[tokio::test]
async fn handshake_only_methods_are_not_found_in_the_modern_era() {
    let mut h = Harness::start().await;
    let meta = modern_meta(json!({}));
    for (id, method, params) in [
        (1, "ping", json!({"_meta": meta})),
        (2, "logging/setLevel", json!({"_meta": meta, "level": "info"})),
        (3, "resources/subscribe", json!({"_meta": meta, "uri": "test://a"})),
        (
            4,
            "initialize",
            json!({"_meta": meta, "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        ),
    ] {
        let r = h.peer.call(id, method, params).await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    h.finish().await;
}

#[tokio::test]
async fn handshake_only_methods_without_their_params_are_not_found_either() {
    // What a 2026-07-28 client probing a removed method sends: only `_meta`. The method
    // does not exist in that revision, so its missing params are not "invalid" (-32602).
    let mut h = Harness::start().await;
    let meta = modern_meta(json!({}));
    for (id, method) in
        [(1, "initialize"), (2, "logging/setLevel"), (3, "resources/subscribe"), (4, "resources/unsubscribe")]
    {
        let r = h.peer.call(id, method, json!({"_meta": meta})).await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    // A method the revision has still gets -32602 for bad params.
    let r = h.peer.call(5, "tools/call", json!({"_meta": meta, "name": 7})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    h.finish().await;
}

#[tokio::test]
async fn modern_requests_on_a_legacy_connection_are_served_statelessly() {
    let mut h = Harness::start().await;
    h.peer.initialize("2025-06-18", json!({})).await;
    let legacy = h.peer.call(1, "tools/list", json!({})).await;
    assert!(legacy["result"].get("resultType").is_none());
    let modern = h.peer.call(2, "tools/list", json!({"_meta": modern_meta(json!({}))})).await;
    assert_eq!(modern["result"]["resultType"], "complete");
    h.finish().await;
}

#[tokio::test]
async fn the_configured_versions_limit_both_eras() {
    use arbor_protocol::version::ProtocolVersion;
    use arbor_server::ServerConfig;
    let modern_only = ServerConfig::default().supported_versions([ProtocolVersion::V2026_07_28]);
    let mut h = Harness::with_config(modern_only).await;
    let init = h
        .peer
        .call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(init["error"]["code"], -32601, "{init}");
    assert_eq!(init["error"]["data"]["supported"], json!(["2026-07-28"]));
    h.finish().await;

    let legacy_only = ServerConfig::default().supported_versions([ProtocolVersion::V2025_06_18]);
    let mut h = Harness::with_config(legacy_only).await;
    let discover = h.peer.call(1, "server/discover", json!({"_meta": modern_meta(json!({}))})).await;
    assert_eq!(discover["error"]["code"], -32022, "{discover}");
    assert_eq!(discover["error"]["data"]["supported"], json!(["2025-06-18"]));
    let result = h.peer.initialize("2025-11-25", json!({})).await;
    assert_eq!(result["protocolVersion"], "2025-06-18");
    h.finish().await;
}

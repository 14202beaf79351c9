//! The conformance fixture server over real stdio pipes: a handful of the suite's fixtures,
//! asked as a legacy client (2025-11-25 session, the server's own requests for input) and
//! as a 2026-07-28 client (per-request `_meta`, MRTR round trips with sealed state).

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{modern_meta, only_text, Peer};

const SERVER: &str = "conformance_server";

/// The fixtures every run of the suite calls by name.
const FIXTURE_TOOLS: [&str; 15] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_missing_capability",
    "test_input_required_result_multi_round",
];

/// Answers the server-to-client request `request` with `result`.
async fn answer(peer: &mut Peer, request: &Value, result: Value) {
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result})).await;
}

#[tokio::test]
async fn a_legacy_session_gets_the_fixtures_and_is_asked_for_input_by_request() {
    let mut peer = Peer::spawn(SERVER);
    let caps = json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}});
    let init = peer.initialize("2025-11-25", caps).await;
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["serverInfo"]["name"], "mcp-conformance-test-server");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "{init}");
    assert_eq!(init["capabilities"]["resources"]["subscribe"], true, "{init}");

    let listed = peer.call(1, "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("a tool list").clone();
    for name in FIXTURE_TOOLS {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} is not listed"));
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()), "{name} has no description");
    }
    let schema = &tools.iter().find(|t| t["name"] == "json_schema_2020_12_tool").unwrap()["inputSchema"];
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{schema}");
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef", "{schema}");
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema["if"].is_object() && schema["allOf"].is_array(), "{schema}");

    let simple = peer.call(2, "tools/call", json!({"name": "test_simple_text", "arguments": {}})).await;
    assert_eq!(only_text(&simple), "This is a simple text response for testing.");
    let failed = peer.call(3, "tools/call", json!({"name": "test_error_handling", "arguments": {}})).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");

    // Progress: 0, 50 and 100 of 100, for the token the request carried, before the answer.
    let progress = peer
        .call(
            4,
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "progress-test-1"}}),
        )
        .await;
    assert_eq!(only_text(&progress), "progress-test-1");
    let steps: Vec<Option<f64>> =
        peer.take_notifications("notifications/progress").iter().map(|n| n["params"]["progress"].as_f64()).collect();
    assert_eq!(steps, [Some(0.0), Some(50.0), Some(100.0)]);

    // Logging at the level the client chose.
    assert!(peer.call(5, "logging/setLevel", json!({"level": "debug"})).await["result"].is_object());
    let logged = peer.call(6, "tools/call", json!({"name": "test_tool_with_logging", "arguments": {}})).await;
    assert_eq!(only_text(&logged), "Tool with logging executed successfully");
    assert_eq!(peer.take_notifications("notifications/message").len(), 3);

    // Sampling: the server asks the client's model with a request of its own.
    peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": "Capital of France?"}}}))
        .await;
    let ask = peer.next_non_notification().await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "Capital of France?");
    answer(
        &mut peer,
        &ask,
        json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model"}),
    )
    .await;
    let sampled = peer.next_non_notification().await;
    assert_eq!(sampled["id"], 7, "{sampled}");
    assert_eq!(only_text(&sampled), "LLM response: Paris");

    // Three kinds of input in one round: three requests at once, answered in any order.
    peer.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "test_input_required_result_multiple_inputs", "arguments": {}}}))
        .await;
    let mut asks = Vec::new();
    for _ in 0..3 {
        asks.push(peer.next_non_notification().await);
    }
    asks.sort_by_key(|a| a["method"].as_str().unwrap_or_default().to_owned());
    let methods: Vec<&str> = asks.iter().map(|a| a["method"].as_str().unwrap_or_default()).collect();
    assert_eq!(methods, ["elicitation/create", "roots/list", "sampling/createMessage"], "{asks:?}");
    answer(&mut peer, &asks[2], json!({"role": "assistant", "content": {"type": "text", "text": "Hi!"}, "model": "m"}))
        .await;
    answer(&mut peer, &asks[1], json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]})).await;
    answer(&mut peer, &asks[0], json!({"action": "accept", "content": {"name": "Alice"}})).await;
    let combined = peer.next_non_notification().await;
    assert_eq!(only_text(&combined), "Name: Alice; Greeting: Hi!; Roots: 1", "{combined}");

    // Resources and prompts.
    let read = peer.call(9, "resources/read", json!({"uri": "test://template/123/data"})).await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], "test://template/123/data", "{read}");
    assert_eq!(contents["mimeType"], "application/json");
    let data: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(data, json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"}));
    let binary = peer.call(10, "resources/read", json!({"uri": "test://static-binary"})).await;
    assert_eq!(binary["result"]["contents"][0]["mimeType"], "image/png", "{binary}");
    assert!(binary["result"]["contents"][0]["blob"].as_str().is_some_and(|b| b.starts_with("iVBOR")));
    let subscribed = peer.call(11, "resources/subscribe", json!({"uri": "test://watched-resource"})).await;
    assert!(subscribed["result"].is_object(), "{subscribed}");
    let prompt = peer
        .call(12, "prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}))
        .await;
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Prompt with arguments: arg1='a', arg2='b'");
    let completed = peer
        .call(
            13,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "par"}}),
        )
        .await;
    assert_eq!(completed["result"]["completion"]["values"], json!(["paris", "park", "party"]), "{completed}");

    // A list change on demand reaches the session.
    let triggered = peer.call(14, "tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}})).await;
    assert_eq!(only_text(&triggered), "Mutation triggered");
    let mut changed = peer.take_notifications("notifications/tools/list_changed");
    if changed.is_empty() {
        changed.extend(peer.recv_within(Duration::from_secs(5)).await);
    }
    assert_eq!(changed.first().map(|n| n["method"].clone()), Some(json!("notifications/tools/list_changed")));

    assert!(peer.close().await.success());
}

#[tokio::test]
async fn a_modern_client_gets_input_required_results_with_sealed_state() {
    let mut peer = Peer::spawn(SERVER);
    let all = modern_meta(json!({"sampling": {}, "elicitation": {}, "roots": {}}));

    let discovered = peer.call(1, "server/discover", json!({"_meta": all})).await;
    let result = &discovered["result"];
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")), "{discovered}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-conformance-test-server");

    // A basic round trip: asked, answered, complete.
    let call = |id: u64, name: &str, extra: Value| {
        let mut params = json!({"_meta": all, "name": name, "arguments": {}});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        (id, params)
    };
    let (id, params) = call(2, "test_input_required_result_elicitation", json!({}));
    let first = peer.call(id, "tools/call", params).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(first["result"]["inputRequests"]["user_name"]["method"], "elicitation/create");
    let state = first["result"]["requestState"].as_str().expect("a sealed requestState").to_owned();
    let answers = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    let (id, params) =
        call(3, "test_input_required_result_elicitation", json!({"inputResponses": answers, "requestState": state}));
    let done = peer.call(id, "tools/call", params).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(only_text(&done), "Hello, Alice!");

    // Answers under unknown keys (and no state) are asked again, not refused.
    let (id, params) = call(
        4,
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"wrong_key": {"action": "accept", "content": {"data": "x"}}}}),
    );
    let again = peer.call(id, "tools/call", params).await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");

    // A tampered state is refused before the handler runs.
    let (id, params) = call(5, "test_input_required_result_tampered_state", json!({}));
    let first = peer.call(id, "tools/call", params).await;
    let state = first["result"]["requestState"].as_str().expect("a sealed requestState").to_owned();
    let (id, params) = call(
        6,
        "test_input_required_result_tampered_state",
        json!({"inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
               "requestState": format!("{state}-TAMPERED")}),
    );
    let tampered = peer.call(id, "tools/call", params).await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");

    // Three rounds, each with a new state carrying what the earlier rounds learned.
    let (id, params) = call(7, "test_input_required_result_multi_round", json!({}));
    let r1 = peer.call(id, "tools/call", params).await;
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    let (id, params) = call(
        8,
        "test_input_required_result_multi_round",
        json!({"inputResponses": {"step1": {"action": "accept", "content": {"name": "Bob"}}}, "requestState": s1}),
    );
    let r2 = peer.call(id, "tools/call", params).await;
    assert_eq!(r2["result"]["inputRequests"]["step2"]["method"], "elicitation/create", "{r2}");
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(s1, s2, "each round seals a new state");
    let (id, params) = call(
        9,
        "test_input_required_result_multi_round",
        json!({"inputResponses": {"step2": {"action": "accept", "content": {"color": "green"}}}, "requestState": s2}),
    );
    let r3 = peer.call(id, "tools/call", params).await;
    assert_eq!(only_text(&r3), "Multi-round complete for Bob who likes green", "{r3}");

    // Input the client did not declare it can give: -32021 naming what is missing.
    let bare = modern_meta(json!({}));
    let refused =
        peer.call(10, "tools/call", json!({"_meta": bare, "name": "test_missing_capability", "arguments": {}})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));

    // Only what the client declared is asked for.
    let sampling_only = modern_meta(json!({"sampling": {}}));
    let asked = peer
        .call(
            11,
            "tools/call",
            json!({"_meta": sampling_only, "name": "test_input_required_result_capabilities", "arguments": {}}),
        )
        .await;
    let keys: Vec<&String> = asked["result"]["inputRequests"].as_object().expect("input requests").keys().collect();
    assert_eq!(keys, ["sample_input"], "{asked}");

    // A prompt can need input too.
    let prompt = peer.call(12, "prompts/get", json!({"_meta": all, "name": "test_input_required_result_prompt"})).await;
    assert_eq!(prompt["result"]["resultType"], "input_required", "{prompt}");
    let state = prompt["result"]["requestState"].as_str().unwrap().to_owned();
    let prompt = peer
        .call(
            13,
            "prompts/get",
            json!({"_meta": all, "name": "test_input_required_result_prompt", "requestState": state,
                   "inputResponses": {"user_context": {"action": "accept", "content": {"context": "tests"}}}}),
        )
        .await;
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Prompt with context: tests", "{prompt}");

    // No logs unless the request asked for them.
    let quiet = peer.call(14, "tools/call", json!({"_meta": all, "name": "test_logging_tool", "arguments": {}})).await;
    assert_eq!(only_text(&quiet), "Logging evaluated");
    assert!(peer.take_notifications("notifications/message").is_empty());
    let mut loud_meta = all.clone();
    loud_meta["io.modelcontextprotocol/logLevel"] = json!("info");
    let loud =
        peer.call(15, "tools/call", json!({"_meta": loud_meta, "name": "test_logging_tool", "arguments": {}})).await;
    assert_eq!(only_text(&loud), "Logging evaluated");
    assert_eq!(peer.take_notifications("notifications/message").len(), 1);

    // Cacheable results carry the era's cache hints.
    let read = peer.call(16, "resources/read", json!({"_meta": all, "uri": "test://static-text"})).await;
    assert!(read["result"]["ttlMs"].is_u64() && read["result"]["cacheScope"].is_string(), "{read}");

    assert!(peer.close().await.success());
}

#[tokio::test]
async fn dynamic_items_appear_two_seconds_after_start() {
    let mut peer = Peer::spawn(SERVER);
    peer.initialize("2025-11-25", json!({})).await;
    let before = peer.call(1, "tools/list", json!({})).await;
    assert!(!before["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "test_dynamic_tool"));
    // The server adds a tool, a resource and a prompt, each announced.
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let note = peer.recv_within(Duration::from_secs(10)).await.expect("list_changed within 10 s");
        seen.push(note["method"].as_str().unwrap_or_default().to_owned());
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    let after = peer.call(2, "tools/list", json!({})).await;
    assert!(after["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "test_dynamic_tool"), "{after}");
    let read = peer.call(3, "resources/read", json!({"uri": "test://dynamic-resource"})).await;
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    assert!(peer.close().await.success());
}

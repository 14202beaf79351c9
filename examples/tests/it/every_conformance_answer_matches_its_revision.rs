//! Every fixture of the conformance server, asked at every protocol revision: each message
//! the server writes (responses, notifications, its own requests for input) validates
//! against the schema of the revision in force. A fixture that needs something its
//! revision lacks must say so in a valid way, never send what the client cannot read.

use serde_json::{json, Map, Value};

use crate::support::{modern_meta, Peer};
use tests::schema::message_problems;

const REVISIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// What a client that can do everything answers to each kind of input request.
fn answer_to(method: &str) -> Value {
    match method {
        "elicitation/create" => json!({"action": "accept", "content": {
            "response": "r", "name": "Ada", "ok": true, "value": "v", "context": "c", "answer": "a", "color": "red"}}),
        "sampling/createMessage" => {
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model"})
        }
        "roots/list" => json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]}),
        other => panic!("the server asked for {other}"),
    }
}

/// One session at one revision, recording every server message with the method it answers.
struct Sweep {
    peer: Peer,
    revision: &'static str,
    next_id: u64,
    /// Each message the server sent, with the method of the request a response answers.
    seen: Vec<(Value, Option<String>)>,
}

impl Sweep {
    fn modern(&self) -> bool {
        self.revision == "2026-07-28"
    }

    /// Sends `method` and returns its final response, answering the server's requests for
    /// input (legacy) and retrying `input_required` results with answers (2026-07-28).
    async fn exchange(&mut self, method: &str, mut params: Value) -> Value {
        if self.modern() {
            let mut meta = modern_meta(json!({"sampling": {}, "elicitation": {}, "roots": {}}));
            meta["io.modelcontextprotocol/logLevel"] = json!("debug");
            if let Some(Value::Object(extra)) = params.get("_meta") {
                meta.as_object_mut().unwrap().extend(extra.clone());
            }
            params["_meta"] = meta;
        }
        for _round in 0..8 {
            self.next_id += 1;
            let id = self.next_id;
            self.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
            let response = loop {
                let message = self.peer.recv().await;
                let answered = (message.get("id") == Some(&json!(id)) && message.get("method").is_none())
                    .then(|| method.to_owned());
                self.seen.push((message.clone(), answered.clone()));
                if answered.is_some() {
                    break message;
                }
                if let (Some(asked), Some(ask_id)) = (message["method"].as_str(), message.get("id")) {
                    let reply = json!({"jsonrpc": "2.0", "id": ask_id, "result": answer_to(asked)});
                    self.peer.send(reply).await;
                }
            };
            let result = &response["result"];
            if result["resultType"] != "input_required" {
                return response;
            }
            let answers: Map<String, Value> = result["inputRequests"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(key, request)| (key.clone(), answer_to(request["method"].as_str().unwrap_or_default())))
                .collect();
            params["inputResponses"] = Value::Object(answers);
            params["requestState"] = result["requestState"].clone();
        }
        panic!("{method} still wanted input after 8 rounds");
    }
}

/// Arguments that satisfy each tool's input schema.
fn arguments_for(tool: &str) -> Value {
    match tool {
        "test_sampling" => json!({"prompt": "Capital of France?"}),
        "test_elicitation" => json!({"message": "Anything to add?"}),
        "json_schema_2020_12_tool" => json!({"name": "Ada", "email": "ada@example.org"}),
        "test_custom_header" => json!({"region": "eu-west"}),
        _ => json!({}),
    }
}

async fn sweep(revision: &'static str) -> Vec<String> {
    let mut s = Sweep { peer: Peer::spawn("conformance_server"), revision, next_id: 0, seen: Vec::new() };
    if s.modern() {
        s.exchange("server/discover", json!({})).await;
    } else {
        let caps = json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}});
        let params = json!({"protocolVersion": revision, "capabilities": caps,
            "clientInfo": {"name": "arbor-examples-test", "version": "0.0.0"}});
        let init = s.exchange("initialize", params).await;
        assert_eq!(init["result"]["protocolVersion"], revision, "{init}");
        s.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        s.exchange("logging/setLevel", json!({"level": "debug"})).await;
    }
    let tools = s.exchange("tools/list", json!({})).await["result"]["tools"].clone();
    for tool in tools.as_array().expect("a tool list") {
        let name = tool["name"].as_str().unwrap_or_default();
        let params = json!({"name": name, "arguments": arguments_for(name), "_meta": {"progressToken": name}});
        s.exchange("tools/call", params).await;
    }
    s.exchange("resources/list", json!({})).await;
    s.exchange("resources/templates/list", json!({})).await;
    for uri in ["test://static-text", "test://static-binary", "test://watched-resource", "test://template/7/data"] {
        s.exchange("resources/read", json!({"uri": uri})).await;
    }
    let prompts = s.exchange("prompts/list", json!({})).await["result"]["prompts"].clone();
    for prompt in prompts.as_array().expect("a prompt list") {
        let arguments: Map<String, Value> = prompt["arguments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| (a["name"].as_str().unwrap_or_default().to_owned(), json!("test://example-resource")))
            .collect();
        s.exchange("prompts/get", json!({"name": prompt["name"], "arguments": arguments})).await;
    }
    let by_prompt = json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "pa"}});
    s.exchange("completion/complete", by_prompt).await;
    let by_template = json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
        "argument": {"name": "id", "value": "1"}});
    s.exchange("completion/complete", by_template).await;
    assert!(s.peer.close().await.success());

    assert!(s.seen.len() > 40, "{revision}: only {} messages", s.seen.len());
    s.seen.iter().flat_map(|(message, method)| message_problems(revision, message, method.as_deref())).collect()
}

#[tokio::test]
async fn every_message_of_every_fixture_is_valid_for_its_revision() {
    // One session per revision, concurrently: each is its own server process.
    let sessions = REVISIONS.map(|revision| tokio::spawn(sweep(revision)));
    let mut problems = Vec::new();
    for session in sessions {
        problems.extend(session.await.expect("a sweep panicked"));
    }
    assert!(problems.is_empty(), "{} invalid messages:\n{}", problems.len(), problems.join("\n"));
}

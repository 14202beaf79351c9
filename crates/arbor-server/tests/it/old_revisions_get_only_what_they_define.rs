//! A handler that answers with everything the newest revision has (audio and resource-link
//! blocks, structured output of any shape, titles and icons, titled and multi-select form
//! fields) is served to every revision with only what that revision defines: every message
//! validates against the negotiated schema, display members are dropped, blocks a result
//! cannot carry become text, and a question a revision cannot ask is refused (-32603)
//! before anything is sent.

use crate::schema::check_message;
use crate::support::{modern_meta, ScriptedPeer};
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::{
    PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability,
};
use arbor_protocol::model::common::PaginatedRequestParams;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use arbor_protocol::model::resources::ListResourcesResult;
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};
use arbor_server::{
    ConnectOptions, InputRequired, Reply, RequestContext, Server, ServerHandler, ServerInfo, Transport,
};
use serde_json::{json, Value};
use std::collections::HashMap;

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn icons() -> Value {
    json!([{"src": "https://example.com/i.png", "mimeType": "image/png"}])
}

struct Rich;

impl ServerHandler for Rich {
    fn info(&self) -> ServerInfo {
        let implementation = from(json!({
            "name": "rich", "version": "1", "title": "Rich", "description": "d",
            "icons": icons(), "websiteUrl": "https://example.com"
        }));
        ServerInfo { implementation, instructions: None }
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::default()
            .with_tools(ToolsCapability::default())
            .with_prompts(PromptsCapability::default())
            .with_resources(ResourcesCapability::default())
    }

    async fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Result<ListToolsResult, McpError> {
        Ok(from(json!({"tools": [
            {"name": "rich", "title": "Rich tool", "icons": icons(), "inputSchema": {"type": "object"},
             "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
            {"name": "scalar", "title": "Scalar", "inputSchema": {"type": "object"},
             "outputSchema": {"type": "integer"}}
        ]})))
    }

    async fn call_tool(&self, p: CallToolRequestParams, cx: RequestContext) -> Result<Reply<CallToolResult>, McpError> {
        let link = json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a", "title": "A file",
                          "mimeType": "text/plain", "icons": icons()});
        let result = match p.name.as_str() {
            "rich" => json!({"content": [
                {"type": "text", "text": "{\"n\":1}"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                link,
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            ], "structuredContent": {"n": 1}}),
            "bare" => json!({"content": [], "structuredContent": {"n": 2}}),
            "scalar" => json!({"content": [], "structuredContent": 5}),
            "pick" | "multi" => {
                if let Some(InputResponse::Elicit(answer)) = cx.input_responses().and_then(|r| r.get("q")) {
                    json!({"content": [{"type": "text", "text": format!("{:?}", answer.content)}]})
                } else {
                    let field = if p.name == "pick" {
                        json!({"type": "string", "title": "Colour", "default": "r",
                               "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]})
                    } else {
                        json!({"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}]}})
                    };
                    let form = from(json!({"mode": "form", "message": "Pick", "requestedSchema": {
                        "type": "object",
                        "properties": {"c": field, "s": {"type": "string", "default": "x"}, "b": {"type": "boolean", "default": true}}
                    }}));
                    return Ok(Reply::InputRequired(InputRequired::new().elicit("q", form)));
                }
            }
            other => return Err(McpError::invalid_params(format!("Unknown tool: {other}"))),
        };
        Ok(from::<CallToolResult>(result).into())
    }

    async fn list_prompts(&self, _: PaginatedRequestParams, _: RequestContext) -> Result<ListPromptsResult, McpError> {
        Ok(from(json!({"prompts": [{"name": "p", "title": "P", "icons": icons(),
                                    "arguments": [{"name": "x", "title": "X"}]}]})))
    }

    async fn get_prompt(
        &self,
        _: GetPromptRequestParams,
        _: RequestContext,
    ) -> Result<Reply<GetPromptResult>, McpError> {
        Ok(from::<GetPromptResult>(json!({"messages": [
            {"role": "user", "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/mpeg"}},
            {"role": "user", "content": {"type": "resource_link", "uri": "file:///b", "name": "b"}}
        ]}))
        .into())
    }

    async fn list_resources(
        &self,
        _: PaginatedRequestParams,
        _: RequestContext,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(from(json!({"resources": [{"uri": "file:///a", "name": "a", "title": "A", "icons": icons()}]})))
    }
}

/// A client of one revision that checks every message it receives against its schema.
struct Client {
    peer: ScriptedPeer,
    revision: &'static str,
    meta: Option<Value>,
    methods: HashMap<i64, String>,
    next: i64,
}

impl Client {
    async fn call(&mut self, method: &str, mut params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        if let Some(meta) = &self.meta {
            params["_meta"] = meta.clone();
        }
        self.methods.insert(id, method.to_owned());
        self.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let message = self.recv().await;
        assert_eq!(message["id"], id, "{}: {message}", self.revision);
        message
    }

    async fn recv(&mut self) -> Value {
        let message = self.peer.recv().await;
        let method = message.get("id").and_then(Value::as_i64).filter(|_| message.get("method").is_none());
        check_message(self.revision, &message, method.and_then(|id| self.methods.get(&id)).map(String::as_str));
        message
    }
}

/// The text blocks of a response, and all its blocks' types.
fn blocks(response: &Value) -> (Vec<String>, Vec<String>) {
    let content = response["result"]["content"].as_array().cloned().unwrap_or_default();
    let texts = content.iter().filter_map(|b| b["text"].as_str().map(str::to_owned)).collect();
    (texts, content.iter().map(|b| b["type"].as_str().unwrap().to_owned()).collect())
}

#[tokio::test]
async fn every_revision_gets_only_what_it_defines() {
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"] {
        let server = Server::new(Rich);
        let (server_side, client_side) = Transport::memory_pair();
        let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
        let modern = revision == "2026-07-28";
        let mut c = Client {
            peer: ScriptedPeer::new(client_side),
            revision,
            meta: modern.then(|| modern_meta(json!({"elicitation": {}}))),
            methods: HashMap::new(),
            next: 0,
        };
        let (links, audio, titles, icons_, structured) = (
            revision >= "2025-06-18",
            revision >= "2025-03-26",
            revision >= "2025-06-18",
            revision >= "2025-11-25",
            revision >= "2025-06-18",
        );
        if !modern {
            let init = c
                .call(
                    "initialize",
                    json!({"protocolVersion": revision, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "c", "version": "1"}}),
                )
                .await;
            let info = &init["result"]["serverInfo"];
            assert_eq!(info.get("title").is_some(), titles, "{revision}: {info}");
            assert_eq!(info.get("icons").is_some() || info.get("websiteUrl").is_some(), icons_, "{revision}: {info}");
            c.peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }

        let tools = c.call("tools/list", json!({})).await;
        let (rich, scalar) = (&tools["result"]["tools"][0], &tools["result"]["tools"][1]);
        assert_eq!(rich.get("title").is_some(), titles, "{revision}: {rich}");
        assert_eq!(rich.get("icons").is_some(), icons_, "{revision}: {rich}");
        assert_eq!(rich.get("outputSchema").is_some(), structured, "{revision}: {rich}");
        assert_eq!(rich.get("annotations").is_some(), audio, "{revision}: {rich}");
        if revision == "2025-03-26" {
            assert_eq!(rich["annotations"]["title"], "Rich tool", "the title moves into the annotations");
        }
        assert_eq!(scalar.get("outputSchema").is_some(), modern, "{revision}: {scalar}");

        let rich = c.call("tools/call", json!({"name": "rich"})).await;
        let (texts, types) = blocks(&rich);
        let expected: Vec<&str> = match (audio, links) {
            (false, _) => vec!["text", "text", "text", "image"],
            (true, false) => vec!["text", "audio", "text", "image"],
            (true, true) => vec!["text", "audio", "resource_link", "image"],
        };
        assert_eq!(types, expected, "{revision}: {rich}");
        if !links {
            assert!(texts.iter().any(|t| t.contains("file:///a.txt") && t.contains("A file")), "{revision}: {texts:?}");
        }
        if !audio {
            assert!(texts.iter().any(|t| t.contains("audio/wav")), "{revision}: {texts:?}");
        }
        if links && !icons_ {
            assert!(rich["result"]["content"][2].get("icons").is_none(), "{revision}: {rich}");
        }
        assert_eq!(rich["result"].get("structuredContent").is_some(), structured, "{revision}: {rich}");
        // The JSON text was already there: it is not added twice.
        assert_eq!(texts.iter().filter(|t| t.as_str() == "{\"n\":1}").count(), 1, "{revision}: {texts:?}");

        let bare = c.call("tools/call", json!({"name": "bare"})).await;
        assert_eq!(blocks(&bare).0, if structured { vec![] } else { vec!["{\"n\":2}".to_owned()] }, "{revision}");
        let scalar = c.call("tools/call", json!({"name": "scalar"})).await;
        assert_eq!(scalar["result"].get("structuredContent").is_some(), modern, "{revision}: {scalar}");
        assert_eq!(blocks(&scalar).0, if modern { vec![] } else { vec!["5".to_owned()] }, "{revision}");

        let prompt = c.call("prompts/get", json!({"name": "p"})).await;
        let kinds: Vec<&str> = prompt["result"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, [if audio { "audio" } else { "text" }, if links { "resource_link" } else { "text" }]);
        let prompts = c.call("prompts/list", json!({})).await;
        let p = &prompts["result"]["prompts"][0];
        assert_eq!((p.get("title").is_some(), p.get("icons").is_some()), (titles, icons_), "{revision}: {p}");
        assert_eq!(p["arguments"][0].get("title").is_some(), titles, "{revision}: {p}");
        let resources = c.call("resources/list", json!({})).await;
        let r = &resources["result"]["resources"][0];
        assert_eq!((r.get("title").is_some(), r.get("icons").is_some()), (titles, icons_), "{revision}: {r}");

        if revision == "2025-06-18" {
            // A titled single-select asks the same thing in the legacy `enumNames` form.
            c.next += 1;
            let id = c.next;
            c.methods.insert(id, "tools/call".into());
            c.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "pick"}}));
            let ask = c.recv().await;
            let form = &ask["params"]["requestedSchema"]["properties"];
            assert_eq!(
                form["c"],
                json!({"type": "string", "title": "Colour", "enum": ["r", "g"], "enumNames": ["Red", "Green"]})
            );
            assert_eq!(form["s"], json!({"type": "string"}), "a default 2025-06-18 does not have is dropped");
            assert_eq!(form["b"]["default"], true, "boolean defaults exist in 2025-06-18");
            assert!(ask["params"].get("mode").is_none(), "{ask}");
            c.peer.send(
                json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"c": "g"}}}),
            );
            assert_eq!(c.recv().await["id"], id);
            // A multi-select cannot be asked at all: refused, and nothing is sent.
            let multi = c.call("tools/call", json!({"name": "multi"})).await;
            assert_eq!(multi["error"]["code"], -32603, "{multi}");
            assert!(multi["error"]["message"].as_str().unwrap().contains("multi-select"), "{multi}");
        }
        if revision == "2025-11-25" {
            // The revision that has the multi-select form is asked with it as it is.
            c.next += 1;
            let id = c.next;
            c.methods.insert(id, "tools/call".into());
            c.peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "multi"}}));
            let ask = c.recv().await;
            assert_eq!(ask["params"]["requestedSchema"]["properties"]["c"]["type"], "array", "{ask}");
            c.peer.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}));
            assert_eq!(c.recv().await["id"], id);
        }
        if modern {
            let multi = c.call("tools/call", json!({"name": "multi"})).await;
            assert_eq!(multi["result"]["resultType"], "input_required", "{multi}");
        }
        c.peer.close().await;
        connection.closed().await;
        server.shutdown().await;
    }
}

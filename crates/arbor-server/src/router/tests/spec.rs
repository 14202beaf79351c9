//! The router's results, serialised, against the result definitions of every vendored
//! revision's schema.
//!
//! For 2026-07-28 the test first adds what the runtime adds on the way out (`resultType`,
//! and `ttlMs`/`cacheScope` on the cacheable list results), since the router leaves those
//! to it; everything else must already be valid as the router made it.

use super::*;
use serde_json::Map;
use std::collections::HashMap;
// The shared schema oracle; `::` names the harness crate, not this `tests` module.
use ::tests::schema::assert_valid;

/// Every handshake-era revision: a result the router makes must suit each of them.
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const MODERN: &str = "2026-07-28";

/// What the runtime adds to a 2026-07-28 result.
fn stamped(mut result: Value, cacheable: bool) -> Value {
    let object: &mut Map<String, Value> = result.as_object_mut().unwrap();
    object.insert("resultType".into(), json!("complete"));
    if cacheable {
        object.insert("ttlMs".into(), json!(0));
        object.insert("cacheScope".into(), json!("public"));
    }
    result
}

fn check(definition: &str, result: &impl Serialize, cacheable: bool) {
    let value = serde_json::to_value(result).unwrap();
    for revision in LEGACY {
        assert_valid(revision, definition, &value);
    }
    assert_valid(MODERN, definition, &stamped(value, cacheable));
}

#[tokio::test]
async fn list_results_are_valid_in_every_revision() {
    let router = fixture().page_size(2);
    let tools = router.list_tools(first_page(), cx()).await.unwrap();
    assert!(tools.next_cursor.is_some());
    check("ListToolsResult", &tools, true);
    check("ListPromptsResult", &router.list_prompts(first_page(), cx()).await.unwrap(), true);
    check("ListResourcesResult", &router.list_resources(first_page(), cx()).await.unwrap(), true);
    check("ListResourceTemplatesResult", &router.list_resource_templates(first_page(), cx()).await.unwrap(), true);
}

#[tokio::test]
async fn tool_schemas_of_awkward_argument_types_are_valid_in_every_revision() {
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        depth: u8,
    }
    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind")]
    #[allow(dead_code)]
    enum Shape {
        Circle { radius: f64 },
        Square { side: f64 },
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Awkward {
        anything: Value,
        nested: Inner,
        list: Vec<Inner>,
        maybe: Option<Inner>,
        map: HashMap<String, u32>,
    }
    let router =
        Router::new("s", "1")
            .tool("awkward", "", |_: Awkward| async { "" })
            .tool("shape", "", |_: Shape| async { "" })
            .tool_route(ToolRoute::new("noargs", |_: crate::router::NoArgs| async { "" }).icon(
                arbor_protocol::model::common::Icon::new("data:image/png;base64,AA==").with_mime_type("image/png"),
            ));
    let list = router.list_tools(first_page(), cx()).await.unwrap();
    check("ListToolsResult", &list, true);
    let awkward = Value::Object(list.tools[0].input_schema.clone());
    assert!(awkward.get("$defs").is_none(), "subschemas are inlined for draft-07 clients: {awkward:#}");
    assert_eq!(list.tools[1].input_schema["type"], "object", "a tagged enum is an object too");
}

#[tokio::test]
async fn tool_results_are_valid_in_every_revision() {
    let router = fixture();
    check("CallToolResult", &call(&router, "add", json!({"a": 1, "b": 2})).await.unwrap(), false);
    check("CallToolResult", &call(&router, "add", json!({"a": "x"})).await.unwrap(), false);
    check("CallToolResult", &call(&router, "divide", json!({"dividend": 1, "divisor": 2})).await.unwrap(), false);
    check("CallToolResult", &call(&router, "divide", json!({"dividend": 1, "divisor": 0})).await.unwrap(), false);
}

#[tokio::test]
async fn prompt_read_and_completion_results_are_valid_in_every_revision() {
    use arbor_protocol::model::completion::{CompleteArgument, CompleteRequestParams, Reference};
    use arbor_protocol::model::prompts::GetPromptRequestParams;
    use arbor_protocol::model::resources::ReadResourceRequestParams;
    let router = fixture();

    let params = GetPromptRequestParams::new("greet").with_argument("name", "Ada");
    let Reply::Complete(prompt) = router.get_prompt(params, cx()).await.unwrap() else { panic!() };
    check("GetPromptResult", &prompt, false);

    for uri in ["test://static/readme", "test://static/bytes", "test://template/1/data"] {
        let params = ReadResourceRequestParams::new(uri);
        let Reply::Complete(read) = router.read_resource(params, cx()).await.unwrap() else { panic!() };
        check("ReadResourceResult", &read, true);
    }

    let params = CompleteRequestParams::new(Reference::prompt("greet"), CompleteArgument::new("name", "A"));
    check("CompleteResult", &router.complete(params, cx()).await.unwrap(), false);
}

//! Tools: schema derivation, argument validation, typed output, error mapping.

use super::*;
use crate::router::{Json, NoArgs};
use crate::ToolTerms;

#[tokio::test]
async fn input_schema_is_an_object_with_required_fields_and_no_dialect_uri() {
    let list = fixture().list_tools(first_page(), cx()).await.unwrap();
    let add = list.tools.iter().find(|t| t.name == "add").unwrap();
    let schema = Value::Object(add.input_schema.clone());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["properties"]["a"]["description"], "The first addend.");
    assert!(schema.get("$schema").is_none(), "older clients' validators choke on a 2020-12 $schema");
    assert_eq!(add.description.as_deref(), Some("Add two numbers"));
    assert!(add.output_schema.is_none());
}

#[tokio::test]
async fn optional_fields_are_not_required() {
    #[derive(Deserialize, JsonSchema)]
    struct Args {
        #[allow(dead_code)]
        must: String,
        #[allow(dead_code)]
        may: Option<String>,
        #[serde(default)]
        #[allow(dead_code)]
        defaulted: u8,
    }
    let route = ToolRoute::new("t", |_: Args| async { "ok" });
    assert_eq!(route.definition().input_schema["required"], json!(["must"]));
}

#[tokio::test]
async fn a_tool_without_arguments_has_the_recommended_empty_schema() {
    let route = ToolRoute::new("noop", |_: NoArgs| async {});
    assert_eq!(
        Value::Object(route.definition().input_schema.clone()),
        json!({"type": "object", "additionalProperties": false})
    );
    let router = Router::new("s", "1").tool_route(route);
    assert!(call(&router, "noop", json!({})).await.unwrap().is_error.is_none());
    let extra = call(&router, "noop", json!({"x": 1})).await.unwrap();
    assert_eq!(extra.is_error, Some(true));
}

#[tokio::test]
async fn a_valid_call_runs_the_handler() {
    let result = call(&fixture(), "add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(text_of(&result), "5");
    assert_eq!(result.is_error, None);
}

#[tokio::test]
async fn invalid_arguments_are_an_error_result_naming_the_problem() {
    let router = fixture();
    let wrong_type = call(&router, "add", json!({"a": "two", "b": 3})).await.unwrap();
    assert_eq!(wrong_type.is_error, Some(true));
    let text = text_of(&wrong_type);
    assert!(text.contains("/a") && text.contains("integer"), "{text}");

    let missing = call(&router, "add", json!({"a": 2})).await.unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert!(text_of(&missing).contains("\"b\""), "{}", text_of(&missing));
}

#[tokio::test]
async fn absent_arguments_are_an_empty_object() {
    let params = CallToolRequestParams::new("add");
    let Reply::Complete(result) = fixture().call_tool(params, cx()).await.unwrap() else { panic!() };
    assert_eq!(result.is_error, Some(true), "a and b are required");
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let err = call(&fixture(), "subtract", json!({})).await.unwrap_err();
    assert_eq!(code(&err), -32602);
    assert!(err.message().contains("subtract"));
}

#[tokio::test]
async fn tool_errors_are_results_unless_they_are_protocol_errors() {
    let router = Router::new("s", "1")
        .tool("fails", "", |_: NoArgs| async { Err::<String, _>(ToolError::failed("disk full")) })
        .tool("io", "", |_: NoArgs| async { Err::<String, _>(std::io::Error::other("broken pipe")) })
        .tool("protocol", "", |_: NoArgs| async { Err::<String, _>(McpError::invalid_params("nope")) })
        .tool("bug", "", |_: NoArgs| async { Err::<String, _>(ToolError::internal("oops")) });
    let fails = call(&router, "fails", json!({})).await.unwrap();
    assert_eq!((fails.is_error, text_of(&fails).as_str()), (Some(true), "disk full"));
    assert_eq!(text_of(&call(&router, "io", json!({})).await.unwrap()), "broken pipe");
    assert_eq!(code(&call(&router, "protocol", json!({})).await.unwrap_err()), -32602);
    assert_eq!(code(&call(&router, "bug", json!({})).await.unwrap_err()), -32603);
    assert!(ToolError::internal("x").is_protocol() && !ToolError::failed("x").is_protocol());
}

#[tokio::test]
async fn typed_output_has_a_schema_and_comes_back_structured_and_as_text() {
    let router = fixture();
    let list = router.list_tools(first_page(), cx()).await.unwrap();
    let divide = list.tools.iter().find(|t| t.name == "divide").unwrap();
    let output = Value::Object(divide.output_schema.clone().expect("an output schema"));
    assert_eq!(output["type"], "object");
    assert_eq!(output["required"], json!(["quotient"]));

    let result = call(&router, "divide", json!({"dividend": 6, "divisor": 4})).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"quotient": 1.5})));
    let text: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(text, json!({"quotient": 1.5}), "the text block carries the same JSON for older clients");

    let refused = call(&router, "divide", json!({"dividend": 1, "divisor": 0})).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(refused.structured_content.is_none());
    assert!(text_of(&refused).contains("divisor is zero"));
}

#[tokio::test]
async fn output_that_breaks_its_schema_is_an_internal_error() {
    #[derive(Serialize, JsonSchema)]
    struct Liar {
        // Serialises as a string while its schema promises an integer.
        #[schemars(with = "i64")]
        n: String,
    }
    let router = Router::new("s", "1")
        .tool_with_output("liar", "", |_: NoArgs| async { Ok::<_, ToolError>(Liar { n: "many".into() }) });
    let err = call(&router, "liar", json!({})).await.unwrap_err();
    assert_eq!(code(&err), -32603);
    assert!(err.message().contains("outputSchema"));
}

#[tokio::test]
async fn typed_output_may_ask_for_input() {
    let router = Router::new("s", "1").tool_with_output("ask", "", |_: NoArgs, _cx: RequestContext| async {
        Ok::<Reply<Quotient>, ToolError>(Reply::InputRequired(InputRequired::new().roots("r")))
    });
    let params = CallToolRequestParams::new("ask");
    assert!(matches!(router.call_tool(params, cx()).await.unwrap(), Reply::InputRequired(_)));
}

#[tokio::test]
async fn a_tool_may_answer_input_required_and_has_its_metadata_and_deadline() {
    let router = fixture();
    let params = CallToolRequestParams::new("ask");
    let Reply::InputRequired(input) = router.call_tool(params, cx()).await.unwrap() else { panic!("complete") };
    assert!(input.requests.contains_key("roots"));
    assert_eq!(input.state, Some(json!({"step": 1})));

    let list = router.list_tools(first_page(), cx()).await.unwrap();
    let ask = list.tools.iter().find(|t| t.name == "ask").unwrap();
    assert_eq!(ask.title.as_deref(), Some("Ask for roots"));
    assert_eq!(ask.annotations.as_ref().unwrap().read_only_hint, Some(true));
    assert_eq!(router.tool_deadline("ask"), Some(Duration::from_secs(3)));
    assert_eq!(router.tool_deadline("add"), None);
    assert_eq!(router.tool_deadline("nope"), None);
}

/// Only a route whose result type can be "input required" says it asks for input: a
/// 2026-07-28 call of the others keeps no copy of its arguments.
#[tokio::test]
async fn only_a_tool_whose_result_can_ask_says_it_asks_for_input() {
    let router = fixture()
        .tool("text", "", |_: NoArgs, _cx: RequestContext| async { "t".to_owned() })
        .tool("json", "", |_: NoArgs, _cx: RequestContext| async { Ok::<_, ToolError>(Json(json!({}))) })
        .tool_with_output("typed", "", |_: NoArgs, _cx: RequestContext| async {
            Ok::<Quotient, ToolError>(Quotient { quotient: 1.0 })
        })
        .tool_with_output("typed_ask", "", |_: NoArgs, _cx: RequestContext| async {
            Ok::<Reply<Quotient>, ToolError>(Reply::Complete(Quotient { quotient: 1.0 }))
        });
    for (tool, asks) in [
        ("ask", true),
        ("add", false),
        ("text", false),
        ("json", false),
        ("typed", false),
        ("typed_ask", true),
        ("divide", false),
        ("nope", true),
    ] {
        assert_eq!(router.tool_asks_input(tool), asks, "{tool}");
        // The one-lookup answer the runtime asks agrees with the two it stands for.
        let terms = router.tool_terms(tool);
        assert_eq!(terms, ToolTerms::new(router.tool_deadline(tool), asks), "{tool}");
    }
    assert_eq!(router.tool_terms("ask").deadline, Some(Duration::from_secs(3)));
}

#[tokio::test]
async fn every_result_shape_converts() {
    let router = Router::new("s", "1")
        .tool("str", "", |_: NoArgs| async { "plain" })
        .tool("blocks", "", |_: NoArgs| async { vec![ContentBlock::text("a"), ContentBlock::text("b")] })
        .tool("json", "", |_: NoArgs| async { Json(json!({"k": [1, 2]})) })
        .tool("json_array", "", |_: NoArgs| async { Json(vec![1, 2]) })
        .tool("full", "", |_: NoArgs| async { CallToolResult::new(vec![]).with_is_error(true) });
    assert_eq!(text_of(&call(&router, "str", json!({})).await.unwrap()), "plain");
    assert_eq!(text_of(&call(&router, "blocks", json!({})).await.unwrap()), "ab");
    let json_result = call(&router, "json", json!({})).await.unwrap();
    assert_eq!(json_result.structured_content, Some(json!({"k": [1, 2]})));
    let array = call(&router, "json_array", json!({})).await.unwrap();
    assert_eq!(array.structured_content, None, "only objects are structuredContent in every revision");
    assert_eq!(text_of(&array), "[1,2]");
    assert_eq!(call(&router, "full", json!({})).await.unwrap().is_error, Some(true));
}

#[test]
#[should_panic(expected = "does not have \"type\": \"object\"")]
fn a_non_object_argument_type_is_refused_at_registration() {
    let _ = ToolRoute::new("bad", |_: String| async { "" });
}

#[test]
#[should_panic(expected = "registered twice")]
fn a_duplicate_tool_is_refused_at_registration() {
    let _ = Router::new("s", "1").tool("add", "", add).tool("add", "", add);
}

#[test]
fn mcp_header_annotations_are_kept_when_valid_and_refused_when_clients_would_drop_the_tool() {
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Good {
        #[schemars(extend("x-mcp-header" = "Region"))]
        region: String,
        #[schemars(extend("x-mcp-header" = "Dry-Run"))]
        dry_run: Option<bool>,
    }
    let route = ToolRoute::new("good", |_: Good| async { "" });
    assert_eq!(route.definition().input_schema["properties"]["region"]["x-mcp-header"], "Region");

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct OnNumber {
        #[schemars(extend("x-mcp-header" = "Ratio"))]
        ratio: f64,
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct OnArray {
        #[schemars(extend("x-mcp-header" = "Tag"))]
        tags: Vec<String>,
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Twice {
        #[schemars(extend("x-mcp-header" = "Id"))]
        a: String,
        #[schemars(extend("x-mcp-header" = "ID"))]
        b: String,
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct NotAToken {
        #[schemars(extend("x-mcp-header" = "two words"))]
        a: String,
    }
    let refused = |f: fn()| std::panic::catch_unwind(f).is_err();
    assert!(refused(|| drop(ToolRoute::new("t", |_: OnNumber| async { "" }))));
    assert!(refused(|| drop(ToolRoute::new("t", |_: OnArray| async { "" }))));
    assert!(refused(|| drop(ToolRoute::new("t", |_: Twice| async { "" }))));
    assert!(refused(|| drop(ToolRoute::new("t", |_: NotAToken| async { "" }))));
}

#[tokio::test]
async fn a_tool_type_keeps_its_state_across_calls() {
    use crate::router::Tool;
    use std::sync::atomic::{AtomicI64, Ordering};

    #[derive(Default)]
    struct Accumulator(AtomicI64);

    impl Tool for Accumulator {
        type Input = AddArgs;
        type Output = Result<Quotient, ToolError>;

        async fn call(&self, input: AddArgs, _cx: RequestContext) -> Self::Output {
            let total = self.0.fetch_add(input.a + input.b, Ordering::SeqCst) + input.a + input.b;
            Ok(Quotient { quotient: total as f64 })
        }
    }

    let router = Router::new("s", "1").tool_route(ToolRoute::from_tool_with_output("acc", Accumulator::default()));
    call(&router, "acc", json!({"a": 1, "b": 2})).await.unwrap();
    let second = call(&router, "acc", json!({"a": 3, "b": 4})).await.unwrap();
    assert_eq!(second.structured_content, Some(json!({"quotient": 10.0})));
}

#[tokio::test]
async fn resource_cache_hints_fill_only_what_the_reader_left_unset() {
    use crate::router::ResourceRoute;
    use arbor_protocol::model::common::CacheScope;
    use arbor_protocol::model::resources::{ReadResourceRequestParams, ReadResourceResult};
    let router = Router::new("s", "1")
        .resource_route(
            ResourceRoute::new("test://hinted", "h", || async { "x" })
                .cache_hint(Duration::from_secs(60), CacheScope::Public),
        )
        .resource_route(
            ResourceRoute::new("test://own", "o", |cx: RequestContext| async move {
                let _ = cx;
                ReadResourceResult::new(vec![]).with_ttl_ms(5)
            })
            .cache_hint(Duration::from_secs(60), CacheScope::Public),
        )
        .template_route(
            TemplateRoute::new("test://t/{name}", "t", named)
                .cache_hint(Duration::from_millis(1500), CacheScope::Private),
        );
    let read = |uri: &'static str| {
        let router = router.clone();
        async move {
            let params = ReadResourceRequestParams::new(uri);
            match router.read_resource(params, cx()).await.unwrap() {
                Reply::Complete(r) => (r.ttl_ms, r.cache_scope),
                Reply::InputRequired(_) => panic!(),
            }
        }
    };
    assert_eq!(read("test://hinted").await, (Some(60_000), Some(CacheScope::Public)));
    assert_eq!(read("test://own").await, (Some(5), Some(CacheScope::Public)), "the reader's own ttl wins");
    assert_eq!(read("test://t/x").await, (Some(1500), Some(CacheScope::Private)));
}

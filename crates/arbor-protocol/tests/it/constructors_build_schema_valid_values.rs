//! The model constructors (`Resource::new`, `PromptMessage::user`, `Tool::new`, ...)
//! build values that validate against the newest revision's schema, and set nothing
//! but what they were given: no `extra` member, no optional member left as `null`.
//!
//! Results are checked twice: as built, against 2025-11-25 (the newest revision whose
//! results carry no per-request members); and against 2026-07-28 after the members a
//! server stamps on every result there (`resultType`, and `ttlMs`/`cacheScope` for the
//! cacheable ones), since a handler never sets those itself. Request params likewise:
//! as built against 2025-11-25, and against 2026-07-28 with the `_meta` a client stamps.

use crate::revision_builders::{Build, Rev};
use crate::spec_schemas::assert_valid;
use arbor_protocol::model::common::{Icon, Role};
use arbor_protocol::model::content::*;
use arbor_protocol::model::elicitation::*;
use arbor_protocol::model::prompts::*;
use arbor_protocol::model::resources::*;
use arbor_protocol::model::roots::*;
use arbor_protocol::model::sampling::*;
use arbor_protocol::model::subscriptions::ResourceUpdatedNotificationParams;
use arbor_protocol::model::tools::*;
use serde_json::{json, Value};

const NEWEST: &str = "2026-07-28";
const NEWEST_WITHOUT_STAMPS: &str = "2025-11-25";

fn encode<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("a model value encodes")
}

/// Checks a value that is not a result against the newest revision.
fn check<T: serde::Serialize>(definition: &str, value: &T) -> Value {
    let json = encode(value);
    assert_valid(NEWEST, definition, &json);
    json
}

/// Checks a result as built, then as a 2026-07-28 server sends it.
fn check_result<T: serde::Serialize>(definition: &str, value: &T, cacheable: bool) -> Value {
    let json = encode(value);
    assert_valid(NEWEST_WITHOUT_STAMPS, definition, &json);
    let mut stamped = json.clone();
    let object = stamped.as_object_mut().expect("a result is an object");
    object.insert("resultType".into(), json!("complete"));
    if cacheable {
        object.insert("ttlMs".into(), json!(0));
        object.insert("cacheScope".into(), json!("private"));
    }
    assert_valid(NEWEST, definition, &stamped);
    json
}

fn schema() -> serde_json::Map<String, Value> {
    json!({ "type": "object", "properties": { "city": { "type": "string" } } }).as_object().cloned().unwrap_or_default()
}

#[test]
fn content_blocks_from_constructors_are_valid_blocks() {
    let blocks = [
        ContentBlock::text("hello"),
        "hello".into(),
        ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ContentBlock::Image(ImageContent::from_bytes(b"\x89PNG", "image/png")),
        ContentBlock::audio("UklGRg==", "audio/wav"),
        ContentBlock::resource_link("file:///a.txt", "a"),
        ContentBlock::ResourceLink(
            ResourceLink::new("file:///a.txt", "a")
                .with_description("A file")
                .with_mime_type("text/plain")
                .with_size(3u64),
        ),
        ContentBlock::resource(ResourceContents::text("file:///a.txt", "abc").with_mime_type("text/plain")),
        ContentBlock::resource(ResourceContents::blob("file:///a.bin", b"\x00\x01")),
    ];
    for block in &blocks {
        check("ContentBlock", block);
    }
    assert_eq!(encode(&blocks[0]), json!({ "type": "text", "text": "hello" }));
    assert_eq!(blocks[0], blocks[1], "a &str converts to a text block");
    assert_eq!(encode(&blocks[2]), json!({ "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }));
    assert_eq!(encode(&blocks[3])["data"], json!("iVBORw=="), "from_bytes encodes base64");
    assert_eq!(encode(&blocks[5]), json!({ "type": "resource_link", "uri": "file:///a.txt", "name": "a" }));
    assert_eq!(
        encode(&blocks[7]),
        json!({ "type": "resource", "resource": { "uri": "file:///a.txt", "mimeType": "text/plain", "text": "abc" } })
    );
    assert_eq!(encode(&blocks[8])["resource"], json!({ "uri": "file:///a.bin", "blob": "AAE=" }));
}

#[test]
fn prompt_types_from_constructors_are_valid() {
    let user = check("PromptMessage", &PromptMessage::user("Review this"));
    assert_eq!(user, json!({ "role": "user", "content": { "type": "text", "text": "Review this" } }));
    let assistant = check("PromptMessage", &PromptMessage::assistant(String::from("Sure")));
    assert_eq!(assistant["role"], json!("assistant"));
    check("PromptMessage", &PromptMessage::new(Role::User, ContentBlock::image("iVBORw0KGgo=", "image/png")));

    let prompt = Prompt::new("review")
        .with_title("Code review")
        .with_description("Review code")
        .with_argument(PromptArgument::new("code").with_description("The code").required())
        .with_argument(PromptArgument::new("style"));
    let json = check("Prompt", &prompt);
    assert_eq!(
        json["arguments"],
        json!([{ "name": "code", "description": "The code", "required": true }, { "name": "style" }])
    );
    assert_eq!(check("Prompt", &Prompt::new("bare")), json!({ "name": "bare" }));

    let result = GetPromptResult::new(vec![PromptMessage::user("hi")]).with_description("Greets");
    let json = check_result("GetPromptResult", &result, false);
    assert_eq!(
        json,
        json!({ "description": "Greets", "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }] })
    );
    check_result("ListPromptsResult", &ListPromptsResult::new(vec![prompt]).with_next_cursor("2"), true);
}

#[test]
fn resource_types_from_constructors_are_valid() {
    let resource = Resource::new("file:///a.txt", "a")
        .with_title("A")
        .with_description("The letter a")
        .with_mime_type("text/plain")
        .with_size(1u64);
    check("Resource", &resource);
    assert_eq!(check("Resource", &Resource::new("file:///b.txt", "b")), json!({ "uri": "file:///b.txt", "name": "b" }));
    let template =
        ResourceTemplate::new("file:///{name}", "files").with_description("Any file").with_mime_type("text/plain");
    let json = check("ResourceTemplate", &template);
    assert_eq!(json["uriTemplate"], json!("file:///{name}"));

    let read = check_result("ReadResourceResult", &ReadResourceResult::text("file:///a.txt", "a"), true);
    assert_eq!(read, json!({ "contents": [{ "uri": "file:///a.txt", "text": "a" }] }));
    let contents = vec![
        ResourceContents::Text(TextResourceContents::new("file:///a.txt", "a").with_mime_type("text/plain")),
        ResourceContents::Blob(BlobResourceContents::new("file:///b.bin", "AAE=")),
    ];
    check_result("ReadResourceResult", &ReadResourceResult::new(contents), true);
    check_result("ListResourcesResult", &ListResourcesResult::new(vec![resource]), true);
    check_result("ListResourceTemplatesResult", &ListResourceTemplatesResult::new(vec![template]), true);
    check("ResourceUpdatedNotificationParams", &ResourceUpdatedNotificationParams::new("file:///a.txt"));
    check("Icon", &Icon::new("https://example.com/icon.png").with_mime_type("image/png"));
}

#[test]
fn tool_types_from_constructors_are_valid() {
    let annotations = ToolAnnotations::new().with_title("Weather").with_read_only_hint(true).with_open_world_hint(true);
    let tool = Tool::new("get_weather", schema())
        .with_title("Weather")
        .with_description("The weather in a city")
        .with_output_schema(schema())
        .with_annotations(annotations);
    let json = check("Tool", &tool);
    assert_eq!(json["annotations"], json!({ "title": "Weather", "readOnlyHint": true, "openWorldHint": true }));
    check_result("ListToolsResult", &ListToolsResult::new(vec![tool]), true);

    let ok = check_result("CallToolResult", &CallToolResult::from_text("sunny"), false);
    assert_eq!(ok, json!({ "content": [{ "type": "text", "text": "sunny" }] }));
    let failed = check_result("CallToolResult", &CallToolResult::from_error_text("no such city"), false);
    assert_eq!(failed["isError"], json!(true));
    let structured = CallToolResult::new(vec!["{\"t\":21}".into()]).with_structured_content(json!({ "t": 21 }));
    let json = check_result("CallToolResult", &structured, false);
    assert_eq!(json["structuredContent"], json!({ "t": 21 }));
}

#[test]
fn sampling_requests_from_constructors_are_valid() {
    let params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user("Summarise this"), SamplingMessage::assistant("It says hello")],
        300,
    )
    .with_system_prompt("Be brief");
    let json = check("CreateMessageRequestParams", &params);
    assert_eq!(json["messages"][0], json!({ "role": "user", "content": { "type": "text", "text": "Summarise this" } }));
    assert_eq!(json["maxTokens"], json!(300));
}

/// Checks request params as built, then with the `_meta` a 2026-07-28 client sends.
fn check_request<T: serde::Serialize>(definition: &str, value: &T) -> Value {
    let json = encode(value);
    assert_valid(NEWEST_WITHOUT_STAMPS, definition, &json);
    let mut stamped = json.clone();
    let meta = encode(&Build(Rev::V2026_07_28).request_meta());
    stamped.as_object_mut().expect("params are an object").insert("_meta".into(), meta);
    assert_valid(NEWEST, definition, &stamped);
    json
}

#[test]
fn client_requests_and_answers_from_constructors_are_valid() {
    let arguments = json!({ "city": "Paris" }).as_object().cloned().unwrap_or_default();
    let call =
        check_request("CallToolRequestParams", &CallToolRequestParams::new("get_weather").with_arguments(arguments));
    assert_eq!(call, json!({ "name": "get_weather", "arguments": { "city": "Paris" } }));
    let get = GetPromptRequestParams::new("review").with_argument("code", "fn main() {}").with_argument("lang", "rust");
    let get = check_request("GetPromptRequestParams", &get);
    assert_eq!(get["arguments"], json!({ "code": "fn main() {}", "lang": "rust" }));
    let read = check_request("ReadResourceRequestParams", &ReadResourceRequestParams::new("file:///a.txt"));
    assert_eq!(read, json!({ "uri": "file:///a.txt" }));

    let values = json!({ "confirm": true }).as_object().cloned().unwrap_or_default();
    assert_eq!(
        check("ElicitResult", &ElicitResult::accept(values)),
        json!({ "action": "accept", "content": { "confirm": true } })
    );
    assert_eq!(check("ElicitResult", &ElicitResult::decline()), json!({ "action": "decline" }));
    assert_eq!(check("ElicitResult", &ElicitResult::cancel()), json!({ "action": "cancel" }));
    let sampled = CreateMessageResult::new("claude", TextContent::new("It says hello")).with_stop_reason("endTurn");
    let sampled = check("CreateMessageResult", &sampled);
    assert_eq!(sampled["role"], json!("assistant"));
    assert_eq!(sampled["content"], json!({ "type": "text", "text": "It says hello" }));
    let roots = ListRootsResult::new(vec![Root::new("file:///home/ada").with_name("home"), Root::new("file:///tmp")]);
    assert_eq!(check("ListRootsResult", &roots)["roots"][1], json!({ "uri": "file:///tmp" }));
}

#[test]
fn forms_from_constructors_are_valid_elicitation_params() {
    let confirm = BooleanSchema::default().with_title("Delete").with_description("Delete it?").with_default(false);
    let form = RequestedSchema::new()
        .with_required_property("confirm", confirm)
        .with_property("reason", StringSchema::default().with_title("Why"));
    let params = check("ElicitRequestFormParams", &ElicitRequestFormParams::new("Delete a.txt?", form));
    assert_eq!(params["requestedSchema"]["required"], json!(["confirm"]));
    assert_eq!(params["requestedSchema"]["properties"]["confirm"]["type"], json!("boolean"));
    assert_eq!(params["requestedSchema"]["properties"]["reason"], json!({ "type": "string", "title": "Why" }));
}

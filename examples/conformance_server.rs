//! The conformance fixture server: the test surface the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) calls by name, built with Arbor's `Router`.
//!
//! ```sh
//! cargo run --example conformance_server -- --port 3001      # Streamable HTTP, 127.0.0.1:3001/mcp
//! cargo run --example conformance_server -- --stdio
//! scripts/conformance                                         # every suite CI runs, over HTTP
//! ```
//!
//! The names, arguments and answer texts follow the suite's reference server
//! (`examples/servers/typescript/everything-server.ts` in `modelcontextprotocol/conformance`,
//! v0.1.16 and the 0.2.0 alpha line), written from what it does rather than translated:
//!
//! - content tools (`test_simple_text`, `test_image_content`, `test_audio_content`,
//!   `test_embedded_resource`, `test_multiple_content_types`), `test_tool_with_logging`,
//!   `test_tool_with_progress`, `test_error_handling`, `test_reconnection`,
//!   `json_schema_2020_12_tool`;
//! - tools that ask the client for input (`test_sampling`, `test_elicitation`,
//!   `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`) and the
//!   2026-07-28 MRTR fixtures (`test_missing_capability`, `test_input_required_result_*`,
//!   the prompt `test_input_required_result_prompt`, `test_streaming_elicitation`,
//!   `test_logging_tool`). Each is one handler answering `Reply::InputRequired`; the
//!   runtime turns it into server-to-client requests for legacy clients and into an MRTR
//!   `input_required` result with a sealed `requestState` for 2026-07-28 clients, and it
//!   enforces the client's declared capabilities (-32021) and the state's integrity;
//! - resources `test://static-text`, `test://static-binary`, `test://watched-resource`,
//!   the template `test://template/{id}/data`, the prompts `test_simple_prompt`,
//!   `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`,
//!   `test_prompt_with_image`, and completions;
//! - the tasks extension's fixtures (`greet`, `slow_compute`, `failing_job`,
//!   `protocol_error_job`, `confirm_delete`, `multi_input`, `test_tool_with_task`), in
//!   `conformance_tasks.rs`: plain tools whose routes opt into tasks;
//! - the skills extension (`io.modelcontextprotocol/skills`): the skill folders in
//!   `tests/fixtures/skills` (`pdf-processing` and `acme/billing/refunds`), served by
//!   `Router::skills_dir` for the `sep-2640-skills-*` scenarios;
//! - list changes: dynamic items appear two seconds after start, and
//!   `test_trigger_tool_change` / `test_trigger_prompt_change` toggle an item on demand,
//!   both through the router's `RouterHandle`, so clients get `list_changed`.
//!
//! Every item has a description: the suite insists on it. Over HTTP (`--port N`) the
//! endpoint is `arbor_http` with its defaults (loopback `Host`/`Origin` checks for
//! `dns-rebinding-protection`, both eras on `/mcp`), plus SEP-1699 polling for
//! `server-sse-polling`: see [`http_config`]. Logs go to stderr (stdout carries the
//! protocol on stdio).

#[path = "conformance_tasks.rs"]
mod tasks;

use std::process::ExitCode;
use std::time::Duration;

use arbor_protocol::model::content::{BlobResourceContents, ContentBlock, ResourceContents, SamplingContent};
use arbor_protocol::model::elicitation::{ElicitAction, ElicitRequestParams};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::prompts::{GetPromptResult, PromptMessage};
use arbor_protocol::model::sampling::{CreateMessageRequestParams, SamplingMessage, SamplingMessageContent};
use arbor_protocol::model::tools::CallToolResult;
use arbor_protocol::version::Feature;
use arbor_server::router::{
    completion, NoArgs, PromptRoute, ResourceRoute, Router, RouterHandle, TemplateRoute, ToolError, ToolRoute,
};
use arbor_server::{InputRequired, Reply, RequestContext, Server};

#[path = "common/http.rs"]
mod http;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

const USAGE: &str = "usage: conformance_server [--stdio | --port N]\n\
    Serves the MCP conformance suite's test surface on stdin/stdout (the default),\n\
    or with --port N over Streamable HTTP at http://127.0.0.1:N/mcp (0: a free port).";

/// A 1×1 red PNG.
const TEST_IMAGE_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

// ===== small builders =====

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::text(text)
}

fn image() -> ContentBlock {
    ContentBlock::image(TEST_IMAGE_BASE64, "image/png")
}

fn embedded_text(uri: &str, mime_type: &str, body: impl Into<String>) -> ContentBlock {
    ContentBlock::resource(ResourceContents::text(uri, body).with_mime_type(mime_type))
}

fn result(content: Vec<ContentBlock>) -> CallToolResult {
    CallToolResult::new(content)
}

fn user(content: ContentBlock) -> PromptMessage {
    PromptMessage::user(content)
}

/// A form-mode elicitation. The forms are the suite's own JSON, so they are written as
/// JSON and decoded into the typed params, which checks them against the spec's shapes.
fn form(message: &str, requested_schema: Value) -> ElicitRequestParams {
    serde_json::from_value(json!({ "message": message, "requestedSchema": requested_schema }))
        .expect("the fixture's forms are valid elicitation params")
}

/// A sampling request of one user message.
fn ask_model(prompt: impl Into<String>, max_tokens: i64) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user(prompt)], max_tokens)
}

// ===== reading the client's answers =====

/// The answer under `key`, if the client gave one.
fn answer<'a>(cx: &'a RequestContext, key: &str) -> Option<&'a InputResponse> {
    cx.input_responses().and_then(|answers| answers.get(key))
}

/// The action and submitted form of the elicitation answered under `key`.
fn elicited<'a>(cx: &'a RequestContext, key: &str) -> Option<(ElicitAction, Option<&'a Map<String, Value>>)> {
    match answer(cx, key)? {
        InputResponse::Elicit(r) => Some((r.action, r.content.as_ref())),
        _ => None,
    }
}

/// One string field of the form submitted under `key`, as the reference server reads it.
fn elicited_text(cx: &RequestContext, key: &str, field: &str) -> String {
    elicited(cx, key)
        .and_then(|(_, content)| content?.get(field)?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// The text of the model's reply answered under `key`.
fn sampled_text(cx: &RequestContext, key: &str) -> Option<String> {
    let InputResponse::CreateMessage(reply) = answer(cx, key)? else { return None };
    let blocks = match &reply.content {
        SamplingMessageContent::One(block) => std::slice::from_ref(block),
        SamplingMessageContent::Many(blocks) => blocks.as_slice(),
    };
    blocks.iter().find_map(|b| match b {
        SamplingContent::Text(t) => Some(t.text.clone()),
        _ => None,
    })
}

/// How many roots the client listed under `key`.
fn roots_count(cx: &RequestContext, key: &str) -> Option<usize> {
    match answer(cx, key)? {
        InputResponse::ListRoots(r) => Some(r.roots.len()),
        _ => None,
    }
}

/// The state this handler sealed into the previous round, read as `kind`.
fn state_kind(cx: &RequestContext) -> Option<&str> {
    cx.input_state()?.get("kind")?.as_str()
}

fn render(content: Option<&Map<String, Value>>) -> String {
    serde_json::to_string(&content.cloned().unwrap_or_default()).unwrap_or_default()
}

// ===== content tools =====

async fn simple_text(_: NoArgs) -> &'static str {
    "This is a simple text response for testing."
}

async fn image_content(_: NoArgs) -> ContentBlock {
    image()
}

async fn audio_content(_: NoArgs, cx: RequestContext) -> Result<ContentBlock, ToolError> {
    // Audio blocks exist from 2025-03-26 on; an older client could not read one, so it is
    // told why instead (the runtime passes handler content through unchanged).
    let version = cx.connection().protocol_version;
    if !version.supports(Feature::AudioContent) {
        return Err(ToolError::failed(format!(
            "Audio content needs protocol revision 2025-03-26 or later; this session uses {}",
            version.as_str()
        )));
    }
    Ok(ContentBlock::audio(TEST_AUDIO_BASE64, "audio/wav"))
}

async fn embedded_resource(_: NoArgs) -> ContentBlock {
    embedded_text("test://embedded-resource", "text/plain", "This is an embedded resource content.")
}

async fn multiple_content_types(_: NoArgs) -> Vec<ContentBlock> {
    vec![
        text("Multiple content types test:"),
        image(),
        embedded_text(
            "test://mixed-content-resource",
            "application/json",
            json!({"test": "data", "value": 123}).to_string(),
        ),
    ]
}

async fn tool_with_logging(_: NoArgs, cx: RequestContext) -> &'static str {
    // The runtime filters by the client's level (`logging/setLevel`, or the request's
    // `logLevel` in 2026-07-28) and drops logs of a stopped request.
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cx.log(LoggingLevel::Info, Some("test_tool_with_logging"), json!(message));
    }
    "Tool with logging executed successfully"
}

async fn tool_with_progress(_: NoArgs, cx: RequestContext) -> String {
    for step in [0u32, 50, 100] {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Sends nothing when the request carried no progressToken.
        cx.progress(f64::from(step), Some(100.0), Some(format!("Completed step {step} of 100")));
    }
    // The reference answers with the token it reported progress for.
    match cx.meta().progress_token() {
        Some(token) => match serde_json::to_value(&token) {
            Ok(Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => String::new(),
        },
        None => "0".into(),
    }
}

async fn error_handling(_: NoArgs) -> Result<String, ToolError> {
    // A tool failure is a result with `isError: true` (the model sees it), not a
    // JSON-RPC error.
    Err(ToolError::failed("This tool intentionally returns an error for testing"))
}

async fn reconnection(_: NoArgs) -> &'static str {
    // Over HTTP the server closes a 2025-11-25 POST stream still unanswered after
    // `SSE_POLL_AFTER` (SEP-1699 polling, see `http_config`), so answering after a longer
    // pause makes the client come back with `Last-Event-ID` for the result. Stdio has no
    // stream to close: the call just completes after the pause.
    tokio::time::sleep(RECONNECTION_PAUSE).await;
    "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."
}

/// Arguments of `json_schema_2020_12_tool`. Its schema is written by hand: the point of
/// the fixture is that 2020-12 keywords (`$schema`, `$defs`, `$anchor`, `allOf`/`anyOf`,
/// `if`/`then`/`else`, `additionalProperties`) reach `tools/list` untouched, and the
/// router validates calls against exactly this schema.
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Contact {
    name: Option<String>,
    address: Option<Value>,
    contact_method: Option<String>,
    phone: Option<String>,
    email: Option<String>,
}

impl JsonSchema for Contact {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Contact".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                }
            },
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" },
                "email": { "type": "string" }
            },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
            "then": { "required": ["phone"] },
            "else": { "required": ["email"] },
            "additionalProperties": false
        })
    }
}

async fn json_schema_tool(args: Contact) -> String {
    format!("JSON Schema 2020-12 tool called with: {}", serde_json::to_string(&args).unwrap_or_default())
}

#[derive(Deserialize, JsonSchema)]
struct RegionArgs {
    /// The region to report back. HTTP clients also send it as a request header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// A tool with an `x-mcp-header` argument (SEP-2243), for the suite's custom-header checks,
/// which only HTTP can exercise: over stdio it is a plain echo.
async fn custom_header(args: RegionArgs) -> String {
    format!("Region: {}", args.region)
}

// ===== tools that ask the client (both eras) =====

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

async fn sampling(args: SamplingArgs, cx: RequestContext) -> Reply<CallToolResult> {
    const KEY: &str = "llm";
    if answer(&cx, KEY).is_none() {
        return Reply::InputRequired(InputRequired::new().sample(KEY, ask_model(args.prompt, 100)));
    }
    let reply = sampled_text(&cx, KEY).unwrap_or_else(|| "No response".into());
    Reply::Complete(result(vec![text(format!("LLM response: {reply}"))]))
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

async fn elicitation(args: ElicitationArgs, cx: RequestContext) -> Reply<CallToolResult> {
    const KEY: &str = "response";
    let Some((action, content)) = elicited(&cx, KEY) else {
        let schema = json!({
            "type": "object",
            "properties": { "response": { "type": "string", "description": "User's response" } },
            "required": ["response"]
        });
        return Reply::InputRequired(InputRequired::new().elicit(KEY, form(&args.message, schema)));
    };
    let report = format!("User response: action={}, content={}", action_name(action), render(content));
    Reply::Complete(result(vec![text(report)]))
}

fn action_name(action: ElicitAction) -> &'static str {
    match action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    }
}

/// Asks once with `schema`, then reports what the user did (SEP-1034, SEP-1330 fixtures).
fn form_round(cx: &RequestContext, message: &str, schema: Value) -> Reply<CallToolResult> {
    const KEY: &str = "form";
    let Some((action, content)) = elicited(cx, KEY) else {
        return Reply::InputRequired(InputRequired::new().elicit(KEY, form(message, schema)));
    };
    let report = format!("Elicitation completed: action={}, content={}", action_name(action), render(content));
    Reply::Complete(result(vec![text(report)]))
}

async fn elicitation_defaults(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    });
    form_round(&cx, "Please review and update the form fields with defaults", schema)
}

async fn elicitation_enums(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ]
                }
            }
        },
        "required": []
    });
    // Titled and multi-select fields arrived in 2025-11-25 (SEP-1330); an older session
    // is asked only the two forms its revision has (plain `enum`, and `enumNames`).
    if !cx.connection().protocol_version.supports(Feature::EnumSchemaForms) {
        if let Some(fields) = schema["properties"].as_object_mut() {
            fields.retain(|name, _| name == "untitledSingle" || name == "legacyEnum");
        }
    }
    form_round(&cx, "Please select options from the enum fields", schema)
}

// ===== 2026-07-28 MRTR fixtures =====

/// A one-field text form.
fn ask_text(message: &str, field: &str) -> ElicitRequestParams {
    form(message, json!({ "type": "object", "properties": { field: { "type": "string" } }, "required": [field] }))
}

/// A one-field yes/no form named `ok`.
fn ask_ok() -> ElicitRequestParams {
    form(
        "Please confirm",
        json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] }),
    )
}

async fn missing_capability(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    // Needs the client's model. The runtime checks the request's declared capabilities
    // before anything is asked: without `sampling` the client gets -32021 with
    // `requiredCapabilities: {"sampling": {}}` (and, in the legacy era, an error too).
    if answer(&cx, "model").is_none() {
        return Reply::InputRequired(InputRequired::new().sample("model", ask_model("Say hello", 10)));
    }
    Reply::Complete(result(vec![text("Success")]))
}

async fn irr_elicitation(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    // A retry without the answer (or with only unrelated keys) is asked again, as the
    // spec prefers to an error.
    if elicited(&cx, "user_name").is_none() {
        return Reply::InputRequired(InputRequired::new().elicit("user_name", ask_text("What is your name?", "name")));
    }
    let name = elicited_text(&cx, "user_name", "name");
    Reply::Complete(result(vec![text(format!("Hello, {name}!"))]))
}

async fn irr_sampling(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    const KEY: &str = "capital_question";
    if answer(&cx, KEY).is_none() {
        return Reply::InputRequired(
            InputRequired::new().sample(KEY, ask_model("What is the capital of France?", 100)),
        );
    }
    let reply = sampled_text(&cx, KEY).unwrap_or_else(|| "no response".into());
    Reply::Complete(result(vec![text(format!("Sampling result: {reply}"))]))
}

async fn irr_list_roots(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    const KEY: &str = "client_roots";
    match roots_count(&cx, KEY) {
        Some(n) => Reply::Complete(result(vec![text(format!("Found {n} root(s)"))])),
        None => Reply::InputRequired(InputRequired::new().roots(KEY)),
    }
}

async fn irr_request_state(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    // The state comes back verified by the runtime (it is sealed with an HMAC), so
    // reading it is enough to know this server issued it for this tool.
    let confirmed = elicited(&cx, "confirm").and_then(|(_, content)| content?.get("ok")?.as_bool()).unwrap_or(false);
    if state_kind(&cx) == Some("request-state") && confirmed {
        return Reply::Complete(result(vec![text("state-ok: requestState validated")]));
    }
    Reply::InputRequired(InputRequired::new().elicit("confirm", ask_ok()).state(json!({"kind": "request-state"})))
}

async fn irr_multiple_inputs(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let complete = state_kind(&cx) == Some("multiple-inputs")
        && elicited(&cx, "user_name").is_some()
        && answer(&cx, "greeting").is_some()
        && roots_count(&cx, "client_roots").is_some();
    if !complete {
        // All three go out in one round: concurrently as server-to-client requests in
        // the legacy era, as one `inputRequests` map in 2026-07-28.
        return Reply::InputRequired(
            InputRequired::new()
                .elicit("user_name", ask_text("What is your name?", "name"))
                .sample("greeting", ask_model("Generate a greeting", 50))
                .roots("client_roots")
                .state(json!({"kind": "multiple-inputs"})),
        );
    }
    let name = elicited_text(&cx, "user_name", "name");
    let greeting = sampled_text(&cx, "greeting").unwrap_or_else(|| "Hello there!".into());
    let roots = roots_count(&cx, "client_roots").unwrap_or(0);
    Reply::Complete(result(vec![text(format!("Name: {name}; Greeting: {greeting}; Roots: {roots}"))]))
}

async fn irr_multi_round(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let round = cx.input_state().and_then(|s| s.get("round")).and_then(Value::as_u64);
    match round {
        Some(1) if elicited(&cx, "step1").is_some() => {
            // The name travels to the next round inside the sealed state, so the
            // server keeps nothing between rounds.
            let name = elicited_text(&cx, "step1", "name");
            Reply::InputRequired(
                InputRequired::new()
                    .elicit("step2", ask_text("Step 2: What is your favorite color?", "color"))
                    .state(json!({"round": 2, "name": name})),
            )
        }
        Some(2) if elicited(&cx, "step2").is_some() => {
            let name = cx.input_state().and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or("friend");
            let color = elicited_text(&cx, "step2", "color");
            Reply::Complete(result(vec![text(format!("Multi-round complete for {name} who likes {color}"))]))
        }
        // A first call, or a retry without the answer it needs: start over.
        _ => Reply::InputRequired(
            InputRequired::new()
                .elicit("step1", ask_text("Step 1: What is your name?", "name"))
                .state(json!({"round": 1})),
        ),
    }
}

async fn irr_tampered_state(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    // A tampered requestState never reaches this handler: the runtime refuses it with
    // -32602 before the call.
    if state_kind(&cx) == Some("tamper-test") && elicited(&cx, "confirm").is_some() {
        return Reply::Complete(result(vec![text("integrity-ok: state verified")]));
    }
    Reply::InputRequired(InputRequired::new().elicit("confirm", ask_ok()).state(json!({"kind": "tamper-test"})))
}

async fn irr_capabilities(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let answered: Vec<&str> = cx.input_responses().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
    if !answered.is_empty() {
        return Reply::Complete(result(vec![text(format!("capabilities-ok: received {}", answered.join(",")))]));
    }
    // Ask only for what the client said it can answer.
    let caps = cx.client_capabilities();
    let mut input = InputRequired::new();
    if caps.elicitation.is_some() {
        input = input.elicit("elicit_input", ask_text("Elicitation input", "value"));
    }
    if caps.sampling.is_some() {
        input = input.sample("sample_input", ask_model("Sample request", 50));
    }
    if input.requests.is_empty() {
        return Reply::Complete(result(vec![text("No supported capabilities declared")]));
    }
    Reply::InputRequired(input.state(json!({"kind": "capabilities-test"})))
}

async fn streaming_elicitation(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    // In 2026-07-28 the question travels back as an `input_required` result, never as a
    // request of its own on the response stream; legacy clients get `elicitation/create`.
    if elicited(&cx, "continue").is_none() {
        cx.progress(50.0, Some(100.0), Some("Waiting for the user".into()));
        return Reply::InputRequired(
            InputRequired::new().elicit("continue", ask_text("Continue streaming?", "answer")),
        );
    }
    cx.progress(100.0, Some(100.0), Some("Done".into()));
    Reply::Complete(result(vec![text("Streaming complete")]))
}

async fn logging_tool(_: NoArgs, cx: RequestContext) -> &'static str {
    // Nothing is sent unless the client asked for logs (`logLevel` in the request's
    // `_meta` in 2026-07-28, `logging/setLevel` or the default level in legacy sessions).
    cx.log(LoggingLevel::Info, Some("test_logging_tool"), json!("Diagnostic trace logging activated"));
    "Logging evaluated"
}

async fn input_required_prompt(_: NoArgs, cx: RequestContext) -> Reply<GetPromptResult> {
    if elicited(&cx, "user_context").is_none() {
        return Reply::InputRequired(
            InputRequired::new().elicit("user_context", ask_text("What context should the prompt use?", "context")),
        );
    }
    let context = elicited_text(&cx, "user_context", "context");
    Reply::Complete(GetPromptResult::new(vec![user(text(format!("Prompt with context: {context}")))]))
}

// ===== list changes =====

/// The tool that `test_trigger_tool_change` adds and removes.
const TOGGLED_TOOL: &str = "test_toggled_tool";
/// The prompt that `test_trigger_prompt_change` adds and removes.
const TOGGLED_PROMPT: &str = "test_toggled_prompt";

fn toggled_tool() -> ToolRoute {
    ToolRoute::new(TOGGLED_TOOL, |_: NoArgs| async { "The toggled tool is here." })
        .description("Appears and disappears each time test_trigger_tool_change is called")
}

fn toggled_prompt() -> PromptRoute {
    PromptRoute::new(TOGGLED_PROMPT, |_: NoArgs| async { vec![user(text("The toggled prompt is here."))] })
        .description("Appears and disappears each time test_trigger_prompt_change is called")
}

/// Items the server adds two seconds after it starts, so clients see the lists change.
fn add_dynamic_items(handle: &RouterHandle) {
    handle.add_tool(
        ToolRoute::new("test_dynamic_tool", |_: NoArgs| async { "This tool was added while the server was running." })
            .description("A tool added two seconds after the server started"),
    );
    handle.add_resource(
        ResourceRoute::new("test://dynamic-resource", "dynamic-resource", || async {
            "This resource was added while the server was running."
        })
        .description("A resource added two seconds after the server started")
        .mime_type("text/plain"),
    );
    handle.add_prompt(
        PromptRoute::new("test_dynamic_prompt", |_: NoArgs| async {
            vec![user(text("This prompt was added while the server was running."))]
        })
        .description("A prompt added two seconds after the server started"),
    );
}

// ===== resources and prompts =====

#[derive(Deserialize)]
struct TemplateVars {
    id: String,
}

async fn template_data(vars: TemplateVars) -> String {
    json!({"id": vars.id, "templateTest": true, "data": format!("Data for ID: {}", vars.id)}).to_string()
}

#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

async fn prompt_with_arguments(args: PromptArgs) -> Vec<PromptMessage> {
    vec![user(text(format!("Prompt with arguments: arg1='{}', arg2='{}'", args.arg1, args.arg2)))]
}

#[derive(Deserialize, JsonSchema)]
struct EmbedArgs {
    /// URI of the resource to embed
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

async fn prompt_with_embedded_resource(args: EmbedArgs) -> Vec<PromptMessage> {
    vec![
        user(embedded_text(&args.resource_uri, "text/plain", "Embedded resource content for testing.")),
        user(text("Please process the embedded resource above.")),
    ]
}

async fn prompt_with_image(_: NoArgs) -> Vec<PromptMessage> {
    vec![user(image()), user(text("Please analyze the image above."))]
}

// ===== the router =====

/// The skill folders the `sep-2640-*` scenarios read (`tests/fixtures/skills`).
const SKILLS_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/skills");

fn router() -> (Router, RouterHandle) {
    let router = Router::new("mcp-conformance-test-server", "1.0.0")
        .instructions("The MCP conformance suite's test surface, served by Arbor.")
        .subscriptions()
        // Content
        .tool("test_simple_text", "Tests simple text content response", simple_text)
        .tool("test_image_content", "Tests image content response", image_content)
        .tool("test_audio_content", "Tests audio content response", audio_content)
        .tool("test_embedded_resource", "Tests embedded resource content response", embedded_resource)
        .tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            multiple_content_types,
        )
        .tool("test_tool_with_logging", "Tests tool that emits log messages during execution", tool_with_logging)
        .tool("test_tool_with_progress", "Tests tool that reports progress notifications", tool_with_progress)
        .tool("test_error_handling", "Tests error response handling", error_handling)
        .tool(
            "test_reconnection",
            "Tests client reconnection (SEP-1699). Over HTTP the server closes the stream mid-call; \
             on stdio the call simply completes after a short pause.",
            reconnection,
        )
        .tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            json_schema_tool,
        )
        .tool(
            "test_custom_header",
            "Echoes its region argument, which HTTP clients also send as a header (SEP-2243 x-mcp-header)",
            custom_header,
        )
        // Asking the client
        .tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", sampling)
        .tool("test_elicitation", "Tests server-initiated elicitation (user input request)", elicitation)
        .tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            elicitation_defaults,
        )
        .tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            elicitation_enums,
        )
        // 2026-07-28 fixtures
        .tool("test_missing_capability", "Test tool requiring sampling", missing_capability)
        .tool(
            "test_input_required_result_elicitation",
            "MRTR: returns InputRequiredResult with elicitation request",
            irr_elicitation,
        )
        .tool(
            "test_input_required_result_sampling",
            "MRTR: returns InputRequiredResult with sampling request",
            irr_sampling,
        )
        .tool(
            "test_input_required_result_list_roots",
            "MRTR: returns InputRequiredResult with roots/list request",
            irr_list_roots,
        )
        .tool(
            "test_input_required_result_request_state",
            "MRTR: returns InputRequiredResult with requestState",
            irr_request_state,
        )
        .tool(
            "test_input_required_result_multiple_inputs",
            "MRTR: returns InputRequiredResult with multiple input requests",
            irr_multiple_inputs,
        )
        .tool(
            "test_input_required_result_multi_round",
            "MRTR: multi-round InputRequiredResult workflow",
            irr_multi_round,
        )
        .tool(
            "test_input_required_result_tampered_state",
            "MRTR: HMAC-signed requestState integrity test",
            irr_tampered_state,
        )
        .tool(
            "test_input_required_result_capabilities",
            "MRTR: respects client capabilities in inputRequests",
            irr_capabilities,
        )
        .tool(
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
            streaming_elicitation,
        )
        .tool("test_logging_tool", "Diagnostic logging validator tool", logging_tool)
        // Resources
        .resource_route(
            ResourceRoute::new("test://static-text", "static-text", || async {
                "This is the content of the static text resource."
            })
            .title("Static Text Resource")
            .description("A static text resource for testing")
            .mime_type("text/plain"),
        )
        .resource_route(
            ResourceRoute::new("test://static-binary", "static-binary", || async {
                // The fixture's bytes are kept as the suite's base64 text, so the contents
                // are answered as they are rather than as bytes for the router to encode.
                ResourceContents::Blob(
                    BlobResourceContents::new("test://static-binary", TEST_IMAGE_BASE64).with_mime_type("image/png"),
                )
            })
            .title("Static Binary Resource")
            .description("A static binary resource (image) for testing")
            .mime_type("image/png"),
        )
        .resource_route(
            ResourceRoute::new("test://watched-resource", "watched-resource", || async { "Watched resource content" })
                .title("Watched Resource")
                .description("A resource clients may subscribe to")
                .mime_type("text/plain"),
        )
        .template_route(
            TemplateRoute::new("test://template/{id}/data", "template", template_data)
                .title("Resource Template")
                .description("A resource template with parameter substitution")
                .mime_type("application/json")
                .complete("id", completion::starting_with(["123", "456", "789"])),
        )
        // Prompts
        .prompt_route(
            PromptRoute::new("test_simple_prompt", |_: NoArgs| async {
                vec![user(text("This is a simple prompt for testing."))]
            })
            .title("Simple Test Prompt")
            .description("A simple prompt without arguments"),
        )
        .prompt_route(
            PromptRoute::new("test_prompt_with_arguments", prompt_with_arguments)
                .title("Prompt With Arguments")
                .description("A prompt with required arguments")
                .complete("arg1", completion::starting_with(["paris", "park", "party", "test"]))
                .complete("arg2", completion::starting_with(["alpha", "beta", "gamma"])),
        )
        .prompt_route(
            PromptRoute::new("test_prompt_with_embedded_resource", prompt_with_embedded_resource)
                .title("Prompt With Embedded Resource")
                .description("A prompt that includes an embedded resource"),
        )
        .prompt_route(
            PromptRoute::new("test_prompt_with_image", prompt_with_image)
                .title("Prompt With Image")
                .description("A prompt that includes image content"),
        )
        .prompt_route(
            PromptRoute::new("test_input_required_result_prompt", input_required_prompt)
                .description("MRTR: prompt that requires elicitation input"),
        )
        // The skills extension's fixture (the sep-2640 scenarios): `pdf-processing`, listed
        // first and with subdirectories, and the nested `acme/billing/refunds`.
        .skills_dir(SKILLS_FIXTURE);
    let router = tasks::routes().into_iter().fold(router, Router::tool_route);
    // Taken before serving, so `listChanged` is advertised from the first connection.
    let handle = router.handle();
    let (toggle_tools, toggle_prompts) = (handle.clone(), handle.clone());
    let router = router
        .tool_route(
            ToolRoute::new("test_trigger_tool_change", move |_: NoArgs| {
                let handle = toggle_tools.clone();
                async move {
                    if !handle.remove_tool(TOGGLED_TOOL) {
                        handle.add_tool(toggled_tool());
                    }
                    "Mutation triggered"
                }
            })
            .description("Adds or removes test_toggled_tool, so clients get notifications/tools/list_changed"),
        )
        .tool_route(
            ToolRoute::new("test_trigger_prompt_change", move |_: NoArgs| {
                let handle = toggle_prompts.clone();
                async move {
                    if !handle.remove_prompt(TOGGLED_PROMPT) {
                        handle.add_prompt(toggled_prompt());
                    }
                    "Mutation triggered"
                }
            })
            .description("Adds or removes test_toggled_prompt, so clients get notifications/prompts/list_changed"),
        );
    (router, handle)
}

/// What the command line asks for.
enum Mode {
    Stdio,
    Http { port: u16 },
    Help,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Mode, String> {
    let mut mode = Mode::Stdio;
    let mut help = false;
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => mode = Mode::Stdio,
            "-h" | "--help" => help = true,
            "--port" => {
                let port = args.next().ok_or("--port needs a number")?;
                let port = port.parse::<u16>().map_err(|_| format!("--port {port}: not a port number"))?;
                mode = Mode::Http { port };
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(if help { Mode::Help } else { mode })
}

#[tokio::main]
async fn main() -> ExitCode {
    let mode = match parse_args(std::env::args().skip(1)) {
        Ok(Mode::Help) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(mode) => mode,
        Err(why) => {
            eprintln!("conformance_server: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Logs go to stderr: stdout carries the protocol and must hold nothing else.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let (router, handle) = router();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        add_dynamic_items(&handle);
        tracing::info!("added test_dynamic_tool, test://dynamic-resource and test_dynamic_prompt");
    });
    if let Mode::Http { port } = mode {
        return http::serve("conformance_server", Server::new(router), http_config(port)).await;
    }
    tracing::info!("conformance_server: serving MCP on stdio");
    match Server::new(router).serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "conformance_server stopped");
            ExitCode::FAILURE
        }
    }
}

// ===== HTTP =====

/// How long `test_reconnection` takes: longer than `JSON_WAIT` + `SSE_POLL_AFTER`, so the
/// server has closed its POST stream before the result exists.
const RECONNECTION_PAUSE: Duration = Duration::from_millis(1600);
/// A POST unanswered this long becomes an SSE stream (with its priming event), so a slow
/// call can be resumed.
const JSON_WAIT: Duration = Duration::from_millis(100);
/// SEP-1699 polling: the server closes a 2025-11-25 POST stream still unanswered this long
/// after it opened; the client resumes it with GET and `Last-Event-ID`, and that stream is
/// cut again after as long. `test_reconnection` answers between the two cuts (about 1.1 s
/// and 2.1 s), so a client that resumes once gets the result; every other fixture answers
/// well within the first.
const SSE_POLL_AFTER: Duration = Duration::from_millis(1000);

/// The HTTP endpoint the suites test: `arbor_http`'s defaults (loopback bind and `Host`
/// names, no CORS, the body and depth caps, both eras on `/mcp`) with a short JSON wait
/// and SEP-1699 polling on, so `server-sse-polling` sees a priming event, a `retry`, the
/// server closing the stream and the result after `Last-Event-ID`.
fn http_config(port: u16) -> arbor_http::HttpConfig {
    let mut config = arbor_http::HttpConfig::default().bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    config.json_wait = JSON_WAIT;
    config.sse_polling = Some(SSE_POLL_AFTER);
    config.sse_retry = Duration::from_millis(200);
    config
}

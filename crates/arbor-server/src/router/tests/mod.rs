//! Unit tests of the router, called through the `ServerHandler` trait with detached
//! contexts, as the runtime would call it.
//!
//! One module per concern; `fixture` is a router with one of everything. The JSON the
//! router produces is checked against the vendored 2025-11-25 and 2026-07-28 schemas in
//! `spec`.

mod errors;
mod lists;
mod prompts;
mod resources;
mod spec;
mod tools;
mod uri_template;

use super::{completion, PromptRoute, Router, TemplateRoute, ToolError, ToolRoute};
use crate::context::{ConnectionInfo, RequestContext};
use crate::handler::ServerHandler;
use crate::reply::{InputRequired, Reply};
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::common::{PaginatedRequestParams, Role};
use arbor_protocol::model::content::{ContentBlock, ResourceContents};
use arbor_protocol::model::prompts::PromptMessage;
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult};
use arbor_protocol::version::ProtocolVersion;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;

fn cx_for(version: ProtocolVersion) -> RequestContext {
    RequestContext::detached(ConnectionInfo {
        tenant: "default".into(),
        auth: None,
        principal: None,
        requester: Default::default(),
        client_info: None,
        client_capabilities: ClientCapabilities::default(),
        protocol_version: version,
    })
}

fn cx() -> RequestContext {
    cx_for(ProtocolVersion::V2025_11_25)
}

fn first_page() -> PaginatedRequestParams {
    PaginatedRequestParams::default()
}

fn page_at(cursor: &str) -> PaginatedRequestParams {
    PaginatedRequestParams::default().with_cursor(cursor)
}

fn code(e: &McpError) -> i64 {
    e.code().as_i64()
}

/// The `CallToolResult` of a call that must complete.
async fn call(router: &Router, name: &str, arguments: Value) -> Result<CallToolResult, McpError> {
    let params = CallToolRequestParams::new(name)
        .with_arguments(arguments.as_object().expect("arguments are an object").clone());
    match router.call_tool(params, cx()).await? {
        Reply::Complete(result) => Ok(result),
        Reply::InputRequired(_) => panic!("{name} asked for input"),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.clone(),
            other => panic!("not text: {other:?}"),
        })
        .collect::<Vec<_>>()
        .join("")
}

// ===== the fixture's handlers =====

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

async fn add(args: AddArgs, _cx: RequestContext) -> Result<String, ToolError> {
    let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
    Ok(sum.to_string())
}

#[derive(Deserialize, JsonSchema)]
struct DivideArgs {
    dividend: f64,
    divisor: f64,
}

#[derive(Serialize, JsonSchema)]
struct Quotient {
    quotient: f64,
}

/// A typed-output tool without a context argument.
async fn divide(args: DivideArgs) -> Result<Quotient, ToolError> {
    if args.divisor == 0.0 {
        return Err(ToolError::invalid_arguments("the divisor is zero"));
    }
    Ok(Quotient { quotient: args.dividend / args.divisor })
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    excitement: Option<u32>,
}

async fn greet(args: GreetArgs, _cx: RequestContext) -> Result<Vec<PromptMessage>, McpError> {
    let marks = "!".repeat(args.excitement.unwrap_or(1) as usize);
    let text = format!("Hello, {}{marks}", args.name);
    Ok(vec![PromptMessage::user(text)])
}

#[derive(Deserialize)]
struct ItemVars {
    id: u32,
}

async fn item(vars: ItemVars, _cx: RequestContext) -> Result<String, McpError> {
    Ok(json!({ "id": vars.id }).to_string())
}

#[derive(Deserialize)]
struct NameVars {
    name: String,
}

async fn named(vars: NameVars) -> String {
    format!("named {}", vars.name)
}

/// One of everything.
fn fixture() -> Router {
    Router::new("fixture", "1.0.0")
        .tool("add", "Add two numbers", add)
        .tool_with_output("divide", "Divide two numbers", divide)
        .tool_route(
            ToolRoute::new("ask", |_: super::NoArgs| async {
                Reply::InputRequired(InputRequired::new().roots("roots").state(json!({"step": 1})))
            })
            .title("Ask for roots")
            .read_only_hint(true)
            .deadline(Duration::from_secs(3)),
        )
        .prompt_route(
            PromptRoute::new("greet", greet)
                .description("Greets someone")
                .complete("name", completion::starting_with(["Alice", "Albert", "Bob"])),
        )
        .resource("test://static/readme", "readme", "A static text", "text/plain", || async { "hello" })
        .resource("test://static/bytes", "bytes", "Static bytes", "application/octet-stream", |_cx| async {
            vec![0u8, 1, 2, 255]
        })
        .template_route(
            TemplateRoute::new("test://template/{id}/data", "item", item)
                .description("An item by id")
                .mime_type("application/json")
                .complete("id", |req: completion::CompletionRequest| async move {
                    (0..250).map(|i| i.to_string()).filter(|v| v.starts_with(&req.value)).collect::<Vec<_>>()
                }),
        )
        .resource_template("test://names/{name}", "named", "Things by name", "text/plain", named)
}

fn only_text(contents: &[ResourceContents]) -> &str {
    match contents {
        [ResourceContents::Text(t)] => &t.text,
        other => panic!("expected one text contents, got {other:?}"),
    }
}

//! The conformance fixture's tasks-extension tools (SEP-2663, `io.modelcontextprotocol/tasks`),
//! as the suite's `tasks-*` scenarios call them: `greet` (never a task), `slow_compute`,
//! `failing_job` (task support required), `protocol_error_job`, `confirm_delete`,
//! `multi_input` and `test_tool_with_task` (input gathered inline first, then a task).
//!
//! Each handler is ordinary tool code: it does not know whether it runs inline or as a
//! task. The route's `task_support` (and `task_start`) is all that opts it in; the
//! runtime answers with the `CreateTaskResult`, runs the handler under its task
//! supervisor, parks it in `input_required` when it asks for input, and cancels it.

use std::time::Duration;

use arbor_protocol::model::elicitation::ElicitAction;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::{NoArgs, ToolError, ToolRoute};
use arbor_server::{InputRequired, Reply, RequestContext, TaskStart, TaskSupport};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

async fn greet(args: GreetArgs) -> String {
    format!("Hello, {}!", args.name)
}

#[derive(Deserialize, JsonSchema)]
struct ComputeArgs {
    /// How long to work, in seconds (0 finishes at once).
    #[serde(default)]
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

async fn slow_compute(args: ComputeArgs) -> Result<String, ToolError> {
    if !(0.0..=3600.0).contains(&args.seconds) {
        return Err(ToolError::invalid_arguments("seconds must be between 0 and 3600"));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    let label = args.label.as_deref().unwrap_or("compute");
    Ok(format!("Computed {label} after {}s", args.seconds))
}

async fn failing_job(_: NoArgs) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::failed("The job failed: simulated tool execution error"))
}

async fn protocol_error_job(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::internal("Internal error: simulated protocol failure"))
}

/// The elicitation answered under `key`: its action and submitted form.
fn elicited<'a>(cx: &'a RequestContext, key: &str) -> Option<(ElicitAction, Option<&'a Map<String, Value>>)> {
    match cx.input_responses()?.get(key)? {
        InputResponse::Elicit(r) => Some((r.action, r.content.as_ref())),
        _ => None,
    }
}

fn form(message: &str, schema: Value) -> arbor_protocol::model::elicitation::ElicitRequestParams {
    serde_json::from_value(json!({ "message": message, "requestedSchema": schema }))
        .expect("the fixture's forms are valid elicitation params")
}

fn confirm_form(message: &str) -> arbor_protocol::model::elicitation::ElicitRequestParams {
    form(
        message,
        json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] }),
    )
}

fn text_result(text: String) -> Reply<CallToolResult> {
    Reply::Complete(CallToolResult::from_text(text))
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete.
    filename: String,
}

async fn confirm_delete(args: DeleteArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let Some((action, content)) = elicited(&cx, "confirm") else {
        let ask = confirm_form(&format!("Delete {}?", args.filename));
        return Reply::InputRequired(InputRequired::new().elicit("confirm", ask));
    };
    let confirmed = action == ElicitAction::Accept
        && content.and_then(|c| c.get("confirm")).and_then(Value::as_bool).unwrap_or(false);
    text_result(if confirmed { format!("Deleted {}", args.filename) } else { format!("Kept {}", args.filename) })
}

async fn multi_input(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let (name, confirm) = (elicited(&cx, "name"), elicited(&cx, "confirm"));
    if name.is_none() || confirm.is_none() {
        // Both at once, so two keys are outstanding together; a retry that answered one
        // asks again for what is missing.
        let mut ask = InputRequired::new();
        if name.is_none() {
            let schema =
                json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
            ask = ask.elicit("name", form("What is your name?", schema));
        }
        if confirm.is_none() {
            ask = ask.elicit("confirm", confirm_form("Proceed?"));
        }
        return Reply::InputRequired(ask);
    }
    let name = name.and_then(|(_, c)| c?.get("name")?.as_str().map(str::to_owned)).unwrap_or_else(|| "unknown".into());
    text_result(format!("Hello, {name}! Both inputs received."))
}

async fn tool_with_task(_: NoArgs, cx: RequestContext) -> Reply<CallToolResult> {
    let Some((_, content)) = elicited(&cx, "user_name") else {
        let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
        return Reply::InputRequired(InputRequired::new().elicit("user_name", form("What is your name?", schema)));
    };
    let name = content.and_then(|c| c.get("name")?.as_str()).unwrap_or("unknown").to_owned();
    // The long part of the job, run as the task.
    tokio::time::sleep(Duration::from_millis(200)).await;
    text_result(format!("Hello, {name}! Your task finished."))
}

/// The routes, ready to register.
pub fn routes() -> Vec<ToolRoute> {
    vec![
        ToolRoute::new("greet", greet).description("Tasks fixture: a plain tool that never runs as a task"),
        ToolRoute::new("slow_compute", slow_compute)
            .description("Tasks fixture: works for `seconds` seconds, as a task when the client supports tasks")
            .task_support(TaskSupport::Optional),
        ToolRoute::new("failing_job", failing_job)
            .description("Tasks fixture: always a task; ends with a tool execution error after about a second")
            .task_support(TaskSupport::Required),
        ToolRoute::new("protocol_error_job", protocol_error_job)
            .description("Tasks fixture: a task that fails with a JSON-RPC (protocol) error")
            .task_support(TaskSupport::Optional),
        ToolRoute::new("confirm_delete", confirm_delete)
            .description("Tasks fixture: asks the user to confirm a deletion, from inside the task")
            .task_support(TaskSupport::Optional),
        ToolRoute::new("multi_input", multi_input)
            .description("Tasks fixture: asks two questions at once, from inside the task")
            .task_support(TaskSupport::Optional),
        ToolRoute::new("test_tool_with_task", tool_with_task)
            .description("Tasks fixture: asks for a name by MRTR first, then runs as a task")
            .task_support(TaskSupport::Required)
            .task_start(TaskStart::AfterInput),
    ]
}

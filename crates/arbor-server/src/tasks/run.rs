//! Serving the extension: deciding whether a `tools/call` becomes a task, running the
//! handler as one, and answering `tasks/get`, `tasks/update` and `tasks/cancel`.
//!
//! Called from the request job (`request/mod.rs`) with the request's context and handler;
//! the run itself is a task on the `tasks` supervisor (started by `local.rs`) and calls
//! the same `ServerHandler::call_tool` a direct call would: the handler of the request
//! that created the task, even after its tenant's handler was swapped. Input the handler asks for is gathered the era's way
//! ([`RunInput`]): listed on `tasks/get` and answered by `tasks/update` (2026-07-28,
//! here), or asked of the client with server→client requests tied to the task
//! (2025-11-25, `legacy_input.rs`). This module does not hold records (the
//! [`TaskStore`](super::TaskStore) does) or runs (`local.rs`), and does not write frames of
//! its own accord: it returns the result for the request job to encode.
//!
//! Invariant: nothing here answers `resultType: "task"` to a request that did not declare
//! the extension, and every `tasks/*` request is checked for the extension (-32021) before
//! any task is looked up.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::ClientRequest;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::common::{EmptyResult, ResultType};
use arbor_protocol::model::mrtr::InputResponses;
use arbor_protocol::model::tasks::{CreateTaskResult, GetTaskResult, Task, TaskStatus};
use arbor_protocol::model::tools::{CallToolRequestParams, CallToolResult};
use arbor_protocol::version::{Era, ProtocolVersion};
use serde_json::{json, Value};

use super::legacy_input::{self, TaskRequester};
use super::local::Entry;
use super::store::TaskOwner;
use super::{TaskPolicy, TaskStart, TaskSupport, TASKS_EXTENSION};
use crate::connection::ConnectionHandle;
use crate::context::{RequestContext, RequestSignal};
use crate::dyn_handler::DynServerHandler;
use crate::input::needs::{self, Refusal};
use crate::reply::Reply;
use crate::request::shape::{CacheDefaults, Shape};
use crate::serve::Shared;

/// How a `tools/call` is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallRoute {
    /// As always: the handler runs in the request.
    Inline,
    /// As a task: answered with a `CreateTaskResult`.
    Task,
}

pub(crate) fn declares_extension(caps: &ClientCapabilities) -> bool {
    caps.extensions.as_ref().is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

pub(crate) fn missing_extension() -> McpError {
    McpError::missing_client_capability(json!({ "extensions": { TASKS_EXTENSION: {} } }))
}

fn owner(cx: &RequestContext) -> TaskOwner {
    TaskOwner::of(cx.connection())
}

/// Decides how a call of `tool` is served. `modern`: the request is 2026-07-28 (the
/// extension does not exist before). A server that does not advertise the extension
/// serves every call inline, without asking the handler. `resuming`: it carries a `requestState`.
/// -32021 naming the extension when the tool requires tasks and the request did not
/// declare them.
pub(crate) fn route_call(
    shared: &Shared,
    handler: &dyn DynServerHandler,
    tool: &str,
    modern: bool,
    caps: &ClientCapabilities,
    resuming: bool,
) -> Result<CallRoute, McpError> {
    if !modern || !shared.tasks.offered {
        return Ok(CallRoute::Inline);
    }
    let policy = policy_of(handler, tool);
    if !policy.allows_tasks() {
        return Ok(CallRoute::Inline);
    }
    if !declares_extension(caps) {
        return match policy.support {
            TaskSupport::Required => Err(missing_extension()),
            _ => Ok(CallRoute::Inline),
        };
    }
    Ok(match policy.start {
        TaskStart::Immediately => CallRoute::Task,
        TaskStart::AfterInput if resuming => CallRoute::Task,
        TaskStart::AfterInput => CallRoute::Inline,
    })
}

/// The handler's task policy for `tool`. A panicking policy falls back to "never a task"
/// rather than costing the request.
pub(crate) fn policy_of(handler: &dyn DynServerHandler, tool: &str) -> TaskPolicy {
    std::panic::catch_unwind(AssertUnwindSafe(|| handler.tool_task_policy(tool))).unwrap_or_default()
}

/// Creates the task for a call and starts its run; returns the `CreateTaskResult`, which
/// is only answered once `tasks/get` resolves the task. `input`: the answers and state of
/// a verified MRTR retry, for the run's first call of the handler.
pub(crate) async fn call_as_task(
    shared: &Arc<Shared>,
    handler: Arc<dyn DynServerHandler>,
    params: CallToolRequestParams,
    cx: &RequestContext,
    version: ProtocolVersion,
    input: (Option<InputResponses>, Option<Value>),
) -> Result<CreateTaskResult, McpError> {
    let (ttl, input) = (shared.tasks.config.ttl, RunInput::Modern(input));
    let entry = drive_task(shared, handler, params, cx, version, ttl, input).await?;
    Ok(created(entry.view()))
}

/// How a task's run gathers the input its handler asks for.
pub(crate) enum RunInput {
    /// 2026-07-28: `input_required` with the requests listed, answered by `tasks/update`;
    /// the answers and state of a verified MRTR retry for the first call.
    Modern((Option<InputResponses>, Option<Value>)),
    /// 2025-11-25: server→client requests tied to the task, reaching the client through
    /// the session that created it (its own output, not the finished request's).
    Legacy(ConnectionHandle),
}

/// Creates a task record kept for `ttl` and starts the run of `handler` (the creating
/// request's) under the `tasks` supervisor: the part both eras share. A 2025-11-25 task's
/// session is told of its status changes (`notifications/tasks/status`), through the
/// request's sink.
pub(crate) async fn drive_task(
    shared: &Arc<Shared>,
    handler: Arc<dyn DynServerHandler>,
    params: CallToolRequestParams,
    cx: &RequestContext,
    version: ProtocolVersion,
    ttl: std::time::Duration,
    input: RunInput,
) -> Result<Arc<Entry>, McpError> {
    let tasks = &shared.tasks;
    let watcher = (version.era() != Era::Modern).then(|| cx.task_status_sink()).flatten();
    let entry = tasks.create(owner(cx), ttl, watcher).await?;
    let signal = Arc::new(RequestSignal::default());
    let task_cx = cx.for_task(entry.deadline(), signal.clone());
    // The run's span, a child of the request's: it outlives the request, as the task does.
    let span = crate::telemetry::task_span(&params.name, &entry.id, cx.connection());
    let run = drive((shared.clone(), handler), entry.clone(), params, task_cx, version, input, signal);
    let run = tracing::Instrument::instrument(run, span);
    tasks.spawn(&entry, Box::pin(run)).await?;
    Ok(entry)
}

/// Marks the run's context stopped if its future is dropped (cancel, TTL, shutdown),
/// so work the handler handed elsewhere sees `is_cancelled`.
struct StopOnDrop(Arc<RequestSignal>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The run: call the handler (the creating request's, paired with the server's state)
/// until it completes or fails, gathering the input it asks for the era's way; then
/// record the outcome.
async fn drive(
    (shared, handler): (Arc<Shared>, Arc<dyn DynServerHandler>),
    entry: Arc<Entry>,
    params: CallToolRequestParams,
    cx: RequestContext,
    version: ProtocolVersion,
    input: RunInput,
    signal: Arc<RequestSignal>,
) {
    let guard = StopOnDrop(signal);
    let outcome = match input {
        RunInput::Legacy(session) => {
            let requester = TaskRequester::new(entry.clone(), session, shared.result_waiters.clone());
            legacy_input::run(&shared, &*handler, params, &cx, version, &requester).await.map(Some)
        }
        RunInput::Modern(input) => modern(&shared, &*handler, &entry, params, &cx, input).await,
    };
    match outcome {
        Ok(Some(mut result)) => {
            let span = tracing::Span::current();
            let payloads = shared.config.trace_tool_payloads;
            let is_error = result.is_error == Some(true);
            crate::telemetry::record_tool_result(&span, is_error, &result, payloads);
            let cache = CacheDefaults::new(shared.config.cache_ttl, shared.config.cache_scope);
            result.shape(version, &cache);
            match serde_json::to_value(&result) {
                // 2025-11-25: "this includes cases where the tool call result has
                // isError set to true"; the extension keeps such a task `completed`.
                Ok(Value::Object(object)) if is_error && version.era() != Era::Modern => {
                    entry.fail_with_result(object).await
                }
                Ok(Value::Object(object)) => entry.complete(object).await,
                _ => fail(&entry, &McpError::internal("Internal error: the tool result did not serialise")).await,
            }
        }
        // The task ended meanwhile (cancelled): nothing to record.
        Ok(None) => {}
        Err(error) => fail(&entry, &error).await,
    }
    guard.0.finish();
}

/// The extension's run: park in `input_required` with the requests listed on each input
/// the handler asks for, and call it again with the `tasks/update` answers. `Ok(None)`
/// when the task ended while parked.
async fn modern(
    shared: &Shared,
    handler: &dyn DynServerHandler,
    entry: &Entry,
    params: CallToolRequestParams,
    cx: &RequestContext,
    input: (Option<InputResponses>, Option<Value>),
) -> Result<Option<CallToolResult>, McpError> {
    let mut input = Some(input).filter(|(r, s)| r.is_some() || s.is_some());
    let mut rounds = 0;
    loop {
        let call_cx = match input.take() {
            Some((responses, state)) => cx.with_input(responses, state),
            None => cx.clone(),
        };
        let asked = match handler.call_tool(Box::new(params.clone()), call_cx).await? {
            Reply::Complete(result) => return Ok(Some(result)),
            Reply::InputRequired(asked) => asked,
        };
        rounds += 1;
        if rounds > shared.config.max_input_rounds {
            return Err(McpError::internal(format!(
                "Internal error: the tool asked for input more than {} times",
                shared.config.max_input_rounds
            )));
        }
        if asked.requests.is_empty() {
            return Err(McpError::internal("Internal error: the tool asked for input but named none"));
        }
        match needs::check(&asked.requests, cx.client_capabilities(), None) {
            Ok(()) => {}
            Err(Refusal::Undeclared { required, .. }) => return Err(McpError::missing_client_capability(required)),
            Err(Refusal::Unsupported { detail }) => return Err(McpError::internal(detail)),
        }
        if !entry.ask(asked.requests).await {
            return Ok(None);
        }
        let answers = entry.answers().await;
        input = Some((Some(answers), asked.state));
    }
}

/// Fails the task, and says so on the run's span (the current one).
async fn fail(entry: &Entry, error: &McpError) {
    crate::telemetry::record_error(&tracing::Span::current(), error);
    entry.fail(error).await;
}

/// `tasks/get`, `tasks/update` and `tasks/cancel`, answered as encoded response frames.
/// -32601 outside 2026-07-28 (the 2025-11-25 core tasks are not served), -32021 when the
/// request did not declare the extension, -32602 for an id this requester cannot see.
pub(crate) async fn serve_task_method(
    shared: &Shared,
    id: &RequestId,
    request: ClientRequest,
    cx: &RequestContext,
    modern: bool,
) -> Result<Vec<u8>, McpError> {
    let method = request.method();
    if !modern {
        return Err(McpError::method_not_found(method.as_str()));
    }
    if !declares_extension(cx.client_capabilities()) {
        return Err(missing_extension());
    }
    let (tasks, owner) = (&shared.tasks, owner(cx));
    match request {
        ClientRequest::GetTask(p) => {
            let record = tasks.find(&owner, &p.task_id).await?;
            Ok(encode_response(id, &got(record.to_task())))
        }
        ClientRequest::CancelTask(p) => {
            let _ = tasks.cancel(&owner, &p.task_id).await?;
            Ok(encode_response(id, &EmptyResult::complete()))
        }
        ClientRequest::UpdateTask(p) => {
            let record = tasks.find(&owner, &p.task_id).await?;
            match tasks.local(&p.task_id) {
                Some(entry) => entry.update(&record, p.input_responses).await?,
                // Answers are taken only by the run; a record waiting for input whose run
                // is elsewhere gets them through the store, from the node running it
                // (`forward.rs`).
                None if record.status == TaskStatus::InputRequired => {
                    tasks.forward_input(&owner, &record, p.input_responses).await?
                }
                None => {}
            }
            Ok(encode_response(id, &EmptyResult::complete()))
        }
        _ => Err(McpError::method_not_found(method.as_str())),
    }
}

fn created(t: Task) -> CreateTaskResult {
    let mut created = CreateTaskResult::from_task(t);
    // The extension has no `ttl` or `pollInterval`; a new task's result, error and input
    // requests are read with tasks/get.
    created.ttl = None;
    created.poll_interval = None;
    created.input_requests = None;
    created.result = None;
    created.error = None;
    created.extra = Default::default();
    created
}

fn got(t: Task) -> GetTaskResult {
    let mut got = GetTaskResult::from_task(t).with_result_type(ResultType::Complete);
    // The extension has no `ttl` or `pollInterval`.
    got.ttl = None;
    got.poll_interval = None;
    got.extra = Default::default();
    got
}

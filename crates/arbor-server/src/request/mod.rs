//! Request execution: what one supervised request task does.
//!
//! A [`RequestJob`] is built when a request is admitted (`connection::spawn`), from the
//! decoded request and the terms it was checked under, its [`RequestContext`] already
//! made, and runs on the connection's task supervisor. It calls the handler, finishes the
//! result for its era (`resultType`, cache fields), and returns the encoded response
//! frame. Errors are mapped through [`McpError`] once, here. "Input required" is resolved
//! here too: sealed into an MRTR result in 2026-07-28 (`input::modern`), driven through
//! server-to-client requests in the legacy era (`input::legacy`).
//!
//! It does not write the response itself: the task's report (see `connection`) writes it
//! once the task is known to have finished, so a cancelled or timed-out task can never
//! answer. Nor does it choose its handler: the connection hands it the tenant's handler as
//! it was at admission (`crate::tenant::routers`). Invariants: a job returns exactly one
//! frame, the response to its own id; it calls no handler but the one it was given (a
//! task it starts runs on that one too).

pub(crate) mod shape;
pub(crate) mod sink;

use std::future::Future;
use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::{Meta, SERVER_INFO};
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::{ClientRequest, MethodName};
use arbor_protocol::model::common::{EmptyResult, ProgressToken};
use arbor_protocol::model::lifecycle::DiscoverResult;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::{InputRequiredResult, InputResponses, Outcome};
use arbor_protocol::model::tools::CallToolResult;
use arbor_protocol::version::{Era, Feature, ProtocolVersion};
use serde::Serialize;
use serde_json::Value;

use crate::connection::ConnectionHandle;
use crate::context::{ConnectionInfo, RequestContext, RequestSignal};
use crate::input;
use crate::input::modern::Arguments;
use crate::metrics::Status;
use crate::reply::Reply;
use crate::serve::Shared;
use crate::tasks::{self, CallRoute};
use crate::telemetry;
use crate::tenant::routers::Versioned;
use shape::{CacheDefaults, Shape};

/// The terms a request runs under, whichever era supplied them.
#[derive(Debug)]
pub(crate) struct JobTerms {
    pub(crate) version: ProtocolVersion,
    pub(crate) connection: Arc<ConnectionInfo>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) log_level: Option<LoggingLevel>,
}

/// One request, ready to run.
///
/// Its [`RequestContext`] is built when the request is admitted (`connection::spawn`), not
/// here: the job is moved from its start into its task and through the task's layers, and
/// carrying the context's parts (`_meta`, the terms, the sink, the signal: 152 bytes) loose
/// made every one of those moves, and the context's own build, copy them.
pub(crate) struct RequestJob {
    pub(crate) shared: Arc<Shared>,
    /// The tenant's handler at admission: the request runs on it, start to end.
    pub(crate) handler: Arc<Versioned>,
    pub(crate) id: RequestId,
    pub(crate) request: Box<ClientRequest>,
    /// The tool or prompt the request names ([`subject_of`]), shared with its metrics.
    pub(crate) subject: Option<Arc<str>>,
    /// Whether a `tools/call` may answer "input required" (its tool's terms, looked up
    /// with its deadline); `true` for any other request.
    pub(crate) asks_input: bool,
    pub(crate) version: ProtocolVersion,
    /// The handler's context: id, `_meta`, connection, progress token, log level,
    /// deadline, signal and sink.
    pub(crate) cx: RequestContext,
    /// How to reach the client, for legacy input requests.
    pub(crate) requester: ConnectionHandle,
}

/// Marks the request's signal when the task ends: finished if it answered, stopped if its
/// future was dropped first (cancel, deadline, shutdown) or it panicked.
struct SignalGuard(Arc<RequestSignal>, bool);

impl Drop for SignalGuard {
    fn drop(&mut self) {
        if self.1 {
            self.0.finish();
        } else {
            self.0.stop();
            // Dropped inside the request's span (the work is polled and dropped in it): kept
            // for the task's report, which records a panic or the deadline on it.
            self.0.keep_current_span();
        }
    }
}

impl RequestJob {
    /// Runs the request and returns its encoded response, and how it ended (for metrics).
    ///
    /// It runs inside the request's span (its work is instrumented with it), and records on
    /// `Span::current()` only when there is something to record (an error, a tool error, a
    /// payload): a handle of its own would cost a call into the subscriber to make and
    /// another to drop, on every request.
    pub(crate) async fn run(self) -> (Vec<u8>, Status) {
        let mut guard = SignalGuard(self.cx.signal().clone(), false);
        let id = self.id.clone();
        let mut tool_error = false;
        let answer = match self.dispatch(&mut tool_error).await {
            Ok(frame) if tool_error => (frame, Status::ToolError),
            Ok(frame) => (frame, Status::Ok),
            Err(err) => {
                telemetry::record_error(&tracing::Span::current(), &err);
                (error_frame(&id, &err), Status::of(&err))
            }
        };
        guard.1 = true;
        answer
    }

    async fn dispatch(self, tool_error: &mut bool) -> Result<Vec<u8>, McpError> {
        let RequestJob { shared, handler: versioned, id, request, subject, asks_input, version, cx, requester } = self;
        let modern = version.era() == Era::Modern;
        let exec = Exec { shared: &shared, modern, version, requester: &requester };
        let handler = &*versioned.handler;
        let mut cache = CacheDefaults::new(shared.config.cache_ttl, shared.config.cache_scope);
        let finish = |result: &mut dyn Shape, cache: &CacheDefaults| result.shape(version, cache);
        match *request {
            ClientRequest::ListTools(p) => {
                let mut r = handler.list_tools(p, cx).await?;
                if !modern && version.supports(Feature::CoreTasks) && shared.tasks.offered {
                    tasks::annotate_tools(handler, &mut r.tools);
                }
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::CallTool(mut p) => {
                let (state, responses) = (p.request_state.take(), p.input_responses.take());
                let subject = subject.unwrap_or_else(|| p.name.as_str().into());
                // The handler consumes the params, and a state sealed after it must still
                // bind the arguments: keep a copy, in the one era that seals, when the tool
                // can ask for input or a state is presented (opened against them).
                let keep = modern && (state.is_some() || asks_input);
                let args = if keep { p.arguments.clone() } else { None };
                cache.uncacheable = state.is_some();
                let bound = Arguments::from(args.as_ref());
                let caps = cx.client_capabilities();
                if !modern {
                    // 2025-11-25: the client asks for a task with `params.task`.
                    if let Some(ttl) = tasks::route_legacy_call(&shared, handler, &subject, p.task.as_ref(), version)? {
                        p.task = None;
                        let run = versioned.handler.clone();
                        let created = Box::pin(tasks::call_as_legacy_task(
                            &shared,
                            run,
                            *p,
                            &cx,
                            version,
                            ttl,
                            requester.clone(),
                        ))
                        .await?;
                        return Ok(encode_response(&id, &created));
                    }
                }
                if tasks::route_call(&shared, handler, &subject, modern, caps, state.is_some())? == CallRoute::Task {
                    let key = &shared.config.state_key;
                    let resumed =
                        input::modern::open(key, MethodName::CallTool, &subject, bound, state.as_deref(), responses)?;
                    let input = (resumed.responses, resumed.state);
                    let run = versioned.handler.clone();
                    let created = Box::pin(tasks::call_as_task(&shared, run, *p, &cx, version, input)).await?;
                    return Ok(encode_response(&id, &Outcome::<CallToolResult>::Task(created)));
                }
                let outcome = exec
                    .resolve(MethodName::CallTool, &subject, keep.then_some(bound), p, state, responses, cx, |p, cx| {
                        handler.call_tool(p, cx)
                    })
                    .await?;
                if let Resolved::Complete(result) = &outcome {
                    let payloads = shared.config.trace_tool_payloads;
                    if payloads || result.is_error == Some(true) {
                        let span = tracing::Span::current();
                        telemetry::record_tool_result(&span, result.is_error == Some(true), result, payloads);
                    }
                }
                *tool_error = matches!(&outcome, Resolved::Complete(r) if r.is_error == Some(true));
                Ok(encode_outcome(&id, outcome, version, &cache))
            }
            ClientRequest::ListResources(p) => {
                let mut r = handler.list_resources(p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::ListResourceTemplates(p) => {
                let mut r = handler.list_resource_templates(p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::ReadResource(mut p) => {
                // Boxed (in the request), as `tools/call`'s are: held by value, these params
                // (and the copy kept for a legacy retry) sized every request's future.
                let (state, responses) = (p.request_state.take(), p.input_responses.take());
                let subject = p.uri.clone();
                cache.uncacheable = state.is_some();
                let outcome = exec
                    .resolve(
                        MethodName::ReadResource,
                        &subject,
                        Some(Arguments::None),
                        p,
                        state,
                        responses,
                        cx,
                        |p: Box<_>, cx| handler.read_resource(*p, cx),
                    )
                    .await?;
                Ok(encode_outcome(&id, outcome, version, &cache))
            }
            ClientRequest::ListSkills(p) => {
                let mut r = handler.list_skills(p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::GetSkill(p) => {
                let mut r = handler.get_skill(p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::ReadDirectory(p) => {
                let mut r = handler.read_directory(*p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::ListPrompts(p) => {
                let mut r = handler.list_prompts(p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::GetPrompt(mut p) => {
                // Boxed, as `resources/read`'s.
                let (state, responses) = (p.request_state.take(), p.input_responses.take());
                let subject = subject.unwrap_or_else(|| p.name.as_str().into());
                let args = if modern { p.arguments.clone() } else { None };
                let bound = Arguments::from(args.as_ref());
                let outcome = exec
                    .resolve(MethodName::GetPrompt, &subject, Some(bound), p, state, responses, cx, |p: Box<_>, cx| {
                        handler.get_prompt(*p, cx)
                    })
                    .await?;
                Ok(encode_outcome(&id, outcome, version, &cache))
            }
            ClientRequest::Complete(p) => {
                let mut r = handler.complete(*p, cx).await?;
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            ClientRequest::Subscribe(p) => {
                let uri = p.uri.clone();
                handler.subscribe(p, cx).await?;
                requester.subscribed(uri, true).await?;
                Ok(empty(&id, modern))
            }
            ClientRequest::Unsubscribe(p) => {
                let uri = p.uri.clone();
                handler.unsubscribe(p, cx).await?;
                requester.subscribed(uri, false).await?;
                Ok(empty(&id, modern))
            }
            ClientRequest::SetLevel(p) => {
                handler.set_log_level(p.level, cx.connection().clone()).await?;
                Ok(empty(&id, modern))
            }
            ClientRequest::Discover(_) => {
                let mut r = discover(&shared);
                finish(&mut r, &cache);
                Ok(encode_response(&id, &r))
            }
            request @ (ClientRequest::GetTask(_)
            | ClientRequest::CancelTask(_)
            | ClientRequest::GetTaskPayload(_)
            | ClientRequest::ListTasks(_))
                if !modern && version.supports(Feature::CoreTasks) =>
            {
                Box::pin(tasks::serve_legacy_task_method(&shared, &id, request, &cx, &requester)).await
            }
            request @ (ClientRequest::GetTask(_) | ClientRequest::CancelTask(_) | ClientRequest::UpdateTask(_)) => {
                Box::pin(tasks::serve_task_method(&shared, &id, request, &cx, modern)).await
            }
            // The connection answers or refuses everything else before spawning a task.
            other => Err(McpError::method_not_found(other.method().as_str())),
        }
    }
}

/// What resolving "input required" ends with: the handler's result, or (2026-07-28) the
/// sealed request for input, encoded as `Outcome::InputRequired` is. Not an `Outcome`:
/// its `InputRequiredResult` variant made an `Outcome<CallToolResult>` 592 bytes, moved
/// three times on every call's way to the encoder. Boxed here, the rare input request
/// does not size the common result.
enum Resolved<T> {
    Complete(T),
    InputRequired(Box<InputRequiredResult>),
}

/// What resolving "input required" needs besides the handler.
struct Exec<'a> {
    shared: &'a Shared,
    modern: bool,
    version: ProtocolVersion,
    requester: &'a ConnectionHandle,
}

impl Exec<'_> {
    /// Calls a handler that may answer "input required", and resolves that the era's way.
    #[allow(clippy::too_many_arguments)] // One call site per method; a struct would only rename them.
    async fn resolve<P, T, F, Fut>(
        &self,
        method: MethodName,
        subject: &str,
        // `None`: the handler said it never asks for input, and no copy was kept.
        arguments: Option<Arguments<'_>>,
        params: P,
        request_state: Option<String>,
        responses: Option<InputResponses>,
        cx: RequestContext,
        invoke: F,
    ) -> Result<Resolved<T>, McpError>
    where
        P: Clone,
        F: Fn(P, RequestContext) -> Fut,
        Fut: Future<Output = Result<Reply<T>, McpError>>,
    {
        let key = &self.shared.config.state_key;
        if self.modern {
            // A state sealed for one principal opens for no other (2026-07-28, "state
            // handle hijacking"): the binding carries the verified identity, if any.
            let principal = match &cx.connection().requester {
                crate::Requester::Principal(key) => Some(key.clone()),
                _ => None,
            };
            let binding = input::modern::Binding::new(method, subject)
                .arguments(arguments.unwrap_or(Arguments::None))
                .principal(principal.as_deref());
            let resumed = input::modern::open_bound(key, binding, request_state.as_deref(), responses)?;
            let cx = match (resumed.responses, resumed.state) {
                (None, None) => cx,
                (responses, state) => cx.with_input(responses, state),
            };
            let keep = cx.clone();
            return match invoke(params, cx).await? {
                Reply::Complete(result) => Ok(Resolved::Complete(result)),
                // A state bound to no arguments would be refused on the retry: answer the
                // handler's contradiction at once instead.
                Reply::InputRequired(_) if arguments.is_none() => Err(McpError::internal(format!(
                    "Internal error: {subject} asked for input, but its handler said it never does (tool_asks_input)"
                ))),
                Reply::InputRequired(input) => {
                    input::modern::seal_bound(key, binding, input, keep.client_capabilities())
                        .map(|sealed| Resolved::InputRequired(Box::new(sealed)))
                }
            };
        }
        // Legacy: the first call runs inline. Only if it asks for input does the driver
        // (server-to-client requests, further calls) start, boxed, so the common path's
        // future stays small. The handler may be called again, so keep a copy of the
        // params, but only when the client could answer at all.
        let caps = cx.client_capabilities();
        let could_answer = caps.elicitation.is_some() || caps.sampling.is_some() || caps.roots.is_some();
        let spare = could_answer.then(|| params.clone());
        match invoke(params, cx.clone()).await? {
            Reply::Complete(result) => Ok(Resolved::Complete(result)),
            input => Box::pin(self.drive_legacy(input, spare, cx, invoke)).await,
        }
    }

    /// Legacy input: the driver asks the client and calls the handler again until it
    /// completes. `first` is the handler's first answer, already in hand.
    async fn drive_legacy<P, T, F, Fut>(
        &self,
        first: Reply<T>,
        spare: Option<P>,
        cx: RequestContext,
        invoke: F,
    ) -> Result<Resolved<T>, McpError>
    where
        P: Clone,
        F: Fn(P, RequestContext) -> Fut,
        Fut: Future<Output = Result<Reply<T>, McpError>>,
    {
        let caps = cx.client_capabilities().clone();
        let mut first = Some(first);
        let invoke = |responses: Option<InputResponses>, state: Option<Value>| {
            // The driver's first call gets the answer the handler already gave.
            let answered = first.take();
            let call = match answered {
                Some(_) => None,
                None => spare.clone().map(|p| invoke(p, cx.with_input(responses, state))),
            };
            async move {
                match (answered, call) {
                    (Some(reply), _) => Ok(reply),
                    (None, Some(call)) => call.await,
                    (None, None) => Err(McpError::internal(
                        "Cannot ask the client for input: it declared no elicitation, sampling or roots capability",
                    )),
                }
            }
        };
        let max_rounds = self.shared.config.max_input_rounds;
        input::legacy::drive(invoke, self.requester, &caps, self.version, max_rounds).await.map(Resolved::Complete)
    }
}

fn encode_outcome<T: Shape + Serialize>(
    id: &RequestId,
    outcome: Resolved<T>,
    version: ProtocolVersion,
    cache: &CacheDefaults,
) -> Vec<u8> {
    match outcome {
        Resolved::Complete(mut result) => {
            result.shape(version, cache);
            encode_response(id, &result)
        }
        Resolved::InputRequired(input) => encode_response(id, &*input),
    }
}

fn empty(id: &RequestId, modern: bool) -> Vec<u8> {
    let result = if modern { EmptyResult::complete() } else { EmptyResult::default() };
    encode_response(id, &result)
}

/// The `server/discover` result: versions, capabilities as served per request,
/// instructions, and the server's identity in `_meta`.
fn discover(shared: &Shared) -> DiscoverResult {
    let mut meta = Meta::new();
    meta.insert(SERVER_INFO, serde_json::to_value(&shared.info.implementation).unwrap_or(Value::Null));
    let mut result =
        DiscoverResult::new(shared.config.supported_versions.strings(), shared.modern_capabilities.clone())
            .with_meta(meta);
    result.instructions = shared.info.instructions.clone();
    result
}

/// The tool or prompt `request` names, one copy shared by its job and its metrics: the
/// handler consumes the request's params, and the two had each copied the name out of them
/// (an allocation per `tools/call` more).
pub(crate) fn subject_of(request: &ClientRequest) -> Option<Arc<str>> {
    match request {
        ClientRequest::CallTool(p) => Some(p.name.as_str().into()),
        ClientRequest::GetPrompt(p) => Some(p.name.as_str().into()),
        _ => None,
    }
}

/// The error response to `id`.
pub(crate) fn error_frame(id: &RequestId, err: &McpError) -> Vec<u8> {
    err.to_response(Some(id.clone())).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::inbound::Inbound;
    use crate::exchange::Parsed;

    /// The values a request is carried in are moved layer to layer, each move a copy into
    /// lines seldom in L1 (docs/benchmarks.md, the eleventh session): the rare parts of
    /// each (a refusal's error, the lazily read envelope, a sealed input request, the
    /// context's parts) are boxed or shared so they do not size the common request.
    #[test]
    fn the_values_a_request_moves_through_stay_small() {
        use std::mem::size_of;
        let sizes = [
            ("RequestJob", size_of::<RequestJob>(), 128),
            ("Inbound", size_of::<Inbound>(), 48),
            ("Parsed", size_of::<Parsed>(), 96),
            ("Resolved<CallToolResult>", size_of::<Resolved<CallToolResult>>(), size_of::<CallToolResult>() + 8),
        ];
        for (what, size, most) in sizes {
            assert!(size <= most, "{what} grew to {size} bytes (at most {most})");
        }
    }
}

//! Tracing spans by the OpenTelemetry MCP semantic conventions: a span per connection or
//! legacy session, per request (kind server), per subscription stream, per task of the
//! tasks extension and per legacy server→client request (kind client), named
//! `{mcp.method.name} {target}` (target: the tool or prompt) through the `otel.name` field
//! `tracing-opentelemetry` exports as the name, and attributed with the names of [`attr`].
//!
//! Built on `tracing` only: any subscriber sees the spans (target [`TARGET`]; level INFO
//! for connections, DEBUG for the per-request spans, as tower-http's, so a server logging
//! at INFO pays nothing per request: `RUST_LOG=info,arbor::mcp=debug` turns them on).
//! With the `otel` feature, a W3C trace context in a request's `params._meta`
//! (`traceparent`, `tracestate`, `baggage`) becomes the OpenTelemetry parent of its span
//! ([`propagate`]); without it, the raw `traceparent` is recorded as a field. With the
//! `otlp` feature, `otlp::init` installs an OTLP exporter. This module is not the metrics
//! (`metrics.rs`) and exports nothing by itself.
//!
//! Invariants: no attribute string is built, and no payload serialised, unless a
//! subscriber wants the span (every value is formatted lazily or behind
//! `Span::is_disabled`); tool arguments and results appear only with
//! `ServerConfig::trace_tool_payloads`; no token is ever a field (the principal is named
//! by its subject); `error.type` is set exactly when the server failed
//! (`ErrorCode::is_server_fault`, or `tool_error` for `isError`), and `otel.status_code`
//! is `error` exactly then.

/// The attribute names (the conventions' and Arbor's own), from `arbor-protocol`.
pub use arbor_protocol::telemetry as attr;
mod in_span;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod propagate;

use std::fmt;
use std::sync::{Arc, OnceLock};

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::Meta;
use arbor_protocol::methods::ClientRequest;
use arbor_protocol::version::{Era, ProtocolVersion};
use serde::Serialize;
use tracing::field::{display, Empty};
use tracing::Span;

use crate::context::ConnectionInfo;
pub(crate) use in_span::InSpan;

/// The `tracing` target of every span the runtime opens, for filters
/// (`RUST_LOG=info,arbor::mcp=debug`).
pub const TARGET: &str = "arbor::mcp";

/// What every span of one connection shares, fixed when it starts.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionTrace {
    /// `pipe` or `tcp` ([`attr::NETWORK_TRANSPORT`]).
    pub(crate) transport: &'static str,
    /// The legacy HTTP session's id, when the connection is one.
    pub(crate) session_id: Option<Arc<str>>,
    /// The connection's place in the tree, for [`attr::ARBOR_SUPERVISOR_PATH`].
    pub(crate) path: Arc<str>,
    /// `{path}/requests`, its requests' place: made once, the first time a subscriber
    /// wants a request's span (each span formatted it: about 800 instructions per request
    /// with a subscriber), and never without one.
    pub(crate) requests_path: OnceLock<Box<str>>,
    /// `ServerConfig::trace_tool_payloads`.
    pub(crate) payloads: bool,
}

impl ConnectionTrace {
    /// The span of the connection (or legacy session): parent of its requests and streams.
    pub(crate) fn connection_span(&self, tenant: &str) -> Span {
        tracing::info_span!(
            target: TARGET,
            parent: None,
            "mcp.connection",
            { attr::OTEL_NAME } = if self.session_id.is_some() { "mcp.session" } else { "mcp.connection" },
            { attr::OTEL_KIND } = "server",
            { attr::NETWORK_TRANSPORT } = self.transport,
            { attr::MCP_SESSION_ID } = self.session_id.as_deref(),
            { attr::MCP_PROTOCOL_VERSION } = Empty,
            { attr::ARBOR_TENANT } = tenant,
            { attr::ARBOR_SUPERVISOR_PATH } = &*self.path,
        )
    }

    /// `{path}/requests` (see `requests_path`).
    fn requests_path(&self) -> &str {
        self.requests_path.get_or_init(|| format!("{}/requests", self.path).into())
    }

    /// The session id, for a legacy request only: the conventions forbid it on 2026-07-28.
    fn session_for(&self, version: ProtocolVersion) -> Option<&str> {
        self.session_id.as_deref().filter(|_| version.era() == Era::Legacy)
    }
}

/// Records the revision a legacy session negotiated on its span.
pub(crate) fn record_negotiated(span: &Span, version: ProtocolVersion) {
    span.record(attr::MCP_PROTOCOL_VERSION, version.as_str());
}

/// `{method} {target}`, or the method alone: the conventions' span name.
struct SpanName<'a>(&'a str, Option<&'a str>);

// The parts written one by one rather than through `write!`, whose format machinery costs
// more than the copies on a span built per request.
impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        match self.1 {
            Some(target) => {
                f.write_str(" ")?;
                f.write_str(target)
            }
            None => Ok(()),
        }
    }
}

/// The longest `{method} {target}` a request span's name is written into the thread's
/// buffer for: a method and a tool name of the 128 characters the specification suggests
/// at most. A longer one is written into a string of its own, so the buffer stays small.
const NAME_BUFFER: usize = 192;

std::thread_local! {
    /// The thread's buffer for request span names (see [`NameText`]), empty while lent.
    static NAME: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// A request span's name as text, made only when a subscriber wants the span: a value a
/// subscriber records as a string (`record_str`) rather than through `record_debug`, which
/// would run the format machinery into its own buffer (a visiting layer paid about 800
/// instructions per request for that, once for the name and once for the id).
///
/// `{method} {target}` is written into the thread's buffer, lent for the span's creation
/// and given back when this drops. Joining the two into an array on the stack instead
/// cost a UTF-8 check of the result (`str::from_utf8`, about 110 instructions for
/// `tools/call echo`) and a copy of the array: measured, about 140 instructions per
/// request more than this.
enum NameText<'a> {
    /// The method alone: a request with no tool or prompt.
    Method(&'a str),
    /// `{method} {target}`, in the thread's buffer or, when too long for it, its own.
    Joined(String),
}

impl<'a> NameText<'a> {
    fn new(method: &'a str, target: Option<&str>) -> NameText<'a> {
        let Some(target) = target else { return NameText::Method(method) };
        let len = method.len() + 1 + target.len();
        // Taken, not borrowed: a name made while another is lent (a subscriber opening a
        // request span inside this one's creation) finds the buffer empty, and allocates.
        let mut name = if len <= NAME_BUFFER {
            let mut buffer = NAME.try_with(|buffer| buffer.take()).unwrap_or_default();
            buffer.clear();
            // Made once per thread with room for any name it will take.
            buffer.reserve(NAME_BUFFER);
            buffer
        } else {
            String::with_capacity(len)
        };
        name.push_str(method);
        name.push(' ');
        name.push_str(target);
        NameText::Joined(name)
    }

    fn as_str(&self) -> &str {
        match self {
            NameText::Method(method) => method,
            NameText::Joined(name) => name,
        }
    }
}

impl Drop for NameText<'_> {
    fn drop(&mut self) {
        if let NameText::Joined(name) = self {
            if name.capacity() <= NAME_BUFFER {
                let name = std::mem::take(name);
                // Nothing to give back to once the thread is ending.
                let _ = NAME.try_with(|buffer| buffer.set(name));
            }
        }
    }
}

/// A JSON-RPC id as the peer wrote it, as text (see [`NameText`]): a string id as it is,
/// without JSON quotes; an integer written into `digits`.
fn id_text<'a>(id: &'a RequestId, digits: &'a mut itoa::Buffer) -> &'a str {
    match id {
        RequestId::String(s) => s,
        RequestId::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => digits.format(i),
            (None, Some(u)) => digits.format(u),
            // A request id is an integer (`RequestId`'s invariant): never reached.
            (None, None) => "",
        },
    }
}

/// A value shown as compact JSON, serialised only if a subscriber records it.
struct Json<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> fmt::Display for Json<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self.0) {
            Ok(json) => f.write_str(&json),
            Err(_) => f.write_str("null"),
        }
    }
}

/// What names a request's target: its tool or prompt (the span name's second part), and
/// the resource it reads or subscribes to.
fn targets(request: &ClientRequest) -> (Option<&str>, Option<&str>, Option<&str>) {
    match request {
        ClientRequest::CallTool(p) => (Some(&p.name), None, None),
        ClientRequest::GetPrompt(p) => (None, Some(&p.name), None),
        ClientRequest::ReadResource(p) => (None, None, Some(&p.uri)),
        ClientRequest::Subscribe(p) | ClientRequest::Unsubscribe(p) => (None, None, Some(&p.uri)),
        _ => (None, None, None),
    }
}

/// The span of one request served on a request task.
pub(crate) struct RequestSpan<'a> {
    /// The connection span, or `None` for a request of the 2026-07-28 pool (a root:
    /// the pool lives as long as the server, and is no peer's connection).
    pub(crate) parent: Option<&'a Span>,
    pub(crate) trace: &'a ConnectionTrace,
    pub(crate) id: &'a RequestId,
    pub(crate) request: &'a ClientRequest,
    pub(crate) version: ProtocolVersion,
    pub(crate) info: &'a ConnectionInfo,
    pub(crate) meta: &'a Meta,
}

impl RequestSpan<'_> {
    /// Opens the span (kind server), its parent taken from `_meta`'s trace context when
    /// there is one.
    pub(crate) fn open(self) -> Span {
        let RequestSpan { parent, trace, id, request, version, info, meta } = self;
        let method = request.method().as_str();
        let (tool, prompt, uri) = targets(request);
        let parent = parent.and_then(Span::id);
        let arguments = match request {
            ClientRequest::CallTool(p) if trace.payloads => p.arguments.as_ref(),
            _ => None,
        };
        let span = tracing::debug_span!(
            target: TARGET,
            parent: parent,
            "mcp.server.request",
            { attr::OTEL_NAME } = NameText::new(method, tool.or(prompt)).as_str(),
            { attr::OTEL_KIND } = "server",
            { attr::OTEL_STATUS_CODE } = Empty,
            { attr::OTEL_STATUS_DESCRIPTION } = Empty,
            { attr::MCP_METHOD_NAME } = method,
            { attr::MCP_PROTOCOL_VERSION } = version.as_str(),
            { attr::MCP_SESSION_ID } = trace.session_for(version),
            { attr::MCP_RESOURCE_URI } = uri,
            { attr::GEN_AI_TOOL_NAME } = tool,
            { attr::GEN_AI_PROMPT_NAME } = prompt,
            { attr::GEN_AI_OPERATION_NAME } = tool.map(|_| attr::EXECUTE_TOOL),
            { attr::GEN_AI_TOOL_CALL_ARGUMENTS } = arguments.map(|a| display(Json(a))),
            { attr::GEN_AI_TOOL_CALL_RESULT } = Empty,
            { attr::JSONRPC_REQUEST_ID } = id_text(id, &mut itoa::Buffer::new()),
            { attr::ERROR_TYPE } = Empty,
            { attr::RPC_RESPONSE_STATUS_CODE } = Empty,
            { attr::NETWORK_TRANSPORT } = trace.transport,
            { attr::ARBOR_TENANT } = info.tenant.as_str(),
            { attr::ARBOR_PRINCIPAL } = info.principal.as_ref().map(|p| p.subject.as_str()),
            { attr::ARBOR_SUPERVISOR_PATH } = trace.requests_path(),
            { attr::ARBOR_TRACEPARENT } = Empty,
        );
        if !span.is_disabled() {
            propagate::adopt(&span, meta);
        }
        span
    }
}

/// A connection's path and the child supervisor a unit lives under.
struct SupervisorPath<'a>(&'a str, &'a str);

impl fmt::Display for SupervisorPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        f.write_str("/")?;
        f.write_str(self.1)
    }
}

/// The span of a subscription stream: a 2026-07-28 listen (kind server, the request's
/// id), a legacy `resources/subscribe` (its URI) or a legacy session's `list_changed`
/// stream. It lasts as long as the stream.
pub(crate) fn stream_span(
    parent: Option<&Span>,
    trace: &ConnectionTrace,
    id: Option<&RequestId>,
    info: &ConnectionInfo,
    uri: Option<&str>,
) -> Span {
    let method = match (id, uri) {
        (Some(_), _) => "subscriptions/listen",
        (None, Some(_)) => "resources/subscribe",
        (None, None) => "notifications/list_changed",
    };
    let version = info.protocol_version;
    // Only written into when a subscriber wants the span (the macro evaluates fields then).
    let mut digits = itoa::Buffer::new();
    tracing::debug_span!(
        target: TARGET,
        parent: parent.and_then(Span::id),
        "mcp.server.stream",
        { attr::OTEL_NAME } = method,
        { attr::OTEL_KIND } = "server",
        { attr::MCP_METHOD_NAME } = method,
        { attr::MCP_PROTOCOL_VERSION } = version.as_str(),
        { attr::MCP_SESSION_ID } = trace.session_for(version),
        { attr::MCP_RESOURCE_URI } = uri,
        { attr::JSONRPC_REQUEST_ID } = id.map(|id| id_text(id, &mut digits)),
        { attr::NETWORK_TRANSPORT } = trace.transport,
        { attr::ARBOR_TENANT } = info.tenant.as_str(),
        { attr::ARBOR_PRINCIPAL } = info.principal.as_ref().map(|p| p.subject.as_str()),
        { attr::ARBOR_SUPERVISOR_PATH } = %SupervisorPath(&trace.path, "subscriptions"),
    )
}

/// The span of a task's run (tasks extension): a child of the `tools/call` that created
/// it (the current span), lasting as long as the run, named `tools/call {tool}` with the
/// task's id.
pub(crate) fn task_span(tool: &str, task_id: &str, info: &ConnectionInfo) -> Span {
    tracing::debug_span!(
        target: TARGET,
        "mcp.server.task",
        { attr::OTEL_NAME } = %SpanName("tools/call", Some(tool)),
        { attr::OTEL_KIND } = "internal",
        { attr::OTEL_STATUS_CODE } = Empty,
        { attr::OTEL_STATUS_DESCRIPTION } = Empty,
        { attr::MCP_METHOD_NAME } = "tools/call",
        { attr::MCP_PROTOCOL_VERSION } = info.protocol_version.as_str(),
        { attr::GEN_AI_TOOL_NAME } = tool,
        { attr::GEN_AI_OPERATION_NAME } = attr::EXECUTE_TOOL,
        { attr::GEN_AI_TOOL_CALL_RESULT } = Empty,
        { attr::ERROR_TYPE } = Empty,
        { attr::RPC_RESPONSE_STATUS_CODE } = Empty,
        { attr::ARBOR_TASK_ID } = task_id,
        { attr::ARBOR_TENANT } = info.tenant.as_str(),
        { attr::ARBOR_PRINCIPAL } = info.principal.as_ref().map(|p| p.subject.as_str()),
        { attr::ARBOR_SUPERVISOR_PATH } = "root/tasks",
    )
}

/// The span of a legacy server→client request (`elicitation/create`,
/// `sampling/createMessage`, `roots/list`): kind client, a child of the current span (the
/// request task that asked), ended when the answer arrives or the waiter goes away.
pub(crate) fn outgoing_span(method: &'static str, id: &RequestId) -> Span {
    tracing::debug_span!(
        target: TARGET,
        "mcp.server.outgoing",
        { attr::OTEL_NAME } = method,
        { attr::OTEL_KIND } = "client",
        { attr::OTEL_STATUS_CODE } = Empty,
        { attr::OTEL_STATUS_DESCRIPTION } = Empty,
        { attr::MCP_METHOD_NAME } = method,
        { attr::JSONRPC_REQUEST_ID } = id_text(id, &mut itoa::Buffer::new()),
        { attr::ERROR_TYPE } = Empty,
        { attr::RPC_RESPONSE_STATUS_CODE } = Empty,
    )
}

/// Records an error response on a server span: its code always, `error.type` and the
/// error status only when the server failed (the conventions' server-side
/// classification).
pub(crate) fn record_error(span: &Span, err: &McpError) {
    if span.is_disabled() {
        return;
    }
    let code = err.code();
    span.record(attr::RPC_RESPONSE_STATUS_CODE, display(code.as_i64()));
    if code.is_server_fault() {
        record_failure(span, &code.as_i64(), err.message());
    }
}

/// Records an error answer on a client span: every JSON-RPC error is an error there.
pub(crate) fn record_client_error(span: &Span, err: &McpError) {
    if span.is_disabled() {
        return;
    }
    let code = err.code().as_i64();
    span.record(attr::RPC_RESPONSE_STATUS_CODE, display(code));
    record_failure(span, &code, err.message());
}

fn record_failure(span: &Span, error_type: &dyn fmt::Display, message: &str) {
    span.record(attr::ERROR_TYPE, display(error_type));
    span.record(attr::OTEL_STATUS_CODE, "error");
    span.record(attr::OTEL_STATUS_DESCRIPTION, message);
}

/// Records a tool result: `tool_error` when it says `isError`, and the result itself
/// when payloads are traced.
pub(crate) fn record_tool_result<T: Serialize>(span: &Span, is_error: bool, result: &T, payloads: bool) {
    if span.is_disabled() {
        return;
    }
    if payloads {
        span.record(attr::GEN_AI_TOOL_CALL_RESULT, display(Json(result)));
    }
    if is_error {
        record_failure(span, &attr::TOOL_ERROR, "the tool reported an error (isError)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The capacity of the thread's name buffer, as it is now (0 while lent or not made).
    fn buffer_capacity() -> usize {
        NAME.with(|buffer| {
            let name = buffer.take();
            let capacity = name.capacity();
            buffer.set(name);
            capacity
        })
    }

    #[test]
    fn a_span_name_is_the_method_and_its_target_however_long_the_target() {
        assert_eq!(NameText::new("tools/list", None).as_str(), "tools/list");
        assert_eq!(NameText::new("tools/call", Some("echo")).as_str(), "tools/call echo");
        // The thread's buffer is given back, with its fixed room, and reused.
        assert_eq!(buffer_capacity(), NAME_BUFFER);
        // Exactly the buffer's room, and one byte past it (a string of its own instead).
        let room = NAME_BUFFER - "tools/call ".len();
        let fits = "t".repeat(room);
        assert_eq!(NameText::new("tools/call", Some(&fits)).as_str(), format!("tools/call {fits}"));
        let long = "t".repeat(room + 1);
        assert_eq!(NameText::new("tools/call", Some(&long)).as_str(), format!("tools/call {long}"));
        // A long name is not kept: the buffer stays bounded.
        assert_eq!(buffer_capacity(), NAME_BUFFER);
        // A name of several-byte characters is copied whole.
        let accented = "é".repeat(room / 2);
        assert_eq!(NameText::new("tools/call", Some(&accented)).as_str(), format!("tools/call {accented}"));
        // A name made while another is lent gets a string of its own; both are right.
        let outer = NameText::new("tools/call", Some("outer"));
        let inner = NameText::new("prompts/get", Some("inner"));
        assert_eq!((outer.as_str(), inner.as_str()), ("tools/call outer", "prompts/get inner"));
        drop(inner);
        drop(outer);
        assert_eq!(buffer_capacity(), NAME_BUFFER);
    }

    #[test]
    fn a_request_id_is_written_as_the_peer_wrote_it() {
        let text = |id: &RequestId| id_text(id, &mut itoa::Buffer::new()).to_owned();
        assert_eq!(text(&RequestId::String("call-7".into())), "call-7");
        assert_eq!(text(&RequestId::Number(7.into())), "7");
        assert_eq!(text(&RequestId::Number((-3).into())), "-3");
        assert_eq!(text(&RequestId::Number(u64::MAX.into())), u64::MAX.to_string());
    }
}

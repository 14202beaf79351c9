//! The attribute names of Arbor's spans, in one place: the OpenTelemetry MCP semantic
//! conventions' (`open-telemetry/semantic-conventions-genai`, `model/mcp/*.yaml`, status
//! Development), the few `tracing-opentelemetry` reads as span properties (`otel.*`), and
//! Arbor's own (`arbor.*`).
//!
//! Names only: no values, no logic, no dependency (they live here, in the pure-data crate,
//! because the server runtime and the client both name them; `arbor_server::telemetry`
//! builds the spans). Invariant: every span field of the runtime is named through these
//! constants, so a rename is one line.

/// The JSON-RPC method, e.g. `tools/call` (required on every MCP span).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// The protocol revision in force for the request, e.g. `2026-07-28`.
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// The legacy `Mcp-Session-Id`; never set for a 2026-07-28 request.
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// The resource a request names (`resources/read`, `resources/subscribe`, …).
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
/// The tool a `tools/call` calls.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// The prompt a `prompts/get` gets.
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
/// `execute_tool` on a `tools/call`, absent otherwise.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The value of [`GEN_AI_OPERATION_NAME`] on a tool call.
pub const EXECUTE_TOOL: &str = "execute_tool";
/// A tool call's arguments as JSON: opt-in (`ServerConfig::trace_tool_payloads`), sensitive.
pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// A tool call's result as JSON: opt-in, sensitive.
pub const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// The request's JSON-RPC id as written (a string id without quotes).
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// Set on failure only: the JSON-RPC error code as a string, or [`TOOL_ERROR`]. On the
/// server only codes that are the server's fault (`ErrorCode::is_server_fault`).
pub const ERROR_TYPE: &str = "error.type";
/// The value of [`ERROR_TYPE`] for a tool result with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";
/// The JSON-RPC error code of an error response, as a string (every error response).
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
/// `pipe` for stdio and other byte streams, `tcp` for HTTP.
pub const NETWORK_TRANSPORT: &str = "network.transport";
/// The span's name as exported (`tracing` names are static): `{method} {target}`.
pub const OTEL_NAME: &str = "otel.name";
/// The span's kind as exported: `server` or `client` (`internal` for a task's run).
pub const OTEL_KIND: &str = "otel.kind";
/// The span's status as exported: `error` exactly when [`ERROR_TYPE`] is set.
pub const OTEL_STATUS_CODE: &str = "otel.status_code";
/// The status description: the JSON-RPC error's message.
pub const OTEL_STATUS_DESCRIPTION: &str = "otel.status_description";

/// Arbor's own: the tenant the connection belongs to.
pub const ARBOR_TENANT: &str = "arbor.tenant";
/// Arbor's own: the verified principal's subject, only when the request was authenticated.
pub const ARBOR_PRINCIPAL: &str = "arbor.principal";
/// Arbor's own: where the unit lives in the supervision tree, e.g.
/// `root/tenant:default/connections/<actor>/requests`.
pub const ARBOR_SUPERVISOR_PATH: &str = "arbor.supervisor.path";
/// Arbor's own: a task's id (tasks extension).
pub const ARBOR_TASK_ID: &str = "arbor.task.id";
/// Arbor's own: the W3C `traceparent` the request carried in `_meta`, recorded raw when
/// the `otel` feature (which makes it the span's parent instead) is off.
pub const ARBOR_TRACEPARENT: &str = "arbor.traceparent";

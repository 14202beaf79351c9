//! The client's metrics, through the [`metrics`] facade: the OpenTelemetry MCP
//! conventions' `mcp.client.operation.duration` (seconds from a request sent to its answer,
//! one per request on the wire, so an MRTR retry is a second operation) and
//! `mcp.client.session.duration` (from connected to closed or dropped), with
//! `server.address` and `server.port` for HTTP servers.
//!
//! What it is not: a recorder (the application installs one; without it every call is the
//! facade's no-op). On the client side every JSON-RPC error is an error: `error.type` is
//! its code, `tool_error` for a `CallToolResult` with `isError: true`, or the kind of
//! failure when no answer came (`timeout`, `cancelled`, `disconnected`, `_OTHER`).
//! Invariant: a session's duration is recorded once, whichever of close and drop comes
//! first.

use std::time::Instant;

use arbor_protocol::methods::MethodName;
use arbor_protocol::version::ProtocolVersion;
use metrics::{histogram, Label, SharedString};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::ClientError;
use crate::target::ServerTarget;

/// `mcp.client.operation.duration`.
pub const OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// `mcp.client.session.duration`.
pub const SESSION_DURATION: &str = "mcp.client.session.duration";
/// `server.address`: the HTTP server's host.
pub const SERVER_ADDRESS: &str = "server.address";
/// `server.port`: the HTTP server's port.
pub const SERVER_PORT: &str = "server.port";

const METHOD: &str = "mcp.method.name";
const PROTOCOL_VERSION: &str = "mcp.protocol.version";
const TOOL_NAME: &str = "gen_ai.tool.name";
const PROMPT_NAME: &str = "gen_ai.prompt.name";
const ERROR_TYPE: &str = "error.type";
const STATUS_CODE: &str = "rpc.response.status_code";
const TRANSPORT: &str = "network.transport";

/// Who the client talks to, as labels, made once per client.
#[derive(Debug)]
pub(crate) struct Peer {
    transport: &'static str,
    address: Option<(SharedString, SharedString)>,
    session: Mutex<Option<Instant>>,
}

impl Peer {
    pub(crate) fn of(target: &ServerTarget) -> Peer {
        let (transport, address) = match target {
            ServerTarget::Http(h) => {
                let url = url::Url::parse(&h.url).ok();
                let host = url.as_ref().and_then(|u| u.host_str().map(str::to_owned));
                let port = url.as_ref().and_then(url::Url::port_or_known_default);
                ("tcp", host.zip(port).map(|(h, p)| (SharedString::from(h), SharedString::from(p.to_string()))))
            }
            _ => ("pipe", None),
        };
        Peer { transport, address, session: Mutex::new(Some(Instant::now())) }
    }

    fn base(&self, labels: &mut Vec<Label>, version: Option<ProtocolVersion>) {
        if let Some(v) = version {
            labels.push(Label::new(PROTOCOL_VERSION, v.as_str()));
        }
        labels.push(Label::new(TRANSPORT, self.transport));
        if let Some((host, port)) = &self.address {
            labels.push(Label::new(SERVER_ADDRESS, host.clone()));
            labels.push(Label::new(SERVER_PORT, port.clone()));
        }
    }

    /// One request sent at `sent` got `answer`.
    pub(crate) fn operation(
        &self,
        method: MethodName,
        version: Option<ProtocolVersion>,
        params: &Value,
        sent: Instant,
        answer: &Result<Box<RawValue>, ClientError>,
    ) {
        let mut labels = Vec::with_capacity(8);
        labels.push(Label::new(METHOD, method.as_str()));
        self.base(&mut labels, version);
        let target = match method {
            MethodName::CallTool => Some(TOOL_NAME),
            MethodName::GetPrompt => Some(PROMPT_NAME),
            _ => None,
        };
        if let Some((key, name)) = target.zip(params.get("name").and_then(Value::as_str)) {
            labels.push(Label::new(key, name.to_owned()));
        }
        match answer {
            Ok(raw) if method == MethodName::CallTool && is_tool_error(raw) => {
                labels.push(Label::new(ERROR_TYPE, "tool_error"));
            }
            Ok(_) => {}
            Err(ClientError::Rpc(err)) => {
                let code = SharedString::from(err.code().as_i64().to_string());
                labels.push(Label::new(ERROR_TYPE, code.clone()));
                labels.push(Label::new(STATUS_CODE, code));
            }
            Err(other) => labels.push(Label::new(ERROR_TYPE, failure(other))),
        }
        histogram!(OPERATION_DURATION, labels).record(sent.elapsed().as_secs_f64());
    }

    /// The session ended (closed, or the client dropped): recorded the first time only.
    pub(crate) fn session_ended(&self, version: Option<ProtocolVersion>) {
        let Some(start) = self.session.lock().take() else { return };
        let mut labels = Vec::with_capacity(4);
        self.base(&mut labels, version);
        histogram!(SESSION_DURATION, labels).record(start.elapsed().as_secs_f64());
    }
}

/// A `CallToolResult` with `isError: true` (a substring scan first: most results are not).
fn is_tool_error(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "isError")]
        is_error: Option<bool>,
    }
    raw.get().contains("\"isError\"")
        && serde_json::from_str::<Probe>(raw.get()).is_ok_and(|p| p.is_error == Some(true))
}

/// `error.type` for a request that got no JSON-RPC answer.
fn failure(err: &ClientError) -> &'static str {
    match err {
        ClientError::Timeout(_) => "timeout",
        ClientError::Cancelled => "cancelled",
        ClientError::Disconnected | ClientError::SessionExpired => "disconnected",
        _ => "_OTHER",
    }
}

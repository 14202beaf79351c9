//! Message-level serving for transports that are not one byte stream (Streamable HTTP).
//!
//! TODO(skeleton): filled in by the next commit.

use std::sync::Arc;

use arbor_protocol::era::http::ParamHeader;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::version::ProtocolVersion;
use tokio::sync::mpsc;

use crate::error::ConnectError;
use crate::serve::{ConnectOptions, Server};

/// One server→client message, tagged with what it is (already serialised compact JSON, no
/// newline).
#[derive(Debug)]
pub enum Outgoing {
    /// A notification: progress/log of a request on this route, a listen stream's
    /// notification, or (on the standalone route) an unrelated notification.
    Notification(Vec<u8>),
    /// A server→client request made by a request on this route, or (standalone) unrelated.
    Request(Vec<u8>),
    /// A JSON-RPC response (or error) answering one request submitted on this route, or a
    /// whole batch array (2025-03-26). One per expected response.
    Response(Vec<u8>),
}

impl Outgoing {
    /// For a `Response` that is a JSON-RPC error, its code; `None` otherwise.
    pub fn error_code(&self) -> Option<i64> {
        todo!()
    }
}

/// The sending half of a route; cheap to clone, unbounded.
#[derive(Clone, Debug)]
pub struct Route {
    tx: Option<mpsc::UnboundedSender<Outgoing>>,
}

/// The receiving half of a route.
#[derive(Debug)]
pub struct RouteReceiver {
    rx: mpsc::UnboundedReceiver<Outgoing>,
}

impl Route {
    /// A connected pair.
    pub fn channel() -> (Route, RouteReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Route { tx: Some(tx) }, RouteReceiver { rx })
    }

    /// A route that discards everything.
    pub fn discard() -> Route {
        Route { tx: None }
    }

    /// Whether the receiver was dropped.
    pub fn is_closed(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.is_closed())
    }
}

impl RouteReceiver {
    /// The next message; `None` once every `Route` clone is dropped.
    pub async fn recv(&mut self) -> Option<Outgoing> {
        self.rx.recv().await
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<Outgoing> {
        self.rx.try_recv().ok()
    }
}

/// What happens to the requests of a submission when its `RouteReceiver` is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnClose {
    /// 2026-07-28 HTTP: closing the response stream cancels the request.
    Cancel,
    /// Legacy HTTP: a disconnect is not a cancel; the request runs on.
    Continue,
}

/// What kind of body a [`Parsed`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// One request (or a refused frame that would be answered).
    Request,
    /// One notification.
    Notification,
    /// One response or error response from the client.
    Response,
    /// A JSON-RPC batch.
    Batch,
}

/// A decoded body (one message or a batch), parsed once, before routing.
#[derive(Debug)]
pub struct Parsed {
    _todo: (),
}

impl Parsed {
    /// Decodes a body.
    pub fn parse(body: &[u8]) -> Parsed {
        let _ = body;
        todo!()
    }
    /// What kind of body it is.
    pub fn kind(&self) -> BodyKind {
        todo!()
    }
    /// The error this body will be answered with, if it is not a servable message.
    pub fn error(&self) -> Option<&McpError> {
        todo!()
    }
    /// Number of responses its submission will produce on the route.
    pub fn expected_responses(&self) -> usize {
        todo!()
    }
    /// For a single request: its method name as sent.
    pub fn method(&self) -> Option<&str> {
        todo!()
    }
    /// For a single request: its id.
    pub fn request_id(&self) -> Option<&RequestId> {
        todo!()
    }
    /// The request's params as JSON; `None` when absent.
    pub fn params_json(&self) -> Option<&serde_json::Value> {
        todo!()
    }
    /// The 2026-07-28 protocol version in `_meta`, if any.
    pub fn modern_version(&self) -> Option<&str> {
        todo!()
    }
    /// Whether the single message is `initialize`.
    pub fn is_initialize(&self) -> bool {
        todo!()
    }
}

/// A connection actor fed message by message.
#[derive(Clone, Debug)]
pub struct Endpoint {
    _todo: (),
}

impl Endpoint {
    /// Submits a parsed body; everything it causes goes to `route`. Never waits.
    pub fn submit(&self, parsed: Parsed, route: Route, on_close: OnClose) {
        let _ = (parsed, route, on_close);
        todo!()
    }
    /// Replaces the route for messages not related to any request.
    pub fn set_standalone(&self, route: Route) {
        let _ = route;
        todo!()
    }
    /// The negotiated legacy revision once `initialize` was answered.
    pub fn negotiated_version(&self) -> Option<ProtocolVersion> {
        todo!()
    }
    /// Asks the endpoint to stop.
    pub fn close(&self) {
        todo!()
    }
    /// Waits until the endpoint has stopped.
    pub async fn closed(&self) {
        todo!()
    }
    /// Whether the endpoint is still running.
    pub fn is_open(&self) -> bool {
        todo!()
    }
}

impl Server {
    /// Opens an endpoint: a connection actor with no byte transport, under the server's tree.
    pub async fn open_endpoint(&self, options: ConnectOptions, standalone: Route) -> Result<Endpoint, ConnectError> {
        let _ = (options, standalone);
        todo!()
    }

    /// `x-mcp-header` annotations of tool `name`.
    pub fn tool_param_headers(&self, name: &str) -> Arc<[ParamHeader]> {
        let _ = name;
        todo!()
    }
}

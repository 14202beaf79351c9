//! Test peers: the client end of a connection to a server under test, speaking raw
//! JSON-RPC values, so a test sees exactly what went over the wire.
//!
//! [`Exchange`] is the part every peer shares whatever carries its messages: a request and
//! its response (skipping notifications), the legacy handshake. A peer supplies only how one
//! message is written and read; [`stdio::LinePeer`] is the one over newline-delimited pipes.
//! With the `http` feature, `http` holds the shared pieces of a raw Streamable HTTP client.
//! Nothing here is a client library: there is no retry, no era detection, no validation
//! beyond the ids, and every wait is bounded by the peer, so a hung server fails the test.

use std::future::Future;

use serde_json::{json, Value};

#[cfg(feature = "http")]
pub mod http;
pub mod stdio;

/// A client end that writes and reads whole JSON-RPC messages.
pub trait Exchange {
    /// Writes one message.
    fn write_message(&mut self, message: Value) -> impl Future<Output = ()>;

    /// The next message; fails the test when none arrives within the peer's bound or the
    /// server ends the connection.
    fn read_message(&mut self) -> impl Future<Output = Value>;

    /// Where a notification read while waiting for a response goes: dropped unless the
    /// peer keeps it.
    fn set_aside(&mut self, _notification: Value) {}

    /// The `clientInfo` the handshake declares.
    fn client_info(&self) -> Value {
        json!({"name": "tests", "version": "0.0.0"})
    }

    /// The next message that carries an id (a response, or a request from the server);
    /// notifications before it go to [`Exchange::set_aside`].
    fn next_response(&mut self) -> impl Future<Output = Value> {
        async move {
            loop {
                let message = self.read_message().await;
                if message.get("id").is_some() {
                    return message;
                }
                self.set_aside(message);
            }
        }
    }

    /// Sends a request and returns its response. A server-to-client request meanwhile
    /// fails the test: write the request and answer it by hand where one is expected.
    fn call(&mut self, id: impl Into<Value>, method: &str, params: Value) -> impl Future<Output = Value> {
        let id = id.into();
        async move {
            self.write_message(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
            let response = self.next_response().await;
            assert!(response.get("method").is_none(), "expected the response to {method}, got a request: {response}");
            assert_eq!(response["id"], id, "a response to another request: {response}");
            response
        }
    }

    /// Asserts, on a 2025-11-25 session of another owner, that the task `id` is hidden from
    /// it exactly as an id that never existed: `tasks/get`, `tasks/result` and
    /// `tasks/cancel` answer the same -32602, and `tasks/list` is empty. Uses ids 2 to 6.
    fn assert_task_hidden(&mut self, id: &str) -> impl Future<Output = ()> {
        async move {
            let unknown = self.call(2, "tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"})).await;
            assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
            for (n, method) in [(3, "tasks/get"), (4, "tasks/result"), (5, "tasks/cancel")] {
                let hidden = self.call(n, method, json!({"taskId": id})).await;
                assert_eq!(hidden["error"], unknown["error"], "{method}");
            }
            assert_eq!(self.call(6, "tasks/list", json!({})).await["result"]["tasks"], json!([]));
        }
    }

    /// The legacy handshake at `version`, declaring `capabilities`: `initialize` (id 0) and
    /// `notifications/initialized`; returns the `initialize` result.
    fn initialize(&mut self, version: &str, capabilities: Value) -> impl Future<Output = Value> {
        let params =
            json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": self.client_info()});
        async move {
            let response = self.call(0, "initialize", params).await;
            self.write_message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
            response["result"].clone()
        }
    }
}

/// `_meta` of a 2026-07-28 request declaring `capabilities` (and, when given, `client_info`).
pub fn modern_meta(capabilities: Value, client_info: Option<Value>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    if let Some(info) = client_info {
        meta["io.modelcontextprotocol/clientInfo"] = info;
    }
    meta
}

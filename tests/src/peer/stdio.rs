//! A raw JSON-lines peer over a pair of byte pipes: a child process's stdin and stdout, or
//! the two ends of OS pipes a server was given.
//!
//! It writes each message as one line and reads one message a line; the input it writes can
//! be closed on its own, so a test can watch the server drain and end its output. It knows
//! nothing of how the server was started: spawning stays with the crate whose binaries it
//! runs. Every read is bounded by the peer's `wait`.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

use super::Exchange;

/// The client end of a newline-delimited JSON-RPC connection.
pub struct LinePeer<R, W> {
    writer: Option<W>,
    lines: Lines<BufReader<R>>,
    wait: Duration,
    client_info: Option<Value>,
    /// Notifications received while waiting for responses, in arrival order.
    pub notifications: Vec<Value>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LinePeer<R, W> {
    /// A peer reading the server's output from `reader` and writing its input to `writer`;
    /// `wait` bounds every expected message.
    pub fn new(reader: R, writer: W, wait: Duration) -> Self {
        LinePeer {
            writer: Some(writer),
            lines: BufReader::new(reader).lines(),
            wait,
            client_info: None,
            notifications: Vec::new(),
        }
    }

    /// The `clientInfo` the handshake declares (`{"name": "tests", …}` otherwise).
    pub fn with_client_info(mut self, info: Value) -> Self {
        self.client_info = Some(info);
        self
    }

    /// Writes one message as one line.
    pub async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("a JSON value serialises");
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    /// Writes `bytes` exactly as given, in one write (several lines at once, a broken line).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let writer = self.writer.as_mut().expect("the input is open");
        writer.write_all(bytes).await.expect("writing to the server");
        writer.flush().await.expect("flushing to the server");
    }

    /// The next message, or `None` if none arrives within `within`.
    pub async fn recv_within(&mut self, within: Duration) -> Option<Value> {
        match tokio::time::timeout(within, self.lines.next_line()).await {
            Err(_) => None,
            Ok(Ok(Some(line))) => {
                Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
            }
            Ok(Ok(None)) => panic!("the server closed its output"),
            Ok(Err(e)) => panic!("reading from the server: {e}"),
        }
    }

    /// The next message; fails the test if none arrives in time.
    pub async fn recv(&mut self) -> Value {
        self.recv_within(self.wait).await.expect("the server did not answer in time")
    }

    /// The next message that is not a notification; notifications are kept.
    pub async fn next_non_notification(&mut self) -> Value {
        Exchange::next_response(self).await
    }

    /// Sends a request and returns its response ([`Exchange::call`]).
    pub async fn call(&mut self, id: impl Into<Value>, method: &str, params: Value) -> Value {
        Exchange::call(self, id, method, params).await
    }

    /// The legacy handshake at `version`, declaring `capabilities` ([`Exchange::initialize`]).
    pub async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        Exchange::initialize(self, version, capabilities).await
    }

    /// Takes the notifications received so far with `method`.
    pub fn take_notifications(&mut self, method: &str) -> Vec<Value> {
        let (taken, kept) = std::mem::take(&mut self.notifications).into_iter().partition(|n| n["method"] == method);
        self.notifications = kept;
        taken
    }

    /// Closes the server's input: it sees end of input.
    pub fn close_input(&mut self) {
        drop(self.writer.take());
    }

    /// Asserts the server's output ends (within `wait`) without another line.
    pub async fn expect_end(&mut self) {
        let next = tokio::time::timeout(self.wait, self.lines.next_line()).await.expect("the output ended in time");
        if let Some(line) = next.expect("reading from the server") {
            panic!("expected the end, got {line}");
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Exchange for LinePeer<R, W> {
    async fn write_message(&mut self, message: Value) {
        self.send(message).await;
    }

    async fn read_message(&mut self) -> Value {
        self.recv().await
    }

    fn set_aside(&mut self, notification: Value) {
        self.notifications.push(notification);
    }

    fn client_info(&self) -> Value {
        self.client_info.clone().unwrap_or_else(|| serde_json::json!({"name": "tests", "version": "0.0.0"}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[tokio::test]
    async fn a_call_sets_notifications_aside_and_returns_its_response() {
        let (client_out, server_in) = tokio::io::duplex(4096);
        let (mut server_out, client_in) = tokio::io::duplex(4096);
        let mut peer = LinePeer::new(client_in, client_out, Duration::from_secs(5));
        let server = tokio::spawn(async move {
            let mut lines = BufReader::new(server_in).lines();
            let request: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            assert_eq!(request["method"], "ping");
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}});
            let response = json!({"jsonrpc": "2.0", "id": request["id"], "result": {}});
            server_out.write_all(format!("{note}\n{response}\n").as_bytes()).await.unwrap();
        });
        let response = peer.call(7, "ping", json!({})).await;
        assert_eq!(response, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
        assert_eq!(peer.take_notifications("notifications/message").len(), 1);
        assert!(peer.notifications.is_empty());
        server.await.unwrap();
        peer.expect_end().await;
    }
}

//! A scripted 2025-11-25 server: raw JSON-RPC frames over an in-memory pair, written and
//! read by the test itself, for what our own server does not do (ask the client for
//! tasks, push task statuses at chosen moments).

use std::collections::HashMap;
use std::sync::Arc;

use arbor_client::{Client, ClientOptions, EraCache, EraMode, ServerTarget, Transport};
use arbor_transport::{FrameReader, FrameWriter};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// The server's end of the pair.
pub struct Script {
    reader: FrameReader,
    writer: FrameWriter,
    /// Responses read while waiting for another one, by id.
    responses: HashMap<i64, Value>,
    /// Notifications from the client, in arrival order.
    pub notes: Vec<Value>,
    /// Requests from the client not answered by the script itself.
    pub requests: Vec<Value>,
}

impl Script {
    /// The next frame from the client.
    pub async fn recv(&mut self) -> Value {
        loop {
            match self.reader.recv().await.expect("reads") {
                Some(Ok(bytes)) => return serde_json::from_slice(&bytes).expect("a JSON frame"),
                Some(Err(_)) => continue,
                None => panic!("the client closed the pipe"),
            }
        }
    }

    /// The next request from the client; notifications read meanwhile go to `notes`.
    pub async fn next_request(&mut self) -> Value {
        loop {
            let frame = self.recv().await;
            if frame.get("id").is_none() {
                self.notes.push(frame);
                continue;
            }
            return frame;
        }
    }

    /// Sends a frame to the client.
    pub fn send(&self, frame: Value) {
        self.writer.send(&serde_json::to_vec(&frame).unwrap()).expect("sends");
    }

    /// Sends raw bytes as one frame (a hostile server's garbage).
    pub fn send_raw(&self, frame: &[u8]) {
        self.writer.send(frame).expect("sends");
    }

    /// Sends request `id` to the client, without waiting.
    pub fn ask(&self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// The client's response to request `id`; notifications and requests read meanwhile
    /// are kept in `notes` and `requests`, other responses for their own `response`.
    pub async fn response(&mut self, id: i64) -> Value {
        loop {
            if let Some(found) = self.responses.remove(&id) {
                return found;
            }
            let frame = self.recv().await;
            self.keep(frame);
        }
    }

    /// Files a frame that is not the one being waited for.
    pub fn keep(&mut self, frame: Value) {
        match (frame.get("method"), frame.get("id").and_then(Value::as_i64)) {
            (Some(_), Some(_)) => self.requests.push(frame),
            (Some(_), None) => self.notes.push(frame),
            (None, Some(id)) => {
                self.responses.insert(id, frame);
            }
            (None, None) => panic!("an unexpected frame: {frame}"),
        }
    }

    /// `ask` then `response`.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.ask(id, method, params);
        self.response(id).await
    }
}

/// Connects a client (2025-11-25, by `initialize`) to a script; returns the client, the
/// script and the `initialize` params the client sent.
pub async fn connect(options: ClientOptions) -> (Client, Script, Value) {
    connect_framed(options, None).await
}

/// [`connect`] with the client's frames capped at `max_frame` bytes (its transport's
/// default when `None`).
pub async fn connect_framed(options: ClientOptions, max_frame: Option<usize>) -> (Client, Script, Value) {
    connect_as(options, json!({"tools": {}}), max_frame).await
}

/// [`connect`] to a script that declares `capabilities` in its `initialize` result.
pub async fn connect_with(options: ClientOptions, capabilities: Value) -> (Client, Script, Value) {
    connect_as(options, capabilities, None).await
}

/// The one connect the others call: `capabilities` declared, frames capped at `max_frame`.
async fn connect_as(options: ClientOptions, capabilities: Value, max_frame: Option<usize>) -> (Client, Script, Value) {
    let (server_side, client_side) = Transport::memory_pair();
    let client_side = match max_frame {
        Some(max) => client_side.with_max_frame_bytes(max),
        None => client_side,
    };
    let slot = Arc::new(Mutex::new(Some(client_side)));
    let target = ServerTarget::transport_factory(None, move || {
        let transport = slot.lock().take();
        async move { transport.ok_or_else(|| std::io::Error::other("the script serves one connection")) }
    });
    let (reader, writer) = server_side.into_parts();
    let mut script = Script { reader, writer, responses: HashMap::new(), notes: Vec::new(), requests: Vec::new() };
    let options = options.era(EraMode::ForceLegacy).era_cache(EraCache::new());
    let connecting = tokio::spawn(Client::connect(target, options));
    let init = script.recv().await;
    assert_eq!(init["method"], "initialize", "{init}");
    script.send(json!({"jsonrpc": "2.0", "id": init["id"], "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "serverInfo": {"name": "script", "version": "1"}
    }}));
    let client = connecting.await.unwrap().expect("connects");
    (client, script, init["params"].clone())
}

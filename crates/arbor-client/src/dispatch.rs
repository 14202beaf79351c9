//! What the client does with each message the server sends: responses complete their
//! pending request; progress reaches the call's callback; legacy server requests go to
//! the handler runtime with the call they belong to; listen-stream notifications go to
//! their stream; every other notification goes to the handler and to subscribers.
//!
//! It runs on the reader task (or an HTTP response task) and never awaits: handlers run
//! in their own supervised tasks (`HandlerRuntime`). Invariant: a malformed message is
//! logged and counted, never a panic and never the end of the connection.

use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::{decode_raw, ErrorObject, RawMessage, RequestId};
use arbor_protocol::meta;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::utilities::ProgressNotificationParams;
use serde::Deserialize as _;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::handler::CallLink;
use crate::link::Origin;
use crate::shared::{Reply, ServerNotice, Shared};

fn numeric(id: &RequestId) -> Option<i64> {
    match id {
        RequestId::Number(n) => n.as_i64(),
        RequestId::String(_) => None,
    }
}

impl Shared {
    /// Handles one frame from the server.
    pub(crate) fn inbound(self: &Arc<Self>, bytes: &[u8], origin: Origin) {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
        if first == Some(b'[') {
            // A 2025-03-26 batch: each element on its own.
            match serde_json::from_slice::<Vec<&RawValue>>(bytes) {
                Ok(items) => items.into_iter().for_each(|raw| self.inbound(raw.get().as_bytes(), origin)),
                Err(e) => self.count_malformed("batch", &e),
            }
            return;
        }
        let message = match decode_raw(bytes) {
            Ok(m) => m,
            Err(e) => return self.count_malformed("message", &e),
        };
        match message {
            RawMessage::Response { id, result } => match numeric(&id) {
                Some(n) => {
                    if !self.complete(n, Reply::Result(result.to_owned())) {
                        tracing::debug!(target: "arbor_client", "late or unknown response {id} dropped");
                    }
                }
                None => self.count_malformed("response", &format_args!("unknown id {id}")),
            },
            RawMessage::Error(e) => {
                let id = e.id.as_ref().and_then(numeric).or(match origin {
                    Origin::Post(n) => Some(n),
                    _ => None,
                });
                match id {
                    Some(n) => {
                        let _ = self.complete(n, Reply::Error(McpError::from(e.error)));
                    }
                    None => self.count_malformed("error response", &format_args!("no id: {}", e.error.message)),
                }
            }
            RawMessage::Request { id, method, params } => {
                let params = match params.map(|p| serde_json::from_str::<Value>(p.get())).transpose() {
                    Ok(p) => p,
                    Err(e) => return self.count_malformed("request", &e),
                };
                self.server_request(id, &method, params, origin);
            }
            RawMessage::Notification { method, params } => {
                let params = match params.map(|p| serde_json::from_str::<Value>(p.get())).transpose() {
                    Ok(p) => p,
                    Err(e) => return self.count_malformed("notification", &e),
                };
                self.notification(method, params);
            }
        }
    }

    fn server_request(self: &Arc<Self>, id: RequestId, method: &str, params: Option<Value>, origin: Origin) {
        let call = match origin {
            Origin::Post(n) => self.call_of(n),
            Origin::Stream => self.single_call(),
            Origin::Standalone => None,
        };
        let link = self.link();
        let shared = self.clone();
        let respond = Box::new(move |frame: Vec<u8>| {
            if let Some(link) = &link {
                link.notify_detached(&shared, frame);
            }
        });
        match &self.runtime {
            Some(rt) => rt.serve_request(id, method, params, call.map(|c| c as Arc<dyn CallLink>), respond),
            None => {
                // No handler: nothing was declared, so only `ping` is answered.
                let frame = if MethodName::parse(method) == Some(MethodName::Ping) {
                    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    let err = ErrorObject::from(&McpError::method_not_found(method));
                    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": err})
                };
                respond(serde_json::to_vec(&frame).unwrap_or_default());
            }
        }
    }

    fn notification(self: &Arc<Self>, method: String, params: Option<Value>) {
        match MethodName::parse(&method) {
            Some(MethodName::Progress) => {
                let parsed = params.as_ref().map(ProgressNotificationParams::deserialize);
                match parsed {
                    Some(Ok(p)) => {
                        if let Some(call) = numeric(&p.progress_token).and_then(|n| self.call_of(n)) {
                            call.progressed();
                            if let Some(f) = &call.on_progress {
                                f(crate::options::Progress::new(&p));
                                return;
                            }
                        }
                        // Nobody asked for it through `CallOptions::on_progress` (or the
                        // call is over): it is shown like any other notification.
                    }
                    Some(Err(e)) => return self.count_malformed("progress notification", &e),
                    None => return self.count_malformed("progress notification", &"no params"),
                }
            }
            Some(MethodName::Cancelled) => {
                let target = params.as_ref().and_then(|p| p.get("requestId")).and_then(RequestId::from_value);
                if let Some(target) = &target {
                    // The server ends a listen stream (modern stdio) or cancels one of its
                    // own requests (legacy).
                    if let Some(n) = numeric(target) {
                        if self.listens.lock().remove(&n).is_some() {
                            crate::call::abandon(self, n, false, "ended by the server");
                            return;
                        }
                    }
                    if let Some(rt) = &self.runtime {
                        rt.cancel(target);
                        return;
                    }
                }
                // Without a handler runtime there is no request of the server's to stop:
                // it is shown like any other notification.
            }
            _ => {}
        }
        let subscription = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
            .and_then(RequestId::from_value);
        let notice = ServerNotice { method, params };
        if let Some(n) = subscription.as_ref().and_then(numeric) {
            if let Some(tx) = self.listens.lock().get(&n) {
                let _ = tx.send(notice);
                return;
            }
        }
        if MethodName::parse(&notice.method) == Some(MethodName::ResourceUpdated) {
            if let Some(uri) = notice.params.as_ref().and_then(|p| p.get("uri")).and_then(Value::as_str) {
                if let Some(subs) = self.resource_subs.lock().get(uri) {
                    for (_, tx) in subs {
                        let _ = tx.send(notice.clone());
                    }
                }
            }
        }
        // The runtime hands back what may be shown to others: logs sanitised, or nothing
        // when the log rate limit dropped the entry.
        let shown = match &self.runtime {
            Some(rt) => match rt.notify(&notice.method, notice.params.clone()) {
                Some(map) => ServerNotice { method: notice.method, params: Some(Value::Object(map)) },
                None => return,
            },
            None => notice,
        };
        let _ = self.notices.send(shown);
    }
}

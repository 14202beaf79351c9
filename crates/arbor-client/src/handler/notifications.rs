//! Server notifications and log entries: handed to the handler by one worker task, one at
//! a time in arrival order, outside the connection.
//!
//! `notify` never waits: a `notifications/message` entry over the log rate is dropped (and
//! counted in `dropped_logs`), the others are sanitised (`safety/logs.rs`) and handed back
//! so the connection can give its own subscribers the same safe text; anything arriving
//! while the queue holds `notification_queue` entries is dropped for the handler (and
//! counted in `dropped_notifications`). A callback that panics is logged and skipped. The
//! worker is owned by the runtime and aborted with it.
//!
//! Invariant: callbacks run strictly one after another, in the order `notify` accepted
//! them; at most `notification_queue` wait.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use arbor_protocol::model::logging::LoggingLevel;
use futures::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::context::NotificationContext;
use super::dispatch::Shared;
use super::inputs::panic_message;
use super::safety::logs;
use super::HandlerRuntime;

const LOG_METHOD: &str = arbor_protocol::methods::MethodName::LoggingMessage.as_str();

/// One waiting notification.
pub(crate) enum Queued {
    Notification { method: String, params: Map<String, Value> },
    Log { level: LoggingLevel, params: Map<String, Value> },
}

/// Starts the worker; returns its queue and its task.
pub(crate) fn start(shared: Arc<Shared>) -> (mpsc::Sender<Queued>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Queued>(shared.limits.notification_queue.max(1));
    let worker = tokio::spawn(async move {
        while let Some(queued) = rx.recv().await {
            let ctx = NotificationContext {
                client: shared.client.clone(),
                server_id: shared.server_id.clone(),
                era: *shared.era.read(),
            };
            let handler = &shared.handler;
            let (method, run) = match queued {
                Queued::Log { level, params } => {
                    (LOG_METHOD.to_owned(), async move { handler.handle_log(level, &params, &ctx).await }.boxed())
                }
                Queued::Notification { method, params } => {
                    let run = {
                        let method = method.clone();
                        async move { handler.handle_notification(&method, &params, &ctx).await }.boxed()
                    };
                    (method, run)
                }
            };
            if let Err(panic) = AssertUnwindSafe(run).catch_unwind().await {
                let message = panic_message(panic.as_ref());
                tracing::error!(server = %shared.server_id, %method, %message, "notification handler panicked; skipped");
            }
        }
    });
    (tx, worker)
}

impl HandlerRuntime {
    /// Queues a server notification for the handler (see the module docs); never waits.
    ///
    /// Returns the params as they may be shown to anyone else (the connection's own
    /// notification subscribers): a log entry sanitised, any other notification as it came
    /// (`{}` when it had none); `None` when the log rate dropped the entry.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Option<Map<String, Value>> {
        let shared = &self.inner.shared;
        let params = match params {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let (queued, shown) = if method == LOG_METHOD {
            let admitted = shared.log_bucket.lock().try_take(tokio::time::Instant::now());
            if !admitted {
                shared.dropped_logs.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            let (level, params) = logs::sanitize(&params);
            (Queued::Log { level, params: params.clone() }, params)
        } else {
            (Queued::Notification { method: method.to_owned(), params: params.clone() }, params)
        };
        if self.inner.queue.try_send(queued).is_err() {
            shared.dropped_notifications.fetch_add(1, Ordering::Relaxed);
        }
        Some(shown)
    }
}

//! Client notifications: cancel, initialized, and the rest for the handler.
//!
//! Client notifications the runtime consumes are handled here in the actor; all others go,
//! in arrival order, to a per-connection worker task that awaits the handler's
//! `on_notification`, so the actor never waits on user code. It is not where
//! request-scoped notifications (progress, logs) are written: the request's sink does that;
//! nor where `list_changed` is sent: an initialized legacy session gets a subscription
//! stream for it (`streams.rs`), the same machinery as a 2026-07-28 listen.
//!
//! Invariant: a cancel only ever reaches a request or listen stream of this connection.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arbor_protocol::methods::ClientNotification;
use arbor_protocol::version::ProtocolVersion;

use super::ConnState;
use crate::context::ConnectionInfo;

impl ConnState {
    pub(super) fn on_notification(&mut self, notification: ClientNotification) {
        match notification {
            ClientNotification::Cancelled(params) => {
                // Ids are looked up in this connection's table only; unknown or finished
                // ids are ignored, as the spec allows.
                let Some(id) = params.request_id else { return };
                if self.cancel_listen(&id) {
                    return;
                }
                self.ids.lock().cancel(&id);
            }
            ClientNotification::Initialized(_) => {
                if let Some(legacy) = self.legacy.as_mut() {
                    legacy.initialized = true;
                    self.open_list_stream();
                }
            }
            other => self.forward_notification(other),
        }
    }

    /// Hands a notification to the handler, in arrival order, on the notification worker:
    /// the handler the tenant runs when the worker takes it up.
    fn forward_notification(&mut self, notification: ClientNotification) {
        if self.notifications.is_none() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let handlers = self.handlers.clone();
            let info = self.notification_info();
            self.workers.push(tokio::spawn(async move {
                use futures::FutureExt;
                while let Some(n) = rx.recv().await {
                    let handler = handlers.load();
                    let call = AssertUnwindSafe(handler.handler.on_notification(n, (*info).clone()));
                    if call.catch_unwind().await.is_err() {
                        tracing::error!("notification handler panicked");
                    }
                }
            }));
            self.notifications = Some(tx);
        }
        if let Some(tx) = &self.notifications {
            let _ = tx.send(notification);
        }
    }

    fn notification_info(&self) -> Arc<ConnectionInfo> {
        match &self.legacy {
            Some(legacy) => legacy.info.clone(),
            None => Arc::new(ConnectionInfo {
                tenant: self.tenant.name().to_owned(),
                auth: self.auth.clone(),
                principal: self.principal.clone(),
                requester: self.own_requester(),
                client_info: None,
                client_capabilities: Default::default(),
                protocol_version: ProtocolVersion::newest(
                    self.shared.config.supported_versions.versions().iter().copied(),
                )
                .unwrap_or(ProtocolVersion::LATEST),
            }),
        }
    }
}

//! Notifications, both ways: what the client notifies (cancel, initialized, the rest for
//! the handler) and the `list_changed` notifications the server sends.
//!
//! Client notifications the runtime consumes are handled here in the actor; all others go,
//! in arrival order, to a per-connection worker task that awaits the handler's
//! `on_notification`, so the actor never waits on user code. It is not where
//! request-scoped notifications (progress, logs) are written: the request's sink does that.
//!
//! Invariant: a cancel only ever reaches a request of this connection, and a
//! `list_changed` notification only an initialized legacy session whose server advertised
//! `listChanged` for that list.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arbor_protocol::methods::{ClientNotification, PromptListChanged, ResourceListChanged, ToolListChanged};
use arbor_protocol::model::common::NotificationParams;
use arbor_protocol::version::{Era, ProtocolVersion};

use super::ConnState;
use crate::context::ConnectionInfo;
use crate::handler::ListKind;
use crate::request::sink::notify;

impl ConnState {
    pub(super) fn on_notification(&mut self, notification: ClientNotification) {
        match notification {
            ClientNotification::Cancelled(params) => {
                // Ids are looked up in this connection's table only; unknown or finished
                // ids are ignored, as the spec allows.
                if let Some(task) = params.request_id.and_then(|id| self.in_flight.remove(&id)) {
                    let _ = task.cancel();
                }
            }
            ClientNotification::Initialized(_) => {
                if let Some(legacy) = self.legacy.as_mut() {
                    legacy.initialized = true;
                }
            }
            other => self.forward_notification(other),
        }
    }

    /// Hands a notification to the handler, in arrival order, on the notification worker.
    fn forward_notification(&mut self, notification: ClientNotification) {
        if self.notifications.is_none() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let handler = self.shared.handler.clone();
            let info = self.notification_info();
            self.workers.push(tokio::spawn(async move {
                use futures::FutureExt;
                while let Some(n) = rx.recv().await {
                    let call = AssertUnwindSafe(handler.on_notification(n, (*info).clone()));
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
                client_info: None,
                client_capabilities: Default::default(),
                protocol_version: ProtocolVersion::newest(
                    self.shared.config.supported_versions.versions().iter().copied(),
                )
                .unwrap_or(ProtocolVersion::LATEST),
            }),
        }
    }

    /// Tells an initialized legacy session that a list changed, if the server advertised
    /// `listChanged` for it. Modern clients learn it on `subscriptions/listen` streams.
    pub(super) fn on_list_changed(&mut self, kind: ListKind) {
        let Some(legacy) = &self.legacy else { return };
        if !legacy.initialized || legacy.session.version().era() != Era::Legacy {
            return;
        }
        let caps = &self.shared.capabilities;
        let params = NotificationParams::default();
        match kind {
            ListKind::Tools if caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true) => {
                notify::<ToolListChanged>(&self.writer, &params)
            }
            ListKind::Prompts if caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true) => {
                notify::<PromptListChanged>(&self.writer, &params)
            }
            ListKind::Resources if caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true) => {
                notify::<ResourceListChanged>(&self.writer, &params)
            }
            _ => {}
        }
    }
}

//! The spec's "utilities" chapter: progress and cancellation notifications.
//!
//! This module does not track which requests are in flight or which tokens are
//! active; the runtime does. Invariant: progress numbers keep their exact JSON
//! form (`50` stays `50`, not `50.0`).

use crate::jsonrpc::RequestId;
use crate::meta::Meta;
use crate::model::common::ProgressToken;

wire_struct! {
    /// The params of `notifications/progress`.
    pub struct ProgressNotificationParams {
        /// Notification metadata.
        opt meta: Meta = "_meta",
        /// The token from the request's `_meta.progressToken`.
        req progress_token: ProgressToken = "progressToken",
        /// How far along; increases with each notification.
        req progress: serde_json::Number = "progress",
        /// The total, when known.
        opt total: serde_json::Number = "total",
        /// A human-readable status (2025-03-26 on).
        opt message: String = "message",
    }
}

wire_struct! {
    /// The params of `notifications/cancelled`.
    #[derive(Default)]
    pub struct CancelledNotificationParams {
        /// Notification metadata.
        opt meta: Meta = "_meta",
        /// The request to cancel (optional in 2025-11-25, required elsewhere).
        opt request_id: RequestId = "requestId",
        /// Why, for logs.
        opt reason: String = "reason",
    }
}

//! Change notifications: the 2026-07-28 `subscriptions/listen` stream and its
//! acknowledgement, and the list-changed / resource-updated notifications every
//! revision sends (the list-changed ones carry `common::NotificationParams`).
//!
//! This module does not hold subscription state (the runtime does). Invariant: a
//! filter member that is absent or `false` is not subscribed, so the default filter
//! subscribes to nothing.

use crate::meta::Meta;
use crate::model::common::ResultType;

wire_struct! {
    /// Which notifications a listen stream carries (`SubscriptionFilter`).
    #[derive(Default)]
    pub struct SubscriptionFilter {
        /// `notifications/tools/list_changed`.
        opt tools_list_changed: bool = "toolsListChanged",
        /// `notifications/prompts/list_changed`.
        opt prompts_list_changed: bool = "promptsListChanged",
        /// `notifications/resources/list_changed`.
        opt resources_list_changed: bool = "resourcesListChanged",
        /// `notifications/resources/updated` for these URIs.
        opt resource_subscriptions: Vec<String> = "resourceSubscriptions",
        /// `notifications/tasks` for these task ids (the tasks extension).
        opt task_ids: Vec<String> = "taskIds",
    }
}

wire_struct! {
    /// The params of `subscriptions/listen`.
    #[derive(Default)]
    pub struct SubscriptionsListenRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// What to listen for.
        req notifications: SubscriptionFilter = "notifications",
    }
}

wire_struct! {
    /// The result that closes a listen stream gracefully. Its `_meta` carries the
    /// subscription id.
    #[derive(Default)]
    pub struct SubscriptionsListenResult {
        /// Result metadata, with `io.modelcontextprotocol/subscriptionId`.
        opt meta: Meta = "_meta",
        /// `"complete"`.
        opt result_type: ResultType = "resultType",
    }
}

wire_struct! {
    /// The params of `notifications/subscriptions/acknowledged`: the subset of the
    /// filter the server honours.
    #[derive(Default)]
    pub struct SubscriptionsAcknowledgedNotificationParams {
        /// Notification metadata, with the subscription id.
        opt meta: Meta = "_meta",
        /// The honoured filter.
        req notifications: SubscriptionFilter = "notifications",
    }
}

wire_struct! {
    /// The params of `notifications/resources/updated`.
    #[derive(Default)]
    pub struct ResourceUpdatedNotificationParams {
        /// Notification metadata.
        opt meta: Meta = "_meta",
        /// The resource that changed.
        req uri: String = "uri",
    }
}

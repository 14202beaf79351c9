//! Constructors for completion, logging, progress, cancellation and the change
//! notifications and subscriptions (see the parent module).

use crate::jsonrpc::RequestId;
use crate::meta::Meta;
use crate::model::common::{ProgressToken, ResultType};
use crate::model::completion::{
    CompleteArgument, CompleteContext, CompleteRequestParams, CompleteResult, Completion, PromptReference, Reference,
    ResourceTemplateReference,
};
use crate::model::logging::{LoggingLevel, LoggingMessageNotificationParams, SetLevelRequestParams};
use crate::model::subscriptions::{
    ResourceUpdatedNotificationParams, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use crate::model::utilities::{CancelledNotificationParams, ProgressNotificationParams};
use serde_json::Value;
use std::collections::BTreeMap;

// ===== completion =====

impl PromptReference {
    /// The prompt called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptReference { name: name.into(), title: None, extra: Default::default() }
    }
}

setters!(PromptReference {
    /// A display name (2025-06-18 on).
    with_title => title: String,
});

impl ResourceTemplateReference {
    /// The resource template whose URI template is `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceTemplateReference { uri: uri.into(), extra: Default::default() }
    }
}

impl Reference {
    /// A reference to the prompt called `name`.
    pub fn prompt(name: impl Into<String>) -> Self {
        Reference::Prompt(PromptReference::new(name))
    }

    /// A reference to the resource template whose URI template is `uri`.
    pub fn resource_template(uri: impl Into<String>) -> Self {
        Reference::ResourceTemplate(ResourceTemplateReference::new(uri))
    }
}

impl CompleteArgument {
    /// The argument `name`, of which the user typed `value` so far.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        CompleteArgument { name: name.into(), value: value.into(), extra: Default::default() }
    }
}

impl CompleteContext {
    /// Adds the value of an argument already filled in.
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments.get_or_insert_with(Default::default).insert(name.into(), value.into());
        self
    }
}

setters!(CompleteContext {
    /// All the values of the arguments already filled in.
    with_arguments => arguments: BTreeMap<String, String>,
});

impl CompleteRequestParams {
    /// Complete `argument` of what `reference` names.
    pub fn new(reference: impl Into<Reference>, argument: CompleteArgument) -> Self {
        CompleteRequestParams {
            meta: None,
            reference: reference.into(),
            argument,
            context: None,
            extra: Default::default(),
        }
    }
}

setters!(CompleteRequestParams {
    /// Arguments already filled in (2025-06-18 on).
    with_context => context: CompleteContext,
    /// Request metadata.
    with_meta => meta: Meta,
});

impl Completion {
    /// These values (at most 100), without a total.
    pub fn new(values: Vec<String>) -> Self {
        Completion { values, ..Default::default() }
    }
}

setters!(Completion {
    /// Whether more values exist than were sent.
    with_has_more => has_more: bool,
});

exact_setters!(Completion {
    /// How many values exist in all.
    with_total => total: u64,
});

impl CompleteResult {
    /// The result carrying `completion`.
    pub fn new(completion: Completion) -> Self {
        CompleteResult { completion, ..Default::default() }
    }
}

setters!(CompleteResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

// ===== logging =====

impl SetLevelRequestParams {
    /// Send log messages of `level` and above.
    pub fn new(level: LoggingLevel) -> Self {
        SetLevelRequestParams { meta: None, level, extra: Default::default() }
    }
}

setters!(SetLevelRequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

impl LoggingMessageNotificationParams {
    /// A log message of `level` carrying `data` (any JSON value).
    pub fn new(level: LoggingLevel, data: Value) -> Self {
        LoggingMessageNotificationParams { meta: None, level, logger: None, data, extra: Default::default() }
    }
}

setters!(LoggingMessageNotificationParams {
    /// The logger's name.
    with_logger => logger: String,
    /// Notification metadata.
    with_meta => meta: Meta,
});

// ===== progress and cancellation =====

impl ProgressNotificationParams {
    /// The request that gave `progress_token` is `progress` along.
    pub fn new(progress_token: impl Into<ProgressToken>, progress: impl Into<serde_json::Number>) -> Self {
        ProgressNotificationParams {
            meta: None,
            progress_token: progress_token.into(),
            progress: progress.into(),
            total: None,
            message: None,
            extra: Default::default(),
        }
    }
}

setters!(ProgressNotificationParams {
    /// The total, when known.
    with_total => total: serde_json::Number,
    /// A human-readable status (2025-03-26 on).
    with_message => message: String,
    /// Notification metadata.
    with_meta => meta: Meta,
});

impl CancelledNotificationParams {
    /// Cancel the request `request_id`.
    pub fn new(request_id: impl Into<RequestId>) -> Self {
        CancelledNotificationParams { request_id: Some(request_id.into()), ..Default::default() }
    }
}

setters!(CancelledNotificationParams {
    /// Why, for logs.
    with_reason => reason: String,
    /// Notification metadata.
    with_meta => meta: Meta,
});

// ===== subscriptions =====

setters!(SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    with_tools_list_changed => tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    with_prompts_list_changed => prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    with_resources_list_changed => resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    with_resource_subscriptions => resource_subscriptions: Vec<String>,
    /// `notifications/tasks` for these task ids (the tasks extension).
    with_task_ids => task_ids: Vec<String>,
});

impl SubscriptionsListenRequestParams {
    /// Listen for what `notifications` names.
    pub fn new(notifications: SubscriptionFilter) -> Self {
        SubscriptionsListenRequestParams { notifications, ..Default::default() }
    }
}

setters!(SubscriptionsListenRequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

setters!(SubscriptionsListenResult {
    /// Result metadata, with the subscription id.
    with_meta => meta: Meta,
    /// `"complete"`.
    with_result_type => result_type: ResultType,
});

impl SubscriptionsAcknowledgedNotificationParams {
    /// The server honours `notifications`.
    pub fn new(notifications: SubscriptionFilter) -> Self {
        SubscriptionsAcknowledgedNotificationParams { notifications, ..Default::default() }
    }
}

setters!(SubscriptionsAcknowledgedNotificationParams {
    /// Notification metadata, with the subscription id.
    with_meta => meta: Meta,
});

setters!(ResourceUpdatedNotificationParams {
    /// Notification metadata.
    with_meta => meta: Meta,
});

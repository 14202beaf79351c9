//! [`Notification`]: a server notification read into its type, what
//! [`Client::notifications`](crate::Client::notifications) yields.
//!
//! It is a reading of a [`ServerNotice`] (the method and params as received), never a
//! filter: a method this client does not know, or params that do not fit the method's
//! type, give [`Notification::Other`] with the notice kept whole, so nothing a server
//! sends is lost. Invariant: the method strings come from `MethodName` alone.

use arbor_protocol::methods::MethodName;
use arbor_protocol::model::elicitation::ElicitationCompleteNotificationParams;
use arbor_protocol::model::logging::LoggingMessageNotificationParams;
use arbor_protocol::model::subscriptions::ResourceUpdatedNotificationParams;
use arbor_protocol::model::tasks::TaskStatusNotificationParams;
use arbor_protocol::model::utilities::{CancelledNotificationParams, ProgressNotificationParams};
use serde::de::DeserializeOwned;

use crate::shared::ServerNotice;

/// Which list changed, for [`Notification::ListChanged`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListKind {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/prompts/list_changed`.
    Prompts,
    /// `notifications/resources/list_changed`.
    Resources,
}

/// A server notification, typed. The client consumes some notifications itself before
/// anything reaches [`Client::notifications`](crate::Client::notifications): progress for
/// a call made with [`CallOptions::on_progress`](crate::CallOptions::on_progress) goes to
/// that callback, and `notifications/cancelled` ends the listen stream or the server
/// request (answered by the client's handler) it names. The rest arrive here: progress
/// for a token the caller put in `_meta` itself or for a call already over, and a
/// `cancelled` when the client has no handler runtime.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Notification {
    /// `notifications/progress`.
    Progress(ProgressNotificationParams),
    /// `notifications/message`: a log entry (sanitised by the client's handler runtime).
    LoggingMessage(LoggingMessageNotificationParams),
    /// `notifications/resources/updated`.
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// `notifications/{tools,prompts,resources}/list_changed`.
    ListChanged(ListKind),
    /// `notifications/cancelled`.
    Cancelled(CancelledNotificationParams),
    /// `notifications/tasks` (the tasks extension).
    TaskStatus(TaskStatusNotificationParams),
    /// `notifications/tasks/status` (2025-11-25).
    ExperimentalTaskStatus(TaskStatusNotificationParams),
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete(ElicitationCompleteNotificationParams),
    /// Any other method, or params that do not fit the method's type: as received.
    Other(ServerNotice),
}

impl Notification {
    /// The notification's method, as sent.
    pub fn method(&self) -> &str {
        let name = match self {
            Notification::Progress(_) => MethodName::Progress,
            Notification::LoggingMessage(_) => MethodName::LoggingMessage,
            Notification::ResourceUpdated(_) => MethodName::ResourceUpdated,
            Notification::ListChanged(ListKind::Tools) => MethodName::ToolListChanged,
            Notification::ListChanged(ListKind::Prompts) => MethodName::PromptListChanged,
            Notification::ListChanged(ListKind::Resources) => MethodName::ResourceListChanged,
            Notification::Cancelled(_) => MethodName::Cancelled,
            Notification::TaskStatus(_) => MethodName::TaskStatus,
            Notification::ExperimentalTaskStatus(_) => MethodName::ExperimentalTaskStatus,
            Notification::ElicitationComplete(_) => MethodName::ElicitationComplete,
            Notification::Other(notice) => return &notice.method,
        };
        name.as_str()
    }
}

impl From<ServerNotice> for Notification {
    fn from(notice: ServerNotice) -> Notification {
        let Some(method) = MethodName::parse(&notice.method) else { return Notification::Other(notice) };
        let typed = match method {
            MethodName::Progress => params(&notice).map(Notification::Progress),
            MethodName::LoggingMessage => params(&notice).map(Notification::LoggingMessage),
            MethodName::ResourceUpdated => params(&notice).map(Notification::ResourceUpdated),
            MethodName::ToolListChanged => Some(Notification::ListChanged(ListKind::Tools)),
            MethodName::PromptListChanged => Some(Notification::ListChanged(ListKind::Prompts)),
            MethodName::ResourceListChanged => Some(Notification::ListChanged(ListKind::Resources)),
            MethodName::Cancelled => params(&notice).map(Notification::Cancelled),
            MethodName::TaskStatus => params(&notice).map(Notification::TaskStatus),
            MethodName::ExperimentalTaskStatus => params(&notice).map(Notification::ExperimentalTaskStatus),
            MethodName::ElicitationComplete => params(&notice).map(Notification::ElicitationComplete),
            _ => None,
        };
        typed.unwrap_or(Notification::Other(notice))
    }
}

/// The notice's params as `T`; absent params read as `{}` (every member optional).
fn params<T: DeserializeOwned>(notice: &ServerNotice) -> Option<T> {
    match &notice.params {
        Some(p) => T::deserialize(p).ok(),
        None => serde_json::from_value(serde_json::Value::Object(Default::default())).ok(),
    }
}

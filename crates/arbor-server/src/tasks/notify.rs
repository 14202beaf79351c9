//! `notifications/tasks` on `subscriptions/listen` streams: a listen naming `taskIds` hears
//! every status change of those tasks, each notification a full `DetailedTask`.
//!
//! The store publishes each change of a record on its bus topic (`mcp/tasks/<taskId>`,
//! coalesced by task, so a slow stream hears the latest state); [`TaskStreams`], a
//! subscription handler run on every stream after the built-in one, honours the ids the
//! listen's requester may see and joins their topics. It does not poll the store and sends
//! nothing for tasks the stream did not name.
//!
//! Invariant: a stream is only ever told about tasks of the tenant and requester that
//! opened it, and a listen naming `taskIds` without declaring the extension is refused
//! -32021 (when the server offers tasks at all).

use std::sync::Arc;

use arbor_bus::BusMessage;
use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use arbor_protocol::model::tasks::TaskStatusNotificationParams;

use super::local::Tasks;
use super::run::{declares_extension, missing_extension};
use super::store::TaskOwner;
use crate::subscription::{Channel, Flow, Subscribe, SubscriptionHandler};

const TOPIC: &str = "mcp/tasks/";

/// The bus topic a task's changes are published on.
pub(crate) fn topic(task_id: &str) -> String {
    format!("{TOPIC}{task_id}")
}

/// Honours `taskIds` on listens.
pub(crate) struct TaskStreams {
    pub(crate) tasks: Arc<Tasks>,
}

impl SubscriptionHandler for TaskStreams {
    type State = ();

    async fn subscribe(&self, filter: &SubscriptionFilter, channel: &Channel) -> Subscribe<()> {
        let asked = filter.task_ids.as_deref().unwrap_or_default();
        if asked.is_empty() {
            return Subscribe::Accept(());
        }
        let connection = channel.connection();
        if self.tasks.offered && !declares_extension(&connection.client_capabilities) {
            return Subscribe::Reject(missing_extension());
        }
        let owner = TaskOwner::of(connection);
        let mut honoured = Vec::new();
        if self.tasks.offered {
            for id in asked {
                if self.tasks.find(&owner, id).await.is_ok() {
                    honoured.push(id.clone());
                }
            }
        }
        let options = channel.shared.options;
        for id in &honoured {
            let _ = channel.join(&topic(id), options);
        }
        let mut narrowed = filter.clone();
        narrowed.task_ids = (!honoured.is_empty()).then_some(honoured);
        Subscribe::Narrow(narrowed, ())
    }

    async fn handle_message(&self, message: Arc<BusMessage>, channel: &Channel, _: &mut ()) -> Flow {
        if message.topic.starts_with(TOPIC) {
            if let Ok(params) = serde_json::from_value::<TaskStatusNotificationParams>(message.payload.clone()) {
                let _ = channel.send(ServerNotification::TaskStatus(params));
            }
        }
        Flow::Stream
    }
}

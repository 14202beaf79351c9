//! The runtime's own subscription handler: `list_changed` and `resources/updated` without
//! user code.
//!
//! It runs last on every stream, after the user's handlers have narrowed the filter. It
//! leaves out what the server does not advertise (a list without `listChanged`, resource
//! URIs without `resources.subscribe`, task ids), asks the server handler's
//! `ServerHandler::subscribe` about each URI of a 2026-07-28 listen (the same check a
//! legacy `resources/subscribe` gets; a refused URI is left out, not an error), and joins
//! one bus topic per honoured list and URI (`topics.rs`). Every message on those topics
//! becomes the matching notification; a gap becomes one too, since the client may have
//! missed a change.
//!
//! Invariant: it never sends a type the stream's honoured filter lacks (the channel
//! enforces it as well).

use std::sync::Arc;

use arbor_bus::BusMessage;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::Meta;
use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::model::common::NotificationParams;
use arbor_protocol::model::resources::ResourceSubscriptionParams;
use arbor_protocol::model::subscriptions::{ResourceUpdatedNotificationParams, SubscriptionFilter};

use super::{topics, Channel, Flow, Subscribe, SubscriptionHandler};
use crate::context::{ContextParts, RequestContext};
use crate::dyn_handler::DynServerHandler;
use crate::handler::ListKind;

/// The built-in handler of a server.
pub(crate) struct BuiltIn {
    pub(crate) capabilities: ServerCapabilities,
    pub(crate) handler: Arc<dyn DynServerHandler>,
}

impl BuiltIn {
    fn list_changed(&self, kind: ListKind) -> bool {
        let caps = &self.capabilities;
        match kind {
            ListKind::Tools => caps.tools.as_ref().and_then(|t| t.list_changed),
            ListKind::Prompts => caps.prompts.as_ref().and_then(|p| p.list_changed),
            ListKind::Resources => caps.resources.as_ref().and_then(|r| r.list_changed),
        }
        .unwrap_or(false)
    }

    fn resource_updates(&self) -> bool {
        self.capabilities.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false)
    }

    /// The URIs the server handler agrees to, for a modern listen.
    async fn agreed(&self, uris: &[String], channel: &Channel) -> Vec<String> {
        let Some(id) = channel.subscription_id() else {
            // Legacy: the `resources/subscribe` request already asked.
            return uris.to_vec();
        };
        let mut agreed = Vec::with_capacity(uris.len());
        for uri in uris {
            let params = ResourceSubscriptionParams::new(uri.clone());
            if self.handler.subscribe(params, context(id, channel)).await.is_ok() {
                agreed.push(uri.clone());
            }
        }
        agreed
    }
}

/// A context for asking the server handler about a listen's URI: no progress, no logs.
fn context(id: &RequestId, channel: &Channel) -> RequestContext {
    RequestContext::from_parts(ContextParts {
        id: id.clone(),
        meta: Meta::new(),
        connection: channel.shared.connection.clone(),
        progress_token: None,
        log_level: None,
        deadline: None,
        signal: Default::default(),
        input_responses: None,
        input_state: None,
        sink: None,
    })
}

impl SubscriptionHandler for BuiltIn {
    type State = ();

    async fn subscribe(&self, filter: &SubscriptionFilter, channel: &Channel) -> Subscribe<()> {
        let flag = |asked: Option<bool>, kind| (asked == Some(true) && self.list_changed(kind)).then_some(true);
        let uris = match (&filter.resource_subscriptions, self.resource_updates()) {
            (Some(uris), true) => Some(self.agreed(uris, channel).await).filter(|u| !u.is_empty()),
            _ => None,
        };
        let mut honoured = SubscriptionFilter::default();
        honoured.tools_list_changed = flag(filter.tools_list_changed, ListKind::Tools);
        honoured.prompts_list_changed = flag(filter.prompts_list_changed, ListKind::Prompts);
        honoured.resources_list_changed = flag(filter.resources_list_changed, ListKind::Resources);
        honoured.resource_subscriptions = uris;
        // Task ids are the tasks extension's to honour (`crate::tasks::TaskStreams`, next).
        honoured.task_ids = filter.task_ids.clone();
        let options = channel.shared.options;
        let lists = [
            (honoured.tools_list_changed, ListKind::Tools),
            (honoured.prompts_list_changed, ListKind::Prompts),
            (honoured.resources_list_changed, ListKind::Resources),
        ];
        for (on, kind) in lists {
            if on == Some(true) {
                let _ = channel.join(topics::list_changed(kind), options);
            }
        }
        for uri in honoured.resource_subscriptions.iter().flatten() {
            let _ = channel.join(&topics::resource_updated(uri), options);
        }
        Subscribe::Narrow(honoured, ())
    }

    async fn handle_message(&self, message: Arc<BusMessage>, channel: &Channel, _: &mut ()) -> Flow {
        announce(&message.topic, channel);
        Flow::Stream
    }

    async fn handle_gap(&self, topic: &str, channel: &Channel, _: &mut ()) -> Flow {
        // Whatever was lost on this topic was a change of this list or resource.
        announce(topic, channel);
        Flow::Stream
    }
}

/// Sends the notification a built-in topic stands for.
fn announce(topic: &str, channel: &Channel) {
    let notification = if let Some(kind) = topics::list_kind(topic) {
        let params = NotificationParams::default();
        match kind {
            ListKind::Tools => ServerNotification::ToolListChanged(params),
            ListKind::Prompts => ServerNotification::PromptListChanged(params),
            ListKind::Resources => ServerNotification::ResourceListChanged(params),
        }
    } else if let Some(uri) = topics::updated_uri(topic) {
        ServerNotification::ResourceUpdated(ResourceUpdatedNotificationParams::new(uri))
    } else {
        return;
    };
    if let Err(err) = channel.send(notification) {
        tracing::debug!(%err, topic, "built-in subscription notification not sent");
    }
}

//! The runtime's own subscription handler: `list_changed` and `resources/updated` without
//! user code.
//!
//! It runs last on every stream, after the user's handlers have narrowed the filter. It
//! leaves out what the server does not advertise (a list without `listChanged`, resource
//! URIs without `resources.subscribe`, task ids), asks the `ServerHandler::subscribe` of
//! the handler the stream's tenant runs now (`crate::tenant::routers`) about each URI of
//! a 2026-07-28 listen (the same check a legacy `resources/subscribe` gets; a refused URI
//! is left out, not an error), and joins one bus topic per honoured list and URI
//! (`topics.rs`), plus, when it honours any list, its tenant's `list_changed` topic, so
//! a tenant's handler swap or router change reaches that tenant's streams only. Every message on those topics
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
use crate::handler::ListKind;
use crate::tenant::routers::TenantHandlers;

/// The built-in handler of a server.
pub(crate) struct BuiltIn {
    pub(crate) capabilities: ServerCapabilities,
    /// Each tenant's handler, asked about the URIs of a listen.
    pub(crate) handlers: Arc<TenantHandlers>,
}

/// The lists a stream honours, for the messages of its tenant's topic (which carries
/// every list): tools, prompts, resources.
pub(crate) struct Lists([bool; 3]);

impl Lists {
    fn has(&self, kind: ListKind) -> bool {
        self.0[kind as usize]
    }
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
        // Looked up once per listen: every URI is asked of the same handler.
        let handler = self.handlers.current(&channel.connection().tenant).handler.clone();
        for uri in uris {
            let params = ResourceSubscriptionParams::new(uri.clone());
            if handler.subscribe(params, context(id, channel)).await.is_ok() {
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
    type State = Lists;

    async fn subscribe(&self, filter: &SubscriptionFilter, channel: &Channel) -> Subscribe<Lists> {
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
        let mut honours = Lists([false; 3]);
        for (on, kind) in lists {
            if on == Some(true) {
                honours.0[kind as usize] = true;
                let _ = channel.join(topics::list_changed(kind), options);
            }
        }
        if honours.0.contains(&true) {
            let _ = channel.join(&topics::tenant_list_changed(&channel.connection().tenant), options);
        }
        for uri in honoured.resource_subscriptions.iter().flatten() {
            let _ = channel.join(&topics::resource_updated(uri), options);
        }
        Subscribe::Narrow(honoured, honours)
    }

    async fn handle_message(&self, message: Arc<BusMessage>, channel: &Channel, lists: &mut Lists) -> Flow {
        if topics::is_tenant_list_changed(&message.topic) {
            // The tenant's topic carries every list; the stream may follow fewer.
            match topics::tenant_list_kind(&message) {
                Some(kind) if lists.has(kind) => send(list_changed(kind), channel, &message.topic),
                _ => {}
            }
            return Flow::Stream;
        }
        announce(&message.topic, channel);
        Flow::Stream
    }

    async fn handle_gap(&self, topic: &str, channel: &Channel, lists: &mut Lists) -> Flow {
        if topics::is_tenant_list_changed(topic) {
            // Any list the stream follows may be the one whose change was lost.
            for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
                if lists.has(kind) {
                    send(list_changed(kind), channel, topic);
                }
            }
            return Flow::Stream;
        }
        // Whatever was lost on this topic was a change of this list or resource.
        announce(topic, channel);
        Flow::Stream
    }
}

fn list_changed(kind: ListKind) -> ServerNotification {
    let params = NotificationParams::default();
    match kind {
        ListKind::Tools => ServerNotification::ToolListChanged(params),
        ListKind::Prompts => ServerNotification::PromptListChanged(params),
        ListKind::Resources => ServerNotification::ResourceListChanged(params),
    }
}

fn send(notification: ServerNotification, channel: &Channel, topic: &str) {
    if let Err(err) = channel.send(notification) {
        tracing::debug!(%err, topic, "built-in subscription notification not sent");
    }
}

/// Sends the notification a global built-in topic stands for.
fn announce(topic: &str, channel: &Channel) {
    let notification = if let Some(kind) = topics::list_kind(topic) {
        list_changed(kind)
    } else if let Some(uri) = topics::updated_uri(topic) {
        ServerNotification::ResourceUpdated(ResourceUpdatedNotificationParams::new(uri))
    } else {
        return;
    };
    send(notification, channel, topic);
}

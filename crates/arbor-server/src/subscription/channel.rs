//! The [`Channel`]: what a subscription handler sees of its stream.
//!
//! It sends notifications (stamped with `_meta["io.modelcontextprotocol/subscriptionId"]`,
//! the listen request's id with its JSON type), joins bus topics on the stream's behalf,
//! and shows the connection's read-only metadata for authorization. It is not a general
//! output: request-scoped notifications (progress, logs), cancellations and the
//! acknowledgement are refused, and so is any type the stream's honoured filter does not
//! cover (the spec's "MUST NOT send types the client did not request" is enforced here,
//! not left to each handler).
//!
//! Invariant: nothing leaves a stream before its acknowledgement (sends made while the
//! stream opens are held and flushed right after it) and nothing after it closed.

use std::sync::Arc;

use arbor_bus::{Bus, Overflow, QueueProbe, SubscribeOptions, Subscription};
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::SUBSCRIPTION_ID;
use arbor_protocol::method::NotificationFrame;
use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use parking_lot::Mutex;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::connection::output::{Kind, Output};
use crate::context::ConnectionInfo;

/// Why [`Channel::send`] or [`Channel::join`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The stream has ended; nothing more can be sent or joined.
    #[error("the subscription stream is closed")]
    Closed,
    /// The notification type never travels on a subscription stream (progress, logs,
    /// cancellation, the acknowledgement, legacy-only notifications).
    #[error("{0} is never sent on a subscription stream")]
    NotOnStream(&'static str),
    /// The client did not ask for this type (or this URI) on this stream.
    #[error("the stream's filter does not include this {0}")]
    NotInFilter(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Handlers are deciding; sends are held until the acknowledgement.
    Opening,
    Open,
    Closed,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    held: Vec<Vec<u8>>,
    /// What the stream carries: the request while opening, the honoured filter after.
    filter: SubscriptionFilter,
    /// Topics joined since the stream's task last looked, with the joining handler.
    joins: Vec<(usize, Subscription)>,
    /// Every topic joined, read by tree views for the stream's queue depth (the stream's
    /// task owns the subscriptions themselves).
    probes: Vec<QueueProbe>,
}

/// One stream's shared state: the handlers' channels and the stream's task hold it.
#[derive(Debug)]
pub(crate) struct StreamShared {
    /// The listen request's id; `None` for the streams that serve legacy sessions,
    /// whose notifications carry no subscription id.
    pub(crate) id: Option<RequestId>,
    pub(crate) connection: Arc<ConnectionInfo>,
    /// Where the stream writes: the connection's byte stream, the listen's route on an
    /// endpoint, or the endpoint's standalone route for legacy streams.
    pub(crate) output: Output,
    /// Whether the stream ends (as if told to close) when its output's reader goes away:
    /// a 2026-07-28 HTTP listen, whose closed response stream is its cancellation.
    pub(crate) close_with_output: bool,
    pub(crate) bus: Arc<dyn Bus>,
    /// The queue options of the runtime's own joins.
    pub(crate) options: SubscribeOptions,
    // A panicking handler cannot leave this state half-written: every critical section
    // is a push or a swap.
    state: Mutex<State>,
}

impl StreamShared {
    pub(crate) fn new(
        id: Option<RequestId>,
        connection: Arc<ConnectionInfo>,
        output: Output,
        close_with_output: bool,
        bus: Arc<dyn Bus>,
        options: SubscribeOptions,
        filter: SubscriptionFilter,
    ) -> Arc<StreamShared> {
        Arc::new(StreamShared {
            id,
            connection,
            output,
            close_with_output,
            bus,
            options,
            state: Mutex::new(State {
                phase: Phase::Opening,
                held: Vec::new(),
                filter,
                joins: Vec::new(),
                probes: Vec::new(),
            }),
        })
    }

    /// The filter handlers see from now on.
    pub(crate) fn set_filter(&self, filter: SubscriptionFilter) {
        self.state.lock().filter = filter;
    }

    pub(crate) fn filter(&self) -> SubscriptionFilter {
        self.state.lock().filter.clone()
    }

    /// Opens the stream: `first` (the acknowledgement, if any) goes out, then what the
    /// handlers sent while it was opening, in one go so nothing can slip in between.
    pub(crate) fn open(&self, first: Option<Vec<u8>>) {
        let mut state = self.state.lock();
        if state.phase != Phase::Opening {
            return;
        }
        state.phase = Phase::Open;
        let held = std::mem::take(&mut state.held);
        for frame in first.into_iter().chain(held) {
            let _ = self.output.send_vec(Kind::Notification, frame);
        }
    }

    /// Closes the stream: later sends and joins are refused. Returns whether it was open
    /// or opening.
    pub(crate) fn close(&self) -> bool {
        let mut state = self.state.lock();
        let was = state.phase != Phase::Closed;
        state.phase = Phase::Closed;
        state.held.clear();
        was
    }

    /// Bus messages queued for this stream now, across the topics it joined.
    pub(crate) fn queue_depth(&self) -> usize {
        self.state.lock().probes.iter().map(QueueProbe::queued).sum()
    }

    /// The topics joined since the last call.
    pub(crate) fn take_joins(&self) -> Vec<(usize, Subscription)> {
        let mut state = self.state.lock();
        if state.joins.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut state.joins)
        }
    }

    /// Stamps `params` with the subscription id (modern streams) and encodes the frame.
    pub(crate) fn encode(&self, method: &str, mut params: Value) -> Vec<u8> {
        if let Some(id) = &self.id {
            if !params.is_object() {
                params = Value::Object(Map::new());
            }
            let object = params.as_object_mut().expect("made an object above");
            let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            meta.as_object_mut().expect("made an object above").insert(SUBSCRIPTION_ID.to_owned(), id.to_value());
        }
        serde_json::to_vec(&NotificationFrame { method, params: &params }).expect("a JSON value serialises")
    }
}

/// A handler's view of its stream. Cheap to clone; clones are the same stream.
#[derive(Clone, Debug)]
pub struct Channel {
    pub(crate) shared: Arc<StreamShared>,
    /// Which handler of the stream this channel belongs to: topics it joins are delivered
    /// to that handler.
    pub(crate) owner: usize,
}

impl Channel {
    /// The listen request's id, which every notification of the stream carries as
    /// `_meta["io.modelcontextprotocol/subscriptionId"]`; `None` on the streams that serve
    /// a legacy session (`resources/subscribe`, `list_changed`).
    pub fn subscription_id(&self) -> Option<&RequestId> {
        self.shared.id.as_ref()
    }

    /// The connection: tenant, authenticated identity, client info and capabilities.
    /// Read-only; use it to authorize in [`SubscriptionHandler::subscribe`](super::SubscriptionHandler::subscribe).
    pub fn connection(&self) -> &ConnectionInfo {
        &self.shared.connection
    }

    /// What the stream carries: while handlers decide, the filter as narrowed so far;
    /// afterwards, the honoured filter the acknowledgement reported.
    pub fn filter(&self) -> SubscriptionFilter {
        self.shared.filter()
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.state.lock().phase == Phase::Closed
    }

    /// Sends one notification on this stream, stamped with its subscription id.
    ///
    /// Refused when the stream is closed, for types that never travel on a stream
    /// (progress, logs, cancellation, the acknowledgement), and for types or URIs outside
    /// the stream's filter.
    pub fn send(&self, notification: ServerNotification) -> Result<(), ChannelError> {
        let method = notification.method().as_str();
        let mut state = self.shared.state.lock();
        if state.phase == Phase::Closed {
            return Err(ChannelError::Closed);
        }
        check(&notification, &state.filter)?;
        if let ServerNotification::ResourceUpdated(p) = &notification {
            if p.meta.is_none() && p.extra.is_empty() {
                // The fan-out's hot path (one per stream per update): the same bytes as
                // `encode`, serialised straight into the output without a `Value`.
                let params = StampedUpdated { uri: &p.uri, id: self.shared.id.as_ref() };
                let frame = NotificationFrame { method, params: &params };
                if state.phase == Phase::Opening {
                    state.held.push(serde_json::to_vec(&frame).expect("a string and an id serialise"));
                } else {
                    self.shared
                        .output
                        .send_with(Kind::Notification, |buf| {
                            serde_json::to_writer(buf, &frame).expect("a string and an id serialise")
                        })
                        .map_err(|_| ChannelError::Closed)?;
                }
                return Ok(());
            }
        }
        let params = serde_json::to_value(&notification).expect("a model type serialises");
        let frame = self.shared.encode(method, params);
        match state.phase {
            Phase::Opening => state.held.push(frame),
            _ => {
                self.shared.output.send_vec(Kind::Notification, frame).map_err(|_| ChannelError::Closed)?;
            }
        }
        Ok(())
    }

    /// Subscribes this stream to bus `topic` with its own bounded queue and overflow
    /// policy; its messages reach this handler's `handle_message`. The runtime holds the
    /// bus subscription and drops it when the stream ends, however it ends.
    ///
    /// On a legacy session's stream (no subscription id) [`Overflow::EndStream`] is
    /// applied as [`Overflow::DropOldest`]: such a stream has no message that could tell
    /// its client it ended (the session stays subscribed as far as the client knows), so a
    /// full queue is reported as a gap (`handle_gap`) and the stream goes on.
    pub fn join(&self, topic: &str, mut options: SubscribeOptions) -> Result<(), ChannelError> {
        let mut state = self.shared.state.lock();
        if state.phase == Phase::Closed {
            return Err(ChannelError::Closed);
        }
        if self.shared.id.is_none() && options.overflow == Overflow::EndStream {
            options.overflow = Overflow::DropOldest;
        }
        let subscription = self.shared.bus.subscribe(topic, options);
        state.probes.push(subscription.probe());
        state.joins.push((self.owner, subscription));
        Ok(())
    }
}

/// The params of a `notifications/resources/updated` without `_meta` of its own, stamped
/// with the stream's subscription id: what [`StreamShared::encode`] makes of them (`uri`,
/// then `_meta` holding only the id with its JSON type), without building a `Value`.
struct StampedUpdated<'a> {
    uri: &'a str,
    id: Option<&'a RequestId>,
}

impl Serialize for StampedUpdated<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Stamp<'a>(&'a RequestId);
        impl Serialize for Stamp<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(SUBSCRIPTION_ID, self.0)?;
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(1 + usize::from(self.id.is_some())))?;
        map.serialize_entry("uri", self.uri)?;
        if let Some(id) = self.id {
            map.serialize_entry("_meta", &Stamp(id))?;
        }
        map.end()
    }
}

/// Whether `notification` may travel on a stream carrying `filter`.
fn check(notification: &ServerNotification, filter: &SubscriptionFilter) -> Result<(), ChannelError> {
    let wanted =
        |flag: Option<bool>, what| if flag == Some(true) { Ok(()) } else { Err(ChannelError::NotInFilter(what)) };
    match notification {
        ServerNotification::ToolListChanged(_) => wanted(filter.tools_list_changed, "tools list_changed"),
        ServerNotification::PromptListChanged(_) => wanted(filter.prompts_list_changed, "prompts list_changed"),
        ServerNotification::ResourceListChanged(_) => wanted(filter.resources_list_changed, "resources list_changed"),
        ServerNotification::ResourceUpdated(p) => {
            let listed = filter.resource_subscriptions.as_ref().is_some_and(|uris| uris.contains(&p.uri));
            if listed {
                Ok(())
            } else {
                Err(ChannelError::NotInFilter("resource URI"))
            }
        }
        ServerNotification::TaskStatus(_) => {
            if filter.task_ids.as_ref().is_some_and(|ids| !ids.is_empty()) {
                Ok(())
            } else {
                Err(ChannelError::NotInFilter("task"))
            }
        }
        other => Err(ChannelError::NotOnStream(other.method().as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_bus::LocalBus;
    use arbor_protocol::model::subscriptions::ResourceUpdatedNotificationParams;
    use arbor_protocol::version::ProtocolVersion;

    /// The direct encoding of a `resources/updated` is byte for byte what the general
    /// path (`to_value`, then `StreamShared::encode`) makes, for number, string and no ids.
    #[tokio::test]
    async fn a_stamped_update_encodes_like_the_general_path() {
        let (transport, _peer) = arbor_transport::Transport::memory_pair();
        let (_reader, writer) = transport.into_parts();
        let connection = Arc::new(ConnectionInfo {
            tenant: "t".into(),
            auth: None,
            principal: None,
            requester: Default::default(),
            client_info: None,
            client_capabilities: Default::default(),
            protocol_version: ProtocolVersion::LATEST,
        });
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        let ids = [Some(RequestId::from(7)), Some(RequestId::String("a\"b".into())), None];
        for id in ids {
            let shared = StreamShared::new(
                id.clone(),
                connection.clone(),
                Output::Frames(writer.clone()),
                false,
                bus.clone(),
                SubscribeOptions::coalesce(),
                Default::default(),
            );
            let uri = "demo://feed/\u{e9}\"x".to_owned();
            let params = ResourceUpdatedNotificationParams::new(uri.clone());
            let notification = ServerNotification::ResourceUpdated(params);
            let method = notification.method().as_str();
            let general = shared.encode(method, serde_json::to_value(&notification).unwrap());
            let stamped = StampedUpdated { uri: &uri, id: id.as_ref() };
            let direct = serde_json::to_vec(&NotificationFrame { method, params: &stamped }).unwrap();
            assert_eq!(String::from_utf8(direct).unwrap(), String::from_utf8(general).unwrap());
        }
    }
}

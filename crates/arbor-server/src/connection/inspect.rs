//! A connection describing itself for a tree view (`crate::observe`): its in-flight
//! requests (with the version of the tenant's handler each runs) and subscription
//! streams, which live in the actor's state and in no supervisor snapshot.
//!
//! The actor answers a `ConnMsg::Inspect` from its tables without awaiting anything, so a
//! view costs each connection one message; the view waits at most
//! [`INSPECT_TIMEOUT`](crate::observe::INSPECT_TIMEOUT) for it and shows a connection that
//! did not answer as `unresponsive`. What it is not: a consistent cut across connections.
//!
//! Invariant: nothing here changes the connection's state, and nothing secret is shown:
//! the requester is its principal's key or its peer address, never a token.

use std::ops::Deref;

use arbor_otp::{ChildInfo, TaskRef};
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::methods::MethodName;
use ractor::ActorRef;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{inbound, ConnMsg, ConnState};
use crate::observe::{ViewKind, ViewNode, INSPECT_TIMEOUT};
use crate::requester::Requester;
use crate::subscription::unit::UnitRef;

/// The most connections one tenant's view lists, and the most requests or streams one
/// connection's: a view of a busy server stays a page, not a dump (the counts are whole).
pub(crate) const MAX_LISTED: usize = 100;

/// One in-flight request in the connection's tables: its task, and what a view shows.
#[derive(Clone, Debug)]
pub(crate) struct InFlight {
    pub(crate) task: TaskRef,
    pub(crate) method: MethodName,
    pub(crate) since: Instant,
    /// The version of the tenant's handler it runs on.
    pub(crate) version: u64,
}

impl Deref for InFlight {
    type Target = TaskRef;

    fn deref(&self) -> &TaskRef {
        &self.task
    }
}

/// Asks every connection of a tenant for its view, all at once, each bounded.
pub(crate) async fn connections(children: Vec<ChildInfo>) -> Vec<ViewNode> {
    let asks = children.into_iter().take(MAX_LISTED).map(|child| async move {
        let Some(cell) = child.actor else { return ViewNode::new(child.id, ViewKind::Connection, "not_running") };
        let actor = ActorRef::<ConnMsg>::from(cell);
        let (reply, answer) = oneshot::channel();
        if actor.cast(ConnMsg::Inspect { reply }).is_err() {
            return ViewNode::new(child.id, ViewKind::Connection, "stopped");
        }
        match tokio::time::timeout(INSPECT_TIMEOUT, answer).await {
            Ok(Ok(view)) => view,
            Ok(Err(_)) => ViewNode::new(child.id, ViewKind::Connection, "stopped"),
            Err(_) => ViewNode::new(child.id, ViewKind::Connection, "unresponsive"),
        }
    });
    futures::future::join_all(asks).await
}

fn requester_name(requester: &Requester) -> String {
    match requester {
        Requester::Principal(key) => key.to_string(),
        Requester::Peer(ip) => ip.to_string(),
        Requester::Unknown => "unknown".into(),
    }
}

fn stream_node(kind: &str, detail: String, unit: &UnitRef, now: Instant) -> ViewNode {
    let mut node = ViewNode::new(kind, ViewKind::Stream, if unit.is_finished() { "ended" } else { "open" });
    node.age_ms = Some(now.duration_since(unit.since).as_millis() as u64);
    node.queue_depth = Some(unit.shared.queue_depth());
    node.detail = Some(detail);
    node
}

pub(super) fn request_node(id: Option<&RequestId>, request: &InFlight, now: Instant) -> ViewNode {
    let mut node = ViewNode::new(request.method.as_str(), ViewKind::Request, "running");
    node.age_ms = Some(now.duration_since(request.since).as_millis() as u64);
    node.handler_version = Some(request.version);
    node.detail = Some(match id {
        Some(id) => format!("id {}", id.to_value()),
        None => "scoped to its exchange".into(),
    });
    node
}

impl ConnState {
    /// This connection as a view node: its requests and streams as children.
    pub(super) fn inspect(&self) -> ViewNode {
        let now = Instant::now();
        let mut node = ViewNode::new("connection", ViewKind::Connection, "running");
        node.age_ms = Some(now.duration_since(self.started).as_millis() as u64);
        let kind = match (&self.legacy, &self.endpoint) {
            (Some(legacy), Some(_)) => format!("{} session", legacy.session.version().as_str()),
            (Some(legacy), None) => format!("{} stream", legacy.session.version().as_str()),
            (None, Some(_)) => "2026-07-28 endpoint".into(),
            (None, None) => "byte stream".into(),
        };
        let requester = self.own.as_ref().map_or_else(|| "many".into(), requester_name);
        let mut requests: Vec<ViewNode> = Vec::new();
        requests.extend(self.ids.lock().views(now));
        if let Some(desk) = self.endpoint.as_ref().and_then(|e| e.desk.get()) {
            requests.extend(desk.views(now));
        }
        let mut streams: Vec<ViewNode> = Vec::new();
        for (id, unit) in self.listens.iter().filter(|(_, u)| !u.is_finished()) {
            streams.push(stream_node("listen", format!("id {}", id.to_value()), unit, now));
        }
        for unit in self.scoped_listens.iter().filter(|u| !u.is_finished()) {
            streams.push(stream_node("listen", "scoped to its exchange".into(), unit, now));
        }
        for (uri, unit) in self.resource_streams.iter().filter(|(_, u)| !u.is_finished()) {
            let uri = arbor_protocol::reflect::Clamped(uri).to_string();
            streams.push(stream_node("resources/subscribe", uri, unit, now));
        }
        if let Some(unit) = self.list_stream.as_ref().filter(|u| !u.is_finished()) {
            streams.push(stream_node("list_changed", "the session's list changes".into(), unit, now));
        }
        let (in_flight, open) = (requests.len(), streams.len());
        let plural = if open == 1 { "" } else { "s" };
        node.detail = Some(format!("{kind}, requester {requester}, {in_flight} in flight, {open} stream{plural}"));
        node.queue_depth = Some(streams.iter().filter_map(|s| s.queue_depth).sum());
        node.inbox = self.inbox.as_ref().map(|credits| inbound::MAX_BURSTS - credits.available_permits());
        requests.truncate(MAX_LISTED);
        streams.truncate(MAX_LISTED);
        node.children = requests.into_iter().chain(streams).collect();
        node
    }
}

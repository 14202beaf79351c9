//! Notification streams: a 2026-07-28 `subscriptions/listen` ([`Subscription`]) and a
//! legacy `resources/subscribe` ([`ResourceSubscription`]), both async `Stream`s.
//!
//! A listen is a request that stays open: the client waits for its acknowledgement, then
//! the stream yields every notification tagged with its `subscriptionId` until the server
//! ends it (its result, or `notifications/cancelled` on stdio) or the link goes down.
//! Dropping the stream ends the subscription: `notifications/cancelled` on stdio, closing
//! the response stream on HTTP, `resources/unsubscribe` for the last legacy subscriber of
//! a URI. Invariant: a dropped stream leaves no listener and no pending entry behind.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::method::RequestFrame;
use arbor_protocol::methods::{self, MethodName};
use arbor_protocol::model::resources::ResourceSubscriptionParams;
use arbor_protocol::model::subscriptions::{SubscriptionFilter, SubscriptionsListenRequestParams};
use arbor_protocol::version::Era;
use futures::Stream;
use tokio::sync::{mpsc, oneshot};

use crate::call::{abandon, shape_params};
use crate::client::Client;
use crate::error::{ClientError, ProtocolError};
use crate::shared::{Pending, PendingKind, Reply, ServerNotice, Shared};

/// A 2026-07-28 listen stream. Yields the notifications of this subscription (the
/// acknowledgement is consumed by [`Client::listen`]).
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::UnboundedReceiver<ServerNotice>,
    honoured: SubscriptionFilter,
    id: i64,
    shared: Arc<Shared>,
}

impl Subscription {
    /// What the server agreed to send (its acknowledgement): a subset of the request.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.honoured
    }

    /// The subscription id (the listen request's id).
    pub fn id(&self) -> RequestId {
        RequestId::from(self.id)
    }
}

impl Stream for Subscription {
    type Item = ServerNotice;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerNotice>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.shared.listens.lock().remove(&self.id);
        abandon(&self.shared, self.id, true, "the subscription was dropped");
    }
}

/// A legacy `resources/subscribe`: yields each `notifications/resources/updated` for its URI.
#[derive(Debug)]
pub struct ResourceSubscription {
    rx: mpsc::UnboundedReceiver<ServerNotice>,
    uri: String,
    key: u64,
    shared: Arc<Shared>,
    client: Client,
}

impl ResourceSubscription {
    /// The subscribed URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

impl Stream for ResourceSubscription {
    type Item = ServerNotice;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerNotice>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for ResourceSubscription {
    fn drop(&mut self) {
        let last = {
            let mut subs = self.shared.resource_subs.lock();
            match subs.get_mut(&self.uri) {
                Some(list) => {
                    list.retain(|(k, _)| *k != self.key);
                    if list.is_empty() {
                        subs.remove(&self.uri);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            }
        };
        if last && self.client.is_connected() {
            let (client, uri) = (self.client.clone(), self.uri.clone());
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let params = ResourceSubscriptionParams::new(uri);
                    let _ = client.request::<methods::Unsubscribe>(params).await;
                });
            }
        }
    }
}

impl Client {
    /// Opens a `subscriptions/listen` stream (2026-07-28) and waits for its
    /// acknowledgement (within the client's call timeout).
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        self.listen_declaring(filter, false).await
    }

    /// [`Client::listen`], the request declaring the tasks extension when `tasks` (a
    /// listen naming `taskIds` must).
    pub(crate) async fn listen_declaring(
        &self,
        filter: SubscriptionFilter,
        tasks: bool,
    ) -> Result<Subscription, ClientError> {
        let shared = self.shared_arc();
        if shared.era() != Some(Era::Modern) {
            return Err(ClientError::Unsupported { method: MethodName::SubscriptionsListen.as_str(), era: "legacy" });
        }
        let link = shared.link().ok_or(ClientError::Disconnected)?;
        let id = shared.next_id();
        let (ntx, nrx) = mpsc::unbounded_channel();
        shared.listens.lock().insert(id, ntx);
        let (tx, mut rx) = oneshot::channel();
        shared.pending.lock().insert(id, Pending { tx, call: None, kind: PendingKind::Other, abort: None });
        // From here on, dropping `sub` cleans up.
        let mut sub = Subscription { rx: nrx, honoured: SubscriptionFilter::default(), id, shared: shared.clone() };
        let params = SubscriptionsListenRequestParams::new(filter);
        let mut params = serde_json::to_value(params).map_err(ClientError::Encode)?;
        if tasks {
            crate::tasks::declare_extension(self, &mut params);
        }
        shape_params(&shared, true, &mut params, None, None);
        let rid = RequestId::from(id);
        let frame = serde_json::to_vec(&RequestFrame {
            id: &rid,
            method: MethodName::SubscriptionsListen.as_str(),
            params: &params,
        })
        .map_err(ClientError::Encode)?;
        link.send_request(&shared, id, MethodName::SubscriptionsListen, &params, true, frame, false)?;
        let timeout = shared.options.timeout;
        let first = tokio::time::timeout(timeout, async {
            tokio::select! {
                n = sub.rx.recv() => Ok(n),
                r = &mut rx => Err(r),
            }
        })
        .await
        .map_err(|_| ClientError::Timeout(timeout))?;
        match first {
            Ok(Some(n)) if n.method == MethodName::SubscriptionsAcknowledged.as_str() => {
                let honoured = n.params.as_ref().and_then(|p| p.get("notifications")).cloned();
                sub.honoured = honoured.and_then(|h| serde_json::from_value(h).ok()).unwrap_or_default();
            }
            Ok(Some(n)) => {
                return Err(ClientError::Protocol(ProtocolError::BeforeAcknowledgement { method: n.method }))
            }
            Ok(None) => return Err(ClientError::Disconnected),
            Err(Ok(Reply::Error(e))) => return Err(ClientError::Rpc(e)),
            Err(Ok(Reply::Result(_))) => return Err(ClientError::Protocol(ProtocolError::EndedBeforeAcknowledgement)),
            Err(Ok(Reply::Failed(_))) | Err(Err(_)) => return Err(ClientError::Disconnected),
        }
        // The final result (or a failure) ends the stream.
        let watcher = shared.clone();
        tokio::spawn(async move {
            let _ = rx.await;
            watcher.listens.lock().remove(&id);
        });
        Ok(sub)
    }

    /// `resources/subscribe` (legacy): a stream of `notifications/resources/updated` for
    /// `uri`. Several subscriptions to one URI share the server's subscription.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<ResourceSubscription, ClientError> {
        let shared = self.shared_arc();
        let key = shared.next_sub.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let first = {
            let mut subs = shared.resource_subs.lock();
            let list = subs.entry(uri.to_owned()).or_default();
            list.push((key, tx));
            list.len() == 1
        };
        let sub = ResourceSubscription { rx, uri: uri.to_owned(), key, shared, client: self.clone() };
        if first {
            let params = ResourceSubscriptionParams::new(uri);
            self.request::<methods::Subscribe>(params).await?;
        }
        Ok(sub)
    }
}

//! [`Client::watch_resource`]: one resource's updates as a `Stream`, whichever era the
//! server speaks.
//!
//! Over 2026-07-28 it is a `subscriptions/listen` for the one URI; over the legacy era a
//! `resources/subscribe` whose `notifications/resources/updated` are read. It is not a
//! new mechanism: it holds a [`Subscription`] or a [`ResourceSubscription`], so ending it
//! (dropping it) does what dropping those does: the listen is cancelled, or the URI
//! unsubscribed once its last legacy subscriber is gone. Invariant: it yields only
//! `notifications/resources/updated` whose `uri` is exactly the watched URI.

use std::pin::Pin;
use std::task::{Context, Poll};

use arbor_protocol::methods::MethodName;
use arbor_protocol::model::subscriptions::{ResourceUpdatedNotificationParams, SubscriptionFilter};
use arbor_protocol::version::Era;
use futures::Stream;

use crate::client::Client;
use crate::error::ClientError;
use crate::shared::ServerNotice;
use crate::subscription::{ResourceSubscription, Subscription};

/// The updates of one resource ([`Client::watch_resource`]). Ends when the server ends
/// the subscription or the connection goes down; dropping it unsubscribes.
#[derive(Debug)]
pub struct ResourceWatch {
    uri: String,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Listen(Subscription),
    Subscribe(ResourceSubscription),
}

impl ResourceWatch {
    /// The watched URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Whether this watch is a 2026-07-28 listen (else a legacy `resources/subscribe`).
    pub fn is_listen(&self) -> bool {
        matches!(self.inner, Inner::Listen(_))
    }

    /// The update `notice` carries, if it is one for this URI.
    fn update(&self, notice: ServerNotice) -> Option<ResourceUpdatedNotificationParams> {
        if MethodName::parse(&notice.method) != Some(MethodName::ResourceUpdated) {
            return None;
        }
        let update: ResourceUpdatedNotificationParams = serde_json::from_value(notice.params?).ok()?;
        (update.uri == self.uri).then_some(update)
    }
}

impl Stream for ResourceWatch {
    type Item = ResourceUpdatedNotificationParams;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let next = match &mut self.inner {
                Inner::Listen(s) => Pin::new(s).poll_next(cx),
                Inner::Subscribe(s) => Pin::new(s).poll_next(cx),
            };
            match next {
                Poll::Ready(Some(notice)) => {
                    if let Some(update) = self.update(notice) {
                        return Poll::Ready(Some(update));
                    }
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Client {
    /// Watches one resource: a stream of its `notifications/resources/updated`, over a
    /// `subscriptions/listen` when the server speaks 2026-07-28 and over
    /// `resources/subscribe` otherwise. Returns once the server accepted the
    /// subscription; dropping the stream ends it (the listen cancelled, or the URI
    /// unsubscribed when no other watch or [`ResourceSubscription`] of it is left).
    ///
    /// A 2026-07-28 server that leaves the URI out of its acknowledgement is
    /// [`ClientError::SubscriptionRefused`].
    ///
    /// ```no_run
    /// # async fn f(client: arbor_client::Client) -> Result<(), arbor_client::ClientError> {
    /// use futures::StreamExt;
    /// let mut updates = client.watch_resource("file:///notes.txt").await?;
    /// while let Some(update) = updates.next().await {
    ///     let now = client.read_resource(&update.uri).await?;
    ///     println!("{} changed: {} part(s)", update.uri, now.contents.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn watch_resource(&self, uri: &str) -> Result<ResourceWatch, ClientError> {
        let inner = match self.era().ok_or(ClientError::Disconnected)? {
            Era::Modern => {
                let filter = SubscriptionFilter::default().with_resource_subscriptions(vec![uri.to_owned()]);
                let sub = self.listen(filter).await?;
                let honoured = sub.acknowledged().resource_subscriptions.as_deref().unwrap_or_default();
                if !honoured.iter().any(|u| u == uri) {
                    return Err(ClientError::SubscriptionRefused { uri: uri.to_owned() });
                }
                Inner::Listen(sub)
            }
            Era::Legacy => Inner::Subscribe(self.subscribe_resource(uri).await?),
        };
        Ok(ResourceWatch { uri: uri.to_owned(), inner })
    }
}

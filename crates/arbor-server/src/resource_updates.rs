//! [`ResourceUpdates`]: how a server handler announces that resources changed
//! (`notifications/resources/updated`), without holding the [`Server`](crate::Server).
//!
//! A handler keeps a [`ResourceUpdateSender`] and hands the runtime a fresh
//! [`ResourceUpdates`] from [`ServerHandler::resource_updates`](crate::ServerHandler::resource_updates);
//! the runtime publishes each URI it hears as [`Server::notify_resource_updated`](crate::Server::notify_resource_updated)
//! would, so it reaches the subscribers of that URI in both eras. The router's watched
//! skill folders announce their changed files this way. This module does not decide who
//! is told: the subscription streams do.
//!
//! Invariant: a receiver that falls more than [`ResourceUpdates::CAPACITY`] updates behind
//! loses the oldest ones, and says so in the log; it never blocks the sender.

use std::sync::Arc;

use tokio::sync::broadcast;

/// The sending half. Cheap to clone; the receivers end when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct ResourceUpdateSender {
    tx: broadcast::Sender<Arc<str>>,
}

impl ResourceUpdateSender {
    /// Announces that the resource `uri` changed. An update nobody listens to is dropped.
    pub fn send(&self, uri: &str) {
        let _ = self.tx.send(Arc::from(uri));
    }

    /// A receiver of the updates sent from now on.
    pub fn subscribe(&self) -> ResourceUpdates {
        ResourceUpdates { rx: self.tx.subscribe() }
    }
}

impl Default for ResourceUpdateSender {
    fn default() -> Self {
        ResourceUpdateSender { tx: broadcast::channel(ResourceUpdates::CAPACITY).0 }
    }
}

/// The receiving half: the URIs announced through a [`ResourceUpdateSender`], in order.
#[derive(Debug)]
pub struct ResourceUpdates {
    rx: broadcast::Receiver<Arc<str>>,
}

impl ResourceUpdates {
    /// How many unread updates a receiver may fall behind before it loses the oldest.
    pub const CAPACITY: usize = 256;

    /// The next updated URI, waiting for one; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<Arc<str>> {
        loop {
            match self.rx.recv().await {
                Ok(uri) => return Some(uri),
                Err(broadcast::error::RecvError::Lagged(lost)) => {
                    tracing::warn!(lost, "resource updates: a slow receiver lost the oldest updates");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_receiver_hears_each_update_in_order_then_the_end() {
        let tx = ResourceUpdateSender::default();
        let mut rx = tx.subscribe();
        tx.send("skill://a/SKILL.md");
        tx.send("skill://a/x.md");
        drop(tx);
        assert_eq!(rx.recv().await.as_deref(), Some("skill://a/SKILL.md"));
        assert_eq!(rx.recv().await.as_deref(), Some("skill://a/x.md"));
        assert_eq!(rx.recv().await, None);
    }
}

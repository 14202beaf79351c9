//! [`ListChanges`]: how a server handler announces that its tool, prompt or resource list
//! changed, without naming the channel the runtime reads it through.
//!
//! A handler keeps a [`ListChangeSender`] and hands the runtime a fresh [`ListChanges`]
//! from [`ServerHandler::list_changes`](crate::ServerHandler::list_changes); the runtime
//! turns what it hears into `notifications/*/list_changed`. The [`Router`](crate::Router)
//! announces its own changes this way. This module does not decide who is told: that is
//! the subscription streams' job.
//!
//! Invariant: a receiver never misses a change silently. One that falls more than
//! [`ListChanges::CAPACITY`] changes behind hears every [`ListKind`] once instead of the
//! changes it lost, since every list may have changed.

use std::collections::VecDeque;

use tokio::sync::broadcast;

use crate::handler::ListKind;

/// The sending half: announces list changes to every [`ListChanges`] subscribed to it.
/// Cheap to clone; the receivers end when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct ListChangeSender {
    tx: broadcast::Sender<ListKind>,
}

impl ListChangeSender {
    /// Announces that the `kind` list changed. A change nobody listens to is dropped:
    /// there is nobody to tell.
    pub fn send(&self, kind: ListKind) {
        let _ = self.tx.send(kind);
    }

    /// A receiver of the changes sent from now on.
    pub fn subscribe(&self) -> ListChanges {
        ListChanges { rx: self.tx.subscribe(), missed: VecDeque::new() }
    }

    /// Receivers alive now: the forwarders' leak check in tests.
    #[cfg(test)]
    pub(crate) fn receiver_count(&self) -> usize {
        self.tx.receiver_count()
    }
}

impl Default for ListChangeSender {
    fn default() -> Self {
        ListChanges::channel().0
    }
}

/// The receiving half: the changes announced through a [`ListChangeSender`], in order.
#[derive(Debug)]
pub struct ListChanges {
    rx: broadcast::Receiver<ListKind>,
    /// What a lagging receiver still owes its reader: every kind, once.
    missed: VecDeque<ListKind>,
}

impl ListChanges {
    /// How many unread changes a receiver may fall behind before it hears every kind
    /// instead of what it missed.
    pub const CAPACITY: usize = 64;

    /// A sender and one receiver. More receivers come from [`ListChangeSender::subscribe`].
    pub fn channel() -> (ListChangeSender, ListChanges) {
        let (tx, rx) = broadcast::channel(Self::CAPACITY);
        (ListChangeSender { tx }, ListChanges { rx, missed: VecDeque::new() })
    }

    /// The next change, waiting for one. `None` once every sender is gone and every
    /// change has been read.
    pub async fn recv(&mut self) -> Option<ListKind> {
        if let Some(kind) = self.missed.pop_front() {
            return Some(kind);
        }
        match self.rx.recv().await {
            Ok(kind) => Some(kind),
            Err(broadcast::error::RecvError::Lagged(_)) => {
                self.missed.extend([ListKind::Prompts, ListKind::Resources]);
                Some(ListKind::Tools)
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next change if one is waiting, without waiting (`None` otherwise, or once every
    /// sender is gone). Lags as [`recv`](ListChanges::recv) does.
    pub fn try_recv(&mut self) -> Option<ListKind> {
        if let Some(kind) = self.missed.pop_front() {
            return Some(kind);
        }
        match self.rx.try_recv() {
            Ok(kind) => Some(kind),
            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                self.missed.extend([ListKind::Prompts, ListKind::Resources]);
                Some(ListKind::Tools)
            }
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_receiver_hears_each_change_in_order_then_the_end() {
        let (tx, mut rx) = ListChanges::channel();
        tx.send(ListKind::Prompts);
        tx.send(ListKind::Tools);
        drop(tx);
        assert_eq!(rx.recv().await, Some(ListKind::Prompts));
        assert_eq!(rx.recv().await, Some(ListKind::Tools));
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_lagging_receiver_hears_every_kind_once_then_catches_up() {
        let (tx, mut rx) = ListChanges::channel();
        for _ in 0..=ListChanges::CAPACITY {
            tx.send(ListKind::Prompts);
        }
        let first: Vec<_> = [rx.recv().await, rx.recv().await, rx.recv().await].into_iter().flatten().collect();
        assert_eq!(first, [ListKind::Tools, ListKind::Prompts, ListKind::Resources]);
        // Then the changes still buffered, as sent.
        assert_eq!(rx.recv().await, Some(ListKind::Prompts));
    }

    #[test]
    fn a_receiver_subscribed_later_hears_only_later_changes() {
        let (tx, _first) = ListChanges::channel();
        tx.send(ListKind::Tools);
        let mut late = tx.subscribe();
        assert_eq!(late.try_recv(), None);
        tx.send(ListKind::Resources);
        assert_eq!(late.try_recv(), Some(ListKind::Resources));
    }
}

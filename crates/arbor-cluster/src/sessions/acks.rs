//! The relays a node waits on: each [`super::RedisSessionStore::relay_applied`] call opens
//! one entry, learns from `PUBLISH` how many subscribers heard the relay, and is done when
//! as many have said they applied it (`Wire::Applied`, or its own subscriber hearing its own
//! relay, since `PUBLISH` counts that one too).
//!
//! It is not the wire (`subscriber.rs`) nor the timeout (the caller's). Invariant: an entry
//! lives only while its caller waits ([`Pending`] removes it when dropped), so a lost or
//! late acknowledgement is a no-op, never a leak; acknowledgements may arrive before the
//! count of hearers does, and are counted all the same.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

#[derive(Debug)]
struct Waiter {
    applied: u64,
    heard: Option<u64>,
    done: Option<oneshot::Sender<()>>,
}

impl Waiter {
    fn settle(&mut self) {
        if self.heard.is_some_and(|heard| self.applied >= heard) {
            if let Some(done) = self.done.take() {
                let _ = done.send(());
            }
        }
    }
}

/// The relays waiting for acknowledgements, shared by the store and its subscriber.
#[derive(Debug, Default)]
pub(super) struct Acks {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiter>>,
}

/// One relay being waited on; dropping it forgets the entry.
pub(super) struct Pending {
    acks: Arc<Acks>,
    /// The entry's number, which the relay's token carries.
    pub(super) n: u64,
    done: oneshot::Receiver<()>,
}

impl Acks {
    /// Opens an entry for a relay about to be published.
    pub(super) fn open(self: &Arc<Self>) -> Pending {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, done) = oneshot::channel();
        self.waiting.lock().insert(n, Waiter { applied: 0, heard: None, done: Some(tx) });
        Pending { acks: self.clone(), n, done }
    }

    /// One hearer applied relay `n`.
    pub(super) fn applied(&self, n: u64) {
        if let Some(waiter) = self.waiting.lock().get_mut(&n) {
            waiter.applied += 1;
            waiter.settle();
        }
    }

    fn heard(&self, n: u64, heard: u64) {
        if let Some(waiter) = self.waiting.lock().get_mut(&n) {
            waiter.heard = Some(heard);
            waiter.settle();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.lock().len()
    }
}

impl Pending {
    /// Waits until `heard` hearers have applied the relay.
    pub(super) async fn all_applied(mut self, heard: u64) {
        self.acks.heard(self.n, heard);
        let _ = (&mut self.done).await;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.acks.waiting.lock().remove(&self.n);
    }
}

/// The token a relay carries: its entry and the node to tell (`{n}:{node}`).
pub(super) fn token(n: u64, node: &str) -> String {
    format!("{n}:{node}")
}

/// The entry and node a token names, if it is one.
pub(super) fn parse(token: &str) -> Option<(u64, &str)> {
    let (n, node) = token.split_once(':')?;
    Some((n.parse().ok()?, node)).filter(|(_, node)| !node.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tokens_round_trip_and_junk_is_refused() {
        assert_eq!(parse(&token(7, "node:a")), Some((7, "node:a")));
        for junk in ["", "7", "x:a", "7:", ":a", "-1:a"] {
            assert_eq!(parse(junk), None, "{junk:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn done_once_every_hearer_applied_in_any_order() {
        let acks = Arc::new(Acks::default());
        // Acknowledgements before the count of hearers is known.
        let early = acks.open();
        acks.applied(early.n);
        acks.applied(early.n);
        tokio::time::timeout(Duration::from_secs(1), early.all_applied(2)).await.expect("two of two applied");

        let late = acks.open();
        let n = late.n;
        let waiting = tokio::spawn(late.all_applied(2));
        tokio::task::yield_now().await;
        acks.applied(n);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiting.is_finished(), "one of two is not all");
        acks.applied(n);
        tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("done").unwrap();
        assert_eq!(acks.len(), 0, "entries go with their waiters");
    }

    #[tokio::test(start_paused = true)]
    async fn an_abandoned_wait_leaves_nothing_and_late_acks_are_ignored() {
        let acks = Arc::new(Acks::default());
        let pending = acks.open();
        let n = pending.n;
        assert!(tokio::time::timeout(Duration::from_secs(1), pending.all_applied(1)).await.is_err());
        assert_eq!(acks.len(), 0);
        acks.applied(n);
        assert_eq!(acks.len(), 0);
        // Nobody heard it: done at once.
        tokio::time::timeout(Duration::from_millis(1), acks.open().all_applied(0)).await.expect("nothing to wait for");
    }
}

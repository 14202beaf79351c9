//! Leases: how other nodes tell a task whose node stopped from one still running.
//!
//! A node keeps the ids it created whose records are not terminal ([`Leased`]) and a
//! background task renews `{prefix}lease:{id}` for each every lease/3. When the node
//! stops, the keys expire within one lease, and whoever reads such a record next fails it
//! (`mod.rs`). This is not a lock: two nodes never run one task anyway (the creator runs
//! it); the lease only says "its node is alive", and which node: its value is the node's
//! id, where `route.rs` sends the task's input and cancel. Invariant: the renewer holds only a
//! `Weak` to the store's state and is aborted when the store is dropped, so a dropped
//! store renews nothing (which is what a dead node looks like).

use std::collections::HashSet;
use std::sync::Weak;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;

use super::Inner;

/// This node's ids whose records are not terminal.
#[derive(Debug, Default)]
pub(super) struct Leased(Mutex<HashSet<String>>);

impl Leased {
    pub(super) fn track(&self, id: &str) {
        self.0.lock().insert(id.to_owned());
    }

    pub(super) fn untrack(&self, id: &str) {
        self.0.lock().remove(id);
    }

    pub(super) fn len(&self) -> usize {
        self.0.lock().len()
    }

    pub(super) fn ids(&self) -> Vec<String> {
        // A copy, so no lock is held across a Redis call.
        self.0.lock().iter().cloned().collect()
    }
}

/// Aborts the renewer when the store is dropped.
#[derive(Debug)]
pub(super) struct Renewer(JoinHandle<()>);

impl Drop for Renewer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Spawns the renewal loop for `inner`.
pub(super) fn spawn(inner: Weak<Inner>, lease: Duration) -> Renewer {
    Renewer(tokio::spawn(renew(inner, lease)))
}

async fn renew(inner: Weak<Inner>, lease: Duration) {
    let mut tick = tokio::time::interval((lease / 3).max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let lease_ms = lease.as_millis().max(1) as u64;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let ids = inner.leased.ids();
        if ids.is_empty() {
            continue;
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("SET").arg(inner.keys.lease(id)).arg(&inner.routes.node).arg("PX").arg(lease_ms).ignore();
        }
        // A failed renewal is retried next tick; a lease lost meanwhile fails the task on
        // its next read, which is the honest outcome of a node cut off from Redis.
        if let Err(error) = inner.run(pipe.query_async::<()>(&mut inner.conn.clone())).await {
            tracing::warn!(%error, tasks = ids.len(), "could not renew task leases");
        }
    }
}

//! A connection's id table: the requests in flight under their JSON-RPC ids, for the
//! duplicate-id check, `notifications/cancelled` and tree views.
//!
//! Shared between the connection actor and its endpoint's desk (`desk.rs`), which starts a
//! legacy session's requests on their HTTP tasks: both reserve an id before starting its
//! request, so two requests under one id are never both started, whichever of them
//! arrives where. A cancel for an id whose request is still being started is kept and
//! carried out the moment it has started. It is not the requests' supervisor (their
//! tasks live under the connection's task supervisor) and holds nothing of theirs but a
//! `TaskRef`. Requests scoped to their exchange (`OnClose::Cancel`) are never in it.
//!
//! Invariant: an id is in the table while its request is starting or running (finished
//! ones are swept as the table grows); a reservation ends in `started` or `release`,
//! exactly once.

use std::collections::HashMap;

use arbor_protocol::jsonrpc::RequestId;
use tokio::time::Instant;

use super::inspect::{request_node, InFlight};
use crate::observe::ViewNode;

/// One id's entry.
enum Entry {
    /// Reserved by a request being started; `cancelled` if a cancel came meanwhile.
    Starting {
        cancelled: bool,
    },
    Running(InFlight),
}

/// See the module docs.
pub(crate) struct IdTable {
    /// Hashed with foldhash (seeded per table): every request of a session is looked up
    /// and inserted here, and SipHash cost more than the rest; the client chooses the ids,
    /// so the hash stays seeded, and the table holds only requests in flight.
    entries: HashMap<RequestId, Entry, foldhash::fast::RandomState>,
    /// The table is swept of finished requests when it reaches this size, so the common
    /// path (a request finishes) costs nothing at all.
    sweep_at: usize,
}

/// The size a table is first swept at: what 16 buckets hold (7/8 of them), so a session
/// whose requests finish keeps a table of 16 buckets. Swept at 64, every session's table
/// grew to 128 buckets, rehashing five times on the way (about 270 instructions per
/// request at 256 fresh sessions, by callgrind) and holding 64 finished requests each.
const FIRST_SWEEP: usize = 14;

impl Default for IdTable {
    fn default() -> Self {
        IdTable { entries: HashMap::default(), sweep_at: FIRST_SWEEP }
    }
}

impl IdTable {
    /// Whether a request under `id` is starting or running.
    pub(super) fn busy(&self, id: &RequestId) -> bool {
        match self.entries.get(id) {
            Some(Entry::Starting { .. }) => true,
            Some(Entry::Running(task)) => !task.is_finished(),
            None => false,
        }
    }

    /// Reserves `id` for a request about to be started: `false` (nothing changed) if a
    /// request under it is starting or running.
    pub(super) fn reserve(&mut self, id: &RequestId) -> bool {
        if self.busy(id) {
            return false;
        }
        if self.entries.len() >= self.sweep_at {
            self.entries.retain(|_, entry| match entry {
                Entry::Starting { .. } => true,
                Entry::Running(task) => !task.is_finished(),
            });
            self.sweep_at = (self.entries.len() * 2).max(FIRST_SWEEP);
        }
        self.entries.insert(id.clone(), Entry::Starting { cancelled: false });
        true
    }

    /// The request reserved under `id` has started; a cancel that came meanwhile is
    /// carried out now.
    pub(super) fn started(&mut self, id: RequestId, task: InFlight) {
        if let Some(Entry::Starting { cancelled: true }) = self.entries.get(&id) {
            self.entries.remove(&id);
            let _ = task.cancel();
            return;
        }
        self.entries.insert(id, Entry::Running(task));
    }

    /// The request reserved under `id` was refused: the id is free again.
    pub(super) fn release(&mut self, id: &RequestId) {
        if let Some(Entry::Starting { .. }) = self.entries.get(id) {
            self.entries.remove(id);
        }
    }

    /// `notifications/cancelled`: stops the request under `id`, or the one being started
    /// under it as soon as it has started. Unknown and finished ids are ignored.
    pub(super) fn cancel(&mut self, id: &RequestId) {
        match self.entries.get_mut(id) {
            Some(Entry::Starting { cancelled }) => *cancelled = true,
            Some(Entry::Running(task)) => {
                let _ = task.cancel();
                self.entries.remove(id);
            }
            None => {}
        }
    }

    /// The running requests, with their ids.
    pub(super) fn running(&self) -> impl Iterator<Item = (&RequestId, &InFlight)> {
        self.entries.iter().filter_map(|(id, entry)| match entry {
            Entry::Running(task) if !task.is_finished() => Some((id, task)),
            _ => None,
        })
    }

    /// The running requests as view nodes.
    pub(super) fn views(&self, now: Instant) -> impl Iterator<Item = ViewNode> + '_ {
        self.running().map(move |(id, task)| request_node(Some(id), task, now))
    }

    /// Forgets every request (the connection stopped them).
    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use arbor_otp::{OwnedTaskSupervisor, TaskOptions, TaskSupervisorSpec};
    use arbor_protocol::methods::MethodName;

    use super::*;

    fn running(tasks: &OwnedTaskSupervisor) -> InFlight {
        let work = std::future::pending::<Result<(), ()>>();
        let task = tasks.spawn_reporting(TaskOptions::default(), work, |_| {}).unwrap();
        InFlight { task, method: MethodName::CallTool, since: Instant::now(), version: 0 }
    }

    #[tokio::test]
    async fn an_id_is_reserved_once_and_a_cancel_while_starting_is_carried_out() {
        let tasks = OwnedTaskSupervisor::new(TaskSupervisorSpec::new("t"));
        let mut table = IdTable::default();
        let id = RequestId::from(1);
        assert!(table.reserve(&id));
        assert!(!table.reserve(&id), "a starting request holds its id");
        table.cancel(&id);
        let first = running(&tasks);
        table.started(id.clone(), first.clone());
        tokio::task::yield_now().await;
        assert!(first.is_finished(), "cancelled as soon as it started");
        assert!(table.reserve(&id), "and its id is free");
        let second = running(&tasks);
        table.started(id.clone(), second.clone());
        assert!(table.busy(&id) && !table.reserve(&id));
        assert_eq!(table.running().count(), 1);
        table.cancel(&id);
        tokio::task::yield_now().await;
        assert!(second.is_finished() && !table.busy(&id));
        // A refused start gives its reservation back.
        assert!(table.reserve(&RequestId::from(2)));
        table.release(&RequestId::from(2));
        assert!(!table.busy(&RequestId::from(2)));
        tasks.shutdown().await;
    }
}

//! [`MemoryTaskStore`]: the default [`TaskStore`], records in this process's memory.
//!
//! Records are dropped once their TTL has passed: lazily, when looked up, in the
//! server's periodic [`TaskStore::expire`], and in sweeps when the store grows (each time
//! it doubles) or reaches a cap
//! ([`TaskConfig::max_tasks`] in all, [`TaskConfig::max_tasks_per_owner`] for one owner,
//! so one requester cannot fill the store for everyone); a sweep gives back the table a
//! burst of records left behind. `wait` parks on a `Notify` per
//! record, woken by the change that makes it terminal. Shared by two servers (one
//! `Arc`), it plays a store on another node: either server serves the other's records.
//! It is not where runs live (`local.rs`).
//!
//! Invariant: at most `max_tasks` records, at most `max_tasks_per_owner` of one owner;
//! every change goes through [`TaskRecord::apply`]. Expiry follows tokio's clock, so a
//! paused clock drives it in tests.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::store::{TaskCap, TaskChange, TaskOwner, TaskPage, TaskRecord, TaskStore, TaskStoreError};
use super::TaskConfig;

/// The in-memory task store (the default).
pub struct MemoryTaskStore {
    max_tasks: usize,
    max_per_owner: usize,
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore").field("len", &self.len()).finish_non_exhaustive()
    }
}

struct Slot {
    record: TaskRecord,
    seq: u64,
    expires_at: Instant,
    /// Woken (every waiter) when the record becomes terminal.
    settled: Arc<Notify>,
}

struct Entries {
    map: HashMap<String, Slot>,
    per_owner: HashMap<TaskOwner, usize>,
    /// Sweep expired records when the map reaches this size.
    sweep_at: usize,
    /// The creation number of the next record: `list` pages in this order.
    next_seq: u64,
}

impl Entries {
    fn remove(&mut self, id: &str) {
        if let Some(slot) = self.map.remove(id) {
            release(&mut self.per_owner, &slot.record.owner);
            slot.settled.notify_waiters();
        }
    }

    fn sweep(&mut self, now: Instant) {
        let Entries { map, per_owner, .. } = self;
        map.retain(|_, slot| {
            let keep = slot.expires_at > now;
            if !keep {
                release(per_owner, &slot.record.owner);
                slot.settled.notify_waiters();
            }
            keep
        });
        // A map emptied by expiry gives its table back (`retain` keeps the capacity): the
        // memory of a burst of tasks returns once they have expired and been swept.
        if self.map.capacity() > 4 * self.map.len().max(64) {
            self.map.shrink_to_fit();
        }
        self.sweep_at = (self.map.len() * 2).max(64);
    }

    fn owned_by(&self, owner: &TaskOwner) -> usize {
        self.per_owner.get(owner).copied().unwrap_or(0)
    }

    /// How long until the first record (of `owner`, or of anyone) expires: the retry hint
    /// of a refusal. A scan, made only when a task is refused, right after a sweep.
    fn first_expiry(&self, owner: Option<&TaskOwner>, now: Instant) -> Duration {
        let slots = self.map.values().filter(|s| owner.is_none_or(|o| &s.record.owner == o));
        slots.map(|s| s.expires_at).min().map_or(Duration::ZERO, |at| at.saturating_duration_since(now))
    }

    /// The live slot `id` of `owner`, dropping it if expired.
    fn find(&mut self, owner: &TaskOwner, id: &str, now: Instant) -> Result<&Slot, TaskStoreError> {
        let slot = self.map.get(id).filter(|s| &s.record.owner == owner).ok_or(TaskStoreError::NotFound)?;
        if slot.expires_at <= now {
            self.remove(id);
            return Err(TaskStoreError::Expired);
        }
        Ok(&self.map[id])
    }
}

fn release(per_owner: &mut HashMap<TaskOwner, usize>, owner: &TaskOwner) {
    if let Some(n) = per_owner.get_mut(owner) {
        *n -= 1;
        if *n == 0 {
            per_owner.remove(owner);
        }
    }
}

impl MemoryTaskStore {
    /// A store with `config`'s caps (`max_tasks`, `max_tasks_per_owner`).
    pub fn new(config: &TaskConfig) -> MemoryTaskStore {
        MemoryTaskStore {
            max_tasks: config.max_tasks,
            max_per_owner: config.max_tasks_per_owner,
            entries: Mutex::new(Entries { map: HashMap::new(), per_owner: HashMap::new(), sweep_at: 64, next_seq: 0 }),
        }
    }

    /// How many records are held (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.entries.lock().map.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn create_now(&self, record: TaskRecord) -> Result<(), TaskStoreError> {
        let now = Instant::now();
        let mut entries = self.entries.lock();
        let (max, per_owner) = (self.max_tasks, self.max_per_owner);
        let owner = record.owner.clone();
        let full = |e: &Entries| e.map.len() >= max || e.owned_by(&owner) >= per_owner;
        if entries.map.len() >= entries.sweep_at.min(max) || full(&entries) {
            entries.sweep(now);
        }
        if entries.map.len() >= max {
            let retry_after = entries.first_expiry(None, now);
            return Err(TaskStoreError::Full { cap: TaskCap::Store, limit: max, retry_after });
        }
        if entries.owned_by(&owner) >= per_owner {
            let retry_after = entries.first_expiry(Some(&owner), now);
            return Err(TaskStoreError::Full { cap: TaskCap::Owner, limit: per_owner, retry_after });
        }
        let seq = entries.next_seq;
        entries.next_seq += 1;
        *entries.per_owner.entry(owner).or_default() += 1;
        let slot = Slot { expires_at: now + record.ttl, record, seq, settled: Arc::new(Notify::new()) };
        entries.map.insert(slot.record.id.clone(), slot);
        Ok(())
    }

    fn change_now(&self, id: &str, change: TaskChange) -> Result<Option<TaskRecord>, TaskStoreError> {
        let mut entries = self.entries.lock();
        let slot = entries.map.get_mut(id).ok_or(TaskStoreError::NotFound)?;
        if !slot.record.apply(change) {
            return Ok(None);
        }
        if slot.record.is_terminal() {
            slot.settled.notify_waiters();
        }
        Ok(Some(slot.record.clone()))
    }

    fn list_now(&self, owner: &TaskOwner, cursor: Option<&str>, limit: usize) -> Result<TaskPage, TaskStoreError> {
        let after = match cursor {
            None => None,
            Some(c) => Some(c.parse::<u64>().map_err(|_| TaskStoreError::InvalidCursor)?),
        };
        let now = Instant::now();
        let entries = self.entries.lock();
        let mut mine: Vec<&Slot> = entries
            .map
            .values()
            .filter(|s| &s.record.owner == owner && s.expires_at > now && after.is_none_or(|a| s.seq > a))
            .collect();
        mine.sort_by_key(|s| s.seq);
        let more = mine.len() > limit;
        mine.truncate(limit);
        let next_cursor = if more { mine.last().map(|s| s.seq.to_string()) } else { None };
        Ok(TaskPage { tasks: mine.into_iter().map(|s| s.record.clone()).collect(), next_cursor })
    }

    async fn wait_now(&self, owner: &TaskOwner, id: &str) -> Result<TaskRecord, TaskStoreError> {
        loop {
            let (settled, expires_at) = {
                let mut entries = self.entries.lock();
                let slot = entries.find(owner, id, Instant::now())?;
                if slot.record.is_terminal() {
                    return Ok(slot.record.clone());
                }
                (slot.settled.clone(), slot.expires_at)
            };
            let notified = settled.notified();
            tokio::pin!(notified);
            // Registered, then the record read again: a change in between still wakes us.
            notified.as_mut().enable();
            {
                let mut entries = self.entries.lock();
                let slot = entries.find(owner, id, Instant::now())?;
                if slot.record.is_terminal() {
                    return Ok(slot.record.clone());
                }
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(expires_at) => {}
            }
        }
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let created = self.create_now(record);
        Box::pin(async move { created })
    }

    fn expire(&self) -> BoxFuture<'_, ()> {
        self.entries.lock().sweep(Instant::now());
        Box::pin(async {})
    }

    fn get<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        let found = self.entries.lock().find(owner, id, Instant::now()).map(|s| s.record.clone());
        Box::pin(async move { found })
    }

    fn change<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let changed = self.change_now(id, change);
        Box::pin(async move { changed })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        self.entries.lock().remove(id);
        Box::pin(async { Ok(()) })
    }

    fn wait<'a>(&'a self, owner: &'a TaskOwner, id: &'a str) -> BoxFuture<'a, Result<TaskRecord, TaskStoreError>> {
        Box::pin(self.wait_now(owner, id))
    }

    fn list<'a>(
        &'a self,
        owner: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, TaskStoreError>> {
        let page = self.list_now(owner, cursor, limit);
        Box::pin(async move { page })
    }
}

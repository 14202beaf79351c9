//! Live counts of the actors and tasks a tree owns, so a test can assert "nothing leaked".
//!
//! A [`Gauge`] counts live actors and supervised tasks. Every supervisor, dynamic
//! supervisor and task supervisor counts itself while its state is alive, and every
//! supervised task is counted while its wrapper runs; worker actors written by users can join in by keeping a
//! [`LiveToken`] in their state. A tree inherits its root's gauge, and a test that gives its
//! tree a fresh gauge can assert both counts return to zero without interference from
//! tests running in parallel. It is not a metrics system: there are no rates or histograms.
//!
//! Invariant: an actor is counted from `actor_token()` until the token's `Drop` (so also
//! after a kill or a panic); a task is counted while its wrapper runs, read from its task
//! supervisor, which stays alive as long as any of its tasks does.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

#[derive(Default)]
struct Counters {
    actors: AtomicUsize,
    /// Task supervisors counting in this gauge; their counts are read on demand so that
    /// spawning a task does not touch the gauge at all.
    task_sources: Mutex<TaskSources>,
}

#[derive(Default)]
struct TaskSources {
    sources: Vec<Weak<dyn TaskCount>>,
    /// Dead entries are pruned when the list reaches this length, so a process that starts
    /// a task supervisor per connection keeps the list proportional to the live ones.
    prune_at: usize,
    /// Sources that ended since the last prune. A dead `Weak` still holds its supervisor's
    /// allocation (a few hundred bytes), so once half the list is dead it is pruned and its
    /// capacity given back, even if no supervisor registers again (10,000 connections
    /// closed at once must not leave 10,000 of them allocated).
    ended: usize,
}

impl TaskSources {
    fn prune(&mut self) {
        self.sources.retain(|s| s.strong_count() > 0);
        self.ended = 0;
        self.prune_at = (2 * self.sources.len()).max(16);
        if self.sources.capacity() > 4 * self.prune_at {
            self.sources.shrink_to(self.prune_at);
        }
    }
}

/// Something that knows how many supervised tasks it runs.
pub(crate) trait TaskCount: Send + Sync {
    fn alive_tasks(&self) -> usize;
}

/// Shared live counters for actors and tasks.
#[derive(Clone, Default)]
pub struct Gauge {
    counters: Arc<Counters>,
}

impl fmt::Debug for Gauge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gauge").field("actors", &self.alive_actors()).field("tasks", &self.alive_tasks()).finish()
    }
}

impl Gauge {
    /// A fresh gauge with both counts at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-wide gauge used by trees that were not given one.
    pub fn global() -> Gauge {
        static GLOBAL: OnceLock<Gauge> = OnceLock::new();
        GLOBAL.get_or_init(Gauge::new).clone()
    }

    /// Actors currently alive and counted by this gauge.
    pub fn alive_actors(&self) -> usize {
        self.counters.actors.load(Ordering::SeqCst)
    }

    /// Supervised tasks currently running and counted by this gauge.
    pub fn alive_tasks(&self) -> usize {
        // Upgraded outside the read's lock's lifetime: dropping the last strong reference
        // of a source runs its `Drop`, which takes this lock again.
        let live: Vec<_> = {
            let sources = self.counters.task_sources.lock();
            sources.sources.iter().filter_map(Weak::upgrade).collect()
        };
        live.iter().map(|s| s.alive_tasks()).sum()
    }

    /// Counts one more live actor until the returned token is dropped. Keep it in the
    /// actor's state so it is dropped however the actor ends.
    pub fn actor_token(&self) -> LiveToken {
        self.counters.actors.fetch_add(1, Ordering::SeqCst);
        LiveToken { gauge: self.clone() }
    }

    pub(crate) fn register_tasks(&self, source: Weak<dyn TaskCount>) {
        let mut list = self.counters.task_sources.lock();
        if list.sources.len() >= list.prune_at {
            list.prune();
        }
        list.sources.push(source);
    }

    /// A registered source ended (its last strong reference is being dropped).
    pub(crate) fn task_source_ended(&self) {
        let mut list = self.counters.task_sources.lock();
        list.ended += 1;
        if list.ended >= 8 && 2 * list.ended >= list.sources.len() {
            list.prune();
        }
    }

    /// How many task supervisors the gauge's list holds, dead ones not yet pruned included,
    /// and the list's capacity: what a closed supervisor may leave behind until pruned.
    pub fn task_source_slots(&self) -> (usize, usize) {
        let list = self.counters.task_sources.lock();
        (list.sources.len(), list.sources.capacity())
    }
}

/// Keeps one actor counted in a [`Gauge`] while it lives.
#[derive(Debug)]
pub struct LiveToken {
    gauge: Gauge,
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        self.gauge.counters.actors.fetch_sub(1, Ordering::SeqCst);
    }
}

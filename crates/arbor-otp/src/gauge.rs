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
use std::sync::{Arc, Mutex, OnceLock, Weak};

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
        let sources = self.counters.task_sources.lock().expect("gauge lock");
        sources.sources.iter().filter_map(Weak::upgrade).map(|s| s.alive_tasks()).sum()
    }

    /// Counts one more live actor until the returned token is dropped. Keep it in the
    /// actor's state so it is dropped however the actor ends.
    pub fn actor_token(&self) -> LiveToken {
        self.counters.actors.fetch_add(1, Ordering::SeqCst);
        LiveToken { gauge: self.clone() }
    }

    pub(crate) fn register_tasks(&self, source: Weak<dyn TaskCount>) {
        let mut list = self.counters.task_sources.lock().expect("gauge lock");
        if list.sources.len() >= list.prune_at {
            list.sources.retain(|s| s.strong_count() > 0);
            list.prune_at = (2 * list.sources.len()).max(16);
        }
        list.sources.push(source);
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

//! A tenant's restart budget and quarantine: OTP's intensity, counted over the tenant's
//! handler crashes.
//!
//! Every crash (a handler that panicked, or the tenant's connections supervisor stopped
//! by a failure) is charged to a window of `max_seconds`; the crash that makes more than
//! `max_restarts` in the window escalates, exactly as an OTP supervisor past its
//! intensity gives up: the tenant's subtree is stopped and restarted by the root
//! (`tree.rs` does that), and the tenant then refuses requests until its quarantine ends.
//! This module only counts and answers "quarantined until when"; it stops nothing.
//!
//! Invariant: one escalation per quarantine: the window is cleared when it escalates, and
//! crashes during a quarantine (requests admitted before it) are not charged again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::policy::RestartBudget;

/// The crash window and the quarantine of one tenant.
#[derive(Debug)]
pub(crate) struct Budget {
    budget: Option<RestartBudget>,
    state: Mutex<State>,
    /// Set while a quarantine may be in force: every request asks, and the answer is
    /// almost always no, which this answers without the lock.
    quarantined: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    crashes: VecDeque<Instant>,
    quarantined_until: Option<Instant>,
    /// Why the last escalation happened, for refusals and the tree view.
    reason: Option<String>,
    escalations: u64,
}

/// What charging a crash did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Charged {
    /// Within the budget (or no budget).
    Within,
    /// Past it: escalate now, with this reason.
    Escalate(String),
}

/// A quarantine in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quarantine {
    pub(crate) reason: String,
    pub(crate) left: Duration,
}

impl Budget {
    pub(crate) fn new(budget: Option<RestartBudget>) -> Budget {
        Budget { budget, state: Mutex::default(), quarantined: AtomicBool::new(false) }
    }

    pub(crate) fn budget(&self) -> Option<RestartBudget> {
        self.budget
    }

    /// Charges one crash.
    pub(crate) fn crash(&self) -> Charged {
        let Some(budget) = self.budget else { return Charged::Within };
        let now = Instant::now();
        let mut state = self.state.lock();
        if state.quarantined_until.is_some_and(|until| now < until) {
            return Charged::Within;
        }
        let window = budget.window();
        while state.crashes.front().is_some_and(|at| now.saturating_duration_since(*at) >= window) {
            state.crashes.pop_front();
        }
        state.crashes.push_back(now);
        if state.crashes.len() <= budget.max_restarts as usize {
            return Charged::Within;
        }
        let reason = format!(
            "its handlers crashed {} times within {} s (restart budget {})",
            state.crashes.len(),
            budget.max_seconds,
            budget.max_restarts
        );
        state.crashes.clear();
        state.quarantined_until = Some(now + budget.quarantine());
        self.quarantined.store(true, Ordering::Release);
        state.reason = Some(reason.clone());
        state.escalations += 1;
        Charged::Escalate(reason)
    }

    /// The quarantine in force now, if any.
    pub(crate) fn quarantine(&self) -> Option<Quarantine> {
        if !self.quarantined.load(Ordering::Acquire) {
            return None;
        }
        let state = self.state.lock();
        let until = state.quarantined_until?;
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            self.quarantined.store(false, Ordering::Release);
            return None;
        }
        Some(Quarantine { reason: state.reason.clone().unwrap_or_default(), left })
    }

    /// Escalations since the tenant started.
    pub(crate) fn escalations(&self) -> u64 {
        self.state.lock().escalations
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn more_crashes_than_the_budget_within_the_window_escalate_once() {
        let budget = Budget::new(Some(RestartBudget::new(3, Duration::from_secs(10), Duration::from_secs(30))));
        for _ in 0..3 {
            assert_eq!(budget.crash(), Charged::Within);
        }
        assert!(matches!(budget.crash(), Charged::Escalate(reason) if reason.contains("4 times within 10 s")));
        assert_eq!(budget.crash(), Charged::Within, "a quarantined tenant is not charged again");
        let q = budget.quarantine().unwrap();
        assert_eq!(q.left, Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(budget.quarantine(), None);
        assert_eq!(budget.escalations(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn crashes_spread_wider_than_the_window_never_escalate() {
        let budget = Budget::new(Some(RestartBudget::new(2, Duration::from_secs(10), Duration::from_secs(30))));
        for _ in 0..20 {
            assert_eq!(budget.crash(), Charged::Within);
            tokio::time::advance(Duration::from_secs(6)).await;
        }
        assert!(Budget::new(None).crash() == Charged::Within);
    }
}

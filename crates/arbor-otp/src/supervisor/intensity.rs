//! The restart-intensity window and the restart history a supervisor keeps.
//!
//! OTP's rule: each restart (including each failed restart attempt) is stamped; stamps
//! older than the period are forgotten; if more than `max_restarts` stamps remain, the
//! supervisor gives up. Time comes from `tokio::time::Instant`, so tests drive it with the
//! paused clock. This is not a rate limiter and applies no backoff.
//!
//! Invariant: the window holds at most `max_restarts + 1` stamps, so memory is bounded
//! however fast children crash.

use std::collections::VecDeque;

use tokio::time::Instant;

use crate::snapshot::RestartRecord;
use crate::supervisor::strategy::RestartIntensity;

/// How many restarts a supervisor remembers for snapshots.
pub(crate) const HISTORY_LEN: usize = 16;

#[derive(Debug)]
pub(crate) struct IntensityWindow {
    limit: RestartIntensity,
    stamps: VecDeque<Instant>,
}

impl IntensityWindow {
    pub(crate) fn new(limit: RestartIntensity) -> Self {
        IntensityWindow { limit, stamps: VecDeque::new() }
    }

    /// Charges one restart at `now`; `false` means the intensity is exceeded and the
    /// supervisor must shut down.
    pub(crate) fn charge(&mut self, now: Instant) -> bool {
        self.stamps.push_back(now);
        while let Some(oldest) = self.stamps.front() {
            // A stamp exactly `period` old is outside the window, as in OTP's `inPeriod`.
            if now.duration_since(*oldest) >= self.limit.period {
                self.stamps.pop_front();
            } else {
                break;
            }
        }
        self.stamps.len() <= self.limit.max_restarts as usize
    }
}

/// The last few restarts, plus a total count, for snapshots.
#[derive(Debug)]
pub(crate) struct RestartHistory {
    started_at: Instant,
    total: u64,
    recent: VecDeque<RestartRecord>,
}

impl RestartHistory {
    pub(crate) fn new() -> Self {
        RestartHistory { started_at: Instant::now(), total: 0, recent: VecDeque::new() }
    }

    pub(crate) fn record(&mut self, child: &str, reason: String) {
        self.total += 1;
        if self.recent.len() == HISTORY_LEN {
            self.recent.pop_front();
        }
        let at_ms = Instant::now().duration_since(self.started_at).as_millis() as u64;
        self.recent.push_back(RestartRecord { at_ms, child: child.to_owned(), reason });
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Milliseconds since the supervisor started.
    pub(crate) fn uptime_ms(&self) -> u64 {
        Instant::now().duration_since(self.started_at).as_millis() as u64
    }

    pub(crate) fn recent(&self) -> Vec<RestartRecord> {
        self.recent.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn more_than_max_restarts_within_the_period_exceeds_the_intensity() {
        let mut w = IntensityWindow::new(RestartIntensity { max_restarts: 2, period: Duration::from_secs(5) });
        assert!(w.charge(Instant::now()));
        assert!(w.charge(Instant::now()));
        tokio::time::advance(Duration::from_secs(5)).await;
        // The first two stamps are now exactly one period old and drop out.
        assert!(w.charge(Instant::now()));
        assert!(w.charge(Instant::now()));
        assert!(!w.charge(Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_intensity_refuses_the_first_restart() {
        let mut w = IntensityWindow::new(RestartIntensity { max_restarts: 0, period: Duration::from_secs(1) });
        assert!(!w.charge(Instant::now()));
    }
}

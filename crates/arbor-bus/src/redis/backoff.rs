//! Reconnection delays: exponential from a floor to a ceiling, with jitter.
//!
//! Invariant: every delay is within `[min/2, max]`, so a node never spins on a dead Redis
//! and never waits longer than `max` once it is back; the jitter (each delay drawn from the
//! upper half of its step) keeps many nodes from reconnecting in lockstep after a restart.

use std::time::Duration;

#[derive(Debug)]
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    step: Duration,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration) -> Self {
        let min = min.max(Duration::from_millis(1));
        let max = max.max(min);
        Self { min, max, step: min }
    }

    /// The next delay; the step doubles up to `max`.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(self.max);
        let half = step / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// After a success: start from the floor again.
    pub(crate) fn reset(&mut self) {
        self.step = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_to_the_ceiling_and_stay_within_bounds() {
        let (min, max) = (Duration::from_millis(10), Duration::from_millis(100));
        let mut b = Backoff::new(min, max);
        let delays: Vec<Duration> = (0..20).map(|_| b.next_delay()).collect();
        assert!(delays.iter().all(|d| *d >= min / 2 && *d <= max), "{delays:?}");
        assert!(delays[10..].iter().all(|d| *d >= max / 2), "{delays:?}");
        b.reset();
        assert!(b.next_delay() <= min);
    }
}

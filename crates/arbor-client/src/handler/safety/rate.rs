//! A token bucket: the budget behind the input-request limit (10/s, bursts of 20) and the
//! server-log limit (50/s, bursts of 100).
//!
//! Pure arithmetic: the caller passes the current instant (tokio's clock, so tests run on
//! the paused clock), nothing here sleeps or reads a clock. It is not a queue: a request
//! over budget is refused at once, never delayed.
//!
//! Invariant: the bucket never holds more than `burst` tokens nor fewer than zero, and a
//! token is taken only by an admitted request.

use std::time::Duration;

use tokio::time::Instant;

/// A rate: `per_second` tokens refilled each second, at most `burst` saved up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained rate, tokens per second. Zero refuses everything once the burst is spent.
    pub per_second: u32,
    /// The most tokens saved up (and so the largest burst admitted at once).
    pub burst: u32,
}

impl RateLimit {
    /// A rate of `per_second` with bursts of `burst`.
    pub const fn new(per_second: u32, burst: u32) -> Self {
        RateLimit { per_second, burst }
    }
}

/// The bucket's state. Starts full.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    limit: RateLimit,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub(crate) fn new(limit: RateLimit, now: Instant) -> Self {
        TokenBucket { limit, tokens: f64::from(limit.burst), last: now }
    }

    /// Takes one token if there is one at `now`; `false` means over budget.
    pub(crate) fn try_take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn refill(&mut self, now: Instant) {
        // An instant earlier than the last one (never on tokio's monotonic clock) adds nothing.
        let elapsed = now.checked_duration_since(self.last).unwrap_or(Duration::ZERO);
        self.last = self.last.max(now);
        let added = elapsed.as_secs_f64() * f64::from(self.limit.per_second);
        self.tokens = (self.tokens + added).min(f64::from(self.limit.burst));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `n` tokens at `now`, returning how many were admitted.
    fn take_n(bucket: &mut TokenBucket, now: Instant, n: usize) -> usize {
        (0..n).filter(|_| bucket.try_take(now)).count()
    }

    #[test]
    fn table() {
        // (rate, burst, first burst size, wait, second burst size, admitted first, admitted second)
        let ms = Duration::from_millis;
        let cases: &[(u32, u32, usize, Duration, usize, usize, usize)] = &[
            (10, 20, 25, ms(0), 5, 20, 0),      // the burst, then nothing without time
            (10, 20, 20, ms(100), 5, 20, 1),    // 100 ms at 10/s gives one token back
            (10, 20, 20, ms(1000), 15, 20, 10), // a second gives ten
            (10, 20, 5, ms(60_000), 30, 5, 20), // never more than the burst saved up
            (50, 100, 150, ms(20), 5, 100, 1),  // the log limit
            (0, 3, 5, ms(10_000), 5, 3, 0),     // rate zero: only the burst ever
            (10, 0, 5, ms(10_000), 5, 0, 0),    // burst zero: nothing ever
        ];
        for &(rate, burst, n1, wait, n2, a1, a2) in cases {
            let start = Instant::now();
            let mut bucket = TokenBucket::new(RateLimit::new(rate, burst), start);
            assert_eq!(take_n(&mut bucket, start, n1), a1, "first burst of {rate}/{burst}");
            assert_eq!(take_n(&mut bucket, start + wait, n2), a2, "after {wait:?} at {rate}/{burst}");
        }
    }

    #[test]
    fn an_earlier_instant_adds_nothing() {
        let start = Instant::now() + Duration::from_secs(5);
        let mut bucket = TokenBucket::new(RateLimit::new(10, 1), start);
        assert!(bucket.try_take(start));
        assert!(!bucket.try_take(start - Duration::from_secs(5)));
    }
}

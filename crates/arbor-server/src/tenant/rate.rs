//! Token buckets: a tenant's request rate, and each of its requesters'.
//!
//! A bucket holds at most `burst` tokens and gains `per_second` of them continuously; a
//! request takes one or is refused at once with the time until one is there. Nothing
//! waits here: a refused request is answered, never queued. Time is tokio's clock, so the
//! tests run on a paused one.
//!
//! This is not the in-flight bounds (`limits.rs`): a rate counts arrivals, a bound counts
//! what runs.
//!
//! Invariant: [`RequesterBuckets`] keeps at most twice the requesters whose bucket is not
//! full (plus a small floor): a full bucket is the same as no bucket, so it is swept.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::policy::RateLimit;
use crate::requester::Requester;

/// One token bucket.
#[derive(Debug)]
pub(crate) struct Bucket {
    limit: RateLimit,
    state: Mutex<State>,
}

#[derive(Debug, Clone, Copy)]
struct State {
    tokens: f64,
    at: Instant,
}

impl State {
    fn full(limit: RateLimit) -> State {
        State { tokens: f64::from(limit.burst), at: Instant::now() }
    }

    /// Takes a token, or says how long until one is there.
    fn take(&mut self, limit: RateLimit, now: Instant) -> Result<(), Duration> {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * limit.per_second;
        self.tokens = (self.tokens + gained).min(f64::from(limit.burst));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 - self.tokens) / limit.per_second))
    }

    fn is_full(&self, limit: RateLimit, now: Instant) -> bool {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * limit.per_second;
        self.tokens + gained >= f64::from(limit.burst)
    }
}

impl Bucket {
    pub(crate) fn new(limit: RateLimit) -> Bucket {
        Bucket { limit, state: Mutex::new(State::full(limit)) }
    }

    pub(crate) fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes a token; `Err(wait)` with the time until the next one.
    pub(crate) fn take(&self) -> Result<(), Duration> {
        self.state.lock().take(self.limit, Instant::now())
    }
}

/// The fewest entries kept before idle (full) buckets are swept.
const SWEEP_FLOOR: usize = 64;

/// One bucket per requester, all with the same limit.
#[derive(Debug)]
pub(crate) struct RequesterBuckets {
    limit: RateLimit,
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    buckets: HashMap<Requester, State>,
    sweep_at: usize,
}

impl RequesterBuckets {
    pub(crate) fn new(limit: RateLimit) -> RequesterBuckets {
        RequesterBuckets { limit, table: Mutex::new(Table { buckets: HashMap::new(), sweep_at: SWEEP_FLOOR }) }
    }

    pub(crate) fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes one of `requester`'s tokens; `Err(wait)` with the time until the next one.
    pub(crate) fn take(&self, requester: &Requester) -> Result<(), Duration> {
        let now = Instant::now();
        let limit = self.limit;
        let mut table = self.table.lock();
        if let Some(state) = table.buckets.get_mut(requester) {
            return state.take(limit, now);
        }
        if table.buckets.len() >= table.sweep_at {
            table.buckets.retain(|_, state| !state.is_full(limit, now));
            table.sweep_at = (table.buckets.len() * 2).max(SWEEP_FLOOR);
        }
        let mut state = State::full(limit);
        let taken = state.take(limit, now);
        table.buckets.insert(requester.clone(), state);
        taken
    }

    /// Requesters with a bucket kept (for the bound's test).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.lock().buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_bucket_allows_its_burst_then_its_rate() {
        let bucket = Bucket::new(RateLimit::new(10.0, 5));
        assert_eq!((0..20).filter(|_| bucket.take().is_ok()).count(), 5);
        let wait = bucket.take().unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        tokio::time::advance(Duration::from_millis(1000)).await;
        assert_eq!((0..20).filter(|_| bucket.take().is_ok()).count(), 5, "a second refills 10, capped at the burst");
    }

    #[tokio::test(start_paused = true)]
    async fn requesters_have_their_own_buckets_and_idle_ones_are_swept() {
        let buckets = RequesterBuckets::new(RateLimit::new(1.0, 2));
        let a = Requester::Principal("a".into());
        let b = Requester::Principal("b".into());
        assert!(buckets.take(&a).is_ok() && buckets.take(&a).is_ok());
        assert!(buckets.take(&a).is_err());
        assert!(buckets.take(&b).is_ok(), "b is not charged for a");
        for i in 0..1000 {
            tokio::time::advance(Duration::from_secs(3)).await;
            let _ = buckets.take(&Requester::Principal(format!("p{i}").into()));
        }
        assert!(buckets.len() <= 2 * SWEEP_FLOOR, "{} buckets kept", buckets.len());
    }
}

//! Bounded polling for the conditions a test cannot await directly (a count on a gauge, a
//! flag set by another task): check, sleep a little, check again, and fail the test with
//! what was awaited once the bound passes.
//!
//! It is not a synchronisation primitive for product code, and it never decides how long
//! a test may take on its own: every caller names its bound. On tokio's paused clock the
//! sleeps cost no wall time.

use std::time::Duration;

/// How long `until` sleeps between two checks.
const EVERY: Duration = Duration::from_millis(5);

/// Polls `done` every 5 ms until it holds; panics with "`what` in time" once `within` has
/// passed without it.
pub async fn until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(within, async {
        while !done() {
            tokio::time::sleep(EVERY).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} in time"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn until_returns_once_the_condition_holds() {
        let mut checks = 0;
        until("three checks", Duration::from_secs(1), || {
            checks += 1;
            checks == 3
        })
        .await;
        assert_eq!(checks, 3);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "never in time")]
    async fn until_fails_the_test_when_the_bound_passes() {
        until("never", Duration::from_secs(1), || false).await;
    }
}

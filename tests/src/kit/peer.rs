//! Misbehaving client sides, as choices and messages a driver acts out over its own
//! transport: cancel races, reused ids, a disconnect at a random point, slow reads.
//!
//! Each behaviour is drawn from the run's generator, so the seed replays it, and states
//! what the [`Ledger`](super::ledger::Ledger) must be told for the accounting to hold.
//! It does not own a connection: the in-memory, pipe and HTTP drivers differ in how they
//! write, read and hang up, not in what they decide.
//!
//! Invariant: a behaviour never needs a timing assumption to be judged; where the outcome
//! depends on a race it is recorded as a race ([`Cancel::Raced`](super::ledger::Cancel)).

use std::time::Duration;

use serde_json::{json, Value};

/// A `tools/call` request with `id` for `tool` with `arguments`.
pub fn call(id: &Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// The cancel notification for `id`.
pub fn cancel(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "kit"}})
}

/// When a cancel is sent, relative to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelRace {
    /// Before the request: the server has no such request yet and ignores the cancel; the
    /// request that follows is answered.
    Before,
    /// While the request is known to be running (it never ends by itself): no answer, ever.
    During,
    /// Right behind the request, which answers at once: one answer or none.
    Racing,
    /// After its answer: ignored, nothing more comes.
    After,
    /// For an id never sent: ignored.
    Unknown,
}

impl CancelRace {
    /// Every race, in a fixed order.
    pub const ALL: [CancelRace; 5] =
        [CancelRace::Before, CancelRace::During, CancelRace::Racing, CancelRace::After, CancelRace::Unknown];

    /// One race, drawn from `rng`.
    pub fn pick(rng: &mut fastrand::Rng) -> CancelRace {
        CancelRace::ALL[rng.usize(..CancelRace::ALL.len())]
    }
}

/// Where a connection is cut: after the `n`th of `total` messages sent (1..=total), so
/// that a cut can fall before, among or after the requests in flight.
pub fn cut_point(rng: &mut fastrand::Rng, total: usize) -> usize {
    rng.usize(1..=total.max(1))
}

/// A reader that stops for `pause` after every `every` messages, to hold the server's
/// output back (a slow consumer); drawn so each connection reads at its own pace.
#[derive(Debug, Clone, Copy)]
pub struct SlowReads {
    pub every: usize,
    pub pause: Duration,
}

impl SlowReads {
    /// A pace drawn from `rng`: pauses of 1 to 20 ms every 1 to 50 messages.
    pub fn pick(rng: &mut fastrand::Rng) -> SlowReads {
        SlowReads { every: rng.usize(1..=50), pause: Duration::from_millis(rng.u64(1..=20)) }
    }

    /// Whether to pause after the `read`th message (counting from 1).
    pub fn pause_after(&self, read: usize) -> Option<Duration> {
        read.is_multiple_of(self.every).then_some(self.pause)
    }
}

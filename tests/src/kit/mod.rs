//! The fault-injection kit: seeded fault plans, a request ledger and scripted peer
//! behaviours, for tests that account for every request under faults.
//!
//! Like the rest of this crate it speaks JSON values only: a [`plan::FaultPlan`] decides,
//! by seed and weight, which [`plan::Fault`] each call carries (as the call's arguments, so
//! the test knows the outcome to expect and a handler in the crate under test applies it);
//! a [`ledger::Ledger`] records what was sent and what came back and checks the
//! accounting; a [`notifications::NotificationLedger`] does the same for streams (every
//! event published against what each subscriber received, gaps and ends included);
//! [`peer`] scripts the misbehaving client sides (cancel races, duplicate ids,
//! disconnects at random points, slow reads); [`hostile`] draws the bad input (malformed,
//! oversized and deeply nested frames, unknown methods, invalid params) with the error each
//! must get. Driving a transport stays with the crate
//! whose server is under test. It is not a simulator: faults run on the real runtime.
//!
//! Invariant: a run is a function of its [`Seed`]. Every random choice comes from the
//! seed's generator, and the seed is printed first, so a failure replays with
//! `ARBOR_KIT_SEED=<seed>`.

pub mod hostile;
pub mod ledger;
pub mod notifications;
pub mod peer;
pub mod plan;

/// The generator every choice draws from.
pub use fastrand::Rng;

/// The variable that fixes a run's seed.
pub const SEED_VAR: &str = "ARBOR_KIT_SEED";

/// A run's seed and its generator.
#[derive(Debug, Clone)]
pub struct Seed {
    value: u64,
}

impl Seed {
    /// The seed in `ARBOR_KIT_SEED`, else a fresh random one; printed with `test` (the
    /// test's name) so the line in a failed run's output replays it.
    pub fn for_test(test: &str) -> Seed {
        let value = match std::env::var(SEED_VAR) {
            Ok(text) => text.trim().parse().unwrap_or_else(|_| panic!("{SEED_VAR}={text:?} is not a u64")),
            Err(_) => fastrand::u64(..),
        };
        println!("[kit] {test}: seed {value} (replay with {SEED_VAR}={value})");
        Seed { value }
    }

    /// A fixed seed (for the kit's own tests).
    pub fn fixed(value: u64) -> Seed {
        Seed { value }
    }

    /// The seed's value.
    pub fn value(&self) -> u64 {
        self.value
    }

    /// A generator for the part of the run named `stream`: each part draws from its own
    /// sequence, so adding draws to one part does not shift another's choices.
    pub fn rng(&self, stream: u64) -> fastrand::Rng {
        // splitmix64's odd constant spreads neighbouring streams apart.
        fastrand::Rng::with_seed(self.value ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

//! Fault plans: which fault a call carries, chosen by seed and weight.
//!
//! A [`Fault`] travels as a call's arguments ([`Fault::arguments`]); the handler under test
//! reads it back ([`Fault::from_arguments`]) and acts it out, so the client knows the
//! outcome each call must end in ([`Fault::expect`]). What acting out means (a panic, an
//! error, a future that never ends, a busy loop in a blocking section, a delay) is the
//! handler's; this module holds no runtime code.
//!
//! Invariant: a plan draws exactly one number per call from the generator it is given,
//! so a seed fixes the whole sequence of faults.

use serde_json::{json, Value};

use super::ledger::Kind;

/// One call's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answers normally.
    None,
    /// Panics.
    Panic,
    /// Returns a JSON-RPC error (invalid params, -32602).
    Error,
    /// Never finishes: the server's deadline must end it.
    Hang,
    /// Spins the CPU for `ms` milliseconds of wall time inside a blocking section, then
    /// answers.
    Busy { ms: u64 },
    /// Sleeps `ms` milliseconds (of the runtime's clock), then answers.
    Delay { ms: u64 },
}

/// The error code a [`Fault::Error`] answers with.
pub const INJECTED_ERROR_CODE: i64 = -32602;

impl Fault {
    /// The call's arguments that carry this fault.
    pub fn arguments(self) -> Value {
        match self {
            Fault::None => json!({"fault": "none"}),
            Fault::Panic => json!({"fault": "panic"}),
            Fault::Error => json!({"fault": "error"}),
            Fault::Hang => json!({"fault": "hang"}),
            Fault::Busy { ms } => json!({"fault": "busy", "ms": ms}),
            Fault::Delay { ms } => json!({"fault": "delay", "ms": ms}),
        }
    }

    /// The fault in a call's arguments; `None` when they carry none or a malformed one.
    pub fn from_arguments(arguments: &Value) -> Option<Fault> {
        let ms = || arguments.get("ms").and_then(Value::as_u64);
        Some(match arguments.get("fault")?.as_str()? {
            "none" => Fault::None,
            "panic" => Fault::Panic,
            "error" => Fault::Error,
            "hang" => Fault::Hang,
            "busy" => Fault::Busy { ms: ms()? },
            "delay" => Fault::Delay { ms: ms()? },
            _ => return None,
        })
    }

    /// The outcome a server that contains the fault answers with: a panic is an internal
    /// error (-32603), a hang a timeout, an error its own code, the rest a result.
    pub fn expect(self) -> Kind {
        match self {
            Fault::None | Fault::Busy { .. } | Fault::Delay { .. } => Kind::Result,
            Fault::Panic => Kind::Error(-32603),
            Fault::Error => Kind::Error(INJECTED_ERROR_CODE),
            Fault::Hang => Kind::Timeout,
        }
    }
}

/// Weights of each fault; a call draws one in proportion.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    weights: Vec<(Fault, u32)>,
}

impl FaultPlan {
    /// A plan with no faults yet (every call [`Fault::None`] until one is added).
    pub fn new() -> FaultPlan {
        FaultPlan::default()
    }

    /// Adds `fault` with `weight` (relative to the other entries' weights).
    pub fn with(mut self, fault: Fault, weight: u32) -> FaultPlan {
        self.weights.push((fault, weight));
        self
    }

    /// The next call's fault, drawn from `rng`.
    pub fn pick(&self, rng: &mut fastrand::Rng) -> Fault {
        let total: u32 = self.weights.iter().map(|(_, w)| w).sum();
        // One draw per call, even for an empty plan, so the sequence is the same shape.
        let mut at = rng.u32(..total.max(1));
        for (fault, weight) in &self.weights {
            if at < *weight {
                return *fault;
            }
            at -= weight;
        }
        Fault::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Seed;

    #[test]
    fn a_fault_survives_its_arguments_and_a_seed_fixes_the_sequence() {
        for fault in
            [Fault::None, Fault::Panic, Fault::Error, Fault::Hang, Fault::Busy { ms: 3 }, Fault::Delay { ms: 9 }]
        {
            assert_eq!(Fault::from_arguments(&fault.arguments()), Some(fault));
        }
        assert_eq!(Fault::from_arguments(&json!({"fault": "busy"})), None, "busy needs its ms");
        let plan = FaultPlan::new().with(Fault::Panic, 1).with(Fault::None, 3);
        let draw = |seed: u64| {
            let mut rng = Seed::fixed(seed).rng(1);
            (0..1000).map(|_| plan.pick(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let panics = draw(7).iter().filter(|f| **f == Fault::Panic).count();
        assert!((150..350).contains(&panics), "about a quarter panics: {panics}");
    }
}

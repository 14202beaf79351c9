//! Supervisor flags and the supervisor spec: strategy, restart intensity, auto-shutdown.
//!
//! These are plain values describing *what* a supervisor does when a child exits; the
//! actor in `mod.rs` is the only code that acts on them. They are not a policy engine:
//! there is no backoff, exactly as in OTP.
//!
//! Invariant: a [`SupervisorSpec`] is a complete, clonable description, so a supervisor
//! restarted by its own parent rebuilds exactly its static children (children added at
//! run time are lost, as in OTP).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::gauge::Gauge;
use crate::supervisor::child_spec::ChildSpec;

/// Which children are restarted when one of them has to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Only the child that exited.
    #[default]
    OneForOne,
    /// All children: the others are terminated (reverse order), then all restart in order.
    OneForAll,
    /// The child and the children started after it (terminated in reverse order, then
    /// restarted in start order), for "later children depend on earlier ones".
    RestForOne,
}

/// When a supervisor shuts itself down because significant children exited on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoShutdown {
    /// Never; significant children are rejected.
    #[default]
    Never,
    /// As soon as any significant child exits on its own.
    AnySignificant,
    /// When the last significant child has exited on its own.
    AllSignificant,
}

/// At most `max_restarts` restarts within `period`; one more and the supervisor gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RestartIntensity {
    /// Restarts tolerated within the period (OTP's `intensity`).
    pub max_restarts: u32,
    /// The sliding window (OTP's `period`).
    pub period: Duration,
}

impl Default for RestartIntensity {
    /// Elixir's defaults: 3 restarts in 5 seconds.
    fn default() -> Self {
        RestartIntensity { max_restarts: 3, period: Duration::from_secs(5) }
    }
}

/// Everything needed to start a static supervisor.
#[derive(Clone, Default)]
pub struct SupervisorSpec {
    pub(crate) name: String,
    pub(crate) strategy: Strategy,
    pub(crate) intensity: RestartIntensity,
    pub(crate) auto_shutdown: AutoShutdown,
    pub(crate) children: Vec<ChildSpec>,
    pub(crate) gauge: Option<Gauge>,
}

impl fmt::Debug for SupervisorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorSpec")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("intensity", &self.intensity)
            .field("auto_shutdown", &self.auto_shutdown)
            .field("children", &self.children)
            .finish()
    }
}

impl SupervisorSpec {
    /// A one_for_one supervisor with no children and Elixir's default intensity. The name
    /// is a role label for snapshots, not a registered name (nothing is registered).
    pub fn new(name: impl Into<String>) -> Self {
        SupervisorSpec { name: name.into(), ..Default::default() }
    }

    /// Sets the strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Sets the restart intensity: at most `max_restarts` within `period`.
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Self {
        self.intensity = RestartIntensity { max_restarts, period };
        self
    }

    /// Sets auto-shutdown.
    pub fn auto_shutdown(mut self, auto_shutdown: AutoShutdown) -> Self {
        self.auto_shutdown = auto_shutdown;
        self
    }

    /// Appends a static child; children start in the order they are added.
    pub fn child(mut self, child: ChildSpec) -> Self {
        self.children.push(child);
        self
    }

    /// Uses `gauge` for this supervisor and (unless they have their own) its descendants.
    pub fn gauge(mut self, gauge: Gauge) -> Self {
        self.gauge = Some(gauge);
        self
    }

    /// Checks ids are unique and every child is valid under these flags.
    pub(crate) fn validate(&self) -> Result<(), crate::supervisor::child_spec::SpecError> {
        for (i, child) in self.children.iter().enumerate() {
            if self.children[..i].iter().any(|c| c.id == child.id) {
                return Err(crate::supervisor::child_spec::SpecError::DuplicateId(child.id.clone()));
            }
            child.validate(self.auto_shutdown != AutoShutdown::Never)?;
        }
        Ok(())
    }
}

//! The supervisors' metrics, through the [`metrics`] facade: a counter of restarts and one
//! of escalations (restart intensity exceeded), labelled with the supervisor's name.
//!
//! What it is not: MCP-aware, or a recorder (the application installs one; without it
//! every call is the facade's no-op). Names are the `arbor.supervisor.` family that
//! `arbor_server::metrics` lists with the rest. Invariant: each restart charged to a
//! supervisor's intensity window is counted once, each escalation once.

use metrics::counter;

/// Children restarted (counter; [`SUPERVISOR`]).
pub const RESTARTS: &str = "arbor.supervisor.restarts";
/// Supervisors that gave up: restart intensity exceeded, failing to their parent (counter;
/// [`SUPERVISOR`]).
pub const ESCALATIONS: &str = "arbor.supervisor.escalations";
/// `arbor.supervisor.name`: the supervisor's name (its spec's).
pub const SUPERVISOR: &str = "arbor.supervisor.name";

pub(crate) fn restarted(supervisor: &str) {
    counter!(RESTARTS, SUPERVISOR => supervisor.to_owned()).increment(1);
}

pub(crate) fn escalated(supervisor: &str) {
    counter!(ESCALATIONS, SUPERVISOR => supervisor.to_owned()).increment(1);
}

//! The exit-reason convention: how every actor in an `arbor-otp` tree says why it stopped.
//!
//! ractor reports an exit as either `ActorFailed` (panic or `Err`) or `ActorTerminated`
//! with a free-form reason string, so "abnormal" would otherwise mean something different
//! in every supervisor. This module is the one place that maps those signals onto OTP's
//! three cases: `normal`, `shutdown` (optionally with a detail) and a failure with a cause.
//! It is not a logging format and carries no backtraces.
//!
//! Invariant: [`ExitReason::from_stop_reason`] and [`ExitReason::as_stop_reason`] round-trip,
//! and only [`ExitReason::Failure`] is abnormal, so a transient child is restarted exactly
//! when its exit maps to `Failure`.

use std::fmt;

use ractor::{ActorCell, ActorId, SupervisionEvent};
use serde::Serialize;

/// The stop-reason string for a normal exit.
pub const NORMAL: &str = "normal";
/// The stop-reason string for a shutdown; `shutdown:<detail>` carries a detail.
pub const SHUTDOWN: &str = "shutdown";
/// The prefix `as_stop_reason` gives failures.
const FAILURE_PREFIX: &str = "failure:";
/// ractor's reason after `drain()`; everything queued was processed, so it counts as normal.
const DRAINED: &str = "Drained";

/// Why an actor stopped, in OTP's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum ExitReason {
    /// The actor finished its work (`stop(None)`, `stop(Some("normal"))` or a drain).
    Normal,
    /// The actor was asked to shut down, possibly with a detail (`shutdown:<detail>`).
    Shutdown(Option<String>),
    /// Anything else: a panic, an `Err` from a handler, a kill, or an unknown reason.
    Failure(String),
}

impl ExitReason {
    /// Whether this exit is normal in OTP's sense (`normal`, `shutdown`, `{shutdown, _}`).
    pub fn is_normal(&self) -> bool {
        !self.is_abnormal()
    }

    /// Whether this exit is abnormal; a transient child is restarted exactly in this case.
    pub fn is_abnormal(&self) -> bool {
        matches!(self, ExitReason::Failure(_))
    }

    /// Parses a ractor stop reason. `None` counts as normal because `stop(None)` is the
    /// idiomatic way for a ractor actor to say "I am done".
    pub fn from_stop_reason(reason: Option<&str>) -> Self {
        match reason {
            None | Some(NORMAL) | Some(DRAINED) => ExitReason::Normal,
            Some(SHUTDOWN) => ExitReason::Shutdown(None),
            Some(other) => {
                if let Some(detail) = other.strip_prefix("shutdown:") {
                    ExitReason::Shutdown(Some(detail.to_owned()))
                } else {
                    // `failure:` is what `as_stop_reason` writes; any other string (ractor's
                    // "killed", a user's own reason) is a failure as it stands.
                    ExitReason::Failure(other.strip_prefix(FAILURE_PREFIX).unwrap_or(other).to_owned())
                }
            }
        }
    }

    /// The reason string to pass to `ActorCell::stop` so that a supervisor reads this
    /// exit back unchanged.
    pub fn as_stop_reason(&self) -> String {
        match self {
            ExitReason::Normal => NORMAL.to_owned(),
            ExitReason::Shutdown(None) => SHUTDOWN.to_owned(),
            ExitReason::Shutdown(Some(detail)) => format!("shutdown:{detail}"),
            // Prefixed so that a cause such as "normal" cannot be read back as a normal exit.
            ExitReason::Failure(cause) => format!("{FAILURE_PREFIX}{cause}"),
        }
    }

    /// Stops `actor` with this reason. A stop can only be sent once per actor (ractor takes
    /// the stop port), so a second call is silently ignored, as for ractor's own `stop`.
    pub fn stop(&self, actor: &ActorCell) {
        actor.stop(Some(self.as_stop_reason()));
    }

    /// Reads the exiting actor and its reason from a supervision event; `None` for events
    /// that are not exits.
    pub(crate) fn from_event(event: &SupervisionEvent) -> Option<(ActorId, ExitReason)> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                Some((cell.get_id(), ExitReason::from_stop_reason(reason.as_deref())))
            }
            SupervisionEvent::ActorFailed(cell, err) => Some((cell.get_id(), ExitReason::Failure(err.to_string()))),
            _ => None,
        }
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str(NORMAL),
            ExitReason::Shutdown(None) => f.write_str(SHUTDOWN),
            ExitReason::Shutdown(Some(detail)) => write!(f, "shutdown: {detail}"),
            ExitReason::Failure(cause) => write!(f, "failure: {cause}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_round_trip_and_only_failures_are_abnormal() {
        for reason in [
            ExitReason::Normal,
            ExitReason::Shutdown(None),
            ExitReason::Shutdown(Some("auto_shutdown".into())),
            ExitReason::Failure("boom".into()),
            ExitReason::Failure("normal".into()),
            ExitReason::Failure("shutdown:x".into()),
        ] {
            let back = ExitReason::from_stop_reason(Some(&reason.as_stop_reason()));
            assert_eq!(back, reason);
            assert_eq!(back.is_abnormal(), matches!(reason, ExitReason::Failure(_)));
        }
        assert_eq!(ExitReason::from_stop_reason(None), ExitReason::Normal);
        assert_eq!(ExitReason::from_stop_reason(Some("killed")), ExitReason::Failure("killed".into()));
    }
}

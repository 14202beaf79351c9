//! Terminating one child according to its [`Shutdown`] rule.
//!
//! ractor offers `stop` (graceful, runs `post_stop`) and `kill` (cancels at the next
//! `.await`, skips `post_stop`) but no "stop, wait, then kill". This module is that
//! procedure, shared by every supervisor kind. It does not decide *whether* to terminate.
//!
//! Invariant: when [`terminate`] returns, the child's status is `Stopped` (unless it is
//! stuck in synchronous code, which nothing in tokio can interrupt).

use ractor::ActorCell;

use crate::exit::SHUTDOWN;
use crate::supervisor::child_spec::Shutdown;

/// How a termination ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Terminated {
    /// The child stopped by itself within its timeout; its `post_stop` ran.
    Gracefully,
    /// The child was killed (brutal kill, or still alive when its timeout ran out).
    Killed,
}

/// Stops `child` per `rule` and waits until it has stopped.
pub(crate) async fn terminate(child: &ActorCell, rule: Shutdown) -> Terminated {
    match rule {
        Shutdown::BrutalKill => kill(child).await,
        Shutdown::Timeout(limit) => {
            // `stop` fails when the stop port was already used (the child is stopping on its
            // own); waiting below covers that case too, bounded by the same timeout.
            child.stop(Some(SHUTDOWN.to_owned()));
            match child.wait(Some(limit)).await {
                Ok(()) => Terminated::Gracefully,
                Err(_) => kill(child).await,
            }
        }
        Shutdown::Infinity => {
            child.stop(Some(SHUTDOWN.to_owned()));
            let _ = child.wait(None).await;
            Terminated::Gracefully
        }
    }
}

async fn kill(child: &ActorCell) -> Terminated {
    child.kill();
    let _ = child.wait(None).await;
    Terminated::Killed
}

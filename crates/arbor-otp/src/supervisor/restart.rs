//! What a static supervisor does when a child exits: the restart types, the three
//! strategies, the intensity check and auto-shutdown, following OTP's `supervisor.erl`.
//!
//! Everything here runs inside the supervisor actor's handlers and may block it while
//! children are terminated and started, exactly as an OTP supervisor blocks. It does not
//! handle requests from handles (that is `admin.rs`).
//!
//! Invariant: each restart decision and each retry of a failed restart charges the
//! intensity window once; when it is exceeded, the supervisor terminates all children in
//! reverse order and then fails, so its own parent decides what happens next.

use ractor::{ActorProcessingErr, ActorRef};
use tokio::time::Instant;

use crate::exit::ExitReason;
use crate::shutdown::terminate;
use crate::supervisor::child_spec::{ChildStartError, Restart};
use crate::supervisor::strategy::{AutoShutdown, Strategy};
use crate::supervisor::{Slot, SupervisorMsg, SupervisorState};

/// The failure cause a supervisor exits with when its restart intensity is exceeded.
pub const REACHED_MAX_RESTART_INTENSITY: &str = "reached_max_restart_intensity";

impl SupervisorState {
    /// Starts (or restarts) the child at `pos` and records the result in its slot.
    pub(crate) async fn start_at(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        pos: usize,
    ) -> Result<(), ChildStartError> {
        let ctx = self.context(myself);
        let started = self.children[pos].spec.start_linked(ctx).await?;
        self.children[pos].slot = match started {
            Some(child) => Slot::Running(child),
            None => Slot::NotRunning,
        };
        Ok(())
    }

    /// Terminates every running child, last started first.
    pub(crate) async fn terminate_all(&mut self) {
        self.terminate_from(0).await;
    }

    /// Terminates the running children at positions `from..`, in reverse order.
    async fn terminate_from(&mut self, from: usize) {
        for record in self.children[from..].iter_mut().rev() {
            if let Slot::Running(child) = std::mem::replace(&mut record.slot, Slot::NotRunning) {
                terminate(&child.cell, record.spec.shutdown).await;
            }
        }
    }

    /// A linked child at `pos` exited on its own with `reason`.
    pub(crate) async fn child_exited(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        pos: usize,
        reason: ExitReason,
    ) -> Result<(), ActorProcessingErr> {
        let record = &mut self.children[pos];
        record.slot = Slot::NotRunning;
        let restart = match record.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => reason.is_abnormal(),
            Restart::Temporary => false,
        };
        if restart {
            let why = format!("exited: {reason}");
            return self.restart(myself, pos, why).await;
        }
        let significant = record.spec.significant;
        if record.spec.restart == Restart::Temporary {
            self.children.remove(pos);
        }
        if significant && self.auto_shutdown_due() {
            let reason = ExitReason::Shutdown(Some("auto_shutdown".to_owned()));
            self.shared.set_exit(reason.clone());
            reason.stop(&myself.get_cell());
        }
        Ok(())
    }

    /// OTP's auto-shutdown rule, checked after a significant child exited on its own.
    fn auto_shutdown_due(&self) -> bool {
        match self.auto_shutdown {
            AutoShutdown::Never => false,
            AutoShutdown::AnySignificant => true,
            AutoShutdown::AllSignificant => !self.children.iter().any(|c| c.spec.significant && c.is_active()),
        }
    }

    /// Charges the intensity window and restarts per strategy, with `pos` as the child
    /// that triggered it.
    async fn restart(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        pos: usize,
        why: String,
    ) -> Result<(), ActorProcessingErr> {
        let id = self.children[pos].spec.id.clone();
        if !self.window.charge(Instant::now()) {
            return Err(self.give_up(&id, &why).await);
        }
        crate::metrics::restarted(&self.name);
        self.history.record(&id, why);
        let from = match self.strategy {
            Strategy::OneForOne => {
                if let Err(err) = self.start_at(myself, pos).await {
                    self.retry_later(myself, pos, err);
                }
                return Ok(());
            }
            Strategy::OneForAll => 0,
            Strategy::RestForOne => pos,
        };
        // The triggering child keeps its position: only temporary children (which are
        // never restarted) are removed, and none of them can be the trigger.
        if let Some((failed, err)) = self.restart_from(myself, from).await {
            self.retry_later(myself, failed, err);
        }
        Ok(())
    }

    /// Terminates children `from..` (reverse order), drops the temporary ones, then starts
    /// the rest in order. Stops at the first start failure and returns its position.
    async fn restart_from(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        from: usize,
    ) -> Option<(usize, ChildStartError)> {
        self.terminate_from(from).await;
        let mut i = from;
        while i < self.children.len() {
            if self.children[i].spec.restart == Restart::Temporary {
                self.children.remove(i);
            } else {
                i += 1;
            }
        }
        for pos in from..self.children.len() {
            if let Err(err) = self.start_at(myself, pos).await {
                return Some((pos, err));
            }
        }
        None
    }

    /// Marks the child restarting and casts ourselves a retry, so requests and exit
    /// events queued meanwhile are seen before the next attempt.
    fn retry_later(&mut self, myself: &ActorRef<SupervisorMsg>, pos: usize, err: ChildStartError) {
        self.children[pos].slot = Slot::Restarting(err.to_string());
        let id = self.children[pos].spec.id.clone();
        self.shared.cast(myself, SupervisorMsg::TryAgainRestart(id));
    }

    /// Retries a failed restart; a no-op if the child was terminated, deleted or restarted
    /// by hand meanwhile.
    pub(crate) async fn try_again(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        id: &str,
    ) -> Result<(), ActorProcessingErr> {
        let Some(pos) = self.position(id) else { return Ok(()) };
        let Slot::Restarting(last_error) = &self.children[pos].slot else { return Ok(()) };
        let why = format!("restart failed: {last_error}");
        self.restart(myself, pos, why).await
    }

    /// Intensity exceeded: shut every child down in order and produce the error that makes
    /// this supervisor fail, escalating to its parent.
    async fn give_up(&mut self, id: &str, why: &str) -> ActorProcessingErr {
        tracing::warn!(supervisor = %self.name, child = id, reason = why, "restart intensity exceeded, shutting down");
        crate::metrics::escalated(&self.name);
        self.terminate_all().await;
        self.children.clear();
        let cause = format!("{REACHED_MAX_RESTART_INTENSITY} (last: child {id:?} {why})");
        self.shared.set_exit(ExitReason::Failure(cause.clone()));
        cause.into()
    }
}

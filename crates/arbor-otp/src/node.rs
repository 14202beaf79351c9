//! State a supervisor actor shares with its handles: mailbox depth and exit reason.
//!
//! ractor neither exposes mailbox lengths nor tells an actor's `post_stop` why it is
//! stopping, so each of our supervisors keeps these two facts in a small shared cell that
//! its handles read. It is bookkeeping only; no decision is taken from it.
//!
//! Invariant: the first recorded exit reason wins, so the specific reason set where the
//! decision was taken (escalation, auto-shutdown) is not overwritten by the generic one
//! `post_stop` records.

use std::sync::atomic::{AtomicIsize, Ordering};

use parking_lot::Mutex;
use ractor::rpc::CallResult;
use ractor::{ActorRef, RpcReplyPort};

use crate::exit::ExitReason;
use crate::supervisor::child_spec::ChildStartError;

#[derive(Debug, Default)]
pub(crate) struct NodeShared {
    /// Messages sent through handles and not yet picked up; can briefly go negative
    /// (a handler may decrement before the sender's increment is visible), so it is
    /// clamped when read.
    mailbox: AtomicIsize,
    exit: Mutex<Option<ExitReason>>,
    /// The id and error of the static child that failed this supervisor's start.
    start_error: Mutex<Option<(String, ChildStartError)>>,
}

impl NodeShared {
    pub(crate) fn enqueued(&self) {
        self.mailbox.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dequeued(&self) {
        self.mailbox.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn mailbox_depth(&self) -> usize {
        self.mailbox.load(Ordering::Relaxed).max(0) as usize
    }

    pub(crate) fn set_exit(&self, reason: ExitReason) {
        let mut exit = self.exit.lock();
        if exit.is_none() {
            *exit = Some(reason);
        }
    }

    pub(crate) fn exit(&self) -> Option<ExitReason> {
        self.exit.lock().clone()
    }

    /// Records a shutdown and asks the supervisor actor to stop, then waits for its exit.
    pub(crate) async fn shutdown(&self, cell: &ractor::ActorCell) -> ExitReason {
        self.set_exit(ExitReason::Shutdown(None));
        ExitReason::Shutdown(None).stop(cell);
        self.wait(cell).await
    }

    /// Waits until the supervisor actor has exited and returns why.
    pub(crate) async fn wait(&self, cell: &ractor::ActorCell) -> ExitReason {
        let _ = cell.wait(None).await;
        // Nothing recorded means the actor was killed (or crashed in our own code), and
        // then ractor killed the children without running their post_stop.
        self.exit().unwrap_or_else(|| ExitReason::Failure("killed".to_owned()))
    }

    pub(crate) fn set_start_error(&self, id: String, error: ChildStartError) {
        *self.start_error.lock() = Some((id, error));
    }

    pub(crate) fn take_start_error(&self) -> Option<(String, ChildStartError)> {
        self.start_error.lock().take()
    }

    /// Sends a request through the mailbox and waits for the reply; `None` when the actor
    /// is gone or dropped the request while stopping.
    pub(crate) async fn call<M, R>(
        &self,
        actor: &ActorRef<M>,
        timeout: Option<std::time::Duration>,
        build: impl FnOnce(RpcReplyPort<R>) -> M,
    ) -> Option<R>
    where
        M: ractor::Message,
        R: Send + 'static,
    {
        self.enqueued();
        match actor.call(build, timeout).await {
            Ok(CallResult::Success(reply)) => Some(reply),
            Ok(_) => None,
            Err(_) => {
                self.dequeued();
                None
            }
        }
    }

    /// Sends a message without waiting.
    pub(crate) fn cast<M: ractor::Message>(&self, actor: &ActorRef<M>, msg: M) {
        self.enqueued();
        if actor.cast(msg).is_err() {
            self.dequeued();
        }
    }
}

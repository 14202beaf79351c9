//! The static supervisor: an OTP `supervisor` built as a ractor actor.
//!
//! The actor owns an ordered list of child records. It starts the static children in order
//! inside `pre_start` (so `SupervisorHandle::start` returns only when all are up), applies
//! the restart strategy and intensity when a linked child exits (`restart.rs`), and in
//! `post_stop` terminates the children in reverse order, each per its shutdown rule. That
//! last step is why ractor's own behaviour (kill every descendant without `post_stop`)
//! never applies to a tree we built: by the time ractor looks, the children are gone.
//! It is not a process registry: children are reached through `which_children` or the
//! handle the start function published, never by global name.
//!
//! Invariants: every exit event is matched against the *current* actor id of a child, so
//! events from actors the supervisor terminated itself are ignored; and the supervisor
//! never finishes stopping while one of its children is still running.

mod admin;
pub(crate) mod child_spec;
pub(crate) mod handle;
pub(crate) mod intensity;
pub(crate) mod restart;
pub(crate) mod strategy;

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use crate::exit::ExitReason;
use crate::gauge::{Gauge, LiveToken};
use crate::node::NodeShared;
use crate::snapshot::{NodeSnapshot, Probe};
use crate::supervisor::child_spec::{ChildSpec, StartContext, StartedChild};
use crate::supervisor::handle::{
    ChildCounts, ChildInfo, DeleteChildError, RestartChildError, StartChildError, TerminateChildError,
};
use crate::supervisor::intensity::{IntensityWindow, RestartHistory};
use crate::supervisor::strategy::{AutoShutdown, Strategy, SupervisorSpec};

/// The closed set of requests a static supervisor handles.
pub(crate) enum SupervisorMsg {
    StartChild(ChildSpec, RpcReplyPort<Result<Option<ActorCell>, StartChildError>>),
    TerminateChild(String, RpcReplyPort<Result<(), TerminateChildError>>),
    RestartChild(String, RpcReplyPort<Result<Option<ActorCell>, RestartChildError>>),
    DeleteChild(String, RpcReplyPort<Result<(), DeleteChildError>>),
    WhichChildren(RpcReplyPort<Vec<ChildInfo>>),
    CountChildren(RpcReplyPort<ChildCounts>),
    Snapshot(RpcReplyPort<(NodeSnapshot, Vec<(usize, Probe)>)>),
    /// A restart failed; OTP casts itself this so it reads its inbox before retrying.
    TryAgainRestart(String),
}

pub(crate) struct SupervisorActor;

pub(crate) struct SupervisorArgs {
    pub(crate) spec: SupervisorSpec,
    pub(crate) gauge: Gauge,
    pub(crate) shared: Arc<NodeShared>,
}

/// Where a child stands.
pub(crate) enum Slot {
    Running(StartedChild),
    /// The last restart attempt failed (with this error) and a retry is queued.
    Restarting(String),
    NotRunning,
}

pub(crate) struct ChildRecord {
    pub(crate) spec: ChildSpec,
    pub(crate) slot: Slot,
}

impl ChildRecord {
    pub(crate) fn actor_id(&self) -> Option<ActorId> {
        match &self.slot {
            Slot::Running(child) => Some(child.cell.get_id()),
            _ => None,
        }
    }

    pub(crate) fn is_active(&self) -> bool {
        !matches!(self.slot, Slot::NotRunning)
    }
}

pub(crate) struct SupervisorState {
    pub(crate) name: String,
    pub(crate) strategy: Strategy,
    pub(crate) auto_shutdown: AutoShutdown,
    pub(crate) children: Vec<ChildRecord>,
    pub(crate) window: IntensityWindow,
    pub(crate) history: RestartHistory,
    pub(crate) gauge: Gauge,
    pub(crate) shared: Arc<NodeShared>,
    _live: LiveToken,
}

impl Actor for SupervisorActor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let SupervisorArgs { spec, gauge, shared } = args;
        let mut state = SupervisorState {
            name: spec.name,
            strategy: spec.strategy,
            auto_shutdown: spec.auto_shutdown,
            children: Vec::with_capacity(spec.children.len()),
            window: IntensityWindow::new(spec.intensity),
            history: RestartHistory::new(),
            _live: gauge.actor_token(),
            gauge,
            shared,
        };
        // Static children start left to right; the first failure undoes the ones already
        // started (in reverse order) and fails this supervisor's own start, as in OTP.
        for child in spec.children {
            state.children.push(ChildRecord { spec: child, slot: Slot::NotRunning });
            let pos = state.children.len() - 1;
            if let Err(err) = state.start_at(&myself, pos).await {
                let id = state.children[pos].spec.id.clone();
                let msg = format!("child {id:?} failed to start: {err}");
                state.terminate_all().await;
                state.shared.set_start_error(id, err);
                return Err(msg.into());
            }
            // A temporary child that answered `ignore` leaves no spec behind.
            if !state.children[pos].is_active() && state.children[pos].spec.restart == child_spec::Restart::Temporary {
                state.children.pop();
            }
        }
        Ok(state)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        state.terminate_all().await;
        state.shared.set_exit(ExitReason::Shutdown(None));
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        msg: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        state.shared.dequeued();
        match msg {
            SupervisorMsg::StartChild(spec, reply) => {
                let _ = reply.send(state.start_child(&myself, spec).await);
            }
            SupervisorMsg::TerminateChild(id, reply) => {
                let _ = reply.send(state.terminate_child(&id).await);
            }
            SupervisorMsg::RestartChild(id, reply) => {
                let _ = reply.send(state.restart_child(&myself, &id).await);
            }
            SupervisorMsg::DeleteChild(id, reply) => {
                let _ = reply.send(state.delete_child(&id));
            }
            SupervisorMsg::WhichChildren(reply) => {
                let _ = reply.send(state.which_children());
            }
            SupervisorMsg::CountChildren(reply) => {
                let _ = reply.send(state.count_children());
            }
            SupervisorMsg::Snapshot(reply) => {
                let _ = reply.send(state.snapshot(&myself.get_cell()));
            }
            SupervisorMsg::TryAgainRestart(id) => state.try_again(&myself, &id).await?,
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((actor, reason)) = ExitReason::from_event(&event) else { return Ok(()) };
        // Exits of actors we already terminated ourselves (or of a previous incarnation)
        // no longer match a running child and are ignored.
        let Some(pos) = state.children.iter().position(|c| c.actor_id() == Some(actor)) else { return Ok(()) };
        state.child_exited(&myself, pos, reason).await
    }
}

impl SupervisorState {
    pub(crate) fn context(&self, myself: &ActorRef<SupervisorMsg>) -> StartContext {
        StartContext { supervisor: myself.get_cell(), gauge: self.gauge.clone() }
    }

    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        self.children.iter().position(|c| c.spec.id == id)
    }
}

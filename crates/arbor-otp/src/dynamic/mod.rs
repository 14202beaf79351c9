//! The dynamic supervisor: Elixir's `DynamicSupervisor` as a ractor actor.
//!
//! Children are started on demand, are anonymous (keyed by an internal counter and their
//! ractor id, never by a registered name, so thousands can coexist) and have no order. The
//! restart types, restart intensity, failed-restart retries and per-child shutdown rules
//! are the same as for the static supervisor; the strategy is always one_for_one and, as in
//! OTP, shutdown signals all children at once, each still bounded by its own rule. It does
//! not support significant children or auto-shutdown (neither does Elixir's).
//!
//! Children are not linked to the supervisor's actor itself but to small holder actors
//! that hand their exits on (`links`), so the memory ractor keeps per linked child goes
//! away once the children have: thousands of connections come and go under one of these.
//!
//! Invariant: `max_children` counts every child the supervisor is responsible for,
//! including ones waiting for a restart retry, so the cap cannot be exceeded by restarts.

pub(crate) mod handle;
mod links;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::join_all;
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::time::Instant;

use crate::dynamic::handle::{StartDynamicChildError, TerminateDynamicChildError};
use crate::dynamic::links::Links;
use crate::exit::ExitReason;
use crate::gauge::{Gauge, LiveToken};
use crate::node::NodeShared;
use crate::shutdown::terminate;
use crate::snapshot::{NodeKind, NodeSnapshot, NodeStatus, Probe};
use crate::supervisor::child_spec::Shutdown;
use crate::supervisor::child_spec::{ChildKind, ChildSpec, Restart, StartContext};
use crate::supervisor::child_spec::{ChildStartError, SpecError};
use crate::supervisor::handle::{ChildCounts, ChildInfo};
use crate::supervisor::intensity::{IntensityWindow, RestartHistory};
use crate::supervisor::restart::REACHED_MAX_RESTART_INTENSITY;
use crate::supervisor::strategy::RestartIntensity;
use crate::supervisor::Slot;

/// Everything needed to start a dynamic supervisor.
#[derive(Debug, Clone, Default)]
pub struct DynamicSupervisorSpec {
    pub(crate) name: String,
    pub(crate) intensity: RestartIntensity,
    pub(crate) max_children: Option<usize>,
    pub(crate) gauge: Option<Gauge>,
}

impl DynamicSupervisorSpec {
    /// No cap on children and Elixir's default intensity (3 in 5 s).
    pub fn new(name: impl Into<String>) -> Self {
        DynamicSupervisorSpec { name: name.into(), ..Default::default() }
    }

    /// Sets the restart intensity.
    pub fn intensity(mut self, max_restarts: u32, period: std::time::Duration) -> Self {
        self.intensity = RestartIntensity { max_restarts, period };
        self
    }

    /// Refuses `start_child` with [`StartDynamicChildError::MaxChildren`] beyond `max`.
    pub fn max_children(mut self, max: usize) -> Self {
        self.max_children = Some(max);
        self
    }

    /// Uses `gauge` for this supervisor and its descendants.
    pub fn gauge(mut self, gauge: Gauge) -> Self {
        self.gauge = Some(gauge);
        self
    }
}

pub(crate) enum DynMsg {
    StartChild(ChildSpec, RpcReplyPort<Result<ActorCell, StartDynamicChildError>>),
    TerminateChild(ActorId, RpcReplyPort<Result<(), TerminateDynamicChildError>>),
    WhichChildren(RpcReplyPort<Vec<ChildInfo>>),
    CountChildren(RpcReplyPort<ChildCounts>),
    Snapshot(RpcReplyPort<(NodeSnapshot, Vec<(usize, Probe)>)>),
    TryAgainRestart(u64),
}

pub(crate) struct DynamicActor;

pub(crate) struct DynArgs {
    pub(crate) spec: DynamicSupervisorSpec,
    pub(crate) gauge: Gauge,
    pub(crate) shared: Arc<NodeShared>,
}

struct DynChild {
    spec: ChildSpec,
    slot: Slot,
}

pub(crate) struct DynState {
    name: String,
    max_children: Option<usize>,
    /// Keyed by start order, so listings and snapshots come out in a stable order.
    children: BTreeMap<u64, DynChild>,
    /// Running children by actor: their key in `children` and the generation of the
    /// holder they are linked to.
    by_actor: HashMap<ActorId, (u64, u64)>,
    links: Links,
    next_key: u64,
    window: IntensityWindow,
    history: RestartHistory,
    gauge: Gauge,
    shared: Arc<NodeShared>,
    _live: LiveToken,
}

impl Actor for DynamicActor {
    type Msg = DynMsg;
    type State = DynState;
    type Arguments = DynArgs;

    async fn pre_start(&self, _myself: ActorRef<DynMsg>, args: DynArgs) -> Result<DynState, ActorProcessingErr> {
        let DynArgs { spec, gauge, shared } = args;
        Ok(DynState {
            name: spec.name,
            max_children: spec.max_children,
            children: BTreeMap::new(),
            by_actor: HashMap::new(),
            links: Links::default(),
            next_key: 0,
            window: IntensityWindow::new(spec.intensity),
            history: RestartHistory::new(),
            _live: gauge.actor_token(),
            gauge,
            shared,
        })
    }

    async fn post_stop(&self, _myself: ActorRef<DynMsg>, state: &mut DynState) -> Result<(), ActorProcessingErr> {
        state.terminate_all().await;
        state.shared.set_exit(ExitReason::Shutdown(None));
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<DynMsg>,
        msg: DynMsg,
        state: &mut DynState,
    ) -> Result<(), ActorProcessingErr> {
        state.shared.dequeued();
        match msg {
            DynMsg::StartChild(spec, reply) => {
                let _ = reply.send(state.start_child(&myself, spec).await);
            }
            DynMsg::TerminateChild(actor, reply) => {
                let _ = reply.send(state.terminate_child(actor).await);
            }
            DynMsg::WhichChildren(reply) => {
                let _ = reply.send(state.which_children());
            }
            DynMsg::CountChildren(reply) => {
                let _ = reply.send(state.count_children());
            }
            DynMsg::Snapshot(reply) => {
                let _ = reply.send(state.snapshot(&myself.get_cell()));
            }
            DynMsg::TryAgainRestart(key) => {
                if let Some(DynChild { slot: Slot::Restarting(err), spec }) = state.children.get(&key) {
                    let why = format!("restart failed: {err}");
                    let id = spec.id.clone();
                    state.restart(&myself, key, &id, why).await?;
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<DynMsg>,
        event: SupervisionEvent,
        state: &mut DynState,
    ) -> Result<(), ActorProcessingErr> {
        // Children's exits come through their holders; the holders' own exits directly.
        let Some((actor, reason)) = ExitReason::from_event(&event) else { return Ok(()) };
        if let Some((key, gen)) = state.forget_actor(&actor) {
            // The child has stopped, so its holder may go if it was its last.
            state.links.detach(gen);
            return state.child_exited(&myself, key, reason).await;
        }
        match state.links.lost(&actor) {
            Some(gen) => state.holder_lost(&myself, gen, reason).await,
            // A holder this supervisor stopped, or a child it already forgot.
            None => Ok(()),
        }
    }
}

impl DynState {
    /// Removes a child's actor from the index, giving the index's memory back once it is
    /// mostly empty: thousands of connections closing must not leave their table behind.
    /// Returns the child's key and its holder's generation; the caller detaches it from
    /// the holder once the child has stopped.
    fn forget_actor(&mut self, actor: &ActorId) -> Option<(u64, u64)> {
        let found = self.by_actor.remove(actor)?;
        if self.by_actor.capacity() > 64 && self.by_actor.len() < self.by_actor.capacity() / 4 {
            self.by_actor.shrink_to(2 * self.by_actor.len());
        }
        Some(found)
    }

    /// Applies the child's restart type after it exited with `reason`.
    async fn child_exited(
        &mut self,
        myself: &ActorRef<DynMsg>,
        key: u64,
        reason: ExitReason,
    ) -> Result<(), ActorProcessingErr> {
        let Some(child) = self.children.get_mut(&key) else { return Ok(()) };
        child.slot = Slot::NotRunning;
        let restart = match child.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => reason.is_abnormal(),
            Restart::Temporary => false,
        };
        if restart {
            let id = child.spec.id.clone();
            self.restart(myself, key, &id, format!("exited: {reason}")).await
        } else {
            self.children.remove(&key);
            Ok(())
        }
    }

    /// A holder exited without this supervisor stopping it: ractor killed the children
    /// linked to it, whose own exits went to the dead holder. Each is made sure to be
    /// stopped and handled as killed, so no exit is missed.
    async fn holder_lost(
        &mut self,
        myself: &ActorRef<DynMsg>,
        gen: u64,
        reason: ExitReason,
    ) -> Result<(), ActorProcessingErr> {
        let orphans: Vec<ActorId> = self.by_actor.iter().filter(|(_, (_, g))| *g == gen).map(|(id, _)| *id).collect();
        for actor in orphans {
            let Some((key, _)) = self.forget_actor(&actor) else { continue };
            if let Some(DynChild { slot: Slot::Running(child), .. }) = self.children.get(&key) {
                terminate(&child.cell, Shutdown::BrutalKill).await;
            }
            let why = ExitReason::Failure(format!("killed: its link holder exited ({reason})"));
            self.child_exited(myself, key, why).await?;
        }
        Ok(())
    }

    /// The context a child is started in: linked to a holder, not to this actor.
    async fn context(&mut self, myself: &ActorRef<DynMsg>) -> Result<(StartContext, u64), ChildStartError> {
        let (gen, holder) = self.links.holder(&myself.get_cell()).await?;
        Ok((StartContext { supervisor: holder, gauge: self.gauge.clone() }, gen))
    }

    async fn start_child(
        &mut self,
        myself: &ActorRef<DynMsg>,
        spec: ChildSpec,
    ) -> Result<ActorCell, StartDynamicChildError> {
        if spec.significant {
            return Err(StartDynamicChildError::InvalidSpec(SpecError::SignificantInDynamic(spec.id.clone())));
        }
        if let Some(max) = self.max_children {
            if self.children.len() >= max {
                return Err(StartDynamicChildError::MaxChildren(max));
            }
        }
        let (ctx, gen) = self.context(myself).await.map_err(StartDynamicChildError::StartFailed)?;
        let started = spec.start_linked(ctx).await.map_err(StartDynamicChildError::StartFailed)?;
        let child = started.ok_or(StartDynamicChildError::Ignored)?;
        let cell = child.cell.clone();
        let key = self.next_key;
        self.next_key += 1;
        self.by_actor.insert(cell.get_id(), (key, gen));
        self.links.attach(gen);
        self.children.insert(key, DynChild { spec, slot: Slot::Running(child) });
        Ok(cell)
    }

    async fn restart(
        &mut self,
        myself: &ActorRef<DynMsg>,
        key: u64,
        id: &str,
        why: String,
    ) -> Result<(), ActorProcessingErr> {
        if !self.window.charge(Instant::now()) {
            tracing::warn!(supervisor = %self.name, child = id, reason = %why, "restart intensity exceeded, shutting down");
            crate::metrics::escalated(&self.name);
            self.terminate_all().await;
            let cause = format!("{REACHED_MAX_RESTART_INTENSITY} (last: child {id:?} {why})");
            self.shared.set_exit(ExitReason::Failure(cause.clone()));
            return Err(cause.into());
        }
        crate::metrics::restarted(&self.name);
        self.history.record(id, why);
        if !self.children.contains_key(&key) {
            return Ok(());
        }
        let started = match self.context(myself).await {
            Ok((ctx, gen)) => self.children[&key].spec.start_linked(ctx).await.map(|s| s.map(|s| (s, gen))),
            Err(err) => Err(err),
        };
        let Some(child) = self.children.get_mut(&key) else { return Ok(()) };
        match started {
            Ok(Some((started, gen))) => {
                self.by_actor.insert(started.cell.get_id(), (key, gen));
                self.links.attach(gen);
                child.slot = Slot::Running(started);
            }
            Ok(None) => {
                self.children.remove(&key);
            }
            Err(err) => {
                child.slot = Slot::Restarting(err.to_string());
                self.shared.cast(myself, DynMsg::TryAgainRestart(key));
            }
        }
        Ok(())
    }

    async fn terminate_child(&mut self, actor: ActorId) -> Result<(), TerminateDynamicChildError> {
        let (key, gen) = self.forget_actor(&actor).ok_or(TerminateDynamicChildError::NotFound)?;
        if let Some(DynChild { spec, slot: Slot::Running(child) }) = self.children.remove(&key) {
            terminate(&child.cell, spec.shutdown).await;
        }
        // Only now: stopping its holder while the child ran would kill it, not by its rule.
        self.links.detach(gen);
        Ok(())
    }

    /// Stops all children at once, each bounded by its own shutdown rule, as OTP's
    /// dynamic supervisors do; there is no order among anonymous children. The holders
    /// go last, once nothing is linked to them any more.
    async fn terminate_all(&mut self) {
        self.by_actor.clear();
        let children = std::mem::take(&mut self.children);
        join_all(children.into_values().filter_map(|c| match c.slot {
            Slot::Running(child) => Some(async move {
                terminate(&child.cell, c.spec.shutdown).await;
            }),
            _ => None,
        }))
        .await;
        self.links.stop_all().await;
    }

    fn which_children(&self) -> Vec<ChildInfo> {
        self.children
            .values()
            .map(|c| ChildInfo {
                id: c.spec.id.clone(),
                actor: match &c.slot {
                    Slot::Running(child) => Some(child.cell.clone()),
                    _ => None,
                },
                status: if matches!(c.slot, Slot::Running(_)) { NodeStatus::Running } else { NodeStatus::Restarting },
                kind: c.spec.kind,
                restart: c.spec.restart,
                significant: false,
                handle: match &c.slot {
                    Slot::Running(child) => child.handle.clone(),
                    _ => None,
                },
            })
            .collect()
    }

    fn count_children(&self) -> ChildCounts {
        let mut counts = ChildCounts { specs: self.children.len(), ..ChildCounts::default() };
        for c in self.children.values() {
            counts.active += usize::from(matches!(c.slot, Slot::Running(_)));
            match c.spec.kind {
                ChildKind::Worker => counts.workers += 1,
                ChildKind::Supervisor => counts.supervisors += 1,
            }
        }
        counts
    }

    fn snapshot(&self, myself: &ActorCell) -> (NodeSnapshot, Vec<(usize, Probe)>) {
        let mut probes = Vec::new();
        let children: Vec<NodeSnapshot> = self
            .children
            .values()
            .enumerate()
            .map(|(i, c)| {
                let kind = match c.spec.kind {
                    ChildKind::Worker => NodeKind::Worker,
                    ChildKind::Supervisor => NodeKind::Supervisor,
                };
                let mut node = NodeSnapshot {
                    restart: Some(c.spec.restart),
                    ..NodeSnapshot::blank(c.spec.id.clone(), kind, NodeStatus::Restarting)
                };
                match &c.slot {
                    Slot::Running(child) => {
                        node.status = NodeStatus::Running;
                        node.actor_id = Some(child.cell.get_id().to_string());
                        node.name = child.cell.get_name();
                        if let Some(probe) = &child.probe {
                            probes.push((i, probe.clone()));
                        }
                    }
                    _ => node.status = NodeStatus::Restarting,
                }
                node
            })
            .collect();
        let node = NodeSnapshot {
            id: self.name.clone(),
            name: Some(self.name.clone()),
            actor_id: Some(myself.get_id().to_string()),
            kind: NodeKind::DynamicSupervisor,
            strategy: None,
            restart: None,
            status: NodeStatus::Running,
            uptime_ms: Some(self.history.uptime_ms()),
            restart_count: self.history.total(),
            recent_restarts: self.history.recent(),
            child_count: children.len(),
            mailbox_depth: Some(self.shared.mailbox_depth()),
            tasks: None,
            children,
        };
        (node, probes)
    }
}

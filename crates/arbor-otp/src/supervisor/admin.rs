//! Requests a static supervisor answers at run time: start, terminate, restart and
//! delete a child, `which_children`, `count_children` and its own snapshot node.
//!
//! These follow OTP's `supervisor` API one for one, including its error cases
//! (`already_present`, `running`, `restarting`, `not_found`). They never trigger
//! restarts and never charge the intensity window: a termination the supervisor performs
//! on request is not a failure.
//!
//! Invariant: a terminated temporary child's spec is deleted; any other spec survives
//! termination and can be restarted or deleted.

use ractor::{ActorCell, ActorRef};

use crate::shutdown::terminate;
use crate::snapshot::{NodeKind, NodeSnapshot, NodeStatus, Probe};
use crate::supervisor::child_spec::{ChildKind, ChildSpec, Restart};
use crate::supervisor::handle::{
    ChildCounts, ChildInfo, DeleteChildError, RestartChildError, StartChildError, TerminateChildError,
};
use crate::supervisor::strategy::AutoShutdown;
use crate::supervisor::{ChildRecord, Slot, SupervisorMsg, SupervisorState};

impl SupervisorState {
    pub(crate) async fn start_child(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        spec: ChildSpec,
    ) -> Result<Option<ActorCell>, StartChildError> {
        spec.validate(self.auto_shutdown != AutoShutdown::Never).map_err(StartChildError::InvalidSpec)?;
        if let Some(pos) = self.position(&spec.id) {
            return Err(match self.children[pos].slot {
                Slot::Running(_) => StartChildError::AlreadyStarted(spec.id),
                _ => StartChildError::AlreadyPresent(spec.id),
            });
        }
        let temporary = spec.restart == Restart::Temporary;
        self.children.push(ChildRecord { spec, slot: Slot::NotRunning });
        let pos = self.children.len() - 1;
        match self.start_at(myself, pos).await {
            Ok(()) => {
                let cell = match &self.children[pos].slot {
                    Slot::Running(child) => Some(child.cell.clone()),
                    _ => None,
                };
                if cell.is_none() && temporary {
                    self.children.pop();
                }
                Ok(cell)
            }
            Err(err) => {
                self.children.pop();
                Err(StartChildError::StartFailed(err))
            }
        }
    }

    pub(crate) async fn terminate_child(&mut self, id: &str) -> Result<(), TerminateChildError> {
        let pos = self.position(id).ok_or_else(|| TerminateChildError::NotFound(id.to_owned()))?;
        let record = &mut self.children[pos];
        if let Slot::Running(child) = std::mem::replace(&mut record.slot, Slot::NotRunning) {
            terminate(&child.cell, record.spec.shutdown).await;
        }
        if record.spec.restart == Restart::Temporary {
            self.children.remove(pos);
        }
        Ok(())
    }

    pub(crate) async fn restart_child(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        id: &str,
    ) -> Result<Option<ActorCell>, RestartChildError> {
        let pos = self.position(id).ok_or_else(|| RestartChildError::NotFound(id.to_owned()))?;
        match self.children[pos].slot {
            Slot::Running(_) => return Err(RestartChildError::Running(id.to_owned())),
            Slot::Restarting(_) => return Err(RestartChildError::Restarting(id.to_owned())),
            Slot::NotRunning => {}
        }
        self.start_at(myself, pos).await.map_err(RestartChildError::StartFailed)?;
        Ok(match &self.children[pos].slot {
            Slot::Running(child) => Some(child.cell.clone()),
            _ => None,
        })
    }

    pub(crate) fn delete_child(&mut self, id: &str) -> Result<(), DeleteChildError> {
        let pos = self.position(id).ok_or_else(|| DeleteChildError::NotFound(id.to_owned()))?;
        match self.children[pos].slot {
            Slot::Running(_) => Err(DeleteChildError::Running(id.to_owned())),
            Slot::Restarting(_) => Err(DeleteChildError::Restarting(id.to_owned())),
            Slot::NotRunning => {
                self.children.remove(pos);
                Ok(())
            }
        }
    }

    pub(crate) fn which_children(&self) -> Vec<ChildInfo> {
        self.children
            .iter()
            .map(|c| ChildInfo {
                id: c.spec.id.clone(),
                actor: match &c.slot {
                    Slot::Running(child) => Some(child.cell.clone()),
                    _ => None,
                },
                status: slot_status(&c.slot),
                kind: c.spec.kind,
                restart: c.spec.restart,
                significant: c.spec.significant,
                handle: match &c.slot {
                    Slot::Running(child) => child.handle.clone(),
                    _ => None,
                },
            })
            .collect()
    }

    pub(crate) fn count_children(&self) -> ChildCounts {
        let mut counts = ChildCounts { specs: self.children.len(), ..ChildCounts::default() };
        for c in &self.children {
            if matches!(c.slot, Slot::Running(_)) {
                counts.active += 1;
            }
            match c.spec.kind {
                ChildKind::Worker => counts.workers += 1,
                ChildKind::Supervisor => counts.supervisors += 1,
            }
        }
        counts
    }

    /// This node with worker children filled in, plus probes for the supervisor children
    /// (by position) that the handle will ask outside this actor.
    pub(crate) fn snapshot(&self, myself: &ActorCell) -> (NodeSnapshot, Vec<(usize, Probe)>) {
        let mut probes = Vec::new();
        let children = self
            .children
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (actor_id, name) = match &c.slot {
                    Slot::Running(child) => {
                        if let Some(probe) = &child.probe {
                            probes.push((i, probe.clone()));
                        }
                        (Some(child.cell.get_id().to_string()), child.cell.get_name())
                    }
                    _ => (None, None),
                };
                let kind = match c.spec.kind {
                    ChildKind::Worker => NodeKind::Worker,
                    ChildKind::Supervisor => NodeKind::Supervisor,
                };
                NodeSnapshot {
                    id: c.spec.id.clone(),
                    name,
                    actor_id,
                    restart: Some(c.spec.restart),
                    status: slot_status(&c.slot),
                    ..NodeSnapshot::blank(String::new(), kind, NodeStatus::NotRunning)
                }
            })
            .collect::<Vec<_>>();
        let node = NodeSnapshot {
            id: self.name.clone(),
            name: Some(self.name.clone()),
            actor_id: Some(myself.get_id().to_string()),
            kind: NodeKind::Supervisor,
            strategy: Some(self.strategy),
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

fn slot_status(slot: &Slot) -> NodeStatus {
    match slot {
        Slot::Running(_) => NodeStatus::Running,
        Slot::Restarting(_) => NodeStatus::Restarting,
        Slot::NotRunning => NodeStatus::NotRunning,
    }
}

//! Link holders: the actors a dynamic supervisor's children are linked to.
//!
//! ractor keeps each actor's linked children in a `HashMap` that grows to the most children
//! it ever had at once and never shrinks (unlinking removes an entry, it gives no capacity
//! back). Were a dynamic supervisor's children linked to the supervisor itself, one that
//! once held 10,000 connections would keep a 16,384-bucket table (about 540 KiB) for the
//! rest of its life. ractor cannot be asked to shrink it, so the table is made to die
//! instead: each child is linked to a *holder*, a small actor linked to the supervisor
//! that hands every exit it receives on to the supervisor (`notify_supervisor`, so exits
//! keep their priority over ordinary messages, as when the child was linked directly). A
//! holder takes at most [`LINKS_PER_HOLDER`] links over its life and then retires; a
//! retired holder is stopped once the last child linked to it is gone, and its table goes
//! with it. The supervisor's own table only ever holds holders.
//!
//! Holders are plumbing of their supervisor: they take no gauge token and do not appear in
//! snapshots or child listings. When the supervisor exits, ractor kills them with it, and
//! with them anything still linked to them (as it would kill directly linked children).
//!
//! Invariant: the supervisor stops a holder only once no child it still tracks is linked
//! to it (`live == 0`), so no exit it cares about can be lost; a holder that exits any
//! other way is reported by [`Links::lost`] and its children are handled as killed.

use std::collections::HashMap;

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::supervisor::child_spec::ChildStartError;

/// How many links one holder takes over its life. Its table then never exceeds 512
/// buckets (about 17 KiB), and a supervisor with 10,000 children has about 40 holders.
pub(crate) const LINKS_PER_HOLDER: usize = 256;

/// The holder actor: no messages, no state; it only hands supervision events on.
pub(crate) struct Holder;

/// A holder takes no messages; an uninhabited type makes that a compile-time fact.
pub(crate) enum NoMsg {}

impl Actor for Holder {
    type Msg = NoMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _myself: ActorRef<NoMsg>, _args: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(&self, _myself: ActorRef<NoMsg>, msg: NoMsg, _state: &mut ()) -> Result<(), ActorProcessingErr> {
        match msg {}
    }

    /// Hands exits on to the supervisor. A child's start is not: the supervisor ignores
    /// starts, and forwarding one per connection would cost a wake-up for nothing.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<NoMsg>,
        event: SupervisionEvent,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(event, SupervisionEvent::ActorStarted(_)) {
            myself.get_cell().notify_supervisor(event);
        }
        Ok(())
    }
}

struct Entry {
    cell: ActorCell,
    /// Children the supervisor tracks as running and linked to this holder.
    live: usize,
    /// Links handed out so far; at [`LINKS_PER_HOLDER`] the holder retires.
    taken: usize,
}

/// A dynamic supervisor's holders, keyed by a generation number.
#[derive(Default)]
pub(crate) struct Links {
    holders: HashMap<u64, Entry>,
    current: Option<u64>,
    next: u64,
}

impl Links {
    /// The holder the next child is to be linked to (its generation and cell), started
    /// linked to `supervisor` if the current one is used up (or gone).
    pub(crate) async fn holder(&mut self, supervisor: &ActorCell) -> Result<(u64, ActorCell), ChildStartError> {
        if let Some(gen) = self.current {
            let usable = self
                .holders
                .get(&gen)
                .is_some_and(|e| e.taken < LINKS_PER_HOLDER && e.cell.get_status() < ractor::ActorStatus::Stopping);
            if !usable {
                self.current = None;
                self.stop_if_idle(gen);
            }
        }
        let gen = match self.current {
            Some(gen) => gen,
            None => {
                let (actor, _) = Actor::spawn_linked(None, Holder, (), supervisor.clone())
                    .await
                    .map_err(|e| ChildStartError::Spawn(format!("link holder: {e}")))?;
                let gen = self.next;
                self.next += 1;
                self.holders.insert(gen, Entry { cell: actor.get_cell(), live: 0, taken: 0 });
                self.current = Some(gen);
                gen
            }
        };
        let entry = self.holders.get_mut(&gen).expect("the current holder is in the map");
        entry.taken += 1;
        Ok((gen, entry.cell.clone()))
    }

    /// A child linked to holder `gen` is now tracked as running.
    pub(crate) fn attach(&mut self, gen: u64) {
        if let Some(entry) = self.holders.get_mut(&gen) {
            entry.live += 1;
        }
    }

    /// A child linked to holder `gen` has stopped and is no longer tracked. Must not be
    /// called while that child may still run: stopping the holder would kill it.
    pub(crate) fn detach(&mut self, gen: u64) {
        if let Some(entry) = self.holders.get_mut(&gen) {
            entry.live = entry.live.saturating_sub(1);
        }
        if self.current != Some(gen) {
            self.stop_if_idle(gen);
        }
    }

    /// Stops holder `gen` if no tracked child is linked to it; forgotten first, so its
    /// exit is not taken for a loss.
    fn stop_if_idle(&mut self, gen: u64) {
        if self.holders.get(&gen).is_some_and(|e| e.live == 0) {
            if let Some(entry) = self.holders.remove(&gen) {
                entry.cell.stop(None);
            }
            if self.holders.capacity() > 64 && self.holders.len() < self.holders.capacity() / 4 {
                self.holders.shrink_to(2 * self.holders.len());
            }
        }
    }

    /// If `actor` is a holder the supervisor did not stop, forgets it and returns its
    /// generation: the children linked to it were killed with it.
    pub(crate) fn lost(&mut self, actor: &ActorId) -> Option<u64> {
        let gen = self.holders.iter().find(|(_, e)| e.cell.get_id() == *actor).map(|(gen, _)| *gen)?;
        self.holders.remove(&gen);
        if self.current == Some(gen) {
            self.current = None;
        }
        Some(gen)
    }

    /// Stops every holder and waits for them; called once the children are stopped.
    pub(crate) async fn stop_all(&mut self) {
        self.current = None;
        let holders = std::mem::take(&mut self.holders);
        futures::future::join_all(holders.into_values().map(|e| async move {
            let _ = e.cell.stop_and_wait(None, None).await;
        }))
        .await;
    }
}

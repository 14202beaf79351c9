//! A dynamic supervisor links its children to holder actors of bounded size, not to
//! itself, so the table ractor keeps per linked child goes away with the children: its own
//! actor only ever links a few holders. These cases check that the holders come and go
//! with the children and that no exit is missed on the way: an immediate failure, a
//! holder killed from outside, and a graceful terminate of a retired holder's last child.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::ractor::{Actor, ActorProcessingErr, ActorRef};
use arbor_otp::{ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, ExitReason, Gauge, Restart, Started};

use crate::support::*;

/// Links one holder takes over its life (`dynamic::links::LINKS_PER_HOLDER`).
const PER_HOLDER: usize = 256;

/// The actors ractor has linked to the supervisor's own actor: its holders.
fn holders(dynsup: &DynamicSupervisorHandle) -> usize {
    dynsup.cell().get_children().len()
}

async fn settle_long() {
    for _ in 0..20 {
        settle().await;
    }
}

#[tokio::test(start_paused = true)]
async fn children_that_come_and_go_leave_at_most_one_holder_behind() {
    let gauge = Gauge::new();
    let log = Log::default();
    let dynsup =
        DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("conns").gauge(gauge.clone())).await.unwrap();
    for round in 0..3 {
        let mut cells = Vec::new();
        for _ in 0..2000 {
            cells.push(dynsup.start_child(worker("conn", &log).restart(Restart::Temporary)).await.unwrap());
        }
        // Linked directly, the supervisor's own actor would hold 2,000 links here.
        let at_peak = holders(&dynsup);
        assert!(at_peak <= 2000 / PER_HOLDER + 2, "round {round}: {at_peak} actors linked to the supervisor");
        for cell in &cells {
            send(cell, WorkerMsg::Exit(ExitReason::Normal));
        }
        settle_long().await;
        assert_eq!(dynsup.count_children().await.unwrap().specs, 0, "round {round}: every exit was seen");
        assert!(holders(&dynsup) <= 1, "round {round}: retired holders stop once empty");
        assert_eq!(gauge.alive_actors(), 1, "holders are not counted as actors of the tree");
    }
    dynsup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

/// Fails in `post_start` while `failures` is above zero (each failure uses one): an exit
/// that happens right after the child was started, before anything was asked of it.
struct Doomed {
    failures: Arc<AtomicUsize>,
    started: Arc<AtomicUsize>,
}

impl Actor for Doomed {
    type Msg = ();
    type State = arbor_otp::LiveToken;
    type Arguments = Gauge;

    async fn pre_start(&self, _me: ActorRef<()>, gauge: Gauge) -> Result<arbor_otp::LiveToken, ActorProcessingErr> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Ok(gauge.actor_token())
    }

    async fn post_start(&self, _me: ActorRef<()>, _s: &mut arbor_otp::LiveToken) -> Result<(), ActorProcessingErr> {
        if self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Err("failed right at start".into());
        }
        Ok(())
    }
}

fn doomed(failures: &Arc<AtomicUsize>, started: &Arc<AtomicUsize>) -> ChildSpec {
    let (failures, started) = (failures.clone(), started.clone());
    ChildSpec::new("doomed", move |ctx| {
        let actor = Doomed { failures: failures.clone(), started: started.clone() };
        async move {
            let (actor, _) = Actor::spawn_linked(None, actor, ctx.gauge().clone(), ctx.supervisor()).await?;
            Ok(Started::actor(actor))
        }
    })
}

#[tokio::test(start_paused = true)]
async fn failures_right_at_start_are_seen_across_holders() {
    let gauge = Gauge::new();
    let n = 3 * PER_HOLDER + 10;
    let spec = DynamicSupervisorSpec::new("d").intensity(10 * n as u32, Duration::from_secs(5)).gauge(gauge.clone());
    let dynsup = DynamicSupervisorHandle::start(spec).await.unwrap();
    let (failures, started) = (Arc::new(AtomicUsize::new(n)), Arc::new(AtomicUsize::new(0)));
    // Every permanent child fails once, right after its start: each failure is restarted.
    for _ in 0..n {
        dynsup.start_child(doomed(&failures, &started)).await.unwrap();
    }
    settle_long().await;
    assert_eq!(failures.load(Ordering::SeqCst), 0);
    assert_eq!(started.load(Ordering::SeqCst), 2 * n, "each child started again after its failure");
    let counts = dynsup.count_children().await.unwrap();
    assert_eq!((counts.specs, counts.active), (n, n));
    assert_eq!(gauge.alive_actors(), n + 1);
    // Temporary children that fail right at start are forgotten, and their holders go.
    failures.store(n, Ordering::SeqCst);
    let temporary = DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("t").gauge(gauge.clone())).await.unwrap();
    for _ in 0..n {
        temporary.start_child(doomed(&failures, &started).restart(Restart::Temporary)).await.unwrap();
    }
    settle_long().await;
    assert_eq!(temporary.count_children().await.unwrap().specs, 0);
    assert!(holders(&temporary) <= 1);
    temporary.shutdown().await;
    dynsup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_holder_killed_from_outside_counts_as_its_children_killed() {
    let gauge = Gauge::new();
    let log = Log::default();
    let n = PER_HOLDER + 44;
    let spec = DynamicSupervisorSpec::new("d").intensity(10 * n as u32, Duration::from_secs(5)).gauge(gauge.clone());
    let dynsup = DynamicSupervisorHandle::start(spec).await.unwrap();
    let mut first = Vec::new();
    for _ in 0..n {
        first.push(dynsup.start_child(worker("p", &log)).await.unwrap());
    }
    assert_eq!(holders(&dynsup), 2);
    for holder in dynsup.cell().get_children() {
        holder.kill();
    }
    settle_long().await;
    // Every permanent child was killed with its holder and restarted under a new one.
    assert!(first.iter().all(|cell| cell.get_status() == arbor_otp::ractor::ActorStatus::Stopped));
    let children = dynsup.which_children().await.unwrap();
    assert_eq!(children.len(), n);
    assert!(children.iter().all(|c| c.actor.as_ref().is_some_and(|a| !first.iter().any(|f| f.get_id() == a.get_id()))));
    assert_eq!(dynsup.snapshot().await.restart_count, n as u64);
    assert_eq!(gauge.alive_actors(), n + 1);
    // The restarted children still report their exits.
    for child in &children {
        send(child.actor.as_ref().unwrap(), WorkerMsg::Panic);
    }
    settle_long().await;
    assert_eq!(dynsup.count_children().await.unwrap().active, n);
    assert_eq!(dynsup.snapshot().await.restart_count, 2 * n as u64);
    dynsup.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn the_last_child_of_a_retired_holder_is_terminated_by_its_own_rule() {
    let gauge = Gauge::new();
    let log = Log::default();
    let dynsup = DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("d").gauge(gauge.clone())).await.unwrap();
    let mut cells = Vec::new();
    for i in 0..=PER_HOLDER {
        cells.push(dynsup.start_child(worker(&format!("w{i}"), &log).restart(Restart::Temporary)).await.unwrap());
    }
    // The first holder is retired (full); terminating its children one by one, the last
    // one must still stop gracefully: its holder may only go once it has stopped.
    for cell in &cells[..PER_HOLDER] {
        dynsup.terminate_child(cell).await.unwrap();
    }
    settle_long().await;
    let stops = log.entries().iter().filter(|e| e.starts_with("stop ")).count();
    assert_eq!(stops, PER_HOLDER, "every terminated child ran its post_stop");
    assert!(log.entries().contains(&format!("stop w{}", PER_HOLDER - 1)));
    assert_eq!(holders(&dynsup), 1, "the retired holder went once empty");
    dynsup.shutdown().await;
    assert_eq!(log.entries().iter().filter(|e| e.starts_with("stop ")).count(), PER_HOLDER + 1);
    assert_no_leaks(&gauge).await;
}

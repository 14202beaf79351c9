//! Task supervisors: every task's single outcome (completed, failed, panicked, timed out,
//! cancelled, shutdown), the concurrency bound, and blocking work.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{
    CancellationToken, ChildSpec, Gauge, SpawnError, SupervisorHandle, SupervisorSpec, TaskOptions, TaskOutcome,
    TaskSupervisor, TaskSupervisorSpec,
};

use crate::support::*;

type Outcome = TaskOutcome<u32, String>;

async fn start(gauge: &Gauge, spec: TaskSupervisorSpec) -> TaskSupervisor {
    TaskSupervisor::start(spec.gauge(gauge.clone())).await.unwrap()
}

async fn forever() -> Result<u32, String> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn completed_failed_and_panicked_work_is_reported_as_such() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t")).await;
    let ok: Outcome = tasks.spawn(async { Ok(7) }).unwrap().await;
    assert_eq!(ok, TaskOutcome::Completed(7));
    let failed: Outcome = tasks.spawn(async { Err("nope".to_owned()) }).unwrap().await;
    assert_eq!(failed, TaskOutcome::Failed("nope".into()));
    let panicked: Outcome = tasks
        .spawn(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            panic!("handler blew up")
        })
        .unwrap()
        .await;
    assert_eq!(panicked, TaskOutcome::Panicked("handler blew up".into()));
    let stats = tasks.stats();
    assert_eq!((stats.completed, stats.failed, stats.panicked), (1, 1, 1));
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_past_its_deadline_is_stopped_and_reported_timed_out() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t").default_deadline(Duration::from_secs(30))).await;
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = DropFlag(dropped.clone());
    let slow = tasks
        .spawn_with(TaskOptions::deadline(Duration::from_secs(1)), async move {
            let _guard = guard;
            forever().await
        })
        .unwrap();
    assert_eq!(slow.await, TaskOutcome::TimedOut);
    assert!(dropped.load(Ordering::SeqCst), "the work's future was dropped");
    // The supervisor's default deadline applies when none is given.
    assert_eq!(tasks.spawn(forever()).unwrap().await, TaskOutcome::TimedOut);
    assert_eq!(tasks.in_flight(), 0);
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn cancel_is_a_message_any_clone_of_the_task_ref_can_send() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t")).await;
    let handle = tasks.spawn(forever()).unwrap();
    let remote = handle.task_ref().clone();
    settle().await;
    remote.cancel().unwrap();
    remote.cancel().unwrap(); // A second cancel coalesces with the first.
    assert_eq!(handle.await, TaskOutcome::Cancelled);
    assert!(remote.is_finished());
    assert!(remote.cancel().is_err());
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn tasks_are_monitored_not_linked_to_their_caller() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t")).await;
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let handle = tasks
        .spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            flag.store(true, Ordering::SeqCst);
            Ok::<_, ()>(())
        })
        .unwrap();
    drop(handle); // The caller goes away; the task carries on.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(tasks.stats().completed, 1);
    // And a panicking task does not take the caller down: we are still here.
    let _ = tasks.spawn(async { panic!("only the task dies") as Result<(), ()> }).unwrap().await;
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn beyond_the_concurrency_bound_spawn_is_refused_at_once() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t").max_concurrency(2)).await;
    let a = tasks.spawn(forever()).unwrap();
    let _b = tasks.spawn(forever()).unwrap();
    assert_eq!(tasks.spawn(forever()).unwrap_err(), SpawnError::Overloaded { max: 2 });
    a.cancel().unwrap();
    assert_eq!(a.await, TaskOutcome::Cancelled);
    // The slot is free as soon as the outcome is delivered.
    let _c = tasks.spawn(forever()).unwrap();
    assert_eq!(tasks.stats().refused, 1);
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_every_in_flight_task_a_shutdown_outcome_and_refuses_new_ones() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t")).await;
    let handles: Vec<_> = (0..10).map(|_| tasks.spawn(forever()).unwrap()).collect();
    tasks.shutdown().await;
    for h in handles {
        assert_eq!(h.await, TaskOutcome::Shutdown);
    }
    assert_eq!(tasks.spawn(forever()).unwrap_err(), SpawnError::ShuttingDown);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_grace_lets_short_tasks_finish_first() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t").shutdown_grace(Duration::from_secs(5))).await;
    let quick = tasks
        .spawn(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, String>(1)
        })
        .unwrap();
    let slow = tasks.spawn(forever()).unwrap();
    tasks.shutdown().await;
    assert_eq!(quick.await, TaskOutcome::Completed(1));
    assert_eq!(slow.await, TaskOutcome::Shutdown);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_supervisor_in_a_tree_stops_its_tasks_when_the_tree_shuts_down() {
    let gauge = Gauge::new();
    let root = SupervisorSpec::new("root")
        .gauge(gauge.clone())
        .child(ChildSpec::task_supervisor("requests", TaskSupervisorSpec::new("requests")));
    let sup = SupervisorHandle::start(root).await.unwrap();
    let tasks = sup.child_handle::<TaskSupervisor>("requests").await.unwrap();
    let handle = tasks.spawn(forever()).unwrap();
    assert_eq!(gauge.alive_tasks(), 1);
    sup.shutdown().await;
    assert_eq!(handle.await, TaskOutcome::Shutdown);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn killing_the_task_supervisor_still_reports_shutdown_to_awaiters() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t")).await;
    let handle = tasks.spawn(forever()).unwrap();
    tasks.cell().kill();
    assert_eq!(handle.await, TaskOutcome::Shutdown);
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn blocking_work_cannot_hold_the_deadline_hostage() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t").max_concurrency(1)).await;
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let seen = saw_cancel.clone();
    let handle = tasks
        .spawn_blocking(TaskOptions::deadline(Duration::from_secs(1)), move |token| {
            // Blocks its thread until the test releases it, ignoring the deadline.
            release_rx.recv().unwrap();
            seen.store(token.is_cancelled(), Ordering::SeqCst);
            Ok::<u32, String>(1)
        })
        .unwrap();
    // While blocking work runs, tokio does not auto-advance a paused clock; move it by hand.
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(handle.await, TaskOutcome::TimedOut, "reported at the deadline while the closure is still blocked");
    // The runaway closure still holds its slot, so it counts against the bound.
    assert_eq!(tasks.spawn(forever()).unwrap_err(), SpawnError::Overloaded { max: 1 });
    release_tx.send(()).unwrap();
    while tasks.in_flight() > 0 {
        tokio::task::yield_now().await;
    }
    assert!(saw_cancel.load(Ordering::SeqCst), "the closure saw its cancel token set");

    // A cooperative closure stops early when cancelled.
    let handle = tasks
        .spawn_blocking(TaskOptions::default(), |token| {
            while !token.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err::<u32, String>("stopped early".into())
        })
        .unwrap();
    handle.cancel().unwrap();
    assert_eq!(handle.await, TaskOutcome::Cancelled);
    while tasks.in_flight() > 0 {
        tokio::task::yield_now().await;
    }
    let panicked =
        tasks.spawn_blocking(TaskOptions::default(), |_| -> Result<u32, String> { panic!("cpu work panicked") });
    assert_eq!(panicked.unwrap().await, TaskOutcome::Panicked("cpu work panicked".into()));
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

#[tokio::test(start_paused = true)]
async fn blocking_work_gets_a_cancellation_token_cancelled_only_when_dropped() {
    let gauge = Gauge::new();
    let tasks = start(&gauge, TaskSupervisorSpec::new("t")).await;

    // Past the deadline the closure's token is cancelled: the closure sees
    // `is_cancelled()` and async code holding a clone is woken by `cancelled()`.
    let (token_tx, token_rx) = tokio::sync::oneshot::channel::<CancellationToken>();
    let (saw_tx, saw_rx) = tokio::sync::oneshot::channel::<bool>();
    let handle = tasks
        .spawn_blocking(TaskOptions::deadline(Duration::from_secs(1)), move |token: CancellationToken| {
            token_tx.send(token.clone()).unwrap();
            while !token.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            saw_tx.send(token.is_cancelled()).unwrap();
            Err::<u32, String>("stopped at the deadline".into())
        })
        .unwrap();
    let token = token_rx.await.unwrap();
    assert!(!token.is_cancelled(), "not cancelled before the deadline");
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(handle.await, TaskOutcome::TimedOut);
    assert!(token.is_cancelled(), "cancelled by the time the outcome is reported");
    token.cancelled().await;
    assert!(saw_rx.await.unwrap(), "the closure saw is_cancelled()");
    while tasks.in_flight() > 0 {
        tokio::task::yield_now().await;
    }

    // Work that completes is not dropped: its token stays uncancelled.
    let handle = tasks.spawn_blocking(TaskOptions::default(), Ok::<CancellationToken, String>).unwrap();
    let TaskOutcome::Completed(token) = handle.await else { panic!("the closure completed") };
    assert!(!token.is_cancelled(), "completion does not cancel the token");
    tasks.shutdown().await;
    assert_no_leaks(&gauge).await;
}

struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

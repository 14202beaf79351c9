//! `start_reporting`: the work's first poll runs on the caller's task. Work ready at once
//! is reported before the call returns (slot released, counted as completed, no task
//! left); work that is not goes on as a spawned task with every guarantee of
//! `spawn_reporting`: its wakers still fire, and the deadline, cancel and shutdown reach it.

use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{Gauge, SpawnError, TaskOptions, TaskOutcome, TaskSupervisor, TaskSupervisorSpec};
use parking_lot::Mutex;
use tokio::sync::oneshot;

type Outcome = TaskOutcome<u32, String>;

/// Starts `work`; the outcome lands in the returned slot when reported.
fn start(
    tasks: &TaskSupervisor,
    options: TaskOptions,
    work: impl std::future::Future<Output = Result<u32, String>> + Send + 'static,
) -> (arbor_otp::TaskRef, Arc<Mutex<Vec<Outcome>>>) {
    let reported: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let into = reported.clone();
    let task = tasks.start_reporting(options, |_| work, move |outcome: Outcome| into.lock().push(outcome)).unwrap();
    (task, reported)
}

/// Waits (bounded, paused clock) until `slot` holds an outcome.
async fn reported(slot: &Mutex<Vec<Outcome>>) -> Outcome {
    for _ in 0..10_000 {
        if let Some(outcome) = slot.lock().first().cloned() {
            return outcome;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("no outcome reported");
}

#[tokio::test(start_paused = true)]
async fn work_ready_at_its_first_poll_is_reported_before_the_call_returns() {
    let gauge = Gauge::new();
    let tasks = TaskSupervisor::start(TaskSupervisorSpec::new("t").gauge(gauge.clone())).await.unwrap();
    let (task, done) = start(&tasks, TaskOptions::default(), async { Ok(7) });
    assert_eq!(*done.lock(), vec![TaskOutcome::Completed(7)]);
    assert!(task.is_finished());
    let (_, failed) = start(&tasks, TaskOptions::default(), async { Err("no".to_owned()) });
    assert_eq!(*failed.lock(), vec![TaskOutcome::Failed("no".into())]);
    // A panic in the first poll is caught there and reported, never raised to the caller.
    let (_, panicked) = start(&tasks, TaskOptions::default(), async { panic!("boom") });
    assert_eq!(*panicked.lock(), vec![TaskOutcome::Panicked("boom".into())]);
    assert_eq!(tasks.in_flight(), 0, "each slot was given back");
    let stats = tasks.stats();
    assert_eq!((stats.spawned, stats.completed, stats.failed, stats.panicked), (3, 1, 1, 1));
    tasks.shutdown().await;
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn work_not_ready_goes_on_as_a_task_under_every_guarantee() {
    let gauge = Gauge::new();
    let tasks = TaskSupervisor::start(TaskSupervisorSpec::new("t").gauge(gauge.clone())).await.unwrap();
    // The waker its first poll registered is replaced by the task's: the send wakes it.
    let (tx, rx) = oneshot::channel::<u32>();
    let (_, woken) = start(&tasks, TaskOptions::default(), async move { rx.await.map_err(|e| e.to_string()) });
    assert!(woken.lock().is_empty());
    assert_eq!(tasks.in_flight(), 1);
    tx.send(5).unwrap();
    assert_eq!(reported(&woken).await, TaskOutcome::Completed(5));
    // A timer armed in the first poll still fires: the deadline.
    let (_, timed_out) = start(&tasks, TaskOptions::deadline(Duration::from_secs(1)), std::future::pending());
    assert_eq!(reported(&timed_out).await, TaskOutcome::TimedOut);
    let (task, cancelled) = start(&tasks, TaskOptions::default(), std::future::pending());
    task.cancel().unwrap();
    assert_eq!(reported(&cancelled).await, TaskOutcome::Cancelled);
    let (_, stopped) = start(&tasks, TaskOptions::default(), std::future::pending());
    tasks.shutdown().await;
    assert_eq!(reported(&stopped).await, TaskOutcome::Shutdown);
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test]
async fn a_refused_start_never_polls_nor_reports() {
    let tasks =
        TaskSupervisor::start(TaskSupervisorSpec::new("t").max_concurrency(1).gauge(Gauge::new())).await.unwrap();
    let (_held, _) = start(&tasks, TaskOptions::default(), std::future::pending());
    let polled = Arc::new(Mutex::new(false));
    let (flag, was) = (Arc::new(Mutex::new(false)), polled.clone());
    let report = flag.clone();
    let made = Arc::new(Mutex::new(false));
    let making = made.clone();
    let refused = tasks.start_reporting(
        TaskOptions::default(),
        move |_| {
            *making.lock() = true;
            async move {
                *was.lock() = true;
                Ok::<u32, String>(1)
            }
        },
        move |_| *report.lock() = true,
    );
    assert_eq!(refused.err(), Some(SpawnError::Overloaded { max: 1 }));
    assert!(!*made.lock() && !*polled.lock() && !*flag.lock(), "a refused start never makes its work");
    tasks.shutdown().await;
}

/// The work is made with the task's own handle: it can cancel itself through it (as a
/// request whose exchange closed does), and ends `Cancelled` like any other cancel.
#[tokio::test(start_paused = true)]
async fn the_work_is_made_with_its_own_handle_and_can_cancel_itself() {
    let tasks = TaskSupervisor::start(TaskSupervisorSpec::new("t").gauge(Gauge::new())).await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let reported: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let into = reported.clone();
    let given = Arc::new(Mutex::new(None));
    let keep = given.clone();
    let task = tasks
        .start_reporting(
            TaskOptions::default(),
            move |me: &arbor_otp::TaskRef| {
                let me = me.clone();
                *keep.lock() = Some(me.clone());
                async move {
                    let _ = rx.await;
                    let _ = me.cancel();
                    std::future::pending::<Result<u32, String>>().await
                }
            },
            move |outcome: Outcome| into.lock().push(outcome),
        )
        .unwrap();
    assert_eq!(given.lock().as_ref().map(|t| t.id()), Some(task.id()), "the handle given is the task's own");
    assert!(reported.lock().is_empty());
    tx.send(()).unwrap();
    assert_eq!(self::reported(&reported).await, Outcome::Cancelled);
    tasks.shutdown().await;
}

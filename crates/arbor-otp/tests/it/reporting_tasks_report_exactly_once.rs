//! `spawn_reporting`: the outcome goes to a callback on the task instead of an awaited
//! handle, exactly once, after the task counts as finished; and `start_linked` puts a task
//! supervisor under an actor that is not one of ours.

use std::sync::Arc;
use std::time::Duration;

use arbor_otp::{Gauge, SpawnError, TaskOptions, TaskOutcome, TaskRef, TaskSupervisor, TaskSupervisorSpec};
use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

type Outcome = TaskOutcome<u32, String>;

/// Spawns `work` and returns its ref plus a receiver of (outcome, finished-when-reported).
fn spawn(
    tasks: &TaskSupervisor,
    options: TaskOptions,
    work: impl std::future::Future<Output = Result<u32, String>> + Send + 'static,
) -> (TaskRef, oneshot::Receiver<(Outcome, bool)>) {
    let (tx, rx) = oneshot::channel();
    let slot: Arc<Mutex<Option<TaskRef>>> = Arc::default();
    let seen = slot.clone();
    let task = tasks
        .spawn_reporting(options, work, move |outcome: Outcome| {
            let finished = seen.lock().as_ref().is_some_and(TaskRef::is_finished);
            let _ = tx.send((outcome, finished));
        })
        .unwrap();
    *slot.lock() = Some(task.clone());
    (task, rx)
}

#[tokio::test(start_paused = true)]
async fn every_way_a_task_ends_is_reported_once_after_it_finished() {
    let gauge = Gauge::new();
    let tasks = TaskSupervisor::start(TaskSupervisorSpec::new("r").gauge(gauge.clone())).await.unwrap();
    let (_, done) = spawn(&tasks, TaskOptions::default(), async {
        tokio::task::yield_now().await;
        Ok(1)
    });
    assert_eq!(done.await.unwrap(), (TaskOutcome::Completed(1), true));
    let (_, failed) = spawn(&tasks, TaskOptions::default(), async { Err("no".to_owned()) });
    assert_eq!(failed.await.unwrap().0, TaskOutcome::Failed("no".into()));
    let (_, panicked) = spawn(&tasks, TaskOptions::default(), async { panic!("boom") });
    assert_eq!(panicked.await.unwrap().0, TaskOutcome::Panicked("boom".into()));
    let (_, timed_out) = spawn(&tasks, TaskOptions::deadline(Duration::from_secs(1)), std::future::pending());
    assert_eq!(timed_out.await.unwrap(), (TaskOutcome::TimedOut, true));
    let (task, cancelled) = spawn(&tasks, TaskOptions::default(), std::future::pending());
    task.cancel().unwrap();
    assert_eq!(cancelled.await.unwrap(), (TaskOutcome::Cancelled, true));
    let (_, stopped) = spawn(&tasks, TaskOptions::default(), std::future::pending());
    tasks.shutdown().await;
    assert_eq!(stopped.await.unwrap().0, TaskOutcome::Shutdown);
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

#[tokio::test]
async fn a_refused_spawn_never_reports() {
    let tasks =
        TaskSupervisor::start(TaskSupervisorSpec::new("r").max_concurrency(1).gauge(Gauge::new())).await.unwrap();
    let (_held, _rx) = spawn(&tasks, TaskOptions::default(), std::future::pending());
    let reported = Arc::new(Mutex::new(false));
    let flag = reported.clone();
    let refused = tasks.spawn_reporting(TaskOptions::default(), async { Ok::<u32, String>(1) }, move |_| {
        *flag.lock() = true;
    });
    assert_eq!(refused.err(), Some(SpawnError::Overloaded { max: 1 }));
    assert!(!*reported.lock());
    tasks.shutdown().await;
}

struct Owner;

impl Actor for Owner {
    type Msg = ();
    type State = TaskSupervisor;
    type Arguments = Gauge;

    async fn pre_start(&self, myself: ActorRef<()>, gauge: Gauge) -> Result<TaskSupervisor, ActorProcessingErr> {
        Ok(TaskSupervisor::start_linked(TaskSupervisorSpec::new("owned").gauge(gauge), myself.get_cell()).await?)
    }

    async fn post_stop(&self, _: ActorRef<()>, tasks: &mut TaskSupervisor) -> Result<(), ActorProcessingErr> {
        tasks.shutdown().await;
        Ok(())
    }
}

#[tokio::test]
async fn a_linked_task_supervisor_is_a_child_of_its_owner_and_stops_in_its_post_stop() {
    let gauge = Gauge::new();
    let (owner, join) = Actor::spawn(None, Owner, gauge.clone()).await.unwrap();
    let children = owner.get_children();
    assert_eq!(children.len(), 1);
    assert_eq!(gauge.alive_actors(), 1);
    owner.stop(None);
    join.await.unwrap();
    assert_eq!((gauge.alive_actors(), gauge.alive_tasks()), (0, 0));
}

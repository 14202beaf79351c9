//! Side-by-side costs of the supervision layer and the bare primitives it is built on.
//!
//! - `spawn_stop/*`: a supervised temporary child started and terminated through a
//!   dynamic supervisor (and through a static one) vs a bare ractor spawn + stop.
//! - `task_round_trip/*`: a TaskSupervisor round trip (spawn, complete, deliver the
//!   outcome) vs a bare `tokio::spawn` + oneshot.
//!
//! Each is measured on a current-thread runtime and on the multi-thread runtime. On the
//! multi-thread runtime the measuring loop itself runs in a spawned task, as a connection
//! actor spawning request tasks would. Run with
//! `cargo bench -p arbor-otp --bench otp -- --warm-up-time 1 --measurement-time 3`.

use std::future::Future;
use std::time::{Duration, Instant};

use arbor_otp::{
    ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, Restart, Shutdown, Started, SupervisorHandle,
    SupervisorSpec, TaskSupervisor, TaskSupervisorSpec,
};
use criterion::{criterion_group, criterion_main, Criterion};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::runtime::Runtime;

struct Noop;

impl Actor for Noop {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _me: ActorRef<()>, _args: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

fn noop_child() -> ChildSpec {
    ChildSpec::new("noop", |ctx| async move {
        let (actor, _) = Actor::spawn_linked(None, Noop, (), ctx.supervisor()).await?;
        Ok(Started::actor(actor))
    })
    .restart(Restart::Temporary)
    .shutdown(Shutdown::Timeout(Duration::from_secs(5)))
}

fn runtimes() -> [(&'static str, Runtime); 2] {
    let current = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let multi = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    [("current_thread", current), ("multi_thread", multi)]
}

/// Times `iters` runs of `one` inside the runtime (inside a spawned task, so that on the
/// multi-thread runtime the loop runs on a worker thread).
fn timed<S, F, Fut>(rt: &Runtime, iters: u64, setup: S, one: F) -> Duration
where
    S: Future + Send + 'static,
    S::Output: Clone + Send + 'static,
    F: Fn(S::Output) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    rt.block_on(async move {
        tokio::spawn(async move {
            let ctx = setup.await;
            let start = Instant::now();
            for _ in 0..iters {
                one(ctx.clone()).await;
            }
            start.elapsed()
        })
        .await
        .unwrap()
    })
}

fn spawn_stop(c: &mut Criterion) {
    for (name, rt) in runtimes() {
        let mut group = c.benchmark_group(format!("spawn_stop/{name}"));
        group.bench_function("bare_ractor_spawn_stop", |b| {
            b.iter_custom(|iters| {
                timed(&rt, iters, async {}, |()| async {
                    let (actor, _) = Actor::spawn(None, Noop, ()).await.unwrap();
                    actor.stop_and_wait(None, None).await.unwrap();
                })
            })
        });
        group.bench_function("dynamic_supervisor_temporary_child", |b| {
            b.iter_custom(|iters| {
                let setup =
                    async { DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("bench")).await.unwrap() };
                timed(&rt, iters, setup, |sup| async move {
                    let child = sup.start_child(noop_child()).await.unwrap();
                    sup.terminate_child(&child).await.unwrap();
                })
            })
        });
        group.bench_function("static_supervisor_temporary_child", |b| {
            b.iter_custom(|iters| {
                let setup = async { SupervisorHandle::start(SupervisorSpec::new("bench")).await.unwrap() };
                timed(&rt, iters, setup, |sup| async move {
                    sup.start_child(noop_child()).await.unwrap();
                    sup.terminate_child("noop").await.unwrap();
                })
            })
        });
        group.finish();
    }
}

fn task_round_trip(c: &mut Criterion) {
    for (name, rt) in runtimes() {
        let mut group = c.benchmark_group(format!("task_round_trip/{name}"));
        group.bench_function("bare_tokio_spawn_oneshot", |b| {
            b.iter_custom(|iters| {
                timed(&rt, iters, async {}, |()| async {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    tokio::spawn(async move {
                        let _ = tx.send(std::hint::black_box(1u32));
                    });
                    std::hint::black_box(rx.await.unwrap());
                })
            })
        });
        group.bench_function("task_supervisor", |b| {
            b.iter_custom(|iters| {
                let setup = async {
                    TaskSupervisor::start(TaskSupervisorSpec::new("bench").max_concurrency(1024)).await.unwrap()
                };
                timed(&rt, iters, setup, |tasks| async move {
                    let outcome = tasks.spawn(async { Ok::<_, ()>(std::hint::black_box(1u32)) }).unwrap().await;
                    std::hint::black_box(outcome.completed().unwrap());
                })
            })
        });
        group.bench_function("task_supervisor_with_deadline", |b| {
            b.iter_custom(|iters| {
                let setup = async {
                    TaskSupervisor::start(TaskSupervisorSpec::new("bench").default_deadline(Duration::from_secs(30)))
                        .await
                        .unwrap()
                };
                timed(&rt, iters, setup, |tasks| async move {
                    let outcome = tasks.spawn(async { Ok::<_, ()>(std::hint::black_box(1u32)) }).unwrap().await;
                    std::hint::black_box(outcome.completed().unwrap());
                })
            })
        });
        group.finish();
    }
}

criterion_group!(benches, spawn_stop, task_round_trip);
criterion_main!(benches);

//! Heap bytes a dynamic supervisor keeps once 10,000 children have come and gone, counted
//! by a global allocator of this test's own: what matters is memory, which no API shows.
//! Linked straight to the supervisor, ractor's table of its children would stay at 16,384
//! buckets (about 540 KiB); through holders, what stays is one small holder.
//!
//! A test binary of its own (not in `tests/it`), with a single test: the allocator counts
//! the whole process, so nothing else may run beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use arbor_otp::ractor::{Actor, ActorProcessingErr, ActorRef};
use arbor_otp::{ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, ExitReason, Gauge, Restart, Started};

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting the bytes it has handed out and not had back.
struct Counting;

// SAFETY: every call is forwarded to `System` with the caller's arguments unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A child that does nothing until told to stop.
struct Idle;

impl Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _me: ActorRef<()>, _args: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

fn idle() -> ChildSpec {
    ChildSpec::new("idle", |ctx| async move {
        let (actor, _) = Actor::spawn_linked(None, Idle, (), ctx.supervisor()).await?;
        Ok(Started::actor(actor))
    })
    .restart(Restart::Temporary)
}

/// Starts `n` children, then lets them all exit and waits until the supervisor has seen it.
async fn come_and_go(dynsup: &DynamicSupervisorHandle, n: usize) {
    let mut cells = Vec::with_capacity(n);
    for _ in 0..n {
        cells.push(dynsup.start_child(idle()).await.unwrap());
    }
    for cell in &cells {
        ExitReason::Normal.stop(cell);
    }
    for cell in &cells {
        cell.wait(None).await.unwrap();
    }
    drop(cells);
    while dynsup.count_children().await.unwrap().specs > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // The holders' own exits, after their children's.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
}

#[test]
fn ten_thousand_departed_children_leave_no_table_behind() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dynsup =
            DynamicSupervisorHandle::start(DynamicSupervisorSpec::new("conns").gauge(Gauge::new())).await.unwrap();
        // A first round, so whatever grows once per process (tokio's, ractor's) has grown.
        come_and_go(&dynsup, 1000).await;
        let before = ALLOCATED.load(Ordering::SeqCst);
        come_and_go(&dynsup, 10_000).await;
        let kept = ALLOCATED.load(Ordering::SeqCst) - before;
        // Directly linked, ractor's table alone would keep about 540 KiB.
        assert!(kept < 64 * 1024, "{kept} bytes kept after 10,000 children came and went");
        dynsup.shutdown().await;
    });
}

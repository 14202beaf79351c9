//! Giving a large reap's memory back to the system: what the reaper asks of glibc's malloc
//! once the endpoints of a sweep of at least `TRIM_AFTER` sessions have stopped. It is not an
//! allocator and configures none: on other allocators and platforms it does nothing, and
//! nothing here runs on a request's path.
//!
//! Two steps, both needed. `malloc_trim(0)` (on the blocking pool: it walks the heap) returns
//! every whole free page of every arena. But a page stays resident while any chunk on it is
//! in use, and to the arena a chunk in a thread's cache (glibc's tcache: up to seven freed
//! chunks per size class up to 1,032 bytes, kept for the thread's next `malloc`) is in use.
//! After a reap those cached chunks are the last ones the reaped sessions freed on the
//! thread, each on its own page somewhere in the range the sessions had used: measured with
//! 10,000 sessions, about 230 of them kept 1 MiB resident after the trim. So first the
//! reaper's thread swaps its cache out (`swap_thread_cache`): it takes the cached chunks,
//! allocates as many fresh ones (carved side by side from the arena's free space), caches
//! the fresh ones and frees the old ones into the arena, where the trim can return them.
//!
//! Only the calling thread's cache can be swapped (glibc offers no way to reach another
//! thread's); on a runtime with several workers the others' caches keep what they hold.
//! Invariant: every chunk `swap_thread_cache` takes is freed before it returns.

/// Asks glibc's malloc to return the free pages of a large reap to the system: swaps this
/// thread's cache out, then trims on the blocking pool. Without it a server that held
/// 10,000 sessions keeps their RSS after reaping (measured: 143 MiB kept where 1.2 MiB were
/// in use). Other allocators and platforms are left to their own policy.
pub(super) fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        swap_thread_cache();
        // SAFETY: malloc_trim only releases free memory and is thread-safe in glibc.
        drop(tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }));
    }
}

/// glibc's default `glibc.malloc.tcache_count`: chunks a thread caches per size class.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const CACHED_PER_CLASS: usize = 7;

/// glibc's cached size classes: requests of 24 + 16·k bytes for k below 64 (chunks of
/// 32 to 1,040 bytes, 16 apart; `glibc.malloc.tcache_max` is 1,032 by default).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const CLASSES: usize = 64;

/// Replaces the chunks this thread's malloc cache holds with fresh ones, and frees the old
/// ones into their arena. The cache is LIFO and full at seven: taking seven empties a class,
/// seven fresh ones freed first fill it again, so the old ones freed after find it full and
/// go back to the arena. At most 2 × 7 × 64 allocations of up to 1,032 bytes; all freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn swap_thread_cache() {
    type Taken = [[*mut libc::c_void; CACHED_PER_CLASS]; CLASSES];
    let mut old: Taken = [[std::ptr::null_mut(); CACHED_PER_CLASS]; CLASSES];
    let mut fresh: Taken = [[std::ptr::null_mut(); CACHED_PER_CLASS]; CLASSES];
    for (class, (old, fresh)) in old.iter_mut().zip(fresh.iter_mut()).enumerate() {
        let size = 24 + 16 * class;
        // Old first: these come out of the cache. Fresh ones then come from the arena.
        for chunk in old.iter_mut().chain(fresh.iter_mut()) {
            // SAFETY: malloc has no precondition; a null (out of memory) is freed as a no-op.
            *chunk = unsafe { libc::malloc(size) };
        }
    }
    for chunk in fresh.iter().chain(old.iter()).flatten() {
        // SAFETY: each pointer came from malloc above and is freed exactly once.
        unsafe { libc::free(*chunk) };
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// The chunks a thread freed before the swap are no longer what its `malloc` hands
    /// out: they went back to the arena (where a trim can return their pages).
    #[test]
    fn after_a_swap_the_threads_cache_no_longer_hands_out_chunks_freed_before_it() {
        // In a process of its own, this test alone: beside the harness's other tests a new
        // thread may share an arena with a live one, or get one a panicking thread left, and
        // glibc then moves chunks between that arena's bins and this thread's cache (it
        // failed about one run in thirty so).
        const ALONE: &str = "ARBOR_GIVE_BACK_TEST_ALONE";
        if std::env::var_os(ALONE).is_none() {
            let name =
                "legacy::give_back::tests::after_a_swap_the_threads_cache_no_longer_hands_out_chunks_freed_before_it";
            let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
                .args(["--exact", name, "--test-threads", "1"])
                .env(ALONE, "1")
                .output()
                .expect("the test binary runs again");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success() && stdout.contains("1 passed"),
                "alone, the test failed or did not run:\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            return;
        }
        // A thread of its own: its cache holds only what this test puts in it.
        std::thread::spawn(|| {
            const SIZE: usize = 200;
            let take = || -> Vec<usize> {
                // SAFETY: malloc has no precondition.
                (0..CACHED_PER_CLASS).map(|_| unsafe { libc::malloc(SIZE) } as usize).collect()
            };
            let free = |chunks: &[usize]| {
                for &chunk in chunks.iter().rev() {
                    // SAFETY: each came from malloc and is freed once.
                    unsafe { libc::free(chunk as *mut libc::c_void) };
                }
            };
            let cached = take();
            free(&cached);
            // Without a swap the cache hands the same chunks back: what the test relies on.
            let again = take();
            let mut sorted = (cached.clone(), again.clone());
            sorted.0.sort_unstable();
            sorted.1.sort_unstable();
            assert_eq!(sorted.0, sorted.1, "glibc's thread cache reuses the chunks just freed");
            free(&again);

            swap_thread_cache();
            let after = take();
            assert!(
                after.iter().all(|chunk| !cached.contains(chunk)),
                "a chunk cached before the swap was handed out after it"
            );
            free(&after);
        })
        .join()
        .unwrap();
    }
}

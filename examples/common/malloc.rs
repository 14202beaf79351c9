//! The shipped binaries' malloc settings (`demo_server`, `bench_server`): glibc's malloc
//! with one arena for every thread. It is these binaries' choice, made in their `main`
//! before any thread starts; the library crates configure no allocator for their users.
//!
//! Why: glibc gives each thread that contends for the lock its own arena, and a freed
//! chunk goes back to the arena it came from. After a server has held thousands of idle
//! sessions and reaped them, the free pages left in the worker threads' arenas stay
//! resident: measured with `scripts/bench-http` (three cycles of 10,000 sessions), the RSS
//! ended +6 to +11% above the warm start with the default arenas (+22% above the cold
//! start), and +2.0 to +2.4% with one (+8.6 to +9.4%). The reaper's `malloc_trim` then
//! returns the free pages of the one heap. The CPU per request was the same with one arena
//! as with the default ones (1.00 to 1.02); the figures: docs/benchmarks.md (issue 21).
//!
//! Nothing on other platforms or allocators (`--features mimalloc`), where
//! `glibc.malloc.arena_max` means nothing. `GLIBC_TUNABLES=glibc.malloc.arena_max=N` set by
//! an operator still wins: it is read before `main`, and this leaves it alone.

/// Sets glibc's `M_ARENA_MAX` to 1 unless the environment tunes it. Call first in `main`.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc")))]
    {
        let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.arena_max"));
        if !tuned {
            // SAFETY: mallopt only changes malloc's parameters; called before any other
            // thread exists, it races nothing.
            unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
        }
    }
}

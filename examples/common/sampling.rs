//! What the cluster benchmarks and the soak measure the same way: this process's CPU time,
//! a percentile of sorted samples, and a process's resident set. Not a harness: each
//! benchmark times its own loop.
//! Invariant: the CPU is `/proc/self/stat`'s user + system time, in its 10 ms ticks.

// Included by several binaries (`#[path]`), each using a part of it.
#![allow(dead_code)]

use std::time::Duration;

/// This process's CPU time so far (user + system), from `/proc/self/stat`.
pub fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The `p` percentile (0 to 1) of `sorted`, 0 when empty.
pub fn pct(sorted: &[u64], p: f64) -> u64 {
    sorted.get(((sorted.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(0)
}

/// A process's resident set in KiB (`VmRSS` of `/proc/PID/status`), 0 when unreadable.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

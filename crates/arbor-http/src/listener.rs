//! The accept loop's bounds: the cap on open connections (counted by a guard each
//! connection's task holds), the refusal a connection past the cap gets, the backoff when
//! `accept` itself fails, and the descriptor limit the cap's default is derived from.
//!
//! It is not the accept loop (`Bound::run` in `server.rs`) nor anything HTTP beyond the one
//! canned 503 written to a connection that is not served; requests are never seen here.
//!
//! Invariant: every accepted socket is either counted (a [`Slot`] lives exactly as long as
//! its connection's task) or refused and closed within [`LINGER`]; refusals in progress are
//! bounded by [`MAX_LINGERING`], and a failing `accept` never makes the loop spin or stop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How many seconds a refused client is told to wait (`Retry-After`).
const RETRY_AFTER_SECS: u64 = 1;
/// How long a refused connection may linger while its request is drained, so that closing
/// it sends a FIN (the client reads the 503) rather than a reset (it may not).
const LINGER: Duration = Duration::from_secs(1);
/// Refused connections lingering at once; past it a refusal is written and closed at once.
const MAX_LINGERING: usize = 32;
/// The most a lingering refusal reads (and discards) before it closes anyway.
const LINGER_BYTES: usize = 64 * 1024;

/// Descriptors kept out of the connection cap's default: for the process's own (runtime,
/// stdio, logs, files), its Redis connections and lingering refusals.
fn reserve(limit: u64) -> u64 {
    (limit / 10).max(128)
}

/// The default cap on open connections: the soft `RLIMIT_NOFILE` minus a reserve (at least
/// 16). Read when the server binds, after [`raise_fd_limit`].
pub(crate) fn default_max_connections() -> usize {
    let limit = fd_limit().map_or(1024, |(soft, _)| soft);
    usize::try_from(limit.saturating_sub(reserve(limit)).max(16)).unwrap_or(usize::MAX)
}

/// The soft and hard `RLIMIT_NOFILE`, where the platform tells.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn fd_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` through a valid pointer and reads nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0).then_some((limit.rlim_cur, limit.rlim_max))
}

/// The soft and hard `RLIMIT_NOFILE`, where the platform tells.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn fd_limit() -> Option<(u64, u64)> {
    None
}

/// Raises the soft `RLIMIT_NOFILE` to the hard one; the soft limit after it.
///
/// The soft default (1,024 on most Linux systems) exists for programs that still use
/// `select(2)`, which cannot watch a descriptor above 1,023; this process uses epoll, and
/// systemd's own advice is that such programs raise the soft limit to the hard one
/// themselves. Without it, a server's capacity would be a thousand connections however
/// much the administrator allowed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn raise_fd_limit() -> Option<u64> {
    let (soft, hard) = fd_limit()?;
    if soft >= hard {
        return Some(soft);
    }
    let limit = libc::rlimit { rlim_cur: hard, rlim_max: hard };
    // SAFETY: setrlimit reads one `rlimit` through a valid pointer.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    Some(if rc == 0 { hard } else { soft })
}

/// Raises the soft `RLIMIT_NOFILE` to the hard one; the soft limit after it.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn raise_fd_limit() -> Option<u64> {
    None
}

/// The open connections of one server and its cap.
#[derive(Debug)]
pub(crate) struct Connections {
    open: AtomicUsize,
    max: AtomicUsize,
    lingering: AtomicUsize,
}

impl Connections {
    pub(crate) fn new() -> Connections {
        Connections { open: AtomicUsize::new(0), max: AtomicUsize::new(usize::MAX), lingering: AtomicUsize::new(0) }
    }

    /// Sets the cap (when the server binds).
    pub(crate) fn set_max(&self, max: usize) {
        self.max.store(max.max(1), Ordering::Relaxed);
    }

    pub(crate) fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// Connections open now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// A slot for one more connection, or `None` at the cap.
    pub(crate) fn try_open(self: &Arc<Self>) -> Option<Slot> {
        let max = self.max();
        self.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)).ok()?;
        Some(Slot(self.clone()))
    }

    /// Answers a connection past the cap with 503, `Retry-After` and a JSON-RPC error, and
    /// closes it: after draining its request for at most [`LINGER`] while fewer than
    /// [`MAX_LINGERING`] others do, at once otherwise. Never waits.
    /// `answer` is [`refusal`]'s, made once per server.
    pub(crate) fn refuse(self: &Arc<Self>, mut tcp: TcpStream, answer: &[u8]) {
        // A fresh socket's send buffer takes a few hundred bytes whole.
        let written = tcp.try_write(answer).is_ok_and(|n| n == answer.len());
        drain_ready(&mut tcp);
        // Only a written answer is worth lingering for; the slot is taken only then.
        let lingering = written
            && self
                .lingering
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_LINGERING).then_some(n + 1))
                .is_ok();
        if !lingering {
            let _ = tcp.shutdown().now_or_never();
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(LINGER, async {
                tcp.shutdown().await?;
                let mut chunk = [0u8; 4096];
                let mut read = 0;
                while read < LINGER_BYTES {
                    match tcp.read(&mut chunk).await? {
                        0 => break,
                        n => read += n,
                    }
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            this.lingering.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Reads and discards what has already arrived (bounded), without waiting.
fn drain_ready(tcp: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    for _ in 0..LINGER_BYTES / chunk.len() {
        match tcp.try_read(&mut chunk) {
            Ok(n) if n > 0 => continue,
            _ => return,
        }
    }
}

/// The whole HTTP/1.1 answer to a connection past the cap of `max`.
pub(crate) fn refusal(max: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!("Service Unavailable: the server holds its maximum of {max} connections; retry later"),
        }
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {RETRY_AFTER_SECS}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One open connection: counted until dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Connections>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The pause after a failed `accept`: none for a failure of that one connection (it was
/// reset before we took it), doubling from 5 ms to 1 s while the process is out of
/// descriptors or memory, so the loop neither spins nor gives up.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    pause: Option<Duration>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MOST: Duration = Duration::from_secs(1);

    /// How long to wait after `err` before accepting again.
    pub(crate) fn after(&mut self, err: &std::io::Error) -> Duration {
        use std::io::ErrorKind;
        if matches!(err.kind(), ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted) {
            return Duration::ZERO;
        }
        let pause = self.pause.map_or(Self::FIRST, |p| (p * 2).min(Self::MOST));
        self.pause = Some(pause);
        pause
    }

    /// An `accept` succeeded.
    pub(crate) fn reset(&mut self) {
        self.pause = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_leaves_a_reserve() {
        assert_eq!(1024 - reserve(1024), 896);
        assert_eq!(20_000 - reserve(20_000), 18_000);
        assert!(default_max_connections() >= 16);
    }

    #[test]
    fn resource_errors_back_off_to_a_second_and_start_over_after_a_success() {
        let emfile = std::io::Error::from_raw_os_error(24);
        let mut backoff = Backoff::default();
        let pauses: Vec<_> = (0..10).map(|_| backoff.after(&emfile)).collect();
        assert_eq!(pauses[0], Duration::from_millis(5));
        assert_eq!(pauses[1], Duration::from_millis(10));
        assert_eq!(pauses[9], Duration::from_secs(1));
        let aborted = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
        assert_eq!(backoff.after(&aborted), Duration::ZERO);
        backoff.reset();
        assert_eq!(backoff.after(&emfile), Duration::from_millis(5));
    }

    #[test]
    fn the_refusal_is_one_whole_http_answer() {
        let text = String::from_utf8(refusal(7)).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains("retry-after: 1\r\n"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"]["code"], -32000);
    }
}

//! Who may open another legacy session: the global cap (`max_sessions`, lowered by the
//! memory budget) and the per-peer cap (`max_sessions_per_peer`, by peer IP address),
//! shared by both legacy transports, so that one client cannot take every session.
//!
//! It is not the registry (`session.rs` holds sessions, `sse_transport.rs` its own) and
//! not the HTTP answer beyond the refusal it builds (503, `Retry-After`, a JSON-RPC
//! error naming the limit).
//!
//! Invariant: every held session owns exactly one [`Slot`], taken before any work for it
//! (so concurrent `initialize`s cannot overshoot) and given back exactly once, when its
//! owner drops it: a refused or failed `initialize` at once, a session when it leaves
//! its registry (DELETE, reaping, shutdown, the end of a 2024-11-05 stream). The counts
//! therefore return to zero with the registries.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::error::McpError;
use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use parking_lot::Mutex;
use serde_json::json;

use crate::config::HttpConfig;
use crate::guard::reject;

/// The estimated memory of one legacy session, for `HttpConfig::session_memory_budget`:
/// an idle session measured about 12.8 KB of server heap (`benches/cpu.rs`: 8.4 KB its
/// endpoint, the rest its record and standalone stream), and the attack saw
/// 1.28 GiB of RSS for 100,000; 16 KiB leaves room for a few buffered events.
pub(crate) const SESSION_COST_ESTIMATE: usize = 16 * 1024;

/// The session counts, total and per peer.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    counts: Arc<Mutex<Counts>>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// One admitted session's place in the counts; dropping it gives the place back.
#[derive(Debug)]
pub(crate) struct Slot {
    counts: Arc<Mutex<Counts>>,
    peer: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(peer) = self.peer {
            if let Some(n) = counts.per_peer.get_mut(&peer) {
                *n -= 1;
                if *n == 0 {
                    counts.per_peer.remove(&peer);
                }
            }
        }
        // A burst from many peers leaves a large table behind once they have gone.
        if counts.per_peer.capacity() > 64 && counts.per_peer.len() < counts.per_peer.capacity() / 4 {
            counts.per_peer.shrink_to_fit();
        }
    }
}

/// Which limit refused a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The peer holds `max_sessions_per_peer` sessions.
    Peer(usize),
    /// The server holds `min(max_sessions, budget / cost)` sessions.
    Total(usize),
}

impl Admission {
    /// A slot for a new session of `peer`, or the limit it is at. An IPv6 peer counts by
    /// its /64 (`Requester::peer_address`): one client holding a whole prefix is one peer.
    pub(crate) fn admit(&self, peer: Option<IpAddr>, config: &HttpConfig) -> Result<Slot, Refusal> {
        let peer = peer.map(arbor_server::Requester::peer_address);
        let mut counts = self.counts.lock();
        let total = config.effective_max_sessions();
        if counts.total >= total {
            return Err(Refusal::Total(total));
        }
        if let Some(ip) = peer {
            let per_peer = config.max_sessions_per_peer;
            if counts.per_peer.get(&ip).is_some_and(|held| *held >= per_peer) || per_peer == 0 {
                return Err(Refusal::Peer(per_peer));
            }
            *counts.per_peer.entry(ip).or_insert(0) += 1;
        }
        counts.total += 1;
        Ok(Slot { counts: self.counts.clone(), peer })
    }

    /// Sessions admitted and not yet given back (both transports).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.counts.lock().total
    }
}

impl Refusal {
    /// 503 with `Retry-After` and a -32000 error naming the limit, in the shape of the
    /// runtime's overload errors (`data: {reason, scope, limit, retryAfterMs}`).
    pub(crate) fn response(self, config: &HttpConfig) -> Response<Body> {
        // A slot frees when a session is deleted or reaped; a tenth of the idle timeout,
        // between 1 s and a minute, is a fair time to come back.
        let retry = (config.session_idle_timeout / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let (message, scope, limit) = match self {
            Refusal::Peer(limit) => {
                (format!("Service Unavailable: too many sessions for this peer ({limit} per peer)"), "peer", limit)
            }
            Refusal::Total(limit) => {
                (format!("Service Unavailable: too many sessions ({limit} at most)"), "sessions", limit)
            }
        };
        let data =
            json!({"reason": "overloaded", "scope": scope, "limit": limit, "retryAfterMs": retry.as_millis() as u64});
        let err = McpError::Other { code: -32000, message, data: Some(data) };
        let mut response = reject(StatusCode::SERVICE_UNAVAILABLE, &err, None);
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry.as_secs()));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_count_per_peer_and_in_total_and_come_back_once() {
        let config = HttpConfig { max_sessions_per_peer: 2, max_sessions: 3, ..HttpConfig::default() };
        let admission = Admission::default();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let a1 = admission.admit(Some(a), &config).unwrap();
        let _a2 = admission.admit(Some(a), &config).unwrap();
        assert_eq!(admission.admit(Some(a), &config).unwrap_err(), Refusal::Peer(2));
        let _b1 = admission.admit(Some(b), &config).unwrap();
        assert_eq!(admission.admit(Some(b), &config).unwrap_err(), Refusal::Total(3));
        assert_eq!(admission.admit(None, &config).unwrap_err(), Refusal::Total(3));
        drop(a1);
        assert_eq!(admission.held(), 2);
        let _a3 = admission.admit(Some(a), &config).unwrap();
        assert_eq!(admission.admit(Some(a), &config).unwrap_err(), Refusal::Total(3));
    }

    #[test]
    fn an_ipv6_peer_counts_by_its_64_and_a_mapped_ipv4_peer_as_its_ipv4() {
        let config = HttpConfig { max_sessions_per_peer: 1, ..HttpConfig::default() };
        let admission = Admission::default();
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        let _one = admission.admit(Some(ip("2001:db8:1:2::1")), &config).unwrap();
        // Another address of the same /64 is the same peer; another /64 is not.
        assert_eq!(admission.admit(Some(ip("2001:db8:1:2:ffff::9")), &config).unwrap_err(), Refusal::Peer(1));
        let _other = admission.admit(Some(ip("2001:db8:1:3::1")), &config).unwrap();
        let _v4 = admission.admit(Some(ip("10.0.0.1")), &config).unwrap();
        assert_eq!(admission.admit(Some(ip("::ffff:10.0.0.1")), &config).unwrap_err(), Refusal::Peer(1));
    }

    #[test]
    fn the_memory_budget_lowers_the_global_cap() {
        let config = HttpConfig { session_memory_budget: 4 * SESSION_COST_ESTIMATE, ..HttpConfig::default() };
        assert_eq!(config.effective_max_sessions(), 4);
        assert_eq!(HttpConfig::default().effective_max_sessions(), 32_768);
        let admission = Admission::default();
        let slots: Vec<Slot> = (0..4).map(|_| admission.admit(None, &config).unwrap()).collect();
        assert_eq!(admission.admit(None, &config).unwrap_err(), Refusal::Total(4));
        drop(slots);
        assert_eq!(admission.held(), 0);
    }
}

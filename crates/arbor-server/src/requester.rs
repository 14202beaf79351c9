//! Who sent a request, as far as the runtime's bounds are concerned: the [`Requester`].
//!
//! A 2026-07-28 endpoint is shared by every client of its tenant, so a bound per
//! connection does not stop one client from taking every slot: the attack opens hundreds
//! of connections. What one client must not exceed is counted per requester instead: the
//! authenticated principal when there is one, else the peer's IP address (not its port;
//! an IPv6 peer by its /64, which one subscriber usually holds whole), else one shared
//! unknown requester. The same value makes a task's owner (`tasks/`), so one anonymous
//! client's tasks are neither counted against nor visible to another.
//!
//! This module is not authorization: a requester is a name for bookkeeping, compared
//! exactly (principals as exact strings), never a credential. [`RequesterSlots`] counts a
//! tenant's in-flight requests (or open streams) per requester, across every connection,
//! session and endpoint of the tenant.
//!
//! Invariant: a slot taken from [`RequesterSlots`] is given back exactly once, when its
//! [`RequesterSlot`] is dropped; the entries of requesters with nothing in flight are
//! swept whenever the table has doubled since the last sweep, so it stays within twice the
//! number of requesters with something in flight (plus a small floor).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Who sent a request, for the bounds one client may not exceed and the owner of its
/// tasks. Build one with [`Requester::new`]; compare with `==` (exact).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Requester {
    /// The authenticated principal (`ConnectOptions::auth`), compared as an exact string.
    Principal(Arc<str>),
    /// An anonymous peer, by IP address: an IPv4 address (an IPv4-mapped IPv6 peer is the
    /// same IPv4 address), or an IPv6 address's /64 prefix.
    Peer(IpAddr),
    /// Neither is known (stdio, or a router mounted without the peer's address): every
    /// such request is one shared requester.
    #[default]
    Unknown,
}

impl Requester {
    /// The requester of a request from `peer`, authenticated as `principal` if it was:
    /// the principal wins; without one, the peer's address (its port dropped); without
    /// either, [`Requester::Unknown`].
    pub fn new(principal: Option<&str>, peer: Option<SocketAddr>) -> Requester {
        match (principal, peer) {
            (Some(principal), _) => Requester::Principal(Arc::from(principal)),
            (None, Some(peer)) => Requester::peer(peer.ip()),
            (None, None) => Requester::Unknown,
        }
    }

    /// An anonymous peer at `ip`. An IPv6 address stands for its /64: a client given a
    /// whole prefix could otherwise be 2^64 requesters.
    pub fn peer(ip: IpAddr) -> Requester {
        Requester::Peer(Requester::peer_address(ip))
    }

    /// The address an anonymous peer at `ip` is known by, for anything counted per peer
    /// (this crate's bounds, and `arbor-http`'s per-peer session cap): an IPv4 address as
    /// it is (an IPv4-mapped IPv6 address folded to it), an IPv6 address's /64 prefix.
    pub fn peer_address(ip: IpAddr) -> IpAddr {
        match ip.to_canonical() {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        }
    }

    /// The principal, if the requester is one.
    pub fn principal(&self) -> Option<&str> {
        match self {
            Requester::Principal(p) => Some(p),
            _ => None,
        }
    }
}

/// The fewest entries the table keeps before it sweeps idle requesters out.
const SWEEP_FLOOR: usize = 64;

/// A tenant's in-flight requests (or open streams) per requester, bounded by `max` each.
///
/// Each requester's count is an atomic its slots share, so giving a slot back is one
/// decrement, with no lock and no hashing (this is on every request's path); taking one
/// is one locked lookup.
#[derive(Debug)]
pub(crate) struct RequesterSlots {
    max: usize,
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    /// Hashed with foldhash (seeded per table, so a client cannot choose colliding
    /// keys): every request of a known requester is counted here, and SipHash cost more
    /// than the rest of the lookup.
    counts: HashMap<Requester, Arc<AtomicUsize>, foldhash::fast::RandomState>,
    /// Sweep idle entries when the table reaches this many.
    sweep_at: usize,
}

impl RequesterSlots {
    pub(crate) fn new(max: usize) -> Arc<RequesterSlots> {
        let table = Table { counts: HashMap::default(), sweep_at: SWEEP_FLOOR };
        Arc::new(RequesterSlots { max, table: Mutex::new(table) })
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Takes a slot for `requester`; `None` when it already holds `max`.
    pub(crate) fn try_acquire(&self, requester: &Requester) -> Option<RequesterSlot> {
        let mut table = self.table.lock();
        let count = match table.counts.get(requester) {
            Some(count) => count.clone(),
            None => {
                if table.counts.len() >= table.sweep_at {
                    // An entry no slot holds (the table's is its only reference) is idle;
                    // no slot can be made for it meanwhile, since that takes this lock.
                    table.counts.retain(|_, count| Arc::strong_count(count) > 1);
                    table.sweep_at = (table.counts.len() * 2).max(SWEEP_FLOOR);
                }
                let count = Arc::new(AtomicUsize::new(0));
                table.counts.insert(requester.clone(), count.clone());
                count
            }
        };
        // Increments happen under the lock, so this check cannot be raced past `max`;
        // a concurrent release only makes room.
        if count.load(Ordering::Acquire) >= self.max {
            return None;
        }
        count.fetch_add(1, Ordering::AcqRel);
        Some(RequesterSlot { count })
    }

    /// How many requests `requester` has in flight.
    #[cfg(test)]
    pub(crate) fn count(&self, requester: &Requester) -> usize {
        self.table.lock().counts.get(requester).map_or(0, |c| c.load(Ordering::Acquire))
    }
}

/// A requester's in-flight slot, given back when dropped (the request's report ran, or
/// the spawn was refused and the report dropped unrun).
#[derive(Debug)]
pub(crate) struct RequesterSlot {
    count: Arc<AtomicUsize>,
}

impl RequesterSlot {
    /// A slot of a plain counter bounded by `max` (a tenant-wide count), or `None` when
    /// `max` are taken.
    pub(crate) fn try_take(count: &Arc<AtomicUsize>, max: usize) -> Option<RequesterSlot> {
        if count.fetch_add(1, Ordering::AcqRel) >= max {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(RequesterSlot { count: count.clone() })
    }
}

impl Drop for RequesterSlot {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_principal_wins_then_the_address_without_its_port() {
        let peer: SocketAddr = "127.0.0.2:4000".parse().unwrap();
        let other_port: SocketAddr = "127.0.0.2:4001".parse().unwrap();
        assert_eq!(Requester::new(Some("alice"), Some(peer)), Requester::Principal("alice".into()));
        assert_eq!(Requester::new(None, Some(peer)), Requester::new(None, Some(other_port)));
        assert_ne!(Requester::new(None, Some(peer)), Requester::new(None, "127.0.0.3:4000".parse().ok()));
        assert_eq!(Requester::new(None, None), Requester::Unknown);
        // Exact strings: no case folding, no trimming.
        assert_ne!(Requester::new(Some("alice"), None), Requester::new(Some("Alice"), None));
        assert_ne!(Requester::new(Some("alice"), None), Requester::new(Some("alice "), None));
    }

    #[test]
    fn an_ipv6_peer_is_its_64_and_a_mapped_ipv4_peer_its_ipv4() {
        let a = Requester::peer("2001:db8:1:2::1".parse().unwrap());
        let b = Requester::peer("2001:db8:1:2:ffff::9".parse().unwrap());
        let c = Requester::peer("2001:db8:1:3::1".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(Requester::peer("::ffff:10.0.0.1".parse().unwrap()), Requester::peer("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn slots_are_bounded_per_requester_and_given_back_once() {
        let slots = RequesterSlots::new(2);
        let (a, b) = (Requester::peer("127.0.0.2".parse().unwrap()), Requester::peer("127.0.0.3".parse().unwrap()));
        let first = slots.try_acquire(&a).expect("a's first");
        let second = slots.try_acquire(&a).expect("a's second");
        assert!(slots.try_acquire(&a).is_none(), "a is at its bound");
        let other = slots.try_acquire(&b).expect("b is not a");
        drop(first);
        assert_eq!(slots.count(&a), 1);
        let again = slots.try_acquire(&a).expect("a has room again");
        drop((second, again, other));
        assert_eq!((slots.count(&a), slots.count(&b)), (0, 0));
    }

    #[test]
    fn idle_requesters_are_swept_once_the_table_doubles() {
        let slots = RequesterSlots::new(1);
        let busy = slots.try_acquire(&Requester::peer("10.0.0.1".parse().unwrap())).expect("a slot");
        // Many requesters come and go; the table never holds more than twice the floor.
        for n in 0..10_000u32 {
            let ip = std::net::Ipv4Addr::from(0x0b00_0000 + n);
            drop(slots.try_acquire(&Requester::peer(IpAddr::V4(ip))).expect("a slot"));
            assert!(
                slots.table.lock().counts.len() <= 2 * SWEEP_FLOOR,
                "the table grew to {}",
                slots.table.lock().counts.len()
            );
        }
        // The busy requester's entry survived every sweep, and still counts.
        assert_eq!(slots.count(&Requester::peer("10.0.0.1".parse().unwrap())), 1);
        drop(busy);
    }
}

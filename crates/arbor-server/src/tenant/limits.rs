//! One tenant's live limits ([`TenantLimits`]): its resolved quota, the counters and
//! buckets that enforce it, its restart budget, and the signal that stops its requests
//! when it is escalated.
//!
//! Shared by every connection of the tenant (and by the HTTP transport, which checks the
//! rate and the quarantine before reading a body), and kept by the [`TenantRegistry`]
//! across restarts of the tenant's subtree, so an escalation's quarantine outlives the
//! supervisor it stopped. It is not the tree: starting and stopping the tenant's
//! supervisor is `tree.rs`'s.
//!
//! Invariant: every slot taken here is given back exactly once (the in-flight count by
//! `release`, the others by dropping their [`RequesterSlot`]); a refusal touches no
//! counter but the refused one's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::budget::{Budget, Charged, Quarantine};
use super::policy::{TenantPolicy, TenantQuota};
use super::rate::{Bucket, RequesterBuckets};
use super::refusal::{RateScope, TenantRefusal};
use crate::observe::{Refusals, TenantLoad};
use crate::requester::{Requester, RequesterSlot, RequesterSlots};

/// What a transport learns when [`Server::admit`](crate::Server::admit) lets a request in:
/// the limits of its tenant that the transport enforces itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Admission {
    /// The largest request body to read for the tenant (`TenantQuota::max_body_bytes`),
    /// if its policy sets one; the transport's own cap still holds.
    pub max_body_bytes: Option<usize>,
}

/// The bounds every tenant starts from (`ServerConfig`'s), before its quota.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TenantBounds {
    pub(crate) in_flight: usize,
    pub(crate) in_flight_per_requester: usize,
    pub(crate) streams_per_requester: usize,
    pub(crate) running_tasks: usize,
}

#[cfg(test)]
impl TenantBounds {
    /// Roomy bounds for unit tests.
    pub(crate) fn for_tests() -> TenantBounds {
        TenantBounds { in_flight: 1024, in_flight_per_requester: 256, streams_per_requester: 64, running_tasks: 1024 }
    }
}

/// A tenant's shared limits: see the module.
#[derive(Debug)]
pub(crate) struct TenantLimits {
    name: String,
    /// The name as a metrics label, made once.
    label: metrics::SharedString,
    /// The in-flight gauge, its key made once and its handle kept (`crate::metrics::in_flight_key`).
    in_flight_key: crate::metrics::InFlight,
    quota: TenantQuota,
    in_flight: AtomicUsize,
    max: usize,
    /// In-flight requests per requester.
    pub(crate) requests: Arc<RequesterSlots>,
    /// Open subscription streams (listens, legacy resource subscriptions) per requester.
    pub(crate) streams: Arc<RequesterSlots>,
    /// Open subscription streams of the whole tenant, when the quota bounds them.
    streams_total: Arc<AtomicUsize>,
    /// Legacy sessions (byte-stream connections and HTTP sessions) open now.
    sessions: Arc<AtomicUsize>,
    /// Tasks running now, of either wire.
    tasks_running: Arc<AtomicUsize>,
    max_tasks: usize,
    rate: Option<Bucket>,
    principal_rate: Option<RequesterBuckets>,
    budget: Budget,
    /// Cancelled when the tenant is escalated: its running requests answer -32603 at once.
    stop: Mutex<CancellationToken>,
    /// Where an escalation is reported (the tree's escalator task, `Server::tree`).
    escalations: mpsc::UnboundedSender<Escalation>,
    /// Requests admitted and refused, since the tenant started: relaxed counters for
    /// `Server::tenant_loads`, one add per request next to `in_flight`'s.
    admitted: AtomicU64,
    overloaded: AtomicU64,
    rate_limited: AtomicU64,
    quarantined: AtomicU64,
}

impl TenantLimits {
    pub(crate) fn new(
        name: &str,
        bounds: TenantBounds,
        quota: TenantQuota,
        escalations: mpsc::UnboundedSender<Escalation>,
    ) -> TenantLimits {
        let label = crate::metrics::tenant_label(name);
        TenantLimits {
            name: name.to_owned(),
            in_flight_key: crate::metrics::in_flight_key(&label),
            label,
            in_flight: AtomicUsize::new(0),
            max: quota.max_in_flight.unwrap_or(bounds.in_flight),
            requests: RequesterSlots::new(bounds.in_flight_per_requester),
            streams: RequesterSlots::new(bounds.streams_per_requester),
            streams_total: Arc::default(),
            sessions: Arc::default(),
            tasks_running: Arc::default(),
            max_tasks: quota.max_tasks.unwrap_or(bounds.running_tasks),
            rate: quota.rate.map(Bucket::new),
            principal_rate: quota.principal_rate.map(RequesterBuckets::new),
            budget: Budget::new(quota.restart_budget),
            stop: Mutex::new(CancellationToken::new()),
            escalations,
            admitted: AtomicU64::new(0),
            overloaded: AtomicU64::new(0),
            rate_limited: AtomicU64::new(0),
            quarantined: AtomicU64::new(0),
            quota,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The tenant's metrics label.
    pub(crate) fn label(&self) -> &metrics::SharedString {
        &self.label
    }

    /// The largest body a transport should read for this tenant, if its quota says.
    pub(crate) fn max_body_bytes(&self) -> Option<usize> {
        self.quota.max_body_bytes
    }

    /// The gate every request passes before anything is spent on it: the quarantine,
    /// then, with `rates`, `requester`'s rate (an unknown requester has none of its
    /// own) and the tenant's. Takes a token of each rate it passes.
    pub(crate) fn gate(&self, requester: Option<&Requester>, rates: bool) -> Result<(), TenantRefusal> {
        if let Some(Quarantine { reason, left }) = self.budget.quarantine() {
            self.quarantined.fetch_add(1, Ordering::Relaxed);
            crate::metrics::refused(self.label.clone(), crate::metrics::Refusal::Quarantined);
            return Err(TenantRefusal::Quarantined { tenant: self.name.clone(), reason, retry_after: left });
        }
        if !rates {
            return Ok(());
        }
        let refused = |scope: RateScope, limit, wait: Duration| {
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
            crate::metrics::refused(self.label.clone(), crate::metrics::Refusal::RateLimited);
            TenantRefusal::RateLimited { tenant: self.name.clone(), scope, limit, retry_after: wait }
        };
        // The requester's own rate first: a requester flooding past it is refused without
        // spending the tenant's tokens, so it cannot starve the tenant's other requesters.
        if let (Some(buckets), Some(requester)) = (&self.principal_rate, requester) {
            if *requester != Requester::Unknown {
                buckets.take(requester).map_err(|wait| refused(RateScope::Principal, buckets.limit(), wait))?;
            }
        }
        if let Some(bucket) = &self.rate {
            bucket.take().map_err(|wait| refused(RateScope::Tenant, bucket.limit(), wait))?;
        }
        Ok(())
    }

    /// The quarantine in force now, if any (not counted as a refusal).
    pub(crate) fn quarantine(&self) -> Option<TenantRefusal> {
        let Quarantine { reason, left } = self.budget.quarantine()?;
        Some(TenantRefusal::Quarantined { tenant: self.name.clone(), reason, retry_after: left })
    }

    /// Whether the tenant has a restart budget (else nothing can escalate it, and its
    /// requests need not race the stop signal).
    pub(crate) fn has_budget(&self) -> bool {
        self.budget.budget().is_some()
    }

    /// Charges a crash to the restart budget; when it is past it, the tenant is
    /// quarantined from now and its escalation reported to the tree (`Tree::escalate`).
    pub(crate) fn crashed(&self) {
        if let Charged::Escalate(reason) = self.budget.crash() {
            tracing::warn!(tenant = %self.name, %reason, "tenant past its restart budget: escalating");
            let _ = self.escalations.send(Escalation { tenant: self.name.clone(), reason });
        }
    }

    /// Fires the stop signal of every request running now, and arms a fresh one for the
    /// requests admitted after.
    pub(crate) fn stop_requests(&self) {
        let old = std::mem::replace(&mut *self.stop.lock(), CancellationToken::new());
        old.cancel();
    }

    /// The signal a request admitted now races: fired when the tenant is escalated.
    pub(crate) fn stop_signal(&self) -> CancellationToken {
        self.stop.lock().clone()
    }

    /// Takes one slot; refused at once when all are taken.
    pub(crate) fn try_acquire(&self) -> bool {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= self.max {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.refused_overloaded();
            return false;
        }
        crate::metrics::in_flight(&self.in_flight_key, 1.0);
        true
    }

    pub(crate) fn release(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        crate::metrics::in_flight(&self.in_flight_key, -1.0);
    }

    /// Slots taken now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// A slot of the tenant's subscription streams: `Ok(None)` when the quota does not
    /// bound them, `Err(limit)` when all are taken.
    pub(crate) fn stream_slot(&self) -> Result<Option<RequesterSlot>, usize> {
        let Some(max) = self.quota.max_subscriptions else { return Ok(None) };
        RequesterSlot::try_take(&self.streams_total, max).map(Some).ok_or(max)
    }

    /// A slot of the tenant's legacy sessions: `Ok(None)` when the quota does not bound
    /// them, else the refusal naming the limit.
    pub(crate) fn session_slot(&self) -> Result<Option<RequesterSlot>, TenantRefusal> {
        let Some(max) = self.quota.max_sessions else { return Ok(None) };
        RequesterSlot::try_take(&self.sessions, max).map(Some).ok_or_else(|| {
            self.refused_overloaded();
            crate::metrics::refused(self.label.clone(), crate::metrics::Refusal::Overloaded);
            TenantRefusal::Sessions { tenant: self.name.clone(), limit: max, retry_after: Duration::from_secs(1) }
        })
    }

    /// A slot of the tenant's running tasks, or `Err(limit)`.
    pub(crate) fn task_slot(&self) -> Result<RequesterSlot, usize> {
        RequesterSlot::try_take(&self.tasks_running, self.max_tasks).ok_or(self.max_tasks)
    }

    /// Counts a request admitted (its task spawned).
    pub(crate) fn admitted(&self) {
        self.admitted.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request refused for a full bound other than the tenant's own (a
    /// requester's share, a connection's).
    pub(crate) fn refused_overloaded(&self) {
        self.overloaded.fetch_add(1, Ordering::Relaxed);
    }

    /// The tenant's load now (its connection count is the caller's to fill in).
    pub(crate) fn load(&self) -> TenantLoad {
        let quarantine = self.budget.quarantine();
        let mut load = TenantLoad {
            tenant: self.name.clone(),
            in_flight: self.in_flight.load(Ordering::Relaxed).min(self.max),
            max_in_flight: self.max,
            admitted: self.admitted.load(Ordering::Relaxed),
            refused: Refusals::default(),
            connections: 0,
            sessions: self.sessions.load(Ordering::Relaxed),
            tasks_running: self.tasks_running.load(Ordering::Relaxed),
            escalations: self.budget.escalations(),
            quarantined_ms: quarantine.as_ref().map(|q| q.left.as_millis() as u64),
            quarantine_reason: quarantine.map(|q| q.reason),
            // Filled in by `Server::observe` and `tenant_loads` (`crate::tenant::routers`).
            handler_version: 0,
        };
        load.refused.overloaded = self.overloaded.load(Ordering::Relaxed);
        load.refused.rate_limited = self.rate_limited.load(Ordering::Relaxed);
        load.refused.quarantined = self.quarantined.load(Ordering::Relaxed);
        load
    }
}

/// A tenant past its restart budget, for the tree to escalate.
#[derive(Debug)]
pub(crate) struct Escalation {
    pub(crate) tenant: String,
    pub(crate) reason: String,
}

/// Every tenant's limits, made on first use from the policy and kept for the server's
/// life (so a quarantine survives the subtree it stopped), at most `max_tenants` of them.
pub(crate) struct TenantRegistry {
    policy: TenantPolicy,
    bounds: TenantBounds,
    /// Hashed with foldhash (seeded): every request looks its tenant up, and SipHash cost
    /// more than the rest of the lookup.
    tenants: RwLock<HashMap<String, Arc<TenantLimits>, foldhash::fast::RandomState>>,
    escalations: mpsc::UnboundedSender<Escalation>,
    /// Taken once, by the task that escalates (started with the tree). Unbounded, but
    /// each tenant sends at most one escalation per quarantine.
    escalated: Mutex<Option<mpsc::UnboundedReceiver<Escalation>>>,
}

impl std::fmt::Debug for TenantRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantRegistry").field("tenants", &self.tenants.read().len()).finish_non_exhaustive()
    }
}

impl TenantRegistry {
    pub(crate) fn new(policy: TenantPolicy, bounds: TenantBounds) -> TenantRegistry {
        let (escalations, escalated) = mpsc::unbounded_channel();
        TenantRegistry {
            policy,
            bounds,
            tenants: RwLock::default(),
            escalations,
            escalated: Mutex::new(Some(escalated)),
        }
    }

    /// The escalations to act on; `None` after the first call.
    pub(crate) fn take_escalations(&self) -> Option<mpsc::UnboundedReceiver<Escalation>> {
        self.escalated.lock().take()
    }

    pub(crate) fn policy(&self) -> &TenantPolicy {
        &self.policy
    }

    /// `name`'s limits, made now if this is its first use; refused past `max_tenants`.
    pub(crate) fn get(&self, name: &str) -> Result<Arc<TenantLimits>, TenantRefusal> {
        if let Some(limits) = self.tenants.read().get(name) {
            return Ok(limits.clone());
        }
        let mut tenants = self.tenants.write();
        if let Some(limits) = tenants.get(name) {
            return Ok(limits.clone());
        }
        if tenants.len() >= self.policy.max_tenants {
            return Err(TenantRefusal::TooManyTenants { limit: self.policy.max_tenants });
        }
        let quota = self.policy.quota(name);
        let limits = Arc::new(TenantLimits::new(name, self.bounds, quota, self.escalations.clone()));
        tenants.insert(name.to_owned(), limits.clone());
        Ok(limits)
    }
}

//! [`TenantRefusal`]: why a tenant's request was refused before it ran, with the limit it
//! hit and when to try again.
//!
//! One type for every transport: the HTTP transport answers it with its
//! [`status`](TenantRefusal::status) and `Retry-After` before reading the body, a byte
//! stream (and a request inside a stream) with the JSON-RPC error `McpError::from` makes
//! of it (`crate::error`, the one place refusals become errors). It is not the in-flight
//! bounds' overload error, which stays as it was.
//!
//! Invariant: a refusal never names another tenant or principal, and its text and `data`
//! name the limit that was hit.

use std::time::Duration;

use super::policy::RateLimit;

/// Whose rate was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateScope {
    /// The tenant's, shared by all its requesters.
    Tenant,
    /// The requester's own (its principal, or its peer address).
    Principal,
}

/// A request refused by its tenant's policy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TenantRefusal {
    /// A token bucket was empty.
    #[error(
        "Rate limited: {} requests/s (burst {}) exceeded for this {}; retry in {} ms",
        limit.per_second, limit.burst, scope.name(), millis(*retry_after)
    )]
    RateLimited {
        /// The tenant.
        tenant: String,
        /// Whose bucket.
        scope: RateScope,
        /// Its limit.
        limit: RateLimit,
        /// When a token is there.
        retry_after: Duration,
    },
    /// The tenant crashed past its restart budget and refuses requests for a while.
    #[error("Tenant quarantined: {reason}; {} ms left", millis(*retry_after))]
    Quarantined {
        /// The tenant.
        tenant: String,
        /// Why (the crashes that escalated it).
        reason: String,
        /// What is left of the quarantine.
        retry_after: Duration,
    },
    /// The tenant has its most legacy sessions open.
    #[error("Server busy: {limit} sessions already open for this tenant; retry later")]
    Sessions {
        /// The tenant.
        tenant: String,
        /// Its bound.
        limit: usize,
        /// A hint.
        retry_after: Duration,
    },
    /// The server keeps state for its most tenants.
    #[error("Server busy: {limit} tenants already known to this server; retry later")]
    TooManyTenants {
        /// `TenantPolicy::max_tenants`.
        limit: usize,
    },
}

impl RateScope {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RateScope::Tenant => "tenant",
            RateScope::Principal => "principal",
        }
    }
}

fn millis(d: Duration) -> u64 {
    // Rounded up: "retry in 0 ms" would invite the very retry that is refused.
    d.as_micros().div_ceil(1000) as u64
}

impl TenantRefusal {
    /// When to try again.
    pub fn retry_after(&self) -> Duration {
        match self {
            TenantRefusal::RateLimited { retry_after, .. }
            | TenantRefusal::Quarantined { retry_after, .. }
            | TenantRefusal::Sessions { retry_after, .. } => *retry_after,
            TenantRefusal::TooManyTenants { .. } => Duration::from_secs(1),
        }
    }

    /// The limit hit, as `data.limit` names it: `tenant_rate`, `principal_rate`,
    /// `quarantine`, `tenant_sessions`, `tenants`.
    pub fn limit(&self) -> &'static str {
        match self {
            TenantRefusal::RateLimited { scope: RateScope::Tenant, .. } => "tenant_rate",
            TenantRefusal::RateLimited { scope: RateScope::Principal, .. } => "principal_rate",
            TenantRefusal::Quarantined { .. } => "quarantine",
            TenantRefusal::Sessions { .. } => "tenant_sessions",
            TenantRefusal::TooManyTenants { .. } => "tenants",
        }
    }

    /// `data.reason`: `rate_limited`, `quarantined` or `overloaded`.
    pub fn reason(&self) -> &'static str {
        match self {
            TenantRefusal::RateLimited { .. } => "rate_limited",
            TenantRefusal::Quarantined { .. } => "quarantined",
            TenantRefusal::Sessions { .. } | TenantRefusal::TooManyTenants { .. } => "overloaded",
        }
    }

    /// The HTTP status: 429 for a rate, 503 for the rest (the tenant, not the client,
    /// is what is unavailable).
    pub fn status(&self) -> u16 {
        match self {
            TenantRefusal::RateLimited { .. } => 429,
            _ => 503,
        }
    }

    /// `Retry-After` in whole seconds, rounded up, at least 1 (the header has no finer unit).
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after().as_millis().div_ceil(1000).max(1) as u64
    }

    /// `retryAfterMs`, rounded up.
    pub fn retry_after_ms(&self) -> u64 {
        millis(self.retry_after())
    }
}

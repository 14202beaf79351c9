//! Tenants as operators configure them: the [`TenantPolicy`] (quotas, rate limits,
//! restart budgets), and each tenant's own handler, swapped at run time (`routers`).
//!
//! A tenant is a supervision subtree (`crate::tree`); this module says what each one may
//! use and which tools it sees. It does not spawn anything: the tree starts tenants, the
//! connection admits requests against what is kept here.
//!
//! Invariant: a tenant not named in the policy gets the policy's defaults; every limit is
//! finite or explicitly off.

mod budget;
mod limits;
mod policy;
mod rate;
mod refusal;
pub(crate) mod routers;

pub use limits::Admission;
pub(crate) use limits::{TenantBounds, TenantLimits, TenantRegistry};
pub use policy::{PolicyError, RateLimit, RestartBudget, TenantPolicy, TenantQuota};
pub use refusal::{RateScope, TenantRefusal};

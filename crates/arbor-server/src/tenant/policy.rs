//! The [`TenantPolicy`]: what each tenant may use, from code or a TOML file.
//!
//! A policy is plain data: defaults for every tenant, and the tenants it names with
//! their own values. A value a named tenant leaves out is the defaults' value; one the
//! defaults leave out is the server's (`ServerConfig`) or off. Resolving a tenant's
//! quota ([`TenantPolicy::quota`]) is the only logic here; enforcing it is the tenant's
//! limits' (`limits.rs`) and the transport's business.
//!
//! Invariant: a policy that parsed is valid: rates are positive and finite, bursts and
//! bounds at least 1 (a limit is either set to something admissible or absent), so no
//! tenant can be configured into refusing everything by a typo; unknown keys inside a
//! quota are an error naming them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// Per-tenant quotas, rate limits and restart budgets.
///
/// ```
/// use arbor_server::tenant::TenantPolicy;
///
/// let policy = TenantPolicy::from_toml(r#"
///     [defaults]
///     rate = { per_second = 100.0, burst = 200 }
///     max_in_flight = 64
///
///     [tenants.acme]
///     rate = { per_second = 1000.0, burst = 2000 }
///     principal_rate = { per_second = 50.0, burst = 100 }
///     max_sessions = 500
///     restart_budget = { max_restarts = 20, max_seconds = 10, quarantine_seconds = 30 }
/// "#).unwrap();
/// assert_eq!(policy.quota("acme").max_in_flight, Some(64)); // from the defaults
/// assert_eq!(policy.quota("other").rate.unwrap().burst, 200);
/// ```
///
/// Top-level tables other than `defaults` and `tenants` are left to the application
/// (the demo server keeps its tool sets in `[tools]`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct TenantPolicy {
    /// What every tenant gets unless it is named in `tenants` with a value of its own.
    #[serde(default)]
    pub defaults: TenantQuota,
    /// Tenants with values of their own, by name (compared as exact strings).
    #[serde(default)]
    pub tenants: BTreeMap<String, TenantQuota>,
    /// The most tenants the server keeps state for; a request of a further tenant is
    /// refused (`TenantRefusal::TooManyTenants`). Default 10,000.
    #[serde(default = "default_max_tenants")]
    pub max_tenants: usize,
}

fn default_max_tenants() -> usize {
    10_000
}

impl Default for TenantPolicy {
    fn default() -> Self {
        TenantPolicy { defaults: TenantQuota::default(), tenants: BTreeMap::new(), max_tenants: default_max_tenants() }
    }
}

/// One tenant's limits; `None` is "as the defaults" in a named tenant, "the server's
/// own bound, or off" in the defaults.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TenantQuota {
    /// Requests per second for the whole tenant (a token bucket). Off by default.
    pub rate: Option<RateLimit>,
    /// Requests per second for each principal (or anonymous peer address) of the tenant.
    /// Off by default.
    pub principal_rate: Option<RateLimit>,
    /// Requests in flight across the tenant. Default `ServerConfig::max_in_flight_per_tenant`.
    pub max_in_flight: Option<usize>,
    /// Legacy sessions open at once (HTTP sessions, stdio and in-memory connections).
    /// Off by default (the transport's own caps still hold).
    pub max_sessions: Option<usize>,
    /// Subscription streams (2026-07-28 listens, legacy resource subscriptions) open
    /// across the tenant. Off by default (the per-connection and per-requester bounds
    /// still hold).
    pub max_subscriptions: Option<usize>,
    /// Tasks (of either tasks wire) running at once for the tenant. Default
    /// `TaskConfig::max_running`.
    pub max_tasks: Option<usize>,
    /// The largest request body the HTTP transport reads for the tenant, in bytes; at
    /// most the transport's own cap. Default: the transport's cap.
    pub max_body_bytes: Option<usize>,
    /// How many handler crashes the tenant may have in a window before its subtree is
    /// escalated and quarantined. Off by default: a panic costs only its request.
    pub restart_budget: Option<RestartBudget>,
}

/// A token bucket: `per_second` tokens added continuously, at most `burst` kept; a
/// request takes one.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Sustained requests per second (> 0).
    pub per_second: f64,
    /// Requests that may arrive at once after a quiet period (≥ 1).
    pub burst: u32,
}

impl RateLimit {
    /// `per_second` sustained, `burst` at once.
    pub fn new(per_second: f64, burst: u32) -> RateLimit {
        RateLimit { per_second, burst }
    }
}

/// OTP's restart intensity for a tenant's handlers: more than `max_restarts` crashes
/// within `max_seconds` escalates the tenant (its subtree stopped and restarted by the
/// root), which then refuses requests for `quarantine_seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartBudget {
    /// Crashes allowed within the window.
    pub max_restarts: u32,
    /// The window, in seconds (≥ 1).
    pub max_seconds: u64,
    /// How long the tenant refuses requests after an escalation, in seconds. Default 30.
    #[serde(default = "default_quarantine")]
    pub quarantine_seconds: u64,
}

fn default_quarantine() -> u64 {
    30
}

impl RestartBudget {
    /// More than `max_restarts` crashes within `within` escalates; then `quarantine`.
    pub fn new(max_restarts: u32, within: Duration, quarantine: Duration) -> RestartBudget {
        RestartBudget { max_restarts, max_seconds: within.as_secs().max(1), quarantine_seconds: quarantine.as_secs() }
    }

    /// The window.
    pub fn window(&self) -> Duration {
        Duration::from_secs(self.max_seconds)
    }

    /// The cool-down after an escalation.
    pub fn quarantine(&self) -> Duration {
        Duration::from_secs(self.quarantine_seconds)
    }
}

/// A policy that does not parse or holds a value no tenant could work with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The TOML did not parse into a policy (the message names the key and line).
    #[error("reading the tenant policy failed: {0}")]
    Parse(#[from] toml::de::Error),
    /// Reading the policy file failed.
    #[error("reading the tenant policy file {path} failed")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A value is out of range.
    #[error("the tenant policy's {at}.{field} is invalid: {why}")]
    Invalid {
        /// `defaults` or `tenants.<name>`.
        at: String,
        /// The key.
        field: &'static str,
        /// What is wrong.
        why: &'static str,
    },
}

impl TenantPolicy {
    /// The policy in `text` (TOML; see [`TenantPolicy`]), validated.
    pub fn from_toml(text: &str) -> Result<TenantPolicy, PolicyError> {
        let policy: TenantPolicy = toml::from_str(text)?;
        policy.validate()?;
        Ok(policy)
    }

    /// The policy in the TOML file at `path`.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<TenantPolicy, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| PolicyError::Read { path: path.display().to_string(), source })?;
        TenantPolicy::from_toml(&text)
    }

    /// The same policy with `quota` as the defaults.
    pub fn defaults(mut self, quota: TenantQuota) -> TenantPolicy {
        self.defaults = quota;
        self
    }

    /// The same policy with `tenant`'s own quota.
    pub fn tenant(mut self, tenant: impl Into<String>, quota: TenantQuota) -> TenantPolicy {
        self.tenants.insert(tenant.into(), quota);
        self
    }

    /// `tenant`'s quota: its own values, the defaults' where it has none.
    pub fn quota(&self, tenant: &str) -> TenantQuota {
        match self.tenants.get(tenant) {
            None => self.defaults.clone(),
            Some(own) => {
                let d = &self.defaults;
                TenantQuota {
                    rate: own.rate.or(d.rate),
                    principal_rate: own.principal_rate.or(d.principal_rate),
                    max_in_flight: own.max_in_flight.or(d.max_in_flight),
                    max_sessions: own.max_sessions.or(d.max_sessions),
                    max_subscriptions: own.max_subscriptions.or(d.max_subscriptions),
                    max_tasks: own.max_tasks.or(d.max_tasks),
                    max_body_bytes: own.max_body_bytes.or(d.max_body_bytes),
                    restart_budget: own.restart_budget.or(d.restart_budget),
                }
            }
        }
    }

    /// Checks every value: see the module's invariant.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.max_tenants == 0 {
            return Err(invalid("policy", "max_tenants", "must be at least 1"));
        }
        std::iter::once(("defaults".to_owned(), &self.defaults))
            .chain(self.tenants.iter().map(|(name, q)| (format!("tenants.{name}"), q)))
            .try_for_each(|(at, quota)| quota.validate(&at))
    }
}

impl TenantQuota {
    /// A quota setting nothing (everything as the defaults, or the server's).
    pub fn new() -> TenantQuota {
        TenantQuota::default()
    }

    /// Sets [`TenantQuota::rate`].
    pub fn rate(mut self, rate: RateLimit) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Sets [`TenantQuota::principal_rate`].
    pub fn principal_rate(mut self, rate: RateLimit) -> Self {
        self.principal_rate = Some(rate);
        self
    }

    /// Sets [`TenantQuota::max_in_flight`].
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = Some(max);
        self
    }

    /// Sets [`TenantQuota::max_sessions`].
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = Some(max);
        self
    }

    /// Sets [`TenantQuota::max_subscriptions`].
    pub fn max_subscriptions(mut self, max: usize) -> Self {
        self.max_subscriptions = Some(max);
        self
    }

    /// Sets [`TenantQuota::max_tasks`].
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = Some(max);
        self
    }

    /// Sets [`TenantQuota::max_body_bytes`].
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = Some(max);
        self
    }

    /// Sets [`TenantQuota::restart_budget`].
    pub fn restart_budget(mut self, budget: RestartBudget) -> Self {
        self.restart_budget = Some(budget);
        self
    }

    fn validate(&self, at: &str) -> Result<(), PolicyError> {
        for (field, rate) in [("rate", self.rate), ("principal_rate", self.principal_rate)] {
            if let Some(rate) = rate {
                if !(rate.per_second.is_finite() && rate.per_second > 0.0) {
                    return Err(invalid(at, field, "per_second must be a positive number"));
                }
                if rate.burst == 0 {
                    return Err(invalid(at, field, "burst must be at least 1"));
                }
            }
        }
        let bounds = [
            ("max_in_flight", self.max_in_flight),
            ("max_sessions", self.max_sessions),
            ("max_subscriptions", self.max_subscriptions),
            ("max_tasks", self.max_tasks),
            ("max_body_bytes", self.max_body_bytes),
        ];
        if let Some((field, _)) = bounds.iter().find(|(_, v)| *v == Some(0)) {
            return Err(invalid(at, field, "must be at least 1"));
        }
        if let Some(budget) = self.restart_budget {
            if budget.max_seconds == 0 {
                return Err(invalid(at, "restart_budget", "max_seconds must be at least 1"));
            }
        }
        Ok(())
    }
}

fn invalid(at: &str, field: &'static str, why: &'static str) -> PolicyError {
    PolicyError::Invalid { at: at.to_owned(), field, why }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_tenant_inherits_what_it_leaves_out() {
        let policy = TenantPolicy::from_toml(
            r#"
            [defaults]
            max_in_flight = 10
            rate = { per_second = 5.0, burst = 5 }
            [tenants.a]
            max_in_flight = 3
            "#,
        )
        .unwrap();
        let a = policy.quota("a");
        assert_eq!(a.max_in_flight, Some(3));
        assert_eq!(a.rate, Some(RateLimit::new(5.0, 5)));
        assert_eq!(policy.quota("b").max_in_flight, Some(10));
        assert_eq!(policy.max_tenants, 10_000);
    }

    #[test]
    fn bad_values_and_unknown_keys_are_named() {
        let err = TenantPolicy::from_toml("[tenants.a]\nrate = { per_second = 0.0, burst = 1 }").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the tenant policy's tenants.a.rate is invalid: per_second must be a positive number"
        );
        let err = TenantPolicy::from_toml("[defaults]\nmax_sesions = 3").unwrap_err();
        assert!(err.to_string().contains("max_sesions"), "{err}");
        let err = TenantPolicy::from_toml("[defaults]\nmax_tasks = 0").unwrap_err();
        assert!(err.to_string().contains("defaults.max_tasks"), "{err}");
        // Application tables beside the policy's are left alone.
        assert!(TenantPolicy::from_toml("[tools]\na = [\"echo\"]").is_ok());
    }
}

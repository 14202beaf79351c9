//! The runtime's errors, named after the operation that failed, and the protocol errors
//! the runtime itself answers with (overload, timeout, panic).
//!
//! The Rust errors ([`StartError`], [`ConnectError`], [`ServeError`]) are for the code that
//! runs a server; they never travel. The protocol errors are built here as [`McpError`]
//! values, which become wire JSON in exactly one place, `arbor-protocol`'s error module.
//! Invariant: every error the runtime sends on its own (not the handler's) comes from a
//! constructor in this file, so their codes and `data` shapes are defined once.

use std::time::Duration;

use arbor_otp::{StartChildError, StartDynamicChildError, StartSupervisorError};
use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use serde_json::json;

use crate::tenant::TenantRefusal;

/// Starting the server's supervision tree failed. The supervisor's own error is the
/// `source()`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The root supervisor (or one of its static children) did not start.
    #[error("starting the server runtime failed: {0}")]
    Supervisor(#[source] StartSupervisorError),
    /// The root supervisor started without the child the runtime needs, named here.
    #[error("starting the server runtime failed: the {0} supervisor did not start")]
    Missing(&'static str),
}

/// Opening a connection failed. Where a supervisor refused, its error is the `source()`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The runtime is shutting down or gone.
    #[error("the server runtime is shutting down")]
    ShuttingDown,
    /// The runtime's supervision tree did not start.
    #[error("starting the connection failed: {0}")]
    Start(#[source] StartError),
    /// The tenant's supervisor (started with its first connection) did not start.
    #[error("starting the supervisor of tenant {tenant:?} failed: {source}")]
    Tenant {
        /// The tenant's name.
        tenant: String,
        /// The root supervisor's refusal.
        #[source]
        source: StartChildError,
    },
    /// The tenant's supervisor started without its `connections` supervisor.
    #[error("the supervisor of tenant {tenant:?} started without its connections supervisor")]
    TenantIncomplete {
        /// The tenant's name.
        tenant: String,
    },
    /// The tenant's connection supervisor did not start the connection's actor.
    #[error("starting the connection failed: {0}")]
    Supervisor(#[source] StartDynamicChildError),
    /// The tenant's policy refused the connection (its sessions are all taken, or the
    /// server knows its most tenants).
    #[error("opening the connection failed: {0}")]
    Refused(#[source] TenantRefusal),
}

/// Serving a transport failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The runtime did not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The connection did not open.
    #[error(transparent)]
    Connect(#[from] ConnectError),
}

/// Which bound refused a request: named in the refusal's text and `data.scope`, so the
/// text says whose slots are full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OverloadScope {
    /// A byte stream's own bound (stdio, an in-memory pair).
    Connection,
    /// A legacy HTTP session's endpoint: one client's, over any number of HTTP connections.
    Session,
    /// A shared endpoint (the 2026-07-28 HTTP pool): every requester's slots together.
    Endpoint,
    /// One requester's share of a shared endpoint (`crate::Requester`).
    Requester,
    /// Every connection of the tenant together.
    Tenant,
}

impl OverloadScope {
    fn name(self) -> &'static str {
        match self {
            OverloadScope::Connection => "connection",
            OverloadScope::Session => "session",
            OverloadScope::Endpoint => "endpoint",
            OverloadScope::Requester => "requester",
            OverloadScope::Tenant => "tenant",
        }
    }
}

/// -32000 "Server busy": the request was refused at once because `limit` requests are
/// already in flight. The code is the legacy implementation-defined range, where the spec
/// lets servers put errors of their own; `data.retryAfterMs` says when to try again.
pub(crate) fn overloaded(scope: OverloadScope, limit: usize, retry_after: Duration) -> McpError {
    busy(format!("{limit} requests already in flight for this {}", scope.name()), scope.name(), limit, retry_after)
}

/// -32000 "Server busy" for a `subscriptions/listen` refused because `limit` listens are
/// already open in `scope` (same `data` as [`overloaded`]).
pub(crate) fn listens_overloaded(scope: OverloadScope, limit: usize, retry_after: Duration) -> McpError {
    busy(format!("{limit} listens already open for this {}", scope.name()), scope.name(), limit, retry_after)
}

/// Which bound of the task store refused a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskBound {
    /// Records one owner (tenant and requester) may hold: `data.scope` "owner".
    PerRequester,
    /// Records the store holds: `data.scope` "tasks".
    Held,
    /// Runs going at once, server-wide: `data.scope` "tasks".
    Running,
    /// Runs going at once for the tenant (`TenantQuota::max_tasks`): `data.scope` "tenant".
    TenantRunning,
}

/// -32000 "Server busy" for a task the store has no room for (same `data` as
/// [`overloaded`]; `retry_after` is when a record may have expired or a run ended).
pub(crate) fn tasks_overloaded(bound: TaskBound, limit: usize, retry_after: Duration) -> McpError {
    let (what, scope) = match bound {
        TaskBound::PerRequester => ("held for this requester", "owner"),
        TaskBound::Held => ("held on this server", "tasks"),
        TaskBound::Running => ("running on this server", "tasks"),
        TaskBound::TenantRunning => ("running for this tenant", "tenant"),
    };
    busy(format!("{limit} tasks already {what}"), scope, limit, retry_after)
}

fn busy(what: String, scope: &str, limit: usize, retry_after: Duration) -> McpError {
    McpError::Other {
        code: -32000,
        message: format!("Server busy: {what}; retry later"),
        data: Some(json!({
            "reason": "overloaded",
            "scope": scope,
            "limit": limit,
            "retryAfterMs": retry_after.as_millis() as u64,
        })),
    }
}

/// -32000 for a request its tenant's policy refused (`crate::tenant::TenantRefusal`):
/// `data.reason` (`rate_limited`, `quarantined`, `overloaded`), `data.limit` (which one),
/// `data.retryAfterMs`.
impl From<&TenantRefusal> for McpError {
    fn from(refusal: &TenantRefusal) -> McpError {
        McpError::Other {
            code: -32000,
            message: refusal.to_string(),
            data: Some(json!({
                "reason": refusal.reason(),
                "limit": refusal.limit(),
                "retryAfterMs": refusal.retry_after_ms(),
            })),
        }
    }
}

/// -32603 for a request stopped because its tenant was escalated past its restart budget.
pub(crate) fn tenant_escalated(method: MethodName) -> McpError {
    McpError::Internal {
        message: format!("Internal error: {method} was stopped: its tenant exceeded its restart budget"),
        data: Some(json!({ "reason": "tenant_escalated" })),
    }
}

/// -32603 naming the deadline that stopped the request.
pub(crate) fn timed_out(method: MethodName, deadline: Duration) -> McpError {
    McpError::Internal {
        message: format!("Request timed out: {method} did not answer within {} ms", deadline.as_millis()),
        data: Some(json!({ "reason": "timeout", "timeoutMs": deadline.as_millis() as u64 })),
    }
}

/// -32603 for a handler that panicked. The panic message stays in the server's logs: it
/// may hold details the client should not see.
pub(crate) fn panicked(method: MethodName) -> McpError {
    McpError::internal(format!("Internal error: the {method} handler failed"))
}

/// -32600 for a request whose id is already in flight in `scope` (the byte stream's
/// connection, or the legacy session: ids are scoped to either).
pub(crate) fn duplicate_id(scope: OverloadScope) -> McpError {
    McpError::InvalidRequest {
        message: format!("Invalid Request: a request with this id is already in flight in this {}", scope.name()),
        data: None,
    }
}

/// -32600 for a frame longer than the transport's cap. The reader echoes the request's id
/// when the frame's first bytes show it (`jsonrpc::request_id_in_prefix`).
pub(crate) fn frame_too_long(limit: usize) -> McpError {
    McpError::InvalidRequest {
        message: format!("Invalid Request: message longer than the {limit}-byte limit"),
        data: Some(json!({ "reason": "frameTooLong", "limitBytes": limit })),
    }
}

/// -32600 for a second `initialize` on one connection.
pub(crate) fn already_initialized() -> McpError {
    McpError::InvalidRequest {
        message: "Invalid Request: initialize was already received on this connection".to_owned(),
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_otp::{ChildSpec, SpecError, Started, SupervisorHandle, SupervisorSpec};
    use std::error::Error as _;

    #[tokio::test]
    async fn a_connect_error_keeps_the_supervisors_refusal_as_its_source() {
        let spec = SupervisorSpec::new("root")
            .child(ChildSpec::new("a", |_ctx| async { Ok(Started::ignore()) }))
            .child(ChildSpec::new("a", |_ctx| async { Ok(Started::ignore()) }));
        let refused = SupervisorHandle::start(spec).await.unwrap_err();
        let err = ConnectError::Start(StartError::Supervisor(refused));
        assert!(err.to_string().contains("duplicate child id \"a\""), "{err}");
        let start = err.source().and_then(|s| s.downcast_ref::<StartError>()).expect("the runtime's start error");
        assert!(matches!(start, StartError::Supervisor(_)));
        let spec = start.source().and_then(|s| s.source()).and_then(|s| s.downcast_ref::<SpecError>());
        assert_eq!(spec, Some(&SpecError::DuplicateId("a".into())));
        let serve = ServeError::from(err.clone());
        assert_eq!(serve, ServeError::Connect(err));
    }

    #[test]
    fn a_missing_child_is_named() {
        assert_eq!(
            StartError::Missing("tasks").to_string(),
            "starting the server runtime failed: the tasks supervisor did not start"
        );
        assert!(StartError::Missing("tasks").source().is_none());
    }
}

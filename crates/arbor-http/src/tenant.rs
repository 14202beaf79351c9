//! The tenant policy at the HTTP door: which tenant a request belongs to, worked out once
//! from its head, and the policy's gate (quarantine, the requester's and the tenant's
//! rates, `arbor_server::Server::admit`) passed before its body is read.
//!
//! The runtime gates the requests of a byte stream itself, but only the transport can
//! refuse an HTTP request before it pays for its body: so every POST (and every GET that
//! opens a legacy stream) is admitted here, after the `Host`/`Origin` checks and
//! authentication, and a refusal is answered at once: 429 (a rate) or 503 (a quarantine,
//! too many tenants), `Retry-After`, and the JSON-RPC error the runtime makes of it
//! (`McpError::from(&TenantRefusal)`, -32000 with `data.reason`, `data.limit` and
//! `data.retryAfterMs`). What passes carries its tenant in the request's extensions, so
//! the body is read within the tenant's own cap (`TenantQuota::max_body_bytes`) and the
//! era handlers open their endpoints and sessions in that tenant without asking again.
//!
//! It is not where quotas live or are counted (`arbor_server::tenant`), nor
//! authentication (`auth`): a tenant named by [`HttpConfig::tenant_header`] is a claim
//! anyone can make, for development only.
//!
//! Invariant: a request whose tenant is refused is answered before any byte of its body
//! is read, and each admitted POST or GET takes exactly one token of each rate that
//! applies to it; a legacy session's requests are charged to the tenant and requester
//! the session was opened with.
//!
//! [`HttpConfig::tenant_header`]: crate::HttpConfig::tenant_header

use std::sync::Arc;

use arbor_protocol::error::McpError;
use arbor_server::tenant::TenantRefusal;
use arbor_server::{ConnectOptions, Requester};
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderName, HeaderValue, Response, StatusCode};

use crate::guard::reject;
use crate::head::Head;
use crate::legacy::session::Session;
use crate::server::{verified, Inner, SESSION_ID};

/// The longest tenant name [`HttpConfig::tenant_header`](crate::HttpConfig::tenant_header)
/// accepts, in bytes: a tenant is a metrics label and a tree node's name, so it is short.
pub(crate) const MAX_TENANT_HEADER_BYTES: usize = 64;

/// Whose a legacy session is: the tenant and requester it was opened with, which its
/// later requests are charged to (the policy's rates) whatever their own head says.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tenancy {
    pub(crate) tenant: Option<String>,
    pub(crate) requester: Requester,
}

impl Tenancy {
    /// The tenancy of a session opened with `options`: the same requester the session's
    /// connection gets (its principal, else its peer's address).
    pub(crate) fn of(options: &ConnectOptions) -> Tenancy {
        Tenancy { tenant: options.tenant.clone(), requester: Requester::new(options.auth.as_deref(), options.peer) }
    }
}

/// What the gate learnt about an admitted request, kept in its [`Head`].
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    /// The connect options the head names (the tenant hook's, the verified principal's
    /// tenant, or the tenant header's), when the gate worked them out (`None`: it did not,
    /// for a request of a known session).
    base: Option<Option<ConnectOptions>>,
    /// The largest body read for it: the transport's cap, or the tenant's if lower.
    max_body: usize,
    /// The tenant's limit is the lower one (for the 413's text).
    tenant_cap: bool,
    /// The live legacy session the request named, as the gate found it: the session's
    /// lookup is handed on (`gated_session`), not made again.
    session: Option<Arc<Session>>,
}

/// The legacy session the gate found for this request (named by its `Mcp-Session-Id`,
/// of its own principal), if it did.
pub(crate) fn gated_session(parts: &Head) -> Option<&Arc<Session>> {
    parts.gate.as_ref().and_then(|gate| gate.session.as_ref())
}

/// The options a request of no known session is served with, before its principal and
/// peer are added: the tenant hook's, else the verified principal's tenant, else (OAuth
/// off) the tenant header's; `None` is the default tenant. Read from the gate's work
/// when it did it; else worked out now (a header the gate would have refused is then
/// the default tenant, but the gate runs first on every path that serves a request).
pub(crate) fn base_options(inner: &Inner, parts: &Head) -> Option<ConnectOptions> {
    match parts.gate.as_ref().and_then(|gate| gate.base.as_ref()) {
        Some(base) => base.clone(),
        None => resolve(inner, parts).ok().flatten(),
    }
}

/// The largest body to read for this request (see `Gate`), and whether the tenant's
/// quota set it.
pub(crate) fn max_body(inner: &Inner, parts: &Head) -> (usize, bool) {
    match &parts.gate {
        Some(gate) => (gate.max_body, gate.tenant_cap),
        None => (inner.guard.max_body, false),
    }
}

/// The tenant a request's head names: see [`base_options`]. `Err` is the 400 for a
/// tenant header that is repeated, empty, too long or not `[A-Za-z0-9._-]`.
// The error is the request's final answer, made once: not worth a box.
#[allow(clippy::result_large_err)]
fn resolve(inner: &Inner, parts: &Parts) -> Result<Option<ConnectOptions>, Response<Body>> {
    if let Some(hook) = &inner.config.tenant {
        return Ok(Some(hook(parts)));
    }
    if let Some(v) = verified(parts) {
        // With OAuth on the token names the tenant; a tenant header is not even read.
        return Ok(v.tenant.clone().map(ConnectOptions::tenant));
    }
    let Some(name) = &inner.config.tenant_header else { return Ok(None) };
    header_tenant(&parts.headers, name)
        .map(|t| t.map(ConnectOptions::tenant))
        .map_err(|message| reject(StatusCode::BAD_REQUEST, &McpError::InvalidRequest { message, data: None }, None))
}

/// The tenant named by the header `name`: `None` when it is absent (the default tenant),
/// `Err` with the reason when it is not one valid name.
fn header_tenant(headers: &axum::http::HeaderMap, name: &HeaderName) -> Result<Option<String>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else { return Ok(None) };
    let bad = |why: &str| {
        // The value is not echoed: the name of the header and the rule are enough.
        format!(
            "Bad Request: the {name} header {why}; a tenant is 1 to {MAX_TENANT_HEADER_BYTES} characters of A-Z a-z 0-9 . _ -"
        )
    };
    if values.next().is_some() {
        return Err(bad("is repeated"));
    }
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_TENANT_HEADER_BYTES {
        return Err(bad(if bytes.is_empty() { "is empty" } else { "is too long" }));
    }
    if !bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Err(bad("holds a character outside the tenant alphabet"));
    }
    // All ASCII, checked just above.
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// The gate: works out the request's tenant and requester, admits it against the
/// tenant's policy (`Server::admit`: one token of each rate), and notes what passed in
/// its extensions. `Err` is the answer: the tenant header's 400, or the refusal.
///
/// A request naming a live session (of its own principal) is charged to the session's
/// tenant and requester; any other to the tenant its head names and to its principal,
/// else its peer's address.
#[allow(clippy::result_large_err)]
pub(crate) fn admit(inner: &Inner, parts: &mut Head) -> Result<(), Response<Body>> {
    let session = parts.headers.get(SESSION_ID).cloned();
    admit_named(inner, parts, session.as_ref())
}

/// [`admit`], with the `Mcp-Session-Id` header already looked up (each lookup hashes the
/// name again).
#[allow(clippy::result_large_err)]
pub(crate) fn admit_named(
    inner: &Inner,
    parts: &mut Head,
    session: Option<&axum::http::HeaderValue>,
) -> Result<(), Response<Body>> {
    parts.gate = Some(gate_named(inner, parts, session)?);
    Ok(())
}

/// [`admit_named`], answering the gate rather than noting it in the head: for a caller
/// that holds the head's headers borrowed ([`Known`](crate::head::Known)).
#[allow(clippy::result_large_err)]
pub(crate) fn gate_named(
    inner: &Inner,
    parts: &Head,
    session: Option<&axum::http::HeaderValue>,
) -> Result<Gate, Response<Body>> {
    let session = session
        .and_then(|id| id.to_str().ok())
        .and_then(|id| inner.sessions.get(id))
        // Another principal's session is not found by `find_session` either: not its tenant.
        .filter(|s| s.owner.as_ref() == verified(parts).map(|v| &v.requester));
    match session {
        Some(session) => {
            let tenancy = session.tenancy.clone();
            gate_with(inner, &tenancy, None, Some(session))
        }
        None => {
            let base = resolve(inner, parts)?;
            let tenancy = tenancy_of(parts, base.as_ref());
            gate_with(inner, &tenancy, Some(base), None)
        }
    }
}

/// The tenancy of a request with no session: its tenant as `base` names it; its requester
/// its verified principal, else the hook's identity, else its peer's address.
pub(crate) fn tenancy_of(parts: &Head, base: Option<&ConnectOptions>) -> Tenancy {
    let tenant = base.and_then(|b| b.tenant.clone());
    let requester = match verified(parts) {
        Some(v) => v.requester.clone(),
        None => Requester::new(base.and_then(|b| b.auth.as_deref()), base.and_then(|b| b.peer).or(parts.peer)),
    };
    Tenancy { tenant, requester }
}

/// Admits a request of `tenancy` (see [`admit`]) and notes its body cap.
#[allow(clippy::result_large_err)]
pub(crate) fn admit_as(inner: &Inner, parts: &mut Head, tenancy: &Tenancy) -> Result<(), Response<Body>> {
    parts.gate = Some(gate_with(inner, tenancy, None, None)?);
    Ok(())
}

/// Admits a request of `tenancy`: what the gate notes in its head, with `base` (the
/// options the head names) when the gate worked them out, and the session it found.
#[allow(clippy::result_large_err)]
fn gate_with(
    inner: &Inner,
    tenancy: &Tenancy,
    base: Option<Option<ConnectOptions>>,
    session: Option<Arc<Session>>,
) -> Result<Gate, Response<Body>> {
    let admission =
        inner.server.admit(tenancy.tenant.as_deref(), &tenancy.requester).map_err(|refusal| refused(&refusal))?;
    let cap = inner.guard.max_body;
    let (max_body, tenant_cap) = match admission.max_body_bytes {
        Some(own) if own < cap => (own, true),
        _ => (cap, false),
    };
    Ok(Gate { base, max_body, tenant_cap, session })
}

/// The answer to a request its tenant's policy refused: [`TenantRefusal::status`] (429 for
/// a rate, 503 otherwise), `Retry-After` in whole seconds, and the runtime's JSON-RPC
/// error for it (id null: the body, and so the id, was never read).
pub(crate) fn refused(refusal: &TenantRefusal) -> Response<Body> {
    if matches!(refusal, TenantRefusal::TooManyTenants { .. }) {
        // The runtime counts the refusals of a known tenant; this one has none yet.
        arbor_server::metrics::refused(
            arbor_server::metrics::UNKNOWN_TENANT,
            arbor_server::metrics::Refusal::Overloaded,
        );
    }
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut response = reject(status, &McpError::from(refusal), None);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(refusal.retry_after_secs()));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    #[test]
    fn the_tenant_header_is_one_short_name_of_the_tenant_alphabet() {
        let name = HeaderName::from_static("x-arbor-tenant");
        let with = |values: &[&[u8]]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(&name, HeaderValue::from_bytes(v).unwrap());
            }
            header_tenant(&headers, &name)
        };
        assert_eq!(with(&[]), Ok(None));
        assert_eq!(with(&[b"acme"]), Ok(Some("acme".to_owned())));
        assert_eq!(with(&[b"a.b_c-9"]), Ok(Some("a.b_c-9".to_owned())));
        assert_eq!(with(&[&[b'a'; 64]]), Ok(Some("a".repeat(64))));
        for bad in [&b""[..], &[b'a'; 65], b"ac me", b"acme/x", b"\xc3\xa9"] {
            let err = with(&[bad]).unwrap_err();
            assert!(err.contains("x-arbor-tenant") && err.contains("1 to 64"), "{err}");
        }
        assert!(with(&[b"a", b"b"]).unwrap_err().contains("repeated"));
    }
}

//! The authenticator: on every request of an OAuth-protected endpoint, the bearer token
//! read, verified (or found in the cache of verified tokens) and turned into a
//! [`Verified`] principal, or the request refused with the status and challenge the MCP
//! authorization spec names; after the body is parsed, the scope policy.
//!
//! It is not a verifier (that is the [`TokenVerifier`](super::TokenVerifier)'s work) and
//! it does not route: the server's handlers call it first and carry its [`Verified`] on.
//!
//! Invariants: the token is never stored (the cache is keyed by a keyed 128-bit digest of
//! it) nor put into an answer or a log line; a cached principal is never served past its
//! expiry; the cache holds at most `cache_capacity` entries.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use arbor_server::exchange::Parsed;
use arbor_server::{Principal, Requester, Server};
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use parking_lot::RwLock;
use serde_json::json;
use siphasher::sip128::{Hasher128, SipHasher13};

use super::challenge::{checked, raw_bearer, token_in_query, BearerError, Challenge, Raw};
use super::config::{AuthConfig, TenantSource};
use super::verify::VerifyError;
use crate::guard::reject;

/// A request's verified identity, as the authenticator hands it on (in the request's
/// extensions, for the tenant hook and the era handlers).
#[derive(Debug)]
pub struct Verified {
    /// What the token proved, with the scope hierarchy applied.
    pub principal: Arc<Principal>,
    /// The principal's bookkeeping name (its [`key`](Principal::key)), made once.
    pub requester: Requester,
    /// The tenant the principal's requests run in (`None`: the default tenant).
    pub tenant: Option<String>,
}

/// A cached verification: the principal and until when it may be reused.
struct Entry {
    verified: Arc<Verified>,
    until: SystemTime,
}

/// The digest a verified token is cached under: SipHash-1-3 with a 128-bit output, keyed
/// with 128 random bits per authenticator. A PRF under a key no client knows, so no
/// token can be made to collide with another's digest, and what the cache holds confirms
/// no guess about a token. (SHA-256 costs ten times as much per request on CPUs without
/// SHA extensions: about 43k instructions for a typical 800-byte token.)
struct TokenDigest {
    key: [u8; 16],
}

impl TokenDigest {
    fn new() -> TokenDigest {
        let mut key = [0u8; 16];
        getrandom::fill(&mut key).expect("the system's random source");
        TokenDigest { key }
    }

    fn of(&self, token: &[u8]) -> u128 {
        let mut h = SipHasher13::new_with_key(&self.key);
        h.write(token);
        h.finish128().as_u128()
    }
}

/// The cache's keys are digests already (uniform, keyed): hashing them again would only
/// cost time.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(word);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64 ^ (n >> 64) as u64;
    }
}

/// The running side of an [`AuthConfig`].
pub(crate) struct Authenticator {
    pub(crate) config: AuthConfig,
    metadata_url: String,
    /// The protected resource metadata document, serialised once.
    pub(crate) document: Bytes,
    digest: TokenDigest,
    cache: RwLock<HashMap<u128, Entry, BuildHasherDefault<DigestHasher>>>,
}

impl Authenticator {
    pub(crate) fn new(config: AuthConfig) -> Authenticator {
        Authenticator {
            metadata_url: config.metadata_url(),
            document: Bytes::from(super::metadata::document(&config)),
            digest: TokenDigest::new(),
            cache: RwLock::new(HashMap::default()),
            config,
        }
    }

    /// The request's principal, or the answer refusing it: 400 for a token in the query
    /// string or two `Authorization` headers, 401 for no, a malformed, an invalid or an
    /// expired token, 503 when the verifier cannot decide now.
    #[allow(clippy::result_large_err)] // The refusal is the request's final answer.
    pub(crate) async fn authenticate(&self, parts: &Parts) -> Result<Arc<Verified>, Response<Body>> {
        if token_in_query(parts.uri.query()) {
            return Err(self.refuse(
                StatusCode::BAD_REQUEST,
                BearerError::InvalidRequest,
                "an access token must be sent in the Authorization header, never in the URL",
            ));
        }
        let raw = match raw_bearer(&parts.headers) {
            Raw::Bearer(token) => token,
            Raw::None => return Err(self.unauthorized(None)),
            Raw::Malformed(why) if why.starts_with("more than one") => {
                return Err(self.refuse(StatusCode::BAD_REQUEST, BearerError::InvalidRequest, why))
            }
            Raw::Malformed(why) => return Err(self.unauthorized(Some(why.to_owned()))),
        };
        // The cache first: a token found there was checked and verified when it came first.
        let digest = self.digest.of(raw);
        let now = SystemTime::now();
        if let Some(entry) = self.cache.read().get(&digest) {
            if entry.until > now {
                return Ok(entry.verified.clone());
            }
        }
        let token = match checked(raw) {
            Ok(token) => token,
            Err(why) => return Err(self.unauthorized(Some(why.to_owned()))),
        };
        let principal = match self.config.verifier.verify(token).await {
            Ok(principal) => principal,
            Err(VerifyError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "an access token could not be verified");
                let err = McpError::Other {
                    code: -32000,
                    message: format!("Service Unavailable: the access token cannot be verified now: {why}"),
                    data: None,
                };
                let mut answer = reject(StatusCode::SERVICE_UNAVAILABLE, &err, None);
                answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                return Err(answer);
            }
            Err(err) => return Err(self.unauthorized(Some(err.to_string()))),
        };
        if principal.is_expired_at(now) {
            return Err(self.unauthorized(Some(VerifyError::Expired.to_string())));
        }
        let tenant = match &self.config.tenant {
            TenantSource::Issuer => Some(principal.issuer.clone()),
            TenantSource::Default => None,
            TenantSource::Claim(name) => match principal.claim(name).and_then(|v| v.as_str()) {
                Some(tenant) => Some(tenant.to_owned()),
                None => {
                    let why = format!("the access token has no `{name}` claim naming its tenant");
                    return Err(self.unauthorized(Some(why)));
                }
            },
        };
        let principal = principal.with_hierarchy(&self.config.hierarchy);
        let requester = Requester::Principal(Arc::from(principal.key()));
        let verified = Arc::new(Verified { principal: Arc::new(principal), requester, tenant });
        self.remember(digest, &verified, now);
        Ok(verified)
    }

    /// Keeps a verification until the token expires (or the verifier's TTL ends).
    fn remember(&self, digest: u128, verified: &Arc<Verified>, now: SystemTime) {
        let capacity = self.config.cache_capacity;
        if capacity == 0 {
            return;
        }
        let by_ttl = self.config.verifier.cache_ttl().map(|ttl| now + ttl);
        // A token without `exp` is reused for a minute at most: its revocation must show.
        let by_exp = verified.principal.expires_at.unwrap_or(now + Duration::from_secs(60));
        let until = by_ttl.map_or(by_exp, |t| t.min(by_exp));
        let mut cache = self.cache.write();
        if cache.len() >= capacity {
            cache.retain(|_, e| e.until > now);
            if cache.len() >= capacity {
                // Still full of live tokens: drop half, whichever they are. A dropped
                // token costs one more verification, never a refusal.
                let drop: Vec<_> = cache.keys().take(capacity / 2 + 1).copied().collect();
                for key in drop {
                    cache.remove(&key);
                }
            }
        }
        cache.insert(digest, Entry { verified: verified.clone(), until });
    }

    /// The scope check of a parsed body: every request in it (a batch's members too) must
    /// hold the scopes its operation needs; otherwise 403 `insufficient_scope` naming the
    /// whole set the refused operation needs (one challenge, as 2026-07-28 asks).
    #[allow(clippy::result_large_err)]
    pub(crate) fn authorize(
        &self,
        verified: &Verified,
        parsed: &Parsed,
        server: &Server,
    ) -> Result<(), Response<Body>> {
        for (method, target) in parsed.requests() {
            let tool = match (method, target) {
                // The tool as the principal's tenant runs it (its own handler, if swapped in).
                (MethodName::CallTool, Some(name)) => server.tenant_tool_scopes(verified.tenant.as_deref(), name),
                _ => None,
            };
            let method_scopes = self.config.method_scopes.get(method.as_str());
            let held = |scopes: &[String]| verified.principal.allows(scopes);
            // The common case allocates nothing: every scope is held.
            if held(&self.config.required_scopes)
                && method_scopes.is_none_or(|s| held(s))
                && tool.as_deref().is_none_or(held)
            {
                continue;
            }
            let needed = self.needed(method_scopes, tool.as_deref());
            {
                let missing = verified.principal.missing(&needed).join(" ");
                let description = format!("{} needs the scope(s) {missing}", method.as_str());
                let challenge = Challenge {
                    resource_metadata: Some(self.metadata_url.clone()),
                    scope: needed,
                    error: Some(BearerError::InsufficientScope),
                    error_description: Some(description.clone()),
                };
                return Err(answer(StatusCode::FORBIDDEN, challenge, format!("Forbidden: {description}")));
            }
        }
        Ok(())
    }

    /// Every scope an operation needs, sorted: the server's, the method's, the tool's.
    fn needed(&self, method: Option<&Vec<String>>, tool: Option<&[String]>) -> Vec<String> {
        let mut needed: BTreeSet<&str> = self.config.required_scopes.iter().map(String::as_str).collect();
        needed.extend(method.into_iter().flatten().map(String::as_str));
        needed.extend(tool.into_iter().flatten().map(String::as_str));
        needed.into_iter().map(str::to_owned).collect()
    }

    /// 401: no token (no `error`, RFC 6750 §3.1) or a refused one (`invalid_token`).
    fn unauthorized(&self, why: Option<String>) -> Response<Body> {
        let error = why.as_ref().map(|_| BearerError::InvalidToken);
        let message = match &why {
            Some(why) => format!("Unauthorized: {why}"),
            None => "Unauthorized: this endpoint needs an OAuth access token (Authorization: Bearer)".to_owned(),
        };
        let challenge = Challenge {
            resource_metadata: Some(self.metadata_url.clone()),
            scope: self.config.advertised_scopes().to_vec(),
            error,
            error_description: why,
        };
        answer(StatusCode::UNAUTHORIZED, challenge, message)
    }

    fn refuse(&self, status: StatusCode, error: BearerError, why: &str) -> Response<Body> {
        let challenge = Challenge {
            resource_metadata: Some(self.metadata_url.clone()),
            scope: Vec::new(),
            error: Some(error),
            error_description: Some(why.to_owned()),
        };
        answer(status, challenge, format!("Bad Request: {why}"))
    }
}

/// A refusal: the status, the challenge, and a JSON-RPC error body saying the same.
fn answer(status: StatusCode, challenge: Challenge, message: String) -> Response<Body> {
    // Every authenticator refusal (no, a bad or an insufficient token) is counted here;
    // the tenant is unknown until a token is verified.
    arbor_server::metrics::refused(arbor_server::metrics::UNKNOWN_TENANT, arbor_server::metrics::Refusal::Unauthorized);
    let mut data = json!({ "resourceMetadata": challenge.resource_metadata });
    if let Some(error) = challenge.error {
        data["error"] = json!(error.as_str());
    }
    let err = McpError::Other { code: -32000, message, data: Some(data) };
    let mut response = reject(status, &err, None);
    response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge.to_header_value());
    response
}

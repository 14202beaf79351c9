//! The [`TokenVerifier`] seam: what turns a bearer token into a [`Principal`], and how it
//! says no ([`VerifyError`]).
//!
//! Three verifiers are built in ([`JwtVerifier`](super::JwtVerifier),
//! [`IntrospectionVerifier`](super::IntrospectionVerifier), [`StaticVerifier`](super::StaticVerifier));
//! an application may bring its own. A verifier only judges the token: it knows nothing of
//! HTTP, challenges or scope policy (the authenticator an [`AuthConfig`](super::AuthConfig) sets up does that),
//! and it never puts the token into an error, a log line or a span.
//!
//! Invariant: an `Ok` principal came from a token the verifier accepted for this resource
//! (issuer, audience and lifetime checked, for the built-in ones); every refusal is typed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use arbor_server::Principal;

/// Why a token was refused. The texts are safe to send to the client as the challenge's
/// `error_description` and to log: they never contain the token or its signature.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// Not a token this verifier can read (not a JWT, bad encoding, unknown type).
    #[error("the access token is malformed: {0}")]
    Malformed(String),
    /// Read, but not valid for this resource: a bad signature, another issuer or audience,
    /// a refused algorithm, inactive at introspection, a missing claim.
    #[error("the access token is invalid: {0}")]
    Invalid(String),
    /// Past its `exp` (beyond the leeway).
    #[error("the access token has expired")]
    Expired,
    /// Before its `nbf` (beyond the leeway).
    #[error("the access token is not valid yet")]
    NotYetValid,
    /// The verifier cannot decide now (the introspection endpoint or the key set is out of
    /// reach, and nothing cached answers): the request gets 503, not 401, so a client does
    /// not throw away a good token.
    #[error("the access token cannot be verified now: {0}")]
    Unavailable(String),
}

/// Turns a bearer token into the principal it proves.
///
/// Implement it with `async fn verify(&self, token: &str) -> Result<Principal, VerifyError>`.
/// Called for every request that carries a token the authenticator's
/// cache does not already hold, so it may be as slow as a network round trip, but it must
/// be bounded (time out rather than hang).
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token`: the principal on success, the reason otherwise.
    fn verify(&self, token: &str) -> impl Future<Output = Result<Principal, VerifyError>> + Send;

    /// How long a principal this verifier returned may be reused for the same token
    /// without asking again, at most (it is never reused past the principal's
    /// `expires_at`). `None` (the default): until `expires_at`.
    fn cache_ttl(&self) -> Option<std::time::Duration> {
        None
    }
}

pub(crate) type VerifyFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, VerifyError>> + Send + 'a>>;

/// [`TokenVerifier`] with its future boxed, so the authenticator holds any verifier.
pub(crate) trait DynVerifier: Send + Sync + 'static {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;
    fn cache_ttl(&self) -> Option<std::time::Duration>;
}

impl<V: TokenVerifier> DynVerifier for V {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(TokenVerifier::verify(self, token))
    }

    fn cache_ttl(&self) -> Option<std::time::Duration> {
        TokenVerifier::cache_ttl(self)
    }
}

pub(crate) type SharedVerifier = Arc<dyn DynVerifier>;

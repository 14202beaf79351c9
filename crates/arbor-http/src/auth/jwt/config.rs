//! [`JwtConfig`]: what a [`JwtVerifier`](super::JwtVerifier) accepts, and
//! [`JwtConfigError`]: why one did not start.
//!
//! A builder only: nothing is fetched until [`JwtVerifier::start`](super::JwtVerifier::start).
//! Invariant: no configuration can allow an HMAC algorithm (a public JWKS with HMAC is
//! the alg-confusion attack) or an empty algorithm or audience list.

use std::time::Duration;

use jsonwebtoken::Algorithm;

/// What a [`JwtVerifier`](super::JwtVerifier) checks and how it keeps the issuer's keys.
///
/// `JwtConfig::new(issuer, audience)`, then the setters; the defaults are those of each
/// setter's doc.
#[derive(Clone, Debug)]
pub struct JwtConfig {
    pub(crate) issuer: String,
    pub(crate) audiences: Vec<String>,
    pub(crate) jwks_uri: Option<String>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) leeway: Duration,
    pub(crate) strict_typ: bool,
    pub(crate) jwks_ttl: Duration,
    pub(crate) refetch_interval: Duration,
    pub(crate) http_timeout: Duration,
    pub(crate) client: Option<reqwest::Client>,
}

impl JwtConfig {
    /// Tokens from `issuer` (compared to `iss` exactly, as a string) for `audience`, this
    /// resource's identifier (RFC 8707; compared to `aud` exactly).
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> JwtConfig {
        JwtConfig {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            jwks_uri: None,
            algorithms: vec![Algorithm::RS256, Algorithm::ES256],
            leeway: Duration::from_secs(30),
            strict_typ: false,
            jwks_ttl: Duration::from_secs(5 * 60),
            refetch_interval: Duration::from_secs(10),
            http_timeout: Duration::from_secs(5),
            client: None,
        }
    }

    /// One more accepted audience: `aud` (a string or an array) must contain one of them.
    pub fn audience(mut self, audience: impl Into<String>) -> JwtConfig {
        self.audiences.push(audience.into());
        self
    }

    /// The JWKS URL. Without it, [`JwtVerifier::start`](super::JwtVerifier::start) reads
    /// `jwks_uri` from the issuer's metadata: RFC 8414
    /// (`/.well-known/oauth-authorization-server` inserted before the issuer's path), then
    /// OpenID Connect discovery (`/.well-known/openid-configuration` appended); the
    /// document's `issuer` must equal the configured issuer exactly.
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> JwtConfig {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// The accepted signature algorithms (default RS256 and ES256). Any of RS256, RS384,
    /// RS512, PS256, PS384, PS512, ES256, ES384 and EdDSA; an HMAC algorithm makes
    /// [`JwtVerifier::start`](super::JwtVerifier::start) fail (`none` has no name here).
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> JwtConfig {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// The clock skew allowed on `exp` and `nbf` (default 30 s). `exp` is required.
    pub fn leeway(mut self, leeway: Duration) -> JwtConfig {
        self.leeway = leeway;
        self
    }

    /// Whether the header's `typ` must be `at+jwt` (RFC 9068). Default `false`: `at+jwt`,
    /// `application/at+jwt`, `JWT` or no `typ` pass. Any other `typ` is refused either way.
    pub fn strict_typ(mut self, strict: bool) -> JwtConfig {
        self.strict_typ = strict;
        self
    }

    /// The key set's lifetime when its answer has no `Cache-Control: max-age` (default
    /// 5 min, at least 1 s). A `max-age` is clamped to [30 s, 24 h].
    pub fn jwks_ttl(mut self, ttl: Duration) -> JwtConfig {
        self.jwks_ttl = ttl;
        self
    }

    /// The least time between two key set fetches caused by an unknown `kid` (default
    /// 10 s): within it, a token with an unknown `kid` is refused without a fetch.
    pub fn refetch_interval(mut self, interval: Duration) -> JwtConfig {
        self.refetch_interval = interval;
        self
    }

    /// The bound on every fetch: metadata and key set (default 5 s).
    pub fn http_timeout(mut self, timeout: Duration) -> JwtConfig {
        self.http_timeout = timeout;
        self
    }

    /// The HTTP client for the fetches (default: a new one, rustls, no proxy settings of
    /// its own beyond reqwest's).
    pub fn client(mut self, client: reqwest::Client) -> JwtConfig {
        self.client = Some(client);
        self
    }

    /// The checks that need no network.
    pub(crate) fn validate(&self) -> Result<(), JwtConfigError> {
        if let Some(hmac) =
            self.algorithms.iter().find(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
        {
            return Err(JwtConfigError::HmacAlgorithm(*hmac));
        }
        if self.algorithms.is_empty() {
            return Err(JwtConfigError::NoAlgorithm);
        }
        if self.audiences.iter().any(String::is_empty) || self.issuer.is_empty() {
            return Err(JwtConfigError::Empty);
        }
        Ok(())
    }
}

/// Why a [`JwtVerifier`](super::JwtVerifier) did not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// An HMAC algorithm was allowed: with a public key set, anyone could sign.
    #[error("{0:?} is refused: an HMAC algorithm against a public key set is the algorithm-confusion attack")]
    HmacAlgorithm(Algorithm),
    /// The algorithm list is empty.
    #[error("no signature algorithm is allowed")]
    NoAlgorithm,
    /// The issuer or an audience is the empty string.
    #[error("the issuer and every audience must be non-empty")]
    Empty,
    /// The JWKS URL, or the issuer when its metadata is to be read, is not an absolute
    /// http(s) URL.
    #[error("not an absolute http(s) URL: {0}")]
    InvalidUrl(String),
    /// No metadata document of the issuer gave a `jwks_uri`.
    #[error("the issuer's metadata gave no usable jwks_uri: {0}")]
    Discovery(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    /// The key set's actor did not start.
    #[error("the key set's actor did not start: {0}")]
    Actor(String),
}

//! [`JwtVerifier`]: JWT access tokens (the RFC 9068 profile) checked against the issuer's
//! JWKS, without a call to the authorization server per token.
//!
//! The checks, each refusal typed: the header decodes (`Malformed`); `alg` is in the
//! allowlist (`Invalid`; `none` and HMAC never are); `typ` is an access-token type; a key
//! with the token's `kid` exists (one single-flight, rate-limited refetch when it does not)
//! and fits `alg` (an RSA key never verifies ES256; a key's own `alg` must match); the
//! signature; `iss` exactly; `aud` names one of the configured resources (RFC 8707); `exp`
//! (required; `Expired`) and `nbf` (`NotYetValid`) with the leeway; `sub` is present.
//! `typ` is judged before the key lookup, so a token refused on its type never causes a
//! fetch.
//!
//! It is not an OpenID Connect ID-token validator (no `nonce`, no `at_hash`) and it does not
//! check `jti` replay or `iat`. Invariant: an `Ok` principal was signed by a key of the
//! configured issuer's set, for this resource, and is within its lifetime; no error or log
//! line holds the token or its signature.

mod config;
mod discovery;
#[cfg(test)]
mod tests;

use std::str::FromStr;
use std::sync::Arc;

use arbor_server::Principal;
use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

pub use config::{JwtConfig, JwtConfigError};

use super::claims;
use super::jwks::{CachePolicy, FetchJwks, HttpJwks, JwksCache, JwksStats, KeySet, Miss};
use super::verify::{TokenVerifier, VerifyError};

/// Verifies JWT access tokens against the issuer's JWKS; see the module docs.
///
/// A cheap handle (`Clone`); the key set's actor stops with [`JwtVerifier::shutdown`] or
/// when the last handle is dropped.
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    audiences: Vec<String>,
    /// One prepared `Validation` per allowed algorithm: the signature only, claims are
    /// checked here in the documented order.
    validations: Vec<(Algorithm, Validation)>,
    leeway: f64,
    strict_typ: bool,
    cache: JwksCache,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let algorithms: Vec<_> = self.inner.validations.iter().map(|(a, _)| a).collect();
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("algorithms", &algorithms)
            .field("stats", &self.stats())
            .finish()
    }
}

impl JwtVerifier {
    /// Checks the configuration, finds the JWKS URL (given, or from the issuer's metadata),
    /// starts the key set's actor and waits for its first fetch (bounded by the HTTP
    /// timeout). A failed first fetch does not fail the start: tokens get
    /// [`VerifyError::Unavailable`] until a key set arrives.
    pub async fn start(config: JwtConfig) -> Result<JwtVerifier, JwtConfigError> {
        config.validate()?;
        let client = match &config.client {
            Some(client) => client.clone(),
            None => reqwest::Client::builder().build().map_err(|e| JwtConfigError::Client(e.to_string()))?,
        };
        let uri = match &config.jwks_uri {
            Some(uri) => discovery::http_url(uri)?,
            None => discovery::jwks_uri(&client, &config.issuer, config.http_timeout).await?,
        };
        let fetcher = HttpJwks { client, uri, timeout: config.http_timeout };
        JwtVerifier::with_fetcher(config, fetcher).await
    }

    /// [`JwtVerifier::start`] with the key set from `fetcher` (the tests' seam).
    pub(crate) async fn with_fetcher(
        config: JwtConfig,
        fetcher: impl FetchJwks,
    ) -> Result<JwtVerifier, JwtConfigError> {
        ensure_crypto_provider();
        config.validate()?;
        let policy = CachePolicy {
            default_ttl: config.jwks_ttl,
            refetch_interval: config.refetch_interval,
            fetch_timeout: config.http_timeout,
        };
        let cache = JwksCache::start(fetcher, policy).await.map_err(JwtConfigError::Actor)?;
        let validations = config
            .algorithms
            .iter()
            .map(|alg| {
                let mut validation = Validation::new(*alg);
                validation.required_spec_claims.clear();
                validation.validate_exp = false;
                validation.validate_nbf = false;
                validation.validate_aud = false;
                (*alg, validation)
            })
            .collect();
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuer: config.issuer,
                audiences: config.audiences,
                validations,
                leeway: config.leeway.as_secs_f64(),
                strict_typ: config.strict_typ,
                cache,
            }),
        })
    }

    /// The key set's counters.
    pub fn stats(&self) -> JwksStats {
        self.inner.cache.stats()
    }

    /// Stops the key set's actor (the keys held keep verifying, but are no longer
    /// refreshed). Dropping the last handle does the same.
    pub async fn shutdown(&self) {
        self.inner.cache.shutdown().await;
    }
}

/// The header fields read before the signature check.
#[derive(serde::Deserialize)]
struct RawHeader {
    alg: String,
    kid: Option<String>,
    typ: Option<String>,
}

impl Inner {
    async fn verify(&self, token: &str) -> Result<Principal, VerifyError> {
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(VerifyError::Malformed("not a JWS in compact serialization".into()));
        };
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|_| VerifyError::Malformed("the header is not base64url".into()))?;
        let header: RawHeader = serde_json::from_slice(&header)
            .map_err(|_| VerifyError::Malformed("the header is not a JOSE header".into()))?;

        let (alg, validation) = self.algorithm(&header.alg)?;
        self.check_typ(header.typ.as_deref())?;
        let set = self.key_set(header.kid.as_deref(), alg).await?;
        let key = set.find(header.kid.as_deref(), alg).map_err(|miss| refusal(miss, &set))?;
        let claims = signed_claims(token, key, validation)?;
        self.principal(claims)
    }

    fn algorithm(&self, name: &str) -> Result<(Algorithm, &Validation), VerifyError> {
        if name.eq_ignore_ascii_case("none") {
            return Err(VerifyError::Invalid("unsigned tokens (alg none) are refused".into()));
        }
        let alg =
            Algorithm::from_str(name).map_err(|_| VerifyError::Invalid("unsupported signature algorithm".into()))?;
        self.validations
            .iter()
            .find(|(allowed, _)| *allowed == alg)
            .map(|(_, validation)| (alg, validation))
            .ok_or_else(|| VerifyError::Invalid(format!("the signature algorithm {alg:?} is not accepted")))
    }

    fn check_typ(&self, typ: Option<&str>) -> Result<(), VerifyError> {
        let access_token = |t: &str| t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt");
        let ok = match typ {
            Some(t) if access_token(t) => true,
            Some(t) => !self.strict_typ && t.eq_ignore_ascii_case("JWT"),
            None => !self.strict_typ,
        };
        if ok {
            Ok(())
        } else {
            Err(VerifyError::Invalid("the token type (typ) is not an access token".into()))
        }
    }

    /// The key set to verify with: the one in use, or after one refetch if it lacks the key.
    async fn key_set(&self, kid: Option<&str>, alg: Algorithm) -> Result<Arc<KeySet>, VerifyError> {
        let set = self.cache.keys();
        if !matches!(set.find(kid, alg), Err(Miss::Unknown)) {
            return Ok(set);
        }
        Ok(self.cache.refetch_for_unknown_kid().await)
    }

    /// The checks on the verified claims, in order, and the principal they describe.
    fn principal(&self, claims: Map<String, Value>) -> Result<Principal, VerifyError> {
        if claims::string(&claims, "iss") != Some(self.issuer.as_str()) {
            return Err(VerifyError::Invalid("the token is from another issuer".into()));
        }
        if !claims::audience_matches(claims.get("aud"), &self.audiences) {
            return Err(VerifyError::Invalid("the token is for another audience".into()));
        }
        let now = claims::now();
        let exp = claims::numeric_date(&claims, "exp")
            .map_err(|_| VerifyError::Invalid("exp is not a NumericDate".into()))?
            .ok_or_else(|| VerifyError::Invalid("the token has no exp".into()))?;
        if now >= exp + self.leeway {
            return Err(VerifyError::Expired);
        }
        let nbf = claims::numeric_date(&claims, "nbf")
            .map_err(|_| VerifyError::Invalid("nbf is not a NumericDate".into()))?;
        if nbf.is_some_and(|nbf| nbf > now + self.leeway) {
            return Err(VerifyError::NotYetValid);
        }
        let subject = match claims::string(&claims, "sub") {
            Some(sub) if !sub.is_empty() => sub.to_owned(),
            _ => return Err(VerifyError::Invalid("the token has no sub".into())),
        };
        let mut principal = Principal::new(self.issuer.clone(), subject).with_scopes(claims::scopes(&claims));
        if let Some(client) = claims::string(&claims, "client_id").or_else(|| claims::string(&claims, "azp")) {
            principal = principal.with_client_id(client);
        }
        if let Some(at) = claims::instant(exp) {
            principal = principal.with_expiry(at);
        }
        Ok(principal.with_claims(claims))
    }
}

/// Why the set has no key for the token.
fn refusal(miss: Miss, set: &KeySet) -> VerifyError {
    match miss {
        Miss::Unknown if set.is_empty() => VerifyError::Unavailable("the issuer's key set could not be fetched".into()),
        Miss::Unknown => VerifyError::Invalid("unknown key id".into()),
        Miss::Incompatible => VerifyError::Invalid("the key named by kid does not fit the algorithm".into()),
        Miss::Ambiguous => VerifyError::Invalid("the token names no kid and several keys fit".into()),
    }
}

/// The claims, once the signature is checked with `key`.
fn signed_claims(token: &str, key: &DecodingKey, validation: &Validation) -> Result<Map<String, Value>, VerifyError> {
    jsonwebtoken::decode::<Map<String, Value>>(token, key, validation).map(|data| data.claims).map_err(|e| {
        match e.kind() {
            ErrorKind::InvalidSignature => VerifyError::Invalid("the signature does not verify".into()),
            ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                VerifyError::Malformed("the token does not decode".into())
            }
            _ => VerifyError::Invalid("the signature cannot be checked with the issuer's key".into()),
        }
    })
}

impl TokenVerifier for JwtVerifier {
    async fn verify(&self, token: &str) -> Result<Principal, VerifyError> {
        self.inner.verify(token).await
    }
}

/// Makes sure jsonwebtoken has its process-wide crypto provider. With one backend feature
/// on it has one already; with both (some other crate asked for the other backend)
/// jsonwebtoken would refuse to pick, so aws-lc is installed, unless the application
/// installed a provider of its own first.
pub(crate) fn ensure_crypto_provider() {
    use jsonwebtoken::crypto::CryptoProvider;
    if CryptoProvider::try_get_default().is_some() {
        return;
    }
    #[cfg(feature = "aws-lc")]
    let provider = &jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER;
    #[cfg(all(feature = "rust-crypto", not(feature = "aws-lc")))]
    let provider = &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER;
    // Another thread may have installed one meanwhile: either is fine.
    let _ = provider.install_default();
}

//! [`IntrospectionVerifier`]: opaque access tokens judged by the authorization server's
//! RFC 7662 introspection endpoint.
//!
//! Each call POSTs `token=…&token_type_hint=access_token`, authenticated as this resource
//! server's client (`client_secret_basic` by default, or `client_secret_post`), and maps the
//! answer: `active: false` is `Invalid("inactive")`; `iss` (when an issuer is configured and
//! the answer names one) must match; `aud` must name a configured audience when audiences
//! are configured (an answer without `aud` is refused then, RFC 8707); a past `exp` is
//! `Expired`, a future `nbf` `NotYetValid`; a network error, timeout or non-200 answer is
//! `Unavailable` (503, so a client keeps its token).
//!
//! It does not cache: [`TokenVerifier::cache_ttl`] tells the authenticator's cache to keep a
//! result until min(`exp`, the TTL). Invariant: the token travels only in the request body
//! to the configured endpoint; it is never logged, and no error text or `Debug` output
//! holds it or the client secret.

use std::sync::Arc;
use std::time::Duration;

use arbor_server::Principal;
use serde_json::{Map, Value};

use super::claims;
use super::jwks::http::without_url;
use super::verify::{TokenVerifier, VerifyError};

/// The largest introspection answer read.
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How the resource server authenticates to the introspection endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IntrospectionAuth {
    /// HTTP Basic with the form-encoded client id and secret (RFC 6749 §2.3.1).
    #[default]
    Basic,
    /// `client_id` and `client_secret` in the form body.
    Post,
}

/// Where and how to introspect; `IntrospectionConfig::new(endpoint, client_id)` and the
/// setters.
#[derive(Clone)]
pub struct IntrospectionConfig {
    endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    auth: IntrospectionAuth,
    audiences: Vec<String>,
    issuer: Option<String>,
    cache_ttl: Duration,
    http_timeout: Duration,
    client: Option<reqwest::Client>,
}

impl std::fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth)
            .field("audiences", &self.audiences)
            .field("issuer", &self.issuer)
            .field("cache_ttl", &self.cache_ttl)
            .field("http_timeout", &self.http_timeout)
            .finish()
    }
}

impl IntrospectionConfig {
    /// Introspect at `endpoint` as client `client_id` (without a secret, the id goes in the
    /// form and no client authentication is sent).
    pub fn new(endpoint: impl Into<String>, client_id: impl Into<String>) -> IntrospectionConfig {
        IntrospectionConfig {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            auth: IntrospectionAuth::Basic,
            audiences: Vec::new(),
            issuer: None,
            cache_ttl: Duration::from_secs(60),
            http_timeout: Duration::from_secs(5),
            client: None,
        }
    }

    /// The client secret.
    pub fn client_secret(mut self, secret: impl Into<String>) -> IntrospectionConfig {
        self.client_secret = Some(secret.into());
        self
    }

    /// How the secret is sent (default [`IntrospectionAuth::Basic`]).
    pub fn auth_method(mut self, auth: IntrospectionAuth) -> IntrospectionConfig {
        self.auth = auth;
        self
    }

    /// One accepted audience (this resource's identifier); once any is set, the answer's
    /// `aud` must name one of them.
    pub fn audience(mut self, audience: impl Into<String>) -> IntrospectionConfig {
        self.audiences.push(audience.into());
        self
    }

    /// The expected issuer: an answer's `iss` must equal it, and it is the principal's
    /// issuer when the answer names none. Without it and without `iss`, the principal's
    /// issuer is the endpoint's origin.
    pub fn issuer(mut self, issuer: impl Into<String>) -> IntrospectionConfig {
        self.issuer = Some(issuer.into());
        self
    }

    /// How long the authenticator may reuse an answer (default 60 s; never past `exp`).
    pub fn cache_ttl(mut self, ttl: Duration) -> IntrospectionConfig {
        self.cache_ttl = ttl;
        self
    }

    /// The bound on each introspection call (default 5 s).
    pub fn http_timeout(mut self, timeout: Duration) -> IntrospectionConfig {
        self.http_timeout = timeout;
        self
    }

    /// The HTTP client (default: a new one).
    pub fn client(mut self, client: reqwest::Client) -> IntrospectionConfig {
        self.client = Some(client);
        self
    }
}

/// Why an [`IntrospectionVerifier`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntrospectionConfigError {
    /// The endpoint is not an absolute http(s) URL.
    #[error("the introspection endpoint is not an absolute http(s) URL: {0}")]
    InvalidUrl(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
}

/// Verifies opaque tokens by RFC 7662 introspection; see the module docs. `Clone` is cheap.
#[derive(Clone)]
pub struct IntrospectionVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    config: IntrospectionConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
    /// The issuer for answers without `iss`.
    default_issuer: String,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("IntrospectionVerifier").field(&self.inner.config).finish()
    }
}

impl IntrospectionVerifier {
    /// A verifier for `config`; no request is made yet.
    pub fn new(config: IntrospectionConfig) -> Result<IntrospectionVerifier, IntrospectionConfigError> {
        let endpoint = reqwest::Url::parse(&config.endpoint)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| IntrospectionConfigError::InvalidUrl(config.endpoint.clone()))?;
        let client = match &config.client {
            Some(client) => client.clone(),
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| IntrospectionConfigError::Client(e.to_string()))?,
        };
        let default_issuer = config.issuer.clone().unwrap_or_else(|| endpoint.origin().ascii_serialization());
        Ok(IntrospectionVerifier { inner: Arc::new(Inner { config, endpoint, client, default_issuer }) })
    }
}

impl Inner {
    async fn introspect(&self, token: &str) -> Result<Map<String, Value>, VerifyError> {
        let config = &self.config;
        let mut form = format!("token={}&token_type_hint=access_token", form_encode(token));
        let mut request = self.client.post(self.endpoint.clone()).timeout(config.http_timeout);
        match (&config.client_secret, config.auth) {
            (Some(secret), IntrospectionAuth::Basic) => {
                request = request.basic_auth(form_encode(&config.client_id), Some(form_encode(secret)));
            }
            (Some(secret), _) => {
                form.push_str(&format!(
                    "&client_id={}&client_secret={}",
                    form_encode(&config.client_id),
                    form_encode(secret)
                ));
            }
            (None, _) => form.push_str(&format!("&client_id={}", form_encode(&config.client_id))),
        }
        let unavailable = |why: String| VerifyError::Unavailable(format!("token introspection failed: {why}"));
        let response = request
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(form)
            .send()
            .await
            .map_err(|e| unavailable(without_url(e)))?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(unavailable(format!("HTTP {status}")));
        }
        if response.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
            return Err(unavailable("the answer is too large".into()));
        }
        let body = response.bytes().await.map_err(|e| unavailable(without_url(e)))?;
        if body.len() > MAX_ANSWER_BYTES {
            return Err(unavailable("the answer is too large".into()));
        }
        serde_json::from_slice(&body).map_err(|_| unavailable("the answer is not a JSON object".into()))
    }

    fn principal(&self, answer: Map<String, Value>) -> Result<Principal, VerifyError> {
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(VerifyError::Invalid("inactive".into()));
        }
        let issuer = match (claims::string(&answer, "iss"), &self.config.issuer) {
            (Some(iss), Some(expected)) if iss != expected => {
                return Err(VerifyError::Invalid("the token is from another issuer".into()));
            }
            (Some(iss), _) => iss.to_owned(),
            (None, _) => self.default_issuer.clone(),
        };
        if !self.config.audiences.is_empty() && !claims::audience_matches(answer.get("aud"), &self.config.audiences) {
            return Err(VerifyError::Invalid("the token is for another audience".into()));
        }
        let now = claims::now();
        let exp = claims::numeric_date(&answer, "exp")
            .map_err(|_| VerifyError::Invalid("exp is not a NumericDate".into()))?;
        if exp.is_some_and(|exp| now >= exp) {
            return Err(VerifyError::Expired);
        }
        let nbf = claims::numeric_date(&answer, "nbf")
            .map_err(|_| VerifyError::Invalid("nbf is not a NumericDate".into()))?;
        if nbf.is_some_and(|nbf| nbf > now) {
            return Err(VerifyError::NotYetValid);
        }
        let client_id = claims::string(&answer, "client_id").filter(|c| !c.is_empty());
        // A client-credentials token may have no `sub`: its principal is the client.
        let subject = claims::string(&answer, "sub")
            .filter(|s| !s.is_empty())
            .or(client_id)
            .ok_or_else(|| VerifyError::Invalid("the answer names no sub and no client_id".into()))?;
        let mut principal = Principal::new(issuer, subject).with_scopes(claims::scopes(&answer));
        if let Some(client) = client_id {
            principal = principal.with_client_id(client);
        }
        if let Some(at) = exp.and_then(claims::instant) {
            principal = principal.with_expiry(at);
        }
        Ok(principal.with_claims(answer))
    }
}

impl TokenVerifier for IntrospectionVerifier {
    async fn verify(&self, token: &str) -> Result<Principal, VerifyError> {
        let answer = self.inner.introspect(token).await?;
        self.inner.principal(answer)
    }

    fn cache_ttl(&self) -> Option<Duration> {
        Some(self.inner.config.cache_ttl)
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(byte as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verifier(config: IntrospectionConfig) -> Inner {
        let v = IntrospectionVerifier::new(config).unwrap();
        Arc::try_unwrap(v.inner).ok().unwrap()
    }

    fn answer(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn form_encoding() {
        assert_eq!(form_encode("a b+c/=&é~"), "a+b%2Bc%2F%3D%26%C3%A9%7E");
        assert_eq!(form_encode("Az09*-._"), "Az09*-._");
    }

    #[test]
    fn the_answer_maps_to_a_principal() {
        let v = verifier(IntrospectionConfig::new("https://as.example/introspect", "rs").issuer("https://as.example"));
        let exp = claims::now() as u64 + 600;
        let p = v
            .principal(answer(json!({"active": true, "sub": "alice", "client_id": "app", "scope": "a b", "exp": exp})))
            .unwrap();
        assert_eq!(
            (p.issuer.as_str(), p.subject.as_str(), p.client_id.as_deref()),
            ("https://as.example", "alice", Some("app"))
        );
        assert_eq!(p.scopes.iter().map(String::as_str).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(p.expires_at, claims::instant(exp as f64));
        let machine = v.principal(answer(json!({"active": true, "client_id": "svc"}))).unwrap();
        assert_eq!(machine.subject, "svc");
        assert!(matches!(v.principal(answer(json!({"active": true}))), Err(VerifyError::Invalid(_))));
    }

    #[test]
    fn refusals_are_typed() {
        let v = verifier(
            IntrospectionConfig::new("https://as.example/introspect", "rs")
                .issuer("https://as.example")
                .audience("https://mcp.example"),
        );
        let ok = json!({"active": true, "sub": "a", "aud": ["x", "https://mcp.example"]});
        assert!(v.principal(answer(ok.clone())).is_ok());
        assert_eq!(v.principal(answer(json!({"active": false}))), Err(VerifyError::Invalid("inactive".into())));
        assert_eq!(
            v.principal(answer(json!({"active": "true", "sub": "a"}))),
            Err(VerifyError::Invalid("inactive".into()))
        );
        let mut other_iss = ok.clone();
        other_iss["iss"] = json!("https://evil.example");
        assert!(matches!(v.principal(answer(other_iss)), Err(VerifyError::Invalid(_))));
        let mut no_aud = ok.clone();
        no_aud.as_object_mut().unwrap().remove("aud");
        assert!(matches!(v.principal(answer(no_aud)), Err(VerifyError::Invalid(_))));
        let mut old = ok.clone();
        old["exp"] = json!(claims::now() as u64 - 5);
        assert_eq!(v.principal(answer(old)), Err(VerifyError::Expired));
        let mut early = ok;
        early["nbf"] = json!(claims::now() as u64 + 600);
        assert_eq!(v.principal(answer(early)), Err(VerifyError::NotYetValid));
    }

    #[test]
    fn without_an_issuer_the_endpoint_origin_names_the_principal() {
        let v = verifier(IntrospectionConfig::new("https://as.example:8443/oauth/introspect", "rs"));
        let p = v.principal(answer(json!({"active": true, "sub": "a"}))).unwrap();
        assert_eq!(p.issuer, "https://as.example:8443");
        let named = v.principal(answer(json!({"active": true, "sub": "a", "iss": "https://as.example"}))).unwrap();
        assert_eq!(named.issuer, "https://as.example");
    }

    #[test]
    fn debug_hides_the_secret_and_bad_endpoints_are_refused() {
        let config = IntrospectionConfig::new("https://as.example/i", "rs").client_secret("s3cr3t-value");
        assert!(!format!("{config:?}").contains("s3cr3t"));
        assert!(IntrospectionVerifier::new(IntrospectionConfig::new("ftp://as.example/i", "rs")).is_err());
        assert!(IntrospectionVerifier::new(IntrospectionConfig::new("/introspect", "rs")).is_err());
    }
}

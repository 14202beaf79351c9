//! The token endpoint exchange (RFC 6749 §3.2, §5): one form POST with the client's
//! authentication (`client_secret_basic`, `client_secret_post`, `private_key_jwt` or
//! none) and, when tokens are DPoP-bound, a proof (RFC 9449 §5) sent again once with the
//! server's nonce when it answers `use_dpop_nonce` (§8).
//!
//! Not the flow: `flow` decides which grant and when. Invariant: an error names the status
//! and the server's `error` code (clamped), never a token, a secret or an assertion; each
//! attempt carries a new proof and a new client assertion (their `jti`s are single-use).

use std::time::{Duration, SystemTime};

use base64::Engine;
use serde::Deserialize;

use super::flow::{dpop_nonce, http_error, Authorizer};
use super::store::{Registration, TokenSet};
use super::OAuthError;

/// One authorization server's token endpoint, as the client talks to it.
pub(super) struct Endpoint<'a> {
    pub(super) url: &'a str,
    /// The authorization server's issuer (a client assertion's audience).
    #[cfg_attr(not(feature = "private-key-jwt"), allow(dead_code))]
    pub(super) issuer: &'a str,
    pub(super) registration: &'a Registration,
    /// Its `token_endpoint_auth_methods_supported`.
    pub(super) methods: Option<&'a [String]>,
    /// Whether requests carry a DPoP proof (the server offers ES256 DPoP and the client
    /// binds its tokens).
    pub(super) dpop: bool,
}

/// The token endpoint's answer, success or error (RFC 6749 §5.1, §5.2).
#[derive(Deserialize)]
struct Answer {
    access_token: Option<String>,
    token_type: Option<String>,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
    error: Option<String>,
}

impl Endpoint<'_> {
    /// The client authentication method: the registered one if the server lists it, else
    /// Basic (or post when only that is listed) with a secret, else none.
    fn auth_method(&self) -> &str {
        let listed = |m: &str| self.methods.is_none_or(|ms| ms.iter().any(|x| x == m));
        match (&self.registration.auth_method, &self.registration.client_secret) {
            (Some(m), _) if listed(m) => m,
            (_, Some(_))
                if self.methods.is_some_and(|ms| !ms.iter().any(|x| x == "client_secret_basic"))
                    && listed("client_secret_post") =>
            {
                "client_secret_post"
            }
            (_, Some(_)) => "client_secret_basic",
            (_, None) => "none",
        }
    }
}

impl Authorizer {
    /// A token request: `form` (the grant's parameters) with the client's authentication
    /// and, for DPoP, a proof; a `use_dpop_nonce` answer is retried once with the nonce.
    pub(super) async fn token_request(
        &self,
        endpoint: &Endpoint<'_>,
        form: Vec<(String, String)>,
        scopes: &[String],
    ) -> Result<TokenSet, OAuthError> {
        let mut nonce_retried = false;
        loop {
            let mut form = form.clone();
            let mut request = self.http.post(endpoint.url);
            let registration = endpoint.registration;
            // `private_key_jwt`: a signed assertion instead of any secret; its audience is
            // the authorization server's issuer.
            #[cfg(feature = "private-key-jwt")]
            let method = match &self.oauth.assertion_key {
                Some(key) => {
                    form.push(("client_id".into(), registration.client_id.clone()));
                    let kind = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
                    form.push(("client_assertion_type".into(), kind.to_owned()));
                    form.push(("client_assertion".into(), key.sign(&registration.client_id, endpoint.issuer)?));
                    "private_key_jwt"
                }
                None => endpoint.auth_method(),
            };
            #[cfg(not(feature = "private-key-jwt"))]
            let method = endpoint.auth_method();
            match (method, &registration.client_secret) {
                ("private_key_jwt", _) => {}
                ("client_secret_basic", Some(secret)) => {
                    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
                    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
                        "{}:{}",
                        enc(&registration.client_id),
                        enc(secret)
                    ));
                    request = request.header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"));
                }
                ("client_secret_post", Some(secret)) => {
                    form.push(("client_id".into(), registration.client_id.clone()));
                    form.push(("client_secret".into(), secret.clone()));
                }
                _ => form.push(("client_id".into(), registration.client_id.clone())),
            }
            let proofed = match self.dpop_key().filter(|_| endpoint.dpop) {
                Some(key) => {
                    let nonce = self.as_nonce.lock().clone().filter(|(url, _)| url == endpoint.url).map(|(_, n)| n);
                    request = request.header("dpop", key.proof("POST", endpoint.url, None, nonce.as_deref())?);
                    true
                }
                None => false,
            };
            let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
            let response = request
                .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .map_err(http_error)?;
            let status = response.status();
            let nonce = dpop_nonce(response.headers());
            if let Some(nonce) = &nonce {
                *self.as_nonce.lock() = Some((endpoint.url.to_owned(), nonce.clone()));
            }
            let answer: Answer = response.json().await.map_err(|e| OAuthError::Token(e.without_url().to_string()))?;
            let asks_nonce = status.as_u16() == 400 && answer.error.as_deref() == Some("use_dpop_nonce");
            if asks_nonce && proofed && nonce.is_some() && !nonce_retried {
                nonce_retried = true;
                continue;
            }
            return match answer.access_token {
                Some(access_token) if status.is_success() => {
                    let dpop = answer.token_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
                    if dpop && !proofed {
                        return Err(OAuthError::Token("a DPoP-bound token was issued without a proof".into()));
                    }
                    Ok(TokenSet {
                        access_token,
                        refresh_token: answer.refresh_token,
                        expires_at: answer.expires_in.map(|s| SystemTime::now() + Duration::from_secs(s)),
                        scopes: scopes.to_vec(),
                        dpop,
                    })
                }
                _ => Err(OAuthError::Token(format!(
                    "HTTP {}: {}",
                    status.as_u16(),
                    arbor_protocol::reflect::Clamped(answer.error.as_deref().unwrap_or("no access token"))
                ))),
            };
        }
    }
}

//! The OAuth flow of one HTTP link: what a 401 or a 403 `insufficient_scope` from the MCP
//! server sets off, step by step as the MCP authorization spec orders it (brief:
//! `authorization.md` §6): the challenge read, the protected resource metadata found and
//! checked, the authorization server's metadata found and checked, registration, scope
//! selection, the authorization (code + PKCE, or client credentials), the token; the
//! refresh of a token about to expire; and DPoP (RFC 9449): whether to bind the token to a
//! key, and the servers' nonces.
//!
//! It is not the transport: the link asks for the credential before each request and
//! hands back a refusal; the token endpoint exchange itself is `token`. Invariant: one
//! flow runs at a time per link (a `tokio` mutex; a refusal that arrives after another
//! flow already replaced the token it was sent with only retries), and identifiers are
//! raw strings throughout.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use arbor_protocol::www_authenticate::parse_challenges;
use base64::Engine;
use parking_lot::Mutex;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::dpop::DpopKey;
use super::store::{Registration, TokenSet};
use super::token::Endpoint;
use super::{Grant, OAuth, OAuthError};

/// RFC 7523's grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// How many times one request is sent again with a new DPoP nonce (RFC 9449 §9).
pub(crate) const MAX_NONCE_RETRIES: usize = 2;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A token is refreshed this long before it expires, or when a quarter of its lifetime is
/// left if that is shorter (a token that lives a minute is not refreshed at once).
const REFRESH_AHEAD: Duration = Duration::from_secs(30);

/// How long before `expires_at` a token of `lifetime` is refreshed.
fn refresh_ahead(lifetime: Option<Duration>) -> Duration {
    lifetime.map_or(REFRESH_AHEAD, |l| REFRESH_AHEAD.min(l / 4))
}

/// The token in use and where it came from.
#[derive(Clone)]
struct Current {
    tokens: TokenSet,
    /// When `tokens` arrived (their lifetime is `expires_at` minus this).
    obtained: SystemTime,
    resource: String,
    issuer: String,
    token_endpoint: String,
    registration: Registration,
    auth_methods: Option<Vec<String>>,
    /// The token endpoint takes DPoP proofs (refreshes carry one too).
    dpop: bool,
}

/// What a server's refusal asks of DPoP, read from its challenges and metadata. Ordered
/// by how much is asked, so two readings combine with `max`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
enum DpopAsk {
    /// Nothing: bearer tokens.
    #[default]
    No,
    /// DPoP is accepted (a `DPoP` challenge beside a `Bearer` one, or DPoP algorithms in
    /// its metadata): used when the authorization server offers it.
    Offered,
    /// Only DPoP-bound tokens are accepted.
    Required,
}

/// What the link puts on a request: the `Authorization` value, and the `DPoP` proof for a
/// bound token.
pub(crate) struct Credential {
    pub(crate) authorization: String,
    pub(crate) proof: Option<String>,
    /// The access token (to say which one a refusal was for).
    pub(crate) token: String,
}

/// Why the link may send a refused request again.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// A new token is in place (or another flow put one there).
    Authorized,
    /// The server asked for a DPoP nonce, which the next proof carries.
    Nonce,
}

/// A refusal from the MCP server, as the link saw it.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) challenges: Vec<String>,
    /// The access token the refused request carried.
    pub(crate) sent: Option<String>,
    /// The response's `DPoP-Nonce`, if any.
    pub(crate) nonce: Option<String>,
}

/// One link's OAuth state.
pub(crate) struct Authorizer {
    pub(super) oauth: OAuth,
    server_url: String,
    pub(super) http: reqwest::Client,
    current: Mutex<Option<Current>>,
    /// The scopes asked for last (step-up asks for these and the challenged ones).
    requested: Mutex<BTreeSet<String>>,
    flow: tokio::sync::Mutex<()>,
    /// The DPoP key: the application's, or made when a server first asked for DPoP.
    dpop_key: Mutex<Option<DpopKey>>,
    /// The last nonce of each DPoP server: the token endpoint's (with its URL) and the
    /// MCP server's.
    pub(super) as_nonce: Mutex<Option<(String, String)>>,
    rs_nonce: Mutex<Option<String>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("server_url", &self.server_url).finish_non_exhaustive()
    }
}

impl Authorizer {
    pub(crate) fn new(oauth: OAuth, server_url: &str) -> Authorizer {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client");
        Authorizer {
            dpop_key: Mutex::new(oauth.dpop_key.clone()),
            oauth,
            server_url: server_url.to_owned(),
            http,
            current: Mutex::new(None),
            requested: Mutex::new(BTreeSet::new()),
            flow: tokio::sync::Mutex::new(()),
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
        }
    }

    /// The most authorizations one request may cause.
    pub(crate) fn max_authorizations(&self) -> usize {
        self.oauth.max_authorizations
    }

    /// The credential for the next `method` request: the token, refreshed first when it
    /// is about to expire and a refresh token is held (a failed refresh keeps the old
    /// token: the server decides), as a bearer or, bound, with the `DPoP` scheme and a
    /// fresh proof.
    pub(crate) async fn credential(&self, method: &str) -> Option<Credential> {
        let tokens = self.tokens().await?;
        if !tokens.dpop {
            return Some(Credential {
                authorization: format!("Bearer {}", tokens.access_token),
                proof: None,
                token: tokens.access_token,
            });
        }
        let key = self.dpop_key.lock().clone()?;
        let nonce = self.rs_nonce.lock().clone();
        match key.proof(method, &self.server_url, Some(&tokens.access_token), nonce.as_deref()) {
            Ok(proof) => Some(Credential {
                authorization: format!("DPoP {}", tokens.access_token),
                proof: Some(proof),
                token: tokens.access_token,
            }),
            Err(e) => {
                tracing::debug!(error = %e, "no DPoP proof");
                None
            }
        }
    }

    /// Keeps the MCP server's newest DPoP nonce (RFC 9449 §9: any response may carry one).
    pub(crate) fn observe(&self, headers: &reqwest::header::HeaderMap) {
        if let Some(nonce) = dpop_nonce(headers) {
            *self.rs_nonce.lock() = Some(nonce);
        }
    }

    /// The tokens in use, refreshed first when about to expire.
    async fn tokens(&self) -> Option<TokenSet> {
        let current = self.current.lock().clone()?;
        let lifetime = current.tokens.expires_at.and_then(|at| at.duration_since(current.obtained).ok());
        let ahead = refresh_ahead(lifetime);
        let expiring = current.tokens.expires_at.is_some_and(|at| at <= SystemTime::now() + ahead);
        if expiring && current.tokens.refresh_token.is_some() {
            let _flow = self.flow.lock().await;
            let still = self.current.lock().clone()?;
            if still.tokens.access_token == current.tokens.access_token {
                if let Err(e) = self.refresh(&still).await {
                    tracing::debug!(error = %e, "refreshing an expiring token failed");
                }
            }
        }
        self.current.lock().as_ref().map(|c| c.tokens.clone())
    }

    /// Answers a refusal: a DPoP nonce kept, or a refresh, a step-up or an authorization
    /// from the start. `Ok` says why the request may be sent again.
    pub(crate) async fn answer(&self, refusal: Refusal) -> Result<Retry, OAuthError> {
        let challenges = parse_challenges(&refusal.challenges.join(", ")).unwrap_or_default();
        let scheme = |name: &str| challenges.iter().find(|c| c.scheme.eq_ignore_ascii_case(name));
        let (bearer_challenge, dpop_challenge) = (scheme("bearer"), scheme("dpop"));
        // RFC 9449 §9: the proof lacked the nonce the server wants; the next one has it.
        if refusal.status == 401 && dpop_challenge.is_some_and(asks_for_nonce) {
            return match refusal.nonce {
                Some(nonce) => {
                    *self.rs_nonce.lock() = Some(nonce);
                    Ok(Retry::Nonce)
                }
                None => Err(OAuthError::Dpop("the server asked for a nonce and sent none".into())),
            };
        }
        let _flow = self.flow.lock().await;
        let held = self.current.lock().as_ref().map(|c| c.tokens.access_token.clone());
        if held.is_some() && held != refusal.sent {
            return Ok(Retry::Authorized);
        }
        let ask = match (bearer_challenge, dpop_challenge) {
            (None, Some(_)) => DpopAsk::Required,
            (Some(_), Some(_)) => DpopAsk::Offered,
            _ => DpopAsk::No,
        };
        // The parameters of the challenge for the scheme the token was sent with, else
        // the bearer one, else the DPoP one.
        let sent_dpop = self.current.lock().as_ref().is_some_and(|c| c.tokens.dpop);
        let challenge =
            if sent_dpop { dpop_challenge.or(bearer_challenge) } else { bearer_challenge.or(dpop_challenge) };
        let param = |name: &str| challenge.and_then(|c| c.param(name)).map(str::to_owned);
        let challenged: Option<Vec<String>> = param("scope").map(|s| s.split_whitespace().map(str::to_owned).collect());
        let step_up = refusal.status == 403 && param("error").as_deref() == Some("insufficient_scope");
        if refusal.status == 403 && !step_up {
            return Err(OAuthError::Authorization("the server refused the request (403)".into()));
        }
        // A 401 with a token and a refresh token: refresh first.
        if refusal.status == 401 && refusal.sent.is_some() {
            let current = self.current.lock().clone();
            if let Some(current) = current.filter(|c| c.tokens.refresh_token.is_some()) {
                if self.refresh(&current).await.is_ok() {
                    return Ok(Retry::Authorized);
                }
            }
        }
        self.authorize(param("resource_metadata"), challenged, step_up, ask).await.map(|()| Retry::Authorized)
    }

    /// Steps 2–10: discovery, registration, scope, authorization, token.
    async fn authorize(
        &self,
        metadata_url: Option<String>,
        challenged: Option<Vec<String>>,
        step_up: bool,
        ask: DpopAsk,
    ) -> Result<(), OAuthError> {
        let prm = match self.resource_metadata(metadata_url).await? {
            Some(prm) => prm,
            // 2025-03-26 servers publish no resource metadata: their own origin is the
            // authorization server, and there is no resource identifier to send.
            None if self.oauth.legacy_discovery => ResourceMetadata {
                resource: String::new(),
                authorization_servers: vec![discovery::split_origin(&self.server_url).0.to_owned()],
                scopes_supported: None,
                dpop_signing_alg_values_supported: None,
                dpop_bound_access_tokens_required: None,
            },
            None => return Err(OAuthError::ResourceMetadata("none found at the well-known URLs".into())),
        };
        let legacy = prm.resource.is_empty();
        if !legacy && !discovery::resource_fits(&prm.resource, &self.server_url) {
            return Err(OAuthError::ResourceMismatch { resource: prm.resource, server: self.server_url.clone() });
        }
        let issuer = prm
            .authorization_servers
            .first()
            .cloned()
            .ok_or_else(|| OAuthError::ResourceMetadata("it names no authorization server".into()))?;
        let meta = self.server_metadata(&issuer, legacy).await?;
        // Legacy: the metadata's own issuer is the one to hold the callback's `iss` to.
        let issuer = if legacy { meta.issuer.clone() } else { issuer };
        let scopes = self.scopes(&prm, &meta, challenged, step_up);
        let ask = ask.max(match (prm.dpop_bound_access_tokens_required, &prm.dpop_signing_alg_values_supported) {
            (Some(true), _) => DpopAsk::Required,
            (_, Some(_)) => DpopAsk::Offered,
            _ => DpopAsk::No,
        });
        let dpop = self.use_dpop(&meta, ask)?;
        let registration = self.register(&issuer, &meta).await?;
        let endpoint = Endpoint {
            url: &meta.token_endpoint,
            issuer: &issuer,
            registration: &registration,
            methods: meta.token_endpoint_auth_methods_supported.as_deref(),
            dpop,
        };
        let tokens = match self.oauth.grant {
            Grant::AuthorizationCode => self.code_flow(&prm, &issuer, &meta, &endpoint, &scopes).await?,
            Grant::ClientCredentials | Grant::JwtBearer { .. } | Grant::EnterpriseManaged { .. } => {
                let mut form = match &self.oauth.grant {
                    Grant::JwtBearer { assertion } => vec![
                        ("grant_type".to_owned(), JWT_BEARER.to_owned()),
                        ("assertion".to_owned(), assertion.clone()),
                    ],
                    Grant::EnterpriseManaged { idp_token_endpoint, idp_client_id, id_token } => {
                        let grant = self
                            .identity_assertion(idp_token_endpoint, idp_client_id, id_token, &issuer, &prm.resource)
                            .await?;
                        vec![("grant_type".to_owned(), JWT_BEARER.to_owned()), ("assertion".to_owned(), grant)]
                    }
                    _ => vec![("grant_type".to_owned(), "client_credentials".to_owned())],
                };
                if !scopes.is_empty() {
                    form.push(("scope".into(), scopes.join(" ")));
                }
                push_resource(&mut form, &prm.resource);
                self.token_request(&endpoint, form, &scopes).await?
            }
        };
        if ask == DpopAsk::Required && !tokens.dpop {
            return Err(OAuthError::Dpop(
                "the server accepts DPoP-bound tokens only and its authorization server issued a bearer token".into(),
            ));
        }
        *self.requested.lock() = scopes.iter().cloned().collect();
        let key = if legacy { self.server_url.clone() } else { prm.resource.clone() };
        self.oauth.store.save_tokens(&key, &issuer, Some(tokens.clone()));
        *self.current.lock() = Some(Current {
            tokens,
            obtained: SystemTime::now(),
            resource: prm.resource,
            issuer,
            token_endpoint: meta.token_endpoint,
            registration,
            auth_methods: meta.token_endpoint_auth_methods_supported,
            dpop,
        });
        Ok(())
    }

    /// Whether to bind the token to the DPoP key: when the application gave a key or the
    /// server asks, and the authorization server offers ES256 DPoP (RFC 9449 §5.1). A
    /// server that requires DPoP from an authorization server without it is an error
    /// before any authorization request. The key is made here on first need.
    fn use_dpop(&self, meta: &ServerMetadata, ask: DpopAsk) -> Result<bool, OAuthError> {
        let offered = meta.dpop_signing_alg_values_supported.as_ref().is_some_and(|a| a.iter().any(|a| a == "ES256"));
        let wanted = ask != DpopAsk::No || self.dpop_key.lock().is_some();
        if ask == DpopAsk::Required && !offered {
            return Err(OAuthError::Dpop(format!(
                "the server accepts DPoP-bound tokens only and its authorization server {} offers no ES256 DPoP",
                arbor_protocol::reflect::Clamped(&meta.issuer)
            )));
        }
        if !(wanted && offered) {
            return Ok(false);
        }
        let mut key = self.dpop_key.lock();
        if key.is_none() {
            *key = Some(DpopKey::generate()?);
        }
        Ok(true)
    }

    /// The DPoP key, when tokens are bound.
    pub(super) fn dpop_key(&self) -> Option<DpopKey> {
        self.dpop_key.lock().clone()
    }

    /// SEP-990's first step: the user's ID token exchanged at the identity provider
    /// (RFC 8693) for an identity assertion grant for `audience` (the authorization
    /// server) and `resource`.
    async fn identity_assertion(
        &self,
        endpoint: &str,
        client_id: &str,
        id_token: &str,
        audience: &str,
        resource: &str,
    ) -> Result<String, OAuthError> {
        discovery::check_url(endpoint, self.oauth.allow_http_loopback)?;
        let form = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("subject_token", id_token),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"),
            ("audience", audience),
            ("resource", resource),
            ("client_id", client_id),
        ];
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let response = self
            .http
            .post(endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(http_error)?;
        let status = response.status().as_u16();
        #[derive(Deserialize)]
        struct Exchanged {
            access_token: Option<String>,
            error: Option<String>,
        }
        let answer: Exchanged = response.json().await.map_err(|e| OAuthError::Token(e.without_url().to_string()))?;
        answer.access_token.ok_or_else(|| {
            let why = answer.error.unwrap_or_else(|| "no identity assertion".into());
            OAuthError::Token(format!(
                "the identity provider answered {status}: {}",
                arbor_protocol::reflect::Clamped(&why)
            ))
        })
    }

    /// Step 2: the challenge's metadata URL and nothing else, or the well-known URLs in
    /// order (the next one on a 4xx).
    /// `Ok(None)`: every URL answered 4xx.
    async fn resource_metadata(&self, named: Option<String>) -> Result<Option<ResourceMetadata>, OAuthError> {
        let urls = match named {
            Some(url) => vec![url],
            None => discovery::resource_metadata_urls(&self.server_url),
        };
        for url in urls {
            discovery::check_url(&url, self.oauth.allow_http_loopback)?;
            match self.get_json::<ResourceMetadata>(&url).await {
                Ok(Some(doc)) => return Ok(Some(doc)),
                Ok(None) => continue,
                Err(e) => return Err(OAuthError::ResourceMetadata(e)),
            }
        }
        Ok(None)
    }

    /// Step 4: the authorization server's metadata, by the spec's URLs in order; its
    /// `issuer` must be the identifier exactly and it must offer PKCE S256.
    /// `legacy`: a 2025-03-26 server (no resource metadata); without any metadata its
    /// origin's `/authorize`, `/token` and `/register` are used.
    async fn server_metadata(&self, issuer: &str, legacy: bool) -> Result<ServerMetadata, OAuthError> {
        discovery::check_url(issuer, self.oauth.allow_http_loopback)?;
        for url in discovery::server_metadata_urls(issuer) {
            let doc = match self.get_json::<ServerMetadata>(&url).await {
                Ok(Some(doc)) => doc,
                Ok(None) => continue,
                Err(e) => return Err(OAuthError::ServerMetadata(e)),
            };
            // A 2025-03-26 server gives no issuer to hold its metadata to: the URL was made
            // from its origin, so there is nothing the document could be compared with.
            if doc.issuer != issuer && !legacy {
                return Err(OAuthError::ServerMetadata(format!(
                    "its issuer {} is not the authorization server {issuer}",
                    arbor_protocol::reflect::Clamped(&doc.issuer)
                )));
            }
            if self.oauth.grant == Grant::AuthorizationCode
                && !doc.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256"))
            {
                return Err(OAuthError::ServerMetadata("it does not offer PKCE with S256".into()));
            }
            for endpoint in
                [Some(&doc.token_endpoint), doc.authorization_endpoint.as_ref(), doc.registration_endpoint.as_ref()]
                    .into_iter()
                    .flatten()
            {
                discovery::check_url(endpoint, self.oauth.allow_http_loopback)?;
            }
            return Ok(doc);
        }
        if legacy {
            return Ok(ServerMetadata {
                issuer: issuer.to_owned(),
                authorization_endpoint: Some(format!("{issuer}/authorize")),
                token_endpoint: format!("{issuer}/token"),
                registration_endpoint: Some(format!("{issuer}/register")),
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                token_endpoint_auth_methods_supported: None,
                scopes_supported: None,
                client_id_metadata_document_supported: None,
                authorization_response_iss_parameter_supported: None,
                dpop_signing_alg_values_supported: None,
            });
        }
        Err(OAuthError::ServerMetadata(format!("none found for {issuer}")))
    }

    /// Step 6: the configured scopes; else the challenge's (with the ones asked for before,
    /// on a step-up); else the metadata's `scopes_supported`; else none.
    fn scopes(
        &self,
        prm: &ResourceMetadata,
        meta: &ServerMetadata,
        challenged: Option<Vec<String>>,
        step_up: bool,
    ) -> Vec<String> {
        if let Some(scopes) = &self.oauth.scope {
            return scopes.clone();
        }
        let mut set: BTreeSet<String> = match challenged {
            Some(scopes) => scopes.into_iter().collect(),
            None => prm.scopes_supported.clone().unwrap_or_default().into_iter().collect(),
        };
        if step_up {
            set.extend(self.requested.lock().iter().cloned());
        }
        let offers_offline = meta.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if offers_offline && self.oauth.grant == Grant::AuthorizationCode && !set.is_empty() {
            set.insert("offline_access".into());
        }
        set.into_iter().collect()
    }

    /// Step 5: pre-registered credentials for this issuer, a client ID metadata document,
    /// dynamic registration; each kept under the issuer only.
    async fn register(&self, issuer: &str, meta: &ServerMetadata) -> Result<Registration, OAuthError> {
        if let Some(pre) = &self.oauth.preregistered {
            let bound = pre.issuer.as_deref().is_none_or(|i| i == issuer);
            if bound {
                return Ok(Registration {
                    client_id: pre.client_id.clone(),
                    client_secret: pre.client_secret.clone(),
                    auth_method: None,
                });
            }
        }
        if let Some(known) = self.oauth.store.registration(issuer) {
            return Ok(known);
        }
        if let (Some(url), Some(true)) = (&self.oauth.metadata_url, meta.client_id_metadata_document_supported) {
            return Ok(Registration { client_id: url.clone(), client_secret: None, auth_method: Some("none".into()) });
        }
        let Some(endpoint) = &meta.registration_endpoint else {
            return Err(OAuthError::Registration(format!("{issuer} offers no registration and none is configured")));
        };
        let body = serde_json::json!({
            "client_name": self.oauth.client_name,
            "redirect_uris": [self.oauth.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "application_type": "native",
        });
        let response = self.http.post(endpoint).json(&body).send().await.map_err(http_error)?;
        let status = response.status();
        if !status.is_success() {
            return Err(OAuthError::Registration(format!("the registration endpoint answered {}", status.as_u16())));
        }
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
        }
        let r: Registered = response.json().await.map_err(|e| OAuthError::Registration(e.without_url().to_string()))?;
        let registration = Registration {
            client_id: r.client_id,
            client_secret: r.client_secret,
            auth_method: r.token_endpoint_auth_method,
        };
        self.oauth.store.save_registration(issuer, registration.clone());
        Ok(registration)
    }

    /// Steps 7–9: the authorization request through the user agent, its callback checked
    /// (`state`, RFC 9207 `iss`), the code exchanged.
    async fn code_flow(
        &self,
        prm: &ResourceMetadata,
        issuer: &str,
        meta: &ServerMetadata,
        token_endpoint: &Endpoint<'_>,
        scopes: &[String],
    ) -> Result<TokenSet, OAuthError> {
        let registration = token_endpoint.registration;
        let endpoint = meta
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::ServerMetadata("it has no authorization endpoint".into()))?;
        let verifier = random_b64(32)?;
        let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_b64(16)?;
        let query = {
            let mut query = url::form_urlencoded::Serializer::new(String::new());
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &registration.client_id)
                .append_pair("redirect_uri", &self.oauth.redirect_uri)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
            if !prm.resource.is_empty() {
                query.append_pair("resource", &prm.resource);
            }
            query.finish()
        };
        let sep = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{sep}{query}");
        let callback = self.oauth.user_agent.authorize(&url, &self.oauth.redirect_uri).await?;
        if callback.state.as_deref() != Some(state.as_str()) {
            return Err(OAuthError::Authorization("the answer's state is not the request's".into()));
        }
        // RFC 9207, before the token endpoint is touched; exact strings.
        let advertised = meta.authorization_response_iss_parameter_supported == Some(true);
        match (&callback.iss, advertised) {
            (Some(iss), _) if iss != issuer => {
                return Err(OAuthError::Authorization("the answer comes from another issuer".into()))
            }
            (None, true) => {
                return Err(OAuthError::Authorization("the answer lacks the iss its server promised".into()))
            }
            _ => {}
        }
        if let Some(error) = &callback.error {
            return Err(OAuthError::Authorization(format!(
                "the server answered {}",
                arbor_protocol::reflect::Clamped(error)
            )));
        }
        let code = callback.code.ok_or_else(|| OAuthError::Authorization("the answer has no code".into()))?;
        let mut form = vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".into(), code),
            ("redirect_uri".into(), self.oauth.redirect_uri.clone()),
            ("code_verifier".into(), verifier),
        ];
        push_resource(&mut form, &prm.resource);
        self.token_request(token_endpoint, form, scopes).await
    }

    /// A refresh with the held refresh token; on success the token in use is replaced.
    async fn refresh(&self, current: &Current) -> Result<(), OAuthError> {
        let refresh =
            current.tokens.refresh_token.clone().ok_or_else(|| OAuthError::Token("no refresh token".into()))?;
        let mut form =
            vec![("grant_type".to_owned(), "refresh_token".to_owned()), ("refresh_token".into(), refresh.clone())];
        push_resource(&mut form, &current.resource);
        let endpoint = Endpoint {
            url: &current.token_endpoint,
            issuer: &current.issuer,
            registration: &current.registration,
            methods: current.auth_methods.as_deref(),
            dpop: current.dpop,
        };
        let mut tokens = self.token_request(&endpoint, form, &current.tokens.scopes).await?;
        // A server that does not rotate refresh tokens sends none back: keep ours.
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh);
        }
        self.oauth.store.save_tokens(&current.resource, &current.issuer, Some(tokens.clone()));
        if let Some(held) = self.current.lock().as_mut() {
            held.tokens = tokens;
            held.obtained = SystemTime::now();
        }
        Ok(())
    }

    /// GETs a JSON document: `Ok(None)` on a 4xx (try the next URL), `Err` on anything else.
    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<Option<T>, String> {
        let response = self
            .http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let status = response.status();
        if status.is_client_error() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("{url} answered {}", status.as_u16()));
        }
        response.json::<T>().await.map(Some).map_err(|e| format!("{url}: {}", e.without_url()))
    }
}

/// The `resource` parameter (RFC 8707), the identifier exactly as the metadata gave it;
/// none for a 2025-03-26 server, which has no identifier.
fn push_resource(form: &mut Vec<(String, String)>, resource: &str) {
    if !resource.is_empty() {
        form.push(("resource".into(), resource.to_owned()));
    }
}

/// Whether a response is a resource server's DPoP nonce challenge (RFC 9449 §9): a 401
/// with a `DPoP` challenge `error="use_dpop_nonce"` and a `DPoP-Nonce`.
pub(crate) fn asks_nonce(status: u16, headers: &reqwest::header::HeaderMap) -> bool {
    status == 401
        && dpop_nonce(headers).is_some()
        && headers.get_all(reqwest::header::WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).any(|v| {
            parse_challenges(v)
                .unwrap_or_default()
                .iter()
                .any(|c| c.scheme.eq_ignore_ascii_case("dpop") && asks_for_nonce(c))
        })
}

/// Whether a `DPoP` challenge says the proof lacked the nonce the server wants.
fn asks_for_nonce(challenge: &arbor_protocol::www_authenticate::ParsedChallenge) -> bool {
    challenge.param("error") == Some("use_dpop_nonce")
}

/// A response's `DPoP-Nonce`.
pub(crate) fn dpop_nonce(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers.get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

pub(super) fn http_error(e: reqwest::Error) -> OAuthError {
    OAuthError::Http(e.without_url().to_string())
}

/// `n` random bytes, base64url: PKCE verifiers and `state`.
fn random_b64(n: usize) -> Result<String, OAuthError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| OAuthError::Authorization(format!("no randomness: {e}")))?;
    Ok(B64.encode(bytes))
}

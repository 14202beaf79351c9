//! OAuth 2.1 for the client: on an HTTP target with [`OAuth`] set, a 401 (or a 403
//! `insufficient_scope`) from the server is answered by the client itself: discovery of
//! the protected resource and its authorization server, registration, authorization code
//! with PKCE (or client credentials), and the request sent again with the token.
//!
//! The pieces: [`discovery`] (the well-known URLs, built by string surgery so identifiers
//! stay exactly as the server wrote them), [`CredentialStore`] (registrations keyed by
//! issuer, tokens by resource and issuer; in memory by default), [`UserAgent`] (the
//! authorization step: [`LoopbackUserAgent`] for a CLI, [`HeadlessUserAgent`] for tests and
//! the conformance driver), and the flow itself (`flow`), one per link.
//!
//! This module is not an authorization server and keeps no token anywhere but the store.
//! Invariants: identifiers (resource, issuer) are raw strings compared exactly, never
//! re-serialised by a URL parser; no token or secret appears in an error, a log line or a
//! `Debug` output; at most [`OAuth::max_authorizations`] authorization requests are made
//! per request the client sends.

#[cfg(feature = "private-key-jwt")]
mod assertion;
pub mod discovery;
#[cfg(feature = "dpop")]
mod dpop;
#[cfg(not(feature = "dpop"))]
#[path = "no_dpop.rs"]
mod dpop;
pub(crate) mod flow;
mod store;
mod token;
mod user_agent;

use std::fmt;
use std::sync::Arc;

#[cfg(feature = "dpop")]
pub use dpop::DpopKey;
pub use store::{CredentialStore, MemoryStore, Registration, TokenSet};
pub use user_agent::{Callback, HeadlessUserAgent, LoopbackUserAgent, UserAgent};

pub(crate) use flow::Authorizer;

/// How the client obtains tokens.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grant {
    /// Authorization code with PKCE, through the [`UserAgent`] (a person, or a headless
    /// agent in tests).
    AuthorizationCode,
    /// Client credentials (a machine client): needs pre-registered credentials.
    ClientCredentials,
    /// The JWT-bearer grant (RFC 7523) with a workload's identity token as the assertion
    /// (workload identity federation): no user, no secret. A refusal is final: the grant
    /// is not retried and no other grant is tried instead.
    JwtBearer {
        /// The workload identity token (a JWT the authorization server trusts).
        assertion: String,
    },
    /// Enterprise-managed authorization (SEP-990): the user's ID token from the
    /// enterprise identity provider is exchanged there (RFC 8693) for an identity
    /// assertion grant (ID-JAG) naming this authorization server and resource, which the
    /// JWT-bearer grant then turns into an access token, with the client's pre-registered
    /// credentials.
    EnterpriseManaged {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The client id registered with the identity provider.
        idp_client_id: String,
        /// The user's ID token from the identity provider.
        id_token: String,
    },
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::AuthorizationCode => f.write_str("AuthorizationCode"),
            Grant::ClientCredentials => f.write_str("ClientCredentials"),
            // The assertion is a credential: never shown.
            Grant::JwtBearer { .. } => f.write_str("JwtBearer { assertion: <redacted> }"),
            Grant::EnterpriseManaged { idp_token_endpoint, idp_client_id, .. } => f
                .debug_struct("EnterpriseManaged")
                .field("idp_token_endpoint", idp_token_endpoint)
                .field("idp_client_id", idp_client_id)
                .field("id_token", &"<redacted>")
                .finish(),
        }
    }
}

/// Credentials registered with an authorization server beforehand.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id.
    pub client_id: String,
    /// The secret, for `client_secret_basic` / `client_secret_post`; `None` for a public
    /// client.
    pub client_secret: Option<String>,
    /// The issuer they were registered with; `None` binds them to the first
    /// authorization server the client meets (and only to it).
    pub issuer: Option<String>,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// OAuth settings of an HTTP target ([`HttpTarget::oauth`](crate::HttpTarget::oauth)).
#[derive(Clone)]
pub struct OAuth {
    pub(crate) grant: Grant,
    pub(crate) client_name: String,
    pub(crate) redirect_uri: String,
    pub(crate) user_agent: Arc<dyn user_agent::DynUserAgent>,
    pub(crate) store: Arc<dyn CredentialStore>,
    pub(crate) preregistered: Option<ClientCredentials>,
    pub(crate) metadata_url: Option<String>,
    pub(crate) scope: Option<Vec<String>>,
    pub(crate) allow_http_loopback: bool,
    pub(crate) legacy_discovery: bool,
    pub(crate) max_authorizations: usize,
    #[cfg(feature = "private-key-jwt")]
    pub(crate) assertion_key: Option<assertion::AssertionKey>,
    /// The key DPoP-bound tokens are bound to: the application's, else one made when a
    /// server first asks for DPoP.
    pub(crate) dpop_key: Option<dpop::DpopKey>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("grant", &self.grant)
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("preregistered", &self.preregistered)
            .field("metadata_url", &self.metadata_url)
            .field("scope", &self.scope)
            .field("allow_http_loopback", &self.allow_http_loopback)
            .field("dpop_key", &self.dpop_key)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// Authorization code + PKCE through `user_agent`, with `redirect_uri` (a loopback
    /// or https URL the user agent reads the answer at), registering dynamically (or with
    /// a client ID metadata document, or pre-registered credentials, when set).
    pub fn authorization_code(
        client_name: impl Into<String>,
        redirect_uri: impl Into<String>,
        user_agent: impl UserAgent,
    ) -> OAuth {
        OAuth {
            grant: Grant::AuthorizationCode,
            client_name: client_name.into(),
            redirect_uri: redirect_uri.into(),
            user_agent: Arc::new(user_agent),
            store: Arc::new(MemoryStore::default()),
            preregistered: None,
            metadata_url: None,
            scope: None,
            allow_http_loopback: false,
            legacy_discovery: false,
            max_authorizations: 2,
            #[cfg(feature = "private-key-jwt")]
            assertion_key: None,
            dpop_key: None,
        }
    }

    /// Client credentials with `credentials` (a machine client; no user agent).
    pub fn client_credentials(credentials: ClientCredentials) -> OAuth {
        let defaults = OAuth::authorization_code(credentials.client_id.clone(), "", HeadlessUserAgent::new());
        OAuth { grant: Grant::ClientCredentials, preregistered: Some(credentials), ..defaults }
    }

    /// The JWT-bearer grant for a workload: `client_id` (pre-registered, public) and the
    /// workload's identity token, exchanged at the token endpoint for an access token.
    pub fn jwt_bearer(client_id: impl Into<String>, assertion: impl Into<String>) -> OAuth {
        let credentials = ClientCredentials { client_id: client_id.into(), client_secret: None, issuer: None };
        OAuth { grant: Grant::JwtBearer { assertion: assertion.into() }, ..OAuth::client_credentials(credentials) }
    }

    /// Client credentials authenticated with `private_key_jwt` (RFC 7523): `client_id`
    /// registered with the public half of the ES256 key `private_key_pem` (PKCS#8 PEM).
    /// Needs the `private-key-jwt` feature.
    #[cfg(feature = "private-key-jwt")]
    pub fn client_credentials_jwt(client_id: impl Into<String>, private_key_pem: &str) -> Result<OAuth, OAuthError> {
        let credentials = ClientCredentials { client_id: client_id.into(), client_secret: None, issuer: None };
        let key = assertion::AssertionKey::es256(private_key_pem)?;
        Ok(OAuth { assertion_key: Some(key), ..OAuth::client_credentials(credentials) })
    }

    /// Enterprise-managed authorization (see [`Grant::EnterpriseManaged`]): `credentials`
    /// registered with the authorization server, and the user's `id_token` from the
    /// identity provider whose token endpoint and client id are given.
    pub fn enterprise_managed(
        credentials: ClientCredentials,
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        id_token: impl Into<String>,
    ) -> OAuth {
        let grant = Grant::EnterpriseManaged {
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            id_token: id_token.into(),
        };
        OAuth { grant, ..OAuth::client_credentials(credentials) }
    }

    /// The same settings with pre-registered credentials (used before CIMD and DCR).
    pub fn preregistered(mut self, credentials: ClientCredentials) -> OAuth {
        self.preregistered = Some(credentials);
        self
    }

    /// The same settings with a client ID metadata document URL (an https URL with a
    /// path), used as the `client_id` where the authorization server supports it.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> OAuth {
        self.metadata_url = Some(url.into());
        self
    }

    /// The same settings with a credential store of the application's (persistent,
    /// encrypted: the spec leaves secure storage to the application).
    pub fn store(mut self, store: impl CredentialStore) -> OAuth {
        self.store = Arc::new(store);
        self
    }

    /// The same settings asking for exactly `scopes` instead of what the server suggests.
    pub fn scope<I, S>(mut self, scopes: I) -> OAuth
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scope = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The same settings allowing plain `http://` authorization servers and metadata on
    /// loopback addresses (`127.0.0.1`, `[::1]`, `localhost`): for tests and local
    /// development. Off by default: authorization endpoints must be https, and discovery
    /// refuses loopback, private and link-local addresses (SSRF).
    pub fn allow_http_loopback(mut self) -> OAuth {
        self.allow_http_loopback = true;
        self
    }

    /// The same settings also speaking to 2025-03-26 servers, which publish no protected
    /// resource metadata: their origin is taken as the authorization server (its RFC 8414
    /// metadata, else `/authorize`, `/token`, `/register` there) and no `resource` is sent.
    /// Off by default: without metadata a current server is refused.
    pub fn legacy_discovery(mut self) -> OAuth {
        self.legacy_discovery = true;
        self
    }

    /// The same settings asking for DPoP-bound tokens (RFC 9449) bound to `key` from every
    /// authorization server that offers ES256 DPoP, whether or not the MCP server asks.
    /// Without it the client still uses DPoP, with a key of its own made on first use,
    /// when the server asks for it (a `DPoP` challenge, or protected resource metadata
    /// with `dpop_bound_access_tokens_required` or `dpop_signing_alg_values_supported`).
    /// Give the key when tokens outlive the process (a bound token needs its key). Needs
    /// the `dpop` feature (on by default).
    #[cfg(feature = "dpop")]
    pub fn dpop(mut self, key: DpopKey) -> OAuth {
        self.dpop_key = Some(key);
        self
    }

    /// The most authorization requests one MCP request may cause (a 401, then a 403
    /// step-up). Default 2.
    pub fn max_authorizations(mut self, n: usize) -> OAuth {
        self.max_authorizations = n;
        self
    }
}

/// Why the client could not obtain or use a token. Never carries a token or a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The protected resource metadata could not be found or read.
    #[error("the protected resource metadata could not be read: {0}")]
    ResourceMetadata(String),
    /// The metadata names a resource that is not this server (a confused deputy): no
    /// authorization request was made.
    #[error("the protected resource metadata names another resource ({resource}) than this server ({server})")]
    ResourceMismatch {
        /// What the metadata said.
        resource: String,
        /// The server's URL.
        server: String,
    },
    /// The authorization server's metadata could not be found, or is unusable (its
    /// `issuer` differs from the identifier, no PKCE S256).
    #[error("the authorization server metadata is unusable: {0}")]
    ServerMetadata(String),
    /// A URL was refused by the safety rules (https only, no private addresses).
    #[error("refused URL {url}: {why}")]
    UnsafeUrl {
        /// The URL (never one carrying a token).
        url: String,
        /// Which rule.
        why: &'static str,
    },
    /// No way to register with the authorization server.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The authorization step failed (the user agent, a `state` or `iss` mismatch, an
    /// error answer).
    #[error("authorization failed: {0}")]
    Authorization(String),
    /// The token endpoint refused.
    #[error("the token request failed: {0}")]
    Token(String),
    /// The server still refuses after the authorizations allowed.
    #[error("the server still refuses after {0} authorization(s)")]
    RetryLimit(usize),
    /// An HTTP exchange with the authorization server failed.
    #[error("an authorization HTTP exchange failed: {0}")]
    Http(String),
    /// DPoP could not be used where the server requires it (no ES256 DPoP at its
    /// authorization server, a bearer token issued instead, the feature left out), or a
    /// key could not be made or used.
    #[error("DPoP: {0}")]
    Dpop(String),
}

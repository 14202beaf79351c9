//! [`AuthConfig`]: what OAuth on an endpoint needs to know: the resource it protects, who
//! issues its tokens, how tokens are verified, and which scopes each operation needs.
//!
//! Plain data read once when the [`HttpServer`](crate::HttpServer) is built; the
//! authenticator (`super::authenticator`) acts on it. Invariant: identifiers (`resource`,
//! issuers) are kept as the strings given and compared exactly.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use arbor_protocol::uri::split_origin;
use arbor_server::ScopeHierarchy;

use super::verify::{SharedVerifier, TokenVerifier};

/// Where a verified principal's tenant comes from: each principal's requests then run in
/// that tenant's supervision subtree, with its bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TenantSource {
    /// The token's issuer: one tenant per authorization server (the default).
    #[default]
    Issuer,
    /// A string claim of the token (`tenant`, `org_id`). A token without it is refused
    /// (401 `invalid_token` naming the claim): a request that cannot be placed in a tenant
    /// is not served in someone else's.
    Claim(String),
    /// Every principal in the default tenant.
    Default,
}

/// OAuth 2.1 resource-server settings for an endpoint ([`HttpConfig::auth`](crate::HttpConfig#structfield.auth)).
#[derive(Clone)]
pub struct AuthConfig {
    /// The resource identifier (RFC 8707/9728): the endpoint's canonical URL, such as
    /// `https://mcp.example.com/mcp`. Served verbatim as the metadata's `resource`; the
    /// verifier must accept only tokens whose audience contains it.
    pub resource: String,
    /// The authorization servers whose tokens are accepted (issuer identifiers), listed
    /// in the metadata. At least one.
    pub authorization_servers: Vec<String>,
    /// The metadata's `scopes_supported`: the scopes a client needs for basic use.
    /// Default: `required_scopes`.
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs, whatever it asks. Default none.
    pub required_scopes: Vec<String>,
    /// Further scopes per method (`"tools/call"`, `"resources/read"`), on top of
    /// `required_scopes`. A `tools/call` also needs the scopes its tool declares
    /// ([`ToolRoute::scopes`](arbor_server::router::ToolRoute::scopes)).
    pub method_scopes: BTreeMap<String, Vec<String>>,
    /// Which scopes imply which (`files:write` ⇒ `files:read`), applied to every verified
    /// token before any check.
    pub hierarchy: ScopeHierarchy,
    /// Where the tenant comes from. Default: the issuer. A [`TenantHook`](crate::TenantHook),
    /// when set too, has the last word (it sees the principal in the request's extensions).
    pub tenant: TenantSource,
    /// The metadata's `resource_name`, if any.
    pub resource_name: Option<String>,
    /// The metadata's `resource_documentation`, if any.
    pub resource_documentation: Option<String>,
    /// Where the metadata is, as the `resource_metadata` of challenges. Default: the
    /// well-known URL derived from `resource` (origin, then
    /// `/.well-known/oauth-protected-resource`, then the resource's path).
    pub resource_metadata_url: Option<String>,
    /// Verified tokens kept (by SHA-256 digest, each until it expires or its verifier's
    /// `cache_ttl`), so a repeated token costs a lookup and not a signature check.
    /// Default 10,000; 0 turns the cache off.
    pub cache_capacity: usize,
    pub(crate) verifier: SharedVerifier,
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .field("method_scopes", &self.method_scopes)
            .field("hierarchy", &self.hierarchy)
            .field("tenant", &self.tenant)
            .field("cache_capacity", &self.cache_capacity)
            .finish_non_exhaustive()
    }
}

impl AuthConfig {
    /// OAuth for the resource `resource`, whose tokens `authorization_server` issues and
    /// `verifier` checks.
    pub fn new(
        resource: impl Into<String>,
        authorization_server: impl Into<String>,
        verifier: impl TokenVerifier,
    ) -> AuthConfig {
        AuthConfig {
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            method_scopes: BTreeMap::new(),
            hierarchy: ScopeHierarchy::new(),
            tenant: TenantSource::Issuer,
            resource_name: None,
            resource_documentation: None,
            resource_metadata_url: None,
            cache_capacity: 10_000,
            verifier: Arc::new(verifier),
        }
    }

    /// The same settings with every request needing `scopes` (also the default
    /// `scopes_supported`).
    pub fn required_scopes<I, S>(mut self, scopes: I) -> AuthConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The same settings advertising `scopes` as `scopes_supported`.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> AuthConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The same settings with `method` (`"tools/call"`) needing `scopes` as well.
    pub fn method_scopes<I, S>(mut self, method: impl Into<String>, scopes: I) -> AuthConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.method_scopes.insert(method.into(), scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The same settings with a scope hierarchy.
    pub fn hierarchy(mut self, hierarchy: ScopeHierarchy) -> AuthConfig {
        self.hierarchy = hierarchy;
        self
    }

    /// The same settings taking the tenant from `source`.
    pub fn tenant(mut self, source: TenantSource) -> AuthConfig {
        self.tenant = source;
        self
    }

    /// The same settings accepting tokens of another authorization server too (listed in
    /// the metadata; the verifier must accept its tokens).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> AuthConfig {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The `resource_metadata` URL of challenges, when it is not the one derived from
    /// `resource`.
    pub fn resource_metadata_url(mut self, url: impl Into<String>) -> AuthConfig {
        self.resource_metadata_url = Some(url.into());
        self
    }

    /// The metadata URL challenges name: the configured one, else derived from
    /// `resource` by string surgery (no URL parser, which would re-serialise it).
    pub(crate) fn metadata_url(&self) -> String {
        if let Some(url) = &self.resource_metadata_url {
            return url.clone();
        }
        let (origin, path) = split_origin(&self.resource);
        let path = if path == "/" { "" } else { path };
        format!("{origin}{}{path}", super::metadata::WELL_KNOWN)
    }

    /// The path part of `resource` (`/mcp`), or `""`.
    pub(crate) fn resource_path(&self) -> &str {
        split_origin(&self.resource).1
    }

    /// What the metadata advertises as `scopes_supported`.
    pub(crate) fn advertised_scopes(&self) -> &[String] {
        if self.scopes_supported.is_empty() {
            &self.required_scopes
        } else {
            &self.scopes_supported
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::StaticVerifier;

    #[test]
    fn the_metadata_url_is_derived_without_reserialising_the_resource() {
        let c = AuthConfig::new("http://localhost:3000/mcp", "https://as", StaticVerifier::new());
        assert_eq!(c.metadata_url(), "http://localhost:3000/.well-known/oauth-protected-resource/mcp");
        let c = AuthConfig::new("http://localhost:3000", "https://as", StaticVerifier::new());
        assert_eq!(c.metadata_url(), "http://localhost:3000/.well-known/oauth-protected-resource");
        assert_eq!(c.resource_path(), "");
        let c = AuthConfig::new("https://EX.com/a/b?x#y", "https://as", StaticVerifier::new());
        assert_eq!(c.metadata_url(), "https://EX.com/.well-known/oauth-protected-resource/a/b");
    }
}

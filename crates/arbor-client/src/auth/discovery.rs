//! Finding the authorization server: the protected resource metadata (RFC 9728) and the
//! authorization server metadata (RFC 8414, then OpenID Connect discovery), in the order
//! the MCP spec gives, with the checks it names.
//!
//! The URL builders are pure functions on strings: an identifier (the resource, an
//! issuer) is never re-serialised by a URL parser (which would add a `/` to
//! `http://host:1234` or lower-case it), because the checks compare them as strings. Not
//! the flow: `flow` decides when to discover. Invariant: a metadata document is used only
//! if its `resource` fits the server and its `issuer` equals the identifier it was looked
//! up by, exactly.

use serde::Deserialize;

use super::OAuthError;

/// The well-known path of RFC 9728.
const PRM: &str = "/.well-known/oauth-protected-resource";

pub use arbor_protocol::uri::split_origin;

/// Where to look for the protected resource metadata of the server at `server_url`
/// when its challenge named none: the path-suffixed well-known URL (unless the path is
/// empty or `/`), then the root one.
pub fn resource_metadata_urls(server_url: &str) -> Vec<String> {
    let (origin, path) = split_origin(server_url);
    let mut urls = Vec::new();
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        urls.push(format!("{origin}{PRM}{path}"));
    }
    urls.push(format!("{origin}{PRM}"));
    urls
}

/// Where to look for the metadata of the authorization server `issuer`, in the spec's
/// order: with a path `/p`, RFC 8414 path insertion, OIDC path insertion, OIDC path
/// appending; without, RFC 8414 then OIDC.
pub fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let (origin, path) = split_origin(issuer);
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the metadata's `resource` may stand for the server at `server_url`: the same
/// scheme, host and port (case-insensitive, as hosts are), and a path that is a prefix of
/// the server's path on a segment boundary.
pub fn resource_fits(resource: &str, server_url: &str) -> bool {
    let (r_origin, r_path) = split_origin(resource);
    let (s_origin, s_path) = split_origin(server_url);
    if !r_origin.eq_ignore_ascii_case(s_origin) {
        return false;
    }
    let r_path = r_path.trim_end_matches('/');
    let s_path = s_path.trim_end_matches('/');
    s_path == r_path || s_path.starts_with(&format!("{r_path}/")) || r_path.is_empty()
}

/// The protected resource metadata, as far as the client reads it.
#[derive(Clone, Debug, Deserialize)]
pub struct ResourceMetadata {
    /// The resource identifier, kept exactly as sent.
    pub resource: String,
    /// The authorization servers' issuer identifiers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes for basic use.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// RFC 9449 §5.2: the resource accepts DPoP proofs signed with these.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// RFC 9449 §5.2: the resource accepts DPoP-bound tokens only.
    #[serde(default)]
    pub dpop_bound_access_tokens_required: Option<bool>,
}

/// The authorization server metadata, as far as the client reads it.
#[derive(Clone, Debug, Deserialize)]
pub struct ServerMetadata {
    /// Must equal the identifier it was looked up by.
    pub issuer: String,
    /// Where the user agent goes.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes and credentials become tokens.
    pub token_endpoint: String,
    /// Dynamic client registration, if offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// PKCE methods; the client requires `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Token endpoint client authentication methods.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Scopes the server knows (`offline_access` is asked for only when listed).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// CIMD (client ID metadata documents) supported.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449 §5.1: the token endpoint binds tokens to DPoP keys of these algorithms.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// The safety rules for a URL the client fetches during discovery or authorization: https,
/// or http on loopback when allowed; no private or link-local address literal (SSRF) unless
/// loopback is allowed and it is loopback.
pub fn check_url(url: &str, allow_http_loopback: bool) -> Result<(), OAuthError> {
    let refuse = |why| Err(OAuthError::UnsafeUrl { url: arbor_protocol::reflect::Clamped(url).to_string(), why });
    let Some((scheme, rest)) = url.split_once("://") else { return refuse("not an absolute URL") };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match scheme.to_ascii_lowercase().as_str() {
        "https" => {}
        "http" if loopback && allow_http_loopback => {}
        "http" => return refuse("authorization servers must be reached over https"),
        _ => return refuse("only http(s) URLs"),
    }
    if loopback {
        return if allow_http_loopback {
            Ok(())
        } else {
            refuse("a loopback address (allow it explicitly for local use)")
        };
    }
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        let private = match ip {
            std::net::IpAddr::V4(v4) => {
                v4.is_private() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast()
            }
            std::net::IpAddr::V6(v6) => {
                let s = v6.segments()[0];
                v6.is_unspecified() || (s & 0xfe00) == 0xfc00 || (s & 0xffc0) == 0xfe80
            }
        };
        if private {
            return refuse("a private or link-local address");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

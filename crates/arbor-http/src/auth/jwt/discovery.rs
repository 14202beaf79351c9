//! Finding the issuer's `jwks_uri` in its metadata: RFC 8414 first, then OpenID Connect
//! discovery.
//!
//! It reads only `issuer` and `jwks_uri`, once, at start; it is not a metadata client.
//! Invariant: a document is used only if its `issuer` equals the configured issuer
//! exactly (no normalisation), as RFC 8414 §3.3 and the MCP 2026-07-28 revision require.

use std::time::Duration;

use reqwest::Url;

use super::config::JwtConfigError;
use crate::auth::jwks::http::without_url;

/// An absolute http(s) URL, or the error naming `what`.
pub(crate) fn http_url(text: &str) -> Result<Url, JwtConfigError> {
    let url = Url::parse(text).map_err(|_| JwtConfigError::InvalidUrl(text.to_owned()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(JwtConfigError::InvalidUrl(text.to_owned()));
    }
    Ok(url)
}

/// The metadata documents to try, in order: RFC 8414 (the well-known segment inserted
/// between the host and the issuer's path), then OpenID Connect (appended to the path).
pub(crate) fn metadata_urls(issuer: &Url) -> [Url; 2] {
    let path = issuer.path().trim_end_matches('/');
    let mut rfc8414 = issuer.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut oidc = issuer.clone();
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    [rfc8414, oidc]
}

/// The `jwks_uri` of `issuer`, from the first metadata document that names this issuer.
pub(crate) async fn jwks_uri(client: &reqwest::Client, issuer: &str, timeout: Duration) -> Result<Url, JwtConfigError> {
    let issuer_url = http_url(issuer)?;
    if issuer_url.query().is_some() || issuer_url.fragment().is_some() {
        return Err(JwtConfigError::InvalidUrl(issuer.to_owned()));
    }
    let mut failures = Vec::new();
    for url in metadata_urls(&issuer_url) {
        match document(client, &url, timeout).await.and_then(|doc| read(&doc, issuer)) {
            Ok(jwks) => return Ok(jwks),
            Err(why) => failures.push(format!("{url}: {why}")),
        }
    }
    Err(JwtConfigError::Discovery(failures.join("; ")))
}

async fn document(client: &reqwest::Client, url: &Url, timeout: Duration) -> Result<serde_json::Value, String> {
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(timeout)
        .send()
        .await
        .map_err(without_url)?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    let body = response.bytes().await.map_err(without_url)?;
    serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
}

fn read(doc: &serde_json::Value, issuer: &str) -> Result<Url, String> {
    match doc.get("issuer").and_then(|v| v.as_str()) {
        Some(named) if named == issuer => {}
        Some(named) => return Err(format!("its issuer is {named:?}, not {issuer:?}")),
        None => return Err("no issuer".into()),
    }
    let jwks = doc.get("jwks_uri").and_then(|v| v.as_str()).ok_or("no jwks_uri")?;
    http_url(jwks).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn urls(issuer: &str) -> [String; 2] {
        metadata_urls(&Url::parse(issuer).unwrap()).map(|u| u.to_string())
    }

    #[test]
    fn rfc8414_inserts_and_oidc_appends() {
        assert_eq!(
            urls("https://as.example"),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://as.example/tenant/1/"),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example/tenant/1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_document_counts_only_for_its_exact_issuer() {
        let doc = json!({"issuer": "https://as.example", "jwks_uri": "https://as.example/jwks"});
        assert_eq!(read(&doc, "https://as.example").unwrap().as_str(), "https://as.example/jwks");
        assert!(read(&doc, "https://as.example/").is_err());
        assert!(read(&json!({"jwks_uri": "https://as.example/jwks"}), "https://as.example").is_err());
        assert!(read(&json!({"issuer": "https://as.example"}), "https://as.example").is_err());
        let bad = json!({"issuer": "https://as.example", "jwks_uri": "file:///etc/keys"});
        assert!(read(&bad, "https://as.example").is_err());
    }
}

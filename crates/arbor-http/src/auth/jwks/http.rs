//! The JWKS fetch over HTTP (the production [`FetchJwks`]) and the `Cache-Control` reading
//! that sets the key set's lifetime.
//!
//! It only fetches: no retry, no caching (the cache actor decides when to ask). Invariant:
//! every fetch is bounded by the client's timeout and the body by [`MAX_JWKS_BYTES`].

use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::{FetchJwks, Fetched};

/// The largest JWKS body read; a real set is a few kilobytes.
pub(crate) const MAX_JWKS_BYTES: usize = 1 << 20;

/// GETs the JWKS from `uri`.
pub(crate) struct HttpJwks {
    pub(crate) client: reqwest::Client,
    pub(crate) uri: reqwest::Url,
    pub(crate) timeout: Duration,
}

impl FetchJwks for HttpJwks {
    fn fetch(&self) -> BoxFuture<'_, Result<Fetched, String>> {
        async move {
            let response = self
                .client
                .get(self.uri.clone())
                .header(reqwest::header::ACCEPT, "application/jwk-set+json, application/json")
                .timeout(self.timeout)
                .send()
                .await
                .map_err(|e| format!("request failed: {}", without_url(e)))?;
            let status = response.status();
            if !status.is_success() {
                return Err(format!("HTTP {status}"));
            }
            let max_age = response
                .headers()
                .get_all(reqwest::header::CACHE_CONTROL)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(max_age);
            if response.content_length().is_some_and(|n| n > MAX_JWKS_BYTES as u64) {
                return Err("the key set is too large".into());
            }
            let body = response.bytes().await.map_err(|e| format!("reading the body failed: {}", without_url(e)))?;
            if body.len() > MAX_JWKS_BYTES {
                return Err("the key set is too large".into());
            }
            Ok(Fetched { body: body.to_vec(), max_age })
        }
        .boxed()
    }

    fn describe(&self) -> String {
        self.uri.to_string()
    }
}

/// A reqwest error's text without the URL (the caller logs the URL once), with its causes.
pub(crate) fn without_url(err: reqwest::Error) -> String {
    let err = err.without_url();
    let mut text = if err.is_timeout() { "timed out".to_owned() } else { err.to_string() };
    let mut source = std::error::Error::source(&err);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// The lifetime a `Cache-Control` value gives: `max-age=N` in seconds, or zero for
/// `no-cache`/`no-store` (the caller clamps it to its minimum).
pub(crate) fn max_age(value: &str) -> Option<Duration> {
    let mut found = None;
    for directive in value.split(',') {
        let directive = directive.trim();
        let (name, arg) = directive.split_once('=').map_or((directive, None), |(n, a)| (n.trim(), Some(a.trim())));
        if name.eq_ignore_ascii_case("no-store") || name.eq_ignore_ascii_case("no-cache") {
            return Some(Duration::ZERO);
        }
        if name.eq_ignore_ascii_case("max-age") {
            let secs = arg?.trim_matches('"').parse::<u64>().ok()?;
            found = Some(Duration::from_secs(secs));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_reads_the_directive() {
        assert_eq!(max_age("max-age=600"), Some(Duration::from_secs(600)));
        assert_eq!(max_age("public, Max-Age = 60, must-revalidate"), Some(Duration::from_secs(60)));
        assert_eq!(max_age("max-age=\"90\""), Some(Duration::from_secs(90)));
        assert_eq!(max_age("public, no-cache"), Some(Duration::ZERO));
        assert_eq!(max_age("no-store"), Some(Duration::ZERO));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=soon"), None);
        assert_eq!(max_age("max-age"), None);
    }
}

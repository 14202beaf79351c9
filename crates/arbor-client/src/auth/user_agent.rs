//! The authorization step: a [`UserAgent`] takes the authorization URL to the user (or a
//! headless stand-in) and brings back what the authorization server redirected to.
//!
//! Two are built in: [`LoopbackUserAgent`] (a CLI: prints the URL, or hands it to a
//! function of the application's, and listens on 127.0.0.1 for the redirect) and
//! [`HeadlessUserAgent`] (GETs the URL without following redirects, keeps cookies, and
//! follows the authorization server's own hops until a `Location` names the redirect URI:
//! tests, and the conformance harness, whose authorization endpoint answers at once).
//! Neither opens anything through a shell. Invariant: only `http`/`https` URLs are
//! fetched or shown, and the callback is read from the redirect URI alone.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::OAuthError;

/// What the authorization server sent back to the redirect URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Callback {
    /// `code`, if the authorization succeeded.
    pub code: Option<String>,
    /// `state`, to be matched against the request's.
    pub state: Option<String>,
    /// `iss` (RFC 9207), if sent.
    pub iss: Option<String>,
    /// `error`, if the authorization failed.
    pub error: Option<String>,
}

impl Callback {
    /// The callback a URL carries in its query (`?code=…&state=…&iss=…`).
    pub fn from_url(url: &str) -> Callback {
        let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
        let query = query.split('#').next().unwrap_or("");
        let mut callback = Callback { code: None, state: None, iss: None, error: None };
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let slot = match &*k {
                "code" => &mut callback.code,
                "state" => &mut callback.state,
                "iss" => &mut callback.iss,
                "error" => &mut callback.error,
                _ => continue,
            };
            *slot = Some(v.into_owned());
        }
        callback
    }
}

/// Takes an authorization URL to whoever authorizes and returns the callback.
pub trait UserAgent: Send + Sync + 'static {
    /// Authorizes at `url`; the answer is sent to `redirect_uri`.
    fn authorize(&self, url: &str, redirect_uri: &str) -> impl Future<Output = Result<Callback, OAuthError>> + Send;
}

pub(crate) type AgentFuture<'a> = Pin<Box<dyn Future<Output = Result<Callback, OAuthError>> + Send + 'a>>;

/// [`UserAgent`] boxed.
pub(crate) trait DynUserAgent: Send + Sync + 'static {
    fn authorize<'a>(&'a self, url: &'a str, redirect_uri: &'a str) -> AgentFuture<'a>;
}

impl<U: UserAgent> DynUserAgent for U {
    fn authorize<'a>(&'a self, url: &'a str, redirect_uri: &'a str) -> AgentFuture<'a> {
        Box::pin(UserAgent::authorize(self, url, redirect_uri))
    }
}

fn http_only(url: &str) -> Result<(), OAuthError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https") => Ok(()),
        _ => Err(OAuthError::UnsafeUrl {
            url: arbor_protocol::reflect::Clamped(url).to_string(),
            why: "only http(s) authorization URLs are opened",
        }),
    }
}

/// GETs the authorization URL and follows the authorization server's redirects (cookies
/// kept, each hop http(s)) until one points at the redirect URI, whose query is the
/// callback. No redirect is followed automatically.
#[derive(Clone, Debug)]
pub struct HeadlessUserAgent {
    client: reqwest::Client,
    max_hops: usize,
}

impl Default for HeadlessUserAgent {
    fn default() -> Self {
        HeadlessUserAgent::new()
    }
}

impl HeadlessUserAgent {
    /// A headless agent with a cookie-less client; at most 10 hops.
    pub fn new() -> HeadlessUserAgent {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client");
        HeadlessUserAgent { client, max_hops: 10 }
    }
}

impl UserAgent for HeadlessUserAgent {
    async fn authorize(&self, url: &str, redirect_uri: &str) -> Result<Callback, OAuthError> {
        let mut next = url.to_owned();
        let mut cookies: Vec<String> = Vec::new();
        for _ in 0..self.max_hops {
            http_only(&next)?;
            if next.starts_with(redirect_uri) {
                return Ok(Callback::from_url(&next));
            }
            let mut request = self.client.get(&next);
            if !cookies.is_empty() {
                request = request.header(reqwest::header::COOKIE, cookies.join("; "));
            }
            let response = request.send().await.map_err(|e| OAuthError::Http(e.without_url().to_string()))?;
            for set in response.headers().get_all(reqwest::header::SET_COOKIE) {
                if let Some(pair) = set.to_str().ok().and_then(|c| c.split(';').next()) {
                    let name = pair.split('=').next().unwrap_or("").to_owned();
                    cookies.retain(|c| c.split('=').next() != Some(name.as_str()));
                    cookies.push(pair.to_owned());
                }
            }
            let Some(location) = response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()) else {
                let status = response.status().as_u16();
                return Err(OAuthError::Authorization(format!(
                    "the authorization endpoint answered {status} without a redirect"
                )));
            };
            next = match reqwest::Url::parse(&next).and_then(|base| base.join(location)) {
                // A relative Location is resolved against the hop; the redirect URI itself
                // is compared as given.
                Ok(joined) if !location.starts_with(redirect_uri) => joined.to_string(),
                _ => location.to_owned(),
            };
        }
        Err(OAuthError::Authorization("too many redirects before the redirect URI".into()))
    }
}

/// A CLI's user agent: shows the URL (printed on stderr, or given to `open`) and waits on
/// a loopback listener for the browser's redirect to the redirect URI
/// (`http://127.0.0.1:PORT/…`), for at most `timeout`.
#[derive(Clone)]
pub struct LoopbackUserAgent {
    open: Arc<dyn Fn(&str) + Send + Sync>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackUserAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackUserAgent").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl LoopbackUserAgent {
    /// Prints the URL on stderr for the user to open; waits 5 minutes at most.
    pub fn new() -> LoopbackUserAgent {
        LoopbackUserAgent::with_opener(|url| eprintln!("Open this URL to authorize: {url}"))
    }

    /// Hands the URL to `open` (say, a browser launcher that takes it as one argument).
    pub fn with_opener(open: impl Fn(&str) + Send + Sync + 'static) -> LoopbackUserAgent {
        LoopbackUserAgent { open: Arc::new(open), timeout: Duration::from_secs(300) }
    }

    /// The same agent waiting at most `timeout` for the redirect.
    pub fn timeout(mut self, timeout: Duration) -> LoopbackUserAgent {
        self.timeout = timeout;
        self
    }
}

impl Default for LoopbackUserAgent {
    fn default() -> Self {
        LoopbackUserAgent::new()
    }
}

impl UserAgent for LoopbackUserAgent {
    async fn authorize(&self, url: &str, redirect_uri: &str) -> Result<Callback, OAuthError> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        http_only(url)?;
        let rest = redirect_uri.strip_prefix("http://").ok_or_else(|| {
            OAuthError::Authorization("a loopback user agent needs an http://127.0.0.1:PORT redirect URI".into())
        })?;
        let authority = rest.split('/').next().unwrap_or("");
        let listener = tokio::net::TcpListener::bind(authority)
            .await
            .map_err(|e| OAuthError::Authorization(format!("cannot listen on {authority}: {e}")))?;
        (self.open)(url);
        let wait = async {
            loop {
                let (mut socket, _) = listener.accept().await.map_err(|e| OAuthError::Http(e.to_string()))?;
                let mut buf = vec![0u8; 8192];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let body = "Authorization received: you may close this window.";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let callback = Callback::from_url(&target);
                if callback.code.is_some() || callback.error.is_some() {
                    return Ok(callback);
                }
            }
        };
        tokio::time::timeout(self.timeout, wait)
            .await
            .map_err(|_| OAuthError::Authorization("no authorization arrived in time".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_is_read_from_the_query_with_nothing_normalised() {
        let c =
            Callback::from_url("http://localhost:3000/callback?code=abc&state=x%20y&iss=https%3A%2F%2FAS.example%2F");
        assert_eq!(c.code.as_deref(), Some("abc"));
        assert_eq!(c.state.as_deref(), Some("x y"));
        assert_eq!(c.iss.as_deref(), Some("https://AS.example/"), "the issuer as sent, not normalised");
        assert_eq!(Callback::from_url("http://x/cb").code, None);
    }

    #[test]
    fn only_http_urls_are_opened() {
        assert!(http_only("https://as.example/authorize").is_ok());
        for bad in ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "ftp://x"] {
            assert!(http_only(bad).is_err(), "{bad}");
        }
    }
}

//! `arbor-client` with OAuth against a real authorization server (`oidc-provider`, through
//! `tests::auth_server`) and an Arbor server that verifies its JWTs: authorization code +
//! PKCE through the loopback user agent (the "browser" follows the authorization server's
//! redirects, consent automated, and lands on the client's 127.0.0.1 listener), tools
//! called in both eras, an expiring token refreshed without the caller noticing, a step-up
//! when a tool needs a wider scope; and the refusals no conformance scenario covers.

use std::sync::Arc;
use std::time::Duration;

use arbor_client::auth::{
    Callback, CredentialStore, LoopbackUserAgent, MemoryStore, OAuth, OAuthError, Registration, TokenSet, UserAgent,
};
use arbor_client::{Client, ClientError, ClientOptions, EraMode, HttpTarget, TransportError};
use arbor_http::auth::{AuthConfig, JwtConfig, JwtVerifier};
use arbor_http::{HttpConfig, HttpServer, ShutdownHandle};
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{RequestContext, Router, Server};
use serde_json::json;
use tests::auth_server::AuthServer;

/// A store the test can look into.
#[derive(Clone, Default)]
struct Shared(Arc<MemoryStore>);

impl CredentialStore for Shared {
    fn registration(&self, issuer: &str) -> Option<Registration> {
        self.0.registration(issuer)
    }
    fn save_registration(&self, issuer: &str, registration: Registration) {
        self.0.save_registration(issuer, registration)
    }
    fn tokens(&self, resource: &str, issuer: &str) -> Option<TokenSet> {
        self.0.tokens(resource, issuer)
    }
    fn save_tokens(&self, resource: &str, issuer: &str, tokens: Option<TokenSet>) {
        self.0.save_tokens(resource, issuer, tokens)
    }
}

struct Fixture {
    url: String,
    stop: ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(auth: &AuthServer) -> Fixture {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let url = format!("http://{addr}/mcp");
    let verifier = JwtVerifier::start(JwtConfig::new(auth.issuer(), url.clone())).await.unwrap();
    let config = AuthConfig::new(url.clone(), auth.issuer(), verifier).required_scopes(["mcp:tools"]);
    let router = Router::new("oauth-e2e", "1.0.0")
        .tool("whoami", "Who calls", |_: NoArgs, cx: RequestContext| async move {
            cx.principal().map(|p| p.subject.clone()).unwrap_or_default()
        })
        .tool_route(ToolRoute::new("write_file", |_: NoArgs| async { "written" }).scopes(["files:write"]));
    let bound = HttpServer::with_config(Server::new(router), HttpConfig::default().bind(addr).auth(config));
    let bound = bound.bind().await.unwrap();
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    Fixture { url, stop, run }
}

/// The "browser": follows the authorization server's redirects (keeping cookies) and, once
/// a `Location` points at the redirect URI, requests it, which the client's loopback
/// listener answers.
fn browser(redirect_uri: String) -> impl Fn(&str) + Send + Sync + 'static {
    move |url: &str| {
        let (url, redirect_uri) = (url.to_owned(), redirect_uri.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
            let mut next = url;
            let mut cookies: Vec<String> = Vec::new();
            for _ in 0..10 {
                let mut request = http.get(&next);
                if !cookies.is_empty() {
                    request = request.header("cookie", cookies.join("; "));
                }
                let response = request.send().await.unwrap();
                if next.starts_with(&redirect_uri) {
                    return;
                }
                for set in response.headers().get_all("set-cookie") {
                    if let Some(pair) = set.to_str().ok().and_then(|c| c.split(';').next()) {
                        let name = pair.split('=').next().unwrap_or("").to_owned();
                        cookies.retain(|c| c.split('=').next() != Some(name.as_str()));
                        cookies.push(pair.to_owned());
                    }
                }
                let location = response.headers()["location"].to_str().unwrap().to_owned();
                next = reqwest::Url::parse(&next).unwrap().join(&location).unwrap().to_string();
            }
            panic!("the authorization never reached the redirect URI");
        });
    }
}

fn free_redirect_uri() -> String {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://127.0.0.1:{}/callback", probe.local_addr().unwrap().port())
}

fn oauth(store: &Shared) -> OAuth {
    let redirect = free_redirect_uri();
    let agent = LoopbackUserAgent::with_opener(browser(redirect.clone())).timeout(Duration::from_secs(20));
    OAuth::authorization_code("arbor-client-e2e", redirect, agent).store(store.clone()).allow_http_loopback()
}

async fn connect(url: &str, oauth: OAuth, era: EraMode) -> Client {
    let options = ClientOptions::new("oauth-e2e", "1.0.0").era(era);
    Client::connect_http(HttpTarget::new(url).oauth(oauth), options).await.expect("connects after authorizing")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_logs_in_calls_in_both_eras_is_refreshed_and_steps_up() {
    let auth = AuthServer::start();
    let f = serve(&auth).await;
    for era in [EraMode::ForceLegacy, EraMode::ForceModern] {
        let store = Shared::default();
        let client = connect(&f.url, oauth(&store), era).await;
        let answer = client.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(answer.text(), "alice", "{era:?}: the logged-in user");
        let tokens = store.tokens(&f.url, auth.issuer()).expect("tokens kept under resource and issuer");
        assert!(store.registration(auth.issuer()).is_some(), "registered dynamically, under the issuer");
        assert!(tokens.refresh_token.is_some(), "the server issued a refresh token");
        // A tool that needs files:write: 403, step-up with the union of scopes, retried.
        let written = client.call_tool("write_file", json!({})).await.unwrap();
        assert_eq!(written.text(), "written", "{era:?}");
        let stepped = store.tokens(&f.url, auth.issuer()).unwrap();
        assert!(stepped.scopes.contains(&"files:write".to_owned()) && stepped.scopes.contains(&"mcp:tools".to_owned()));
        client.close().await;
    }
    f.stop.shutdown();
    f.run.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_token_is_refreshed_without_the_caller_noticing() {
    let auth = AuthServer::start();
    auth.access_token_ttl(2);
    let f = serve(&auth).await;
    let store = Shared::default();
    let client = connect(&f.url, oauth(&store), EraMode::ForceModern).await;
    assert_eq!(client.call_tool("whoami", json!({})).await.unwrap().text(), "alice");
    let first = store.tokens(&f.url, auth.issuer()).unwrap();
    // Wait (bounded) until the first token has expired; the next call must still succeed.
    let expiry = first.expires_at.expect("the token says when it expires");
    tests::poll::until("the first token expired", Duration::from_secs(10), || std::time::SystemTime::now() > expiry)
        .await;
    assert_eq!(client.call_tool("whoami", json!({})).await.unwrap().text(), "alice");
    let second = store.tokens(&f.url, auth.issuer()).unwrap();
    assert_ne!(second.access_token, first.access_token, "a new access token");
    assert!(second.expires_at > first.expires_at);
    client.close().await;
    f.stop.shutdown();
    f.run.await.unwrap().unwrap();
}

/// A user agent whose answer comes back with another `state`.
struct Forged;

impl UserAgent for Forged {
    async fn authorize(&self, _url: &str, _redirect_uri: &str) -> Result<Callback, OAuthError> {
        Ok(Callback { code: Some("stolen-code".into()), state: Some("not-the-one".into()), iss: None, error: None })
    }
}

fn auth_error(result: Result<Client, arbor_client::ConnectError>) -> String {
    match result {
        Ok(_) => panic!("connected without a valid authorization"),
        Err(e) => format!("{e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_state_and_unsafe_authorization_servers_are_refused() {
    let auth = AuthServer::start();
    let f = serve(&auth).await;
    let options = || ClientOptions::new("oauth-e2e", "1.0.0").era(EraMode::ForceModern);
    // The callback's state is not the request's: no token request is made.
    let forged = OAuth::authorization_code("e2e", "http://127.0.0.1:1/cb", Forged).allow_http_loopback();
    let why = auth_error(Client::connect_http(HttpTarget::new(&f.url).oauth(forged), options()).await);
    assert!(why.contains("state"), "{why}");
    // Without allowing loopback http, the (http, loopback) authorization server is refused
    // before anything is fetched from it.
    let strict = OAuth::authorization_code("e2e", "http://127.0.0.1:1/cb", Forged);
    let why = auth_error(Client::connect_http(HttpTarget::new(&f.url).oauth(strict), options()).await);
    assert!(why.contains("UnsafeUrl"), "{why}");
    f.stop.shutdown();
    f.run.await.unwrap().unwrap();
    // The error types are public: a caller can tell an authorization failure apart.
    let _: fn(ClientError) -> bool = |e| matches!(e, ClientError::Transport(TransportError::Auth(_)));
}

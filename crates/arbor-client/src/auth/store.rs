//! Where the client keeps what OAuth gives it: registrations by issuer, tokens by
//! resource and issuer ([`CredentialStore`], [`MemoryStore`] by default).
//!
//! Not persistence: an application that keeps credentials across runs implements the
//! trait over its own secure storage (the spec leaves that to it). Invariant: a
//! registration is only ever looked up by the issuer it was made with (exact string), so
//! a client id is never presented to another authorization server.

use std::collections::HashMap;
use std::fmt;
use std::time::SystemTime;

use parking_lot::Mutex;

/// A client registration with one authorization server.
#[derive(Clone, PartialEq, Eq)]
pub struct Registration {
    /// The client id.
    pub client_id: String,
    /// The client secret, if the server issued one.
    pub client_secret: Option<String>,
    /// The token endpoint authentication method it was registered with, if said.
    pub auth_method: Option<String>,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

/// Tokens for one resource from one authorization server.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued (never assumed).
    pub refresh_token: Option<String>,
    /// When the access token expires, if the server said (`expires_in`).
    pub expires_at: Option<SystemTime>,
    /// The scopes asked for when it was obtained.
    pub scopes: Vec<String>,
    /// Whether the access token is DPoP-bound (`token_type` `DPoP`): it is sent with the
    /// `DPoP` scheme and a proof signed by the key it is bound to, never as a bearer.
    pub dpop: bool,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("dpop", &self.dpop)
            .finish()
    }
}

/// Keeps registrations (by issuer) and tokens (by resource and issuer). Calls are quick
/// and synchronous: an implementation over slow storage caches.
pub trait CredentialStore: Send + Sync + 'static {
    /// The registration made with `issuer`, if any.
    fn registration(&self, issuer: &str) -> Option<Registration>;
    /// Keeps a registration made with `issuer`.
    fn save_registration(&self, issuer: &str, registration: Registration);
    /// The tokens for `resource` from `issuer`, if any.
    fn tokens(&self, resource: &str, issuer: &str) -> Option<TokenSet>;
    /// Keeps tokens for `resource` from `issuer`; `None` forgets them.
    fn save_tokens(&self, resource: &str, issuer: &str, tokens: Option<TokenSet>);
}

/// The default store: memory only, gone with the process.
#[derive(Default)]
pub struct MemoryStore {
    registrations: Mutex<HashMap<String, Registration>>,
    tokens: Mutex<HashMap<(String, String), TokenSet>>,
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("registrations", &self.registrations.lock().len())
            .field("tokens", &self.tokens.lock().len())
            .finish()
    }
}

impl CredentialStore for MemoryStore {
    fn registration(&self, issuer: &str) -> Option<Registration> {
        self.registrations.lock().get(issuer).cloned()
    }

    fn save_registration(&self, issuer: &str, registration: Registration) {
        self.registrations.lock().insert(issuer.to_owned(), registration);
    }

    fn tokens(&self, resource: &str, issuer: &str) -> Option<TokenSet> {
        self.tokens.lock().get(&(resource.to_owned(), issuer.to_owned())).cloned()
    }

    fn save_tokens(&self, resource: &str, issuer: &str, tokens: Option<TokenSet>) {
        let key = (resource.to_owned(), issuer.to_owned());
        match tokens {
            Some(tokens) => self.tokens.lock().insert(key, tokens),
            None => self.tokens.lock().remove(&key),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_are_kept_per_issuer_exactly() {
        let store = MemoryStore::default();
        let reg = Registration { client_id: "c1".into(), client_secret: Some("s".into()), auth_method: None };
        store.save_registration("https://as.example", reg.clone());
        assert_eq!(store.registration("https://as.example"), Some(reg));
        assert_eq!(store.registration("https://as.example/"), None, "another issuer string is another issuer");
        assert_eq!(store.registration("https://other.example"), None);
    }

    #[test]
    fn debug_output_never_shows_a_token_or_secret() {
        let t = TokenSet {
            access_token: "secret-access".into(),
            refresh_token: Some("secret-refresh".into()),
            expires_at: None,
            scopes: vec!["a".into()],
            dpop: false,
        };
        let r = Registration { client_id: "id".into(), client_secret: Some("secret-client".into()), auth_method: None };
        let text = format!("{t:?} {r:?}");
        assert!(!text.contains("secret-"), "{text}");
    }
}

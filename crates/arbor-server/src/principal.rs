//! Who a request comes from, once a transport verified it: the [`Principal`], and the
//! [`ScopeHierarchy`] that says which scopes imply which.
//!
//! A principal is what an access token proved (its issuer, subject, client, scopes,
//! expiry and the rest of its claims), never the token itself: the runtime hands handlers
//! this and nothing a handler could replay against another service (the spec's "no token
//! passthrough"). It is pure data; verifying tokens is the transport's work (`arbor-http`'s
//! `auth` module), and stdio has no principal (the spec has stdio servers take credentials
//! from their environment).
//!
//! Invariant: two principals are the same identity exactly when their issuer and subject
//! are equal as strings ([`Principal::key`] encodes both without ambiguity); no
//! normalisation, no case folding. `effective_scopes` always contains `scopes`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use serde_json::{Map, Value};

/// The verified identity behind a request: what its access token said.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    /// The token's issuer (`iss`), exactly as it appeared.
    pub issuer: String,
    /// The token's subject (`sub`): the user or, for client credentials, the client.
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id`, else `azp`), if it says.
    pub client_id: Option<String>,
    /// The scopes the token grants (`scope`, space-separated, or `scp`), as granted.
    pub scopes: BTreeSet<String>,
    /// `scopes` plus every scope they imply by the server's [`ScopeHierarchy`]: what the
    /// scope checks read. Equal to `scopes` unless a hierarchy was applied.
    pub effective_scopes: BTreeSet<String>,
    /// When the token stops being valid (`exp`), if it says.
    pub expires_at: Option<SystemTime>,
    /// Every claim of the token (or introspection answer), for the handler's own policy.
    pub claims: Map<String, Value>,
}

impl Principal {
    /// The principal `subject` of `issuer`, with no scopes, client, expiry or claims.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Principal {
        Principal {
            issuer: issuer.into(),
            subject: subject.into(),
            client_id: None,
            scopes: BTreeSet::new(),
            effective_scopes: BTreeSet::new(),
            expires_at: None,
            claims: Map::new(),
        }
    }

    /// The same principal granted `scopes` (effective scopes are reset to them).
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Principal
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self.effective_scopes = self.scopes.clone();
        self
    }

    /// The same principal with its client id.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Principal {
        self.client_id = Some(client_id.into());
        self
    }

    /// The same principal expiring at `at`.
    pub fn with_expiry(mut self, at: SystemTime) -> Principal {
        self.expires_at = Some(at);
        self
    }

    /// The same principal with these claims.
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Principal {
        self.claims = claims;
        self
    }

    /// The same principal with its effective scopes expanded by `hierarchy`.
    pub fn with_hierarchy(mut self, hierarchy: &ScopeHierarchy) -> Principal {
        self.effective_scopes = hierarchy.expand(&self.scopes);
        self
    }

    /// The identity as one string, for bookkeeping (task owners, session binding, the
    /// `requestState` binding, per-requester bounds): issuer and subject, the issuer's
    /// length first so no pair of strings can collide with another pair.
    pub fn key(&self) -> String {
        format!("{}:{}#{}", self.issuer.len(), self.issuer, self.subject)
    }

    /// Whether the principal holds every scope in `required` (effective scopes).
    pub fn allows<S: AsRef<str>>(&self, required: &[S]) -> bool {
        required.iter().all(|s| self.effective_scopes.contains(s.as_ref()))
    }

    /// The scopes of `required` the principal does not hold (effective scopes).
    pub fn missing<'a, S: AsRef<str>>(&self, required: &'a [S]) -> Vec<&'a str> {
        required.iter().map(AsRef::as_ref).filter(|s| !self.effective_scopes.contains(*s)).collect()
    }

    /// Whether the token has expired at `now` (no expiry: never).
    pub fn is_expired_at(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// A claim, if the token carried it.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }
}

/// Which scopes imply which (`files:write` ⇒ `files:read`): the 2026-07-28 revision has
/// servers account for such hierarchies when they judge whether a token's scopes suffice.
/// Implication is transitive; cycles are harmless.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeHierarchy {
    implies: BTreeMap<String, BTreeSet<String>>,
}

impl ScopeHierarchy {
    /// No implications: every scope stands for itself.
    pub fn new() -> ScopeHierarchy {
        ScopeHierarchy::default()
    }

    /// The same hierarchy where holding `scope` also grants each of `implied`.
    pub fn implies<I, S>(mut self, scope: impl Into<String>, implied: I) -> ScopeHierarchy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.implies.entry(scope.into()).or_default().extend(implied.into_iter().map(Into::into));
        self
    }

    /// Whether no scope implies another.
    pub fn is_empty(&self) -> bool {
        self.implies.is_empty()
    }

    /// `granted` plus everything it implies, transitively.
    pub fn expand(&self, granted: &BTreeSet<String>) -> BTreeSet<String> {
        let mut out = granted.clone();
        let mut todo: Vec<&str> = granted.iter().map(String::as_str).collect();
        while let Some(scope) = todo.pop() {
            for implied in self.implies.get(scope).into_iter().flatten() {
                if out.insert(implied.clone()) {
                    todo.push(implied);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_different_identities_never_collide() {
        let a = Principal::new("https://a", "b#c");
        let b = Principal::new("https://a:b", "c");
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key(), Principal::new("https://a", "b#c").key());
        // Exact strings: a trailing slash is another issuer.
        assert_ne!(Principal::new("https://a/", "b#c").key(), a.key());
    }

    #[test]
    fn a_hierarchy_expands_transitively_and_survives_cycles() {
        let h = ScopeHierarchy::new().implies("files:admin", ["files:write"]).implies("files:write", ["files:read"]);
        let p = Principal::new("i", "s").with_scopes(["files:admin"]).with_hierarchy(&h);
        assert!(p.allows(&["files:read", "files:write"]));
        assert_eq!(p.scopes.len(), 1, "granted scopes stay as granted");
        let cyclic = ScopeHierarchy::new().implies("a", ["b"]).implies("b", ["a"]);
        let p = Principal::new("i", "s").with_scopes(["a"]).with_hierarchy(&cyclic);
        assert_eq!(p.effective_scopes.len(), 2);
    }

    #[test]
    fn missing_names_exactly_the_scopes_not_held() {
        let p = Principal::new("i", "s").with_scopes(["mcp:read"]);
        assert_eq!(p.missing(&["mcp:read", "mcp:write", "MCP:READ"]), vec!["mcp:write", "MCP:READ"]);
        assert!(!p.allows(&["mcp:write"]));
        assert!(p.allows::<&str>(&[]));
    }
}

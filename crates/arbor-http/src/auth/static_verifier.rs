//! [`StaticVerifier`]: a fixed table of tokens and the principals they stand for, for
//! tests and development.
//!
//! It is not for production: its tokens never expire unless their principal says so, and
//! they live in the process's memory as given. Invariant: a token is accepted exactly when
//! it equals (as bytes, in constant time per entry) one registered here and its principal
//! has not expired.

use std::time::SystemTime;

use arbor_server::Principal;
use sha2::{Digest, Sha256};

use super::verify::{TokenVerifier, VerifyError};

/// Tokens registered in code; see the module docs.
#[derive(Clone, Default)]
pub struct StaticVerifier {
    /// SHA-256 of each token with its principal: the table holds no token.
    entries: Vec<([u8; 32], Principal)>,
}

impl std::fmt::Debug for StaticVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticVerifier").field("tokens", &self.entries.len()).finish()
    }
}

impl StaticVerifier {
    /// A verifier that accepts nothing yet.
    pub fn new() -> StaticVerifier {
        StaticVerifier::default()
    }

    /// The same verifier accepting `token` as `principal`.
    pub fn token(mut self, token: impl AsRef<str>, principal: Principal) -> StaticVerifier {
        self.entries.push((Sha256::digest(token.as_ref().as_bytes()).into(), principal));
        self
    }
}

impl TokenVerifier for StaticVerifier {
    async fn verify(&self, token: &str) -> Result<Principal, VerifyError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Compare every entry fully, so the time taken says nothing about how close a
        // guess came.
        let mut found = None;
        for (known, principal) in &self.entries {
            let diff = known.iter().zip(digest.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 && found.is_none() {
                found = Some(principal);
            }
        }
        let principal = found.ok_or_else(|| VerifyError::Invalid("unknown token".into()))?;
        if principal.is_expired_at(SystemTime::now()) {
            return Err(VerifyError::Expired);
        }
        Ok(principal.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn accepts_exactly_the_registered_tokens() {
        let alice = Principal::new("https://as.example", "alice").with_scopes(["mcp:tools"]);
        let v = StaticVerifier::new().token("t-alice", alice.clone());
        assert_eq!(v.verify("t-alice").await, Ok(alice));
        assert!(matches!(v.verify("t-alice ").await, Err(VerifyError::Invalid(_))));
        assert!(matches!(v.verify("T-ALICE").await, Err(VerifyError::Invalid(_))));
        assert!(matches!(v.verify("").await, Err(VerifyError::Invalid(_))));
    }

    #[tokio::test]
    async fn an_expired_principal_is_refused_as_expired() {
        let gone = Principal::new("i", "s").with_expiry(SystemTime::now() - Duration::from_secs(1));
        let v = StaticVerifier::new().token("old", gone);
        assert_eq!(v.verify("old").await, Err(VerifyError::Expired));
    }

    #[test]
    fn debug_shows_no_token() {
        let v = StaticVerifier::new().token("secret-token-value", Principal::new("i", "s"));
        assert!(!format!("{v:?}").contains("secret"));
    }
}

//! `private_key_jwt` client authentication (RFC 7523 §2.2): the client proves itself to the
//! token endpoint with a short-lived JWT signed by its private key instead of a secret.
//!
//! Behind the `private-key-jwt` feature (it brings jsonwebtoken with aws-lc). Not a token
//! verifier. Invariant: the key never appears in `Debug` output or an error; each assertion
//! is new (its own `jti`) and lives one minute.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};

use super::OAuthError;

/// A client's signing key for `private_key_jwt`.
#[derive(Clone)]
pub(crate) struct AssertionKey {
    key: EncodingKey,
    alg: Algorithm,
}

impl fmt::Debug for AssertionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AssertionKey").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl AssertionKey {
    /// An ES256 key from a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub(crate) fn es256(pem: &str) -> Result<AssertionKey, OAuthError> {
        ensure_crypto_provider();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body.trim())
            .map_err(|_| OAuthError::Registration("the private key is not PEM".into()))?;
        Ok(AssertionKey { key: EncodingKey::from_ec_der(&der), alg: Algorithm::ES256 })
    }

    /// A fresh assertion for `client_id` to present to the authorization server `audience`.
    pub(crate) fn sign(&self, client_id: &str, audience: &str) -> Result<String, OAuthError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti).map_err(|e| OAuthError::Token(format!("no randomness: {e}")))?;
        let claims = serde_json::json!({
            "iss": client_id, "sub": client_id, "aud": audience,
            "iat": now, "exp": now + 60,
            "jti": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(jti),
        });
        jsonwebtoken::encode(&Header::new(self.alg), &claims, &self.key)
            .map_err(|e| OAuthError::Token(format!("cannot sign the client assertion: {e}")))
    }
}

/// jsonwebtoken needs its process-wide provider chosen when both of its backends are in
/// the build (another crate asked for RustCrypto): aws-lc then, unless one is installed.
fn ensure_crypto_provider() {
    use jsonwebtoken::crypto::CryptoProvider;
    if CryptoProvider::try_get_default().is_none() {
        let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
    }
}

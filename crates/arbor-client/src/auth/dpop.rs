//! DPoP (RFC 9449) for the client: the key an access token is bound to, and the proof JWT
//! that goes with each HTTP request made with it (to the token endpoint, and to the MCP
//! server with the token).
//!
//! A proof is a compact JWS, `typ` `dpop+jwt`, signed ES256 with the client's P-256 key,
//! carrying the public key (`jwk`) in its header and `jti`, `htm`, `htu`, `iat` (plus
//! `ath`, the token's SHA-256, at the resource server, and `nonce` when a server gave one)
//! in its claims. Built on aws-lc-rs (key generation and signing) behind the `dpop`
//! feature. Not a verifier: the servers check proofs. Invariants: every proof is new (its
//! own random `jti`, the current `iat`); the private key never appears in `Debug` output,
//! an error or a proof (the `jwk` holds the public coordinates only).

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::Engine;
use sha2::{Digest, Sha256};

use super::OAuthError;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The one algorithm proofs are signed with (every DPoP server must accept a P-256 key).
pub(crate) const ALG: &str = "ES256";

/// A client's DPoP key: a P-256 key pair. Cloning shares the key.
#[derive(Clone)]
pub struct DpopKey {
    pair: Arc<EcdsaKeyPair>,
    /// The public JWK members, in RFC 7638's order (which is also the header's).
    x: String,
    y: String,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey").field("alg", &ALG).field("thumbprint", &self.thumbprint).finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new random key (an application that keeps tokens across runs keeps the key with
    /// them: a DPoP-bound token is useless without it; see [`DpopKey::to_pkcs8_der`]).
    pub fn generate() -> Result<DpopKey, OAuthError> {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
            .map_err(|_| OAuthError::Dpop("cannot generate a P-256 key".into()))?;
        Ok(DpopKey::from_pair(pair))
    }

    /// A key from its PKCS#8 DER encoding (what [`DpopKey::to_pkcs8_der`] gives).
    pub fn from_pkcs8_der(der: &[u8]) -> Result<DpopKey, OAuthError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|_| OAuthError::Dpop("the key is not a PKCS#8 P-256 private key".into()))?;
        Ok(DpopKey::from_pair(pair))
    }

    /// The private key as PKCS#8 DER, for the application's secure storage.
    pub fn to_pkcs8_der(&self) -> Result<Vec<u8>, OAuthError> {
        let doc = self.pair.to_pkcs8v1().map_err(|_| OAuthError::Dpop("cannot encode the key".into()))?;
        Ok(doc.as_ref().to_vec())
    }

    /// The key's JWK SHA-256 thumbprint (RFC 7638), base64url: what a bound token's
    /// `cnf.jkt` holds.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    fn from_pair(pair: EcdsaKeyPair) -> DpopKey {
        // An uncompressed SEC1 point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let (x, y) = (B64.encode(&point[1..33]), B64.encode(&point[33..65]));
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = B64.encode(Sha256::digest(canonical.as_bytes()));
        DpopKey { pair: Arc::new(pair), x, y, thumbprint }
    }

    /// A fresh proof for a `method` request to `url` (its query and fragment are left out,
    /// as `htu` must be), bound to `access_token` when one is sent, with the server's
    /// `nonce` when it gave one. The client makes these itself; this is for requests an
    /// application sends with the same token by other means.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, OAuthError> {
        let (origin, path) = arbor_protocol::uri::split_origin(url);
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti).map_err(|e| OAuthError::Dpop(format!("no randomness: {e}")))?;
        let iat = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let header = serde_json::json!({
            "typ": "dpop+jwt",
            "alg": ALG,
            "jwk": { "kty": "EC", "crv": "P-256", "x": self.x, "y": self.y },
        });
        let mut claims = serde_json::json!({
            "jti": B64.encode(jti),
            "htm": method,
            "htu": format!("{origin}{path}"),
            "iat": iat,
        });
        if let Some(token) = access_token {
            claims["ath"] = B64.encode(Sha256::digest(token.as_bytes())).into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| OAuthError::Dpop("cannot sign the proof".into()))?;
        Ok(format!("{input}.{}", B64.encode(signature.as_ref())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    fn decode(part: &str) -> serde_json::Value {
        serde_json::from_slice(&B64.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_is_signed_by_the_key_it_carries_and_names_the_request() {
        let key = DpopKey::generate().unwrap();
        let token = "an-access-token";
        let proof = key.proof("POST", "https://mcp.example/mcp?x=1#f", Some(token), Some("n-1")).unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part in the header");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp", "no query, no fragment");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["ath"], B64.encode(Sha256::digest(token.as_bytes())));
        assert!(claims["iat"].as_u64().unwrap() > 1_700_000_000);

        // The signature verifies with the public key rebuilt from the header's JWK.
        let mut point = vec![4u8];
        point.extend(B64.decode(header["jwk"]["x"].as_str().unwrap()).unwrap());
        point.extend(B64.decode(header["jwk"]["y"].as_str().unwrap()).unwrap());
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point);
        let signed = format!("{}.{}", parts[0], parts[1]);
        public.verify(signed.as_bytes(), &B64.decode(parts[2]).unwrap()).expect("the proof verifies");
    }

    #[test]
    fn every_proof_is_fresh_and_only_a_token_proof_has_ath() {
        let key = DpopKey::generate().unwrap();
        let a = decode(key.proof("POST", "https://as.example/token", None, None).unwrap().split('.').nth(1).unwrap());
        let b = decode(key.proof("POST", "https://as.example/token", None, None).unwrap().split('.').nth(1).unwrap());
        assert_ne!(a["jti"], b["jti"]);
        assert!(a.get("ath").is_none() && a.get("nonce").is_none());
    }

    #[test]
    fn the_thumbprint_is_rfc_7638_over_the_public_members_and_survives_a_round_trip() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_pkcs8_der(&key.to_pkcs8_der().unwrap()).unwrap();
        assert_eq!(key.thumbprint(), again.thumbprint());
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#, key.x, key.y);
        assert_eq!(key.thumbprint(), B64.encode(Sha256::digest(canonical.as_bytes())));
        assert_eq!(key.thumbprint().len(), 43);
        assert!(!format!("{key:?}").contains(&key.x), "Debug shows the thumbprint only");
        assert!(DpopKey::from_pkcs8_der(b"not a key").is_err());
    }
}

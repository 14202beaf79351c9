//! [`KeySet`]: the verification keys of one JWKS document, parsed once and looked up by
//! `kid` and algorithm on every verification.
//!
//! It is not a general JWK library: it keeps only public signature keys of the types
//! jsonwebtoken verifies (RSA of at least 2048 bits, EC P-256/P-384, OKP Ed25519) and
//! drops the rest (symmetric `oct` keys above all, encryption keys, unknown curves).
//! Invariant: a key is handed out for an algorithm only if its type fits that algorithm
//! and the `alg` it declares (if any) is that algorithm, so an RSA key never verifies an
//! ES256 token and no key ever verifies an HMAC one.

use std::str::FromStr;

use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// The smallest RSA modulus accepted, in bits.
const MIN_RSA_BITS: usize = 2048;

/// Which algorithms a key can verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyType {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl KeyType {
    /// The key type `alg` needs; `None` for the algorithms no JWKS key may serve (HMAC).
    pub(crate) fn for_algorithm(alg: Algorithm) -> Option<KeyType> {
        use Algorithm::*;
        match alg {
            RS256 | RS384 | RS512 | PS256 | PS384 | PS512 => Some(KeyType::Rsa),
            ES256 => Some(KeyType::P256),
            ES384 => Some(KeyType::P384),
            EdDSA => Some(KeyType::Ed25519),
            _ => None,
        }
    }
}

struct KeyEntry {
    kid: Option<String>,
    kind: KeyType,
    /// The `alg` the JWK declares, if any.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

impl KeyEntry {
    fn serves(&self, alg: Algorithm) -> bool {
        KeyType::for_algorithm(alg) == Some(self.kind) && self.alg.is_none_or(|own| own == alg)
    }
}

/// Why no key answered a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// No key with this `kid` (or, without a `kid`, no key for the algorithm): a refetch
    /// may find it.
    Unknown,
    /// The `kid` names a key of another type or algorithm.
    Incompatible,
    /// No `kid` in the token and several keys fit the algorithm.
    Ambiguous,
}

/// The usable keys of one JWKS document.
#[derive(Default)]
pub(crate) struct KeySet {
    entries: Vec<KeyEntry>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<_> = self.entries.iter().map(|e| (e.kid.as_deref(), e.kind)).collect();
        f.debug_struct("KeySet").field("keys", &kids).finish()
    }
}

impl KeySet {
    /// Parses a JWKS document (`{"keys": [...]}`), keeping the usable keys; an error only
    /// when the document itself is not a JWKS. The count of dropped keys comes second.
    pub(crate) fn parse(body: &[u8]) -> Result<(KeySet, usize), String> {
        #[derive(serde::Deserialize)]
        struct Doc {
            keys: Vec<Value>,
        }
        let doc: Doc = serde_json::from_slice(body).map_err(|e| format!("not a JWK set: {e}"))?;
        let total = doc.keys.len();
        let entries: Vec<KeyEntry> = doc.keys.iter().filter_map(entry).collect();
        let dropped = total - entries.len();
        Ok((KeySet { entries }, dropped))
    }

    /// How many keys the set holds.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key for a token with header `kid` and `alg`; see [`Miss`].
    pub(crate) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<&DecodingKey, Miss> {
        match kid {
            Some(kid) => {
                let mut named = self.entries.iter().filter(|e| e.kid.as_deref() == Some(kid)).peekable();
                if named.peek().is_none() {
                    return Err(Miss::Unknown);
                }
                named.find(|e| e.serves(alg)).map(|e| &e.key).ok_or(Miss::Incompatible)
            }
            None => {
                let mut fitting = self.entries.iter().filter(|e| e.serves(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => Ok(&only.key),
                    (None, _) => Err(Miss::Unknown),
                    (Some(_), Some(_)) => Err(Miss::Ambiguous),
                }
            }
        }
    }
}

/// One JWK as a key entry, or `None` if it is not a usable public signature key.
fn entry(raw: &Value) -> Option<KeyEntry> {
    let str_of = |name: &str| raw.get(name).and_then(Value::as_str);
    if str_of("use").is_some_and(|u| u != "sig") {
        return None;
    }
    if let Some(ops) = raw.get("key_ops") {
        let ops = ops.as_array()?;
        if !ops.iter().any(|op| op.as_str() == Some("verify")) {
            return None;
        }
    }
    let alg = match str_of("alg") {
        None => None,
        // An `alg` we cannot verify (an encryption algorithm, HMAC) rules the key out.
        Some(name) => Some(Algorithm::from_str(name).ok().filter(|a| KeyType::for_algorithm(*a).is_some())?),
    };
    let kind = match (str_of("kty")?, str_of("crv")) {
        ("RSA", _) => {
            let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(str_of("n")?).ok()?;
            let bits = n.iter().position(|b| *b != 0).map_or(0, |first| (n.len() - first) * 8);
            if bits < MIN_RSA_BITS {
                return None;
            }
            KeyType::Rsa
        }
        ("EC", Some("P-256")) => KeyType::P256,
        ("EC", Some("P-384")) => KeyType::P384,
        ("OKP", Some("Ed25519")) => KeyType::Ed25519,
        // `oct` (a shared secret has no place in a public set), other curves, other types.
        _ => return None,
    };
    if alg.is_some_and(|a| KeyType::for_algorithm(a) != Some(kind)) {
        return None;
    }
    let jwk: Jwk = serde_json::from_value(raw.clone()).ok()?;
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    Some(KeyEntry { kid: str_of("kid").map(str::to_owned), kind, alg, key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rsa_jwk(kid: &str) -> Value {
        // A 2048-bit modulus of 0xC5 bytes: the value does not matter for parsing.
        let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xC5u8; 256]);
        json!({"kty": "RSA", "kid": kid, "n": n, "e": "AQAB"})
    }

    fn ec_jwk(kid: &str) -> Value {
        let c = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 32]);
        json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": c, "y": c})
    }

    fn set(keys: Vec<Value>) -> (KeySet, usize) {
        KeySet::parse(json!({ "keys": keys }).to_string().as_bytes()).unwrap()
    }

    #[test]
    fn keeps_only_public_signature_keys() {
        let small = json!({"kty": "RSA", "kid": "small", "n": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xC5u8; 128]), "e": "AQAB"});
        let mut enc = rsa_jwk("enc");
        enc["use"] = json!("enc");
        let mut oaep = rsa_jwk("oaep");
        oaep["alg"] = json!("RSA-OAEP");
        let mut hs = rsa_jwk("hs");
        hs["alg"] = json!("HS256");
        let oct = json!({"kty": "oct", "kid": "oct", "k": "c2VjcmV0"});
        let p521 = json!({"kty": "EC", "crv": "P-521", "kid": "p521", "x": "AA", "y": "AA"});
        let (keys, dropped) = set(vec![rsa_jwk("a"), ec_jwk("e"), small, enc, oaep, hs, oct, p521]);
        assert_eq!((keys.len(), dropped), (2, 6));
        assert!(KeySet::parse(b"[1,2]").is_err());
    }

    #[test]
    fn a_key_serves_only_the_algorithms_of_its_type_and_declared_alg() {
        let mut ps = rsa_jwk("ps");
        ps["alg"] = json!("PS256");
        let (keys, _) = set(vec![rsa_jwk("a"), ec_jwk("e"), ps]);
        assert!(keys.find(Some("a"), Algorithm::RS256).is_ok());
        assert!(keys.find(Some("a"), Algorithm::PS384).is_ok());
        assert_eq!(keys.find(Some("a"), Algorithm::ES256).err(), Some(Miss::Incompatible));
        assert_eq!(keys.find(Some("a"), Algorithm::HS256).err(), Some(Miss::Incompatible));
        assert_eq!(keys.find(Some("e"), Algorithm::RS256).err(), Some(Miss::Incompatible));
        assert_eq!(keys.find(Some("e"), Algorithm::ES384).err(), Some(Miss::Incompatible));
        assert_eq!(keys.find(Some("ps"), Algorithm::RS256).err(), Some(Miss::Incompatible));
        assert!(keys.find(Some("ps"), Algorithm::PS256).is_ok());
        assert_eq!(keys.find(Some("zz"), Algorithm::RS256).err(), Some(Miss::Unknown));
    }

    #[test]
    fn without_kid_only_a_single_fitting_key_is_used() {
        let (keys, _) = set(vec![rsa_jwk("a"), ec_jwk("e")]);
        assert!(keys.find(None, Algorithm::RS256).is_ok());
        assert!(keys.find(None, Algorithm::ES256).is_ok());
        assert_eq!(keys.find(None, Algorithm::EdDSA).err(), Some(Miss::Unknown));
        let (two, _) = set(vec![rsa_jwk("a"), rsa_jwk("b")]);
        assert_eq!(two.find(None, Algorithm::RS256).err(), Some(Miss::Ambiguous));
    }
}

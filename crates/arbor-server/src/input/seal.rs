//! The server secret behind `requestState`, and the token format: the payload's bytes
//! and an HMAC-SHA256 tag over them, each base64url without padding, joined by a dot.
//!
//! The tag is computed over a fixed domain label followed by the payload, so a tag
//! made with the same key for another purpose (a pagination cursor, say) never
//! verifies as a `requestState`. The token is authenticated, not encrypted: a client
//! can decode the payload and read the handler's state, so state must never hold
//! secrets. This module knows the payload's fields but not what they mean; the
//! `modern` module decides that. Invariant: `StateKey::verify` returns payload bytes
//! only when their tag verifies under one of the ring's keys, compared in constant time,
//! together with that key, whose digests alone the rest of the state is checked against.

use super::needs::Kind;
use arc_swap::ArcSwap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Separates `requestState` tags from any other use of the same key.
const DOMAIN: &[u8] = b"arbor/mcp/requestState\0";

/// Separates principal digests from `requestState` tags.
const PRINCIPAL_DOMAIN: &[u8] = b"arbor/mcp/principal\0";

/// Separates argument digests from principal digests and `requestState` tags.
const ARGUMENTS_DOMAIN: &[u8] = b"arbor/mcp/arguments\0";

/// The length of a key made by [`StateKey::random`], and the least a key should have.
const KEY_LEN: usize = 32;

/// The server's secrets for protecting MRTR `requestState` (HMAC-SHA256): a keyring of
/// one current key, which seals, and the keys still accepted, which only open, with the
/// longest a sealed state stays valid.
///
/// Every server instance that may receive a client's retry must accept the key that
/// sealed it: generate one with [`StateKey::random`] for a single process, or share one
/// through [`StateKey::from_bytes`] across a fleet. Its `Debug` output never shows a key.
///
/// Keys rotate in stages, so that no state in flight is refused on any node, whatever
/// order the nodes take the steps in: [`stage`](StateKey::stage) the new key everywhere
/// (accepted, not used), then [`promote`](StateKey::promote) it everywhere (it seals, the
/// old one is still accepted), then, once the old key's states have expired (its
/// [`max_age`](StateKey::max_age)), [`retire`](StateKey::retire) the old one. Clones
/// share the keyring: a rotation through one is seen by every server built with a clone.
///
/// ```
/// use arbor_server::StateKey;
///
/// let key = StateKey::from_bytes(&[1; 32]);
/// key.stage(&[2; 32]); // step 1, on every node: accept the new key
/// key.promote(); // step 2, on every node: seal with it, still accept the old one
/// assert_eq!(key.keys(), 2);
/// key.retire(); // step 3, after max_age: only the new key is left
/// assert_eq!(key.keys(), 1);
/// ```
#[derive(Clone)]
pub struct StateKey {
    ring: Arc<ArcSwap<Ring>>,
    max_age: Duration,
}

/// The keys in force at one moment: replaced whole on every change, read without a lock.
#[derive(Clone)]
struct Ring {
    /// Seals; also opens.
    current: Secret,
    /// Open only: the key being rotated in (staged) or out (after a promotion). Oldest first.
    accepted: Vec<Secret>,
    /// A staged key waiting for `promote`.
    staged: Option<Secret>,
}

/// The most keys a ring accepts besides its current one: a rotation needs one (the old
/// key, or the staged new one); a few more tolerate steps taken twice. Past it the oldest
/// is dropped.
const MAX_ACCEPTED: usize = 3;

/// One HMAC key: what seals and opens a state and computes its digests.
#[derive(Clone)]
pub(crate) struct Secret {
    mac: Hmac<Sha256>,
}

impl StateKey {
    /// How long a sealed `requestState` stays valid unless [`StateKey::with_max_age`]
    /// says otherwise: ten minutes, long enough for a person to fill in a form.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(600);

    /// A fresh 256-bit key from the operating system's CSPRNG.
    ///
    /// # Panics
    ///
    /// If the operating system cannot provide random bytes; a server must not run
    /// with a guessable key.
    pub fn random() -> StateKey {
        let bytes =
            crate::ids::random_bytes::<KEY_LEN>().expect("the operating system's random number generator failed");
        StateKey::from_bytes(&bytes)
    }

    /// A key from secret bytes, for servers that share one across instances. Use at
    /// least 32 bytes from a CSPRNG; HMAC accepts any length, but a short or guessable
    /// key lets anyone forge `requestState`.
    pub fn from_bytes(bytes: &[u8]) -> StateKey {
        let ring = Ring { current: Secret::new(bytes), accepted: Vec::new(), staged: None };
        StateKey { ring: Arc::new(ArcSwap::from_pointee(ring)), max_age: StateKey::DEFAULT_MAX_AGE }
    }

    /// The same key with another maximum age for the states it seals.
    pub fn with_max_age(mut self, max_age: Duration) -> StateKey {
        self.max_age = max_age;
        self
    }

    /// How long a state sealed with this key stays valid.
    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    /// Rotation, step 1: `bytes` become a key that opens states (sealed by a node that has
    /// already promoted it) but seals none yet. Staging again replaces a key staged and
    /// not yet promoted.
    pub fn stage(&self, bytes: &[u8]) {
        self.change(|ring| ring.staged = Some(Secret::new(bytes)));
    }

    /// Rotation, step 2: the staged key seals from now on; the key that sealed until now
    /// still opens. Does nothing when no key is staged.
    pub fn promote(&self) {
        self.change(|ring| {
            if let Some(new) = ring.staged.take() {
                let old = std::mem::replace(&mut ring.current, new);
                ring.accepted.push(old);
                if ring.accepted.len() > MAX_ACCEPTED {
                    ring.accepted.remove(0);
                }
            }
        });
    }

    /// Rotation, step 3: only the current key (and a staged one) opens states from now on;
    /// states sealed by the keys it drops are refused as not issued by this server.
    pub fn retire(&self) {
        self.change(|ring| ring.accepted.clear());
    }

    /// Replaces the whole keyring: `current` seals, `staged` and `accepted` only open. For a
    /// keyring kept elsewhere and read by every node (`arbor_cluster::RedisKeyring`); at most
    /// the newest three `accepted` are kept.
    pub fn set_keys(&self, current: &[u8], staged: Option<&[u8]>, accepted: &[Vec<u8>]) {
        let skip = accepted.len().saturating_sub(MAX_ACCEPTED);
        let ring = Ring {
            current: Secret::new(current),
            accepted: accepted[skip..].iter().map(|k| Secret::new(k)).collect(),
            staged: staged.map(Secret::new),
        };
        self.ring.store(Arc::new(ring));
    }

    /// The keys that open states now: the current one, the accepted ones, a staged one.
    pub fn keys(&self) -> usize {
        let ring = self.ring.load();
        1 + ring.accepted.len() + usize::from(ring.staged.is_some())
    }

    fn change(&self, edit: impl Fn(&mut Ring)) {
        self.ring.rcu(|ring| {
            let mut ring = Ring::clone(ring);
            edit(&mut ring);
            ring
        });
    }

    /// The key that seals now.
    pub(crate) fn current(&self) -> Secret {
        self.ring.load().current.clone()
    }

    /// The payload of a token one of the ring's keys signed, with that key (whose digests
    /// the rest of the state must match), or `None` if the token is malformed or no key's
    /// tag verifies. The current key is tried first; each comparison is constant-time.
    pub(crate) fn verify(&self, token: &str) -> Option<(Vec<u8>, Secret)> {
        let (payload, tag) = token.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let ring = self.ring.load();
        let keys = std::iter::once(&ring.current).chain(ring.staged.iter()).chain(ring.accepted.iter().rev());
        for key in keys {
            if key.verifies(&payload, &tag) {
                return Some((payload, key.clone()));
            }
        }
        None
    }

    /// Signs `payload` with the current key (tests).
    #[cfg(test)]
    pub(crate) fn sign(&self, payload: &[u8]) -> String {
        self.current().sign(payload)
    }

    /// The current key's digest of `canonical` arguments (tests).
    #[cfg(test)]
    pub(crate) fn arguments_tag(&self, canonical: &[u8]) -> String {
        self.current().arguments_tag(canonical)
    }
}

impl Secret {
    fn new(bytes: &[u8]) -> Secret {
        Secret { mac: <Hmac<Sha256> as KeyInit>::new_from_slice(bytes).expect("HMAC takes keys of any length") }
    }

    /// Signs `payload`: `base64url(payload) "." base64url(tag)`.
    pub(crate) fn sign(&self, payload: &[u8]) -> String {
        let mut mac = self.mac.clone();
        mac.update(DOMAIN);
        mac.update(payload);
        let tag = mac.finalize().into_bytes();
        let mut token = URL_SAFE_NO_PAD.encode(payload);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(tag, &mut token);
        token
    }

    /// Whether `tag` is this key's tag of `payload`. Nothing is read from the payload
    /// before the tag has been checked.
    fn verifies(&self, payload: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.mac.clone();
        mac.update(DOMAIN);
        mac.update(payload);
        // `verify_slice` compares in constant time and refuses a tag of another length.
        mac.verify_slice(tag).is_ok()
    }

    /// A keyed digest of a principal: binds the state to it without writing the
    /// identity out in a token the client can read, and without letting the client
    /// test guesses against it. 128 bits are plenty to tell principals apart.
    pub(crate) fn principal_tag(&self, principal: &str) -> String {
        let mut mac = self.mac.clone();
        mac.update(PRINCIPAL_DOMAIN);
        mac.update(principal.as_bytes());
        URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..16])
    }

    /// A keyed digest of a request's arguments in their canonical text: binds the state
    /// to them in 22 characters, however large they are. Keyed, so a client cannot
    /// compute the digest of other arguments and has nothing to match but the server's
    /// answer; 128 bits leave no room for finding two argument sets that collide.
    pub(crate) fn arguments_tag(&self, canonical: &[u8]) -> String {
        let mut mac = self.mac.clone();
        mac.update(ARGUMENTS_DOMAIN);
        mac.update(canonical);
        URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..16])
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKey").field("key", &"<redacted>").field("max_age", &self.max_age).finish()
    }
}

/// The version of the payload below; a state of any other version is refused.
/// Version 2 added the arguments digest: a version 1 state bound none, so it must not
/// open for any arguments.
pub(crate) const FORMAT_VERSION: u32 = 2;

/// What a sealed `requestState` binds. Short member names keep the token small,
/// since clients echo it on every retry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Payload {
    /// [`FORMAT_VERSION`].
    #[serde(rename = "v")]
    pub(crate) version: u32,
    /// The method the state answers (`tools/call`, `prompts/get`, `resources/read`).
    #[serde(rename = "m")]
    pub(crate) method: String,
    /// The tool name, prompt name or resource URI.
    #[serde(rename = "s")]
    pub(crate) subject: String,
    /// A keyed digest of the authenticated principal, when the state is bound to one.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<String>,
    /// A keyed digest of the canonical text of the request's arguments.
    #[serde(rename = "a")]
    pub(crate) arguments: String,
    /// When the state stops being valid, in seconds since the Unix epoch.
    #[serde(rename = "x")]
    pub(crate) expires: u64,
    /// The keys of the input requests issued with the state, and their kinds.
    #[serde(rename = "k", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) issued: BTreeMap<String, Kind>,
    /// The handler's own state.
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<Value>,
}

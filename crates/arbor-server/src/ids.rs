//! Unguessable identifiers: the one place Arbor draws random bits from the operating
//! system for ids and keys (legacy HTTP session ids in `arbor-http`, task ids, URL
//! elicitation ids, the default `requestState` key).
//!
//! An id is 128 bits from the OS's CSPRNG (`getrandom`), written as 32 lowercase hex
//! digits: visible ASCII, as `Mcp-Session-Id` requires (0x21 to 0x7E), safe in a URL, a
//! header, a JSON string and a log line, and equal only to itself. It is not a counter, a
//! timestamp or a hash: nothing about it can be predicted from another one, which is what
//! the spec asks of session and task ids. Randomness for anything that is not a secret
//! (back-off jitter, a bus node's name) does not come from here.
//!
//! Invariant: every id this module returns is exactly [`ID_LEN`] characters of
//! `0-9a-f`, from 16 fresh OS random bytes; a failing OS generator is an error, never a
//! weaker id.

use std::fmt::Write as _;

/// The length of an id from [`random_id`], in characters (128 bits as hex).
pub const ID_LEN: usize = 32;

/// The operating system's random number generator failed, so no id (or key) was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the operating system's random number generator failed: {0}")]
pub struct RandomnessError(#[source] getrandom::Error);

/// `N` fresh bytes from the operating system's CSPRNG, for a key.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], RandomnessError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(RandomnessError)?;
    Ok(bytes)
}

/// A fresh id: 128 bits from the operating system's CSPRNG, as [`ID_LEN`] lowercase hex
/// digits.
pub fn random_id() -> Result<String, RandomnessError> {
    let bytes = random_bytes::<16>()?;
    let mut id = String::with_capacity(ID_LEN);
    for b in bytes {
        // Writing to a `String` cannot fail.
        let _ = write!(id, "{b:02x}");
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_32_lowercase_hex_digits_and_do_not_repeat() {
        let ids: HashSet<String> = (0..1_000).map(|_| random_id().expect("the OS has randomness")).collect();
        assert_eq!(ids.len(), 1_000);
        for id in &ids {
            assert_eq!(id.len(), ID_LEN);
            assert!(id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "{id}");
        }
    }

    #[test]
    fn keys_have_the_length_asked_for() {
        let (a, b) = (random_bytes::<32>().unwrap(), random_bytes::<32>().unwrap());
        assert_ne!(a, b);
    }
}

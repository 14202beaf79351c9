//! The stand-in for DPoP when the `dpop` feature is off: no key can exist, so the flow
//! never sends a proof, and a server that requires DPoP gets a clear error instead.
//!
//! Not an implementation. Invariant: nothing here can produce a proof.

use super::OAuthError;

/// No DPoP key can be made without the `dpop` feature.
#[derive(Clone, Debug)]
pub(crate) enum DpopKey {}

impl DpopKey {
    pub(crate) fn generate() -> Result<DpopKey, OAuthError> {
        Err(OAuthError::Dpop("the server requires DPoP and arbor-client was built without the `dpop` feature".into()))
    }

    pub(crate) fn proof(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, OAuthError> {
        match *self {}
    }
}

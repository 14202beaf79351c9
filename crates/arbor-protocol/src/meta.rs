//! The `_meta` object and its well-known keys.
//!
//! `_meta` is an open map: Arbor reads the keys the spec names through typed
//! accessors and carries every other key through untouched, so a newer peer's
//! metadata is never dropped on a decode/encode round trip.
//! This module does not decide whether a key is required; the era modules do.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `_meta` key: the protocol revision of a 2026-07-28 request.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities on a 2026-07-28 request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the server's identity on a `server/discover` result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key: the subscription a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key: the log level a 2026-07-28 request asks for.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the progress token (no prefix, all revisions).
pub const PROGRESS_TOKEN: &str = "progressToken";

/// An open `_meta` object. Unknown keys are preserved in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(pub Map<String, Value>);

impl Meta {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Meta(Map::new())
    }

    /// The raw value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets `key` to `value`, returning the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0.insert(key.into(), value)
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

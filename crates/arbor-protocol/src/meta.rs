//! The `_meta` object and its well-known keys.
//!
//! `_meta` is an open map: Arbor reads the keys the spec names through typed
//! accessors and carries every other key through untouched, so a newer peer's
//! metadata is never dropped on a decode/encode round trip.
//! This module does not decide whether a key is required; the era modules do.
//!
//! Invariant: an accessor never changes the map it reads, and a getter returns
//! `None` both for an absent key and for a value of the wrong type; callers
//! that must tell the two apart use [`Meta::get`].

use crate::jsonrpc::RequestId;
use crate::model::logging::LoggingLevel;
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// `_meta` key (request, 2026-07-28, required): the request's protocol revision.
/// On HTTP it must equal the `MCP-Protocol-Version` header.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key (request, 2026-07-28, required): the client's capabilities for
/// this request alone; `{}` means none.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key (request, 2026-07-28, optional): the client's self-reported
/// identity. For display and logs only, never for decisions.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key (result, 2026-07-28): the server's self-reported identity,
/// including on the `server/discover` result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key (notification and listen result, 2026-07-28): the JSON-RPC id of
/// the `subscriptions/listen` request whose stream carries the message.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key (request, 2026-07-28, optional, deprecated): the log level this
/// request opts into; without it no `notifications/message` is sent for it.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key (2025-11-25 only): `{taskId}` associating a message with a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key (request, all revisions): the progress token (no prefix).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// `_meta` key (any): W3C Trace Context `traceparent`, exempt from the prefix rule.
pub const TRACEPARENT: &str = "traceparent";
/// `_meta` key (any): W3C Trace Context `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// `_meta` key (any): W3C Baggage.
pub const BAGGAGE: &str = "baggage";

pub use crate::model::common::ProgressToken;

/// Up to this many keys, a `_meta` is a list, scanned on every read and insert; past it, a
/// map, hashed.
const SCAN_BELOW: usize = 8;

/// An open `_meta` object. Unknown keys are preserved in order; equality, as for a JSON
/// object, ignores the order.
#[derive(Clone, Debug, Default)]
pub struct Meta(Entries);

/// A request's `_meta` holds a handful of keys, read several times per request. As a list
/// it costs one allocation and no hashing: a `serde_json::Map` (an `IndexMap` hashed with
/// SipHash) cost two allocations and about 600 instructions per key just to be read off
/// the wire, on every 2026-07-28 request. A large `_meta` becomes a map, so a hostile one
/// costs no quadratic time.
#[derive(Clone, Debug)]
enum Entries {
    /// At most [`SCAN_BELOW`] keys, each once, in order. A key the spec names is kept as
    /// its constant, so reading one off the wire allocates nothing for it.
    Few(Vec<(Cow<'static, str>, Value)>),
    Many(Map<String, Value>),
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Few(Vec::new())
    }
}

impl Meta {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Meta::default()
    }

    /// The `_meta` member of a params (or result) object, if it is an object.
    pub fn from_params(params: &Value) -> Option<Meta> {
        params.get("_meta").and_then(Value::as_object).cloned().map(Meta::from)
    }

    /// The raw value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.0 {
            Entries::Few(entries) => entries.iter().find(|(k, _)| k.as_ref() == key).map(|(_, v)| v),
            Entries::Many(map) => map.get(key),
        }
    }

    /// Sets `key` to `value`, returning the previous value. A key already set keeps its
    /// place; a new one goes last.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.insert_key(Cow::Owned(key.into()), value)
    }

    fn insert_key(&mut self, key: Cow<'static, str>, value: Value) -> Option<Value> {
        match &mut self.0 {
            Entries::Few(entries) => {
                if let Some((_, slot)) = entries.iter_mut().find(|(k, _)| *k == key) {
                    return Some(std::mem::replace(slot, value));
                }
                if entries.len() < SCAN_BELOW {
                    entries.push((key, value));
                    return None;
                }
                let mut map: Map<String, Value> =
                    std::mem::take(entries).into_iter().map(|(k, v)| (k.into_owned(), v)).collect();
                map.insert(key.into_owned(), value);
                self.0 = Entries::Many(map);
                None
            }
            Entries::Many(map) => map.insert(key.into_owned(), value),
        }
    }

    /// Removes `key`, returning its value. The other keys keep their order.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        match &mut self.0 {
            Entries::Few(entries) => {
                let at = entries.iter().position(|(k, _)| k.as_ref() == key)?;
                Some(entries.remove(at).1)
            }
            Entries::Many(map) => map.shift_remove(key),
        }
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many keys are set.
    pub fn len(&self) -> usize {
        match &self.0 {
            Entries::Few(entries) => entries.len(),
            Entries::Many(map) => map.len(),
        }
    }

    /// The keys and their values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        let (few, many) = match &self.0 {
            Entries::Few(entries) => (Some(entries.iter().map(|(k, v)| (k.as_ref(), v))), None),
            Entries::Many(map) => (None, Some(map.iter().map(|(k, v)| (k.as_str(), v)))),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    /// The `_meta` as a JSON object.
    pub fn into_map(self) -> Map<String, Value> {
        match self.0 {
            Entries::Few(entries) => entries.into_iter().map(|(k, v)| (k.into_owned(), v)).collect(),
            Entries::Many(map) => map,
        }
    }

    fn str_at(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    fn object_at(&self, key: &str) -> Option<&Map<String, Value>> {
        self.get(key).and_then(Value::as_object)
    }

    /// The protocol version string, verbatim. It stays a string because an
    /// unknown version must be echoed back in the -32022 error.
    pub fn protocol_version(&self) -> Option<&str> {
        self.str_at(PROTOCOL_VERSION)
    }

    /// Sets the protocol version.
    pub fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.insert_key(Cow::Borrowed(PROTOCOL_VERSION), Value::String(version.as_str().to_owned()));
    }

    /// The client capabilities object.
    pub fn client_capabilities(&self) -> Option<&Map<String, Value>> {
        self.object_at(CLIENT_CAPABILITIES)
    }

    /// Sets the client capabilities (a `ClientCapabilities` object).
    pub fn set_client_capabilities(&mut self, capabilities: Value) {
        self.insert_key(Cow::Borrowed(CLIENT_CAPABILITIES), capabilities);
    }

    /// The client's self-reported `Implementation`.
    pub fn client_info(&self) -> Option<&Map<String, Value>> {
        self.object_at(CLIENT_INFO)
    }

    /// Sets the client's `Implementation`.
    pub fn set_client_info(&mut self, info: Value) {
        self.insert_key(Cow::Borrowed(CLIENT_INFO), info);
    }

    /// The server's self-reported `Implementation`.
    pub fn server_info(&self) -> Option<&Map<String, Value>> {
        self.object_at(SERVER_INFO)
    }

    /// Sets the server's `Implementation`.
    pub fn set_server_info(&mut self, info: Value) {
        self.insert_key(Cow::Borrowed(SERVER_INFO), info);
    }

    /// The subscription id, with its JSON type (string or integer) preserved.
    pub fn subscription_id(&self) -> Option<RequestId> {
        self.get(SUBSCRIPTION_ID).and_then(RequestId::from_value)
    }

    /// Sets the subscription id to the listen request's id.
    pub fn set_subscription_id(&mut self, id: &RequestId) {
        self.insert_key(Cow::Borrowed(SUBSCRIPTION_ID), id.to_value());
    }

    /// The log level. An unknown level name reads as `None` here; the
    /// per-request checks read the raw value to answer it with -32602.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.get(LOG_LEVEL).and_then(|v| LoggingLevel::deserialize(v).ok())
    }

    /// Sets the log level.
    pub fn set_log_level(&mut self, level: LoggingLevel) {
        self.insert_key(Cow::Borrowed(LOG_LEVEL), serde_json::to_value(level).unwrap_or(Value::Null));
    }

    /// The progress token.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.get(PROGRESS_TOKEN).and_then(RequestId::from_value)
    }

    /// Sets the progress token.
    pub fn set_progress_token(&mut self, token: &ProgressToken) {
        self.insert_key(Cow::Borrowed(PROGRESS_TOKEN), token.to_value());
    }

    /// The `taskId` of the 2025-11-25 `related-task` entry.
    pub fn related_task(&self) -> Option<&str> {
        self.object_at(RELATED_TASK).and_then(|m| m.get("taskId")).and_then(Value::as_str)
    }

    /// Sets the 2025-11-25 `related-task` entry to `{taskId}`.
    pub fn set_related_task(&mut self, task_id: &str) {
        self.insert_key(Cow::Borrowed(RELATED_TASK), json!({ "taskId": task_id }));
    }

    /// The W3C `traceparent`.
    pub fn traceparent(&self) -> Option<&str> {
        self.str_at(TRACEPARENT)
    }

    /// The W3C `tracestate`.
    pub fn tracestate(&self) -> Option<&str> {
        self.str_at(TRACESTATE)
    }

    /// The W3C `baggage`.
    pub fn baggage(&self) -> Option<&str> {
        self.str_at(BAGGAGE)
    }

    /// Sets the W3C trace context keys that are given.
    pub fn set_trace_context(&mut self, traceparent: &str, tracestate: Option<&str>) {
        self.insert_key(Cow::Borrowed(TRACEPARENT), Value::String(traceparent.to_owned()));
        if let Some(state) = tracestate {
            self.insert_key(Cow::Borrowed(TRACESTATE), Value::String(state.to_owned()));
        }
    }
}

impl From<Map<String, Value>> for Meta {
    fn from(map: Map<String, Value>) -> Self {
        match map.len() <= SCAN_BELOW {
            true => Meta(Entries::Few(map.into_iter().map(|(k, v)| (known(&k).unwrap_or(Cow::Owned(k)), v)).collect())),
            false => Meta(Entries::Many(map)),
        }
    }
}

impl From<Meta> for Map<String, Value> {
    fn from(meta: Meta) -> Self {
        meta.into_map()
    }
}

impl PartialEq for Meta {
    fn eq(&self, other: &Meta) -> bool {
        // As JSON objects are compared (and `serde_json::Map`): same keys, same values.
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Serialize for Meta {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The keys the spec names, which a `_meta` holds as constants.
const KNOWN: [&str; 11] = [
    PROTOCOL_VERSION,
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    SERVER_INFO,
    SUBSCRIPTION_ID,
    LOG_LEVEL,
    RELATED_TASK,
    PROGRESS_TOKEN,
    TRACEPARENT,
    TRACESTATE,
    BAGGAGE,
];

/// `key` as its constant, if the spec names it.
fn known(key: &str) -> Option<Cow<'static, str>> {
    KNOWN.iter().find(|k| **k == key).map(|k| Cow::Borrowed(*k))
}

/// A `_meta` key read off the wire: a known key without an allocation.
struct Key(Cow<'static, str>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(Key(known(key).unwrap_or_else(|| Cow::Owned(key.to_owned()))))
            }
            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Key, E> {
                Ok(Key(known(&key).unwrap_or(Cow::Owned(key))))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Meta;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a `_meta` object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Meta, A::Error> {
                let mut meta = Meta(Entries::Few(Vec::with_capacity(access.size_hint().unwrap_or(4).min(SCAN_BELOW))));
                // A repeated key keeps its first place and its last value, as in a map.
                while let Some(Key(key)) = access.next_key::<Key>()? {
                    let value = access.next_value::<Value>()?;
                    meta.insert_key(key, value);
                }
                Ok(meta)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// Ties a result object to task `task_id` (2025-11-25 `tasks/result`): sets the
/// `related-task` entry of its `_meta`, creating `_meta` when absent; a `_meta` that is
/// not an object is left as it is.
pub fn relate_result(result: &mut Map<String, Value>, task_id: &str) {
    if let Value::Object(meta) = result.entry("_meta").or_insert_with(|| json!({})) {
        meta.insert(RELATED_TASK.into(), json!({ "taskId": task_id }));
    }
}

/// Whether `key` follows the `_meta` key syntax: an optional prefix of
/// dot-separated labels ending in `/`, then a name that is empty or starts and
/// ends with an alphanumeric, with `-`, `_` and `.` allowed inside.
pub fn is_valid_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(|p| p.split('.').all(is_valid_label)) && is_valid_name(name)
}

/// Whether `key` has a prefix reserved for MCP: one whose second label is
/// `modelcontextprotocol` or `mcp` (`io.modelcontextprotocol/`, `dev.mcp/`, but
/// not `com.example.mcp/`).
pub fn is_reserved_key(key: &str) -> bool {
    let Some((prefix, _)) = key.rsplit_once('/') else { return false };
    matches!(prefix.split('.').nth(1), Some("modelcontextprotocol" | "mcp"))
}

fn is_valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_syntax_follows_the_spec() {
        for key in
            [PROTOCOL_VERSION, CLIENT_CAPABILITIES, RELATED_TASK, PROGRESS_TOKEN, TRACEPARENT, "com.example/x", ""]
        {
            assert!(is_valid_key(key), "{key}");
        }
        for key in ["/x", "1com/x", "com-/x", "com..x/y", "x-", "a/b/c", "com.example/_x"] {
            assert!(!is_valid_key(key), "{key}");
        }
        assert!(is_reserved_key(PROTOCOL_VERSION));
        assert!(is_reserved_key("dev.mcp/x"));
        assert!(is_reserved_key("org.modelcontextprotocol.api/x"));
        assert!(!is_reserved_key("com.example.mcp/x"));
        assert!(!is_reserved_key(PROGRESS_TOKEN));
    }

    #[test]
    fn get_finds_the_same_by_scan_and_by_hash() {
        for n in [0, 1, SCAN_BELOW - 1, SCAN_BELOW, SCAN_BELOW + 1, 40] {
            let mut meta = Meta::new();
            for i in 0..n {
                meta.insert(format!("com.example/k{i}"), json!(i));
            }
            let from_map = Meta::from((0..n).map(|i| (format!("com.example/k{i}"), json!(i))).collect::<Map<_, _>>());
            assert_eq!(meta, from_map);
            assert!(meta.iter().map(|(k, _)| k).eq(from_map.iter().map(|(k, _)| k)), "order kept");
            for i in 0..n {
                assert_eq!(meta.get(&format!("com.example/k{i}")), Some(&json!(i)), "{n} keys, key {i}");
            }
            for absent in ["com.example/k", "com.example/kx", "", "com.example/k1 "] {
                assert_eq!(meta.get(absent), None, "{n} keys, {absent:?}");
            }
        }
    }

    #[test]
    fn a_decoded_meta_is_the_object_it_was_read_from() {
        for n in [0, 3, SCAN_BELOW, SCAN_BELOW + 1, 1000] {
            let object: Map<String, Value> = (0..n).map(|i| (format!("com.example/k{i}"), json!(i))).collect();
            let text = serde_json::to_string(&object).unwrap();
            let meta: Meta = serde_json::from_str(&text).unwrap();
            assert_eq!(meta.len(), n);
            assert_eq!(serde_json::to_string(&meta).unwrap(), text, "{n} keys: order and values kept");
            assert_eq!(meta.clone().into_map(), object);
        }
        // A repeated key keeps its first place and its last value, as `serde_json::Map` does.
        let meta: Meta = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(serde_json::to_string(&meta).unwrap(), r#"{"a":3,"b":2}"#);
        let mut map: Map<String, Value> = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(meta.into_map(), map);
        // Equality ignores order, as a JSON object's does.
        map.shift_remove("a");
        map.insert("a".into(), json!(3));
        assert_eq!(Meta::from(map), serde_json::from_str::<Meta>(r#"{"a":3,"b":2}"#).unwrap());
        assert!(serde_json::from_str::<Meta>("[1]").is_err());
    }

    #[test]
    fn remove_and_insert_keep_the_order_of_the_other_keys() {
        for n in [4, SCAN_BELOW + 4] {
            let mut meta = Meta::new();
            for i in 0..n {
                meta.insert(format!("k{i}"), json!(i));
            }
            assert_eq!(meta.remove("k1"), Some(json!(1)));
            assert_eq!(meta.remove("k1"), None);
            assert_eq!(meta.insert("k0", json!("x")), Some(json!(0)));
            let keys: Vec<String> = meta.iter().map(|(k, _)| k.to_owned()).collect();
            let want: Vec<String> = (0..n).filter(|i| *i != 1).map(|i| format!("k{i}")).collect();
            assert_eq!(keys, want, "{n} keys");
            assert_eq!(meta.get("k0"), Some(&json!("x")));
        }
    }

    #[test]
    fn accessors_read_what_setters_wrote_and_keep_other_keys() {
        let mut meta: Meta = serde_json::from_value(json!({"com.example/keep": [1, 2]})).unwrap();
        meta.set_protocol_version(ProtocolVersion::V2026_07_28);
        meta.set_client_capabilities(json!({"elicitation": {}}));
        meta.set_subscription_id(&RequestId::from(7));
        meta.set_progress_token(&"tok".into());
        meta.set_log_level(LoggingLevel::Debug);
        meta.set_related_task("t-1");
        assert_eq!(meta.protocol_version(), Some("2026-07-28"));
        assert!(meta.client_capabilities().unwrap().contains_key("elicitation"));
        assert_eq!(meta.subscription_id(), Some(RequestId::from(7)));
        assert_eq!(meta.progress_token(), Some("tok".into()));
        assert_eq!(meta.log_level(), Some(LoggingLevel::Debug));
        assert_eq!(meta.get(LOG_LEVEL), Some(&json!("debug")));
        assert_eq!(meta.related_task(), Some("t-1"));
        let text = serde_json::to_string(&meta).unwrap();
        assert!(text.starts_with(r#"{"com.example/keep":[1,2],"#));
        assert_eq!(serde_json::from_str::<Meta>(&text).unwrap(), meta);
    }
}

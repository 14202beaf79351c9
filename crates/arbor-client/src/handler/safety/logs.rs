//! Server log entries (`notifications/message`) made safe to show: only `level`, `logger`
//! and `data` are kept, every string loses its control, bidi and line-separator
//! characters, `data` strings are clamped to 4,096 characters, nesting is cut below 16
//! levels, and a level outside the RFC 5424 set becomes `info`.
//!
//! A server controls these strings entirely; a terminal or log viewer showing them must not
//! be steered by escape sequences, reordered text or fake line breaks. This module does
//! not rate-limit (the runtime's token bucket does) and does not write logs.
//!
//! Invariant: the output holds no forbidden character in any key or string, no string
//! longer than [`MAX_STRING_CHARS`], and is at most [`MAX_DEPTH`] levels deep (a scalar is
//! one level, each enclosing array or object one more).

use arbor_protocol::model::logging::LoggingLevel;
use serde_json::{Map, Value};

/// The longest string kept, in characters.
pub const MAX_STRING_CHARS: usize = 4096;
/// The deepest `data` kept, in levels.
pub const MAX_DEPTH: usize = 16;
/// What replaces a container that would nest deeper than [`MAX_DEPTH`].
const CUT: &str = "[truncated]";

/// Whether `c` is stripped from server-controlled text: Unicode controls (C0, DEL, C1),
/// the bidirectional formatting characters, and the line and paragraph separators.
pub fn is_forbidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// A string without forbidden characters, at most [`MAX_STRING_CHARS`] long.
pub fn clean_text(s: &str) -> String {
    s.chars().filter(|&c| !is_forbidden(c)).take(MAX_STRING_CHARS).collect()
}

/// The level of a log entry: its `level` if it is one of the RFC 5424 names, else `info`.
pub fn level_of(params: &Map<String, Value>) -> LoggingLevel {
    params
        .get("level")
        .and_then(|l| serde_json::from_value::<LoggingLevel>(l.clone()).ok())
        .unwrap_or(LoggingLevel::Info)
}

/// Sanitises a log entry's params into `{level, logger?, data}`.
pub fn sanitize(params: &Map<String, Value>) -> (LoggingLevel, Map<String, Value>) {
    let level = level_of(params);
    let mut out = Map::new();
    out.insert("level".to_owned(), serde_json::to_value(level).unwrap_or(Value::Null));
    if let Some(Value::String(logger)) = params.get("logger") {
        out.insert("logger".to_owned(), Value::String(clean_text(logger)));
    }
    out.insert("data".to_owned(), clean_value(params.get("data").unwrap_or(&Value::Null), 1));
    (level, out)
}

/// Cleans `value`, found at nesting level `level` (1 for the top).
pub fn clean_value(value: &Value, level: usize) -> Value {
    match value {
        Value::String(s) => Value::String(clean_text(s)),
        Value::Array(items) if level >= MAX_DEPTH && !items.is_empty() => Value::String(CUT.to_owned()),
        Value::Object(map) if level >= MAX_DEPTH && !map.is_empty() => Value::String(CUT.to_owned()),
        Value::Array(items) => Value::Array(items.iter().map(|v| clean_value(v, level + 1)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (clean_text(k), clean_value(v, level + 1))).collect())
        }
        scalar => scalar.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            _ => 1,
        }
    }

    /// Every string (keys included) satisfies `ok`.
    fn all_strings(v: &Value, ok: &dyn Fn(&str) -> bool) -> bool {
        match v {
            Value::String(s) => ok(s),
            Value::Array(a) => a.iter().all(|v| all_strings(v, ok)),
            Value::Object(m) => m.iter().all(|(k, v)| ok(k) && all_strings(v, ok)),
            _ => true,
        }
    }

    fn nested(n: usize) -> Value {
        (0..n).fold(json!("leaf"), |v, _| json!([v]))
    }

    #[test]
    fn table() {
        let long = "x".repeat(5000);
        // (name, params, expected output)
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "kept members only",
                json!({"level": "error", "logger": "db", "data": "boom", "_meta": {"a": 1}, "extra": true}),
                json!({"level": "error", "logger": "db", "data": "boom"}),
            ),
            ("unknown level", json!({"level": "fatal", "data": 1}), json!({"level": "info", "data": 1})),
            ("missing level and data", json!({}), json!({"level": "info", "data": null})),
            (
                "logger not a string",
                json!({"level": "debug", "logger": 5, "data": 1}),
                json!({"level": "debug", "data": 1}),
            ),
            (
                "escape sequences",
                json!({"level": "info", "logger": "a\u{1b}[31mb", "data": "x\u{1b}]0;pwned\u{7}y\r\nz\tw"}),
                json!({"level": "info", "logger": "a[31mb", "data": "x]0;pwnedyzw"}),
            ),
            (
                "bidi and separators",
                json!({"level": "info", "data": {"k\u{202E}ey": "a\u{2066}b\u{2028}c\u{2029}d\u{200F}e\u{85}f"}}),
                json!({"level": "info", "data": {"key": "abcdef"}}),
            ),
            ("clamped", json!({"level": "info", "data": [long]}), json!({"level": "info", "data": ["x".repeat(4096)]})),
            (
                "sixteen levels kept",
                json!({"level": "info", "data": nested(15)}),
                json!({"level": "info", "data": nested(15)}),
            ),
        ];
        for (name, params, want) in cases {
            let (_, out) = sanitize(params.as_object().unwrap());
            assert_eq!(Value::Object(out), want, "{name}");
        }
    }

    #[test]
    fn nesting_is_cut() {
        let (_, out) = sanitize(json!({"level": "info", "data": nested(40)}).as_object().unwrap());
        assert_eq!(depth(&out["data"]), MAX_DEPTH);
        assert_eq!(depth(&nested(15)), 16);
    }

    fn text() -> impl Strategy<Value = String> {
        let tricky = prop_oneof![
            Just('\u{1b}'),
            Just('\n'),
            Just('\u{202E}'),
            Just('\u{2028}'),
            Just('\u{2067}'),
            Just('\u{85}'),
            Just('\u{0}'),
            any::<char>(),
        ];
        prop_oneof![
            prop::collection::vec(tricky, 0..12).prop_map(String::from_iter),
            (1usize..3).prop_map(|n| "é\u{202E}".repeat(2100 * n)),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(40, 200, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((text(), inner), 0..3).prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn output_is_always_clean(data in value(), wrap in 0usize..40, logger in text(), level in text()) {
            // Wrapping in up to 40 arrays and objects makes deep values common.
            let data = (0..wrap).fold(data, |v, i| if i % 2 == 0 { json!([v]) } else { json!({"k": v}) });
            let params = json!({"level": level, "logger": logger, "data": data});
            let (_, out) = sanitize(params.as_object().unwrap());
            let out = Value::Object(out);
            prop_assert!(all_strings(&out, &|s| !s.chars().any(is_forbidden)));
            prop_assert!(all_strings(&out, &|s| s.chars().count() <= MAX_STRING_CHARS));
            prop_assert!(depth(&out["data"]) <= MAX_DEPTH);
            prop_assert!(out.as_object().unwrap().keys().all(|k| ["level", "logger", "data"].contains(&k.as_str())));
        }
    }
}

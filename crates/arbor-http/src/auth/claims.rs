//! Reading the claims the JWT and introspection verifiers share: scopes (`scope` or `scp`),
//! audiences (a string or an array), NumericDate times.
//!
//! Pure functions over a JSON object; the checks themselves (which claim is required,
//! which error) belong to each verifier. Invariant: comparisons are exact string
//! comparisons, with no normalisation.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

/// A string claim.
pub(crate) fn string<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    claims.get(name).and_then(Value::as_str)
}

/// The granted scopes: `scope` (space-separated), else `scp` (an array of strings, or a
/// space-separated string).
pub(crate) fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let split = |s: &str| s.split_ascii_whitespace().map(str::to_owned).collect();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => split(s),
        (_, Some(Value::String(s))) => split(s),
        (_, Some(Value::Array(items))) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Whether `aud` (a string or an array of strings) names one of `audiences` exactly.
pub(crate) fn audience_matches(aud: Option<&Value>, audiences: &[String]) -> bool {
    match aud {
        Some(Value::String(one)) => audiences.iter().any(|a| a == one),
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).any(|one| audiences.iter().any(|a| a == one)),
        _ => false,
    }
}

/// A NumericDate claim: `Ok(None)` if absent, `Err` if present but not a number.
pub(crate) fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, ()> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_f64().filter(|v| v.is_finite()).map(Some).ok_or(()),
    }
}

/// Seconds since the epoch, now.
pub(crate) fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The instant a NumericDate names (`None` before the epoch or beyond `SystemTime`).
pub(crate) fn instant(secs: f64) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(secs).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn scopes_come_from_scope_else_scp() {
        assert_eq!(scopes(&map(json!({"scope": "a  b\tc"}))), ["a", "b", "c"]);
        assert_eq!(scopes(&map(json!({"scope": "a", "scp": ["z"]}))), ["a"]);
        assert_eq!(scopes(&map(json!({"scp": ["x", 1, "y"]}))), ["x", "y"]);
        assert_eq!(scopes(&map(json!({"scp": "x y"}))), ["x", "y"]);
        assert!(scopes(&map(json!({"scope": 3}))).is_empty());
    }

    #[test]
    fn audiences_match_exactly_as_string_or_array() {
        let ours = ["https://mcp.example/mcp".to_owned()];
        assert!(audience_matches(Some(&json!("https://mcp.example/mcp")), &ours));
        assert!(audience_matches(Some(&json!(["other", "https://mcp.example/mcp"])), &ours));
        assert!(!audience_matches(Some(&json!("https://mcp.example/mcp/")), &ours));
        assert!(!audience_matches(Some(&json!(["other"])), &ours));
        assert!(!audience_matches(Some(&json!(7)), &ours));
        assert!(!audience_matches(None, &ours));
    }

    #[test]
    fn numeric_dates() {
        let claims = map(json!({"exp": 10, "iat": 1.5, "nbf": "soon", "x": null}));
        assert_eq!(numeric_date(&claims, "exp"), Ok(Some(10.0)));
        assert_eq!(numeric_date(&claims, "iat"), Ok(Some(1.5)));
        assert_eq!(numeric_date(&claims, "nbf"), Err(()));
        assert_eq!(numeric_date(&claims, "x"), Ok(None));
        assert_eq!(numeric_date(&claims, "y"), Ok(None));
        assert_eq!(instant(10.0), Some(UNIX_EPOCH + Duration::from_secs(10)));
        assert_eq!(instant(-1.0), None);
        assert_eq!(instant(1e300), None);
    }
}

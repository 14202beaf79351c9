//! Table-driven tests of the form schema subset, the secret-field heuristic and answer
//! validation.

use super::*;
use serde_json::json;

fn schema(v: Value) -> Result<RequestedSchema, serde_json::Error> {
    serde_json::from_value(v)
}

#[test]
fn schema_subset() {
    // (name, schema, accepted)
    let cases: Vec<(&str, Value, bool)> = vec![
        ("string", json!({"type": "object", "properties": {"a": {"type": "string"}}}), true),
        (
            "every primitive",
            json!({"type": "object", "required": ["s"], "properties": {
                "s": {"type": "string", "format": "email", "minLength": 1, "maxLength": 9},
                "n": {"type": "number", "minimum": 0}, "i": {"type": "integer"}, "b": {"type": "boolean"},
                "e": {"type": "string", "enum": ["x", "y"]},
                "t": {"type": "string", "oneOf": [{"const": "x", "title": "X"}]},
                "l": {"type": "string", "enum": ["x"], "enumNames": ["X"]},
                "m": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 2},
                "mt": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}}
            }}),
            true,
        ),
        (
            "additionalProperties false",
            json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}),
            true,
        ),
        ("nested object", json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}), false),
        (
            "array of objects",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}}),
            false,
        ),
        ("reference", json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}), false),
        ("allOf in a field", json!({"type": "object", "properties": {"a": {"type": "string", "allOf": []}}}), false),
        ("top-level $defs", json!({"type": "object", "$defs": {}, "properties": {}}), false),
        ("top-level anyOf", json!({"type": "object", "anyOf": [], "properties": {}}), false),
        (
            "additionalProperties schema",
            json!({"type": "object", "additionalProperties": {"type": "string"}, "properties": {}}),
            false,
        ),
        (
            "unknown required",
            json!({"type": "object", "required": ["zz"], "properties": {"a": {"type": "string"}}}),
            false,
        ),
        ("type list", json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}), false),
        ("enum of numbers", json!({"type": "object", "properties": {"a": {"type": "string", "enum": [1, 2]}}}), false),
        ("not an object", json!({"type": "array", "properties": {}}), false),
    ];
    for (name, v, accepted) in cases {
        let got = schema(v).map_err(|e| Refusal::InvalidParams(e.to_string())).and_then(|s| check_schema(&s));
        assert_eq!(got.is_ok(), accepted, "{name}: {got:?}");
        if let Err(refusal) = got {
            assert!(matches!(refusal, Refusal::InvalidParams(_)), "{name}");
        }
    }
}

#[test]
fn secret_fields() {
    let s = schema(json!({"type": "object", "properties": {
        "username": {"type": "string"},
        "password": {"type": "string"},
        "apiKey": {"type": "string"},
        "x": {"type": "string", "title": "Your PIN"},
        "y": {"type": "string", "description": "the access token for the account"},
        "shipping": {"type": "string"},
        "email": {"type": "string", "format": "email"}
    }}))
    .unwrap();
    let fields = check_schema(&s).unwrap();
    let flagged: Vec<&str> = fields.iter().filter(|(_, f)| f.sensitive_suspected).map(|(n, _)| n.as_str()).collect();
    assert_eq!(flagged, vec!["apiKey", "password", "x", "y"]);
}

fn form() -> RequestedSchema {
    schema(json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5},
        "mail": {"type": "string", "format": "email"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number", "maximum": 1},
        "ok": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
        "tt": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}
    }}))
    .unwrap()
}

fn answer(v: Value) -> ElicitResult {
    serde_json::from_value(v).unwrap()
}

#[test]
fn form_answers() {
    let s = form();
    let accept = |content: Value| json!({"action": "accept", "content": content});
    // (name, answer, accepted)
    let cases: Vec<(&str, Value, bool)> = vec![
        ("minimal", accept(json!({"name": "bob"})), true),
        (
            "everything",
            accept(json!({"name": "bob", "mail": "b@x.org", "day": "2026-07-28", "at": "2026-07-28T10:00:00Z",
                "site": "https://x.org", "age": 40, "ratio": 0.5, "ok": true, "color": "red", "size": "l",
                "tags": ["a", "c"], "tt": ["a"]})),
            true,
        ),
        ("offset date-time", accept(json!({"name": "b", "at": "2026-07-28T10:00:00.123+02:00"})), true),
        ("integral float for integer", accept(json!({"name": "b", "age": 3.0})), true),
        ("missing required", accept(json!({"age": 3})), false),
        ("no content", json!({"action": "accept"}), false),
        ("unknown field", accept(json!({"name": "b", "zz": 1})), false),
        ("too long", accept(json!({"name": "bobbybob"})), false),
        ("empty string under minLength", accept(json!({"name": ""})), false),
        ("wrong type", accept(json!({"name": 5})), false),
        ("bad email", accept(json!({"name": "b", "mail": "nope"})), false),
        ("bad date", accept(json!({"name": "b", "day": "2026-13-01"})), false),
        ("bad date-time", accept(json!({"name": "b", "at": "2026-07-28 10:00"})), false),
        ("bad uri", accept(json!({"name": "b", "site": "not a uri"})), false),
        ("fractional integer", accept(json!({"name": "b", "age": 3.5})), false),
        ("over maximum", accept(json!({"name": "b", "age": 151})), false),
        ("number as string", accept(json!({"name": "b", "ratio": "0.5"})), false),
        ("not a boolean", accept(json!({"name": "b", "ok": "yes"})), false),
        ("not an option", accept(json!({"name": "b", "color": "green"})), false),
        ("title not value", accept(json!({"name": "b", "size": "Large"})), false),
        ("too many picks", accept(json!({"name": "b", "tags": ["a", "b", "c"]})), false),
        ("too few picks", accept(json!({"name": "b", "tags": []})), false),
        ("bad pick", accept(json!({"name": "b", "tags": ["z"]})), false),
        ("decline", json!({"action": "decline"}), true),
        ("cancel", json!({"action": "cancel"}), true),
    ];
    for (name, v, accepted) in cases {
        let mut a = answer(v);
        let got = check_answer(&mut a, ElicitationMode::Form, Some(&s));
        assert_eq!(got.is_ok(), accepted, "{name}: {got:?}");
        if let Err(refusal) = got {
            assert!(matches!(refusal, Refusal::InvalidAnswer(_)), "{name}");
        }
    }
}

#[test]
fn declined_content_is_never_forwarded() {
    for action in ["decline", "cancel"] {
        let mut a = answer(json!({"action": action, "content": {"name": "secret"}}));
        check_answer(&mut a, ElicitationMode::Form, Some(&form())).unwrap();
        assert_eq!(a.content, None, "{action}");
    }
}

#[test]
fn url_answers() {
    let mut ok = answer(json!({"action": "accept"}));
    assert_eq!(check_answer(&mut ok, ElicitationMode::Url, None), Ok(()));
    let mut with_content = answer(json!({"action": "accept", "content": {"x": 1}}));
    assert!(matches!(check_answer(&mut with_content, ElicitationMode::Url, None), Err(Refusal::InvalidAnswer(_))));
}

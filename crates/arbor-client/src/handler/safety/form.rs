//! Form-mode elicitation: the requested schema must be the spec's flat primitive subset,
//! secret-looking fields are flagged for the handler, and the answer must fit the schema
//! before it is sent.
//!
//! The subset (2025-11-25 `PrimitiveSchemaDefinition`, unchanged in 2026-07-28): an object
//! whose `properties` are each a string (optionally `format` email/uri/date/date-time), a
//! number or integer, a boolean, a single-select enum (`enum`, titled `oneOf`, or legacy
//! `enumNames`) or a multi-select enum array; no nesting, no references, no combinators.
//! Typed decoding (`arbor_protocol::model::elicitation`) settles each field's shape; this
//! module refuses the structural keywords the typed model would otherwise keep in `extra`.
//! It does not render forms.
//!
//! Invariant: an accepted form answer sent to a server names only fields of the schema,
//! holds every required one, and each value has its field's type and bounds; a declined or
//! cancelled answer carries no content.

use std::collections::BTreeMap;

use arbor_protocol::model::elicitation::{
    ElicitAction, ElicitResult, ElicitationMode, NumberKind, PrimitiveSchema, RequestedSchema, StringFormat,
};
use serde_json::{Map, Value};

use super::Refusal;
use crate::handler::context::FieldInfo;

/// Keywords that would nest, reference or combine schemas: outside the flat subset.
const STRUCTURAL: &[&str] = &[
    "properties",
    "items",
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "patternProperties",
    "dependentSchemas",
    "prefixItems",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Checks the schema is the flat primitive subset and describes its fields.
pub(crate) fn check_schema(schema: &RequestedSchema) -> Result<BTreeMap<String, FieldInfo>, Refusal> {
    let invalid = |msg: String| Err(Refusal::InvalidParams(msg));
    for (key, value) in &schema.extra {
        // `additionalProperties: false` is common in generated schemas and nests nothing.
        if key == "additionalProperties" && value.is_boolean() {
            continue;
        }
        if STRUCTURAL.contains(&key.as_str()) {
            return invalid(format!("requestedSchema: `{key}` is outside the flat primitive subset"));
        }
    }
    for name in schema.required.iter().flatten() {
        if !schema.properties.contains_key(name) {
            return invalid(format!("requestedSchema: required field `{name}` is not a property"));
        }
    }
    let mut fields = BTreeMap::new();
    for (name, field) in &schema.properties {
        if let Some(key) = field_extra(field).keys().find(|k| STRUCTURAL.contains(&k.as_str())) {
            return invalid(format!("requestedSchema: field `{name}` uses `{key}`, outside the flat primitive subset"));
        }
        let items_extra = match field {
            PrimitiveSchema::UntitledMultiSelect(f) => Some(&f.items.extra),
            PrimitiveSchema::TitledMultiSelect(f) => Some(&f.items.extra),
            _ => None,
        };
        if let Some(key) = items_extra.and_then(|e| e.keys().find(|k| STRUCTURAL.contains(&k.as_str()))) {
            return invalid(format!("requestedSchema: field `{name}` items use `{key}`, outside the subset"));
        }
        let (title, description) = field_labels(field);
        let sensitive_suspected = [Some(name.as_str()), title, description].into_iter().flatten().any(looks_secret);
        fields.insert(name.clone(), FieldInfo { sensitive_suspected });
    }
    Ok(fields)
}

fn field_extra(field: &PrimitiveSchema) -> &Map<String, Value> {
    match field {
        PrimitiveSchema::String(f) => &f.extra,
        PrimitiveSchema::Number(f) => &f.extra,
        PrimitiveSchema::Boolean(f) => &f.extra,
        PrimitiveSchema::UntitledSingleSelect(f) => &f.extra,
        PrimitiveSchema::TitledSingleSelect(f) => &f.extra,
        PrimitiveSchema::UntitledMultiSelect(f) => &f.extra,
        PrimitiveSchema::TitledMultiSelect(f) => &f.extra,
        PrimitiveSchema::LegacyTitled(f) => &f.extra,
    }
}

fn field_labels(field: &PrimitiveSchema) -> (Option<&str>, Option<&str>) {
    let (t, d) = match field {
        PrimitiveSchema::String(f) => (&f.title, &f.description),
        PrimitiveSchema::Number(f) => (&f.title, &f.description),
        PrimitiveSchema::Boolean(f) => (&f.title, &f.description),
        PrimitiveSchema::UntitledSingleSelect(f) => (&f.title, &f.description),
        PrimitiveSchema::TitledSingleSelect(f) => (&f.title, &f.description),
        PrimitiveSchema::UntitledMultiSelect(f) => (&f.title, &f.description),
        PrimitiveSchema::TitledMultiSelect(f) => (&f.title, &f.description),
        PrimitiveSchema::LegacyTitled(f) => (&f.title, &f.description),
    };
    (t.as_deref(), d.as_deref())
}

/// Whether a field's name or label suggests a secret (a password, key, token, card…).
/// Form mode must not be used for those (the spec sends them through URL mode), so the
/// handler is told rather than the request refused: labels are heuristics.
pub(crate) fn looks_secret(text: &str) -> bool {
    const SUBSTRINGS: &[&str] = &[
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "api key",
        "privatekey",
        "private_key",
        "private key",
        "credential",
        "creditcard",
        "credit card",
        "credit_card",
        "cardnumber",
        "card number",
        "card_number",
        "social security",
        "iban",
    ];
    const WORDS: &[&str] = &["pin", "ssn", "cvv", "cvc", "otp", "2fa", "mfa", "pwd"];
    let lower = text.to_lowercase();
    SUBSTRINGS.iter().any(|s| lower.contains(s))
        || lower.split(|c: char| !c.is_alphanumeric()).any(|word| WORDS.contains(&word))
}

/// Checks (and tidies) the handler's answer before it is sent. `schema` is the form's
/// schema in form mode, `None` in URL mode.
pub(crate) fn check_answer(
    result: &mut ElicitResult,
    mode: ElicitationMode,
    schema: Option<&RequestedSchema>,
) -> Result<(), Refusal> {
    let bad = |msg: String| Err(Refusal::InvalidAnswer(msg));
    match (result.action, mode) {
        // A user who said no gave nothing: never forward content they did not submit.
        (ElicitAction::Decline | ElicitAction::Cancel, _) => {
            result.content = None;
            Ok(())
        }
        (ElicitAction::Accept, ElicitationMode::Url) if result.content.is_some() => {
            bad("a URL-mode accept carries no content".to_owned())
        }
        (ElicitAction::Accept, ElicitationMode::Url) => Ok(()),
        (ElicitAction::Accept, ElicitationMode::Form) => {
            let Some(schema) = schema else { return bad("form answer without a schema".to_owned()) };
            let empty = Map::new();
            let content = result.content.as_ref().unwrap_or(&empty);
            for (name, value) in content {
                let Some(field) = schema.properties.get(name) else {
                    return bad(format!("answer field `{name}` is not in the requested schema"));
                };
                check_value(field, value)
                    .map_err(|why| Refusal::InvalidAnswer(format!("answer field `{name}` {why}")))?;
            }
            if let Some(missing) = schema.required.iter().flatten().find(|n| !content.contains_key(*n)) {
                return bad(format!("answer lacks the required field `{missing}`"));
            }
            Ok(())
        }
    }
}

/// Whether `value` fits one field; the error says why not.
fn check_value(field: &PrimitiveSchema, value: &Value) -> Result<(), String> {
    match field {
        PrimitiveSchema::String(f) => {
            let s = value.as_str().ok_or("must be a string")?;
            let len = s.chars().count() as u64;
            if f.min_length.is_some_and(|m| len < m) || f.max_length.is_some_and(|m| len > m) {
                return Err(format!("has length {len}, outside its bounds"));
            }
            match f.format {
                Some(format) if !fits_format(s, format) => Err(format!("is not a valid {format:?}")),
                _ => Ok(()),
            }
        }
        PrimitiveSchema::Number(f) => {
            let n = value.as_f64().filter(|_| value.is_number()).ok_or("must be a number")?;
            if f.kind == NumberKind::Integer && !(value.is_i64() || value.is_u64() || n.fract() == 0.0) {
                return Err("must be an integer".to_owned());
            }
            let below = f.minimum.as_ref().and_then(|m| m.as_f64()).is_some_and(|m| n < m);
            let above = f.maximum.as_ref().and_then(|m| m.as_f64()).is_some_and(|m| n > m);
            if below || above {
                return Err(format!("{n} is outside its bounds"));
            }
            Ok(())
        }
        PrimitiveSchema::Boolean(_) => value.is_boolean().then_some(()).ok_or_else(|| "must be a boolean".to_owned()),
        PrimitiveSchema::UntitledSingleSelect(f) => one_of(value, f.values.iter().map(String::as_str)),
        PrimitiveSchema::LegacyTitled(f) => one_of(value, f.values.iter().map(String::as_str)),
        PrimitiveSchema::TitledSingleSelect(f) => one_of(value, f.one_of.iter().map(|o| o.value.as_str())),
        PrimitiveSchema::UntitledMultiSelect(f) => {
            some_of(value, f.items.values.iter().map(String::as_str), f.min_items, f.max_items)
        }
        PrimitiveSchema::TitledMultiSelect(f) => {
            some_of(value, f.items.any_of.iter().map(|o| o.value.as_str()), f.min_items, f.max_items)
        }
    }
}

fn one_of<'a>(value: &Value, mut options: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let s = value.as_str().ok_or("must be a string")?;
    if options.any(|o| o == s) {
        Ok(())
    } else {
        Err(format!("`{s}` is not one of the options"))
    }
}

fn some_of<'a>(
    value: &Value,
    options: impl Iterator<Item = &'a str> + Clone,
    min: Option<u64>,
    max: Option<u64>,
) -> Result<(), String> {
    let picked = value.as_array().ok_or("must be an array of options")?;
    for item in picked {
        one_of(item, options.clone())?;
    }
    let n = picked.len() as u64;
    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
        return Err(format!("picks {n} options, outside its bounds"));
    }
    Ok(())
}

fn fits_format(s: &str, format: StringFormat) -> bool {
    match format {
        StringFormat::Email => {
            let mut parts = s.splitn(2, '@');
            let (local, domain) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !s.chars().any(char::is_whitespace)
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        StringFormat::Uri => url::Url::parse(s).is_ok(),
        StringFormat::Date => is_date(s),
        StringFormat::DateTime => match s.split_once(['T', 't']) {
            Some((date, time)) => is_date(date) && is_time(time),
            None => false,
        },
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// `YYYY-MM-DD` (RFC 3339 full-date).
fn is_date(s: &str) -> bool {
    let mut it = s.split('-');
    match (it.next().and_then(|y| digits(y, 4)), it.next().and_then(|m| digits(m, 2)), it.next(), it.next()) {
        (Some(_), Some(m), Some(d), None) => {
            (1..=12).contains(&m) && digits(d, 2).is_some_and(|d| (1..=31).contains(&d))
        }
        _ => false,
    }
}

/// `HH:MM:SS[.frac](Z|±HH:MM)` (RFC 3339 full-time).
fn is_time(s: &str) -> bool {
    let (clock, offset) = if let Some(rest) = s.strip_suffix(['Z', 'z']) {
        (rest, None)
    } else if let Some(at) = s.rfind(['+', '-']) {
        (&s[..at], Some(&s[at + 1..]))
    } else {
        return false;
    };
    let hms = |t: &str, parts: usize| {
        let fields: Vec<&str> = t.split(':').collect();
        fields.len() == parts && fields.iter().zip([23, 59, 60]).all(|(f, max)| digits(f, 2).is_some_and(|v| v <= max))
    };
    let clock = match clock.split_once('.') {
        Some((c, frac)) if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) => c,
        Some(_) => return false,
        None => clock,
    };
    hms(clock, 3) && offset.is_none_or(|o| hms(o, 2))
}

#[cfg(test)]
#[path = "form_tests.rs"]
mod tests;

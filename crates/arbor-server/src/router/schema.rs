//! JSON Schemas from Rust types, and validators compiled from them.
//!
//! Schemas are generated with schemars in the JSON Schema 2020-12 dialect, which
//! 2025-11-25 and later take as the default. To stay readable by older clients, whose
//! validators often assume draft-07, the schema carries no `$schema` URI and its
//! subschemas are inlined instead of referenced through `$defs` (only a recursive type
//! keeps a reference); what remains means the same in both dialects. Validators are
//! compiled once, at registration, with no network or file `$ref` resolution compiled in.
//!
//! Argument schemas are also checked for the 2026-07-28 `x-mcp-header` rules, since HTTP
//! clients drop a tool that breaks them without telling anyone.
//!
//! Invariant: every schema handed out here that is used as a tool `inputSchema` or
//! `outputSchema` has `"type": "object"` at its root, as every revision's `Tool` demands.

use arbor_protocol::model::common::JsonObject;
use arbor_protocol::reflect::Clamped;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// Which side of serde the schema describes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Contract {
    /// What the type accepts (arguments): fields with defaults are optional.
    Deserialize,
    /// What the type produces (output).
    Serialize,
}

/// The schema of `T` as a JSON object, or why it cannot be a tool schema.
pub(crate) fn object_schema_for<T: JsonSchema + ?Sized>(contract: Contract) -> Result<JsonObject, String> {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    });
    let settings = match contract {
        Contract::Deserialize => settings.for_deserialize(),
        Contract::Serialize => settings.for_serialize(),
    };
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(map) => map,
        other => return Err(format!("the schema of `{}` is `{other}`, not an object schema", T::schema_name())),
    };
    // schemars titles the root with the Rust type's name, an implementation detail the
    // model gains nothing from; a title the author chose differs from it and stays.
    if object.get("title").and_then(Value::as_str) == Some(&*T::schema_name()) {
        object.remove("title");
    }
    lift_object_type(&mut object);
    if object.get("type") != Some(&Value::String("object".into())) {
        return Err(format!(
            "the schema of `{}` does not have \"type\": \"object\" at its root; use a struct (or a map) with named fields",
            T::schema_name()
        ));
    }
    normalise_properties(&mut object);
    if let Contract::Deserialize = contract {
        check_mcp_headers(&object)?;
    }
    Ok(object)
}

/// Checks the `x-mcp-header` annotations (SEP-2243, 2026-07-28) of an input schema. HTTP
/// clients silently drop a tool whose annotations break the rules, so a broken one is
/// refused here, where its author sees why: the value must be a non-empty RFC 9110 token,
/// unique within the tool ignoring ASCII case, on a `string`, `integer` or `boolean`
/// property (never `number`) reached from the root through `properties` alone.
fn check_mcp_headers(schema: &JsonObject) -> Result<(), String> {
    let mut seen = Vec::new();
    walk_headers(&Value::Object(schema.clone()), true, "", &mut seen)
}

fn walk_headers(schema: &Value, reachable: bool, path: &str, seen: &mut Vec<String>) -> Result<(), String> {
    match schema {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_headers(item, false, &format!("{path}/{i}"), seen)?;
            }
        }
        Value::Object(map) => {
            if let Some(header) = map.get("x-mcp-header") {
                let at = if path.is_empty() { "/" } else { path };
                let header = header
                    .as_str()
                    .filter(|h| is_token(h))
                    .ok_or_else(|| format!("x-mcp-header at {at} must be a non-empty header token, not {header}"))?;
                if !reachable || path.is_empty() {
                    return Err(format!(
                        "x-mcp-header {header} at {at} is not on a property reached through `properties` alone"
                    ));
                }
                let types: Vec<&str> = match map.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
                    _ => Vec::new(),
                };
                if types.len() != 1 || !["string", "integer", "boolean"].contains(&types[0]) {
                    return Err(format!(
                        "x-mcp-header {header} at {at} must be on a string, integer or boolean property"
                    ));
                }
                if seen.iter().any(|s| s.eq_ignore_ascii_case(header)) {
                    return Err(format!("x-mcp-header {header} is used twice"));
                }
                seen.push(header.to_owned());
            }
            for (key, value) in map {
                if key == "properties" {
                    if let Value::Object(properties) = value {
                        for (name, property) in properties {
                            walk_headers(property, reachable, &format!("{path}/properties/{name}"), seen)?;
                        }
                    }
                } else if key != "x-mcp-header" {
                    walk_headers(value, false, &format!("{path}/{key}"), seen)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// RFC 9110 `token`: one or more `tchar`.
fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A root made of `oneOf`/`anyOf` branches that are all objects (a serde-tagged enum) is
/// an object too; say so at the root, where MCP looks for it.
fn lift_object_type(schema: &mut JsonObject) {
    if schema.contains_key("type") {
        return;
    }
    let all_objects = ["oneOf", "anyOf"].iter().any(|k| {
        schema.get(*k).and_then(Value::as_array).is_some_and(|branches| {
            !branches.is_empty() && branches.iter().all(|b| b.get("type") == Some(&Value::String("object".into())))
        })
    });
    if all_objects {
        schema.insert("type".into(), Value::String("object".into()));
    }
}

/// 2025-11-25's `Tool` schema wants every member of `properties` to be an object, but a
/// field of type `serde_json::Value` is the boolean schema `true`; spell it `{}` (and
/// `false` as `{"not": {}}`), which validates the same.
fn normalise_properties(schema: &mut JsonObject) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for value in properties.values_mut() {
            match value {
                Value::Bool(true) => *value = Value::Object(JsonObject::new()),
                Value::Bool(false) => *value = serde_json::json!({ "not": {} }),
                _ => {}
            }
        }
    }
}

/// A validator for `schema`, in the 2020-12 dialect unless the schema names another.
pub(crate) fn compile(schema: &JsonObject) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&Value::Object(schema.clone()))
        .map_err(|e| format!("the schema does not compile: {e}"))
}

/// Every way `instance` fails `validator`, one per line with where it failed, or `None`
/// when it is valid. At most a handful are listed: the point is to tell a model what to
/// fix, not to dump the whole walk.
pub(crate) fn problems(validator: &jsonschema::Validator, instance: &Value) -> Option<String> {
    const MAX: usize = 8;
    // The common case, valid input, stops at the first failure and builds no messages.
    if validator.is_valid(instance) {
        return None;
    }
    let mut lines = Vec::new();
    for error in validator.iter_errors(instance).take(MAX + 1) {
        if lines.len() == MAX {
            lines.push("…".to_owned());
            break;
        }
        // Both the path (member names) and the error (the offending value) quote input.
        let path = error.instance_path().to_string();
        if path.is_empty() {
            lines.push(arbor_protocol::reflect::clamp(&error.to_string()).into_owned());
        } else {
            lines.push(format!("{}: {}", Clamped(&path), Clamped(&error.to_string())));
        }
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The argument type of a tool or prompt that takes none. Its schema is
/// `{"type": "object", "additionalProperties": false}`, as the spec recommends, so a
/// client that sends arguments anyway is told so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object", "additionalProperties": false })
    }
}

//! JSON Schemas from Rust types, and validators compiled from them.
//!
//! Schemas are generated with schemars in the JSON Schema 2020-12 dialect, which
//! 2025-11-25 and later take as the default. To stay readable by older clients, whose
//! validators often assume draft-07, the schema carries no `$schema` URI and its
//! subschemas are inlined instead of referenced through `$defs` (only a recursive type
//! keeps a reference); what remains means the same in both dialects. Validators are
//! compiled once, at registration, with no network or file `$ref` resolution compiled in.
//!
//! Invariant: every schema handed out here that is used as a tool `inputSchema` or
//! `outputSchema` has `"type": "object"` at its root, as every revision's `Tool` demands.

use arbor_protocol::model::common::JsonObject;
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
    Ok(object)
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
    let mut lines = Vec::new();
    for error in validator.iter_errors(instance).take(MAX + 1) {
        if lines.len() == MAX {
            lines.push("…".to_owned());
            break;
        }
        let path = error.instance_path().to_string();
        if path.is_empty() {
            lines.push(error.to_string());
        } else {
            lines.push(format!("{path}: {error}"));
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

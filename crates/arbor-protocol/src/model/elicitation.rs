//! Elicitation: `elicitation/create`, a server asking the user for input through
//! the client, by a form (a restricted JSON Schema) or by a URL (2025-11-25 on).
//!
//! Every form-field schema of the spec has its own type here, including the five
//! enum forms (untitled/titled single select, untitled/titled multi select, and the
//! legacy `enumNames`). This module does not render forms or validate answers.
//! Invariant: a field schema decodes to the most specific form its members allow,
//! and encodes back to the same members.

use crate::meta::Meta;
use crate::model::common::{JsonObject, ResultType};
use crate::model::tasks::TaskMetadata;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// A string field's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StringFormat {
    /// An email address.
    #[serde(rename = "email")]
    Email,
    /// A URI.
    #[serde(rename = "uri")]
    Uri,
    /// A date.
    #[serde(rename = "date")]
    Date,
    /// A date and time.
    #[serde(rename = "date-time")]
    DateTime,
}

wire_struct! {
    /// A free-text field.
    #[derive(Default)]
    pub struct StringSchema tag "type" = "string" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The shortest allowed length.
        opt min_length: u64 = "minLength",
        /// The longest allowed length.
        opt max_length: u64 = "maxLength",
        /// The expected format.
        opt format: StringFormat = "format",
        /// The default value (2025-11-25 on).
        opt default: String = "default",
    }
}

/// Whether a number field takes any number or integers only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NumberKind {
    /// Any number.
    Number,
    /// Integers only.
    Integer,
}

wire_struct! {
    /// A number field.
    pub struct NumberSchema {
        /// `number` or `integer`.
        req kind: NumberKind = "type",
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The smallest allowed value.
        opt minimum: serde_json::Number = "minimum",
        /// The largest allowed value.
        opt maximum: serde_json::Number = "maximum",
        /// The default value (2025-11-25 on).
        opt default: serde_json::Number = "default",
    }
}

wire_struct! {
    /// A yes/no field.
    #[derive(Default)]
    pub struct BooleanSchema tag "type" = "boolean" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The default value.
        opt default: bool = "default",
    }
}

wire_struct! {
    /// A pick-one field whose options are their own labels.
    #[derive(Default)]
    pub struct UntitledSingleSelectEnumSchema tag "type" = "string" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The options.
        req values: Vec<String> = "enum",
        /// The default option.
        opt default: String = "default",
    }
}

wire_struct! {
    /// One option of a titled enum: a value and its label.
    pub struct EnumOption {
        /// The value.
        req value: String = "const",
        /// The label.
        req title: String = "title",
    }
}

wire_struct! {
    /// A pick-one field whose options have labels (`oneOf` of `const`/`title`).
    #[derive(Default)]
    pub struct TitledSingleSelectEnumSchema tag "type" = "string" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The options.
        req one_of: Vec<EnumOption> = "oneOf",
        /// The default option's value.
        opt default: String = "default",
    }
}

wire_struct! {
    /// The items of an untitled multi-select field.
    #[derive(Default)]
    pub struct UntitledEnumItems tag "type" = "string" {
        /// The options.
        req values: Vec<String> = "enum",
    }
}

wire_struct! {
    /// A pick-several field whose options are their own labels.
    #[derive(Default)]
    pub struct UntitledMultiSelectEnumSchema tag "type" = "array" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The fewest options to pick.
        opt min_items: u64 = "minItems",
        /// The most options to pick.
        opt max_items: u64 = "maxItems",
        /// The options.
        req items: UntitledEnumItems = "items",
        /// The options picked by default.
        opt default: Vec<String> = "default",
    }
}

wire_struct! {
    /// The items of a titled multi-select field.
    #[derive(Default)]
    pub struct TitledEnumItems {
        /// The options.
        req any_of: Vec<EnumOption> = "anyOf",
    }
}

wire_struct! {
    /// A pick-several field whose options have labels (`items.anyOf`).
    #[derive(Default)]
    pub struct TitledMultiSelectEnumSchema tag "type" = "array" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The fewest options to pick.
        opt min_items: u64 = "minItems",
        /// The most options to pick.
        opt max_items: u64 = "maxItems",
        /// The options.
        req items: TitledEnumItems = "items",
        /// The options picked by default.
        opt default: Vec<String> = "default",
    }
}

wire_struct! {
    /// The legacy labelled pick-one field (`enum` plus the non-standard `enumNames`).
    #[derive(Default)]
    pub struct LegacyTitledEnumSchema tag "type" = "string" {
        /// The label.
        opt title: String = "title",
        /// Help text.
        opt description: String = "description",
        /// The options.
        req values: Vec<String> = "enum",
        /// The options' labels, in the same order.
        opt enum_names: Vec<String> = "enumNames",
        /// The default option.
        opt default: String = "default",
    }
}

/// One field of an elicitation form (`PrimitiveSchemaDefinition`).
///
/// The forms share `"type"` values, so they are told apart by their members:
/// `oneOf` means titled single select, `enum` with `enumNames` the legacy form,
/// `enum` alone untitled single select, `items.anyOf` titled multi select.
#[derive(Clone, Debug, PartialEq)]
pub enum PrimitiveSchema {
    /// Free text.
    String(StringSchema),
    /// A number.
    Number(NumberSchema),
    /// Yes or no.
    Boolean(BooleanSchema),
    /// Pick one, unlabelled options.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// Pick one, labelled options.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// Pick several, unlabelled options.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Pick several, labelled options.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// Pick one, legacy `enumNames` labels.
    LegacyTitled(LegacyTitledEnumSchema),
}

impl Serialize for PrimitiveSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PrimitiveSchema::String(v) => v.serialize(s),
            PrimitiveSchema::Number(v) => v.serialize(s),
            PrimitiveSchema::Boolean(v) => v.serialize(s),
            PrimitiveSchema::UntitledSingleSelect(v) => v.serialize(s),
            PrimitiveSchema::TitledSingleSelect(v) => v.serialize(s),
            PrimitiveSchema::UntitledMultiSelect(v) => v.serialize(s),
            PrimitiveSchema::TitledMultiSelect(v) => v.serialize(s),
            PrimitiveSchema::LegacyTitled(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use PrimitiveSchema as P;
        crate::model::wire::from_buffered(d, |map| {
            let kind = map.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
            let has = |k: &str| map.contains_key(k);
            let titled_items = map.get("items").is_some_and(|i| i.get("anyOf").is_some());
            let (oneof, enums, names) = (has("oneOf"), has("enum"), has("enumNames"));
            let v = Value::Object(map);
            match kind.as_str() {
                "number" | "integer" => NumberSchema::deserialize(v).map(P::Number),
                "boolean" => BooleanSchema::deserialize(v).map(P::Boolean),
                "array" if titled_items => TitledMultiSelectEnumSchema::deserialize(v).map(P::TitledMultiSelect),
                "array" => UntitledMultiSelectEnumSchema::deserialize(v).map(P::UntitledMultiSelect),
                "string" if oneof => TitledSingleSelectEnumSchema::deserialize(v).map(P::TitledSingleSelect),
                "string" if enums && names => LegacyTitledEnumSchema::deserialize(v).map(P::LegacyTitled),
                "string" if enums => UntitledSingleSelectEnumSchema::deserialize(v).map(P::UntitledSingleSelect),
                "string" => StringSchema::deserialize(v).map(P::String),
                other => Err(serde::de::Error::custom(format!("unknown form field type `{other}`"))),
            }
        })
    }
}

wire_struct! {
    /// The form of a form-mode elicitation (`requestedSchema`): a flat object schema.
    #[derive(Default)]
    pub struct RequestedSchema tag "type" = "object" {
        /// The JSON Schema dialect (2025-11-25 on).
        opt schema: String = "$schema",
        /// The fields by name.
        req properties: BTreeMap<String, PrimitiveSchema> = "properties",
        /// The names of the fields that must be filled in.
        opt required: Vec<String> = "required",
    }
}

/// How an elicitation reaches the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ElicitationMode {
    /// A form the client renders.
    Form,
    /// A URL the user opens.
    Url,
}

wire_struct! {
    /// The params of a form-mode `elicitation/create`. A missing `mode` means form.
    #[derive(Default)]
    pub struct ElicitRequestFormParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// `form`, or absent (2025-11-25 on).
        opt mode: ElicitationMode = "mode",
        /// What is being asked, for the user.
        req message: String = "message",
        /// The form.
        req requested_schema: RequestedSchema = "requestedSchema",
        /// Ask for the request to run as a task (2025-11-25).
        opt task: TaskMetadata = "task",
    }
}

wire_struct! {
    /// The params of a URL-mode `elicitation/create` (2025-11-25 on).
    #[derive(Default)]
    pub struct ElicitRequestUrlParams tag "mode" = "url" {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// Why the user should open the URL.
        req message: String = "message",
        /// The URL.
        req url: String = "url",
        /// Correlates `notifications/elicitation/complete` (2025-11-25 only, where it is required).
        opt elicitation_id: String = "elicitationId",
        /// Ask for the request to run as a task (2025-11-25).
        opt task: TaskMetadata = "task",
    }
}

/// The params of `elicitation/create`: form or URL mode, told apart by `mode`.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(ElicitRequestFormParams),
    /// URL mode.
    Url(ElicitRequestUrlParams),
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(p) => p.serialize(s),
            ElicitRequestParams::Url(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::model::wire::from_buffered(d, |map| {
            let url = map.get("mode").and_then(Value::as_str) == Some("url");
            let v = Value::Object(map);
            if url {
                ElicitRequestUrlParams::deserialize(v).map(ElicitRequestParams::Url)
            } else {
                ElicitRequestFormParams::deserialize(v).map(ElicitRequestParams::Form)
            }
        })
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ElicitAction {
    /// Submitted the form or consented to open the URL.
    Accept,
    /// Explicitly said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

wire_struct! {
    /// The client's answer to `elicitation/create`. In 2026-07-28 it travels inside
    /// `inputResponses` and has no `resultType`.
    pub struct ElicitResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// Absent in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// What the user did.
        req action: ElicitAction = "action",
        /// The submitted values (form mode, on accept): strings, numbers, booleans or string arrays.
        opt content: JsonObject = "content",
    }
}

wire_struct! {
    /// The params of `notifications/elicitation/complete` (2025-11-25 only).
    pub struct ElicitationCompleteNotificationParams {
        /// Notification metadata.
        opt meta: Meta = "_meta",
        /// The URL elicitation that finished.
        req elicitation_id: String = "elicitationId",
    }
}

//! Constructors for elicitation (the forms a server asks a user to fill in, the URL
//! mode, the completion notification) and for the input requests a 2026-07-28
//! `input_required` result carries (see the parent module).
//!
//! A form field is built from its schema type (`StringSchema::default()`,
//! `NumberSchema::new(kind)`, `UntitledSingleSelectEnumSchema::new(values)`, ...) and
//! added to a [`RequestedSchema`] with `with_property`; every field type converts
//! into [`PrimitiveSchema`].

use crate::meta::Meta;
use crate::model::common::RequestParams;
use crate::model::elicitation::{
    BooleanSchema, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitationCompleteNotificationParams, ElicitationMode, EnumOption, LegacyTitledEnumSchema, NumberKind,
    NumberSchema, PrimitiveSchema, RequestedSchema, StringFormat, StringSchema, TitledEnumItems,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems, UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
};
use crate::model::mrtr::{CreateMessageRequest, ElicitRequest, ListRootsRequest};
use crate::model::sampling::CreateMessageRequestParams;
use crate::model::tasks::TaskMetadata;

// ===== requests =====

impl ElicitRequestFormParams {
    /// Ask the user `message`, with a form of `requested_schema`.
    pub fn new(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequestFormParams { message: message.into(), requested_schema, ..Default::default() }
    }
}

impl RequestedSchema {
    /// A form with no fields yet.
    pub fn new() -> Self {
        RequestedSchema::default()
    }

    /// Adds an optional field.
    #[must_use]
    pub fn with_property(mut self, name: impl Into<String>, schema: impl Into<PrimitiveSchema>) -> Self {
        self.properties.insert(name.into(), schema.into());
        self
    }

    /// Adds a field the user must fill in.
    #[must_use]
    pub fn with_required_property(self, name: impl Into<String>, schema: impl Into<PrimitiveSchema>) -> Self {
        let name = name.into();
        let mut form = self.with_property(name.clone(), schema);
        form.required.get_or_insert_with(Vec::new).push(name);
        form
    }
}

setters!(ElicitRequestFormParams {
    /// `"form"`, which 2025-11-25 on may send explicitly (absent means form too).
    with_mode => mode: ElicitationMode,
    /// Ask for the request to run as a task (2025-11-25).
    with_task => task: TaskMetadata,
    /// Request metadata.
    with_meta => meta: Meta,
});

setters!(RequestedSchema {
    /// The JSON Schema dialect (`$schema`).
    with_schema => schema: String,
});

impl ElicitRequestUrlParams {
    /// Ask the user to visit `url` for `message` (2025-11-25 on).
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestUrlParams { message: message.into(), url: url.into(), ..Default::default() }
    }
}

setters!(ElicitRequestUrlParams {
    /// The id `notifications/elicitation/complete` names (2025-11-25).
    with_elicitation_id => elicitation_id: String,
    /// Ask for the request to run as a task (2025-11-25).
    with_task => task: TaskMetadata,
    /// Request metadata.
    with_meta => meta: Meta,
});

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(params: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(params)
    }
}

impl From<ElicitRequestUrlParams> for ElicitRequestParams {
    fn from(params: ElicitRequestUrlParams) -> Self {
        ElicitRequestParams::Url(params)
    }
}

impl ElicitationCompleteNotificationParams {
    /// The URL-mode elicitation `elicitation_id` is done.
    pub fn new(elicitation_id: impl Into<String>) -> Self {
        ElicitationCompleteNotificationParams {
            meta: None,
            elicitation_id: elicitation_id.into(),
            extra: Default::default(),
        }
    }
}

setters!(ElicitationCompleteNotificationParams {
    /// Notification metadata.
    with_meta => meta: Meta,
});

// ===== input requests (2026-07-28) =====

impl ElicitRequest {
    /// An `elicitation/create` input request (form or URL params).
    pub fn new(params: impl Into<ElicitRequestParams>) -> Self {
        ElicitRequest { params: params.into(), extra: Default::default() }
    }
}

impl CreateMessageRequest {
    /// A `sampling/createMessage` input request.
    pub fn new(params: CreateMessageRequestParams) -> Self {
        CreateMessageRequest { params, extra: Default::default() }
    }
}

setters!(ListRootsRequest {
    /// The params (only `_meta`).
    with_params => params: RequestParams,
});

// ===== form fields =====

setters!(StringSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The format the answer must have.
    with_format => format: StringFormat,
    /// The value the form starts with (2025-11-25 on).
    with_default => default: String,
});

exact_setters!(StringSchema {
    /// The shortest answer allowed, in characters.
    with_min_length => min_length: u64,
    /// The longest answer allowed, in characters.
    with_max_length => max_length: u64,
});

impl NumberSchema {
    /// A field for a number of `kind` (`number` or `integer`).
    pub fn new(kind: NumberKind) -> Self {
        NumberSchema {
            kind,
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
            extra: Default::default(),
        }
    }
}

setters!(NumberSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The smallest value allowed.
    with_minimum => minimum: serde_json::Number,
    /// The largest value allowed.
    with_maximum => maximum: serde_json::Number,
    /// The value the form starts with (2025-11-25 on).
    with_default => default: serde_json::Number,
});

setters!(BooleanSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The value the form starts with.
    with_default => default: bool,
});

impl From<StringSchema> for PrimitiveSchema {
    fn from(schema: StringSchema) -> Self {
        PrimitiveSchema::String(schema)
    }
}

impl From<NumberSchema> for PrimitiveSchema {
    fn from(schema: NumberSchema) -> Self {
        PrimitiveSchema::Number(schema)
    }
}

impl From<BooleanSchema> for PrimitiveSchema {
    fn from(schema: BooleanSchema) -> Self {
        PrimitiveSchema::Boolean(schema)
    }
}

impl UntitledSingleSelectEnumSchema {
    /// A single choice among `values`.
    pub fn new(values: Vec<String>) -> Self {
        UntitledSingleSelectEnumSchema { values, ..Default::default() }
    }
}

setters!(UntitledSingleSelectEnumSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The value the form starts with (2025-11-25 on).
    with_default => default: String,
});

impl EnumOption {
    /// A choice whose value is `value`, shown as `title`.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption { value: value.into(), title: title.into(), extra: Default::default() }
    }
}

impl TitledSingleSelectEnumSchema {
    /// A single choice among `options` (2025-11-25 on).
    pub fn new(one_of: Vec<EnumOption>) -> Self {
        TitledSingleSelectEnumSchema { one_of, ..Default::default() }
    }
}

setters!(TitledSingleSelectEnumSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The value the form starts with.
    with_default => default: String,
});

impl UntitledEnumItems {
    /// The values a multiple choice offers.
    pub fn new(values: Vec<String>) -> Self {
        UntitledEnumItems { values, extra: Default::default() }
    }
}

impl UntitledMultiSelectEnumSchema {
    /// Any number of choices among `values` (2025-11-25 on).
    pub fn new(values: Vec<String>) -> Self {
        UntitledMultiSelectEnumSchema { items: UntitledEnumItems::new(values), ..Default::default() }
    }
}

setters!(UntitledMultiSelectEnumSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The values the form starts with.
    with_default => default: Vec<String>,
});

exact_setters!(UntitledMultiSelectEnumSchema {
    /// The fewest choices allowed.
    with_min_items => min_items: u64,
    /// The most choices allowed.
    with_max_items => max_items: u64,
});

impl TitledEnumItems {
    /// The options a multiple choice offers.
    pub fn new(any_of: Vec<EnumOption>) -> Self {
        TitledEnumItems { any_of, extra: Default::default() }
    }
}

impl TitledMultiSelectEnumSchema {
    /// Any number of choices among `options` (2025-11-25 on).
    pub fn new(options: Vec<EnumOption>) -> Self {
        TitledMultiSelectEnumSchema { items: TitledEnumItems::new(options), ..Default::default() }
    }
}

setters!(TitledMultiSelectEnumSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The values the form starts with.
    with_default => default: Vec<String>,
});

exact_setters!(TitledMultiSelectEnumSchema {
    /// The fewest choices allowed.
    with_min_items => min_items: u64,
    /// The most choices allowed.
    with_max_items => max_items: u64,
});

impl LegacyTitledEnumSchema {
    /// A single choice among `values`, the legacy way (names in `enumNames`).
    pub fn new(values: Vec<String>) -> Self {
        LegacyTitledEnumSchema { values, ..Default::default() }
    }
}

setters!(LegacyTitledEnumSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
    /// The display names, one per value.
    with_enum_names => enum_names: Vec<String>,
    /// The value the form starts with.
    with_default => default: String,
});

impl From<UntitledSingleSelectEnumSchema> for PrimitiveSchema {
    fn from(schema: UntitledSingleSelectEnumSchema) -> Self {
        PrimitiveSchema::UntitledSingleSelect(schema)
    }
}

impl From<TitledSingleSelectEnumSchema> for PrimitiveSchema {
    fn from(schema: TitledSingleSelectEnumSchema) -> Self {
        PrimitiveSchema::TitledSingleSelect(schema)
    }
}

impl From<UntitledMultiSelectEnumSchema> for PrimitiveSchema {
    fn from(schema: UntitledMultiSelectEnumSchema) -> Self {
        PrimitiveSchema::UntitledMultiSelect(schema)
    }
}

impl From<TitledMultiSelectEnumSchema> for PrimitiveSchema {
    fn from(schema: TitledMultiSelectEnumSchema) -> Self {
        PrimitiveSchema::TitledMultiSelect(schema)
    }
}

impl From<LegacyTitledEnumSchema> for PrimitiveSchema {
    fn from(schema: LegacyTitledEnumSchema) -> Self {
        PrimitiveSchema::LegacyTitled(schema)
    }
}

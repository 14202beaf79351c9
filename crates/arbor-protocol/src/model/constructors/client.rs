//! Constructors for what a client asks (request params) and what its handlers answer
//! (elicitation, sampling, roots), and for the forms a server asks a user to fill in
//! (see the parent module).

use crate::model::common::{JsonObject, Role};
use crate::model::content::SamplingContent;
use crate::model::elicitation::{
    BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitResult, NumberSchema, PrimitiveSchema, RequestedSchema,
    StringSchema,
};
use crate::model::prompts::GetPromptRequestParams;
use crate::model::resources::ReadResourceRequestParams;
use crate::model::roots::{ListRootsResult, Root};
use crate::model::sampling::{CreateMessageResult, SamplingMessageContent};
use crate::model::tools::CallToolRequestParams;

// ===== requests =====

impl CallToolRequestParams {
    /// Call the tool `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        CallToolRequestParams { name: name.into(), ..Default::default() }
    }
}

setters!(CallToolRequestParams {
    /// The arguments, a JSON object.
    with_arguments => arguments: JsonObject,
});

impl GetPromptRequestParams {
    /// Get the prompt `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        GetPromptRequestParams { name: name.into(), ..Default::default() }
    }

    /// Adds one argument value (prompt arguments are strings).
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments.get_or_insert_with(Default::default).insert(name.into(), value.into());
        self
    }
}

impl ReadResourceRequestParams {
    /// Read the resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadResourceRequestParams { uri: uri.into(), ..Default::default() }
    }
}

// ===== a client's answers =====

impl ElicitResult {
    fn of(action: ElicitAction, content: Option<JsonObject>) -> Self {
        ElicitResult { meta: None, result_type: None, action, content, extra: Default::default() }
    }

    /// The user submitted the form with these values (an empty object for URL mode).
    pub fn accept(content: JsonObject) -> Self {
        ElicitResult::of(ElicitAction::Accept, Some(content))
    }

    /// The user explicitly said no.
    pub fn decline() -> Self {
        ElicitResult::of(ElicitAction::Decline, None)
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> Self {
        ElicitResult::of(ElicitAction::Cancel, None)
    }
}

impl CreateMessageResult {
    /// What the assistant said, as answered by `model`.
    pub fn new(model: impl Into<String>, content: impl Into<SamplingContent>) -> Self {
        CreateMessageResult {
            meta: None,
            result_type: None,
            role: Role::Assistant,
            content: SamplingMessageContent::One(content.into()),
            model: model.into(),
            stop_reason: None,
            extra: Default::default(),
        }
    }
}

setters!(CreateMessageResult {
    /// Why sampling stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, ...).
    with_stop_reason => stop_reason: String,
});

impl Root {
    /// The root at `uri` (a `file://` URI).
    pub fn new(uri: impl Into<String>) -> Self {
        Root { uri: uri.into(), name: None, meta: None, extra: Default::default() }
    }
}

setters!(Root {
    /// A display name.
    with_name => name: String,
});

impl ListRootsResult {
    /// The client's roots.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult { roots, ..Default::default() }
    }
}

// ===== forms =====

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

setters!(StringSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
});

setters!(NumberSchema {
    /// The field's label.
    with_title => title: String,
    /// What the field is for.
    with_description => description: String,
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

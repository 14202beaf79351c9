//! Constructors for what a client asks (request params) and what its handlers answer
//! (elicitation, sampling, roots) (see the parent module).

use crate::meta::Meta;
use crate::model::common::{JsonObject, ResultType, Role};
use crate::model::content::SamplingContent;
use crate::model::elicitation::{ElicitAction, ElicitResult};
use crate::model::mrtr::InputResponses;
use crate::model::prompts::GetPromptRequestParams;
use crate::model::resources::ReadResourceRequestParams;
use crate::model::roots::{ListRootsResult, Root};
use crate::model::sampling::{CreateMessageResult, SamplingMessageContent};
use crate::model::tasks::TaskMetadata;
use crate::model::tools::CallToolRequestParams;
use std::collections::BTreeMap;

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
    /// Ask for the call to run as a task (2025-11-25).
    with_task => task: TaskMetadata,
    /// Answers to an `input_required` result (2026-07-28).
    with_input_responses => input_responses: InputResponses,
    /// The opaque state of an `input_required` result, echoed as received (2026-07-28).
    with_request_state => request_state: String,
    /// Request metadata.
    with_meta => meta: Meta,
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

setters!(GetPromptRequestParams {
    /// All the argument values at once.
    with_arguments => arguments: BTreeMap<String, String>,
    /// Answers to an `input_required` result (2026-07-28).
    with_input_responses => input_responses: InputResponses,
    /// The opaque state of an `input_required` result, echoed as received (2026-07-28).
    with_request_state => request_state: String,
    /// Request metadata.
    with_meta => meta: Meta,
});

impl ReadResourceRequestParams {
    /// Read the resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadResourceRequestParams { uri: uri.into(), ..Default::default() }
    }
}

setters!(ReadResourceRequestParams {
    /// Answers to an `input_required` result (2026-07-28).
    with_input_responses => input_responses: InputResponses,
    /// The opaque state of an `input_required` result, echoed as received (2026-07-28).
    with_request_state => request_state: String,
    /// Request metadata.
    with_meta => meta: Meta,
});

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

setters!(ElicitResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` (2026-07-28, where an answer is an input response and has none).
    with_result_type => result_type: ResultType,
});

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
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` (absent up to 2025-11-25 and in an input response).
    with_result_type => result_type: ResultType,
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
    /// Metadata (2025-06-18 on).
    with_meta => meta: Meta,
});

impl ListRootsResult {
    /// The client's roots.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult { roots, ..Default::default() }
    }
}

setters!(ListRootsResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` (absent in 2026-07-28).
    with_result_type => result_type: ResultType,
});

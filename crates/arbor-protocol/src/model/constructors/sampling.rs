//! Constructors for sampling: the messages, the model preferences and the params of
//! `sampling/createMessage`, which a server sends (see the parent module; the client's
//! answer, `CreateMessageResult`, is in `client`).

use crate::meta::Meta;
use crate::model::common::{JsonObject, Role};
use crate::model::content::{SamplingContent, TextContent};
use crate::model::sampling::{
    CreateMessageRequestParams, IncludeContext, ModelHint, ModelPreferences, SamplingMessage, SamplingMessageContent,
    ToolChoice, ToolChoiceMode,
};
use crate::model::tasks::TaskMetadata;
use crate::model::tools::Tool;

impl SamplingMessage {
    /// A message of one content block.
    pub fn new(role: Role, content: impl Into<SamplingContent>) -> Self {
        SamplingMessage {
            role,
            content: SamplingMessageContent::One(content.into()),
            meta: None,
            extra: Default::default(),
        }
    }

    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        SamplingMessage::new(Role::User, TextContent::new(text))
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        SamplingMessage::new(Role::Assistant, TextContent::new(text))
    }

    /// A message of several content blocks (2025-11-25 on), sent as an array.
    pub fn from_blocks(role: Role, blocks: Vec<SamplingContent>) -> Self {
        SamplingMessage { role, content: SamplingMessageContent::Many(blocks), meta: None, extra: Default::default() }
    }
}

setters!(SamplingMessage {
    /// Metadata.
    with_meta => meta: Meta,
});

impl ModelHint {
    /// A hint naming (a substring of) a model name.
    pub fn new(name: impl Into<String>) -> Self {
        ModelHint { name: Some(name.into()), extra: Default::default() }
    }
}

setters!(ModelPreferences {
    /// Model name hints, in order of preference.
    with_hints => hints: Vec<ModelHint>,
    /// How much cost matters, from 0 to 1.
    with_cost_priority => cost_priority: serde_json::Number,
    /// How much speed matters, from 0 to 1.
    with_speed_priority => speed_priority: serde_json::Number,
    /// How much intelligence matters, from 0 to 1.
    with_intelligence_priority => intelligence_priority: serde_json::Number,
});

impl ToolChoice {
    /// Let the model call tools as `mode` says.
    pub fn new(mode: ToolChoiceMode) -> Self {
        ToolChoice { mode: Some(mode), extra: Default::default() }
    }
}

impl CreateMessageRequestParams {
    /// Sample at most `max_tokens` tokens after `messages`.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: i64) -> Self {
        CreateMessageRequestParams { messages, max_tokens, ..Default::default() }
    }
}

setters!(CreateMessageRequestParams {
    /// A system prompt.
    with_system_prompt => system_prompt: String,
    /// Which model to prefer.
    with_model_preferences => model_preferences: ModelPreferences,
    /// Which servers' context to include.
    with_include_context => include_context: IncludeContext,
    /// The sampling temperature.
    with_temperature => temperature: serde_json::Number,
    /// Sequences that stop sampling.
    with_stop_sequences => stop_sequences: Vec<String>,
    /// Provider-specific metadata.
    with_metadata => metadata: JsonObject,
    /// Tools the model may call (2025-11-25 on).
    with_tools => tools: Vec<Tool>,
    /// How the model may call them (2025-11-25 on).
    with_tool_choice => tool_choice: ToolChoice,
    /// Ask for the request to run as a task (2025-11-25).
    with_task => task: TaskMetadata,
    /// Request metadata.
    with_meta => meta: Meta,
});

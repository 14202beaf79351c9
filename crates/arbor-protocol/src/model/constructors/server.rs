//! Constructors for what a server lists and answers: prompts, resources and tools (see
//! the parent module; what a server asks a client for is in `sampling` and `forms`).

use crate::meta::Meta;
use crate::model::common::{Annotations, CacheScope, Icon, JsonObject, ResultType, Role};
use crate::model::content::{ContentBlock, ResourceContents};
use crate::model::prompts::{GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage};
use crate::model::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceSubscriptionParams,
    ResourceTemplate,
};
use crate::model::subscriptions::ResourceUpdatedNotificationParams;
use crate::model::tools::{CallToolResult, ListToolsResult, TaskSupport, Tool, ToolAnnotations, ToolExecution};
use serde_json::Value;

// ===== prompts =====

impl PromptArgument {
    /// An optional argument called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument { name: name.into(), ..Default::default() }
    }

    /// Marks the argument as one that must be given.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = Some(true);
        self
    }
}

setters!(PromptArgument {
    /// A display name (2025-06-18 on).
    with_title => title: String,
    /// What the argument is for.
    with_description => description: String,
});

impl Prompt {
    /// A prompt called `name`, taking no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt { name: name.into(), ..Default::default() }
    }

    /// Adds an argument.
    #[must_use]
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
}

setters!(Prompt {
    /// A display name (2025-06-18 on).
    with_title => title: String,
    /// What the prompt does.
    with_description => description: String,
    /// Icons (2025-11-25 on).
    with_icons => icons: Vec<Icon>,
    /// Metadata (2025-06-18 on).
    with_meta => meta: Meta,
});

impl PromptMessage {
    /// A message `role` says.
    pub fn new(role: Role, content: impl Into<ContentBlock>) -> Self {
        PromptMessage { role, content: content.into(), extra: Default::default() }
    }

    /// A message from the user: text (`PromptMessage::user("hi")`) or any content block.
    pub fn user(content: impl Into<ContentBlock>) -> Self {
        PromptMessage::new(Role::User, content)
    }

    /// A message from the assistant: text or any content block.
    pub fn assistant(content: impl Into<ContentBlock>) -> Self {
        PromptMessage::new(Role::Assistant, content)
    }
}

impl GetPromptResult {
    /// A prompt's messages, without a description.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult { messages, ..Default::default() }
    }
}

setters!(GetPromptResult {
    /// What the prompt is.
    with_description => description: String,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

impl ListPromptsResult {
    /// One page of prompts, the last one.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        ListPromptsResult { prompts, ..Default::default() }
    }
}

setters!(ListPromptsResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: String,
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(ListPromptsResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

// ===== resources =====

impl Resource {
    /// The resource at `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource { uri: uri.into(), name: name.into(), ..Default::default() }
    }
}

setters!(Resource {
    /// A display name (2025-06-18 on).
    with_title => title: String,
    /// What the resource is.
    with_description => description: String,
    /// The MIME type.
    with_mime_type => mime_type: String,
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Icons (2025-11-25 on).
    with_icons => icons: Vec<Icon>,
    /// Metadata (2025-06-18 on).
    with_meta => meta: Meta,
});

exact_setters!(Resource {
    /// The size in bytes.
    with_size => size: u64,
});

impl ResourceTemplate {
    /// The resources matching the RFC 6570 `uri_template`, called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate { uri_template: uri_template.into(), name: name.into(), ..Default::default() }
    }
}

setters!(ResourceTemplate {
    /// A display name (2025-06-18 on).
    with_title => title: String,
    /// What the resources are.
    with_description => description: String,
    /// The MIME type all matching resources share.
    with_mime_type => mime_type: String,
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Icons (2025-11-25 on).
    with_icons => icons: Vec<Icon>,
    /// Metadata (2025-06-18 on).
    with_meta => meta: Meta,
});

impl ReadResourceResult {
    /// The result for these contents.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult { contents, ..Default::default() }
    }

    /// The result for one resource's text.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ReadResourceResult::new(vec![ResourceContents::text(uri, text)])
    }
}

setters!(ReadResourceResult {
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(ReadResourceResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

impl ListResourcesResult {
    /// One page of resources, the last one.
    pub fn new(resources: Vec<Resource>) -> Self {
        ListResourcesResult { resources, ..Default::default() }
    }
}

setters!(ListResourcesResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: String,
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(ListResourcesResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

impl ListResourceTemplatesResult {
    /// One page of templates, the last one.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> Self {
        ListResourceTemplatesResult { resource_templates, ..Default::default() }
    }
}

setters!(ListResourceTemplatesResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: String,
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(ListResourceTemplatesResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

impl ResourceUpdatedNotificationParams {
    /// The resource at `uri` changed.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams { uri: uri.into(), ..Default::default() }
    }
}

impl ResourceSubscriptionParams {
    /// (Un)subscribe the resource at `uri` (up to 2025-11-25).
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceSubscriptionParams { uri: uri.into(), ..Default::default() }
    }
}

setters!(ResourceSubscriptionParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

// ===== tools =====

impl ToolAnnotations {
    /// No hints.
    pub fn new() -> Self {
        ToolAnnotations::default()
    }
}

setters!(ToolAnnotations {
    /// A display name.
    with_title => title: String,
    /// The tool does not change its environment.
    with_read_only_hint => read_only_hint: bool,
    /// The tool may destroy data.
    with_destructive_hint => destructive_hint: bool,
    /// Calling it twice with the same arguments has no further effect.
    with_idempotent_hint => idempotent_hint: bool,
    /// The tool talks to an open world of external entities.
    with_open_world_hint => open_world_hint: bool,
});

impl Tool {
    /// A tool called `name` whose arguments follow `input_schema` (an object schema).
    pub fn new(name: impl Into<String>, input_schema: JsonObject) -> Self {
        Tool { name: name.into(), input_schema, ..Default::default() }
    }
}

setters!(Tool {
    /// A display name (2025-06-18 on).
    with_title => title: String,
    /// What the tool does.
    with_description => description: String,
    /// The JSON Schema of `structuredContent` (2025-06-18 on).
    with_output_schema => output_schema: JsonObject,
    /// Behaviour hints (2025-03-26 on).
    with_annotations => annotations: ToolAnnotations,
    /// Execution properties (2025-11-25).
    with_execution => execution: ToolExecution,
    /// Icons (2025-11-25 on).
    with_icons => icons: Vec<Icon>,
    /// Metadata (2025-06-18 on).
    with_meta => meta: Meta,
});

setters!(ToolExecution {
    /// Whether the tool may run as a task.
    with_task_support => task_support: TaskSupport,
});

impl ListToolsResult {
    /// One page of tools, the last one.
    pub fn new(tools: Vec<Tool>) -> Self {
        ListToolsResult { tools, ..Default::default() }
    }
}

setters!(ListToolsResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: String,
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(ListToolsResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

// The accessors `text()` and `structured()` are read-side and live with the type; the
// constructors here are named `new`/`from_*`/`with_*` so that the two never clash.
impl CallToolResult {
    /// A successful result of these content blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult { content, ..Default::default() }
    }

    /// A successful result of one text block.
    pub fn from_text(text: impl Into<String>) -> Self {
        CallToolResult::new(vec![ContentBlock::text(text)])
    }

    /// A failed result (`isError: true`) whose one text block says why, for the model to read.
    pub fn from_error_text(text: impl Into<String>) -> Self {
        CallToolResult { is_error: Some(true), ..CallToolResult::from_text(text) }
    }

    /// Sets `structuredContent` (2025-06-18 on; revisions before 2026-07-28 want an object).
    #[must_use]
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }
}

setters!(CallToolResult {
    /// Whether the tool failed (`isError`).
    with_is_error => is_error: bool,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

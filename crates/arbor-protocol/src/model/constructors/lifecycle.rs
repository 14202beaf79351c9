//! Constructors for capabilities, the implementation info, the lifecycle messages
//! (`initialize`, `server/discover`), annotations, and the params and results every
//! chapter shares (see the parent module).
//!
//! Every capability type is all optional and derives `Default`, so a capability set
//! starts from `default()` and adds what it supports:
//!
//! ```
//! use arbor_protocol::model::capabilities::{ServerCapabilities, ToolsCapability};
//! use arbor_protocol::model::common::JsonObject;
//!
//! let caps = ServerCapabilities::default()
//!     .with_tools(ToolsCapability::default().with_list_changed(true))
//!     .with_logging(JsonObject::new());
//! assert_eq!(
//!     serde_json::to_value(&caps).unwrap(),
//!     serde_json::json!({"logging": {}, "tools": {"listChanged": true}})
//! );
//! ```

use crate::meta::Meta;
use crate::model::capabilities::{
    ClientCapabilities, ElicitationCapability, PromptsCapability, ResourcesCapability, RootsCapability,
    SamplingCapability, ServerCapabilities, TasksCapability, ToolsCapability,
};
use crate::model::common::{
    Annotations, CacheScope, Cursor, EmptyResult, Icon, IconTheme, Implementation, JsonObject, NotificationParams,
    PaginatedRequestParams, RequestParams, ResultType, Role,
};
use crate::model::lifecycle::{DiscoverResult, InitializeRequestParams, InitializeResult};

// ===== capabilities =====

setters!(RootsCapability {
    /// The client sends `notifications/roots/list_changed` (up to 2025-11-25).
    with_list_changed => list_changed: bool,
});

setters!(SamplingCapability {
    /// The client honours `includeContext` (2025-11-25 on); usually `{}`.
    with_context => context: JsonObject,
    /// The client supports `tools` and `toolChoice` (2025-11-25 on); usually `{}`.
    with_tools => tools: JsonObject,
});

setters!(ElicitationCapability {
    /// Form mode (2025-11-25 on); usually `{}`.
    with_form => form: JsonObject,
    /// URL mode (2025-11-25 on); usually `{}`.
    with_url => url: JsonObject,
});

setters!(TasksCapability {
    /// `tasks/list` is supported; usually `{}`.
    with_list => list: JsonObject,
    /// `tasks/cancel` is supported; usually `{}`.
    with_cancel => cancel: JsonObject,
    /// Which requests may be task-augmented, by method family.
    with_requests => requests: JsonObject,
});

setters!(ClientCapabilities {
    /// Non-standard capabilities.
    with_experimental => experimental: JsonObject,
    /// Roots.
    with_roots => roots: RootsCapability,
    /// Sampling.
    with_sampling => sampling: SamplingCapability,
    /// Elicitation (2025-06-18 on).
    with_elicitation => elicitation: ElicitationCapability,
    /// Experimental tasks (2025-11-25).
    with_tasks => tasks: TasksCapability,
    /// Extensions by identifier (2026-07-28).
    with_extensions => extensions: JsonObject,
});

setters!(PromptsCapability {
    /// The server sends `notifications/prompts/list_changed`.
    with_list_changed => list_changed: bool,
});

setters!(ResourcesCapability {
    /// The server supports resource subscriptions.
    with_subscribe => subscribe: bool,
    /// The server sends `notifications/resources/list_changed`.
    with_list_changed => list_changed: bool,
});

setters!(ToolsCapability {
    /// The server sends `notifications/tools/list_changed`.
    with_list_changed => list_changed: bool,
});

setters!(ServerCapabilities {
    /// Non-standard capabilities.
    with_experimental => experimental: JsonObject,
    /// Log messages (deprecated in 2026-07-28); `{}`.
    with_logging => logging: JsonObject,
    /// Argument completion (2025-03-26 on); `{}`.
    with_completions => completions: JsonObject,
    /// Prompts.
    with_prompts => prompts: PromptsCapability,
    /// Resources.
    with_resources => resources: ResourcesCapability,
    /// Tools.
    with_tools => tools: ToolsCapability,
    /// Experimental tasks (2025-11-25).
    with_tasks => tasks: TasksCapability,
    /// Extensions by identifier (2026-07-28).
    with_extensions => extensions: JsonObject,
});

// ===== common =====

setters!(Implementation {
    /// A display name (2025-06-18 on).
    with_title => title: String,
    /// What the implementation does (2025-11-25 on).
    with_description => description: String,
    /// Icons (2025-11-25 on).
    with_icons => icons: Vec<Icon>,
    /// The implementation's website (2025-11-25 on).
    with_website_url => website_url: String,
});

setters!(Icon {
    /// Sizes such as `"48x48"` or `"any"`.
    with_sizes => sizes: Vec<String>,
    /// The colour scheme the icon is for.
    with_theme => theme: IconTheme,
});

setters!(Annotations {
    /// Who the object is meant for.
    with_audience => audience: Vec<Role>,
    /// How important the object is, from 0 (least) to 1 (most).
    with_priority => priority: serde_json::Number,
    /// When the object last changed, as an ISO 8601 timestamp (2025-06-18 on).
    with_last_modified => last_modified: String,
});

setters!(RequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

setters!(NotificationParams {
    /// Notification metadata.
    with_meta => meta: Meta,
});

setters!(PaginatedRequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
    /// Where to continue.
    with_cursor => cursor: Cursor,
});

setters!(EmptyResult {
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

// ===== lifecycle =====

impl InitializeRequestParams {
    /// The client `client_info`, asking for `protocol_version`, supporting `capabilities`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        InitializeRequestParams {
            meta: None,
            protocol_version: protocol_version.into(),
            capabilities,
            client_info,
            extra: Default::default(),
        }
    }
}

setters!(InitializeRequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

impl InitializeResult {
    /// The server `server_info` agreeing on `protocol_version`, supporting `capabilities`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        InitializeResult {
            meta: None,
            result_type: None,
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            instructions: None,
            extra: Default::default(),
        }
    }
}

setters!(InitializeResult {
    /// How to use the server, for the model.
    with_instructions => instructions: String,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` (never sent: `initialize` ends with 2025-11-25).
    with_result_type => result_type: ResultType,
});

impl DiscoverResult {
    /// The server speaks `supported_versions` and supports `capabilities` (2026-07-28).
    pub fn new(supported_versions: Vec<String>, capabilities: ServerCapabilities) -> Self {
        DiscoverResult { supported_versions, capabilities, ..Default::default() }
    }
}

setters!(DiscoverResult {
    /// How to use the server, for the model.
    with_instructions => instructions: String,
    /// Cache sharing.
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata (the server info travels here).
    with_meta => meta: Meta,
    /// `"complete"`.
    with_result_type => result_type: ResultType,
});

exact_setters!(DiscoverResult {
    /// Freshness in milliseconds.
    with_ttl_ms => ttl_ms: u64,
});

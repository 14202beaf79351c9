//! Client and server capabilities: what each side says it supports.
//!
//! Up to 2025-11-25 they are exchanged once in `initialize`; in 2026-07-28 the
//! client's travel in every request's `_meta` and the server's in `server/discover`.
//! This module holds the shapes only; the era modules decide where they come from.
//! Invariant: an absent capability is `None`, and an empty object `{}` is `Some`.

use crate::model::common::JsonObject;

wire_struct! {
    /// The client's `roots` capability (deprecated in 2026-07-28).
    #[derive(Default)]
    pub struct RootsCapability {
        /// The client sends `notifications/roots/list_changed` (up to 2025-11-25).
        opt list_changed: bool = "listChanged",
    }
}

wire_struct! {
    /// The client's `sampling` capability.
    #[derive(Default)]
    pub struct SamplingCapability {
        /// The client honours `includeContext` (2025-11-25 on).
        opt context: JsonObject = "context",
        /// The client supports `tools` and `toolChoice` (2025-11-25 on).
        opt tools: JsonObject = "tools",
    }
}

wire_struct! {
    /// The client's `elicitation` capability (2025-06-18 on). `{}` means form mode only.
    #[derive(Default)]
    pub struct ElicitationCapability {
        /// Form mode (2025-11-25 on).
        opt form: JsonObject = "form",
        /// URL mode (2025-11-25 on).
        opt url: JsonObject = "url",
    }
}

wire_struct! {
    /// The 2025-11-25 experimental `tasks` capability, on either side.
    #[derive(Default)]
    pub struct TasksCapability {
        /// `tasks/list` is supported.
        opt list: JsonObject = "list",
        /// `tasks/cancel` is supported.
        opt cancel: JsonObject = "cancel",
        /// Which requests may be task-augmented, by method family
        /// (client: `sampling`, `elicitation`; server: `tools`).
        opt requests: JsonObject = "requests",
    }
}

wire_struct! {
    /// What the client supports.
    #[derive(Default)]
    pub struct ClientCapabilities {
        /// Non-standard capabilities.
        opt experimental: JsonObject = "experimental",
        /// Roots.
        opt roots: RootsCapability = "roots",
        /// Sampling.
        opt sampling: SamplingCapability = "sampling",
        /// Elicitation (2025-06-18 on).
        opt elicitation: ElicitationCapability = "elicitation",
        /// Experimental tasks (2025-11-25).
        opt tasks: TasksCapability = "tasks",
        /// Extensions by identifier, such as `io.modelcontextprotocol/tasks` (2026-07-28).
        opt extensions: JsonObject = "extensions",
    }
}

wire_struct! {
    /// The server's `prompts` capability.
    #[derive(Default)]
    pub struct PromptsCapability {
        /// The server sends `notifications/prompts/list_changed`.
        opt list_changed: bool = "listChanged",
    }
}

wire_struct! {
    /// The server's `resources` capability.
    #[derive(Default)]
    pub struct ResourcesCapability {
        /// The server supports resource subscriptions.
        opt subscribe: bool = "subscribe",
        /// The server sends `notifications/resources/list_changed`.
        opt list_changed: bool = "listChanged",
    }
}

wire_struct! {
    /// The server's `tools` capability.
    #[derive(Default)]
    pub struct ToolsCapability {
        /// The server sends `notifications/tools/list_changed`.
        opt list_changed: bool = "listChanged",
    }
}

wire_struct! {
    /// What the server supports.
    #[derive(Default)]
    pub struct ServerCapabilities {
        /// Non-standard capabilities.
        opt experimental: JsonObject = "experimental",
        /// Log messages (deprecated in 2026-07-28).
        opt logging: JsonObject = "logging",
        /// Argument completion (2025-03-26 on).
        opt completions: JsonObject = "completions",
        /// Prompts.
        opt prompts: PromptsCapability = "prompts",
        /// Resources.
        opt resources: ResourcesCapability = "resources",
        /// Tools.
        opt tools: ToolsCapability = "tools",
        /// Experimental tasks (2025-11-25).
        opt tasks: TasksCapability = "tasks",
        /// Extensions by identifier (2026-07-28).
        opt extensions: JsonObject = "extensions",
    }
}

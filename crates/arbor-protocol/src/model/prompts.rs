//! Prompts: `prompts/list` and `prompts/get`.
//!
//! Prompt arguments are strings on the wire; this module does not check that the
//! required ones are present (the server layer answers -32602 for that).
//! Invariant: every 2025-06-18-and-later member is optional.

use crate::meta::Meta;
use crate::model::common::{CacheScope, Cursor, Icon, ResultType, Role};
use crate::model::content::ContentBlock;
use crate::model::mrtr::InputResponses;

wire_struct! {
    /// One argument a prompt takes.
    #[derive(Default)]
    pub struct PromptArgument {
        /// The argument's name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
        opt title: String = "title",
        /// What the argument is for.
        opt description: String = "description",
        /// Whether the argument must be given.
        opt required: bool = "required",
    }
}

wire_struct! {
    /// A prompt or prompt template the server offers.
    #[derive(Default)]
    pub struct Prompt {
        /// The prompt's name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
        opt title: String = "title",
        /// What the prompt does.
        opt description: String = "description",
        /// The arguments it takes.
        opt arguments: Vec<PromptArgument> = "arguments",
        /// Icons (2025-11-25 on).
        opt icons: Vec<Icon> = "icons",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The result of `prompts/list`.
    #[derive(Default)]
    pub struct ListPromptsResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The prompts on this page.
        req prompts: Vec<Prompt> = "prompts",
        /// Where the next page starts.
        opt next_cursor: Cursor = "nextCursor",
        /// Freshness in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The params of `prompts/get`.
    #[derive(Default)]
    pub struct GetPromptRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The prompt to get.
        req name: String = "name",
        /// The argument values.
        opt arguments: std::collections::BTreeMap<String, String> = "arguments",
        /// Answers to an `input_required` result (2026-07-28).
        opt input_responses: InputResponses = "inputResponses",
        /// The opaque state of an `input_required` result (2026-07-28).
        opt request_state: String = "requestState",
    }
}

wire_struct! {
    /// One message of a prompt.
    pub struct PromptMessage {
        /// Who says it.
        req role: Role = "role",
        /// What is said.
        req content: ContentBlock = "content",
    }
}

wire_struct! {
    /// The result of `prompts/get`.
    #[derive(Default)]
    pub struct GetPromptResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// What the prompt is.
        opt description: String = "description",
        /// The messages.
        req messages: Vec<PromptMessage> = "messages",
    }
}

//! Sampling: `sampling/createMessage`, a server asking the client's model for a
//! completion (a JSON-RPC request up to 2025-11-25, an MRTR input request in
//! 2026-07-28, deprecated there).
//!
//! This module does not pick models or run tool loops; it carries the request and
//! the answer. Invariant: a message's content is one block or a list of blocks, and
//! decodes back into the same shape it was sent in.

use crate::meta::Meta;
use crate::model::common::{JsonObject, ResultType, Role};
use crate::model::content::SamplingContent;
use crate::model::tasks::TaskMetadata;
use crate::model::tools::Tool;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A sampling message's content: one block, or (2025-11-25 on) several.
#[allow(clippy::large_enum_variant)] // Boxing would cost an allocation per decode.
#[derive(Clone, Debug, PartialEq)]
pub enum SamplingMessageContent {
    /// A single block, written as an object.
    One(SamplingContent),
    /// Several blocks, written as an array.
    Many(Vec<SamplingContent>),
}

impl Serialize for SamplingMessageContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingMessageContent::One(block) => block.serialize(s),
            SamplingMessageContent::Many(blocks) => blocks.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingMessageContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // An object and an array are disjoint shapes, so no buffering is needed.
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SamplingMessageContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block or an array of content blocks")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                SamplingContent::read_map(map).map(SamplingMessageContent::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(SamplingMessageContent::Many(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

wire_struct! {
    /// One message of a sampling conversation.
    pub struct SamplingMessage {
        /// Who says it.
        req role: Role = "role",
        /// What is said.
        req content: SamplingMessageContent = "content",
        /// Metadata (2025-11-25 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// A hint towards a model name; a substring to match.
    #[derive(Default)]
    pub struct ModelHint {
        /// Part of a model name.
        opt name: String = "name",
    }
}

wire_struct! {
    /// What the server prefers when the client picks a model.
    #[derive(Default)]
    pub struct ModelPreferences {
        /// Model name hints, in order of preference.
        opt hints: Vec<ModelHint> = "hints",
        /// How much cost matters, 0 to 1.
        opt cost_priority: serde_json::Number = "costPriority",
        /// How much speed matters, 0 to 1.
        opt speed_priority: serde_json::Number = "speedPriority",
        /// How much capability matters, 0 to 1.
        opt intelligence_priority: serde_json::Number = "intelligencePriority",
    }
}

/// Which MCP servers' context to include in a sampling prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// No context (the default).
    None,
    /// Context from the requesting server (deprecated).
    ThisServer,
    /// Context from every server (deprecated).
    AllServers,
}

/// How the model may use the tools offered in a sampling request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use tools.
    None,
}

wire_struct! {
    /// Tool-use rules of a sampling request (2025-11-25 on).
    #[derive(Default)]
    pub struct ToolChoice {
        /// The mode.
        opt mode: ToolChoiceMode = "mode",
    }
}

wire_struct! {
    /// The params of `sampling/createMessage`.
    #[derive(Default)]
    pub struct CreateMessageRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The conversation so far.
        req messages: Vec<SamplingMessage> = "messages",
        /// Model preferences.
        opt model_preferences: ModelPreferences = "modelPreferences",
        /// A system prompt.
        opt system_prompt: String = "systemPrompt",
        /// Which context to include.
        opt include_context: IncludeContext = "includeContext",
        /// The sampling temperature.
        opt temperature: serde_json::Number = "temperature",
        /// The most tokens to sample.
        req max_tokens: i64 = "maxTokens",
        /// Where to stop.
        opt stop_sequences: Vec<String> = "stopSequences",
        /// Provider-specific metadata.
        opt metadata: JsonObject = "metadata",
        /// Tools the model may use (2025-11-25 on).
        opt tools: Vec<Tool> = "tools",
        /// How it may use them (2025-11-25 on).
        opt tool_choice: ToolChoice = "toolChoice",
        /// Ask for the request to run as a task (2025-11-25).
        opt task: TaskMetadata = "task",
    }
}

wire_struct! {
    /// The client's answer to `sampling/createMessage`. In 2026-07-28 it travels
    /// inside `inputResponses` and has no `resultType`.
    pub struct CreateMessageResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// Absent in 2026-07-28; kept for peers that send one anyway.
        opt result_type: ResultType = "resultType",
        /// Who says it (the assistant).
        req role: Role = "role",
        /// What the model said.
        req content: SamplingMessageContent = "content",
        /// The model that answered.
        req model: String = "model",
        /// Why sampling stopped: `endTurn`, `stopSequence`, `maxTokens`, `toolUse` or another string.
        opt stop_reason: String = "stopReason",
    }
}

//! Content blocks: what prompts, tool results and sampling messages are made of.
//!
//! [`ContentBlock`] is the schema's `ContentBlock` (text, image, audio, resource link,
//! embedded resource); [`SamplingContent`] is `SamplingMessageContentBlock` (text,
//! image, audio, tool use, tool result). Both are closed enums tagged by `"type"`.
//! This module does not check base64 or MIME types; it carries them.
//!
//! Invariant: each block struct writes its own `"type"` member, so a block encodes
//! the same whether it stands alone or inside an enum.

use crate::meta::Meta;
use crate::model::common::{Annotations, Icon};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

wire_struct! {
    /// Plain text.
    pub struct TextContent tag "type" = "text" {
        /// The text.
        req text: String = "text",
        /// Client hints.
        opt annotations: Annotations = "annotations",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

impl TextContent {
    /// A text block with nothing but the text.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent { text: text.into(), annotations: None, meta: None, extra: Default::default() }
    }
}

wire_struct! {
    /// A base64-encoded image.
    pub struct ImageContent tag "type" = "image" {
        /// The base64 data.
        req data: String = "data",
        /// The image's MIME type.
        req mime_type: String = "mimeType",
        /// Client hints.
        opt annotations: Annotations = "annotations",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// Base64-encoded audio (2025-03-26 on).
    pub struct AudioContent tag "type" = "audio" {
        /// The base64 data.
        req data: String = "data",
        /// The audio's MIME type.
        req mime_type: String = "mimeType",
        /// Client hints.
        opt annotations: Annotations = "annotations",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// A link to a resource the client can read (2025-06-18 on).
    pub struct ResourceLink tag "type" = "resource_link" {
        /// The resource's URI.
        req uri: String = "uri",
        /// The programmatic name.
        req name: String = "name",
        /// A display name.
        opt title: String = "title",
        /// What the resource is.
        opt description: String = "description",
        /// The MIME type, if known.
        opt mime_type: String = "mimeType",
        /// The size in bytes, if known.
        opt size: u64 = "size",
        /// Icons (2025-11-25 on).
        opt icons: Vec<Icon> = "icons",
        /// Client hints.
        opt annotations: Annotations = "annotations",
        /// Metadata.
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The contents of a resource, embedded in a prompt or a tool result.
    pub struct EmbeddedResource tag "type" = "resource" {
        /// The contents.
        req resource: ResourceContents = "resource",
        /// Client hints.
        opt annotations: Annotations = "annotations",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// A resource's contents as text.
    pub struct TextResourceContents {
        /// The resource's URI.
        req uri: String = "uri",
        /// The MIME type, if known.
        opt mime_type: String = "mimeType",
        /// The text.
        req text: String = "text",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// A resource's contents as base64-encoded bytes.
    pub struct BlobResourceContents {
        /// The resource's URI.
        req uri: String = "uri",
        /// The MIME type, if known.
        opt mime_type: String = "mimeType",
        /// The base64 data.
        req blob: String = "blob",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

/// A resource's contents: text or binary. The two shapes are told apart by which of
/// `text` and `blob` is present; they have no tag.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The resource's URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(t) => t.serialize(s),
            ResourceContents::Blob(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::model::wire::from_buffered(d, |map| {
            if map.contains_key("blob") && !map.contains_key("text") {
                BlobResourceContents::deserialize(Value::Object(map)).map(ResourceContents::Blob)
            } else {
                TextResourceContents::deserialize(Value::Object(map)).map(ResourceContents::Text)
            }
        })
    }
}

wire_struct! {
    /// The model asks to call a tool (sampling, 2025-11-25 on).
    pub struct ToolUseContent tag "type" = "tool_use" {
        /// An id that the matching tool result echoes.
        req id: String = "id",
        /// The tool's name.
        req name: String = "name",
        /// The tool's arguments.
        req input: serde_json::Map<String, Value> = "input",
        /// Metadata.
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The result of a tool use, given back to the model (sampling, 2025-11-25 on).
    pub struct ToolResultContent tag "type" = "tool_result" {
        /// The id of the tool use this answers.
        req tool_use_id: String = "toolUseId",
        /// The unstructured result.
        req content: Vec<ContentBlock> = "content",
        /// The structured result.
        val structured_content: Value = "structuredContent",
        /// Whether the tool failed.
        opt is_error: bool = "isError",
        /// Metadata.
        opt meta: Meta = "_meta",
    }
}

wire_tagged_enum! {
    /// A content block of a prompt message or a tool result (`ContentBlock`).
    pub enum ContentBlock tag "type" {
        /// Text.
        Text(TextContent) = "text",
        /// An image.
        Image(ImageContent) = "image",
        /// Audio (2025-03-26 on).
        Audio(AudioContent) = "audio",
        /// A resource link (2025-06-18 on).
        ResourceLink(ResourceLink) = "resource_link",
        /// An embedded resource.
        Resource(EmbeddedResource) = "resource",
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }
}

wire_tagged_enum! {
    /// A content block of a sampling message (`SamplingMessageContentBlock`).
    pub enum SamplingContent tag "type" {
        /// Text.
        Text(TextContent) = "text",
        /// An image.
        Image(ImageContent) = "image",
        /// Audio (2025-03-26 on).
        Audio(AudioContent) = "audio",
        /// A tool use (2025-11-25 on).
        ToolUse(ToolUseContent) = "tool_use",
        /// A tool result (2025-11-25 on).
        ToolResult(ToolResultContent) = "tool_result",
    }
}

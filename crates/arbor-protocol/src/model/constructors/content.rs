//! Constructors for icons and content blocks, including the sampling-only tool use and
//! tool result blocks (see the parent module).

use super::base64;
use crate::meta::Meta;
use crate::model::common::{Annotations, Icon, JsonObject};
use crate::model::content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent, ResourceContents, ResourceLink,
    TextContent, TextResourceContents, ToolResultContent, ToolUseContent,
};
use serde_json::Value;

// ===== common =====

impl Icon {
    /// An icon at `src` (an `https:` or `data:` URI).
    pub fn new(src: impl Into<String>) -> Self {
        Icon { src: src.into(), mime_type: None, sizes: None, theme: None, extra: Default::default() }
    }
}

setters!(Icon {
    /// The MIME type, when the source does not say.
    with_mime_type => mime_type: String,
});

// ===== content =====

setters!(TextContent {
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Metadata.
    with_meta => meta: Meta,
});

impl ImageContent {
    /// An image from its base64 `data` and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Default::default(),
        }
    }

    /// An image from raw bytes, which this encodes as base64.
    pub fn from_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        ImageContent::new(base64(bytes), mime_type)
    }
}

setters!(ImageContent {
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Metadata.
    with_meta => meta: Meta,
});

impl AudioContent {
    /// Audio from its base64 `data` and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Default::default(),
        }
    }

    /// Audio from raw bytes, which this encodes as base64.
    pub fn from_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        AudioContent::new(base64(bytes), mime_type)
    }
}

setters!(AudioContent {
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Metadata.
    with_meta => meta: Meta,
});

impl ResourceLink {
    /// A link to the resource at `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
            extra: Default::default(),
        }
    }
}

setters!(ResourceLink {
    /// A display name.
    with_title => title: String,
    /// What the resource is.
    with_description => description: String,
    /// The MIME type.
    with_mime_type => mime_type: String,
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Icons (2025-11-25 on).
    with_icons => icons: Vec<Icon>,
    /// Metadata.
    with_meta => meta: Meta,
});

exact_setters!(ResourceLink {
    /// The size in bytes.
    with_size => size: u64,
});

impl EmbeddedResource {
    /// The resource's contents, embedded.
    pub fn new(resource: ResourceContents) -> Self {
        EmbeddedResource { resource, annotations: None, meta: None, extra: Default::default() }
    }
}

setters!(EmbeddedResource {
    /// Client hints.
    with_annotations => annotations: Annotations,
    /// Metadata.
    with_meta => meta: Meta,
});

impl TextResourceContents {
    /// The text of the resource at `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
            extra: Default::default(),
        }
    }
}

setters!(TextResourceContents {
    /// The MIME type.
    with_mime_type => mime_type: String,
    /// Metadata.
    with_meta => meta: Meta,
});

impl BlobResourceContents {
    /// The contents of the resource at `uri`, already base64-encoded in `blob`.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
            extra: Default::default(),
        }
    }

    /// The contents of the resource at `uri` from raw bytes, which this encodes as base64.
    pub fn from_bytes(uri: impl Into<String>, bytes: &[u8]) -> Self {
        BlobResourceContents::new(uri, base64(bytes))
    }
}

setters!(BlobResourceContents {
    /// The MIME type.
    with_mime_type => mime_type: String,
    /// Metadata.
    with_meta => meta: Meta,
});

impl ResourceContents {
    /// Text contents of the resource at `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents::new(uri, text))
    }

    /// Binary contents of the resource at `uri`, from raw bytes (encoded as base64 here).
    pub fn blob(uri: impl Into<String>, bytes: &[u8]) -> Self {
        ResourceContents::Blob(BlobResourceContents::from_bytes(uri, bytes))
    }

    /// Sets the MIME type, whichever shape the contents have.
    #[must_use]
    pub fn with_mime_type(self, mime_type: impl Into<String>) -> Self {
        match self {
            ResourceContents::Text(t) => ResourceContents::Text(t.with_mime_type(mime_type)),
            ResourceContents::Blob(b) => ResourceContents::Blob(b.with_mime_type(mime_type)),
        }
    }
}

impl ToolUseContent {
    /// The model calls the tool `name` with `input`, as call `id` (sampling, 2025-11-25 on).
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: JsonObject) -> Self {
        ToolUseContent { id: id.into(), name: name.into(), input, meta: None, extra: Default::default() }
    }
}

setters!(ToolUseContent {
    /// Metadata.
    with_meta => meta: Meta,
});

impl ToolResultContent {
    /// The result of the tool call `tool_use_id` (sampling, 2025-11-25 on).
    pub fn new(tool_use_id: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        ToolResultContent {
            tool_use_id: tool_use_id.into(),
            content,
            structured_content: None,
            is_error: None,
            meta: None,
            extra: Default::default(),
        }
    }
}

setters!(ToolResultContent {
    /// The structured result.
    with_structured_content => structured_content: Value,
    /// Whether the tool failed.
    with_is_error => is_error: bool,
    /// Metadata.
    with_meta => meta: Meta,
});

impl ContentBlock {
    /// An image block from base64 `data`.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block from base64 `data` (2025-03-26 on).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent::new(data, mime_type))
    }

    /// A link to the resource at `uri`, called `name` (2025-06-18 on).
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink(ResourceLink::new(uri, name))
    }

    /// A resource's contents, embedded.
    pub fn resource(contents: ResourceContents) -> Self {
        ContentBlock::Resource(EmbeddedResource::new(contents))
    }
}

/// Text is the common block: `"hello".into()` is a text block.
impl From<String> for ContentBlock {
    fn from(text: String) -> Self {
        ContentBlock::text(text)
    }
}

impl From<&str> for ContentBlock {
    fn from(text: &str) -> Self {
        ContentBlock::text(text)
    }
}

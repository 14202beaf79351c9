//! Resources: `resources/list`, `resources/templates/list`, `resources/read`, and
//! the legacy `resources/subscribe` / `resources/unsubscribe`.
//!
//! URIs stay strings: this module neither parses nor sanitises them (servers must
//! check `file://` paths themselves). Invariant: results carry the 2026-07-28 cache
//! fields as options, so the same types serve every revision.

use crate::meta::Meta;
use crate::model::common::{Annotations, CacheScope, Cursor, Icon, ResultType};
use crate::model::content::ResourceContents;
use crate::model::mrtr::InputResponses;

wire_struct! {
    /// A resource the server can read.
    #[derive(Default)]
    pub struct Resource {
        /// The resource's URI.
        req uri: String = "uri",
        /// The programmatic name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
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
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// A family of resources named by an RFC 6570 URI template.
    #[derive(Default)]
    pub struct ResourceTemplate {
        /// The URI template.
        req uri_template: String = "uriTemplate",
        /// The programmatic name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
        opt title: String = "title",
        /// What the resources are.
        opt description: String = "description",
        /// The MIME type shared by all matching resources, if any.
        opt mime_type: String = "mimeType",
        /// Icons (2025-11-25 on).
        opt icons: Vec<Icon> = "icons",
        /// Client hints.
        opt annotations: Annotations = "annotations",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The result of `resources/list`.
    #[derive(Default)]
    pub struct ListResourcesResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The resources on this page.
        req resources: Vec<Resource> = "resources",
        /// Where the next page starts.
        opt next_cursor: Cursor = "nextCursor",
        /// Freshness in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The result of `resources/templates/list`.
    #[derive(Default)]
    pub struct ListResourceTemplatesResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The templates on this page.
        req resource_templates: Vec<ResourceTemplate> = "resourceTemplates",
        /// Where the next page starts.
        opt next_cursor: Cursor = "nextCursor",
        /// Freshness in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The params of `resources/read`.
    #[derive(Default)]
    pub struct ReadResourceRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The resource to read.
        req uri: String = "uri",
        /// Answers to an `input_required` result (2026-07-28).
        opt input_responses: InputResponses = "inputResponses",
        /// The opaque state of an `input_required` result (2026-07-28).
        opt request_state: String = "requestState",
    }
}

wire_struct! {
    /// The result of `resources/read`.
    #[derive(Default)]
    pub struct ReadResourceResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The contents: one entry, or several for a directory-like resource.
        req contents: Vec<ResourceContents> = "contents",
        /// Freshness in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The params of `resources/subscribe` and `resources/unsubscribe` (up to 2025-11-25).
    #[derive(Default)]
    pub struct ResourceSubscriptionParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The resource to (un)subscribe.
        req uri: String = "uri",
    }
}

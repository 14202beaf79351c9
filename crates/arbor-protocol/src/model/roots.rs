//! Roots: `roots/list`, the client telling the server which directories or files
//! it may work on (deprecated in 2026-07-28, where it is an MRTR input request).
//!
//! This module does not check that root URIs are `file://`. The request itself
//! has no params of its own (see `common::RequestParams`).

use crate::meta::Meta;
use crate::model::common::ResultType;

wire_struct! {
    /// A root directory or file.
    pub struct Root {
        /// A `file://` URI.
        req uri: String = "uri",
        /// A display name.
        opt name: String = "name",
        /// Metadata (2025-06-18 on).
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The client's answer to `roots/list`. In 2026-07-28 it has no `resultType`.
    #[derive(Default)]
    pub struct ListRootsResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// Absent in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The roots.
        req roots: Vec<Root> = "roots",
    }
}

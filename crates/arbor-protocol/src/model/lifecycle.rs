//! Lifecycle: `initialize` and `ping` (up to 2025-11-25) and `server/discover`
//! (2026-07-28).
//!
//! This module does not negotiate versions; `version` and the era modules do.
//! `ping` and `server/discover` take `common::RequestParams`, `ping` answers with
//! `common::EmptyResult`, and `notifications/initialized` carries
//! `common::NotificationParams`. Invariant: versions stay strings here, so an
//! unknown version can still be read and refused politely.

use crate::meta::Meta;
use crate::model::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::model::common::{CacheScope, Implementation, ResultType};

wire_struct! {
    /// The params of `initialize`.
    #[derive(Default)]
    pub struct InitializeRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The newest revision the client supports.
        req protocol_version: String = "protocolVersion",
        /// What the client supports.
        req capabilities: ClientCapabilities = "capabilities",
        /// Who the client is.
        req client_info: Implementation = "clientInfo",
    }
}

wire_struct! {
    /// The result of `initialize`.
    #[derive(Default)]
    pub struct InitializeResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// Never sent by the revisions that have `initialize`; kept for symmetry.
        opt result_type: ResultType = "resultType",
        /// The revision the server chose.
        req protocol_version: String = "protocolVersion",
        /// What the server supports.
        req capabilities: ServerCapabilities = "capabilities",
        /// Who the server is.
        req server_info: Implementation = "serverInfo",
        /// How to use the server, for the model.
        opt instructions: String = "instructions",
    }
}

wire_struct! {
    /// The result of `server/discover` (2026-07-28). The server's identity travels in
    /// `_meta["io.modelcontextprotocol/serverInfo"]`.
    #[derive(Default)]
    pub struct DiscoverResult {
        /// Result metadata, including the server's identity.
        opt meta: Meta = "_meta",
        /// `"complete"`.
        opt result_type: ResultType = "resultType",
        /// Every revision the server speaks.
        req supported_versions: Vec<String> = "supportedVersions",
        /// What the server supports.
        req capabilities: ServerCapabilities = "capabilities",
        /// How to use the server, for the model.
        opt instructions: String = "instructions",
        /// Freshness in milliseconds.
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing.
        opt cache_scope: CacheScope = "cacheScope",
    }
}

//! Logging: `logging/setLevel` (up to 2025-11-25) and `notifications/message`.
//!
//! In 2026-07-28 the level travels in each request's `_meta` instead, and logging is
//! deprecated; this module only holds the shapes. Invariant: levels order by
//! severity, `Debug` lowest, so `level >= threshold` is the filter.

use crate::meta::Meta;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A log severity (RFC 5424), ordered from least to most severe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Information.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

wire_struct! {
    /// The params of `logging/setLevel`.
    pub struct SetLevelRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The lowest level the client wants.
        req level: LoggingLevel = "level",
    }
}

wire_struct! {
    /// The params of `notifications/message`.
    pub struct LoggingMessageNotificationParams {
        /// Notification metadata.
        opt meta: Meta = "_meta",
        /// The severity.
        req level: LoggingLevel = "level",
        /// The logger's name.
        opt logger: String = "logger",
        /// The message: any JSON value.
        req data: Value = "data",
    }
}

//! Types every spec chapter shares: identities, icons, annotations, roles, cursors,
//! the generic params and results, `resultType` and the cache fields.
//!
//! These are neutral types, a superset of every revision: a member a later revision
//! added is an `Option` that is left out when `None`, so a value built with only an
//! older revision's members is valid for that revision. This module does not decide
//! which members a revision allows; the era modules do.

use crate::meta::Meta;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON object of free-form members (`JSONObject` in the schema).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// An opaque pagination cursor. An empty string is a valid cursor, not the end.
pub type Cursor = String;

/// A progress token: a string or an integer, chosen by the requester.
pub type ProgressToken = crate::jsonrpc::RequestId;

/// The sender or recipient of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// The human side of the conversation.
    User,
    /// The model side of the conversation.
    Assistant,
}

wire_struct! {
    /// Hints for the client about how to use or show an object.
    #[derive(Default)]
    pub struct Annotations {
        /// Who the object is meant for.
        opt audience: Vec<Role> = "audience",
        /// How important the object is, from 0 (least) to 1 (most).
        opt priority: serde_json::Number = "priority",
        /// When the object last changed, as an ISO 8601 timestamp (2025-06-18 on).
        opt last_modified: String = "lastModified",
    }
}

/// Which colour scheme an icon is drawn for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IconTheme {
    /// For a light background.
    Light,
    /// For a dark background.
    Dark,
}

wire_struct! {
    /// An icon a user interface may show (2025-11-25 on).
    pub struct Icon {
        /// An `https:` or `data:` URI.
        req src: String = "src",
        /// The MIME type, when the source does not say.
        opt mime_type: String = "mimeType",
        /// Sizes such as `"48x48"` or `"any"`.
        opt sizes: Vec<String> = "sizes",
        /// The colour scheme the icon is for.
        opt theme: IconTheme = "theme",
    }
}

wire_struct! {
    /// The name and version of an MCP implementation (client or server).
    #[derive(Default)]
    pub struct Implementation {
        /// The programmatic name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
        opt title: String = "title",
        /// The version string.
        req version: String = "version",
        /// What the implementation does (2025-11-25 on).
        opt description: String = "description",
        /// Icons (2025-11-25 on).
        opt icons: Vec<Icon> = "icons",
        /// The implementation's website (2025-11-25 on).
        opt website_url: String = "websiteUrl",
    }
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation { name: name.into(), version: version.into(), ..Default::default() }
    }
}

/// What kind of result a 2026-07-28 response carries. An absent `resultType` (a
/// legacy server) means [`ResultType::Complete`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// The final result of the request.
    Complete,
    /// The server needs input first (multi round-trip requests).
    InputRequired,
    /// The request became a task (the tasks extension).
    Task,
    /// A value from an extension this crate does not know. Clients that did not
    /// advertise the extension must treat it as invalid.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(s) => s,
        }
    }

    /// Reads a wire string; never fails, unknown strings become [`ResultType::Other`].
    pub fn parse(s: &str) -> ResultType {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            "task" => ResultType::Task,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = crate::model::wire::Key::deserialize(d)?;
        Ok(ResultType::parse(&key.0))
    }
}

/// Who may share a cached result (2026-07-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CacheScope {
    /// Any cache may keep it.
    Public,
    /// Only a cache bound to the same authorization context may keep it.
    Private,
}

wire_struct! {
    /// Params that carry nothing but `_meta` (`RequestParams`), for requests such
    /// as `ping`, `server/discover` and `roots/list`.
    #[derive(Default)]
    pub struct RequestParams {
        /// Request metadata: in 2026-07-28 the protocol version and client capabilities.
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// Params that carry nothing but `_meta` (`NotificationParams`), for notifications
    /// such as `notifications/initialized` and the list-changed notifications.
    #[derive(Default)]
    pub struct NotificationParams {
        /// Notification metadata, such as the subscription id on a listen stream.
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// Params of the list requests (`PaginatedRequestParams`).
    #[derive(Default)]
    pub struct PaginatedRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// Where to continue; absent for the first page.
        opt cursor: Cursor = "cursor",
    }
}

wire_struct! {
    /// A result with no members of its own (`EmptyResult`), such as the answer to
    /// `ping` or to a tasks-extension `tasks/cancel`.
    #[derive(Default)]
    pub struct EmptyResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28; absent before.
        opt result_type: ResultType = "resultType",
    }
}

impl EmptyResult {
    /// An empty result marked `"resultType": "complete"`, as 2026-07-28 requires.
    pub fn complete() -> Self {
        EmptyResult { result_type: Some(ResultType::Complete), ..Default::default() }
    }
}

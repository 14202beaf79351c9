//! The method table: every MCP method of every revision (2024-11-05 to 2026-07-28)
//! and of the tasks and skills extensions, as a marker type, a [`MethodName`], and a variant of
//! the closed enums [`ClientRequest`], [`ServerRequest`], [`ClientNotification`]
//! and [`ServerNotification`].
//!
//! The method string of an incoming message is read once, here, into a
//! [`MethodName`]; the params are read straight from the borrowed raw JSON into the
//! method's params type. An unknown method is an [`UnknownMethod`] (JSON-RPC
//! -32601) and params that do not fit are a [`ParamsError`] (-32602).
//!
//! This module does not know which revision has which method (the era modules and
//! the feature table do): the enums are the union of all revisions per direction.
//! Invariant: every method string is spelled exactly once, in [`MethodName`].

use crate::jsonrpc::{RawMessage, RequestId};
use crate::method::{Notification, NotificationFrame, Request, RequestFrame};
use crate::model::common::{EmptyResult, NotificationParams, PaginatedRequestParams, RequestParams};
use crate::model::{
    completion, elicitation, lifecycle, logging, mrtr, prompts, resources, roots, sampling, skills, subscriptions,
    tasks, tools, utilities,
};
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;
use std::str::FromStr;

mod frame;
pub use frame::FrameError;
use frame::TypedCall;

/// A method name the peer sent that no revision defines (or that this direction
/// does not accept): JSON-RPC -32601.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("method not found: {method}")]
pub struct UnknownMethod {
    /// The method string as received.
    pub method: String,
}

/// Params that do not fit the method's params type: JSON-RPC -32602.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid params for {method}: {detail}")]
pub struct ParamsError {
    /// The method whose params were wrong.
    pub method: MethodName,
    /// What was wrong, from the decoder.
    pub detail: String,
}

/// A response's result that does not fit the pending request's result type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed result for {method}: {detail}")]
pub struct ResultError {
    /// The method of the pending request.
    pub method: MethodName,
    /// What was wrong, from the decoder.
    pub detail: String,
}

/// Why a raw message could not be read as a typed request or notification.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MethodError {
    /// The method is unknown here (-32601).
    #[error(transparent)]
    UnknownMethod(#[from] UnknownMethod),
    /// The params are invalid (-32602).
    #[error(transparent)]
    InvalidParams(#[from] ParamsError),
    /// The message is not of the kind asked for (a response where a request was expected).
    #[error("expected a {expected}")]
    WrongKind {
        /// `"request"` or `"notification"`.
        expected: &'static str,
    },
}

impl MethodError {
    /// The JSON-RPC error code this maps to; the mapping itself lives in `error.rs`,
    /// the one place errors become wire codes.
    pub fn code(&self) -> i64 {
        crate::error::McpError::from(self).code().as_i64()
    }
}

macro_rules! method_names {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, )*) => {
        /// Every method name of every revision and of the tasks and skills extensions.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MethodName {
            $( $(#[$doc])* $variant, )*
        }

        impl MethodName {
            /// Every method name, in table order.
            pub const ALL: &'static [MethodName] = &[$(MethodName::$variant),*];

            /// The wire string.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( MethodName::$variant => $name, )*
                }
            }

            /// Reads a wire string.
            pub fn parse(s: &str) -> Option<MethodName> {
                match s {
                    $( $name => Some(MethodName::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

method_names! {
    /// `initialize` (up to 2025-11-25).
    Initialize = "initialize",
    /// `ping` (up to 2025-11-25).
    Ping = "ping",
    /// `server/discover` (2026-07-28).
    Discover = "server/discover",
    /// `tools/list`.
    ListTools = "tools/list",
    /// `tools/call`.
    CallTool = "tools/call",
    /// `resources/list`.
    ListResources = "resources/list",
    /// `resources/templates/list`.
    ListResourceTemplates = "resources/templates/list",
    /// `resources/read`.
    ReadResource = "resources/read",
    /// `resources/subscribe` (up to 2025-11-25).
    Subscribe = "resources/subscribe",
    /// `resources/unsubscribe` (up to 2025-11-25).
    Unsubscribe = "resources/unsubscribe",
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen = "subscriptions/listen",
    /// `prompts/list`.
    ListPrompts = "prompts/list",
    /// `prompts/get`.
    GetPrompt = "prompts/get",
    /// `completion/complete`.
    Complete = "completion/complete",
    /// `logging/setLevel` (up to 2025-11-25).
    SetLevel = "logging/setLevel",
    /// `sampling/createMessage`.
    CreateMessage = "sampling/createMessage",
    /// `roots/list`.
    ListRoots = "roots/list",
    /// `elicitation/create` (2025-06-18 on).
    Elicit = "elicitation/create",
    /// `tasks/get` (2025-11-25 and the tasks extension).
    GetTask = "tasks/get",
    /// `tasks/result` (2025-11-25).
    GetTaskPayload = "tasks/result",
    /// `tasks/list` (2025-11-25).
    ListTasks = "tasks/list",
    /// `tasks/cancel` (2025-11-25 and the tasks extension).
    CancelTask = "tasks/cancel",
    /// `tasks/update` (the tasks extension).
    UpdateTask = "tasks/update",
    /// `skills/list` (the skills extension).
    ListSkills = "skills/list",
    /// `skills/get` (the skills extension).
    GetSkill = "skills/get",
    /// `resources/directory/read` (the skills extension, with `directoryRead`).
    ReadDirectory = "resources/directory/read",
    /// `notifications/initialized` (up to 2025-11-25).
    Initialized = "notifications/initialized",
    /// `notifications/cancelled`.
    Cancelled = "notifications/cancelled",
    /// `notifications/progress`.
    Progress = "notifications/progress",
    /// `notifications/message`.
    LoggingMessage = "notifications/message",
    /// `notifications/resources/updated`.
    ResourceUpdated = "notifications/resources/updated",
    /// `notifications/resources/list_changed`.
    ResourceListChanged = "notifications/resources/list_changed",
    /// `notifications/tools/list_changed`.
    ToolListChanged = "notifications/tools/list_changed",
    /// `notifications/prompts/list_changed`.
    PromptListChanged = "notifications/prompts/list_changed",
    /// `notifications/roots/list_changed` (up to 2025-11-25).
    RootsListChanged = "notifications/roots/list_changed",
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete = "notifications/elicitation/complete",
    /// `notifications/tasks/status` (2025-11-25).
    ExperimentalTaskStatus = "notifications/tasks/status",
    /// `notifications/tasks` (the tasks extension).
    TaskStatus = "notifications/tasks",
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged",
}

impl MethodName {
    /// Whether this names a notification.
    pub fn is_notification(self) -> bool {
        self.as_str().starts_with("notifications/")
    }
}

impl FromStr for MethodName {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<Self, UnknownMethod> {
        MethodName::parse(s).ok_or_else(|| UnknownMethod { method: s.to_owned() })
    }
}

impl fmt::Display for MethodName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MethodName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

macro_rules! requests {
    ($( $(#[$doc:meta])* $marker:ident: $params:ty => $result:ty $(, read_with $reader:path)?; )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug)]
            pub enum $marker {}

            impl Request for $marker {
                const METHOD: MethodName = MethodName::$marker;
                type Params = $params;
                type Result = $result;
                $(
                    fn read_result(text: &str) -> serde_json::Result<Self::Result> {
                        $reader(text)
                    }
                )?
            }
        )*
    };
}

macro_rules! notifications {
    ($( $(#[$doc:meta])* $marker:ident: $params:ty; )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug)]
            pub enum $marker {}

            impl Notification for $marker {
                const METHOD: MethodName = MethodName::$marker;
                type Params = $params;
            }
        )*
    };
}

requests! {
    /// `initialize`: start a session (up to 2025-11-25).
    Initialize: lifecycle::InitializeRequestParams => lifecycle::InitializeResult;
    /// `ping`: check the peer is alive (up to 2025-11-25).
    Ping: RequestParams => EmptyResult;
    /// `server/discover`: learn the server's versions and capabilities (2026-07-28).
    Discover: RequestParams => lifecycle::DiscoverResult;
    /// `tools/list`.
    ListTools: PaginatedRequestParams => tools::ListToolsResult;
    /// `tools/call`; may answer `input_required` or a task.
    CallTool: tools::CallToolRequestParams => mrtr::Outcome<tools::CallToolResult>,
        read_with mrtr::Outcome::from_text;
    /// `resources/list`.
    ListResources: PaginatedRequestParams => resources::ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates: PaginatedRequestParams => resources::ListResourceTemplatesResult;
    /// `resources/read`; may answer `input_required`.
    ReadResource: resources::ReadResourceRequestParams => mrtr::Outcome<resources::ReadResourceResult>,
        read_with mrtr::Outcome::from_text;
    /// `resources/subscribe` (up to 2025-11-25).
    Subscribe: resources::ResourceSubscriptionParams => EmptyResult;
    /// `resources/unsubscribe` (up to 2025-11-25).
    Unsubscribe: resources::ResourceSubscriptionParams => EmptyResult;
    /// `subscriptions/listen`: open a notification stream (2026-07-28).
    SubscriptionsListen: subscriptions::SubscriptionsListenRequestParams => subscriptions::SubscriptionsListenResult;
    /// `prompts/list`.
    ListPrompts: PaginatedRequestParams => prompts::ListPromptsResult;
    /// `prompts/get`; may answer `input_required`.
    GetPrompt: prompts::GetPromptRequestParams => mrtr::Outcome<prompts::GetPromptResult>,
        read_with mrtr::Outcome::from_text;
    /// `completion/complete`.
    Complete: completion::CompleteRequestParams => completion::CompleteResult;
    /// `logging/setLevel` (up to 2025-11-25).
    SetLevel: logging::SetLevelRequestParams => EmptyResult;
    /// `sampling/createMessage` (a request up to 2025-11-25, an input request after).
    CreateMessage: sampling::CreateMessageRequestParams => sampling::CreateMessageResult;
    /// `roots/list` (a request up to 2025-11-25, an input request after).
    ListRoots: RequestParams => roots::ListRootsResult;
    /// `elicitation/create` (a request in 2025-06-18 and 2025-11-25, an input request after).
    Elicit: elicitation::ElicitRequestParams => elicitation::ElicitResult;
    /// `tasks/get`.
    GetTask: tasks::TaskIdParams => tasks::GetTaskResult;
    /// `tasks/result` (2025-11-25).
    GetTaskPayload: tasks::TaskIdParams => tasks::GetTaskPayloadResult;
    /// `tasks/list` (2025-11-25).
    ListTasks: PaginatedRequestParams => tasks::ListTasksResult;
    /// `tasks/cancel`.
    CancelTask: tasks::TaskIdParams => tasks::CancelTaskResult;
    /// `tasks/update` (the tasks extension).
    UpdateTask: tasks::UpdateTaskRequestParams => EmptyResult;
    /// `skills/list` (the skills extension).
    ListSkills: PaginatedRequestParams => skills::ListSkillsResult;
    /// `skills/get` (the skills extension).
    GetSkill: skills::GetSkillRequestParams => skills::GetSkillResult;
    /// `resources/directory/read` (the skills extension).
    ReadDirectory: skills::ReadDirectoryRequestParams => skills::ReadDirectoryResult;
}

notifications! {
    /// `notifications/initialized` (up to 2025-11-25).
    Initialized: NotificationParams;
    /// `notifications/cancelled`.
    Cancelled: utilities::CancelledNotificationParams;
    /// `notifications/progress`.
    Progress: utilities::ProgressNotificationParams;
    /// `notifications/message`.
    LoggingMessage: logging::LoggingMessageNotificationParams;
    /// `notifications/resources/updated`.
    ResourceUpdated: subscriptions::ResourceUpdatedNotificationParams;
    /// `notifications/resources/list_changed`.
    ResourceListChanged: NotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChanged: NotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChanged: NotificationParams;
    /// `notifications/roots/list_changed` (up to 2025-11-25).
    RootsListChanged: NotificationParams;
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete: elicitation::ElicitationCompleteNotificationParams;
    /// `notifications/tasks/status` (2025-11-25).
    ExperimentalTaskStatus: tasks::TaskStatusNotificationParams;
    /// `notifications/tasks` (the tasks extension).
    TaskStatus: tasks::TaskStatusNotificationParams;
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged: subscriptions::SubscriptionsAcknowledgedNotificationParams;
}

/// Reads params from the borrowed raw JSON. Absent params read as `{}`, so methods
/// whose params are all optional accept a missing `params`.
fn read_params<P: DeserializeOwned>(method: MethodName, params: Option<&RawValue>) -> Result<P, ParamsError> {
    let text = params.map_or("{}", RawValue::get);
    serde_json::from_str(text).map_err(|e| ParamsError { method, detail: e.to_string() })
}

macro_rules! message_enum {
    // A variant marked `(boxed)` holds its params in a `Box`: the enum is as large as its
    // largest variant, and every message is moved several times between its decode and its
    // handler.
    (@ty boxed $t:ty) => { Box<$t> };
    (@ty $t:ty) => { $t };
    (@val boxed $e:expr) => { Box::new($e) };
    (@val $e:expr) => { $e };
    (
        $(#[$doc:meta])*
        pub enum $name:ident: $trait:ident, $kind:literal {
            $( $marker:ident $(($boxed:ident))?, )*
        }
    ) => {
        $(#[$doc])*
        // Messages are decoded once and moved a few times; boxing every big variant would
        // add an allocation to every decode of the common ones, so only the rare and
        // largest are (`(boxed)`).
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $(
                #[doc = concat!("`", stringify!($marker), "`.")]
                $marker(message_enum!(@ty $($boxed)? <$marker as $trait>::Params)),
            )*
        }

        impl $name {
            /// The method name.
            pub fn method(&self) -> MethodName {
                match self {
                    $( $name::$marker(_) => <$marker as $trait>::METHOD, )*
                }
            }

            /// Reads a method string and its raw params. Fails with [`UnknownMethod`]
            /// when the method is not one of this enum's, and with [`ParamsError`]
            /// when the params do not fit.
            pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, MethodError> {
                let name = MethodName::from_str(method)?;
                match name {
                    $( MethodName::$marker => Ok($name::$marker(message_enum!(@val $($boxed)? read_params(name, params)?))), )*
                    #[allow(unreachable_patterns)]
                    _ => Err(UnknownMethod { method: method.to_owned() }.into()),
                }
            }
        }

        impl TypedCall for $name {
            fn read_params<'de, D: serde::Deserializer<'de>>(method: MethodName, d: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                match method {
                    $( MethodName::$marker => {
                        <<$marker as $trait>::Params as serde::Deserialize>::deserialize(d)
                            .map(|p| $name::$marker(message_enum!(@val $($boxed)? p)))
                    } )*
                    #[allow(unreachable_patterns)]
                    _ => Err(D::Error::custom("method not accepted here")),
                }
            }
        }

        impl Serialize for $name {
            /// Writes the params only; the frame writers add the envelope.
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( $name::$marker(p) => p.serialize(s), )*
                }
            }
        }
    };
}

message_enum! {
    /// A request a client sends to a server, in any revision.
    /// `Initialize`'s params are boxed: 1,400 bytes of them (the client's capabilities) would
    /// size every request, moved several times on its way to its handler. So are
    /// `CallTool`'s (384 bytes, the most common request's), which were copied about 15
    /// times per call on the way, and every variant's larger than a paginated list's
    /// (`completion/complete`'s were 488 bytes): a request is 176 bytes, whatever its method.
    pub enum ClientRequest: Request, "request" {
        Initialize(boxed), Ping, Discover, ListTools, CallTool(boxed), ListResources, ListResourceTemplates,
        ReadResource(boxed), Subscribe, Unsubscribe, SubscriptionsListen(boxed), ListPrompts, GetPrompt(boxed),
        Complete(boxed), SetLevel, GetTask, GetTaskPayload, ListTasks, CancelTask, UpdateTask(boxed), ListSkills,
        GetSkill, ReadDirectory(boxed),
    }
}

message_enum! {
    /// A request a server sends to a client (up to 2025-11-25; 2026-07-28 has none).
    pub enum ServerRequest: Request, "request" {
        Ping, CreateMessage, ListRoots, Elicit, GetTask, GetTaskPayload, ListTasks, CancelTask,
    }
}

message_enum! {
    /// A notification a client sends to a server, in any revision.
    pub enum ClientNotification: Notification, "notification" {
        Initialized, Cancelled, Progress, RootsListChanged, ExperimentalTaskStatus,
    }
}

message_enum! {
    /// A notification a server sends to a client, in any revision.
    pub enum ServerNotification: Notification, "notification" {
        Cancelled, Progress, LoggingMessage, ResourceUpdated, ResourceListChanged, ToolListChanged,
        PromptListChanged, ElicitationComplete, ExperimentalTaskStatus, TaskStatus, SubscriptionsAcknowledged,
    }
}

macro_rules! request_codec {
    ($($name:ident),*) => {$(
        impl $name {
            /// Reads a typed request, with its id, from a raw message.
            pub fn from_raw(msg: &RawMessage<'_>) -> Result<(RequestId, Self), MethodError> {
                match msg {
                    RawMessage::Request { id, method, params } => Ok((id.clone(), Self::decode(method, *params)?)),
                    _ => Err(MethodError::WrongKind { expected: "request" }),
                }
            }

            /// Decodes a whole request frame. Frames in the usual member order are read
            /// in one pass; anything else takes the `decode_raw` + [`Self::from_raw`]
            /// path, whose errors and results this always matches.
            pub fn decode_frame(bytes: &[u8]) -> Result<(RequestId, Self), FrameError> {
                if let Some((Some(id), call)) = frame::fast::<Self>(bytes) {
                    return Ok((id, call));
                }
                Ok(Self::from_raw(&frame::slow(bytes)?)?)
            }

            /// Encodes the request as a JSON-RPC frame with the given id.
            pub fn to_vec(&self, id: &RequestId) -> Vec<u8> {
                crate::method::to_vec(&RequestFrame { id, method: self.method().as_str(), params: self })
            }
        }
    )*};
}

macro_rules! notification_codec {
    ($($name:ident),*) => {$(
        impl $name {
            /// Reads a typed notification from a raw message.
            pub fn from_raw(msg: &RawMessage<'_>) -> Result<Self, MethodError> {
                match msg {
                    RawMessage::Notification { method, params } => Self::decode(method, *params),
                    _ => Err(MethodError::WrongKind { expected: "notification" }),
                }
            }

            /// Decodes a whole notification frame, in one pass when the members come in
            /// the usual order (see the request enums' `decode_frame`).
            pub fn decode_frame(bytes: &[u8]) -> Result<Self, FrameError> {
                if let Some((None, call)) = frame::fast::<Self>(bytes) {
                    return Ok(call);
                }
                Ok(Self::from_raw(&frame::slow(bytes)?)?)
            }

            /// Encodes the notification as a JSON-RPC frame.
            pub fn to_vec(&self) -> Vec<u8> {
                crate::method::to_vec(&NotificationFrame { method: self.method().as_str(), params: self })
            }
        }
    )*};
}

request_codec!(ClientRequest, ServerRequest);
notification_codec!(ClientNotification, ServerNotification);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_name_is_spelled_once_and_parses_back() {
        let mut seen = std::collections::HashSet::new();
        for &m in MethodName::ALL {
            assert!(seen.insert(m.as_str()), "{m} appears twice");
            assert_eq!(m.as_str().parse::<MethodName>().unwrap(), m);
        }
        assert_eq!(MethodName::ALL.len(), 39);
    }

    #[test]
    fn every_method_belongs_to_at_least_one_direction() {
        let known = |e: MethodError| !matches!(e, MethodError::UnknownMethod(_));
        for &m in MethodName::ALL {
            let s = m.as_str();
            let found = ClientRequest::decode(s, None).map_or_else(known, |r| r.method() == m)
                || ServerRequest::decode(s, None).map_or_else(known, |r| r.method() == m)
                || ClientNotification::decode(s, None).map_or_else(known, |n| n.method() == m)
                || ServerNotification::decode(s, None).map_or_else(known, |n| n.method() == m);
            assert!(found, "{m} is in no message enum");
        }
    }

    #[test]
    fn unknown_methods_and_bad_params_are_typed_errors() {
        let e = ClientRequest::decode("tools/frobnicate", None).unwrap_err();
        assert_eq!(e.code(), -32601);
        // A server-to-client method is unknown to the client-request enum.
        let e = ClientRequest::decode("sampling/createMessage", None).unwrap_err();
        assert_eq!(e.code(), -32601);
        let raw = RawValue::from_string(r#"{"arguments":{}}"#.into()).unwrap();
        let e = ClientRequest::decode("tools/call", Some(&raw)).unwrap_err();
        assert_eq!(e.code(), -32602);
        assert!(matches!(ClientRequest::decode("tools/list", None), Ok(ClientRequest::ListTools(_))));
    }

    #[test]
    fn a_client_request_is_no_larger_than_a_paginated_list() {
        // Every request is moved a dozen times between its bytes and its handler: a variant
        // larger than this (unboxed params) would make every method's moves that large.
        let size = std::mem::size_of::<ClientRequest>();
        assert!(size <= 176, "a ClientRequest grew to {size} bytes");
    }
}

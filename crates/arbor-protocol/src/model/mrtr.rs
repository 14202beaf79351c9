//! Multi round-trip requests (2026-07-28): the `input_required` result, the input
//! requests it carries, the answers a client sends back on retry, and
//! [`Outcome`], the result of a method that may answer `input_required`.
//!
//! Input requests are not JSON-RPC requests: they have a `method` and `params` but
//! no `jsonrpc` and no `id`. This module does not check that a retry echoes
//! `requestState` byte for byte or that the client declared the capabilities an
//! input request needs; the client and server layers do.
//! Invariant: an absent `resultType` decodes as a complete result.

use crate::meta::Meta;
use crate::model::common::{RequestParams, ResultType};
use crate::model::elicitation::{ElicitRequestParams, ElicitResult};
use crate::model::roots::ListRootsResult;
use crate::model::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::model::tasks::{CreateTaskResult, ExperimentalCreateTaskResult};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

wire_struct! {
    /// An input request asking the client's model for a completion.
    pub struct CreateMessageRequest tag "method" = "sampling/createMessage" {
        /// The sampling request.
        req params: CreateMessageRequestParams = "params",
    }
}

wire_struct! {
    /// An input request asking for the client's roots.
    #[derive(Default)]
    pub struct ListRootsRequest tag "method" = "roots/list" {
        /// Only `_meta`, if anything.
        opt params: RequestParams = "params",
    }
}

wire_struct! {
    /// An input request asking the user for input.
    pub struct ElicitRequest tag "method" = "elicitation/create" {
        /// The elicitation.
        req params: ElicitRequestParams = "params",
    }
}

wire_tagged_enum! {
    /// One entry of `inputRequests`, tagged by `method`.
    pub enum InputRequest tag "method" {
        /// `sampling/createMessage`.
        CreateMessage(CreateMessageRequest) = "sampling/createMessage",
        /// `roots/list`.
        ListRoots(ListRootsRequest) = "roots/list",
        /// `elicitation/create`.
        Elicit(ElicitRequest) = "elicitation/create",
    }
}

/// The server's input requests, by a key it chose.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// One entry of `inputResponses`: the client's answer to the input request with the
/// same key. The answers carry no tag; they are told apart by their members
/// (`action` for elicitation, `roots` for roots, otherwise sampling).
#[allow(clippy::large_enum_variant)] // Boxing would cost an allocation per decode.
#[derive(Clone, Debug, PartialEq)]
pub enum InputResponse {
    /// The answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// The answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// The answer to `elicitation/create`.
    Elicit(ElicitResult),
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::CreateMessage(r) => r.serialize(s),
            InputResponse::ListRoots(r) => r.serialize(s),
            InputResponse::Elicit(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::model::wire::from_buffered(d, |map| {
            let (action, roots) = (map.contains_key("action"), map.contains_key("roots"));
            let v = Value::Object(map);
            if action {
                ElicitResult::deserialize(v).map(InputResponse::Elicit)
            } else if roots {
                ListRootsResult::deserialize(v).map(InputResponse::ListRoots)
            } else {
                CreateMessageResult::deserialize(v).map(InputResponse::CreateMessage)
            }
        })
    }
}

/// The client's answers, by the keys of the input requests.
pub type InputResponses = BTreeMap<String, InputResponse>;

wire_struct! {
    /// The server needs input before it can answer (`resultType: "input_required"`).
    /// At least one of `inputRequests` and `requestState` must be present.
    pub struct InputRequiredResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"input_required"`.
        req result_type: ResultType = "resultType",
        /// What the client must answer before retrying.
        opt input_requests: InputRequests = "inputRequests",
        /// Opaque state the retry must echo byte for byte.
        opt request_state: String = "requestState",
    }
}

impl InputRequiredResult {
    /// An `input_required` result with the given requests and state.
    pub fn new(input_requests: Option<InputRequests>, request_state: Option<String>) -> Self {
        InputRequiredResult {
            meta: None,
            result_type: ResultType::InputRequired,
            input_requests,
            request_state,
            extra: Default::default(),
        }
    }
}

/// The result of a method that may answer with something other than its own
/// result: `input_required` (2026-07-28: `tools/call`, `prompts/get`,
/// `resources/read`) or a task (2025-11-25 tasks and the tasks extension).
///
/// The variant is chosen by `resultType`, never by trial: `"input_required"` and
/// `"task"` pick their variants, and a complete (or absent) `resultType` picks
/// `Complete`, except that a legacy result with no `resultType` whose only
/// meaningful member is a `task` object is a 2025-11-25 task.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<T> {
    /// The method's own result.
    Complete(T),
    /// The server needs input first.
    InputRequired(InputRequiredResult),
    /// The request became a task (tasks extension).
    Task(CreateTaskResult),
    /// The request became a task (2025-11-25 experimental tasks).
    ExperimentalTask(ExperimentalCreateTaskResult),
}

impl<T: Serialize> Serialize for Outcome<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Complete(r) => r.serialize(s),
            Outcome::InputRequired(r) => r.serialize(s),
            Outcome::Task(r) => r.serialize(s),
            Outcome::ExperimentalTask(r) => r.serialize(s),
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Outcome<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::model::wire::from_buffered(d, |map| {
            let kind = map.get("resultType").and_then(Value::as_str).map(ResultType::parse);
            let legacy_task = kind.is_none() && map.get("task").is_some_and(Value::is_object);
            let v = Value::Object(map);
            match kind {
                Some(ResultType::InputRequired) => InputRequiredResult::deserialize(v).map(Outcome::InputRequired),
                Some(ResultType::Task) => CreateTaskResult::deserialize(v).map(Outcome::Task),
                None if legacy_task => ExperimentalCreateTaskResult::deserialize(v).map(Outcome::ExperimentalTask),
                _ => T::deserialize(v).map(Outcome::Complete),
            }
        })
    }
}

impl<T> From<T> for Outcome<T> {
    fn from(result: T) -> Self {
        Outcome::Complete(result)
    }
}

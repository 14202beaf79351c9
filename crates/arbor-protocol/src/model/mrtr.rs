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
use crate::model::wire::Key;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

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
    /// Captures the result as raw JSON, reads only its `resultType` (and whether it
    /// has a `task` object), then decodes the chosen type from the raw text in one
    /// streaming pass. This needs one of serde_json's deserializers (text, bytes,
    /// reader or `Value`), which is what every JSON-RPC response goes through.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Outcome::from_text(raw.get()).map_err(D::Error::custom)
    }
}

impl<T: serde::de::DeserializeOwned> Outcome<T> {
    /// Reads an outcome from JSON text: a probe for `resultType` (which stops as soon
    /// as it finds it), then one streaming decode of the chosen type.
    pub fn from_text(text: &str) -> serde_json::Result<Self> {
        let probe = Probe::read(text)?;
        match probe.result_type {
            Some(ResultType::InputRequired) => serde_json::from_str(text).map(Outcome::InputRequired),
            Some(ResultType::Task) => serde_json::from_str(text).map(Outcome::Task),
            None if probe.task_object => serde_json::from_str(text).map(Outcome::ExperimentalTask),
            _ => serde_json::from_str(text).map(Outcome::Complete),
        }
    }
}

/// What [`Outcome`] needs to know before it decodes: the top-level `resultType`,
/// and whether a `task` member holds an object. Everything else is skipped unread.
#[derive(Default)]
struct Probe {
    result_type: Option<ResultType>,
    task_object: bool,
}

impl Probe {
    /// Reads the probe, stopping at `resultType`: the decode that follows checks the
    /// rest of the text anyway.
    fn read(text: &str) -> serde_json::Result<Probe> {
        let mut probe = Probe::default();
        let mut de = serde_json::Deserializer::from_str(text);
        match de.deserialize_map(ProbeVisitor(&mut probe)) {
            Ok(()) => Ok(probe),
            // The visitor stops early, with this error, once it has the result type.
            Err(_) if probe.result_type.is_some() => Ok(probe),
            Err(e) => Err(e),
        }
    }
}

struct ProbeVisitor<'a>(&'a mut Probe);

impl<'de> Visitor<'de> for ProbeVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a result object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match &*key.0 {
                "resultType" => {
                    self.0.result_type = map.next_value::<Option<ResultType>>()?;
                    if self.0.result_type.is_some() {
                        return Err(serde::de::Error::custom("found resultType"));
                    }
                }
                "task" => self.0.task_object = map.next_value::<IsObject>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Whether a JSON value is an object; its contents are skipped unread.
struct IsObject(bool);

impl<'de> Deserialize<'de> for IsObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IsObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IsObject, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IsObject(true))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<IsObject, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IsObject(false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_i64<E>(self, _: i64) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_str<E>(self, _: &str) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_unit<E>(self) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
        }
        d.deserialize_any(V)
    }
}

impl<T> From<T> for Outcome<T> {
    fn from(result: T) -> Self {
        Outcome::Complete(result)
    }
}

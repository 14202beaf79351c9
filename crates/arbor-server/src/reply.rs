//! What a handler answers: a complete result, or "input required".
//!
//! [`Reply::InputRequired`] is the one API for asking the client for input (elicitation,
//! sampling, roots) in both eras. In 2026-07-28 the runtime answers the MRTR
//! `input_required` result, with `state` sealed into an integrity-protected
//! `requestState`; in the legacy era the runtime itself sends the server-to-client
//! requests and calls the handler again with the answers. Either way the handler reads
//! the answers from [`RequestContext::input_responses`](crate::RequestContext::input_responses)
//! and its state from [`RequestContext::input_state`](crate::RequestContext::input_state).
//!
//! This module only describes the answer; sealing, sending and checking live in the runtime.

use arbor_protocol::model::elicitation::ElicitRequestParams;
use arbor_protocol::model::mrtr::{CreateMessageRequest, ElicitRequest, InputRequest, InputRequests, ListRootsRequest};
use arbor_protocol::model::sampling::CreateMessageRequestParams;
use serde_json::Value;

/// A handler's answer to a request that may need input from the client.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply<T> {
    /// The final result.
    Complete(T),
    /// The client must answer these input requests first; the handler is called again
    /// with the answers.
    InputRequired(InputRequired),
}

impl<T> From<T> for Reply<T> {
    fn from(result: T) -> Self {
        Reply::Complete(result)
    }
}

/// Input requests and the opaque state to get back with their answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputRequired {
    /// The requests, by a key the handler chooses; answers come back under the same keys.
    pub requests: InputRequests,
    /// State the handler wants back on the next call. The client cannot read or alter it
    /// undetected: the runtime seals it.
    pub state: Option<Value>,
}

impl InputRequired {
    /// No requests yet.
    pub fn new() -> Self {
        InputRequired::default()
    }

    /// Asks the user for input (`elicitation/create`) under `key`.
    pub fn elicit(mut self, key: impl Into<String>, params: ElicitRequestParams) -> Self {
        self.requests.insert(key.into(), InputRequest::Elicit(ElicitRequest::new(params)));
        self
    }

    /// Asks the client's model for a completion (`sampling/createMessage`) under `key`.
    pub fn sample(mut self, key: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        self.requests.insert(key.into(), InputRequest::CreateMessage(CreateMessageRequest::new(params)));
        self
    }

    /// Asks for the client's roots (`roots/list`) under `key`.
    pub fn roots(mut self, key: impl Into<String>) -> Self {
        self.requests.insert(key.into(), InputRequest::ListRoots(ListRootsRequest::default()));
        self
    }

    /// Sets the state to receive back with the answers.
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }
}

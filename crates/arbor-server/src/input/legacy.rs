//! Input required in the legacy era (2024-11-05 … 2025-11-25): the runtime asks the
//! client itself and calls the handler again, inside the same request task.
//!
//! [`drive`] runs a handler to completion: each time it answers input required, the
//! requests are checked against the capabilities negotiated at `initialize` and the
//! negotiated revision, sent to the client concurrently through a
//! [`ClientRequester`], and their answers handed to the next call with the handler's
//! state. The state never leaves the server, so nothing is sealed. This module does
//! not own the connection or ids: the requester does. It holds no timer either: it
//! runs in the request task (or in a 2025-11-25 task's run, `tasks::legacy_input`, with
//! a requester that reaches the task's session), whose deadline and cancellation drop
//! it, and dropping it drops every request still waiting (the requester must forget them
//! on drop).
//!
//! A JSON-RPC error from the client (or a failure to reach it) ends the request with
//! -32603 carrying the client's error in `data`: the handler API has no place for an
//! error instead of an answer, and the 2026-07-28 era, where a client that cannot
//! answer simply does not retry, has no such case for the same handler to handle. A
//! user who declines or cancels is not an error: the handler sees that `ElicitResult`.
//!
//! Invariant: the handler is called at most `max_rounds + 1` times, and each call after
//! the first gets exactly the answers to the previous call's requests, keyed as asked.

use super::needs::{self, Kind, Refusal};
use crate::reply::Reply;
use arbor_protocol::era::lower;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::elicitation::ElicitRequestParams;
use arbor_protocol::model::mrtr::{InputRequest, InputRequests, InputResponse, InputResponses};
use arbor_protocol::version::{Feature, ProtocolVersion};
use serde_json::{json, Value};
use std::future::Future;

/// Sends one server-to-client request and waits for its answer. Implemented by the
/// runtime on the connection: `elicitation/create`, `sampling/createMessage` or
/// `roots/list` goes out with a fresh id, and the client's result comes back decoded
/// as the matching [`InputResponse`].
///
/// Dropping the returned future must forget the pending request: [`drive`] drops it
/// when the request is cancelled, times out, or another request of its round failed.
#[allow(dead_code)] // Implemented and called by the runtime's request execution.
pub(crate) trait ClientRequester: Send + Sync {
    /// Sends `request` and waits for the client's result. `Err` is the client's
    /// JSON-RPC error, or a failure to reach the client.
    fn request(&self, request: InputRequest) -> impl Future<Output = Result<InputResponse, McpError>> + Send;
}

/// Calls the handler through `invoke` until it completes, answering each "input
/// required" by asking the client.
///
/// `invoke` gets the previous round's answers and the handler's state (`None`, `None`
/// on the first call). Errors, all -32603 since the client did nothing wrong in its
/// request: an input request the negotiated revision does not have or cannot express
/// (a multi-select form field before 2025-11-25, say), or a capability
/// the client did not declare at `initialize` (with `data.requiredCapabilities`); more
/// than `max_rounds` rounds of input; an error from the client (in `data.error`); an
/// input required with no requests and no state; a revision without server-to-client
/// requests. The handler's own errors pass through unchanged.
#[allow(dead_code)] // Called by the runtime's request execution.
pub(crate) async fn drive<T, F, Fut>(
    mut invoke: F,
    requester: &impl ClientRequester,
    caps: &ClientCapabilities,
    version: ProtocolVersion,
    max_rounds: usize,
) -> Result<T, McpError>
where
    F: FnMut(Option<InputResponses>, Option<Value>) -> Fut,
    Fut: Future<Output = Result<Reply<T>, McpError>>,
{
    let (mut responses, mut state) = (None, None);
    let mut rounds = 0usize;
    loop {
        let input = match invoke(responses.take(), state.take()).await? {
            Reply::Complete(result) => return Ok(result),
            Reply::InputRequired(input) => input,
        };
        let input_state = input.state.filter(|s| !s.is_null());
        if input.requests.is_empty() && input_state.is_none() {
            return Err(McpError::internal("the handler answered input required with no input requests and no state"));
        }
        if rounds == max_rounds {
            return Err(McpError::internal(format!(
                "the handler still needed input after {max_rounds} rounds, the most one request may take"
            )));
        }
        rounds += 1;
        if !version.supports(Feature::ServerToClientRequests) {
            return Err(McpError::internal(format!(
                "protocol revision {} has no server-to-client requests; input is asked with input_required",
                version.as_str()
            )));
        }
        match needs::check(&input.requests, caps, Some(version)) {
            Ok(()) => {}
            Err(Refusal::Undeclared { required, detail }) => {
                return Err(McpError::Internal {
                    message: format!("Cannot ask the client for input: {detail}"),
                    data: Some(json!({ "requiredCapabilities": required })),
                })
            }
            Err(Refusal::Unsupported { detail }) => {
                return Err(McpError::internal(format!("Cannot ask the client for input: {detail}")))
            }
        }
        // Every request of the round is made fit for the revision before any is sent, so a
        // question the revision cannot ask refuses the round with nothing sent.
        let mut requests = input.requests;
        for (key, request) in requests.iter_mut() {
            lower::input_request(key, request, version)?;
        }
        // A state-only answer ("try again") is re-invoked at once with its state, as a
        // modern client may retry at once; the round limit bounds it.
        responses = if requests.is_empty() { None } else { Some(ask_all(requester, requests, version).await?) };
        state = input_state;
    }
}

/// Sends a round's requests concurrently and collects the answers by key. The first
/// failure ends the round, dropping (and so abandoning) the requests still waiting.
async fn ask_all(
    requester: &impl ClientRequester,
    requests: InputRequests,
    version: ProtocolVersion,
) -> Result<InputResponses, McpError> {
    let asks = requests.into_iter().map(|(key, request)| async move {
        let kind = Kind::of_request(&request);
        let request = for_revision(request, version);
        match requester.request(request).await {
            Ok(answer) if Kind::of_response(&answer) == kind => Ok((key, answer)),
            Ok(answer) => Err(McpError::internal(format!(
                "the client answered {} for input request `{key}` with {} instead of {}",
                kind.method(),
                Kind::of_response(&answer).answer(),
                kind.answer()
            ))),
            Err(error) => Err(client_failed(&key, kind, &error)),
        }
    });
    Ok(futures::future::try_join_all(asks).await?.into_iter().collect())
}

/// Adapts an input request to the negotiated revision: 2025-11-25 requires an
/// `elicitationId` on URL-mode elicitation, which 2026-07-28 handlers do not set.
fn for_revision(mut request: InputRequest, version: ProtocolVersion) -> InputRequest {
    if let InputRequest::Elicit(elicit) = &mut request {
        if let ElicitRequestParams::Url(url) = &mut elicit.params {
            if url.elicitation_id.is_none() && version.supports(Feature::UrlElicitationCompletion) {
                url.elicitation_id = Some(random_id());
            }
        }
    }
    request
}

/// An elicitation id (`crate::ids`). The revision adapter has no error path, and an OS
/// without randomness cannot serve the sessions or tasks that lead here either.
fn random_id() -> String {
    crate::ids::random_id().expect("the operating system's random number generator failed")
}

/// -32603 for a client that answered an input request with an error (or could not be
/// reached), with the client's error object in `data.error`.
fn client_failed(key: &str, kind: Kind, error: &McpError) -> McpError {
    McpError::Internal {
        message: format!("The client failed {} for input request `{key}`: {error}", kind.method()),
        data: Some(json!({
            "inputRequest": key,
            "method": kind.method(),
            "error": ErrorObject::from(error),
        })),
    }
}

//! Input required in the 2026-07-28 era: the MRTR `input_required` result, sealed,
//! and the client's retry, opened.
//!
//! [`seal`] turns a handler's [`InputRequired`] into an [`InputRequiredResult`] whose
//! `requestState` binds the method, the subject (tool name, prompt name or resource
//! URI), a keyed digest of the request's arguments (their canonical text, so a client
//! that re-serialises them in another member order still matches), optionally the
//! principal, the keys and kinds of the input requests, the
//! handler's state and an expiry. [`open`] checks a retry against all of that before
//! the handler sees anything. It is not the transport or the dispatcher: the runtime
//! calls these with the params it decoded and sends what they return.
//!
//! The spec's error-handling rules decide the edges: a retry that lacks answers the
//! handler asked for is not an error (the handler sees what did arrive and asks again,
//! which is the `input_required` the spec prefers), answers under keys that were
//! never issued are ignored, and `inputResponses` without a `requestState` answer
//! nothing this server asked (it always issues a state with its input requests), so
//! the call is treated as a first call. An answer of the wrong kind for an issued key
//! is a malformed request, -32602.
//!
//! Invariant: [`Resumed`] only ever carries state this server sealed for this method,
//! subject and arguments (and principal), unexpired, and answers to keys it issued, each of the
//! kind it asked for.

pub use super::canonical::Arguments;
use super::needs::{self, Kind, Refusal};
use super::seal::{Payload, StateKey, FORMAT_VERSION};
use crate::reply::{InputRequired, Reply};
use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::mrtr::{InputRequiredResult, InputResponses, Outcome};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// The handler's state and the client's answers, recovered from a verified retry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resumed {
    /// The answers to the input requests the server issued, by key: only issued keys,
    /// each of the kind asked for. `None` on a first call, or when the retry carried
    /// no `inputResponses`.
    pub responses: Option<InputResponses>,
    /// The state the handler returned with its input requests. `None` on a first call.
    pub state: Option<Value>,
}

/// What a `requestState` is bound to: the request it answers (method, subject and
/// arguments) and, when the transport authenticated one, the principal. A state sealed
/// for one binding opens for no other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding<'a> {
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: MethodName,
    /// The tool name, prompt name or resource URI.
    pub subject: &'a str,
    /// The request's arguments: the spec asks servers to bind the state to a digest of
    /// the key params, so answers given for one call cannot complete another (answers
    /// to "delete A?" replayed on a call that deletes B).
    pub arguments: Arguments<'a>,
    /// The authenticated identity, if any. The spec asks servers to reject a state
    /// presented by another principal.
    pub principal: Option<&'a str>,
}

impl<'a> Binding<'a> {
    /// A binding to `method` and `subject`, with no arguments and no principal.
    pub fn new(method: MethodName, subject: &'a str) -> Binding<'a> {
        Binding { method, subject, arguments: Arguments::None, principal: None }
    }

    /// The same binding, tied to the request's `arguments` as well.
    pub fn arguments(self, arguments: Arguments<'a>) -> Binding<'a> {
        Binding { arguments, ..self }
    }

    /// The same binding, tied to `principal` as well.
    pub fn principal(self, principal: Option<&'a str>) -> Binding<'a> {
        Binding { principal, ..self }
    }
}

/// The methods that may answer `input_required`.
const MRTR_METHODS: [MethodName; 3] = [MethodName::CallTool, MethodName::GetPrompt, MethodName::ReadResource];

/// Seals a handler's input requests and state into an `input_required` result for
/// the request `method` on `subject` with `arguments`.
///
/// Errors: -32021 with `data.requiredCapabilities` when `caps` (the request's declared
/// client capabilities) lack what an input request needs; -32603 when the handler
/// asked for nothing and gave no state, or `method` may not answer `input_required`.
pub fn seal(
    key: &StateKey,
    method: MethodName,
    subject: &str,
    arguments: Arguments<'_>,
    reply: InputRequired,
    caps: &ClientCapabilities,
) -> Result<InputRequiredResult, McpError> {
    seal_bound(key, Binding::new(method, subject).arguments(arguments), reply, caps)
}

/// [`seal`], with a principal in the binding.
pub fn seal_bound(
    key: &StateKey,
    binding: Binding<'_>,
    reply: InputRequired,
    caps: &ClientCapabilities,
) -> Result<InputRequiredResult, McpError> {
    seal_at(key, binding, reply, caps, SystemTime::now())
}

/// Opens a retry of the request `method` on `subject` with `arguments`: verifies
/// `request_state` and returns the handler's state with the answers to what it asked.
///
/// No `requestState` means a first call (any `inputResponses` are ignored). Errors
/// are -32602: a `requestState` that is malformed, forged, expired or issued for
/// another request, or an answer of the wrong kind for an issued key.
pub fn open(
    key: &StateKey,
    method: MethodName,
    subject: &str,
    arguments: Arguments<'_>,
    request_state: Option<&str>,
    responses: Option<InputResponses>,
) -> Result<Resumed, McpError> {
    open_bound(key, Binding::new(method, subject).arguments(arguments), request_state, responses)
}

/// [`open`], with a principal in the binding.
pub fn open_bound(
    key: &StateKey,
    binding: Binding<'_>,
    request_state: Option<&str>,
    responses: Option<InputResponses>,
) -> Result<Resumed, McpError> {
    open_at(key, binding, request_state, responses, SystemTime::now())
}

/// A handler's reply as the method's wire outcome: a complete result as it is, input
/// required sealed ([`seal_bound`]). The outcome serialises with the right
/// `resultType` for `input_required`; a complete result's own `resultType` is the
/// runtime's to set.
pub fn outcome<T>(
    key: &StateKey,
    binding: Binding<'_>,
    reply: Reply<T>,
    caps: &ClientCapabilities,
) -> Result<Outcome<T>, McpError> {
    match reply {
        Reply::Complete(result) => Ok(Outcome::Complete(result)),
        Reply::InputRequired(input) => seal_bound(key, binding, input, caps).map(Outcome::InputRequired),
    }
}

/// [`seal_bound`] at a given time, so tests can control the clock.
pub(crate) fn seal_at(
    key: &StateKey,
    binding: Binding<'_>,
    reply: InputRequired,
    caps: &ClientCapabilities,
    now: SystemTime,
) -> Result<InputRequiredResult, McpError> {
    if !MRTR_METHODS.contains(&binding.method) {
        return Err(McpError::internal(format!(
            "{} cannot answer input_required; only tools/call, prompts/get and resources/read can",
            binding.method.as_str()
        )));
    }
    // A null state carries nothing; treating it as absent keeps "no requests and no
    // state" one case.
    let state = reply.state.filter(|s| !s.is_null());
    if reply.requests.is_empty() && state.is_none() {
        return Err(McpError::internal("the handler answered input required with no input requests and no state"));
    }
    match needs::check(&reply.requests, caps, None) {
        Ok(()) => {}
        Err(Refusal::Undeclared { required, detail }) => {
            tracing::debug!(%detail, "input_required refused");
            return Err(McpError::missing_client_capability(required));
        }
        // Unreachable without a version, but an internal error is the honest answer.
        Err(Refusal::Unsupported { detail }) => return Err(McpError::internal(detail)),
    }
    let (max_age, key) = (key.max_age(), key.current());
    let payload = Payload {
        version: FORMAT_VERSION,
        method: binding.method.as_str().to_owned(),
        subject: binding.subject.to_owned(),
        principal: binding.principal.map(|p| key.principal_tag(p)),
        arguments: key.arguments_tag(&binding.arguments.canonical()),
        expires: unix_secs(now).saturating_add(max_age.as_secs()),
        issued: reply.requests.iter().map(|(k, r)| (k.clone(), Kind::of_request(r))).collect(),
        state,
    };
    let bytes = serde_json::to_vec(&payload).map_err(|e| McpError::internal(format!("sealing requestState: {e}")))?;
    let requests = (!reply.requests.is_empty()).then_some(reply.requests);
    Ok(InputRequiredResult::new(requests, Some(key.sign(&bytes))))
}

/// [`open_bound`] at a given time, so tests can control the clock.
pub(crate) fn open_at(
    key: &StateKey,
    binding: Binding<'_>,
    request_state: Option<&str>,
    responses: Option<InputResponses>,
    now: SystemTime,
) -> Result<Resumed, McpError> {
    let Some(token) = request_state else {
        if responses.is_some() {
            tracing::debug!(method = binding.method.as_str(), "inputResponses without requestState ignored");
        }
        return Ok(Resumed::default());
    };
    let (payload, key) = key.verify(token).ok_or_else(|| refuse("it is malformed or was not issued by this server"))?;
    // The tag verified, so these bytes are ours; failing to read them means another
    // format (an older or newer server sharing the key).
    let payload: Payload = serde_json::from_slice(&payload).map_err(|_| refuse("its format is not understood"))?;
    if payload.version != FORMAT_VERSION {
        return Err(refuse("its format is not understood"));
    }
    if payload.method != binding.method.as_str() || payload.subject != binding.subject {
        return Err(refuse(&format!(
            "it was issued for another request, not {} of `{}`",
            binding.method.as_str(),
            arbor_protocol::reflect::Clamped(binding.subject)
        )));
    }
    // Digested only here, once the tag verified: a call that carries no state pays nothing.
    if payload.arguments != key.arguments_tag(&binding.arguments.canonical()) {
        return Err(refuse("it was issued for other arguments"));
    }
    if payload.principal != binding.principal.map(|p| key.principal_tag(p)) {
        return Err(refuse("it was issued to another principal"));
    }
    if unix_secs(now) > payload.expires {
        return Err(refuse("it has expired; call again without requestState and inputResponses"));
    }
    let responses = match responses {
        None => None,
        Some(mut answers) => {
            let mut kept = InputResponses::new();
            for (name, kind) in &payload.issued {
                // A missing answer is left for the handler to ask again.
                let Some(answer) = answers.remove(name) else { continue };
                let got = Kind::of_response(&answer);
                if got != *kind {
                    return Err(McpError::invalid_params(format!(
                        "inputResponses[\"{name}\"] must be {} (the answer to {}), not {}",
                        kind.answer(),
                        kind.method(),
                        got.answer()
                    )));
                }
                kept.insert(name.clone(), answer);
            }
            // What is left answers nothing that was asked; the spec says to ignore it.
            Some(kept)
        }
    };
    Ok(Resumed { responses, state: payload.state })
}

fn refuse(why: &str) -> McpError {
    McpError::invalid_params(format!("Invalid requestState: {why}"))
}

fn unix_secs(t: SystemTime) -> u64 {
    // A clock before 1970 is broken; 0 keeps the arithmetic defined.
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

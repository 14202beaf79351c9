//! What an input request needs from the client before it may be sent: a declared
//! capability and, in the legacy era, a negotiated revision that has the feature.
//!
//! The rules are the spec's: `elicitation: {}` means form mode only, URL mode needs
//! `elicitation.url`; sampling needs `sampling`, and `tools`/`toolChoice` need
//! `sampling.tools`; `includeContext` other than `none` needs `sampling.context`
//! (a capability that exists from 2025-11-25 on, so older revisions are not held to
//! it); roots need `roots`. This module only judges; the era modules turn a refusal
//! into their own error. Invariant: every refusal names, as a `ClientCapabilities`
//! object, exactly what the client would have to declare for the request to go out.

use arbor_protocol::methods::MethodName;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::elicitation::ElicitRequestParams;
use arbor_protocol::model::mrtr::{InputRequest, InputRequests, InputResponse};
use arbor_protocol::model::sampling::IncludeContext;
use arbor_protocol::version::{Feature, ProtocolVersion};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The kind of an input request, and so of the answer it expects. The short
/// serialised names keep the sealed `requestState` small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Kind {
    /// `elicitation/create`, answered by an `ElicitResult`.
    #[serde(rename = "e")]
    Elicit,
    /// `sampling/createMessage`, answered by a `CreateMessageResult`.
    #[serde(rename = "s")]
    Sample,
    /// `roots/list`, answered by a `ListRootsResult`.
    #[serde(rename = "r")]
    Roots,
}

impl Kind {
    pub(crate) fn of_request(request: &InputRequest) -> Kind {
        match request {
            InputRequest::Elicit(_) => Kind::Elicit,
            InputRequest::CreateMessage(_) => Kind::Sample,
            InputRequest::ListRoots(_) => Kind::Roots,
        }
    }

    pub(crate) fn of_response(response: &InputResponse) -> Kind {
        match response {
            InputResponse::Elicit(_) => Kind::Elicit,
            InputResponse::CreateMessage(_) => Kind::Sample,
            InputResponse::ListRoots(_) => Kind::Roots,
        }
    }

    /// The method of the request.
    pub(crate) fn method(self) -> &'static str {
        self.method_name().as_str()
    }

    /// The method of the request, as the closed enum.
    pub(crate) fn method_name(self) -> MethodName {
        match self {
            Kind::Elicit => MethodName::Elicit,
            Kind::Sample => MethodName::CreateMessage,
            Kind::Roots => MethodName::ListRoots,
        }
    }

    /// The schema name of the answer, for error messages.
    pub(crate) fn answer(self) -> &'static str {
        match self {
            Kind::Elicit => "an ElicitResult",
            Kind::Sample => "a CreateMessageResult",
            Kind::Roots => "a ListRootsResult",
        }
    }
}

/// One thing an input request needs the client to support.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    ElicitForm,
    ElicitUrl,
    Sampling,
    SamplingTools,
    SamplingContext,
    Roots,
}

impl Need {
    fn of(request: &InputRequest) -> Vec<Need> {
        match request {
            InputRequest::Elicit(e) => match e.params {
                ElicitRequestParams::Form(_) => vec![Need::ElicitForm],
                ElicitRequestParams::Url(_) => vec![Need::ElicitUrl],
            },
            InputRequest::CreateMessage(m) => {
                let mut needs = vec![Need::Sampling];
                if m.params.tools.is_some() || m.params.tool_choice.is_some() {
                    needs.push(Need::SamplingTools);
                }
                if matches!(m.params.include_context, Some(IncludeContext::ThisServer | IncludeContext::AllServers)) {
                    needs.push(Need::SamplingContext);
                }
                needs
            }
            InputRequest::ListRoots(_) => vec![Need::Roots],
        }
    }

    /// The revision feature this need depends on, when it is younger than the protocol.
    fn feature(self) -> Option<Feature> {
        match self {
            Need::ElicitForm => Some(Feature::Elicitation),
            Need::ElicitUrl => Some(Feature::UrlElicitation),
            Need::SamplingTools => Some(Feature::SamplingTools),
            Need::Sampling | Need::SamplingContext | Need::Roots => None,
        }
    }

    fn declared(self, caps: &ClientCapabilities) -> bool {
        let sampling = caps.sampling.as_ref();
        match self {
            // A bare `elicitation: {}` (and the 2025-06-18 form, which had no modes) means form.
            Need::ElicitForm => caps.elicitation.as_ref().is_some_and(|e| e.form.is_some() || e.url.is_none()),
            Need::ElicitUrl => caps.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
            Need::Sampling => sampling.is_some(),
            Need::SamplingTools => sampling.is_some_and(|s| s.tools.is_some()),
            Need::SamplingContext => sampling.is_some_and(|s| s.context.is_some()),
            Need::Roots => caps.roots.is_some(),
        }
    }

    /// The smallest `ClientCapabilities` object that would satisfy this need.
    fn required(self, caps: &ClientCapabilities) -> Value {
        match self {
            // With no `elicitation` at all, `{}` already means form; once the client
            // declared another mode, only an explicit `form` adds it.
            Need::ElicitForm if caps.elicitation.is_none() => json!({ "elicitation": {} }),
            Need::ElicitForm => json!({ "elicitation": { "form": {} } }),
            Need::ElicitUrl => json!({ "elicitation": { "url": {} } }),
            Need::Sampling => json!({ "sampling": {} }),
            Need::SamplingTools => json!({ "sampling": { "tools": {} } }),
            Need::SamplingContext => json!({ "sampling": { "context": {} } }),
            Need::Roots => json!({ "roots": {} }),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Need::ElicitForm => "form-mode elicitation",
            Need::ElicitUrl => "URL-mode elicitation",
            Need::Sampling => "sampling",
            Need::SamplingTools => "sampling with tools",
            Need::SamplingContext => "sampling with includeContext",
            Need::Roots => "roots",
        }
    }
}

/// Why input requests cannot be sent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Refusal {
    /// The client did not declare what they need.
    Undeclared {
        /// A `ClientCapabilities` object with everything missing, merged.
        required: Value,
        /// For people: which request needs what.
        detail: String,
    },
    /// The negotiated revision does not have the feature at all (legacy era).
    Unsupported {
        /// For people: which request needs what.
        detail: String,
    },
}

/// Checks every request against the client's capabilities and, when `version` is
/// given (legacy era), against the negotiated revision. Requests are visited in key
/// order so that the same refusal always reads the same.
pub(crate) fn check(
    requests: &InputRequests,
    caps: &ClientCapabilities,
    version: Option<ProtocolVersion>,
) -> Result<(), Refusal> {
    let mut required = Map::new();
    let mut details = Vec::new();
    let mut form_missing = false;
    for (key, request) in requests {
        for need in Need::of(request) {
            if let (Some(version), Some(feature)) = (version, need.feature()) {
                if !version.supports(feature) {
                    let detail = format!(
                        "input request `{key}` needs {}, which protocol revision {} does not have",
                        need.describe(),
                        version.as_str()
                    );
                    return Err(Refusal::Unsupported { detail });
                }
            }
            // `sampling.context` only exists from 2025-11-25 on; before it,
            // `includeContext` needed nothing beyond `sampling`.
            if need == Need::SamplingContext && version.is_some_and(|v| !v.supports(Feature::SamplingTools)) {
                continue;
            }
            if !need.declared(caps) {
                form_missing |= need == Need::ElicitForm;
                merge(&mut required, need.required(caps));
                details.push(format!("`{key}` needs {}", need.describe()));
            }
        }
    }
    // `{"elicitation": {}}` means form only while it is empty: once URL mode is in
    // the object too, form must be named for it to stay required.
    if let Some(Value::Object(elicitation)) = required.get_mut("elicitation") {
        if form_missing && !elicitation.is_empty() {
            elicitation.entry("form").or_insert_with(|| json!({}));
        }
    }
    if details.is_empty() {
        Ok(())
    } else {
        let detail =
            format!("the client did not declare the capabilities its input requests need: {}", details.join(", "));
        Err(Refusal::Undeclared { required: Value::Object(required), detail })
    }
}

/// Merges one capabilities object into another, member by member.
fn merge(into: &mut Map<String, Value>, from: Value) {
    let Value::Object(from) = from else { return };
    for (name, value) in from {
        match (into.get_mut(&name), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => merge(existing, Value::Object(more)),
            (_, value) => {
                into.insert(name, value);
            }
        }
    }
}

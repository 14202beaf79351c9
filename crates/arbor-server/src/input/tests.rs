//! Unit tests of input required in the 2026-07-28 era: sealing and opening `requestState`
//! (every tamper, expiry on an explicit clock, capability refusals, answer checks, the
//! 2026-07-28 schema). The legacy driver's tests are in `tests_legacy`, with these fixtures.

use super::modern::{open_at, outcome, seal_at, Arguments, Binding, Resumed};
use super::seal::{Payload, FORMAT_VERSION};
use super::StateKey;
use crate::reply::{InputRequired, Reply};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::elicitation::ElicitRequestParams;
use arbor_protocol::model::mrtr::{InputRequiredResult, InputResponse, InputResponses, Outcome};
use arbor_protocol::model::sampling::CreateMessageRequestParams;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// ---- fixtures -------------------------------------------------------------------

pub(super) fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

pub(super) fn caps(v: Value) -> ClientCapabilities {
    from(v)
}

pub(super) fn all_caps() -> ClientCapabilities {
    caps(json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}, "context": {}}, "roots": {}}))
}

pub(super) fn form() -> ElicitRequestParams {
    from(
        json!({"message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}),
    )
}

pub(super) fn url_mode() -> ElicitRequestParams {
    from(json!({"mode": "url", "message": "Sign in", "url": "https://example.com/login"}))
}

pub(super) fn sampling() -> CreateMessageRequestParams {
    from(
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}], "maxTokens": 100}),
    )
}

fn sampling_with(extra: Value) -> CreateMessageRequestParams {
    let mut v = serde_json::to_value(sampling()).unwrap();
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    from(v)
}

pub(super) fn elicit_answer(action: &str) -> InputResponse {
    from(json!({"action": action, "content": {"name": "Ada"}}))
}

pub(super) fn sample_answer() -> InputResponse {
    from(json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}))
}

pub(super) fn roots_answer() -> InputResponse {
    from(json!({"roots": [{"uri": "file:///work"}]}))
}

fn answers(pairs: Vec<(&str, InputResponse)>) -> InputResponses {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn key() -> StateKey {
    StateKey::from_bytes(&[7u8; 32])
}

fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn tool() -> Binding<'static> {
    Binding::new(MethodName::CallTool, "greet")
}

/// Three kinds of input, with state.
fn asked() -> InputRequired {
    InputRequired::new().elicit("name", form()).sample("capital", sampling()).roots("roots").state(json!({"step": 1}))
}

fn seal_now(reply: InputRequired) -> InputRequiredResult {
    seal_at(&key(), tool(), reply, &all_caps(), t0()).unwrap()
}

fn token(result: &InputRequiredResult) -> String {
    result.request_state.clone().expect("a requestState")
}

fn open_now(token: &str, responses: Option<InputResponses>) -> Result<Resumed, McpError> {
    open_at(&key(), tool(), Some(token), responses, t0())
}

pub(super) fn wire(err: &McpError) -> ErrorObject {
    ErrorObject::from(err)
}

/// Asserts `-32602` whose message mentions `needle`.
fn assert_invalid(result: Result<Resumed, McpError>, needle: &str) {
    let err = result.expect_err("the retry must be refused");
    let obj = wire(&err);
    assert_eq!(obj.code, -32602, "{err}");
    assert!(obj.message.contains(needle), "`{}` does not mention `{needle}`", obj.message);
}

// ---- seal / open ----------------------------------------------------------------

#[test]
fn a_sealed_state_opens_with_its_state_and_answers() {
    let result = seal_now(asked());
    assert_eq!(result.input_requests.as_ref().unwrap().len(), 3);
    let all = answers(vec![("name", elicit_answer("accept")), ("capital", sample_answer()), ("roots", roots_answer())]);
    let resumed = open_now(&token(&result), Some(all.clone())).unwrap();
    assert_eq!(resumed, Resumed { responses: Some(all), state: Some(json!({"step": 1})) });
}

#[test]
fn a_first_call_has_nothing_to_open() {
    assert_eq!(open_at(&key(), tool(), None, None, t0()).unwrap(), Resumed::default());
}

#[test]
fn answers_without_a_state_are_ignored_as_a_first_call() {
    // Every input request this server issues carries a state, so these answer nothing
    // it asked; the spec prefers asking again to an error.
    let stray = answers(vec![("wrong_key", elicit_answer("accept"))]);
    assert_eq!(open_at(&key(), tool(), None, Some(stray), t0()).unwrap(), Resumed::default());
}

#[test]
fn a_state_is_produced_even_when_the_handler_keeps_none() {
    let result = seal_now(InputRequired::new().elicit("name", form()));
    let resumed = open_now(&token(&result), Some(answers(vec![("name", elicit_answer("accept"))]))).unwrap();
    assert_eq!(resumed.state, None);
    assert_eq!(resumed.responses.unwrap().len(), 1);
}

#[test]
fn a_state_only_result_has_no_input_requests() {
    let result = seal_now(InputRequired::new().state(json!("retry later")));
    assert_eq!(result.input_requests, None);
    let resumed = open_now(&token(&result), None).unwrap();
    assert_eq!(resumed, Resumed { responses: None, state: Some(json!("retry later")) });
}

#[test]
fn asking_for_nothing_is_a_handler_bug() {
    for reply in [InputRequired::new(), InputRequired::new().state(Value::Null)] {
        let err = seal_at(&key(), tool(), reply, &all_caps(), t0()).unwrap_err();
        assert_eq!(wire(&err).code, -32603);
    }
}

#[test]
fn only_the_three_mrtr_methods_may_answer_input_required() {
    let list = Binding::new(MethodName::ListTools, "");
    let err = seal_at(&key(), list, asked(), &all_caps(), t0()).unwrap_err();
    assert_eq!(wire(&err).code, -32603);
    for method in [MethodName::GetPrompt, MethodName::ReadResource] {
        assert!(seal_at(&key(), Binding::new(method, "x"), asked(), &all_caps(), t0()).is_ok());
    }
}

/// Replaces one part of the token (0: payload, 1: tag) after flipping one bit of it.
fn flip(token: &str, part: usize, byte: usize) -> String {
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let mut bytes = URL_SAFE_NO_PAD.decode(&parts[part]).unwrap();
    bytes[byte] ^= 0x01;
    parts[part] = URL_SAFE_NO_PAD.encode(bytes);
    parts.join(".")
}

#[test]
fn every_tampered_token_is_refused() {
    let good = token(&seal_now(asked()));
    let (payload, tag) = good.split_once('.').unwrap();
    let other = token(&seal_now(InputRequired::new().roots("roots")));
    let tampered = [
        flip(&good, 0, 0),
        flip(&good, 0, URL_SAFE_NO_PAD.decode(payload).unwrap().len() - 1),
        flip(&good, 1, 0),
        flip(&good, 1, 31),
        good[..good.len() - 1].to_owned(),
        good[..good.len() - 4].to_owned(),
        payload.to_owned(),
        format!("{payload}."),
        format!(".{tag}"),
        format!("{payload}.{tag}{tag}"),
        format!("{}.{tag}", other.split_once('.').unwrap().0),
        good.replace('.', ".."),
        format!("{good} "),
        String::new(),
        ".".to_owned(),
        "not base64!.x".to_owned(),
    ];
    for bad in &tampered {
        assert_ne!(bad, &good);
        assert_invalid(open_now(bad, None), "not issued by this server");
    }
}

#[test]
fn a_state_made_with_another_key_is_refused() {
    let forged = seal_at(&StateKey::random(), tool(), asked(), &all_caps(), t0()).unwrap();
    assert_invalid(open_now(&token(&forged), None), "not issued by this server");
}

#[test]
fn a_state_is_bound_to_its_method_subject_and_principal() {
    let t = token(&seal_now(asked()));
    let prompt = Binding::new(MethodName::GetPrompt, "greet");
    assert_invalid(open_at(&key(), prompt, Some(&t), None, t0()), "another request");
    let other_tool = Binding::new(MethodName::CallTool, "greet2");
    assert_invalid(open_at(&key(), other_tool, Some(&t), None, t0()), "another request");

    let alice = tool().principal(Some("alice"));
    let sealed = token(&seal_at(&key(), alice, asked(), &all_caps(), t0()).unwrap());
    assert!(open_at(&key(), alice, Some(&sealed), None, t0()).is_ok());
    for someone_else in [tool().principal(Some("mallory")), tool()] {
        assert_invalid(open_at(&key(), someone_else, Some(&sealed), None, t0()), "another principal");
    }
    assert_invalid(open_at(&key(), alice, Some(&t), None, t0()), "another principal");
    // The principal is bound by a keyed digest, not written out.
    assert!(!String::from_utf8(URL_SAFE_NO_PAD.decode(sealed.split('.').next().unwrap()).unwrap())
        .unwrap()
        .contains("alice"));
}

#[test]
fn a_state_is_bound_to_the_arguments_in_any_member_order() {
    fn on(m: &serde_json::Map<String, Value>) -> Binding<'_> {
        tool().arguments(Arguments::Object(m))
    }
    let args = |v: Value| v.as_object().unwrap().clone();
    let (a, b) = (args(json!({"path": "A", "opts": {"x": 1, "y": [1, 2]}})), args(json!({"path": "B"})));
    let reordered = args(serde_json::from_str(r#"{"opts":{"y":[1,2],"x":1},"path":"A"}"#).unwrap());
    let t = token(&seal_at(&key(), on(&a), asked(), &all_caps(), t0()).unwrap());
    assert!(open_at(&key(), on(&a), Some(&t), None, t0()).is_ok());
    assert!(open_at(&key(), on(&reordered), Some(&t), None, t0()).is_ok());
    assert_invalid(open_at(&key(), on(&b), Some(&t), None, t0()), "it was issued for other arguments");
    assert_invalid(open_at(&key(), tool(), Some(&t), None, t0()), "other arguments");
    // No arguments and an empty object are one request.
    let t = token(&seal_now(asked()));
    assert!(open_at(&key(), on(&args(json!({}))), Some(&t), None, t0()).is_ok());
    assert_invalid(open_at(&key(), on(&b), Some(&t), None, t0()), "other arguments");
    // Prompt arguments are bound the same way; the values are not written out.
    let prompt = Binding::new(MethodName::GetPrompt, "p");
    let (x, y) =
        (BTreeMap::from([("k".to_owned(), "x".to_owned())]), BTreeMap::from([("k".to_owned(), "y".to_owned())]));
    let t = token(&seal_at(&key(), prompt.arguments(Arguments::Strings(&x)), asked(), &all_caps(), t0()).unwrap());
    assert!(open_at(&key(), prompt.arguments(Arguments::Strings(&x)), Some(&t), None, t0()).is_ok());
    assert_invalid(open_at(&key(), prompt.arguments(Arguments::Strings(&y)), Some(&t), None, t0()), "other arguments");
    let sealed = token(&seal_at(&key(), on(&a), asked(), &all_caps(), t0()).unwrap());
    let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(sealed.split('.').next().unwrap()).unwrap()).unwrap();
    assert!(!payload.contains("\"path\""), "{payload}");
}

#[test]
fn a_state_expires_after_the_keys_max_age() {
    let t = token(&seal_now(asked()));
    let at = |secs| open_at(&key(), tool(), Some(&t), None, t0() + Duration::from_secs(secs));
    assert!(at(600).is_ok());
    assert_invalid(at(601), "expired");

    let short = key().with_max_age(Duration::from_secs(30));
    let t = token(&seal_at(&short, tool(), asked(), &all_caps(), t0()).unwrap());
    assert!(open_at(&short, tool(), Some(&t), None, t0() + Duration::from_secs(30)).is_ok());
    assert_invalid(open_at(&short, tool(), Some(&t), None, t0() + Duration::from_secs(31)), "expired");
}

#[test]
fn a_state_of_another_format_version_is_refused() {
    let payload = Payload {
        version: FORMAT_VERSION + 1,
        method: "tools/call".into(),
        subject: "greet".into(),
        principal: None,
        arguments: key().arguments_tag(b"{}"),
        expires: u64::MAX,
        issued: BTreeMap::new(),
        state: Some(json!(1)),
    };
    let t = key().sign(&serde_json::to_vec(&payload).unwrap());
    assert_invalid(open_now(&t, None), "format");
    assert_invalid(open_now(&key().sign(b"not json"), None), "format");
}

#[test]
fn missing_answers_reach_the_handler_which_asks_again() {
    let t = token(&seal_now(asked()));
    let resumed = open_now(&t, Some(answers(vec![("name", elicit_answer("accept"))]))).unwrap();
    assert_eq!(resumed.responses.unwrap().keys().collect::<Vec<_>>(), ["name"]);
    let resumed = open_now(&t, None).unwrap();
    assert_eq!((resumed.responses, resumed.state), (None, Some(json!({"step": 1}))));
}

#[test]
fn answers_to_keys_never_issued_are_dropped() {
    let t = token(&seal_now(asked()));
    let sent = answers(vec![("name", elicit_answer("decline")), ("bogus", roots_answer())]);
    let resumed = open_now(&t, Some(sent)).unwrap();
    assert_eq!(resumed.responses.unwrap(), answers(vec![("name", elicit_answer("decline"))]));
}

#[test]
fn an_answer_of_the_wrong_kind_is_refused_naming_its_key() {
    let t = token(&seal_now(asked()));
    let wrong = answers(vec![("name", elicit_answer("accept")), ("capital", elicit_answer("accept"))]);
    assert_invalid(open_now(&t, Some(wrong)), "inputResponses[\"capital\"] must be a CreateMessageResult");
    let wrong = answers(vec![("roots", sample_answer())]);
    assert_invalid(open_now(&t, Some(wrong)), "inputResponses[\"roots\"] must be a ListRootsResult");
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let shown = format!("{:?}", StateKey::from_bytes(b"super-secret-key-material-000000"));
    assert_eq!(shown, "StateKey { key: \"<redacted>\", max_age: 600s }");
    let seal_with = |k: &StateKey| token(&seal_at(k, tool(), asked(), &all_caps(), t0()).unwrap());
    assert_ne!(seal_with(&StateKey::random()), seal_with(&StateKey::random()));
}

// ---- capabilities ---------------------------------------------------------------

/// Seals `reply` for a client declaring `declared`; returns `data.requiredCapabilities`
/// of the -32021 refusal, or `None` when it seals.
fn refusal(reply: InputRequired, declared: Value) -> Option<Value> {
    let err = seal_at(&key(), tool(), reply, &caps(declared), t0()).err()?;
    let obj = wire(&err);
    assert_eq!(obj.code, -32021, "{err}");
    let data = obj.data.unwrap();
    assert_eq!(data.as_object().unwrap().len(), 1, "{data}");
    Some(data["requiredCapabilities"].clone())
}

#[test]
fn undeclared_capabilities_are_refused_with_exactly_what_is_missing() {
    let elicit = || InputRequired::new().elicit("q", form());
    let url = || InputRequired::new().elicit("u", url_mode());
    let sample = |extra| InputRequired::new().sample("s", sampling_with(extra));
    let cases = [
        (elicit(), json!({}), Some(json!({"elicitation": {}}))),
        (elicit(), json!({"elicitation": {"url": {}}}), Some(json!({"elicitation": {"form": {}}}))),
        (elicit(), json!({"elicitation": {}}), None),
        (elicit(), json!({"elicitation": {"form": {}}}), None),
        (url(), json!({"elicitation": {}}), Some(json!({"elicitation": {"url": {}}}))),
        (url(), json!({"elicitation": {"form": {}}}), Some(json!({"elicitation": {"url": {}}}))),
        (url(), json!({"elicitation": {"url": {}}}), None),
        (elicit().elicit("u", url_mode()), json!({}), Some(json!({"elicitation": {"form": {}, "url": {}}}))),
        (sample(json!({})), json!({"roots": {}}), Some(json!({"sampling": {}}))),
        (sample(json!({})), json!({"sampling": {}}), None),
        (sample(json!({"tools": []})), json!({"sampling": {}}), Some(json!({"sampling": {"tools": {}}}))),
        (sample(json!({"toolChoice": {"mode": "auto"}})), json!({}), Some(json!({"sampling": {"tools": {}}}))),
        (sample(json!({"tools": []})), json!({"sampling": {"tools": {}}}), None),
        (
            sample(json!({"includeContext": "thisServer"})),
            json!({"sampling": {}}),
            Some(json!({"sampling": {"context": {}}})),
        ),
        (sample(json!({"includeContext": "none"})), json!({"sampling": {}}), None),
        (InputRequired::new().roots("r"), json!({"sampling": {}}), Some(json!({"roots": {}}))),
        (asked(), json!({}), Some(json!({"elicitation": {}, "sampling": {}, "roots": {}}))),
        (asked(), json!({"elicitation": {}, "sampling": {}, "roots": {}}), None),
    ];
    for (i, (reply, declared, expected)) in cases.into_iter().enumerate() {
        assert_eq!(refusal(reply, declared.clone()), expected, "case {i}: declared {declared}");
    }
}

// ---- the 2026-07-28 schema ------------------------------------------------------

fn assert_valid_input_required(instance: &Value) {
    // The shared schema oracle; `::` names the harness crate, not this `tests` module.
    ::tests::schema::assert_valid("2026-07-28", "InputRequiredResult", instance);
}

#[test]
fn sealed_results_are_valid_input_required_results() {
    let everything = InputRequired::new()
        .elicit("name", form())
        .elicit("login", url_mode())
        .sample("capital", sampling_with(json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})))
        .roots("roots")
        .state(json!({"nested": [1, "two", null]}));
    for reply in [everything, asked(), InputRequired::new().state(json!(3))] {
        let v = serde_json::to_value(seal_now(reply)).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert!(v["requestState"].is_string());
        assert_valid_input_required(&v);
    }
}

#[test]
fn outcome_seals_input_required_and_passes_complete_through() {
    let out = outcome::<()>(&key(), tool(), Reply::InputRequired(asked()), &all_caps()).unwrap();
    let Outcome::InputRequired(result) = &out else { panic!("{out:?}") };
    assert_valid_input_required(&serde_json::to_value(&out).unwrap());
    assert!(open_at(&key(), tool(), result.request_state.as_deref(), None, SystemTime::now()).is_ok());
    assert_eq!(outcome(&key(), tool(), Reply::Complete(5u8), &all_caps()).unwrap(), Outcome::Complete(5));
}

// ---- key rotation ---------------------------------------------------------------

/// Seals `asked()` with `key`, bound to `principal` and arguments, and opens it with `by`.
fn across(key: &StateKey, by: &StateKey) -> Result<Resumed, McpError> {
    let binding = || tool().principal(Some("alice"));
    let sealed = seal_at(key, binding(), asked(), &all_caps(), t0()).unwrap();
    open_at(by, binding(), Some(&token(&sealed)), None, t0())
}

#[test]
fn a_staged_rotation_refuses_no_state_in_flight_whatever_order_the_nodes_take_it_in() {
    let (old, new) = ([7u8; 32], [8u8; 32]);
    let (a, b) = (StateKey::from_bytes(&old), StateKey::from_bytes(&old));
    let before = seal_at(&a, tool(), asked(), &all_caps(), t0()).unwrap();
    // Step 1 on both nodes, step 2 on node A only: A seals with the new key, B still with
    // the old one, and each opens the other's states (principal and arguments digests
    // included, which only the sealing key computes).
    a.stage(&new);
    b.stage(&new);
    a.promote();
    assert!(across(&a, &b).is_ok(), "B opens what A sealed with the new key it only staged");
    assert!(across(&b, &a).is_ok(), "A opens what B sealed with the old key it still accepts");
    b.promote();
    assert!(across(&a, &b).is_ok() && across(&b, &a).is_ok());
    assert!(open_at(&b, tool(), Some(&token(&before)), None, t0()).is_ok(), "a state from before the rotation");
    // Step 3: the old key is retired; its states are refused, the new key's are not.
    a.retire();
    b.retire();
    assert_eq!((a.keys(), b.keys()), (1, 1));
    assert_invalid(open_at(&b, tool(), Some(&token(&before)), None, t0()), "not issued by this server");
    assert!(across(&a, &b).is_ok());
    // A clone shares the ring: a server built with it sees every step.
    let clone = a.clone();
    a.stage(&[9u8; 32]);
    a.promote();
    assert_eq!(clone.keys(), 2);
}

#[test]
fn a_ring_keeps_a_bounded_number_of_old_keys() {
    let key = key();
    for n in 0..10u8 {
        key.stage(&[n; 32]);
        key.promote();
    }
    assert_eq!(key.keys(), 1 + 3);
    // Promoting with nothing staged changes nothing.
    key.promote();
    assert_eq!(key.keys(), 4);
}

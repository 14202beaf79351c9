//! Unit tests of the legacy driver: a handler asking for input across rounds, against
//! a client double that answers, fails, declines or never answers, with the paused
//! clock where time matters.

use super::legacy::{drive, ClientRequester};
use super::tests::{all_caps, caps, elicit_answer, form, roots_answer, sample_answer, sampling, url_mode, wire};
use crate::reply::{InputRequired, Reply};
use arbor_protocol::error::McpError;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::elicitation::{ElicitAction, ElicitRequestParams};
use arbor_protocol::model::mrtr::{InputRequest, InputResponse, InputResponses};
use arbor_protocol::version::ProtocolVersion::{self, V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A client double: answers every request after letting the round's other requests
/// start, unless told to fail one method, decline elicitations, or never answer.
#[derive(Default)]
struct FakeClient {
    sent: Mutex<Vec<InputRequest>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    fail: Option<(&'static str, McpError)>,
    decline: bool,
    hang: bool,
}

/// Counts a request as in flight until dropped, whether it finished or was abandoned.
struct InFlight<'a>(&'a FakeClient);

impl<'a> InFlight<'a> {
    fn enter(client: &'a FakeClient) -> Self {
        let now = client.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        client.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(client)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn method(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::Elicit(_) => "elicitation/create",
        InputRequest::CreateMessage(_) => "sampling/createMessage",
        InputRequest::ListRoots(_) => "roots/list",
    }
}

impl ClientRequester for FakeClient {
    async fn request(&self, request: InputRequest) -> Result<InputResponse, McpError> {
        self.sent.lock().push(request.clone());
        let _in_flight = InFlight::enter(self);
        // Yield so that a concurrent round has all its requests in flight at once.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        if self.hang {
            std::future::pending::<()>().await;
        }
        if let Some((failing, error)) = &self.fail {
            if *failing == method(&request) {
                return Err(error.clone());
            }
        }
        Ok(match request {
            InputRequest::Elicit(_) => elicit_answer(if self.decline { "decline" } else { "accept" }),
            InputRequest::CreateMessage(_) => sample_answer(),
            InputRequest::ListRoots(_) => roots_answer(),
        })
    }
}

impl FakeClient {
    fn methods(&self) -> Vec<&'static str> {
        self.sent.lock().iter().map(method).collect()
    }
}

type Call = (Option<Vec<String>>, Option<Value>);

/// Runs `handler` (by call number, with what the call received) under `drive`,
/// recording every call's answer keys and state.
async fn run<T>(
    client: &FakeClient,
    declared: Value,
    version: ProtocolVersion,
    max_rounds: usize,
    handler: impl Fn(usize, &Option<InputResponses>, &Option<Value>) -> Result<Reply<T>, McpError>,
) -> (Result<T, McpError>, Vec<Call>) {
    let calls = Mutex::new(Vec::new());
    let invoke = |responses: Option<InputResponses>, state: Option<Value>| {
        let mut log = calls.lock();
        let reply = handler(log.len(), &responses, &state);
        log.push((responses.map(|r| r.into_keys().collect()), state));
        std::future::ready(reply)
    };
    let result = drive(invoke, client, &caps(declared), version, max_rounds).await;
    (result, calls.into_inner())
}

fn ask<T>(reply: InputRequired) -> Result<Reply<T>, McpError> {
    Ok(Reply::InputRequired(reply))
}

fn everything() -> Value {
    serde_json::to_value(all_caps()).unwrap()
}

fn keys(ks: &[&str]) -> Option<Vec<String>> {
    Some(ks.iter().map(|k| k.to_string()).collect())
}

#[tokio::test]
async fn one_round_asks_once_and_completes_with_the_answer() {
    let client = FakeClient::default();
    let (result, calls) = run(&client, everything(), V2025_06_18, 4, |n, responses, _| match n {
        0 => ask(InputRequired::new().elicit("name", form())),
        _ => {
            let Some(InputResponse::Elicit(answer)) = responses.as_ref().and_then(|r| r.get("name")) else {
                panic!("no answer")
            };
            Ok(Reply::Complete(answer.content.as_ref().unwrap()["name"].as_str().unwrap().to_owned()))
        }
    })
    .await;
    assert_eq!(result.unwrap(), "Ada");
    assert_eq!(calls, vec![(None, None), (keys(&["name"]), None)]);
    assert_eq!(client.methods(), ["elicitation/create"]);
}

#[tokio::test]
async fn two_rounds_carry_the_state_and_send_each_round_concurrently() {
    let client = FakeClient::default();
    let (result, calls) = run(&client, everything(), V2025_11_25, 4, |n, _, _| match n {
        0 => ask(InputRequired::new().elicit("step1", form()).state(json!({"step": 1}))),
        1 => ask(InputRequired::new().sample("step2", sampling()).roots("roots").state(json!({"step": 2}))),
        _ => Ok(Reply::Complete("done".to_owned())),
    })
    .await;
    assert_eq!(result.unwrap(), "done");
    assert_eq!(
        calls,
        vec![
            (None, None),
            (keys(&["step1"]), Some(json!({"step": 1}))),
            (keys(&["roots", "step2"]), Some(json!({"step": 2}))),
        ]
    );
    assert_eq!(client.methods(), ["elicitation/create", "roots/list", "sampling/createMessage"]);
    assert_eq!(client.max_in_flight.load(Ordering::SeqCst), 2, "the second round's two requests overlap");
}

#[tokio::test]
async fn a_declined_elicitation_is_an_answer_not_an_error() {
    let client = FakeClient { decline: true, ..Default::default() };
    let (result, _) = run(&client, everything(), V2025_06_18, 4, |n, responses, _| match n {
        0 => ask(InputRequired::new().elicit("ok", form())),
        _ => match responses.as_ref().unwrap().get("ok") {
            Some(InputResponse::Elicit(e)) => Ok(Reply::Complete(e.action)),
            other => panic!("{other:?}"),
        },
    })
    .await;
    assert_eq!(result.unwrap(), ElicitAction::Decline);
}

#[tokio::test]
async fn a_state_only_reply_is_retried_at_once_with_its_state() {
    let client = FakeClient::default();
    let (result, calls) = run(&client, json!({}), V2024_11_05, 4, |n, _, state| match n {
        0 => ask(InputRequired::new().state(json!("later"))),
        _ => Ok(Reply::Complete(state.clone().unwrap().to_string())),
    })
    .await;
    assert_eq!(result.unwrap(), "\"later\"");
    assert_eq!(calls[1], (None, Some(json!("later"))));
    assert!(client.methods().is_empty());
}

#[tokio::test]
async fn rounds_beyond_the_limit_are_an_internal_error_naming_it() {
    let client = FakeClient::default();
    let (result, calls) =
        run(&client, everything(), V2025_11_25, 3, |_, _, _| ask::<()>(InputRequired::new().roots("r"))).await;
    let err = result.unwrap_err();
    assert_eq!(wire(&err).code, -32603);
    assert!(err.message().contains("after 3 rounds"), "{err}");
    assert_eq!((calls.len(), client.methods().len()), (4, 3));

    let (result, _) =
        run(&client, everything(), V2025_11_25, 0, |_, _, _| ask::<()>(InputRequired::new().roots("r"))).await;
    assert!(result.unwrap_err().message().contains("after 0 rounds"));
}

#[tokio::test]
async fn an_error_from_the_client_ends_the_request_with_it_in_data() {
    let rejected = McpError::Other { code: -1, message: "User rejected sampling request".into(), data: None };
    let client = FakeClient { fail: Some(("sampling/createMessage", rejected)), ..Default::default() };
    let (result, calls) = run(&client, everything(), V2025_11_25, 4, |_, _, _| {
        ask::<()>(InputRequired::new().sample("capital", sampling()).roots("roots"))
    })
    .await;
    let obj = wire(&result.unwrap_err());
    assert_eq!(obj.code, -32603);
    assert!(obj.message.contains("sampling/createMessage") && obj.message.contains("`capital`"), "{}", obj.message);
    let data = obj.data.unwrap();
    assert_eq!(data["inputRequest"], "capital");
    assert_eq!(data["error"], json!({"code": -1, "message": "User rejected sampling request"}));
    assert_eq!(calls.len(), 1, "the handler is not called again");
}

#[tokio::test]
async fn the_handlers_own_error_passes_through() {
    let client = FakeClient::default();
    let (result, _) =
        run::<String>(&client, everything(), V2025_11_25, 4, |_, _, _| Err(McpError::invalid_params("no such tool")))
            .await;
    assert_eq!(result.unwrap_err(), McpError::invalid_params("no such tool"));
}

#[tokio::test]
async fn a_capability_not_negotiated_is_refused_before_anything_is_sent() {
    let client = FakeClient::default();
    let declared = json!({"elicitation": {}, "roots": {}});
    let (result, _) = run(&client, declared, V2025_11_25, 4, |_, _, _| {
        ask::<()>(InputRequired::new().elicit("q", form()).sample("s", sampling()))
    })
    .await;
    let obj = wire(&result.unwrap_err());
    assert_eq!(obj.code, -32603, "-32021 is a 2026-07-28 code");
    assert_eq!(obj.data.unwrap(), json!({"requiredCapabilities": {"sampling": {}}}));
    assert!(client.methods().is_empty());
}

#[tokio::test]
async fn a_revision_without_the_feature_is_refused_before_anything_is_sent() {
    let client = FakeClient::default();
    let cases = [
        (V2025_03_26, InputRequired::new().elicit("q", form()), "2025-03-26"),
        (V2024_11_05, InputRequired::new().elicit("q", form()), "2024-11-05"),
        (V2025_06_18, InputRequired::new().elicit("u", url_mode()), "2025-06-18"),
        (V2026_07_28, InputRequired::new().roots("r"), "2026-07-28"),
    ];
    for (version, reply, named) in cases {
        let (result, _) = run(&client, everything(), version, 4, move |_, _, _| ask::<()>(reply.clone())).await;
        let err = result.unwrap_err();
        assert_eq!(wire(&err).code, -32603);
        assert!(err.message().contains(named), "{err}");
    }
    assert!(client.methods().is_empty());
}

#[tokio::test]
async fn url_elicitation_gets_the_elicitation_id_2025_11_25_requires() {
    let client = FakeClient::default();
    let (result, _) = run(&client, everything(), V2025_11_25, 4, |n, _, _| match n {
        0 => ask(InputRequired::new().elicit("login", url_mode())),
        _ => Ok(Reply::Complete(())),
    })
    .await;
    result.unwrap();
    let sent = client.sent.lock();
    let InputRequest::Elicit(e) = &sent[0] else { panic!() };
    let ElicitRequestParams::Url(url) = &e.params else { panic!() };
    assert!(url.elicitation_id.as_ref().is_some_and(|id| id.len() >= 16));
}

#[tokio::test]
async fn asking_for_nothing_is_a_handler_bug() {
    let client = FakeClient::default();
    let (result, _) = run(&client, everything(), V2025_11_25, 4, |_, _, _| ask::<()>(InputRequired::new())).await;
    assert_eq!(wire(&result.unwrap_err()).code, -32603);
}

/// Drives `fut` until the paused clock passes `after`, then drops it.
async fn abandon_after<F: Future>(after: Duration, fut: F) {
    assert!(tokio::time::timeout(after, fut).await.is_err(), "the drive must still be waiting");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_drive_abandons_every_waiting_request() {
    let client = FakeClient { hang: true, ..Default::default() };
    let caps = all_caps();
    let invoke = |_: Option<InputResponses>, _: Option<Value>| {
        std::future::ready(ask::<()>(InputRequired::new().elicit("a", form()).roots("b")))
    };
    abandon_after(Duration::from_secs(30), drive(invoke, &client, &caps, V2025_11_25, 4)).await;
    assert_eq!(client.methods().len(), 2);
    assert_eq!(client.max_in_flight.load(Ordering::SeqCst), 2);
    assert_eq!(client.in_flight.load(Ordering::SeqCst), 0, "nothing is left waiting");
}

// ---- one handler, both eras -------------------------------------------------------

/// A two-question wizard written once, in the style the API invites: whatever answer
/// is missing is asked (again), so a first call and a retry lacking answers are the
/// same case.
fn wizard(responses: Option<&InputResponses>, state: Option<&Value>) -> Result<Reply<String>, McpError> {
    let name = |key: &str| match responses.and_then(|r| r.get(key)) {
        Some(InputResponse::Elicit(e)) => e.content.as_ref().map(|c| c["name"].clone()),
        _ => None,
    };
    let step = state.and_then(|s| s["step"].as_u64()).unwrap_or(0);
    match (step, name("first"), name("second")) {
        (1, Some(first), _) => {
            ask(InputRequired::new().elicit("second", form()).state(json!({"step": 2, "first": first})))
        }
        (2, _, Some(second)) => Ok(Reply::Complete(format!("{} and {second}", state.unwrap()["first"]))),
        (2, _, None) => ask(InputRequired::new().elicit("second", form()).state(state.unwrap().clone())),
        _ => ask(InputRequired::new().elicit("first", form()).state(json!({"step": 1}))),
    }
}

/// Plays a 2026-07-28 client: answers every input request and retries with the
/// echoed state, or, when `skip_first_answer`, retries the first time with no answers.
fn modern_client(skip_first_answer: bool) -> (String, usize) {
    use super::modern::{open, seal, Arguments};
    let (key, caps) = (super::StateKey::random(), all_caps());
    let (mut resumed, mut calls, mut skip) = (super::modern::Resumed::default(), 0, skip_first_answer);
    loop {
        calls += 1;
        let reply = wizard(resumed.responses.as_ref(), resumed.state.as_ref()).unwrap();
        let input = match reply {
            Reply::Complete(done) => return (done, calls),
            Reply::InputRequired(input) => input,
        };
        let sealed = seal(&key, MethodName::CallTool, "wizard", Arguments::None, input, &caps).unwrap();
        let answers: InputResponses = if std::mem::take(&mut skip) {
            InputResponses::new()
        } else {
            sealed.input_requests.unwrap().into_keys().map(|k| (k, elicit_answer("accept"))).collect()
        };
        let state = sealed.request_state.as_deref();
        resumed = open(&key, MethodName::CallTool, "wizard", Arguments::None, state, Some(answers)).unwrap();
    }
}

#[tokio::test]
async fn the_same_handler_runs_in_both_eras() {
    let client = FakeClient::default();
    let (legacy, calls) = run(&client, everything(), V2025_11_25, 4, |_, r, s| wizard(r.as_ref(), s.as_ref())).await;
    let legacy = legacy.unwrap();
    assert_eq!(legacy, "\"Ada\" and \"Ada\"");
    assert_eq!(modern_client(false), (legacy.clone(), calls.len()));
    // A retry without the answer is asked again, not refused.
    assert_eq!(modern_client(true), (legacy, calls.len() + 1));
}

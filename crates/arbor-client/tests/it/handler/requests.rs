//! Legacy server requests: supervised tasks, limits, refusals, cancellation, deadline pause.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use arbor_client::handler::{CallLink, ClientLimits, SamplingLimits};
use serde_json::json;

use super::support::{error_code, form_params, rig, sampling_params, Behave, TestHandler, TestLink};

fn roomy() -> ClientLimits {
    ClientLimits { max_server_requests: 1000, ..ClientLimits::default() }
}

#[tokio::test(start_paused = true)]
async fn ping_and_unknown_methods_need_no_callback() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    r.runtime.serve_request(1.into(), "ping", None, None, r.frames.responder());
    assert_eq!(r.frames.next().await, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    r.runtime.serve_request(2.into(), "tools/call", Some(json!({})), None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 2), -32601);
    assert_eq!(r.handler.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_undeclared_capability_is_refused_before_any_callback() {
    // The handler implements every callback but declares only roots.
    let mut r = rig(|tx| TestHandler { roots: true, ..TestHandler::new(tx) }, ClientLimits::default()).await;
    let link: Arc<dyn CallLink> = TestLink::new(7);
    r.runtime.serve_request(
        1.into(),
        "sampling/createMessage",
        Some(sampling_params()),
        Some(link.clone()),
        r.frames.responder(),
    );
    assert_eq!(error_code(&r.frames.next().await, 1), -32601);
    r.runtime.serve_request(2.into(), "elicitation/create", Some(form_params()), Some(link), r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 2), -32601);
    assert_eq!(r.handler.calls(), 0);
    r.runtime.serve_request(3.into(), "roots/list", None, None, r.frames.responder());
    let frame = r.frames.next().await;
    assert_eq!(frame["result"]["roots"][0]["uri"], "file:///work/repo", "dot segments resolved: {frame}");
    assert_eq!(r.handler.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn over_the_cap_the_server_gets_busy_at_once() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Gated;
    for id in 1..=8 {
        r.runtime.serve_request(id.into(), "roots/list", None, None, r.frames.responder());
    }
    r.runtime.serve_request(9.into(), "roots/list", None, None, r.frames.responder());
    let busy = r.frames.try_next().expect("the ninth is answered at once");
    assert_eq!(error_code(&busy, 9), -32000);
    assert_eq!(r.runtime.requests_in_flight(), 8);
    r.handler.gate.add_permits(8);
    let mut ids: Vec<i64> = Vec::new();
    for _ in 0..8 {
        let frame = r.frames.next().await;
        assert!(frame["result"]["roots"].is_array(), "{frame}");
        ids.push(frame["id"].as_i64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, (1..=8).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn a_handler_past_its_timeout_is_stopped_and_answered_internal_error() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Pend;
    let link: Arc<dyn CallLink> = TestLink::new(1);
    r.runtime.serve_request(
        1.into(),
        "sampling/createMessage",
        Some(sampling_params()),
        Some(link.clone()),
        r.frames.responder(),
    );
    let frame = r.frames.next().await;
    assert_eq!(error_code(&frame, 1), -32603);
    assert_eq!(frame["error"]["data"], json!({"reason": "timeout", "timeoutMs": 60_000}));
    // Elicitation waits on a person: five minutes.
    r.runtime.serve_request(2.into(), "elicitation/create", Some(form_params()), Some(link), r.frames.responder());
    let frame = r.frames.next().await;
    assert_eq!(error_code(&frame, 2), -32603);
    assert_eq!(frame["error"]["data"]["timeoutMs"], 300_000);
    assert_eq!(r.handler.abandoned.load(Ordering::SeqCst), 2, "both callbacks were stopped");
    assert_eq!(r.runtime.requests_in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_costs_only_its_request() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Panic;
    r.runtime.serve_request(1.into(), "roots/list", None, None, r.frames.responder());
    let frame = r.frames.next().await;
    assert_eq!(error_code(&frame, 1), -32603);
    assert!(!frame["error"]["message"].as_str().unwrap().contains("blew up"), "panic text stays local: {frame}");
    *r.handler.behave.lock() = Behave::Answer;
    r.runtime.serve_request(2.into(), "roots/list", None, None, r.frames.responder());
    assert!(r.frames.next().await["result"]["roots"].is_array());
}

#[tokio::test(start_paused = true)]
async fn a_handler_error_is_sent_as_is() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Fail;
    r.runtime.serve_request(1.into(), "roots/list", None, None, r.frames.responder());
    let frame = r.frames.next().await;
    assert_eq!(frame["error"], json!({"code": -42, "message": "user said no"}));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_request_is_stopped_and_never_answered() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Gated;
    r.runtime.serve_request(1.into(), "roots/list", None, None, r.frames.responder());
    r.runtime.serve_request(2.into(), "roots/list", None, None, r.frames.responder());
    tokio::task::yield_now().await;
    assert_eq!(r.handler.calls(), 2);
    r.runtime.cancel(&1.into());
    r.runtime.cancel(&99.into()); // unknown ids are ignored
                                  // Let the cancel reach task 1 before the gate opens (a task whose work is ready wins).
    tokio::task::yield_now().await;
    r.handler.gate.add_permits(1);
    let frame = r.frames.next().await;
    assert_eq!(frame["id"], 2);
    // Long past every deadline: still nothing for request 1.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(r.frames.try_next().is_none());
    assert_eq!(r.handler.abandoned.load(Ordering::SeqCst), 1);
    assert_eq!(r.runtime.requests_in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn input_requests_are_rate_limited_per_server() {
    let mut r = rig(TestHandler::all, roomy()).await;
    for id in 1..=25 {
        r.runtime.serve_request(id.into(), "roots/list", None, None, r.frames.responder());
    }
    let (mut ok, mut limited) = (0, 0);
    for _ in 0..25 {
        let frame = r.frames.next().await;
        if frame.get("result").is_some() {
            ok += 1;
        } else {
            assert_eq!(frame["error"]["code"], -1, "the configured rejection code: {frame}");
            assert_eq!(frame["error"]["data"]["reason"], "rate_limited");
            limited += 1;
        }
    }
    assert_eq!((ok, limited), (20, 5), "a burst of 20");
    assert_eq!(r.handler.calls(), 20);
    tokio::time::advance(Duration::from_millis(500)).await;
    for id in 26..=31 {
        r.runtime.serve_request(id.into(), "roots/list", None, None, r.frames.responder());
    }
    let mut ok = 0;
    for _ in 26..=31 {
        ok += usize::from(r.frames.next().await.get("result").is_some());
    }
    assert_eq!(ok, 5, "10/s refills five tokens in half a second");
}

#[tokio::test(start_paused = true)]
async fn the_related_call_is_paused_and_lends_its_assigns() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    let link = TestLink::new(41);
    *r.handler.link.lock() = Some(link.clone());
    let as_link: Arc<dyn CallLink> = link.clone();
    r.runtime.serve_request(
        1.into(),
        "sampling/createMessage",
        Some(sampling_params()),
        Some(as_link),
        r.frames.responder(),
    );
    let frame = r.frames.next().await;
    assert_eq!(frame["result"]["model"], "test-model");
    assert!(frame["result"].get("resultType").is_none(), "no resultType on a legacy answer: {frame}");
    let seen = r.handler.seen().pop().unwrap();
    assert_eq!(seen.paused, 1, "the call's deadline was paused during the callback");
    assert_eq!(link.paused.load(Ordering::SeqCst), 0, "and resumed after");
    assert_eq!(link.pauses.load(Ordering::SeqCst), 1);
    assert_eq!(seen.assigns.as_deref().unwrap()["user"], "alice");
    assert_eq!(seen.related, Some(41.into()));

    // Not tied to a call: the client's assigns, no related id (idle sampling allowed here).
    let limits = ClientLimits {
        sampling: SamplingLimits { allow_idle: true, ..SamplingLimits::default() },
        ..ClientLimits::default()
    };
    let mut r = rig(TestHandler::all, limits).await;
    r.runtime.serve_request(2.into(), "sampling/createMessage", Some(sampling_params()), None, r.frames.responder());
    assert!(r.frames.next().await.get("result").is_some());
    let seen = r.handler.seen().pop().unwrap();
    assert_eq!(seen.assigns.as_deref().unwrap()["client"], true);
    assert_eq!(seen.related, None);
}

#[tokio::test(start_paused = true)]
async fn sampling_checks_apply_before_the_callback() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    let link = || -> Option<Arc<dyn CallLink>> { Some(TestLink::new(1)) };
    // Idle: no call in flight.
    r.runtime.serve_request(1.into(), "sampling/createMessage", Some(sampling_params()), None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 1), -1);
    // With a probe saying a call is in flight, it is not idle.
    r.runtime.set_in_flight_probe(Arc::new(|| 1));
    r.runtime.serve_request(2.into(), "sampling/createMessage", Some(sampling_params()), None, r.frames.responder());
    assert!(r.frames.next().await.get("result").is_some());
    // maxTokens must be positive; a fractional one does not decode.
    for (id, max) in [(3, json!(0)), (4, json!(-1)), (5, json!(1.5)), (6, json!("100"))] {
        let mut p = sampling_params();
        p["maxTokens"] = max;
        r.runtime.serve_request(id.into(), "sampling/createMessage", Some(p), link(), r.frames.responder());
        assert_eq!(error_code(&r.frames.next().await, id), -32602);
    }
    // A tool loop.
    let mut p = sampling_params();
    let turn = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]});
    p["messages"] = json!([turn, turn, turn, turn, turn, turn]);
    r.runtime.serve_request(7.into(), "sampling/createMessage", Some(p), link(), r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 7), -1);
    assert_eq!(r.handler.calls(), 1);
    // Clamped and coerced before the callback sees them.
    let mut p = sampling_params();
    p["maxTokens"] = json!(1_000_000);
    p["includeContext"] = json!("allServers");
    r.runtime.serve_request(8.into(), "sampling/createMessage", Some(p), link(), r.frames.responder());
    assert!(r.frames.next().await.get("result").is_some());
    let seen = r.handler.seen().pop().unwrap();
    assert_eq!(seen.params["maxTokens"], 4096);
    assert_eq!(seen.params["includeContext"], "none");
}

#[tokio::test(start_paused = true)]
async fn elicitation_checks_apply_before_and_after_the_callback() {
    let mut r = rig(
        |tx| TestHandler {
            elicitation: Some(vec![arbor_protocol::model::elicitation::ElicitationMode::Form]),
            ..TestHandler::new(tx)
        },
        roomy(),
    )
    .await;
    // URL mode was not declared.
    let url = json!({"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e1"});
    r.runtime.serve_request(1.into(), "elicitation/create", Some(url), None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 1), -32602);
    // A nested schema is outside the subset.
    let mut nested = form_params();
    nested["requestedSchema"]["properties"]["name"] = json!({"type": "object", "properties": {}});
    r.runtime.serve_request(2.into(), "elicitation/create", Some(nested), None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 2), -32602);
    assert_eq!(r.handler.calls(), 0);
    // An answer that does not fit the schema is not sent.
    *r.handler.elicit_answer.lock() = json!({"action": "accept", "content": {"nickname": "x"}});
    r.runtime.serve_request(3.into(), "elicitation/create", Some(form_params()), None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 3), -32603);
    // A decline never carries content.
    *r.handler.elicit_answer.lock() = json!({"action": "decline", "content": {"name": "secret"}});
    r.runtime.serve_request(4.into(), "elicitation/create", Some(form_params()), None, r.frames.responder());
    assert_eq!(r.frames.next().await["result"], json!({"action": "decline"}));
    // Secret-looking fields are flagged in the context.
    *r.handler.elicit_answer.lock() = json!({"action": "cancel"});
    let mut secret = form_params();
    secret["requestedSchema"]["properties"]["apiToken"] = json!({"type": "string"});
    r.runtime.serve_request(5.into(), "elicitation/create", Some(secret), None, r.frames.responder());
    assert_eq!(r.frames.next().await["result"], json!({"action": "cancel"}));
    assert_eq!(r.handler.seen().pop().unwrap().sensitive, vec!["apiToken".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn url_elicitation_accepts_only_https_and_describes_the_target() {
    let mut r = rig(TestHandler::all, roomy()).await;
    r.runtime.set_server_origin(Some("https://mcp.example.com".into()));
    for (id, url) in [
        (1, "http://mcp.example.com/x"),
        (2, "javascript:alert(1)"),
        (3, "file:///etc/passwd"),
        (4, "https://u:p@mcp.example.com/"),
    ] {
        let p = json!({"mode": "url", "message": "m", "url": url, "elicitationId": "e"});
        r.runtime.serve_request(id.into(), "elicitation/create", Some(p), None, r.frames.responder());
        assert_eq!(error_code(&r.frames.next().await, id), -32602, "{url}");
    }
    assert_eq!(r.handler.calls(), 0);
    *r.handler.elicit_answer.lock() = json!({"action": "accept"});
    let p = json!({"mode": "url", "message": "m", "url": "https://xn--pple-43d.com/login", "elicitationId": "e"});
    r.runtime.serve_request(5.into(), "elicitation/create", Some(p), None, r.frames.responder());
    assert_eq!(r.frames.next().await["result"], json!({"action": "accept"}));
    let target = r.handler.seen().pop().unwrap().url.unwrap();
    assert_eq!((target.host.as_str(), target.idn, target.origin_mismatch), ("xn--pple-43d.com", true, true));
    let p = json!({"mode": "url", "message": "m", "url": "https://mcp.example.com/consent", "elicitationId": "e"});
    r.runtime.serve_request(6.into(), "elicitation/create", Some(p), None, r.frames.responder());
    assert!(r.frames.next().await.get("result").is_some());
    assert!(!r.handler.seen().pop().unwrap().url.unwrap().origin_mismatch);
    // A URL-mode accept with content is not sent.
    *r.handler.elicit_answer.lock() = json!({"action": "accept", "content": {"token": "x"}});
    let p = json!({"mode": "url", "message": "m", "url": "https://mcp.example.com/consent", "elicitationId": "e"});
    r.runtime.serve_request(7.into(), "elicitation/create", Some(p), None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 7), -32603);
}

#[tokio::test(start_paused = true)]
async fn roots_answers_keep_only_local_files() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.roots_answer.lock() = json!({"roots": [
        {"uri": "file://localhost/a/b/../c"}, {"uri": "https://example.com/"}, {"uri": "file://nas/share"}
    ]});
    r.runtime.serve_request(1.into(), "roots/list", None, None, r.frames.responder());
    assert_eq!(r.frames.next().await["result"], json!({"roots": [{"uri": "file:///a/c"}]}));
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_running_requests_unanswered() {
    let mut r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Gated;
    r.runtime.serve_request(1.into(), "roots/list", None, None, r.frames.responder());
    tokio::task::yield_now().await;
    r.runtime.shutdown().await;
    assert_eq!(r.runtime.requests_in_flight(), 0);
    assert_eq!(r.handler.abandoned.load(Ordering::SeqCst), 1);
    assert!(r.frames.try_next().is_none());
    r.runtime.serve_request(2.into(), "roots/list", None, None, r.frames.responder());
    assert_eq!(error_code(&r.frames.next().await, 2), -32603);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_last_handle_stops_running_requests() {
    let r = rig(TestHandler::all, ClientLimits::default()).await;
    *r.handler.behave.lock() = Behave::Gated;
    r.runtime.serve_request(1.into(), "roots/list", None, None, r.frames.responder());
    tokio::task::yield_now().await;
    assert_eq!(r.handler.calls(), 1);
    let (handler, mut frames) = (r.handler, r.frames);
    drop(r.runtime);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(handler.abandoned.load(Ordering::SeqCst), 1, "the task was stopped");
    assert!(frames.try_next().is_none(), "and not answered");
}

//! The notification worker: arrival order, panics skipped, overflow dropped and counted,
//! logs rate-limited and sanitised.

use arbor_client::handler::ClientLimits;
use serde_json::{json, Map, Value};

use super::support::{rig, TestHandler};

#[tokio::test(start_paused = true)]
async fn notifications_arrive_in_order_and_a_panic_is_skipped() {
    let mut r = rig(TestHandler::new, ClientLimits::default()).await;
    r.runtime.notify("notifications/tools/list_changed", None);
    r.runtime.notify("test/boom", Some(json!({})));
    r.runtime.notify("notifications/resources/updated", Some(json!({"uri": "file:///x"})));
    let (m1, p1) = r.notes.recv().await.unwrap();
    let (m2, p2) = r.notes.recv().await.unwrap();
    assert_eq!((m1.as_str(), Value::Object(p1)), ("notifications/tools/list_changed", json!({})));
    assert_eq!((m2.as_str(), Value::Object(p2)), ("notifications/resources/updated", json!({"uri": "file:///x"})));
    assert_eq!(r.runtime.dropped_notifications(), 0);
}

#[tokio::test(start_paused = true)]
async fn beyond_the_queue_new_notifications_are_dropped_and_counted() {
    let mut r = rig(TestHandler::new, ClientLimits::default()).await;
    r.runtime.notify("test/gated", Some(json!({"n": 0})));
    let (first, _) = r.notes.recv().await.unwrap();
    assert_eq!(first, "test/gated", "the worker holds the first one");
    for n in 1..=1005 {
        r.runtime.notify("test/n", Some(json!({"n": n})));
    }
    assert_eq!(r.runtime.dropped_notifications(), 5);
    r.handler.gate.add_permits(1);
    for n in 1..=1000 {
        let (method, params) = r.notes.recv().await.unwrap();
        assert_eq!((method.as_str(), &params["n"]), ("test/n", &json!(n)));
    }
    r.runtime.notify("test/n", Some(json!({"n": "after"})));
    assert_eq!(r.notes.recv().await.unwrap().1["n"], "after", "the newest were the ones dropped");
}

#[tokio::test(start_paused = true)]
async fn logs_are_rate_limited_and_sanitised() {
    let mut r = rig(TestHandler::new, ClientLimits::default()).await;
    let shown = r.runtime.notify(
        "notifications/message",
        Some(json!({"level": "shout", "logger": "x\u{1b}[2J", "data": {"msg": "a\u{202e}b\nc"}, "_meta": {"k": 1}})),
    );
    let want = json!({"level": "info", "logger": "x[2J", "data": {"msg": "abc"}});
    assert_eq!(shown.map(Value::Object), Some(want.clone()), "the connection's subscribers get the same safe text");
    let (method, params) = r.notes.recv().await.unwrap();
    let mut want_seen: Map<String, Value> = want.as_object().unwrap().clone();
    want_seen.insert("seenLevel".into(), json!("info"));
    assert_eq!((method.as_str(), params), ("log", want_seen));
    for i in 0..104 {
        r.runtime.notify("notifications/message", Some(json!({"level": "debug", "data": i})));
    }
    assert_eq!(r.runtime.dropped_logs(), 5, "a burst of 100 per connection");
    assert_eq!(r.runtime.notify("notifications/message", Some(json!({"level": "debug", "data": 0}))), None);
    tokio::time::advance(std::time::Duration::from_secs(1)).await;
    assert!(r.runtime.notify("notifications/message", Some(json!({"level": "debug", "data": 0}))).is_some());
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_worker() {
    let mut r = rig(TestHandler::new, ClientLimits::default()).await;
    r.runtime.notify("test/n", Some(json!({"n": 1})));
    assert_eq!(r.notes.recv().await.unwrap().1["n"], 1);
    r.runtime.shutdown().await;
    r.runtime.notify("test/n", Some(json!({"n": 2})));
    assert_eq!(r.runtime.dropped_notifications(), 1, "no worker takes it");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(r.notes.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn notification_callbacks_see_the_client_the_server_and_the_era() {
    let mut r = rig(TestHandler::new, ClientLimits::default()).await;
    r.runtime.notify("test/ctx", None);
    assert_eq!(
        Value::Object(r.notes.recv().await.unwrap().1),
        json!({"client": "test-client", "server": "srv-1", "era": "None"})
    );
    r.runtime.set_era(arbor_client::handler::Era::Modern);
    r.runtime.notify("test/ctx", None);
    assert_eq!(r.notes.recv().await.unwrap().1["era"], "Some(Modern)");
}

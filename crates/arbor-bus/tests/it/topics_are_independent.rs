use arbor_bus::{Bus, BusMessage, LocalBus, SubscribeOptions};
use serde_json::json;

use crate::support::{drain, payload};

#[tokio::test(start_paused = true)]
async fn each_subscriber_receives_only_its_topics() {
    let bus = LocalBus::new();
    let mut subs: Vec<_> =
        (0..1_000).map(|i| bus.subscribe(&format!("topic-{i}"), SubscribeOptions::default())).collect();
    for i in (0..1_000).rev() {
        bus.publish(BusMessage::new(format!("topic-{i}"), json!(i))).unwrap();
    }
    for (i, sub) in subs.iter_mut().enumerate() {
        let events = drain(sub);
        assert_eq!(events.len(), 1, "topic-{i}");
        assert_eq!(payload(Some(events[0].clone())), json!(i));
    }
}

#[tokio::test(start_paused = true)]
async fn one_subscriber_may_hold_several_topics() {
    let bus = LocalBus::new();
    let mut tools = bus.subscribe("tools", SubscribeOptions::coalesce());
    let mut resources = bus.subscribe("resources", SubscribeOptions::coalesce());
    bus.publish(BusMessage::new("tools", json!("t")).with_key("tools")).unwrap();
    bus.publish(BusMessage::new("resources", json!("r")).with_key("file:///a")).unwrap();
    assert_eq!(payload(tools.recv().await), json!("t"));
    assert_eq!(payload(resources.recv().await), json!("r"));
    assert_eq!(tools.topic(), "tools");
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_on_one_topic_does_not_touch_another() {
    let bus = LocalBus::new();
    let mut full = bus.subscribe("busy", SubscribeOptions::end_stream().with_capacity(1));
    let mut calm = bus.subscribe("calm", SubscribeOptions::end_stream().with_capacity(1));
    bus.publish(BusMessage::new("busy", json!(1))).unwrap();
    bus.publish(BusMessage::new("busy", json!(2))).unwrap();
    bus.publish(BusMessage::new("calm", json!(3))).unwrap();
    assert!(full.end_reason().is_some());
    assert_eq!(calm.end_reason(), None);
    assert_eq!(payload(calm.recv().await), json!(3));
    assert_eq!(payload(full.recv().await), json!(1));
    assert_eq!(full.recv().await, None);
}

use std::sync::Arc;

use arbor_bus::{Bus, BusMessage, LocalBus, SubscribeOptions};
use serde_json::json;

use crate::support::payload;

#[tokio::test(start_paused = true)]
async fn the_count_returns_to_zero_and_the_topic_is_forgotten() {
    let bus = LocalBus::new();
    let subs: Vec<_> =
        (0..1_000).map(|i| bus.subscribe(&format!("t{}", i % 10), SubscribeOptions::default())).collect();
    assert_eq!((bus.subscriber_count(), bus.topic_count()), (1_000, 10));
    drop(subs);
    assert_eq!((bus.subscriber_count(), bus.topic_count()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn dropping_one_leaves_the_others_subscribed() {
    let bus = LocalBus::new();
    let mut subs: Vec<_> = (0..10).map(|_| bus.subscribe("feed", SubscribeOptions::default())).collect();
    // Drop from the middle, the front and the back: the slot list is compacted by swapping.
    subs.remove(5);
    subs.remove(0);
    subs.pop();
    assert_eq!(bus.subscriber_count(), 7);
    bus.publish(BusMessage::new("feed", json!("still here"))).unwrap();
    for sub in &mut subs {
        assert_eq!(payload(sub.recv().await), json!("still here"));
    }
}

#[tokio::test(start_paused = true)]
async fn a_topic_emptied_and_refilled_delivers_to_the_newcomer() {
    let bus = LocalBus::new();
    drop(bus.subscribe("feed", SubscribeOptions::default()));
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    bus.publish(BusMessage::new("feed", json!(1))).unwrap();
    assert_eq!(payload(sub.recv().await), json!(1));
}

/// Subscriptions made and dropped on several threads while others publish to the same
/// topics: nothing is left registered, and no subscription misses a message published
/// while it was registered (each thread checks its own).
#[test]
fn concurrent_churn_leaves_nothing_behind() {
    let bus = Arc::new(LocalBus::new());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let bus = bus.clone();
            scope.spawn(move || {
                for i in 0..2_000 {
                    let topic = format!("t{}", i % 3);
                    let mut sub = bus.subscribe(&topic, SubscribeOptions::default().with_capacity(1 << 20));
                    bus.publish(BusMessage::new(topic.as_str(), json!([t, i]))).unwrap();
                    let mut mine = false;
                    while let Ok(event) = sub.try_recv() {
                        mine |= payload(Some(event)) == json!([t, i]);
                    }
                    assert!(mine, "thread {t} missed its own message {i}");
                }
            });
        }
    });
    assert_eq!((bus.subscriber_count(), bus.topic_count()), (0, 0));
}

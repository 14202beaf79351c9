use std::sync::Arc;

use arbor_bus::{Bus, BusEvent, BusMessage, LocalBus, SubscribeOptions};
use futures::StreamExt;
use serde_json::json;

use crate::support::{next, payload};

#[tokio::test(start_paused = true)]
async fn every_subscriber_receives_every_message_in_order() {
    let bus = LocalBus::new();
    let mut subs: Vec<_> = (0..100).map(|_| bus.subscribe("feed", SubscribeOptions::default())).collect();
    assert_eq!(bus.subscriber_count(), 100);
    for i in 0..10 {
        bus.publish(BusMessage::new("feed", json!(i))).unwrap();
    }
    for sub in &mut subs {
        for i in 0..10 {
            assert_eq!(payload(next(sub, 1).await), json!(i));
        }
        assert!(sub.try_recv().is_err());
    }
}

#[tokio::test(start_paused = true)]
async fn subscribers_share_one_copy_of_the_message() {
    let bus = LocalBus::new();
    let mut a = bus.subscribe("feed", SubscribeOptions::default());
    let mut b = bus.subscribe("feed", SubscribeOptions::default());
    bus.publish(BusMessage::new("feed", json!({"big": "payload"})).with_key("k")).unwrap();
    let (Some(BusEvent::Message(ma)), Some(BusEvent::Message(mb))) = (a.recv().await, b.recv().await) else {
        panic!("expected messages");
    };
    assert!(Arc::ptr_eq(&ma, &mb));
    assert_eq!(ma.key.as_deref(), Some("k"));
    assert_eq!(&*ma.topic, "feed");
}

#[tokio::test(start_paused = true)]
async fn a_waiting_subscriber_is_woken_by_a_publish() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    let waiter = tokio::spawn(async move { payload(sub.recv().await) });
    tokio::task::yield_now().await;
    bus.publish(BusMessage::new("feed", json!("hello"))).unwrap();
    assert_eq!(waiter.await.unwrap(), json!("hello"));
}

#[tokio::test(start_paused = true)]
async fn a_subscription_is_a_stream() {
    let bus = LocalBus::new();
    let sub = bus.subscribe("feed", SubscribeOptions::default());
    for i in 0..3 {
        bus.publish(BusMessage::new("feed", json!(i))).unwrap();
    }
    bus.close();
    let got: Vec<_> = sub.map(|e| payload(Some(e))).collect().await;
    assert_eq!(got, vec![json!(0), json!(1), json!(2)]);
}

#[tokio::test(start_paused = true)]
async fn a_message_published_before_subscribing_is_not_received() {
    let bus = LocalBus::new();
    bus.publish(BusMessage::new("feed", json!("early"))).unwrap();
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    bus.publish(BusMessage::new("feed", json!("late"))).unwrap();
    assert_eq!(payload(next(&mut sub, 1).await), json!("late"));
}

use arbor_bus::{Bus, BusMessage, EndReason, LocalBus, PublishError, SubscribeOptions};
use serde_json::json;

use crate::support::payload;

#[tokio::test(start_paused = true)]
async fn queued_messages_come_first_then_the_end() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    let waiting = bus.subscribe("other", SubscribeOptions::default());
    let waiter = tokio::spawn(async move {
        let mut waiting = waiting;
        (waiting.recv().await, waiting.end_reason())
    });
    tokio::task::yield_now().await;
    bus.publish(BusMessage::new("feed", json!(1))).unwrap();
    bus.close();
    assert_eq!(payload(sub.recv().await), json!(1));
    assert_eq!(sub.recv().await, None);
    assert_eq!(sub.end_reason(), Some(EndReason::Closed));
    assert_eq!(waiter.await.unwrap(), (None, Some(EndReason::Closed)));
}

#[tokio::test(start_paused = true)]
async fn later_publishes_fail_and_later_subscriptions_start_ended() {
    let bus = LocalBus::new();
    bus.close();
    let err = bus.publish(BusMessage::new("feed", json!(1))).unwrap_err();
    assert!(matches!(err, PublishError::Closed { ref topic } if &**topic == "feed"));
    assert_eq!(err.to_string(), "publish to topic \"feed\": the bus is closed");
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    assert_eq!(sub.recv().await, None);
    assert_eq!((sub.topic(), sub.end_reason()), ("feed", Some(EndReason::Closed)));
    assert_eq!(bus.subscriber_count(), 0);
    drop(sub);
    assert_eq!(bus.subscriber_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_last_handle_closes_the_bus() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    let clone = bus.clone();
    drop(bus);
    assert_eq!(sub.end_reason(), None);
    drop(clone);
    assert_eq!(sub.recv().await, None);
    assert_eq!(sub.end_reason(), Some(EndReason::Closed));
}

#[tokio::test(start_paused = true)]
async fn the_bus_works_as_a_trait_object() {
    let bus: std::sync::Arc<dyn Bus> = std::sync::Arc::new(LocalBus::new());
    let mut sub = bus.subscribe("feed", SubscribeOptions::default());
    bus.settled().await;
    bus.publish(BusMessage::new("feed", json!("dyn"))).unwrap();
    assert_eq!(payload(sub.recv().await), json!("dyn"));
}

#[test]
fn buses_and_subscriptions_can_move_between_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<LocalBus>();
    send_sync::<arbor_bus::RedisBus>();
    send_sync::<std::sync::Arc<dyn Bus>>();
    send_sync::<arbor_bus::Subscription>();
    send_sync::<arbor_bus::BusEvent>();
}

/// An in-process bus is up until it is closed, then closed for good.
#[test]
fn a_local_bus_reports_up_until_it_is_closed() {
    use arbor_bus::BusHealth;
    let bus = arbor_bus::LocalBus::new();
    assert_eq!(bus.health(), BusHealth::Up);
    assert!(bus.health().is_ready_within(std::time::Duration::ZERO));
    bus.close();
    assert_eq!(bus.health(), BusHealth::Closed);
    assert!(!bus.health().is_ready_within(std::time::Duration::MAX));
}

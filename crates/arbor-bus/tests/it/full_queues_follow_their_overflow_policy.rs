use arbor_bus::{Bus, BusEvent, BusMessage, EndReason, LocalBus, Overflow, SubscribeOptions, TryRecvError};
use serde_json::json;

use crate::support::{drain, dropped, payload};

fn msg(i: u64) -> BusMessage {
    BusMessage::new("feed", json!(i))
}

fn keyed(key: &str, i: u64) -> BusMessage {
    BusMessage::new("feed", json!(i)).with_key(key)
}

fn payloads(events: &[BusEvent]) -> Vec<serde_json::Value> {
    events.iter().map(|e| payload(Some(e.clone()))).collect()
}

#[tokio::test(start_paused = true)]
async fn drop_oldest_keeps_the_newest_and_reports_the_count_before_them() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::drop_oldest().with_capacity(4));
    for i in 0..10 {
        bus.publish(msg(i)).unwrap();
    }
    assert_eq!(sub.queued(), 4);
    assert_eq!(sub.dropped(), 6);
    assert_eq!(sub.recv().await, dropped(6));
    assert_eq!(payloads(&drain(&mut sub)), [json!(6), json!(7), json!(8), json!(9)]);

    // A later overflow reports only its own drops, again before the messages that survived.
    for i in 10..15 {
        bus.publish(msg(i)).unwrap();
    }
    assert_eq!(sub.recv().await, dropped(1));
    assert_eq!(payloads(&drain(&mut sub)), [json!(11), json!(12), json!(13), json!(14)]);
    assert_eq!(sub.dropped(), 7);
}

#[tokio::test(start_paused = true)]
async fn coalesce_replaces_the_queued_message_with_the_same_key() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::coalesce().with_capacity(8));
    bus.publish(keyed("tools", 1)).unwrap();
    bus.publish(keyed("res://a", 2)).unwrap();
    bus.publish(keyed("tools", 3)).unwrap();
    bus.publish(keyed("tools", 4)).unwrap();
    bus.publish(keyed("res://a", 5)).unwrap();
    // Each key keeps its first position and its latest payload; nothing was lost, so no gap.
    assert_eq!(payloads(&drain(&mut sub)), [json!(4), json!(5)]);
    assert_eq!((sub.coalesced(), sub.dropped()), (3, 0));
    // Once received, a key starts over.
    bus.publish(keyed("tools", 6)).unwrap();
    assert_eq!(payloads(&drain(&mut sub)), [json!(6)]);
}

#[tokio::test(start_paused = true)]
async fn coalesce_drops_the_oldest_when_full_and_nothing_shares_the_key() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::coalesce().with_capacity(3));
    bus.publish(keyed("a", 1)).unwrap();
    bus.publish(msg(2)).unwrap();
    bus.publish(keyed("b", 3)).unwrap();
    bus.publish(keyed("a", 4)).unwrap(); // coalesces into the full queue
    bus.publish(keyed("c", 5)).unwrap(); // full, no "c": the oldest goes
    bus.publish(msg(6)).unwrap(); // unkeyed never coalesces: the oldest goes
    assert_eq!((sub.coalesced(), sub.dropped()), (1, 2));
    assert_eq!(sub.recv().await, dropped(2));
    assert_eq!(payloads(&drain(&mut sub)), [json!(3), json!(5), json!(6)]);
}

#[tokio::test(start_paused = true)]
async fn end_stream_delivers_what_was_queued_then_ends_with_the_reason() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions::end_stream().with_capacity(3));
    for i in 0..5 {
        bus.publish(msg(i)).unwrap();
    }
    assert_eq!(sub.end_reason(), Some(EndReason::Overflow));
    for i in 0..3 {
        assert_eq!(payload(sub.recv().await), json!(i));
    }
    assert_eq!(sub.recv().await, None);
    assert_eq!(sub.try_recv(), Err(TryRecvError::Ended(EndReason::Overflow)));
    // Ended but not yet dropped: still counted, never fed again.
    assert_eq!(bus.subscriber_count(), 1);
    bus.publish(msg(9)).unwrap();
    assert_eq!(sub.recv().await, None);
    drop(sub);
    assert_eq!(bus.subscriber_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn no_policy_queues_more_than_its_capacity() {
    let bus = LocalBus::new();
    let policies = [Overflow::DropOldest, Overflow::Coalesce, Overflow::EndStream];
    let subs: Vec<_> =
        policies.iter().map(|&overflow| bus.subscribe("feed", SubscribeOptions { capacity: 16, overflow })).collect();
    for i in 0..10_000 {
        // Half keyed with a few keys, half not, to exercise both paths of Coalesce.
        let m = if i % 2 == 0 { keyed(["a", "b", "c"][i as usize % 3], i) } else { msg(i) };
        bus.publish(m).unwrap();
        assert!(subs.iter().all(|s| s.queued() <= 16));
    }
    assert_eq!(subs[0].dropped(), 10_000 - 16);
    assert!(subs[1].coalesced() > 0 && subs[1].dropped() > 0);
    assert_eq!(subs[2].end_reason(), Some(EndReason::Overflow));
}

#[tokio::test(start_paused = true)]
async fn a_capacity_of_zero_means_one() {
    let bus = LocalBus::new();
    let mut sub = bus.subscribe("feed", SubscribeOptions { capacity: 0, overflow: Overflow::DropOldest });
    bus.publish(msg(1)).unwrap();
    bus.publish(msg(2)).unwrap();
    assert_eq!(sub.recv().await, dropped(1));
    assert_eq!(payload(sub.recv().await), json!(2));
}

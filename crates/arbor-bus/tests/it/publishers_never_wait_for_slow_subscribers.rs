use arbor_bus::{Bus, BusMessage, LocalBus, SubscribeOptions};
use serde_json::json;

use crate::support::{drain, dropped, payload};

/// One publisher, one fast subscriber task, one subscriber that never reads. The publisher
/// publishes 10,000 messages yielding between them (so the fast subscriber runs): it never
/// waits (publish is synchronous and the loop finishes), the fast subscriber gets every
/// message in order with no gap, and the slow one holds exactly its capacity.
#[tokio::test(start_paused = true)]
async fn a_slow_subscriber_slows_neither_the_publisher_nor_the_others() {
    const N: u64 = 10_000;
    let bus = LocalBus::new();
    let mut fast = bus.subscribe("feed", SubscribeOptions::drop_oldest().with_capacity(8));
    let mut slow = bus.subscribe("feed", SubscribeOptions::drop_oldest().with_capacity(8));
    let reader = tokio::spawn(async move {
        let mut seen = 0;
        while seen < N {
            assert_eq!(payload(fast.recv().await), json!(seen), "the fast subscriber lost a message");
            seen += 1;
        }
        seen
    });
    for i in 0..N {
        bus.publish(BusMessage::new("feed", json!(i))).unwrap();
        tokio::task::yield_now().await;
    }
    assert_eq!(reader.await.unwrap(), N);
    assert_eq!(slow.queued(), 8);
    assert_eq!(slow.dropped(), N - 8);
    let events = drain(&mut slow);
    assert_eq!(events[0], dropped(N - 8).unwrap());
    assert_eq!(events.len(), 9);
    assert_eq!(payload(Some(events[8].clone())), json!(N - 1));
}

/// Publishing from plain threads while nobody on a runtime reads: the calls all return.
#[test]
fn publishing_works_from_any_thread_without_a_runtime() {
    let bus = LocalBus::new();
    let subs: Vec<_> = (0..50).map(|_| bus.subscribe("feed", SubscribeOptions::default().with_capacity(4))).collect();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let bus = &bus;
            scope.spawn(move || {
                for i in 0..1_000 {
                    bus.publish(BusMessage::new("feed", json!([t, i]))).unwrap();
                }
            });
        }
    });
    assert!(subs.iter().all(|s| s.queued() == 4 && s.dropped() == 4_000 - 4));
}

#[tokio::test(start_paused = true)]
async fn publishing_to_a_topic_nobody_follows_is_accepted_and_goes_nowhere() {
    let bus = LocalBus::new();
    let mut other = bus.subscribe("other", SubscribeOptions::default());
    for i in 0..1_000 {
        bus.publish(BusMessage::new("nobody", json!(i))).unwrap();
    }
    assert_eq!(bus.topic_count(), 1);
    assert!(other.try_recv().is_err());
}

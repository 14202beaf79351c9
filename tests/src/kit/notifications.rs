//! The notification ledger: every event published on a bus and what each subscriber
//! received of it, and the accounting checked at the end.
//!
//! The request [`Ledger`](super::ledger::Ledger) accounts for answers; this one for
//! streams. A test numbers the events it publishes ([`NotificationLedger::published`],
//! sequence numbers increasing, each with its coalescing key if it has one) and records,
//! per subscriber, what arrived in arrival order: an event by its number, a gap marker
//! (the product's "you may have missed something here"), or the end of the stream. At
//! [`NotificationLedger::finish`] every subscriber must have received each event at most
//! once and in order, and every event it did not receive must be covered: by a gap marker
//! between the received events around it, by a later event of the same key that
//! superseded it ([`Policy::Coalesce`]), or by the stream's graceful end before it. The
//! last event published must have been received, or the stream have ended: never silence.
//!
//! Why the gap's position is checkable: a bounded queue drops its oldest messages and
//! reports the gap before what it still holds, and a reconnection's gap sits where the
//! connection was lost, so a lost event always lies between the last event received
//! before its gap and the first received after. Under `Coalesce` a replaced message keeps
//! its place in the queue, so order (and a gap's position) is only defined per key.
//!
//! It is not a transport or a parser: drivers classify what they read (the product's
//! notification, or the kit's [`SEQ`]/[`GAP`] `_meta` keys a test handler writes).
//!
//! Invariant: a violation is never dropped; [`NotificationLedger::finish`] fails with all
//! of them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde_json::{json, Value};

/// The `_meta` key of an event's sequence number in a test handler's notification.
pub const SEQ: &str = "arbor.kit/seq";
/// The `_meta` key a test handler's gap notification carries (`true`).
pub const GAP: &str = "arbor.kit/gap";

/// The `_meta` of the notification for event `seq`.
pub fn seq_meta(seq: u64) -> Value {
    json!({ SEQ: seq })
}

/// The `_meta` of a gap notification.
pub fn gap_meta() -> Value {
    json!({ GAP: true })
}

/// What one received notification stands for, read from the kit's `_meta` keys; `None`
/// for a message that carries neither (a response, another notification).
pub fn classify(message: &Value) -> Option<Seen> {
    let meta = &message["params"]["_meta"];
    if let Some(seq) = meta[SEQ].as_u64() {
        Some(Seen::Event(seq))
    } else if meta[GAP] == true {
        Some(Seen::Gap)
    } else {
        None
    }
}

/// The overflow policy the subscriptions under test run with (arbor-bus's `Overflow`,
/// named here so the kit depends on no workspace crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    DropOldest,
    Coalesce,
    EndStream,
}

/// One thing a subscriber received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Event number `seq`.
    Event(u64),
    /// A gap marker: events may have been lost here.
    Gap,
    /// The stream ended gracefully; nothing may follow.
    End,
}

/// One subscriber's accounting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Account {
    pub delivered: usize,
    pub gaps: usize,
    /// Events lost at a gap marker.
    pub lost_at_gaps: usize,
    /// Events superseded by a later one of the same key.
    pub coalesced: usize,
    /// Events published after what the stream delivered before its graceful end.
    pub after_end: usize,
    pub ended: bool,
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delivered {}, {} gaps covering {}, coalesced {}, {}",
            self.delivered,
            self.gaps,
            self.lost_at_gaps,
            self.coalesced,
            if self.ended { format!("ended, {} after its end", self.after_end) } else { "not ended".into() }
        )
    }
}

/// The accounting of a finished run, per subscriber.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub published: usize,
    pub subscribers: BTreeMap<String, Account>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} events published", self.published)?;
        for (name, account) in &self.subscribers {
            write!(f, "; {name}: {account}")?;
        }
        Ok(())
    }
}

/// Events published and what each subscriber received.
#[derive(Debug)]
pub struct NotificationLedger {
    name: String,
    policy: Policy,
    /// `(seq, key)` in publishing order.
    published: Vec<(u64, Option<String>)>,
    received: BTreeMap<String, Vec<Seen>>,
    violations: Vec<String>,
}

impl NotificationLedger {
    /// An empty ledger for the run `name`, whose subscriptions overflow by `policy`.
    pub fn new(name: impl Into<String>, policy: Policy) -> NotificationLedger {
        NotificationLedger {
            name: name.into(),
            policy,
            published: Vec::new(),
            received: BTreeMap::new(),
            violations: Vec::new(),
        }
    }

    /// Records event `seq` published (numbers increase) with coalescing key `key`.
    pub fn published(&mut self, seq: u64, key: Option<&str>) {
        if self.published.last().is_some_and(|(last, _)| *last >= seq) {
            self.violations.push(format!("published {seq} after a number at least as large"));
        }
        self.published.push((seq, key.map(str::to_owned)));
    }

    /// Takes back event `seq`, recorded as published but refused at the source (a full
    /// outbound queue): nobody owes it.
    pub fn refused(&mut self, seq: u64) {
        self.published.retain(|(s, _)| *s != seq);
    }

    /// Registers `subscriber` (so a subscriber that received nothing is still checked).
    pub fn subscriber(&mut self, subscriber: &str) {
        self.received.entry(subscriber.to_owned()).or_default();
    }

    /// Records what `subscriber` received next.
    pub fn seen(&mut self, subscriber: &str, seen: Seen) {
        let log = self.received.entry(subscriber.to_owned()).or_default();
        if log.last() == Some(&Seen::End) {
            self.violations.push(format!("{subscriber}: {seen:?} after the end of its stream"));
        }
        log.push(seen);
    }

    /// Whether `subscriber` is done: it received the last event published, or its end.
    pub fn is_done(&self, subscriber: &str) -> bool {
        let Some(log) = self.received.get(subscriber) else { return false };
        let last = self.published.last().map(|(seq, _)| Seen::Event(*seq));
        log.contains(&Seen::End) || (last.is_some() && log.contains(&last.unwrap()))
    }

    /// Whether `subscriber` was told its source failed after the last event published:
    /// its stream ended, or it received a gap marker after that event (or after its
    /// last event, when that one was lost too).
    pub fn signalled(&self, subscriber: &str) -> bool {
        let Some(log) = self.received.get(subscriber) else { return false };
        let last = self.published.last().map(|(seq, _)| *seq).unwrap_or(0);
        let after = log.iter().rposition(|s| matches!(s, Seen::Event(seq) if *seq <= last)).map_or(0, |p| p + 1);
        log.contains(&Seen::End) || log[after..].contains(&Seen::Gap)
    }

    /// Whether `subscriber`'s stream ended.
    pub fn ended(&self, subscriber: &str) -> bool {
        self.received.get(subscriber).is_some_and(|log| log.contains(&Seen::End))
    }

    /// Events published so far.
    pub fn len(&self) -> usize {
        self.published.len()
    }

    /// Whether nothing was published.
    pub fn is_empty(&self) -> bool {
        self.published.is_empty()
    }

    /// Checks every subscriber, prints the summary and returns it; fails with every
    /// violation found.
    pub fn finish(mut self) -> Summary {
        let mut summary = Summary { published: self.published.len(), ..Summary::default() };
        let received = std::mem::take(&mut self.received);
        for (subscriber, log) in &received {
            let account = self.check(subscriber, log);
            summary.subscribers.insert(subscriber.clone(), account);
        }
        println!("[kit] {}: {summary}", self.name);
        assert!(
            self.violations.is_empty(),
            "{}: {} violations:\n{}",
            self.name,
            self.violations.len(),
            self.violations.iter().take(50).cloned().collect::<Vec<_>>().join("\n")
        );
        summary
    }

    /// The order class of an event: its key under `Coalesce`, one class otherwise.
    fn class<'a>(&self, key: &'a Option<String>) -> Option<&'a str> {
        match self.policy {
            Policy::Coalesce => key.as_deref(),
            _ => None,
        }
    }

    fn check(&mut self, subscriber: &str, log: &[Seen]) -> Account {
        let key_of: HashMap<u64, &Option<String>> = self.published.iter().map(|(s, k)| (*s, k)).collect();
        let mut account = Account { ended: log.contains(&Seen::End), ..Account::default() };
        // Position of each delivered event in the log, and the last delivered per class.
        let mut at: HashMap<u64, usize> = HashMap::new();
        let mut last: HashMap<Option<&str>, u64> = HashMap::new();
        for (position, seen) in log.iter().enumerate() {
            match *seen {
                Seen::Event(seq) => {
                    let Some(key) = key_of.get(&seq) else {
                        self.violations.push(format!("{subscriber}: event {seq}, never published"));
                        continue;
                    };
                    if at.insert(seq, position).is_some() {
                        self.violations.push(format!("{subscriber}: event {seq} delivered twice"));
                        continue;
                    }
                    let class = self.class(key);
                    if let Some(before) = last.insert(class, seq).filter(|before| *before > seq) {
                        self.violations.push(format!("{subscriber}: event {seq} delivered after {before}"));
                    }
                    account.delivered += 1;
                }
                Seen::Gap => account.gaps += 1,
                Seen::End => {}
            }
        }
        let end_at = log.iter().position(|s| *s == Seen::End);
        let gaps: Vec<usize> = log.iter().enumerate().filter(|(_, s)| **s == Seen::Gap).map(|(i, _)| i).collect();
        // For each class, its delivered events in order, for the neighbours of a lost one.
        let mut delivered: HashMap<Option<&str>, Vec<(u64, usize)>> = HashMap::new();
        for (seq, key) in &self.published {
            if let Some(position) = at.get(seq) {
                delivered.entry(self.class(key)).or_default().push((*seq, *position));
            }
        }
        let mut violations = Vec::new();
        for (seq, key) in &self.published {
            if at.contains_key(seq) {
                continue;
            }
            let class = self.class(key);
            let mine = delivered.get(&class).map(Vec::as_slice).unwrap_or(&[]);
            let next = mine.partition_point(|(s, _)| s < seq);
            let before = next.checked_sub(1).map(|i| mine[i].1);
            let after = mine.get(next).map(|(_, p)| *p);
            // Superseded: a later event of its key was delivered in its stead.
            if self.policy == Policy::Coalesce && key.is_some() && after.is_some() {
                account.coalesced += 1;
                continue;
            }
            let from = before.map_or(0, |p| p + 1);
            let to = after.unwrap_or(log.len());
            if gaps.iter().any(|g| (from..to).contains(g)) {
                account.lost_at_gaps += 1;
            } else if after.is_none() && end_at.is_some_and(|e| e >= from) {
                account.after_end += 1;
            } else {
                violations.push(*seq);
            }
        }
        if !violations.is_empty() {
            let shown: Vec<String> = violations.iter().take(10).map(u64::to_string).collect();
            self.violations.push(format!(
                "{subscriber}: {} events silently lost (first: {})",
                violations.len(),
                shown.join(", ")
            ));
        }
        if !self.is_done_in(log) {
            self.violations.push(format!("{subscriber}: neither the last event nor an end arrived (silence)"));
        }
        account
    }

    fn is_done_in(&self, log: &[Seen]) -> bool {
        match self.published.last() {
            None => true,
            Some((seq, _)) => log.contains(&Seen::End) || log.contains(&Seen::Event(*seq)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(policy: Policy, n: u64, key: impl Fn(u64) -> Option<&'static str>) -> NotificationLedger {
        let mut ledger = NotificationLedger::new("t", policy);
        for seq in 1..=n {
            ledger.published(seq, key(seq));
        }
        ledger
    }

    fn fails(ledger: NotificationLedger) -> String {
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ledger.finish()));
        let panic = failed.expect_err("the ledger must fail");
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn losses_covered_by_a_gap_an_end_or_a_later_fact_pass() {
        let mut l = ledger(Policy::DropOldest, 10, |_| None);
        for seen in [Seen::Event(1), Seen::Event(2), Seen::Gap, Seen::Event(6), Seen::Gap, Seen::Event(10)] {
            l.seen("a", seen);
        }
        for seen in [Seen::Event(1), Seen::Gap, Seen::Event(3), Seen::Gap, Seen::Event(10)] {
            l.seen("b", seen);
        }
        for seen in [Seen::Event(1), Seen::Event(2), Seen::End] {
            l.seen("c", seen);
        }
        let summary = l.finish();
        assert_eq!(summary.subscribers["a"].lost_at_gaps, 6);
        assert_eq!(summary.subscribers["c"].after_end, 8);
        let mut c = ledger(Policy::Coalesce, 6, |s| Some(if s % 2 == 0 { "even" } else { "odd" }));
        // Coalescing replaces in place: order holds per key only.
        for seen in [Seen::Event(5), Seen::Event(2), Seen::Event(6)] {
            c.seen("a", seen);
        }
        assert_eq!(c.finish().subscribers["a"].coalesced, 3);
    }

    #[test]
    fn every_broken_rule_is_reported() {
        let mut silent = ledger(Policy::DropOldest, 5, |_| None);
        for seen in [Seen::Event(1), Seen::Event(3), Seen::Event(5)] {
            silent.seen("a", seen);
        }
        assert!(fails(silent).contains("2 events silently lost (first: 2, 4)"));
        let mut misplaced = ledger(Policy::DropOldest, 5, |_| None);
        for seen in [Seen::Event(1), Seen::Gap, Seen::Event(2), Seen::Event(5)] {
            misplaced.seen("a", seen);
        }
        assert!(fails(misplaced).contains("silently lost"), "a gap before 2 does not cover 3 and 4");
        let mut twice = ledger(Policy::DropOldest, 2, |_| None);
        for seen in [Seen::Event(1), Seen::Event(1), Seen::Event(2)] {
            twice.seen("a", seen);
        }
        assert!(fails(twice).contains("delivered twice"));
        let mut order = ledger(Policy::DropOldest, 3, |_| None);
        for seen in [Seen::Event(2), Seen::Event(1), Seen::Event(3)] {
            order.seen("a", seen);
        }
        assert!(fails(order).contains("delivered after 2"));
        let mut after_end = ledger(Policy::EndStream, 3, |_| None);
        for seen in [Seen::Event(1), Seen::End, Seen::Event(3)] {
            after_end.seen("a", seen);
        }
        assert!(fails(after_end).contains("after the end"));
        let mut quiet = ledger(Policy::DropOldest, 3, |_| None);
        quiet.subscriber("a");
        quiet.seen("a", Seen::Event(1));
        assert!(fails(quiet).contains("silence"));
        let mut stranger = ledger(Policy::DropOldest, 1, |_| None);
        stranger.seen("a", Seen::Event(9));
        assert!(fails(stranger).contains("never published"));
    }

    #[test]
    fn notifications_are_classified_by_the_kits_meta() {
        let event = json!({"method": "notifications/resources/updated", "params": {"uri": "x", "_meta": seq_meta(4)}});
        let gap = json!({"method": "notifications/resources/updated", "params": {"uri": "x", "_meta": gap_meta()}});
        assert_eq!(classify(&event), Some(Seen::Event(4)));
        assert_eq!(classify(&gap), Some(Seen::Gap));
        assert_eq!(classify(&json!({"id": 1, "result": {}})), None);
    }
}

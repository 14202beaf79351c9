//! [`Route`]: where the server→client messages one submission causes are delivered.
//!
//! A route is the sending half of an unbounded channel of [`Outgoing`] messages, each
//! already serialised and tagged with what it is, so an HTTP layer can decide per message
//! (an SSE event, a JSON body, an HTTP status) without parsing it again. It is not a
//! buffer for resumption: the HTTP layer keeps whatever it must replay. It counts the
//! bytes sent and not yet received, so that what writes without an answer to wait for (a
//! subscription stream) can hold back while a slow reader has too much unread, as it does
//! on a byte stream; the channel itself never refuses.
//!
//! Invariant: the server holds clones of a submission's route only while something that
//! submission caused can still write to it (the actor's turn, request tasks and their
//! sinks, pending server→client requests, listen streams), so [`RouteReceiver::recv`]
//! returning `None` means nothing more will ever come for that submission.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arbor_protocol::method;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// One server→client message, tagged with what it is (already serialised compact JSON,
/// no newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// A notification: progress/log of a request on this route, a listen stream's
    /// notification, or (on the standalone route) an unrelated notification
    /// (`list_changed`, `resources/updated`).
    Notification(Vec<u8>),
    /// A server→client request (legacy era: sampling, elicitation, roots) made by a
    /// request on this route.
    Request(Vec<u8>),
    /// A JSON-RPC response (or error) answering one request submitted on this route, or a
    /// whole batch array (2025-03-26).
    Response(Vec<u8>),
}

impl Outgoing {
    /// The message's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Outgoing::Notification(b) | Outgoing::Request(b) | Outgoing::Response(b) => b,
        }
    }

    /// The message's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Outgoing::Notification(b) | Outgoing::Request(b) | Outgoing::Response(b) => b,
        }
    }

    /// For a `Response` that is a JSON-RPC error, its code; `None` otherwise (results,
    /// batch arrays, notifications, requests).
    pub fn error_code(&self) -> Option<i64> {
        #[derive(serde::Deserialize)]
        struct Envelope {
            error: Option<Code>,
        }
        #[derive(serde::Deserialize)]
        struct Code {
            code: i64,
        }
        match self {
            Outgoing::Response(bytes) if encoded_result(bytes) => None,
            Outgoing::Response(bytes) => serde_json::from_slice::<Envelope>(bytes).ok()?.error.map(|e| e.code),
            _ => None,
        }
    }
}

/// Whether `bytes` begin as the runtime's encoder (`method::encode_response`) writes a result:
/// `{"jsonrpc":"2.0","id":<number or plain string>,"result":`. A result has no error code,
/// and this check costs a few dozen instructions where reading the answer costs about
/// 2,800 (the 2026-07-28 path asks every answer for its code to pick its HTTP status).
/// Anything else (an error, another key order, an id with escapes) is read in full.
fn encoded_result(bytes: &[u8]) -> bool {
    let Some(rest) = bytes.strip_prefix(method::RESPONSE_HEAD) else { return false };
    let after_id = match rest.first() {
        Some(b'"') => match rest[1..].iter().position(|&b| b == b'"' || b == b'\\') {
            Some(end) if rest[1 + end] == b'"' => &rest[end + 2..],
            _ => return false,
        },
        _ => {
            let end = rest.iter().position(|b| !(b.is_ascii_digit() || *b == b'-')).unwrap_or(rest.len());
            if end == 0 {
                return false;
            }
            &rest[end..]
        }
    };
    after_id.starts_with(method::RESULT_KEY)
}

/// The sending half of a route; cheap to clone. Unbounded: the HTTP side drains it
/// (bounded buffering for resumability is the HTTP layer's job); what it holds unread is
/// counted (`Route::unread`).
#[derive(Debug)]
pub struct Route {
    /// `None` for a route that discards everything.
    chan: Option<Arc<Chan>>,
}

/// The receiving half of a route. Dropping it closes the route, which cancels the
/// requests submitted with [`OnClose::Cancel`](super::OnClose::Cancel).
#[derive(Debug)]
pub struct RouteReceiver {
    chan: Arc<Chan>,
}

/// The channel a route and its receiver share. Not tokio's unbounded channel: that one
/// allocates, when made, a 512-byte cache-padded shared part and its first block of 32
/// slots (1 KiB of `Outgoing`s), and a legacy session's standalone route lives, mostly
/// empty, as long as the session (about 1.5 KiB of every idle session). This queue
/// allocates nothing until a message is sent; one receiver, many senders.
#[derive(Debug, Default)]
struct Chan {
    queue: Mutex<VecDeque<Outgoing>>,
    /// The receiver was dropped: nothing more is queued (set under the queue's lock, so no
    /// send lands after the receiver's drain).
    closed: AtomicBool,
    /// `Route` clones alive; the receiver reads `None` once none is left and the queue is
    /// empty.
    senders: AtomicUsize,
    /// Wakes the receiver: a message was queued or the last sender went (a stored permit,
    /// so a wake between its check and its wait is not lost).
    readable: Notify,
    /// Wakes the writers waiting for the receiver to go (`Route::closed`).
    gone: Notify,
    unread: Unread,
    /// Called after each send and when the last sender goes, for a receiver kept in a data
    /// structure rather than awaited by a task (`RouteReceiver::on_ready`).
    ready: OnceLock<Ready>,
}

/// The hook of [`RouteReceiver::on_ready`].
struct Ready(Box<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ready")
    }
}

/// Bytes sent on a route and not yet received, and the writers waiting for them to drain.
#[derive(Debug, Default)]
struct Unread {
    bytes: AtomicUsize,
    /// Writers in `drained_below`: a receive wakes them only when there are some, so the
    /// answer path pays one load, not a notification.
    waiters: AtomicUsize,
    drained: Notify,
}

impl Unread {
    fn took(&self, message: &Outgoing) {
        self.bytes.fetch_sub(message.bytes().len(), Ordering::AcqRel);
        if self.waiters.load(Ordering::Acquire) > 0 {
            self.drained.notify_waiters();
        }
    }
}

impl Clone for Route {
    fn clone(&self) -> Route {
        if let Some(chan) = &self.chan {
            chan.senders.fetch_add(1, Ordering::Relaxed);
        }
        Route { chan: self.chan.clone() }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        if let Some(chan) = &self.chan {
            // Release: a receiver that sees no sender left sees every message they queued.
            if chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
                chan.readable.notify_one();
                chan.call_ready();
            }
        }
    }
}

impl Route {
    /// A connected pair.
    pub fn channel() -> (Route, RouteReceiver) {
        let chan = Arc::new(Chan { senders: AtomicUsize::new(1), ..Chan::default() });
        (Route { chan: Some(chan.clone()) }, RouteReceiver { chan })
    }

    /// A route that discards everything (e.g. the standalone route of a modern-only
    /// endpoint). It never counts as closed.
    pub fn discard() -> Route {
        Route { chan: None }
    }

    /// Bytes sent and not yet taken by the receiver; none once the receiver is gone
    /// (what it left is dropped with it).
    pub(crate) fn unread(&self) -> usize {
        match &self.chan {
            Some(chan) if !self.is_closed() => chan.unread.bytes.load(Ordering::Acquire),
            _ => 0,
        }
    }

    /// Completes once fewer than `limit` bytes are unread, or the receiver is gone.
    pub(crate) async fn drained_below(&self, limit: usize) {
        let Some(chan) = &self.chan else { return };
        chan.unread.waiters.fetch_add(1, Ordering::AcqRel);
        // Counted out however this ends, a drop included.
        struct Out<'a>(&'a AtomicUsize);
        impl Drop for Out<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _out = Out(&chan.unread.waiters);
        let drained = async {
            loop {
                let notified = chan.unread.drained.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.unread() < limit {
                    return;
                }
                notified.await;
            }
        };
        tokio::select! {
            () = drained => {}
            () = self.closed() => {}
        }
    }

    /// Whether the receiver was dropped.
    pub fn is_closed(&self) -> bool {
        self.chan.as_ref().is_some_and(|chan| chan.closed.load(Ordering::Acquire))
    }

    /// Sends one message; `false` when the receiver is gone (a discarding route takes
    /// everything).
    pub(crate) fn send(&self, message: Outgoing) -> bool {
        let Some(chan) = &self.chan else { return true };
        {
            let mut queue = chan.queue.lock();
            if chan.closed.load(Ordering::Acquire) {
                return false;
            }
            // Counted before it can be received, so the count never goes below zero.
            chan.unread.bytes.fetch_add(message.bytes().len(), Ordering::AcqRel);
            queue.push_back(message);
        }
        chan.readable.notify_one();
        chan.call_ready();
        true
    }

    /// Completes when the receiver is dropped; never for a discarding route.
    pub(crate) async fn closed(&self) {
        let Some(chan) = &self.chan else { return std::future::pending().await };
        loop {
            let gone = chan.gone.notified();
            tokio::pin!(gone);
            gone.as_mut().enable();
            if self.is_closed() {
                return;
            }
            gone.await;
        }
    }
}

impl Chan {
    fn call_ready(&self) {
        if let Some(ready) = self.ready.get() {
            (ready.0)();
        }
    }
}

impl RouteReceiver {
    /// Calls `ready` after every message sent on this route, and when its last sender
    /// goes, on the sender's thread and with no lock of the route held. For a receiver kept
    /// inside a data structure that is fed on demand instead of by a task of its own (a
    /// legacy session's standalone stream, which lives as long as the session and is
    /// mostly empty): `ready` drains with [`RouteReceiver::try_recv`] and tells the end by
    /// [`RouteReceiver::is_ended`]. Set once; later calls are ignored. `ready` must be
    /// quick, must not block on anything a sender may hold, and must not hold the receiver
    /// strongly (through the structure that owns it), or neither is ever freed.
    pub fn on_ready(&self, ready: impl Fn() + Send + Sync + 'static) {
        let _ = self.chan.ready.set(Ready(Box::new(ready)));
    }

    /// Whether every sender is gone and everything they sent was received: nothing more
    /// will ever come.
    pub fn is_ended(&self) -> bool {
        // The senders first: with none left, everything they sent is queued.
        self.chan.senders.load(Ordering::Acquire) == 0 && self.chan.queue.lock().is_empty()
    }

    /// The next message; `None` once every [`Route`] clone is dropped, that is once
    /// nothing the submission caused can write any more.
    pub async fn recv(&mut self) -> Option<Outgoing> {
        loop {
            // Read before the queue: with no sender left, everything they sent is queued.
            let senders = self.chan.senders.load(Ordering::Acquire);
            if let Some(message) = self.try_recv() {
                return Some(message);
            }
            if senders == 0 {
                return None;
            }
            self.chan.readable.notified().await;
        }
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<Outgoing> {
        let message = self.chan.queue.lock().pop_front()?;
        self.chan.unread.took(&message);
        Some(message)
    }
}

impl Drop for RouteReceiver {
    fn drop(&mut self) {
        let left = {
            let mut queue = self.chan.queue.lock();
            self.chan.closed.store(true, Ordering::Release);
            std::mem::take(&mut *queue)
        };
        // Dropped outside the lock; the unread count no longer matters (`Route::unread`).
        drop(left);
        self.chan.gone.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prefix check says "result" only for a result the way the encoder writes it;
    /// every answer still gets the code a full read gives.
    #[test]
    fn an_encoded_result_is_told_from_its_prefix_and_errors_keep_their_code() {
        let response = |s: &str| Outgoing::Response(s.as_bytes().to_vec());
        for result in [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-7,"result":{"error":{"code":1}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-b","result":{}}"#,
        ] {
            assert!(encoded_result(result.as_bytes()), "{result}");
            assert_eq!(response(result).error_code(), None, "{result}");
        }
        for (error, code) in [
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#, -32602),
            (r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}"#, -32700),
            (r#"{"jsonrpc":"2.0","id":"x\",\"result\":","error":{"code":-32000,"message":"m"}}"#, -32000),
            (r#"{"error":{"code":-32601,"message":"m"},"jsonrpc":"2.0","id":2}"#, -32601),
        ] {
            assert!(!encoded_result(error.as_bytes()), "{error}");
            assert_eq!(response(error).error_code(), Some(code), "{error}");
        }
        // An id that is not a plain number or string goes to the full read.
        assert!(!encoded_result(br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#));
        assert!(!encoded_result(br#"{"jsonrpc":"2.0","id":,"result":{}}"#));
    }

    /// A receiver fed on demand hears of every send and of its last sender leaving, and
    /// tells the end only once everything sent was received.
    #[test]
    fn a_receiver_fed_on_demand_is_told_of_each_send_and_of_the_end() {
        let (route, mut rx) = Route::channel();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        rx.on_ready(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        let other = route.clone();
        assert!(route.send(Outgoing::Notification(b"1".to_vec())));
        assert!(other.send(Outgoing::Notification(b"2".to_vec())));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        drop(other);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "a sender that is not the last leaves quietly");
        drop(route);
        assert_eq!(calls.load(Ordering::SeqCst), 3, "the last sender's leaving is told");
        assert!(!rx.is_ended(), "two messages are still queued");
        assert_eq!(rx.try_recv().unwrap().bytes(), b"1");
        assert_eq!(rx.try_recv().unwrap().bytes(), b"2");
        assert!(rx.is_ended());
    }

    /// What a slow reader has not taken is counted, and a writer waiting for it to drain
    /// is woken by the receive that brings it below its limit, or by the reader leaving.
    #[tokio::test(start_paused = true)]
    async fn unread_bytes_are_counted_until_received_and_wake_a_waiting_writer() {
        let (route, mut rx) = Route::channel();
        assert!(route.send(Outgoing::Notification(vec![b'x'; 600])));
        assert!(route.send(Outgoing::Notification(vec![b'y'; 600])));
        assert_eq!(route.unread(), 1200);
        let writer = route.clone();
        let waiting = tokio::spawn(async move { writer.drained_below(1000).await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "1200 unread is not below 1000");
        assert_eq!(rx.recv().await.unwrap().bytes().len(), 600);
        waiting.await.unwrap();
        assert_eq!(route.unread(), 600);
        assert!(rx.try_recv().is_some());
        assert_eq!(route.unread(), 0);
        assert!(route.send(Outgoing::Notification(vec![b'z'; 2000])));
        let writer = route.clone();
        let waiting = tokio::spawn(async move { writer.drained_below(1000).await });
        drop(rx);
        waiting.await.unwrap();
        assert_eq!(route.unread(), 0, "a gone reader leaves nothing unread");
        assert!(Route::discard().send(Outgoing::Notification(vec![0; 10])));
        assert_eq!(Route::discard().unread(), 0);
    }
}

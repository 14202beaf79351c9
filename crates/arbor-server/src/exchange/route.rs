//! [`Route`]: where the server→client messages one submission causes are delivered.
//!
//! A route is the sending half of an unbounded channel of [`Outgoing`] messages, each
//! already serialised and tagged with what it is, so an HTTP layer can decide per message
//! (an SSE event, a JSON body, an HTTP status) without parsing it again. It is not a
//! buffer for resumption or a bound on memory: the HTTP layer drains it promptly and keeps
//! whatever it must replay.
//!
//! Invariant: the server holds clones of a submission's route only while something that
//! submission caused can still write to it (the actor's turn, request tasks and their
//! sinks, pending server→client requests, listen streams), so [`RouteReceiver::recv`]
//! returning `None` means nothing more will ever come for that submission.

use tokio::sync::mpsc;

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
            Outgoing::Response(bytes) => serde_json::from_slice::<Envelope>(bytes).ok()?.error.map(|e| e.code),
            _ => None,
        }
    }
}

/// The sending half of a route; cheap to clone. Unbounded: the HTTP side drains it
/// promptly (bounded buffering for resumability is the HTTP layer's job).
#[derive(Clone, Debug)]
pub struct Route {
    /// `None` for a route that discards everything.
    tx: Option<mpsc::UnboundedSender<Outgoing>>,
}

/// The receiving half of a route. Dropping it closes the route, which cancels the
/// requests submitted with [`OnClose::Cancel`](super::OnClose::Cancel).
#[derive(Debug)]
pub struct RouteReceiver {
    rx: mpsc::UnboundedReceiver<Outgoing>,
}

impl Route {
    /// A connected pair.
    pub fn channel() -> (Route, RouteReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Route { tx: Some(tx) }, RouteReceiver { rx })
    }

    /// A route that discards everything (e.g. the standalone route of a modern-only
    /// endpoint). It never counts as closed.
    pub fn discard() -> Route {
        Route { tx: None }
    }

    /// Whether the receiver was dropped.
    pub fn is_closed(&self) -> bool {
        self.tx.as_ref().is_some_and(mpsc::UnboundedSender::is_closed)
    }

    /// Sends one message; `false` when the receiver is gone (a discarding route takes
    /// everything).
    pub(crate) fn send(&self, message: Outgoing) -> bool {
        match &self.tx {
            Some(tx) => tx.send(message).is_ok(),
            None => true,
        }
    }

    /// Completes when the receiver is dropped; never for a discarding route.
    pub(crate) async fn closed(&self) {
        match &self.tx {
            Some(tx) => tx.closed().await,
            None => std::future::pending().await,
        }
    }
}

impl RouteReceiver {
    /// The next message; `None` once every [`Route`] clone is dropped, that is once
    /// nothing the submission caused can write any more.
    pub async fn recv(&mut self) -> Option<Outgoing> {
        self.rx.recv().await
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<Outgoing> {
        self.rx.try_recv().ok()
    }
}

//! Where a connection's output goes: its byte transport, or the routes of an endpoint.
//!
//! A connection served over a byte stream (stdio, the in-memory pair) writes every frame
//! into its one [`FrameWriter`], exactly as before routes existed: the variant is one
//! `match` per send. An [`Endpoint`](crate::exchange::Endpoint) has no byte stream: what a
//! submission causes goes to that submission's [`Route`], tagged with its [`Kind`], and
//! what no submission caused goes to the endpoint's standalone route, which the HTTP layer
//! may replace at any time. It is not a policy: callers decide which output a message
//! belongs to; this only delivers it.
//!
//! Invariant: a frame handed to an output is a whole JSON-RPC message, or nothing (closed
//! outputs drop it).

use std::sync::{Arc, Weak};

use arbor_transport::FrameWriter;
use arc_swap::ArcSwap;

use crate::exchange::{Outgoing, Route};

/// What a frame is, for outputs that tag it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Notification,
    Request,
    Response,
}

/// The output did not take the frame: the peer or the route's reader is gone.
#[derive(Debug)]
pub(crate) struct Closed;

/// A destination for whole frames.
#[derive(Clone, Debug)]
pub(crate) enum Output {
    /// A byte stream's writer (stdio, the in-memory pair).
    Frames(FrameWriter),
    /// The route of one submission to an endpoint.
    Route(Route),
    /// An endpoint's standalone route, replaceable by the HTTP layer.
    Standalone(Arc<ArcSwap<Route>>),
}

fn tag(kind: Kind, frame: Vec<u8>) -> Outgoing {
    match kind {
        Kind::Notification => Outgoing::Notification(frame),
        Kind::Request => Outgoing::Request(frame),
        Kind::Response => Outgoing::Response(frame),
    }
}

impl Output {
    /// Sends one frame already owned (no copy for routes).
    pub(crate) fn send_vec(&self, kind: Kind, frame: Vec<u8>) -> Result<(), Closed> {
        match self {
            Output::Frames(writer) => writer.send(&frame).map_err(|_| Closed),
            Output::Route(route) => route.send(tag(kind, frame)).then_some(()).ok_or(Closed),
            Output::Standalone(route) => route.load().send(tag(kind, frame)).then_some(()).ok_or(Closed),
        }
    }

    /// Sends one frame encoded by `encode`: straight into the writer's buffer for a byte
    /// stream, into a fresh buffer for a route.
    pub(crate) fn send_with(&self, kind: Kind, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), Closed> {
        match self {
            Output::Frames(writer) => writer.send_with(encode).map_err(|_| Closed),
            _ => {
                let mut frame = Vec::new();
                encode(&mut frame);
                self.send_vec(kind, frame)
            }
        }
    }

    /// Bytes queued and not yet taken by the peer: a writer's buffer, or what a route's
    /// reader (an HTTP response body, which a slow client holds back) has not taken.
    pub(crate) fn buffered(&self) -> usize {
        match self {
            Output::Frames(writer) => writer.buffered(),
            Output::Route(route) => route.unread(),
            Output::Standalone(route) => route.load().unread(),
        }
    }

    /// Completes once the queued output is below `limit` (or a route's reader is gone).
    pub(crate) async fn drained_below(&self, limit: usize) {
        match self {
            Output::Frames(writer) => writer.drained_below(limit).await,
            // Boxed: only a backed-up stream waits, and every idle stream's future would
            // otherwise carry room for the wait (see `an_idle_stream_future_stays_small`).
            Output::Route(route) => Box::pin(route.drained_below(limit)).await,
            Output::Standalone(route) => Box::pin(route.load_full().drained_below(limit)).await,
        }
    }

    /// Completes when the output can take nothing more: the transport broke, or the
    /// route's reader went away. Never for a standalone route, which can be replaced.
    pub(crate) async fn closed(&self) {
        match self {
            Output::Frames(writer) => writer.closed().await,
            Output::Route(route) => route.closed().await,
            Output::Standalone(_) => std::future::pending().await,
        }
    }

    /// Whether the output can take nothing more (see [`Output::closed`]).
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Output::Frames(writer) => writer.is_closed(),
            Output::Route(route) => route.is_closed(),
            Output::Standalone(_) => false,
        }
    }

    /// A handle that writes here without keeping an endpoint's stream open: for what
    /// outlives the connection's requests (a task telling its session of its status).
    /// A byte stream's writer closes explicitly, so it is kept as is; a submission's
    /// route is not lent out at all (its stream ends when its clones drop).
    pub(crate) fn detached(&self) -> Option<DetachedOutput> {
        match self {
            Output::Frames(writer) => Some(DetachedOutput::Frames(writer.clone())),
            Output::Standalone(route) => Some(DetachedOutput::Standalone(Arc::downgrade(route))),
            Output::Route(_) => None,
        }
    }

    /// Whether it is a route (HTTP) rather than a byte stream.
    pub(crate) fn is_route(&self) -> bool {
        !matches!(self, Output::Frames(_))
    }

    /// Flushes and closes a byte stream; routes close when their clones drop.
    pub(crate) async fn close(&self) {
        if let Output::Frames(writer) = self {
            writer.close().await;
        }
    }
}

/// An output held by something that may outlive the connection ([`Output::detached`]).
#[derive(Clone, Debug)]
pub(crate) enum DetachedOutput {
    Frames(FrameWriter),
    Standalone(Weak<ArcSwap<Route>>),
}

impl DetachedOutput {
    /// The output, while the connection still has it.
    pub(crate) fn attach(&self) -> Option<Output> {
        match self {
            DetachedOutput::Frames(writer) => Some(Output::Frames(writer.clone())),
            DetachedOutput::Standalone(route) => route.upgrade().map(Output::Standalone),
        }
    }
}

//! One subscription stream: a light supervised task under its connection.
//!
//! Why a task and not a ractor actor: a stream spends its life idle, waiting for a bus
//! message, and the target is at most 4 KiB per idle subscription beyond its connection;
//! an idle ractor actor costs about 8 KB (a tokio task plus four channels and a lifecycle
//! guard) and a registration in the global supervision tree, before the handler's state
//! and the bus queue. What a stream needs from an actor fits in a task on the
//! connection's `subscriptions` [`TaskSupervisor`](arbor_otp::TaskSupervisor) (the same
//! light unit as a request, with no deadline): a place in the tree (counted in snapshots
//! and gauges), being stopped with its connection, and a control mailbox, here a oneshot
//! that carries "torn down from outside" (a cancel, an unsubscribe, the connection
//! closing). The bus subscriptions are polled in place, without a task or channel each.
//!
//! Life of a stream: every handler's `subscribe` in order (each may narrow the filter; one
//! refusal refuses the stream: error response, no acknowledgement), then the
//! acknowledgement (modern streams), then bus events to the handler that joined their
//! topic. It ends by a handler's `Stop` (complete result, then `notifications/cancelled`
//! for the listen id as the stdio cancellation page asks; no `handle_close` for that
//! handler), by the bus ending a subscription (`Overflow::EndStream`, or the bus closed:
//! the same graceful end, the handlers closed from outside; a legacy stream, which has no
//! message for an end, first reports a gap on each topic to its handlers), by the server's drain (a listen only:
//! `Server::end_listens`, the same graceful end), or by the control mailbox (the handlers'
//! `handle_close`, and nothing sent: a cancelled request gets no further message).
//!
//! Invariants: `handle_close` runs at most once per handler and never after its own
//! `Stop`; when the task returns, its bus subscriptions are dropped; a stream never writes
//! while its peer has [`MAX_UNREAD_OUTPUT`] unread, so a slow client backs up into its own
//! bounded bus queues (and their overflow policy), never into memory or other clients.

use std::convert::Infallible;
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use arbor_bus::{BusEvent, Subscription};
use arbor_otp::{SpawnError, TaskOptions, TaskOutcome, TaskRef, TaskSupervisor};
use arbor_protocol::error::McpError;
use arbor_protocol::meta::Meta;
use arbor_protocol::method::encode_response;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::common::ResultType;
use arbor_protocol::model::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenResult,
};
use futures::FutureExt;
use serde_json::json;
use tokio::sync::oneshot;

use super::channel::StreamShared;
use super::{intersect, Channel, ErasedHandler, ErasedState, Flow, Subscribe};
use crate::connection::inbound::MAX_UNREAD_OUTPUT;
use crate::connection::output::Kind;
use crate::requester::RequesterSlot;

/// A stream's slots: the tenant's, the requester's. Boxed, so a stream with none costs one
/// word of its future (whose size is budgeted: `an_idle_stream_future_stays_small`).
pub(crate) type StreamSlots = Option<Box<[Option<RequesterSlot>; 2]>>;

/// Everything a stream starts with.
pub(crate) struct Unit {
    pub(crate) shared: Arc<StreamShared>,
    /// The user's handlers in registration order, then the built-in one.
    pub(crate) handlers: Arc<[Arc<dyn ErasedHandler>]>,
    pub(crate) requested: SubscriptionFilter,
    /// Told when the stream is open (or refused), for a legacy `resources/subscribe`
    /// that answers only once its updates can be delivered.
    pub(crate) ready: Option<oneshot::Sender<Result<(), McpError>>>,
    /// The stream's slots: of its tenant's streams (when its policy bounds them) and of
    /// its requester's share (`TenantLimits::streams`, when the requester is counted).
    /// Owned by the task, so they are given back exactly when the stream ends, however it
    /// ends.
    pub(crate) slot: StreamSlots,
    /// The stream's span (`crate::telemetry::stream_span`), which its task runs in.
    pub(crate) span: tracing::Span,
    /// Resolves when the server's drain ends listens (`Server::end_listens`); set for
    /// listens only. Boxed, so the idle stream's future stays small.
    pub(crate) drained: Option<Drained>,
}

/// The drain's "listens end now", as a stream waits for it.
pub(crate) type Drained = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// What a connection keeps of a running stream.
#[derive(Debug)]
pub(crate) struct UnitRef {
    close: Option<oneshot::Sender<()>>,
    task: TaskRef,
    /// The stream's shared state and start, for tree views (`connection::inspect`).
    pub(crate) shared: Arc<StreamShared>,
    pub(crate) since: tokio::time::Instant,
}

impl UnitRef {
    /// Tears the stream down from outside: its handlers' `handle_close` runs, nothing is
    /// sent. Idempotent.
    pub(crate) fn close(&mut self) {
        if let Some(close) = self.close.take() {
            let _ = close.send(());
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Unit {
    /// Starts the stream on `tasks`, with no deadline.
    pub(crate) fn spawn(mut self, tasks: &TaskSupervisor) -> Result<UnitRef, SpawnError> {
        let (close_tx, close_rx) = oneshot::channel();
        let id = self.shared.id.clone();
        let shared = self.shared.clone();
        let report = move |outcome: TaskOutcome<(), Infallible>| {
            if let TaskOutcome::Panicked(message) = outcome {
                // Handler callbacks are caught one by one; this is the runtime's own bug.
                tracing::error!(?id, %message, "subscription stream panicked");
            }
        };
        let options = TaskOptions { deadline: None };
        let span = std::mem::replace(&mut self.span, tracing::Span::none());
        let endpoint = !matches!(self.shared.output, crate::connection::output::Output::Frames(_));
        let clock = crate::metrics::StreamClock::start(&self.shared.connection, self.shared.id.is_some(), endpoint);
        let work = Box::pin(tracing::Instrument::instrument(
            async move {
                let _clock = clock;
                self.run(close_rx).await
            },
            span,
        ));
        let task = tasks.spawn_reporting(options, work, report)?;
        Ok(UnitRef { close: Some(close_tx), task, shared, since: tokio::time::Instant::now() })
    }

    async fn run(self, mut close: oneshot::Receiver<()>) -> Result<(), Infallible> {
        let Unit { shared, handlers, requested, ready, slot: _slot, span: _, drained } = self;
        let mut stream = Stream { shared, handlers, states: Vec::new() };
        let mut filter = requested.clone();
        for owner in 0..stream.handlers.len() {
            stream.shared.set_filter(filter.clone());
            let channel = stream.channel(owner);
            let handler = stream.handlers[owner].clone();
            let decided = AssertUnwindSafe(handler.subscribe(&filter, &channel)).catch_unwind().await;
            let decided = decided.unwrap_or_else(|_| {
                tracing::error!("subscription handler panicked in subscribe");
                Subscribe::Reject(McpError::internal("Internal error: the subscription handler failed"))
            });
            match decided {
                Subscribe::Accept(state) => stream.states.push(Some(state)),
                Subscribe::Narrow(honoured, state) => {
                    filter = intersect(&filter, &honoured);
                    stream.states.push(Some(state));
                }
                Subscribe::Reject(error) => {
                    stream.shared.close();
                    if let Some(id) = &stream.shared.id {
                        let _ =
                            stream.shared.output.send_vec(Kind::Response, error.to_response(Some(id.clone())).to_vec());
                    }
                    // The handlers that had accepted see the stream torn down by another.
                    stream.close_all().await;
                    if let Some(ready) = ready {
                        let _ = ready.send(Err(error));
                    }
                    return Ok(());
                }
            }
        }
        stream.shared.set_filter(filter.clone());
        // Across nodes, a join takes effect at the bus's source asynchronously: the client
        // hears the stream is open only once a message published anywhere will reach it.
        stream.shared.bus.settled().await;
        let output_gone = stream.shared.close_with_output && stream.shared.output.is_closed();
        if output_gone || !matches!(close.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
            // Cancelled while opening: nothing more may be sent for this id.
            stream.shared.close();
            stream.close_all().await;
            return Ok(());
        }
        let ack = stream.shared.id.as_ref().map(|id| {
            let mut meta = Meta::new();
            meta.set_subscription_id(id);
            let params = SubscriptionsAcknowledgedNotificationParams::new(filter).with_meta(meta);
            let params = serde_json::to_value(params).expect("a model type serialises");
            // `encode` stamps the id again, in place: harmless and keeps one encoder.
            stream.shared.encode(MethodName::SubscriptionsAcknowledged.as_str(), params)
        });
        stream.shared.open(ack);
        if let Some(ready) = ready {
            let _ = ready.send(Ok(()));
        }
        stream.serve(close, drained).await;
        Ok(())
    }
}

/// Completes when the stream's output is gone and that ends the stream (an HTTP listen);
/// never otherwise.
async fn closed_output(shared: &StreamShared) {
    if shared.close_with_output {
        shared.output.closed().await;
    } else {
        std::future::pending().await
    }
}

/// A stream once its handlers have decided.
struct Stream {
    shared: Arc<StreamShared>,
    handlers: Arc<[Arc<dyn ErasedHandler>]>,
    /// One per handler; `None` once the handler stopped (or its stream was closed).
    states: Vec<Option<ErasedState>>,
}

/// How a stream ended.
enum End {
    /// Torn down from outside: close every handler, send nothing.
    Outside,
    /// Graceful: `Some(owner)` stopped itself (no `handle_close` for it); `None` when the
    /// bus ended a subscription.
    Graceful(Option<usize>),
    /// A handler callback panicked: an internal error ends the listen.
    Failed(usize),
}

impl Stream {
    fn channel(&self, owner: usize) -> Channel {
        Channel { shared: self.shared.clone(), owner }
    }

    async fn serve(mut self, mut close: oneshot::Receiver<()>, drained: Option<Drained>) {
        let mut subs: Vec<(usize, Subscription)> = Vec::new();
        // A drain ends listens gracefully (`Server::end_listens`); other streams end with
        // their session.
        let mut drained = drained.unwrap_or_else(|| Box::pin(std::future::pending()));
        let mut next = 0usize;
        let end = loop {
            subs.extend(self.shared.take_joins());
            let output = &self.shared.output;
            if output.buffered() >= MAX_UNREAD_OUTPUT {
                // The client is not reading: let the bus queue (and its overflow policy)
                // absorb what comes meanwhile.
                tokio::select! {
                    _ = &mut close => break End::Outside,
                    () = output.drained_below(MAX_UNREAD_OUTPUT / 2) => continue,
                    () = output.closed() => break End::Outside,
                }
            }
            let event = poll_fn(|cx| poll_any(&mut subs, &mut next, cx));
            let (index, event) = tokio::select! {
                biased;
                _ = &mut close => break End::Outside,
                // An HTTP listen's closed response stream is its cancellation.
                () = closed_output(&self.shared) => break End::Outside,
                () = &mut drained => break End::Graceful(None),
                ready = event => ready,
            };
            let owner = subs[index].0;
            let Some(event) = event else {
                // Ended by the bus (`Overflow::EndStream`, or the bus closed).
                if self.shared.id.is_none() {
                    // A legacy session's stream has no message for its end, and its
                    // client stays subscribed as far as it knows: its handlers are told
                    // of a gap on every topic first, so the client hears "re-read"
                    // rather than nothing. Boxed: a rare path must not grow every idle
                    // stream's future (see `an_idle_stream_future_stays_small`).
                    Box::pin(self.gap_everywhere(&subs)).await;
                }
                break End::Graceful(None);
            };
            let channel = self.channel(owner);
            let handler = self.handlers[owner].clone();
            let Some(state) = self.states[owner].as_mut() else { continue };
            let flow = match event {
                BusEvent::Message(message) => {
                    AssertUnwindSafe(handler.handle_message(message, &channel, state)).catch_unwind().await
                }
                BusEvent::Gap { .. } => {
                    let topic = subs[index].1.topic().to_owned();
                    AssertUnwindSafe(handler.handle_gap(&topic, &channel, state)).catch_unwind().await
                }
            };
            match flow {
                Ok(Flow::Stream) => {}
                Ok(Flow::Stop) => break End::Graceful(Some(owner)),
                Err(_) => {
                    tracing::error!("subscription handler panicked in handle_message");
                    break End::Failed(owner);
                }
            }
        };
        self.shared.close();
        match end {
            End::Outside => {}
            End::Graceful(owner) => {
                if let Some(owner) = owner {
                    self.states[owner] = None;
                }
                self.finish(None);
            }
            End::Failed(owner) => {
                self.states[owner] = None;
                self.finish(Some(McpError::internal("Internal error: the subscription handler failed")));
            }
        }
        self.close_all().await;
        // `subs` drops here: the stream's bus subscriptions end with it.
        drop(subs);
    }

    /// `handle_gap` of every topic joined, for the handlers still streaming.
    async fn gap_everywhere(&mut self, subs: &[(usize, Subscription)]) {
        for (owner, subscription) in subs {
            let channel = self.channel(*owner);
            let handler = self.handlers[*owner].clone();
            let Some(state) = self.states[*owner].as_mut() else { continue };
            let gap = AssertUnwindSafe(handler.handle_gap(subscription.topic(), &channel, state));
            if gap.catch_unwind().await.is_err() {
                tracing::error!("subscription handler panicked in handle_gap");
            }
        }
    }

    /// Answers the listen request: the complete result, or an error.
    fn finish(&self, error: Option<McpError>) {
        let Some(id) = &self.shared.id else { return };
        let output = &self.shared.output;
        match error {
            None => {
                let mut meta = Meta::new();
                meta.set_subscription_id(id);
                let result =
                    SubscriptionsListenResult::default().with_meta(meta).with_result_type(ResultType::Complete);
                let _ = output.send_vec(Kind::Response, encode_response(id, &result));
            }
            Some(error) => {
                let _ = output.send_vec(Kind::Response, error.to_response(Some(id.clone())).to_vec());
            }
        }
        // stdio: the cancellation page says a server ending a listen MUST also send
        // `notifications/cancelled` for it; clients accept either signal. Over HTTP the
        // response ends the listen's own stream, and nothing may follow it there.
        if !output.is_route() {
            let params = json!({"requestId": id.to_value(), "reason": "subscription ended by the server"});
            let _ = output.send_vec(Kind::Notification, self.shared.encode(MethodName::Cancelled.as_str(), params));
        }
    }

    /// `handle_close` for every handler still holding a state.
    async fn close_all(&mut self) {
        for owner in 0..self.states.len() {
            if let Some(state) = self.states[owner].take() {
                let channel = self.channel(owner);
                let handler = self.handlers[owner].clone();
                if AssertUnwindSafe(handler.handle_close(&channel, state)).catch_unwind().await.is_err() {
                    tracing::error!("subscription handler panicked in handle_close");
                }
            }
        }
    }
}

/// The next event of any subscription, starting after the one served last so a busy
/// topic cannot starve the others. Never ready while there is none.
fn poll_any(
    subs: &mut [(usize, Subscription)],
    next: &mut usize,
    cx: &mut std::task::Context<'_>,
) -> Poll<(usize, Option<BusEvent>)> {
    let n = subs.len();
    for step in 0..n {
        let index = (*next + step) % n;
        if let Poll::Ready(event) = subs[index].1.poll_recv(cx) {
            *next = index + 1;
            return Poll::Ready((index, event));
        }
    }
    Poll::Pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::output::Output;
    use crate::context::ConnectionInfo;
    use arbor_bus::{Bus, LocalBus, SubscribeOptions};
    use arbor_protocol::version::ProtocolVersion;

    /// An idle stream is its task's future plus what it points to (its `StreamShared`, its
    /// bus subscriptions, the handlers' states); the future must stay small for the 4 KiB
    /// per idle subscription target. Measured at 1128 bytes when this was written.
    #[tokio::test]
    async fn an_idle_stream_future_stays_small() {
        let (transport, _peer) = arbor_transport::Transport::memory_pair();
        let (_reader, writer) = transport.into_parts();
        let connection = Arc::new(ConnectionInfo {
            tenant: "t".into(),
            auth: None,
            principal: None,
            requester: Default::default(),
            client_info: None,
            client_capabilities: Default::default(),
            protocol_version: ProtocolVersion::LATEST,
        });
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        let shared = StreamShared::new(
            None,
            connection,
            Output::Frames(writer),
            false,
            bus,
            SubscribeOptions::coalesce(),
            Default::default(),
        );
        let unit = Unit {
            shared,
            handlers: Arc::from(Vec::new()),
            requested: Default::default(),
            ready: None,
            slot: Default::default(),
            span: tracing::Span::none(),
            drained: None,
        };
        let (_close, rx) = oneshot::channel();
        let future = unit.run(rx);
        let size = std::mem::size_of_val(&future);
        assert!(size <= 1536, "a stream's future is {size} bytes");
    }
}

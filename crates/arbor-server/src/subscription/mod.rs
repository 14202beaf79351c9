//! Subscriptions: the [`SubscriptionHandler`] a server author writes, the [`Channel`] it
//! talks through, and the runtime's streams that run it.
//!
//! Modelled on GenMCP's subscription handler. A `subscriptions/listen` request (2026-07-28)
//! opens one *stream*: a light supervised task under its connection (see `unit.rs` for why
//! it is a task and not a ractor actor) that runs every registered handler's
//! [`SubscriptionHandler::subscribe`], then the runtime's built-in handler, sends
//! `notifications/subscriptions/acknowledged` with the honoured filter, and from then on
//! turns bus messages into notifications through [`SubscriptionHandler::handle_message`].
//! Legacy clients are served by the same streams: `resources/subscribe` opens one per URI,
//! and an initialized legacy session gets one for the `list_changed` notifications the
//! server advertises; they carry no subscription id and answer nothing themselves.
//!
//! What this module is not: the event source. Events come from an
//! [`arbor_bus::Bus`] (in-process by default, Redis across nodes); a handler joins bus
//! topics through [`Channel::join`], so the runtime owns every bus subscription and drops
//! it with the stream.
//!
//! Invariants: the acknowledgement is the first message carrying a stream's id; a filter
//! is only ever narrowed (each handler sees, and may narrow, what the previous ones
//! honoured; the result is intersected with the request); a stream ends exactly one way:
//! a handler's [`Flow::Stop`] (graceful complete result, no `handle_close` for that
//! handler) or a teardown from outside (`handle_close` exactly once per handler that
//! accepted, nothing sent).

mod builtin;
mod channel;
pub(crate) mod topics;
pub(crate) mod unit;

use std::any::Any;
use std::sync::Arc;

use arbor_bus::BusMessage;
use arbor_protocol::error::McpError;
use arbor_protocol::model::capabilities::ServerCapabilities;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use futures::future::BoxFuture;
use std::future::Future;

pub(crate) use builtin::BuiltIn;
pub(crate) use channel::StreamShared;
pub use channel::{Channel, ChannelError};

/// What [`SubscriptionHandler::subscribe`] decides.
#[derive(Debug)]
pub enum Subscribe<S> {
    /// Accept the filter as it was handed in, with the handler's state.
    Accept(S),
    /// Accept a narrower filter (for authorization or capability reasons). The runtime
    /// intersects it with what was requested, so it can never widen the request.
    Narrow(SubscriptionFilter, S),
    /// Refuse: no stream opens, no acknowledgement is sent, and the listen request is
    /// answered with this error.
    Reject(McpError),
}

/// Whether a stream goes on after [`SubscriptionHandler::handle_message`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep streaming.
    Stream,
    /// End the stream gracefully: the runtime answers the listen request with the
    /// `complete` result (and, on stdio, `notifications/cancelled` for its id), and does
    /// not call this handler's `handle_close`.
    Stop,
}

/// The notification types a handler can emit, folded into the advertised capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubscriptionCapabilities {
    /// `notifications/tools/list_changed` (advertised as `tools.listChanged`).
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed` (`prompts.listChanged`).
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed` (`resources.listChanged`).
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` (`resources.subscribe`).
    pub resources_updated: bool,
}

impl SubscriptionCapabilities {
    /// Sets the matching flags in `caps`. Only primitives the server already offers are
    /// touched: advertising `tools.listChanged` on a server without tools would make a
    /// client call `tools/list` on a server that answers it -32601.
    pub(crate) fn fold_into(self, caps: &mut ServerCapabilities) {
        if let Some(tools) = caps.tools.as_mut().filter(|_| self.tools_list_changed) {
            tools.list_changed = Some(true);
        }
        if let Some(prompts) = caps.prompts.as_mut().filter(|_| self.prompts_list_changed) {
            prompts.list_changed = Some(true);
        }
        if let Some(resources) = caps.resources.as_mut() {
            if self.resources_list_changed {
                resources.list_changed = Some(true);
            }
            if self.resources_updated {
                resources.subscribe = Some(true);
            }
        }
    }
}

/// A subscription handler: turns bus events into notifications for one stream.
///
/// `&self` is the handler's own configuration (GenMCP's `arg`); per-stream data lives in
/// [`SubscriptionHandler::State`]. Every callback of one stream runs on that stream's
/// task, one at a time; a panic in a callback ends the stream with an internal error (in
/// `subscribe`, a rejection) and never reaches the connection.
///
/// As with [`ServerHandler`](crate::ServerHandler), the callbacks are declared
/// `-> impl Future<Output = T> + Send` and implemented with plain `async fn`.
pub trait SubscriptionHandler: Send + Sync + 'static {
    /// The handler's per-stream state.
    type State: Send + 'static;

    /// Accepts or refuses a stream asking for `filter` (already narrowed by the handlers
    /// registered before this one), and joins the bus topics it needs with
    /// [`Channel::join`]. Use [`Channel::connection`] to authorize. Notifications sent
    /// from here are held back until the acknowledgement has gone out.
    fn subscribe(
        &self,
        filter: &SubscriptionFilter,
        channel: &Channel,
    ) -> impl Future<Output = Subscribe<Self::State>> + Send;

    /// One message from a topic this handler joined: send notifications with
    /// [`Channel::send`], then keep streaming or stop.
    fn handle_message(
        &self,
        message: Arc<BusMessage>,
        channel: &Channel,
        state: &mut Self::State,
    ) -> impl Future<Output = Flow> + Send;

    /// Messages of `topic` were lost (a full queue, a reconnection to Redis). The default
    /// keeps streaming; a handler that can tell the client what it may have missed (a
    /// `list_changed`, an `updated`) does so here.
    fn handle_gap(&self, topic: &str, channel: &Channel, state: &mut Self::State) -> impl Future<Output = Flow> + Send {
        let _ = (topic, channel, state);
        async { Flow::Stream }
    }

    /// The stream was torn down from outside (the client cancelled the listen or
    /// unsubscribed, the connection closed, the bus ended the subscription): clean up.
    /// Runs exactly once per accepted stream, never after this handler's own
    /// [`Flow::Stop`]. The channel is already closed; the bus subscriptions joined
    /// through it are dropped by the runtime afterwards.
    fn handle_close(&self, channel: &Channel, state: Self::State) -> impl Future<Output = ()> + Send {
        let _ = (channel, state);
        async {}
    }

    /// The notification types this handler emits, folded into the capabilities the
    /// server advertises (`initialize`, `server/discover`). Read once, when the server is
    /// built: every client is told the same, so it takes no connection.
    fn subscription_capabilities(&self) -> SubscriptionCapabilities {
        SubscriptionCapabilities::default()
    }
}

/// A handler with its state type erased, so one stream can run several: the object-safe
/// form of [`SubscriptionHandler`], one boxed future per callback.
pub(crate) trait ErasedHandler: Send + Sync + 'static {
    fn subscribe<'a>(&'a self, filter: &'a SubscriptionFilter, channel: &'a Channel) -> BoxFuture<'a, ErasedSubscribe>;
    fn handle_message<'a>(
        &'a self,
        message: Arc<BusMessage>,
        channel: &'a Channel,
        state: &'a mut ErasedState,
    ) -> BoxFuture<'a, Flow>;
    fn handle_gap<'a>(
        &'a self,
        topic: &'a str,
        channel: &'a Channel,
        state: &'a mut ErasedState,
    ) -> BoxFuture<'a, Flow>;
    fn handle_close<'a>(&'a self, channel: &'a Channel, state: ErasedState) -> BoxFuture<'a, ()>;
    fn capabilities(&self) -> SubscriptionCapabilities;
}

pub(crate) type ErasedState = Box<dyn Any + Send>;
pub(crate) type ErasedSubscribe = Subscribe<ErasedState>;

/// The adapter from a typed handler to [`ErasedHandler`].
pub(crate) struct Erased<H>(pub(crate) H);

fn typed<S: 'static>(state: &mut ErasedState) -> &mut S {
    state.downcast_mut::<S>().expect("a stream's state is the type its handler made")
}

impl<H: SubscriptionHandler> ErasedHandler for Erased<H> {
    fn subscribe<'a>(&'a self, filter: &'a SubscriptionFilter, channel: &'a Channel) -> BoxFuture<'a, ErasedSubscribe> {
        Box::pin(async move {
            match self.0.subscribe(filter, channel).await {
                Subscribe::Accept(s) => Subscribe::Accept(Box::new(s) as ErasedState),
                Subscribe::Narrow(f, s) => Subscribe::Narrow(f, Box::new(s) as ErasedState),
                Subscribe::Reject(e) => Subscribe::Reject(e),
            }
        })
    }

    fn handle_message<'a>(
        &'a self,
        message: Arc<BusMessage>,
        channel: &'a Channel,
        state: &'a mut ErasedState,
    ) -> BoxFuture<'a, Flow> {
        Box::pin(self.0.handle_message(message, channel, typed::<H::State>(state)))
    }

    fn handle_gap<'a>(
        &'a self,
        topic: &'a str,
        channel: &'a Channel,
        state: &'a mut ErasedState,
    ) -> BoxFuture<'a, Flow> {
        Box::pin(self.0.handle_gap(topic, channel, typed::<H::State>(state)))
    }

    fn handle_close<'a>(&'a self, channel: &'a Channel, state: ErasedState) -> BoxFuture<'a, ()> {
        let state = *state.downcast::<H::State>().expect("a stream's state is the type its handler made");
        Box::pin(self.0.handle_close(channel, state))
    }

    fn capabilities(&self) -> SubscriptionCapabilities {
        self.0.subscription_capabilities()
    }
}

/// `honoured` cut down to what `requested` asked for: the enforcement of "narrow, never
/// widen".
pub(crate) fn intersect(requested: &SubscriptionFilter, honoured: &SubscriptionFilter) -> SubscriptionFilter {
    let flag = |r: Option<bool>, h: Option<bool>| (r == Some(true) && h == Some(true)).then_some(true);
    let list = |r: &Option<Vec<String>>, h: &Option<Vec<String>>| match (r, h) {
        (Some(r), Some(h)) => {
            let kept: Vec<String> = r.iter().filter(|x| h.contains(x)).cloned().collect();
            (!kept.is_empty()).then_some(kept)
        }
        _ => None,
    };
    // Unknown members are types this server does not know: never honoured (`extra` stays empty).
    let mut kept = SubscriptionFilter::default();
    kept.tools_list_changed = flag(requested.tools_list_changed, honoured.tools_list_changed);
    kept.prompts_list_changed = flag(requested.prompts_list_changed, honoured.prompts_list_changed);
    kept.resources_list_changed = flag(requested.resources_list_changed, honoured.resources_list_changed);
    kept.resource_subscriptions = list(&requested.resource_subscriptions, &honoured.resource_subscriptions);
    kept.task_ids = list(&requested.task_ids, &honoured.task_ids);
    kept
}

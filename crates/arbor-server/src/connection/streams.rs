//! The connection's subscription streams: opening them, tearing them down, and the
//! bookkeeping that ties them to request ids (2026-07-28) and URIs (legacy).
//!
//! Each stream is a `subscription::unit::Unit` on the connection's `subscriptions` task
//! supervisor; this module only decides when one opens or closes. A 2026-07-28
//! `subscriptions/listen` opens one keyed by its request id (a cancel for that id closes
//! it); a legacy `resources/subscribe` opens one per URI (`resources/unsubscribe` closes
//! it); an initialized legacy session gets one for the `list_changed` notifications the
//! server advertises. On an endpoint a listen writes to its submission's route, and one
//! submitted with `OnClose::Cancel` is scoped to its exchange: not keyed by id, closed
//! (handlers' `handle_close` run) when its route's reader goes away; the legacy streams
//! write to the endpoint's standalone route. A listen or a legacy resource subscription of
//! a known requester also takes a slot of its share of the tenant's streams
//! (`ServerConfig::max_subscriptions_per_requester`), held by the stream's task and given
//! back when it ends, so one client over many connections or sessions cannot take every
//! stream slot. Nothing here awaits: streams report readiness to whoever waits.
//!
//! Invariant: a listen id is in use while its stream runs (a request reusing it is a
//! duplicate), and when the connection stops every stream was told to close first, so
//! handlers' `handle_close` runs before the supervisor's shutdown grace ends.

use std::sync::Arc;

use arbor_otp::SpawnError;
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use tokio::sync::oneshot;

use super::output::Output;
use super::ConnState;
use crate::context::ConnectionInfo;
use crate::error::{duplicate_id, listens_overloaded, OverloadScope};
use crate::subscription::unit::StreamSlots;
use crate::subscription::unit::Unit;
use crate::subscription::StreamShared;
use crate::telemetry;

impl ConnState {
    fn unit(
        &self,
        id: Option<RequestId>,
        output: Output,
        close_with_output: bool,
        connection: Arc<ConnectionInfo>,
        filter: SubscriptionFilter,
        ready: Option<oneshot::Sender<Result<(), McpError>>>,
    ) -> Unit {
        let shared = &self.shared;
        // A scoped listen (the 2026-07-28 pool) is a root span, as its requests are.
        let parent = (!close_with_output).then_some(&self.span);
        let uri = filter.resource_subscriptions.as_ref().and_then(|uris| uris.first()).map(String::as_str);
        let span = telemetry::stream_span(parent, &self.trace, id.as_ref(), &connection, uri);
        let drained = id.is_some().then(|| Box::pin(shared.drain.listens_ended()) as _);
        Unit {
            shared: StreamShared::new(
                id,
                connection,
                output,
                close_with_output,
                shared.bus.clone(),
                shared.config.subscription_options,
                filter.clone(),
            ),
            drained,
            handlers: shared.stream_handlers.clone(),
            requested: filter,
            ready,
            slot: Default::default(),
            span,
        }
    }

    /// The slots a new listen or subscription holds: of the tenant's streams, when its
    /// policy bounds them (`TenantQuota::max_subscriptions`), and of the requester's share
    /// (when the requester is counted); or the refusal naming the bound that is full.
    fn stream_slot(&self) -> Result<StreamSlots, McpError> {
        let retry = self.shared.config.overload_retry_after;
        let tenant = self.tenant.stream_slot().map_err(|max| {
            self.tenant.refused_overloaded();
            listens_overloaded(OverloadScope::Tenant, max, retry)
        })?;
        let own = match self.counted_requester() {
            None => None,
            Some(requester) => {
                let slots = &self.tenant.streams;
                let own = slots.try_acquire(requester);
                Some(own.ok_or_else(|| listens_overloaded(OverloadScope::Requester, slots.max(), retry))?)
            }
        };
        Ok((tenant.is_some() || own.is_some()).then(|| Box::new([tenant, own])))
    }

    fn refused(&self, refused: SpawnError) -> McpError {
        match refused {
            SpawnError::Overloaded { max } => {
                listens_overloaded(self.own_scope(), max, self.shared.config.overload_retry_after)
            }
            SpawnError::ShuttingDown => McpError::internal("Internal error: the connection is closing"),
        }
    }

    /// Drops streams that ended on their own from the tables.
    fn sweep_streams(&mut self) {
        self.listens.retain(|_, unit| !unit.is_finished());
        self.scoped_listens.retain(|unit| !unit.is_finished());
        self.resource_streams.retain(|_, unit| !unit.is_finished());
    }

    /// A 2026-07-28 `subscriptions/listen`: the stream answers the request itself
    /// (acknowledgement, notifications, the complete result or an error).
    pub(super) fn open_listen(&mut self, id: RequestId, filter: SubscriptionFilter, connection: Arc<ConnectionInfo>) {
        self.sweep_streams();
        let scoped = self.scoped();
        if !scoped && (self.listens.get(&id).is_some_and(|unit| !unit.is_finished()) || self.ids.lock().busy(&id)) {
            return self.reply_error(Some(id), &duplicate_id(self.own_scope()));
        }
        let slot = match self.stream_slot() {
            Ok(slot) => slot,
            Err(err) => return self.reply_error(Some(id), &err),
        };
        let mut unit = self.unit(Some(id.clone()), self.out().clone(), scoped, connection, filter, None);
        unit.slot = slot;
        match unit.spawn(&self.streams) {
            Ok(unit) if scoped => self.scoped_listens.push(unit),
            Ok(unit) => {
                self.listens.insert(id, unit);
            }
            Err(refused) => {
                let err = self.refused(refused);
                self.reply_error(Some(id), &err);
            }
        }
    }

    /// A cancel for `id`: closes its listen stream, if it is one.
    pub(super) fn cancel_listen(&mut self, id: &RequestId) -> bool {
        match self.listens.remove(id) {
            Some(mut unit) => {
                unit.close();
                true
            }
            None => false,
        }
    }

    /// A legacy `resources/subscribe` the server handler agreed to (`on`), or an
    /// unsubscribe. `reply` is answered once updates for `uri` will be delivered.
    pub(super) fn subscribe_resource(&mut self, uri: String, on: bool, reply: oneshot::Sender<Result<(), McpError>>) {
        self.sweep_streams();
        if !on {
            if let Some(mut unit) = self.resource_streams.remove(&uri) {
                unit.close();
            }
            let _ = reply.send(Ok(()));
            return;
        }
        if self.resource_streams.contains_key(&uri) {
            let _ = reply.send(Ok(()));
            return;
        }
        let Some(legacy) = &self.legacy else {
            let _ = reply.send(Err(McpError::internal("Internal error: no session to subscribe in")));
            return;
        };
        let filter = SubscriptionFilter::default().with_resource_subscriptions(vec![uri.clone()]);
        let info = legacy.info.clone();
        let slot = match self.stream_slot() {
            Ok(slot) => slot,
            Err(err) => {
                let _ = reply.send(Err(err));
                return;
            }
        };
        let mut unit = self.unit(None, self.output.clone(), false, info, filter, Some(reply));
        unit.slot = slot;
        match unit.spawn(&self.streams) {
            Ok(unit) => {
                self.resource_streams.insert(uri, unit);
            }
            // The reply went down with the refused unit; the request sees it as an error.
            Err(refused) => tracing::debug!(%refused, "legacy resource subscription refused"),
        }
    }

    /// An initialized legacy session: a stream for every list whose changes the server
    /// announces.
    pub(super) fn open_list_stream(&mut self) {
        let Some(legacy) = &self.legacy else { return };
        if self.list_stream.is_some() {
            return;
        }
        let caps = &self.shared.capabilities;
        let flag = |on: Option<bool>| (on == Some(true)).then_some(true);
        let mut filter = SubscriptionFilter::default();
        filter.tools_list_changed = flag(caps.tools.as_ref().and_then(|t| t.list_changed));
        filter.prompts_list_changed = flag(caps.prompts.as_ref().and_then(|p| p.list_changed));
        filter.resources_list_changed = flag(caps.resources.as_ref().and_then(|r| r.list_changed));
        if filter == SubscriptionFilter::default() {
            return;
        }
        // Unrelated to the submission that initialized the session: the standalone output.
        let unit = self.unit(None, self.output.clone(), false, legacy.info.clone(), filter, None);
        match unit.spawn(&self.streams) {
            Ok(unit) => self.list_stream = Some(unit),
            Err(refused) => tracing::debug!(%refused, "legacy list_changed stream refused"),
        }
    }

    /// Tells every stream to close (their handlers' `handle_close` runs); the connection's
    /// `post_stop` then waits for them through the supervisor's shutdown.
    pub(super) fn close_streams(&mut self) {
        let keyed = self.listens.drain().map(|(_, u)| u).chain(self.resource_streams.drain().map(|(_, u)| u));
        for mut unit in keyed.chain(self.scoped_listens.drain(..)) {
            unit.close();
        }
        if let Some(mut unit) = self.list_stream.take() {
            unit.close();
        }
    }
}

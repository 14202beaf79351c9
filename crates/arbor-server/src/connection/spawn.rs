//! Spawning a request task: the last step of routing a request, and the one with the most
//! bookkeeping.
//!
//! A request that passed its era, gates and capability checks gets the duplicate-id check
//! (unless it is scoped to its exchange), a tenant slot, its deadline, a sink and a
//! requester writing where its submission's output goes, and a supervised task whose
//! report writes the response (or the panic or timeout error) and gives the slot back. A
//! request submitted to an endpoint with `OnClose::Cancel` races its work against its
//! route closing and then cancels itself through its own task handle, so it ends exactly
//! like a client's cancel; it never enters the in-flight table. It is not where the era or
//! gates are decided (`route.rs`).
//!
//! A request of a known requester (a principal, or a peer address: a 2026-07-28 POST's or a
//! legacy session's) also takes a slot of that requester's share of the tenant
//! (`ServerConfig::max_in_flight_per_requester`), so one client over any number of
//! connections, endpoints or sessions cannot take every slot.
//!
//! Every request task also races the server's drain deadline (`crate::drain`): past it
//! the task completes with the drain error instead of its handler's answer.
//!
//! The handler a request runs on is chosen here, once: the tenant's handler as it is at
//! admission (`crate::tenant::routers`), which the job keeps to its end.
//!
//! Invariant: the tenant slot and the requester slot taken here are released exactly
//! once: by the report, or at once when the spawn is refused.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arbor_otp::{SpawnError, TaskOptions, TaskOutcome, TaskRef};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::Meta;
use arbor_protocol::methods::ClientRequest;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use super::inspect::InFlight;
use super::output::Kind;
use super::ConnState;
use crate::context::RequestSink;
use crate::error::{duplicate_id, overloaded, panicked, tenant_escalated, timed_out, OverloadScope};
use crate::metrics::{self, Operation, Refusal, Status};
use crate::request::sink::ConnectionSink;
use crate::request::{error_frame, JobTerms, RequestJob};
use crate::telemetry::{self, RequestSpan};

impl ConnState {
    pub(super) fn spawn(&mut self, id: RequestId, request: Box<ClientRequest>, meta: Meta, terms: JobTerms) {
        // A request scoped to its exchange is not in the id table: another exchange may
        // use the same id, and only closing its route cancels it.
        let scoped = self.scoped();
        // A span per request (`crate::telemetry`), child of the connection's (a 2026-07-28
        // pool's requests are roots) unless `_meta` names a trace; without a subscriber
        // interested in it, it costs a relaxed load and builds no string.
        let span = RequestSpan {
            parent: (!scoped).then_some(&self.span),
            trace: &self.trace,
            id: &id,
            request: &request,
            version: terms.version,
            info: &terms.connection,
            meta: &meta,
        }
        .open();
        // A refusal is answered here, and recorded on the span (an overload is the
        // server's failure by the conventions' classification).
        let refuse = |state: &Self, err: McpError| {
            telemetry::record_error(&span, &err);
            state.reply_error(Some(id.clone()), &err);
        };
        if !scoped
            && (self.in_flight.get(&id).is_some_and(|task| !task.is_finished())
                || self.listens.get(&id).is_some_and(|unit| !unit.is_finished()))
        {
            return refuse(self, duplicate_id(self.own_scope()));
        }
        // The tenant's policy first (`crate::tenant`): its quarantine, and on a byte stream
        // the rates (an endpoint's transport charged those before reading the request).
        if let Err(refusal) = self.tenant.gate(self.counted_requester(), self.endpoint.is_none()) {
            return refuse(self, McpError::from(&refusal));
        }
        // The requester's share of the tenant, before the connection's own bound: a
        // requester past its share is told so, whoever else is waiting.
        let requester_slot = match self.counted_requester() {
            None => None,
            Some(requester) => {
                let slots = &self.tenant.requests;
                match slots.try_acquire(requester) {
                    Some(slot) => Some(slot),
                    None => {
                        self.tenant.refused_overloaded();
                        metrics::refused(self.tenant.label().clone(), Refusal::Overloaded);
                        let retry = self.shared.config.overload_retry_after;
                        return refuse(self, overloaded(OverloadScope::Requester, slots.max(), retry));
                    }
                }
            }
        };
        let config = &self.shared.config;
        if !self.tenant.try_acquire() {
            metrics::refused(self.tenant.label().clone(), Refusal::Overloaded);
            return refuse(self, overloaded(OverloadScope::Tenant, self.tenant.max(), config.overload_retry_after));
        }
        let method = request.method();
        let since = Instant::now();
        let op = Operation::start(&request, terms.version, metrics::transport(self.endpoint.is_some()));
        // From here on the request belongs to this version of the tenant's handler.
        let handler = self.handlers.load();
        let version = handler.version;
        let deadline = match &*request {
            ClientRequest::CallTool(p) => {
                let handler = &handler.handler;
                // A panicking override falls back to the default rather than taking the
                // connection down with it.
                std::panic::catch_unwind(AssertUnwindSafe(|| handler.tool_deadline(&p.name))).ok().flatten()
            }
            // A blocking `tasks/result` waits for its task, which ends before its TTL (at
            // most `tasks.ttl`): the request deadline alone would cut a long task's result.
            ClientRequest::GetTaskPayload(_) => Some(config.default_deadline.max(config.tasks.ttl)),
            _ => None,
        }
        .unwrap_or(config.default_deadline);
        // A byte stream's requests share the connection's sink and handle; a submission's
        // get their own, writing to its route.
        let (sink, requester) = match &self.current {
            None => (self.sink.clone(), self.me.clone()),
            Some(current) => (
                Arc::new(ConnectionSink::with_standalone(current.output.clone(), self.output.clone()))
                    as Arc<dyn RequestSink>,
                self.me.with_output(current.output.clone()),
            ),
        };
        let job = RequestJob {
            span: span.clone(),
            shared: self.shared.clone(),
            handler,
            id: id.clone(),
            request,
            meta,
            terms,
            deadline: Some(Instant::now() + deadline),
            sink,
            requester,
            signal: Default::default(),
        };
        let report = {
            let (id, output, tenant, batch) = (id.clone(), self.out().clone(), self.tenant.clone(), self.batch.clone());
            let span = span.clone();
            // Dropped with the closure, after the answer is written (or if it never runs).
            let pending = self.reports.pending();
            move |outcome: TaskOutcome<(Vec<u8>, Status), std::convert::Infallible>| {
                let _pending = pending;
                tenant.release();
                drop(requester_slot);
                let (frame, status) = match outcome {
                    TaskOutcome::Completed(answer) => answer,
                    TaskOutcome::Failed(never) => match never {},
                    TaskOutcome::Panicked(message) => {
                        tracing::error!(%id, %method, %message, "request handler panicked");
                        // Charged to the tenant's restart budget (`crate::tenant`).
                        tenant.crashed();
                        let err = panicked(method);
                        telemetry::record_error(&span, &err);
                        op.panicked();
                        (error_frame(&id, &err), Status::Error(-32603))
                    }
                    TaskOutcome::TimedOut => {
                        let err = timed_out(method, deadline);
                        telemetry::record_error(&span, &err);
                        op.timed_out();
                        (error_frame(&id, &err), Status::Error(-32603))
                    }
                    // Cancelled by the client (or its route closed), or the connection is
                    // stopping: no answer.
                    TaskOutcome::Cancelled | TaskOutcome::Shutdown => {
                        if let Some(batch) = batch {
                            batch.report(None);
                        }
                        return;
                    }
                };
                match batch {
                    Some(batch) => batch.report(Some(frame)),
                    None => {
                        let _ = output.send_vec(Kind::Response, frame);
                    }
                }
                op.finish(status);
            }
        };
        // Boxed once here (the request's state is several KiB), so the task wrapper and
        // tokio move a pointer instead of copying that state at every layer; this alone
        // tripled pipelined throughput.
        let options = TaskOptions::deadline(deadline);
        // The drain's deadline (`crate::drain`): the task completes with the drain error
        // in place of its handler's answer, so its report answers it exactly once.
        // Lazy: the signal's receiver is made only if the handler did not answer at its
        // first poll, which most requests do.
        let drained = {
            let (id, shared, span) = (id.clone(), self.shared.clone(), span.clone());
            // The tenant's stop signal, fired when it is escalated past its restart budget
            // (`Tree::escalate`): the request answers -32603 at once. Only a tenant with a
            // budget has one; the others' requests race nothing more.
            let escalated = self.tenant.has_budget().then(|| self.tenant.stop_signal());
            async move {
                let err = match escalated {
                    None => shared.drain.requests_stopped().await,
                    Some(stop) => tokio::select! {
                        err = shared.drain.requests_stopped() => err,
                        () = stop.cancelled() => tenant_escalated(method),
                    },
                };
                telemetry::record_error(&span, &err);
                (error_frame(&id, &err), Status::of(&err))
            }
        };
        let spawned = if scoped {
            let route = self.out().clone();
            let (task_tx, task_rx) = oneshot::channel::<TaskRef>();
            let stop = async move {
                route.closed().await;
                // The task cancels itself through its own handle, so it ends `Cancelled`
                // exactly as a client's cancel would: dropped work, no answer, slot freed.
                if let Ok(task) = task_rx.await {
                    let _ = task.cancel();
                }
                std::future::pending::<std::convert::Infallible>().await
            };
            let work = Box::pin(
                async move {
                    tokio::select! {
                        biased;
                        response = job.run() => Ok(response),
                        never = stop => match never {},
                        stopped = drained => Ok(stopped),
                    }
                }
                .instrument(span.clone()),
            );
            self.tasks.spawn_reporting(options, work, report).inspect(|task| {
                let _ = task_tx.send(task.clone());
            })
        } else {
            let work = Box::pin(
                async move {
                    tokio::select! {
                        biased;
                        response = job.run() => Ok(response),
                        stopped = drained => Ok(stopped),
                    }
                }
                .instrument(span.clone()),
            );
            self.tasks.spawn_reporting(options, work, report)
        };
        if spawned.is_ok() {
            self.tenant.admitted();
            metrics::admitted(self.tenant.label());
        }
        match spawned {
            Ok(task) if scoped => {
                if self.scoped_in_flight.len() >= self.scoped_sweep_at {
                    self.scoped_in_flight.retain(|task| !task.is_finished());
                    self.scoped_sweep_at = (self.scoped_in_flight.len() * 2).max(64);
                }
                self.scoped_in_flight.push(InFlight { task, method, since, version });
            }
            Ok(task) => {
                if self.in_flight.len() >= self.sweep_at {
                    self.in_flight.retain(|_, task| !task.is_finished());
                    self.sweep_at = (self.in_flight.len() * 2).max(64);
                }
                self.in_flight.insert(id, InFlight { task, method, since, version });
            }
            Err(refused) => {
                // The report was dropped unrun with the refused work (the requester's slot
                // with it); give the tenant slot back.
                self.tenant.release();
                let err = match refused {
                    SpawnError::Overloaded { max } => {
                        self.tenant.refused_overloaded();
                        metrics::refused(self.tenant.label().clone(), Refusal::Overloaded);
                        overloaded(self.own_scope(), max, self.shared.config.overload_retry_after)
                    }
                    SpawnError::ShuttingDown => McpError::internal("Internal error: the connection is closing"),
                };
                refuse(self, err);
            }
        }
    }
}

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
//! The work is a free function over a [`SpawnCtx`], what a request needs of its
//! connection, so that the same code serves the actor (a byte stream, a legacy session)
//! and an endpoint's desk (`desk.rs`: a 2026-07-28 request started on its transport's
//! task, without an actor turn).
//!
//! Invariant: the tenant slot and the requester slot taken here are released exactly
//! once: by the report, or at once when the spawn is refused.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arbor_otp::{pin_in_place, SpawnError, TaskOptions, TaskOutcome, TaskRef, TaskSupervisor};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta::Meta;
use arbor_protocol::methods::{ClientRequest, MethodName};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Span;

use super::inbound::Reports;
use super::inspect::InFlight;
use super::output::{Kind, Output};
use super::{BatchReply, ConnState, ConnectionHandle};
use crate::context::{ContextParts, RequestContext, RequestSignal, RequestSink};
use crate::error::{duplicate_id, overloaded, panicked, tenant_escalated, timed_out, OverloadScope};
use crate::metrics::{self, Operation, Refusal, Status};
use crate::request::sink::ConnectionSink;
use crate::request::{error_frame, subject_of, JobTerms, RequestJob};
use crate::requester::Requester;
use crate::serve::Shared;
use crate::telemetry::{self, ConnectionTrace, InSpan, RequestSpan};
use crate::tenant::routers::TenantSlot;
use crate::tree::TenantLimits;

impl ConnState {
    pub(super) fn spawn(&mut self, id: RequestId, request: Box<ClientRequest>, meta: Meta, terms: JobTerms) {
        // A request scoped to its exchange is not in the id table: another exchange may
        // use the same id, and only closing its route cancels it.
        let scoped = self.scoped();
        // The id is reserved before the request starts (`ids.rs`): the endpoint's desk may
        // be starting one under the same id on another task.
        let duplicate =
            !scoped && (self.listens.get(&id).is_some_and(|unit| !unit.is_finished()) || !self.ids.lock().reserve(&id));
        let ctx = SpawnCtx {
            shared: &self.shared,
            tenant: &self.tenant,
            handlers: &self.handlers,
            tasks: &self.tasks,
            trace: &self.trace,
            parent: (!scoped).then_some(&self.span),
            me: &self.me,
            output: self.out(),
            connection_sink: self.current.is_none().then_some(&self.sink),
            standalone: &self.output,
            endpoint: self.endpoint.is_some(),
            requester: self.counted_requester(),
            batch: self.batch.as_ref(),
            reports: &self.reports,
            scope: self.own_scope(),
            scoped,
            duplicate,
            eager: false,
        };
        let started = start(&ctx, id.clone(), request, meta, terms);
        match (scoped, started) {
            (true, Some(started)) => {
                if let Some(desk) = self.desk() {
                    desk.record(started);
                }
            }
            (true, None) => {}
            (false, _) if duplicate => {}
            (false, Some(started)) => self.ids.lock().started(id, started),
            (false, None) => self.ids.lock().release(&id),
        }
    }
}

/// What starting a request needs of its connection: borrowed from the actor's state, or
/// from an endpoint's desk.
pub(super) struct SpawnCtx<'a> {
    pub(super) shared: &'a Arc<Shared>,
    pub(super) tenant: &'a Arc<TenantLimits>,
    pub(super) handlers: &'a TenantSlot,
    pub(super) tasks: &'a TaskSupervisor,
    pub(super) trace: &'a ConnectionTrace,
    /// The connection's span, parent of the request's; `None` makes the request a root
    /// (a 2026-07-28 pool's requests, which belong to no session).
    pub(super) parent: Option<&'a tracing::Span>,
    pub(super) me: &'a ConnectionHandle,
    /// Where what the request causes goes.
    pub(super) output: &'a Output,
    /// A byte stream's sink, shared by all its requests; `None` for a submission's request,
    /// which gets a sink of its own writing to `output` and `standalone`.
    pub(super) connection_sink: Option<&'a Arc<dyn RequestSink>>,
    /// The connection's own output: what no submission caused.
    pub(super) standalone: &'a Output,
    /// Fed by an endpoint (an HTTP transport charged the tenant's rates already).
    pub(super) endpoint: bool,
    /// The requester whose share of the tenant the request counts against.
    pub(super) requester: Option<&'a Requester>,
    /// The batch the request belongs to, whose array its answer goes into.
    pub(super) batch: Option<&'a Arc<BatchReply>>,
    pub(super) reports: &'a Reports,
    /// The connection's own bounds' name in a refusal.
    pub(super) scope: OverloadScope,
    /// Scoped to its exchange (`OnClose::Cancel`): `output` closing cancels it.
    pub(super) scoped: bool,
    /// Its id is in flight on the connection already: refused, on its own span.
    pub(super) duplicate: bool,
    /// The work's first poll runs on the caller's task (`TaskSupervisor::start_reporting`):
    /// a transport's task that only waits for the answer, never the actor's turn.
    pub(super) eager: bool,
}

impl SpawnCtx<'_> {
    /// Answers a refusal: into the batch's array, or straight out.
    fn refuse(&self, span: &tracing::Span, id: &RequestId, err: &McpError) {
        telemetry::record_error(span, err);
        let frame = err.to_response(Some(id.clone())).to_vec();
        match self.batch {
            Some(batch) => batch.report(Some(frame)),
            None => {
                let _ = self.output.send_vec(Kind::Response, frame);
            }
        }
    }
}

/// Starts one request as a supervised task, or refuses it (answered here, `None`).
pub(super) fn start(
    ctx: &SpawnCtx<'_>,
    id: RequestId,
    request: Box<ClientRequest>,
    meta: Meta,
    terms: JobTerms,
) -> Option<InFlight> {
    let scoped = ctx.scoped;
    // A span per request (`crate::telemetry`), child of the connection's (a 2026-07-28
    // pool's requests are roots) unless `_meta` names a trace; without a subscriber
    // interested in it, it costs a relaxed load and builds no string.
    let span = RequestSpan {
        parent: ctx.parent,
        trace: ctx.trace,
        id: &id,
        request: &request,
        version: terms.version,
        info: &terms.connection,
        meta: &meta,
    }
    .open();
    // A refusal is answered here, and recorded on the span (an overload is the server's
    // failure by the conventions' classification).
    if ctx.duplicate {
        ctx.refuse(&span, &id, &duplicate_id(ctx.scope));
        return None;
    }
    // The tenant's policy first (`crate::tenant`): its quarantine, and on a byte stream the
    // rates (an endpoint's transport charged those before reading the request).
    if let Err(refusal) = ctx.tenant.gate(ctx.requester, !ctx.endpoint) {
        ctx.refuse(&span, &id, &McpError::from(&refusal));
        return None;
    }
    // The requester's share of the tenant, before the connection's own bound: a requester
    // past its share is told so, whoever else is waiting.
    let requester_slot = match ctx.requester {
        None => None,
        Some(requester) => {
            let slots = &ctx.tenant.requests;
            match slots.try_acquire(requester) {
                Some(slot) => Some(slot),
                None => {
                    ctx.tenant.refused_overloaded();
                    metrics::refused(ctx.tenant.label().clone(), Refusal::Overloaded);
                    let retry = ctx.shared.config.overload_retry_after;
                    ctx.refuse(&span, &id, &overloaded(OverloadScope::Requester, slots.max(), retry));
                    return None;
                }
            }
        }
    };
    let config = &ctx.shared.config;
    if !ctx.tenant.try_acquire() {
        metrics::refused(ctx.tenant.label().clone(), Refusal::Overloaded);
        let err = overloaded(OverloadScope::Tenant, ctx.tenant.max(), config.overload_retry_after);
        ctx.refuse(&span, &id, &err);
        return None;
    }
    let method = request.method();
    // One clock read for the request's start, its operation's start and its deadline.
    let since = Instant::now();
    // The tool or prompt named, made once for the metrics and the job.
    let subject = subject_of(&request);
    let op =
        Operation::start(&request, subject.clone(), terms.version, metrics::transport(ctx.endpoint), since.into_std());
    // From here on the request belongs to this version of the tenant's handler.
    let handler = ctx.handlers.load();
    let version = handler.version;
    // A tool's terms, from one lookup: its deadline, and whether it may ask for input (the
    // job's `asks_input`; only a `tools/call` of a tool that says it never does is `false`).
    let mut asks_input = true;
    let deadline = match &*request {
        ClientRequest::CallTool(p) => {
            let handler = &handler.handler;
            // A panicking override falls back to the defaults rather than taking the
            // connection down with it.
            let terms = std::panic::catch_unwind(AssertUnwindSafe(|| handler.tool_terms(&p.name))).ok();
            asks_input = terms.is_none_or(|t| t.asks_input);
            terms.and_then(|t| t.deadline)
        }
        // A blocking `tasks/result` waits for its task, which ends before its TTL (at most
        // `tasks.ttl`): the request deadline alone would cut a long task's result.
        ClientRequest::GetTaskPayload(_) => Some(config.default_deadline.max(config.tasks.ttl)),
        _ => None,
    }
    .unwrap_or(config.default_deadline);
    // A byte stream's requests share the connection's sink and handle; a submission's get
    // their own, writing to its route.
    let (sink, requester) = match ctx.connection_sink {
        Some(sink) => (sink.clone(), ctx.me.clone()),
        None => (
            Arc::new(ConnectionSink::with_standalone(ctx.output.clone(), ctx.standalone.clone()))
                as Arc<dyn RequestSink>,
            ctx.me.with_output(ctx.output.clone()),
        ),
    };
    let signal = Arc::new(RequestSignal::for_span(&span));
    // The report's way to the span, for a request a subscriber traces (see `RequestSignal`).
    let kept = signal.is_traced().then(|| signal.clone());
    let cx = RequestContext::from_parts(ContextParts {
        id: id.clone(),
        meta,
        connection: terms.connection,
        progress_token: terms.progress_token,
        log_level: terms.log_level,
        deadline: Some(since + deadline),
        signal,
        input_responses: None,
        input_state: None,
        sink: Some(sink),
    });
    let job = RequestJob {
        shared: ctx.shared.clone(),
        handler,
        id: id.clone(),
        request,
        subject,
        asks_input,
        version: terms.version,
        cx,
        requester,
    };
    let report = {
        let (id, output, tenant, batch) = (id.clone(), ctx.output.clone(), ctx.tenant.clone(), ctx.batch.cloned());
        // Dropped with the closure, after the answer is written (or if it never runs).
        let pending = ctx.reports.pending();
        move |outcome: TaskOutcome<(Vec<u8>, Status), std::convert::Infallible>| {
            let _pending = pending;
            // The request's span, kept by its job if the job was stopped unfinished (a
            // panic, the deadline, a cancel): the work that owned it is gone, and it ends
            // when this drops it.
            let span = kept.filter(|signal| signal.is_stopped()).and_then(|signal| signal.take_span());
            let span = span.as_ref();
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
                    if let Some(span) = span {
                        telemetry::record_error(span, &err);
                    }
                    op.panicked();
                    (error_frame(&id, &err), Status::Error(-32603))
                }
                TaskOutcome::TimedOut => {
                    let err = timed_out(method, deadline);
                    if let Some(span) = span {
                        telemetry::record_error(span, &err);
                    }
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
    // Boxed once here (the request's state is about 2.5 KiB in a release build), so the
    // task wrapper and tokio move a pointer instead of copying that state at every layer;
    // this alone tripled pipelined throughput.
    let options = TaskOptions::deadline(deadline);
    // The drain's deadline (`crate::drain`), and the tenant's escalation: see `Drain`.
    let drained = Drain {
        id: id.clone(),
        shared: ctx.shared.clone(),
        // Only a tenant with a restart budget has a stop signal; the others' requests race
        // nothing more.
        escalated: ctx.tenant.has_budget().then(|| ctx.tenant.stop_signal()),
        method,
    };
    // The span goes into the work itself where the work is made only once admitted (a
    // clone and its close cost about 250 instructions per request with a subscriber); it
    // stays here for a refusal, the one case where the work is never made.
    let mut span = Some(span);
    let spawned = if scoped {
        let route = ctx.output.clone();
        match ctx.eager {
            // The work is made with its own handle: no channel to hand it over.
            true => ctx.tasks.start_reporting(
                options,
                |me| {
                    let me = me.clone();
                    // Made in its box: the work is kilobytes, and a copy of it costs
                    // more than the rest of the start.
                    InSpan::new(
                        pin_in_place(|| scoped_work(job, drained, route, async move { Some(me) })),
                        span.take().unwrap_or_else(Span::none),
                    )
                },
                report,
            ),
            false => {
                let (task_tx, task_rx) = oneshot::channel::<TaskRef>();
                let work = InSpan::new(
                    pin_in_place(|| scoped_work(job, drained, route, async move { task_rx.await.ok() })),
                    span.clone().unwrap_or_else(Span::none),
                );
                ctx.tasks.spawn_reporting(options, work, report).inspect(|task| {
                    let _ = task_tx.send(task.clone());
                })
            }
        }
    } else {
        // Boxed as it is made and instrumented outside the box: the future is about 2.2 KiB,
        // and every move of it is a copy.
        let work = pin_in_place(|| session_work(job, drained));
        match ctx.eager {
            true => ctx.tasks.start_reporting(
                options,
                |_| InSpan::new(work, span.take().unwrap_or_else(Span::none)),
                report,
            ),
            false => {
                ctx.tasks.spawn_reporting(options, InSpan::new(work, span.clone().unwrap_or_else(Span::none)), report)
            }
        }
    };
    match spawned {
        Ok(task) => {
            ctx.tenant.admitted();
            metrics::admitted(ctx.tenant.label());
            Some(InFlight { task, method, since, version })
        }
        Err(refused) => {
            // The report was dropped unrun with the refused work (the requester's slot
            // with it); give the tenant slot back.
            ctx.tenant.release();
            let err = match refused {
                SpawnError::Overloaded { max } => {
                    ctx.tenant.refused_overloaded();
                    metrics::refused(ctx.tenant.label().clone(), Refusal::Overloaded);
                    overloaded(ctx.scope, max, ctx.shared.config.overload_retry_after)
                }
                SpawnError::ShuttingDown => McpError::internal("Internal error: the connection is closing"),
            };
            // Never made, so the span is still here.
            ctx.refuse(span.as_ref().unwrap_or(&Span::none()), &id, &err);
            None
        }
    }
}

/// The work of a request scoped to its exchange: its job, raced against its route closing
/// and the drain. Once the route closes, the task cancels itself through its own handle
/// (`me`, ready once the task has started), so it ends `Cancelled` exactly as a client's
/// cancel would: dropped work, no answer, slot freed. Boxed by the caller as it is made;
/// not inlined, for the reason `session_work` gives.
#[inline(never)]
fn scoped_work(
    job: RequestJob,
    drained: Drain,
    route: Output,
    me: impl Future<Output = Option<TaskRef>>,
) -> impl Future<Output = Result<(Vec<u8>, Status), std::convert::Infallible>> {
    let stop = async move {
        route.closed().await;
        if let Some(task) = me.await {
            let _ = task.cancel();
        }
        std::future::pending::<(Vec<u8>, Status)>().await
    };
    Race { work: job.run(), stop: Some(stop), drained: drained.answer() }
}

/// The work of a request of a legacy session (or a byte stream): its job, raced against the
/// drain. Not inlined: made by a call, the work is written straight into the box its caller
/// allocated (`pin_in_place`); made inline, it was built on the stack and copied.
#[inline(never)]
fn session_work(
    job: RequestJob,
    drained: Drain,
) -> impl Future<Output = Result<(Vec<u8>, Status), std::convert::Infallible>> {
    Race { work: job.run(), stop: None::<std::future::Pending<(Vec<u8>, Status)>>, drained: drained.answer() }
}

/// What stops a request before its handler answers, besides a cancel: the server's drain
/// reaching its deadline (`crate::drain`), or its tenant escalated past its restart budget
/// (`Tree::escalate`). The task then completes with that error in place of its handler's
/// answer, so its report answers it exactly once.
///
/// The terms, not the future: the future is about 320 bytes (most of them the drain's
/// wait), and made in `start` it was copied three times on its way into the work's box
/// (measured: about 440 instructions per 2026-07-28 request, 190 per legacy one);
/// [`Drain::answer`], called by the work functions, makes it in the box.
struct Drain {
    id: RequestId,
    shared: Arc<Shared>,
    /// The tenant's stop signal, for a tenant with a restart budget.
    escalated: Option<CancellationToken>,
    method: MethodName,
}

impl Drain {
    /// The answer once the request is stopped. Lazy: the drain's receiver is made only if
    /// the handler did not answer at its first poll, which most requests do.
    fn answer(self) -> impl Future<Output = (Vec<u8>, Status)> {
        let Drain { id, shared, escalated, method } = self;
        async move {
            let err = match escalated {
                None => shared.drain.requests_stopped().await,
                Some(stop) => tokio::select! {
                    err = shared.drain.requests_stopped() => err,
                    () = stop.cancelled() => tenant_escalated(method),
                },
            };
            // Polled inside the request's span (the work is instrumented with it): its
            // handle is taken only here, on the rare path, not cloned for every request.
            telemetry::record_error(&tracing::Span::current(), &err);
            (error_frame(&id, &err), Status::of(&err))
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's work raced against what may stop it, polled in this order: the work,
    /// then the stop (its route closing; never ready itself), then the drain. Not
    /// `select!` in an `async` block: the block held its arguments and, from its first
    /// poll, `select!`'s own copies of them (the job's future among them), moved there
    /// at that poll. Here each future is made once, in place, and polled where it is.
    struct Race<W, S, D> {
        #[pin]
        work: W,
        // `None` for a session's request, which has no route to watch. Not
        // `std::future::pending()` in its place: measured, that cost a legacy request
        // about 400 instructions more (a `memcpy` more of its work).
        #[pin]
        stop: Option<S>,
        #[pin]
        drained: D,
    }
}

impl<W, S, D, T> Future for Race<W, S, D>
where
    W: Future<Output = T>,
    S: Future<Output = T>,
    D: Future<Output = T>,
{
    type Output = Result<T, std::convert::Infallible>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let mut this = self.project();
        if let Poll::Ready(answer) = this.work.poll(cx) {
            return Poll::Ready(Ok(answer));
        }
        if let Some(stop) = this.stop.as_mut().as_pin_mut() {
            if let Poll::Ready(answer) = stop.poll(cx) {
                return Poll::Ready(Ok(answer));
            }
        }
        this.drained.poll(cx).map(Ok)
    }
}

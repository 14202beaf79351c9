//! Message-level serving, for transports that are not one byte stream (Streamable HTTP):
//! the transport seam. Only transport authors need it (`arbor-http` is built on it); its
//! types are reached as `arbor_server::exchange::…` and are not re-exported at the crate's
//! root nor in the `arbor` facade's prelude, so a server author never meets them.
//!
//! The transport decodes a body into a [`Parsed`], submits it to an [`Endpoint`] (a
//! connection actor without a byte reader, under the server's supervision tree like any
//! connection) together with a [`Route`], and reads from the route's [`RouteReceiver`]
//! every server→client message the submission causes, tagged as an [`Outgoing`]
//! notification, request or response: immediate refusals and housekeeping answers, the
//! request task's progress, logs and final response, the server→client requests a legacy
//! handler makes (whose answers come back in later submissions), a listen stream's
//! notifications and result. Messages no submission caused (legacy `list_changed`,
//! `resources/updated`) go to the endpoint's standalone route. [`OnClose`] says what a
//! dropped receiver means: a cancel (2026-07-28) or nothing (legacy, where the HTTP layer
//! buffers for resumption).
//!
//! This module is not an HTTP server: it knows no status codes, headers, sessions or SSE;
//! `arbor-http` builds those on it, with the header rules of `arbor_protocol::era::http`.
//!
//! A submission may name its [`Requester`] ([`Endpoint::submit_from`]): an endpoint that
//! serves many clients (the 2026-07-28 pool) then bounds each requester's share of its
//! request and stream slots, and the tasks extension makes it the owner of its tasks.
//!
//! Invariant: an endpoint behaves as a stdio connection fed the same messages (same
//! decoding, terms, gates, limits, deadlines, panics as -32603, batches), except that
//! output is routed per submission, that requests submitted with [`OnClose::Cancel`]
//! are scoped to their exchange (outside the id table, cancelled only by their route
//! closing), and that those naming a requester are also bounded per requester.

mod parsed;
mod route;

use std::sync::{Arc, LazyLock, OnceLock};

use arbor_protocol::era::http::ParamHeader;
use arbor_protocol::version::ProtocolVersion;
use arc_swap::ArcSwap;

use crate::connection::{ConnMsg, ConnectionHandle, Desk, Io, Submission};
use crate::error::ConnectError;
use crate::principal::Principal;
use crate::requester::Requester;
use crate::serve::{ConnectOptions, Server};
use crate::tree::DEFAULT_TENANT;

pub use parsed::{BodyKind, Parsed};
pub use route::{Outgoing, Route, RouteReceiver};

/// What happens to the requests of a submission when its [`RouteReceiver`] is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnClose {
    /// 2026-07-28 HTTP: closing the response stream cancels the request (its task is
    /// stopped with outcome `Cancelled`, nothing is answered, its in-flight slot is freed;
    /// a listen stream is closed and its handlers' `handle_close` runs). Requests submitted
    /// this way are scoped to their exchange: they are not entered into the endpoint's id
    /// table (no duplicate-id check against other exchanges, not reachable by
    /// `notifications/cancelled`).
    Cancel,
    /// Legacy HTTP: a disconnect is not a cancel; the request runs on and its output is
    /// still sent to the route. Ids are checked against the session's in-flight table and
    /// `notifications/cancelled` reaches them, as on stdio.
    Continue,
}

/// What an endpoint shares with its connection actor, readable without a message.
#[derive(Debug)]
pub(crate) struct EndpointShared {
    /// Where messages unrelated to any submission go; replaceable.
    pub(crate) standalone: Arc<ArcSwap<Route>>,
    /// The legacy revision `initialize` negotiated, once it was answered.
    pub(crate) negotiated: OnceLock<ProtocolVersion>,
    /// Whether a client reads the standalone route now ([`Endpoint::standalone_reader`]).
    pub(crate) standalone_read: Arc<StandaloneRead>,
    /// Where 2026-07-28 requests scoped to their exchange and a legacy session's ordinary
    /// requests are served without an actor turn (`connection::desk`); made by the actor
    /// on the first such request.
    pub(crate) desk: OnceLock<Arc<Desk>>,
}

/// Whether a client reads an endpoint's standalone route now, and the wake-up of those
/// waiting for that to change. Not a `tokio::sync::watch` channel: its shared part is
/// 344 bytes (eight `Notify`s), kept by every legacy session for its life, for one flag
/// read by the rare 2025-11-25 task input request.
#[derive(Debug)]
pub(crate) struct StandaloneRead {
    read: std::sync::atomic::AtomicBool,
    changed: tokio::sync::Notify,
}

impl StandaloneRead {
    fn new(read: bool) -> StandaloneRead {
        StandaloneRead { read: std::sync::atomic::AtomicBool::new(read), changed: tokio::sync::Notify::new() }
    }

    /// Whether a client reads the route now.
    pub(crate) fn get(&self) -> bool {
        self.read.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Completes at the next [`StandaloneReader::set`] after it was first polled or
    /// enabled (`Notified::enable`): look at [`StandaloneRead::get`] after enabling it.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }
}

/// Tells an endpoint whether a client reads its standalone route now
/// ([`Endpoint::standalone_reader`]). Holds nothing else of the endpoint, so a stream may
/// keep it without keeping the endpoint's routes open. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StandaloneReader(Arc<StandaloneRead>);

impl StandaloneReader {
    /// A client reads the standalone route (`true`), or no longer does (`false`).
    pub fn set(&self, read: bool) {
        self.0.read.store(read, std::sync::atomic::Ordering::Release);
        self.0.changed.notify_waiters();
    }
}

/// A connection actor fed message by message: a legacy HTTP session, or a member of the
/// pool that serves 2026-07-28 POSTs. It lives under the server's supervision tree like
/// any connection (tenant bound, snapshot, shutdown). Cheap to clone.
#[derive(Clone)]
pub struct Endpoint {
    handle: ConnectionHandle,
    shared: Arc<EndpointShared>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("handle", &self.handle)
            .field("negotiated", &self.shared.negotiated.get())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Submits a parsed body; everything it causes goes to `route`. Never waits on the
    /// handler. On a closed endpoint the route is dropped at once, so its receiver reads
    /// `None` without any response.
    ///
    /// A 2026-07-28 request submitted with [`OnClose::Cancel`] (other than a listen), and
    /// an initialized legacy session's request that does not change the session (not
    /// `initialize`, `logging/setLevel` or an (un)subscription), is checked and started
    /// right here, on the calling task, with no actor message (`connection::desk`), and its
    /// handler's first poll runs here too: a handler that answers at once has its response
    /// on the route when this returns, and one that does not goes on as its own supervised
    /// task. Call it from the task that will read the route. Everything else is one message
    /// to the endpoint's actor, in submission order.
    pub fn submit(&self, parsed: Parsed, route: Route, on_close: OnClose) {
        self.send(Submission { item: parsed.item, route, requester: None, principal: None }, on_close);
    }

    /// [`Endpoint::submit`], naming who sent the body: the [`Requester`] its requests
    /// count against and own their tasks as, unless the endpoint was opened with a
    /// principal of its own (`ConnectOptions::auth`), which wins. Submissions scoped to
    /// their exchange ([`OnClose::Cancel`], an endpoint shared by many clients) are
    /// bounded per requester as well as per endpoint
    /// ([`ServerConfig::max_in_flight_per_requester`](crate::ServerConfig::max_in_flight_per_requester),
    /// [`max_subscriptions_per_requester`](crate::ServerConfig::max_subscriptions_per_requester)).
    pub fn submit_from(&self, parsed: Parsed, route: Route, on_close: OnClose, requester: Requester) {
        self.send(Submission { item: parsed.item, route, requester: Some(requester), principal: None }, on_close);
    }

    /// [`Endpoint::submit_from`] for a body whose transport verified `principal`: the
    /// requester is the principal's (`requester` must be `Requester::Principal` of its
    /// [`key`](Principal::key), made once by the caller's token cache so a request costs
    /// no formatting), and handlers read it as
    /// [`RequestContext::principal`](crate::RequestContext::principal). On a legacy
    /// session, the caller checks first that the principal is the session's own.
    pub fn submit_as(
        &self,
        parsed: Parsed,
        route: Route,
        on_close: OnClose,
        requester: Requester,
        principal: Arc<Principal>,
    ) {
        let sub = Submission { item: parsed.item, route, requester: Some(requester), principal: Some(principal) };
        self.send(sub, on_close);
    }

    /// Hands a submission to the desk (a 2026-07-28 request scoped to its exchange, or a
    /// legacy session's ordinary request, served from this task) or to the actor. On a
    /// stopped endpoint the route is dropped unused.
    fn send(&self, sub: Submission, on_close: OnClose) {
        let sub = match self.shared.desk.get() {
            Some(_) if !self.handle.is_alive() => return,
            Some(desk) => {
                let handed_back = match on_close {
                    OnClose::Cancel => desk.serve(sub, true),
                    OnClose::Continue => {
                        desk.set_level_early(&sub.item);
                        desk.serve_session(sub)
                    }
                };
                match handed_back {
                    None => return,
                    Some(sub) => sub,
                }
            }
            None => sub,
        };
        let Submission { item, route, requester, principal } = sub;
        let _ = self.handle.cast(ConnMsg::Submit { item, route, on_close, requester, principal });
    }

    /// Replaces the route for messages not related to any request (the legacy standalone
    /// GET stream). Messages sent before are not moved; streams already open write to the
    /// new route from their next message on.
    pub fn set_standalone(&self, route: Route) {
        self.shared.standalone.store(Arc::new(route));
    }

    /// What tells the endpoint whether a client reads its standalone route now (the
    /// legacy GET stream; assumed read until told otherwise). A 2025-11-25 task's input
    /// request with no `tasks/result` of the task open waits for a reader (or for such a
    /// `tasks/result`) rather than sit unread in the standalone queue while the client
    /// blocks in a `tasks/result` that opened after it was queued.
    pub fn standalone_reader(&self) -> StandaloneReader {
        StandaloneReader(self.shared.standalone_read.clone())
    }

    /// The negotiated legacy revision once `initialize` was answered.
    pub fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.shared.negotiated.get().copied()
    }

    /// Asks the endpoint to stop: in-flight requests are stopped without answers and its
    /// streams closed (handlers' `handle_close` run), as [`Connection::close`](crate::Connection::close).
    pub fn close(&self) {
        self.handle.close();
    }

    /// Waits until the endpoint has stopped.
    pub async fn closed(&self) {
        self.handle.wait().await;
    }

    /// Whether the endpoint is still running.
    pub fn is_open(&self) -> bool {
        self.handle.is_alive()
    }
}

/// Moves the ids of the server→client requests this process sends (elicitation,
/// sampling, roots) to a range of their own, chosen from `random`: a transport whose
/// nodes share legacy sessions calls it once at start, so that an answer routed by id
/// reaches the one node that asked. Ids already given out stay unique.
pub fn spread_server_request_ids(random: u64) {
    crate::connection::spread_asks(random);
}

/// The answer for tools without annotations, shared so a lookup allocates nothing.
static NO_PARAM_HEADERS: LazyLock<Arc<[ParamHeader]>> = LazyLock::new(|| Arc::from(Vec::new()));

impl Server {
    /// Opens an endpoint: a connection actor with no byte transport, under the server's
    /// tree (tenant and auth from `options`). `standalone` receives the server→client
    /// messages not related to any submission (see [`Endpoint::set_standalone`]).
    pub async fn open_endpoint(&self, options: ConnectOptions, standalone: Route) -> Result<Endpoint, ConnectError> {
        let shared = Arc::new(EndpointShared {
            standalone: Arc::new(ArcSwap::from_pointee(standalone)),
            negotiated: OnceLock::new(),
            standalone_read: Arc::new(StandaloneRead::new(true)),
            desk: OnceLock::new(),
        });
        let handle = self.start_connection(Io::Endpoint(shared.clone()), options).await?;
        Ok(Endpoint { handle, shared })
    }

    /// The `x-mcp-header` annotations of tool `name`, for checking a 2026-07-28
    /// `tools/call`'s `Mcp-Param-*` headers (`arbor_protocol::era::http::check_request_headers`).
    /// A [`Router`](crate::Router) answers from what it cached at registration; a raw
    /// handler through [`ServerHandler::tool_param_headers`](crate::ServerHandler::tool_param_headers).
    /// Empty for unknown tools and tools without annotations. The server's own handler's
    /// answer: for a request of a known tenant, [`Server::tenant_tool_param_headers`].
    pub fn tool_param_headers(&self, name: &str) -> Arc<[ParamHeader]> {
        self.handler().tool_param_headers(name).unwrap_or_else(|| NO_PARAM_HEADERS.clone())
    }

    /// [`Server::tool_param_headers`] as the handler `tenant` runs now answers it
    /// ([`Server::set_tenant_handler`]; `None`: the default tenant).
    pub fn tenant_tool_param_headers(&self, tenant: Option<&str>, name: &str) -> Arc<[ParamHeader]> {
        let handler = self.shared.tenants.current(tenant.unwrap_or(DEFAULT_TENANT));
        handler.handler.tool_param_headers(name).unwrap_or_else(|| NO_PARAM_HEADERS.clone())
    }

    /// The OAuth scopes a `tools/call` of tool `name` needs besides the server's own
    /// ([`ServerHandler::tool_scopes`](crate::ServerHandler::tool_scopes); a
    /// [`Router`](crate::Router) answers what [`ToolRoute::scopes`](crate::router::ToolRoute::scopes)
    /// declared). `None` for unknown tools and tools that need none. The server's own
    /// handler's answer: for a request of a known tenant, [`Server::tenant_tool_scopes`].
    pub fn tool_scopes(&self, name: &str) -> Option<Arc<[String]>> {
        self.handler().tool_scopes(name)
    }

    /// [`Server::tool_scopes`] as the handler `tenant` runs now answers it
    /// ([`Server::set_tenant_handler`]; `None`: the default tenant): what an authorizing
    /// transport checks a tenant's `tools/call` against.
    pub fn tenant_tool_scopes(&self, tenant: Option<&str>, name: &str) -> Option<Arc<[String]>> {
        self.shared.tenants.current(tenant.unwrap_or(DEFAULT_TENANT)).handler.tool_scopes(name)
    }
}

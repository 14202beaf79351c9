//! The server's metrics: every name, attribute and bucket in one place, and the small
//! recording functions the runtime calls, through the [`metrics`] facade.
//!
//! The OpenTelemetry MCP conventions' two server histograms (seconds, the conventions'
//! [`DURATION_BUCKETS`]): [`OPERATION_DURATION`] per answered request (received → answer
//! handed to the transport) and [`SESSION_DURATION`] per session (a legacy session, a
//! byte-stream connection, a `subscriptions/listen` stream). Arbor's own, prefixed
//! `arbor.`: requests in flight, admitted and refused per tenant (refusals with a
//! [`Refusal`] reason), handler panics and timeouts, and gauges of live connections,
//! legacy sessions, subscription streams and tasks. The subscription streams' queue depth
//! is the bus's (`arbor_bus::metrics::QUEUE_DEPTH`: each stream reads one bus
//! subscription). The bus's and the supervisors' own
//! counters are named in their crates (`arbor_bus::metrics`, `arbor_otp::metrics`),
//! re-exported here so this module lists everything a server emits.
//!
//! What it is not: an exporter or a recorder. The library installs none; without one,
//! every call here goes to the facade's no-op recorder (nothing stored).
//! `arbor_http` serves a Prometheus recorder's text at `/metrics` when the application
//! installs one (`HttpConfig::metrics`).
//!
//! Per request, the handles of the operation histogram, the admitted counter and the
//! in-flight gauge are kept (`Kept`) rather than looked up through a key built per call
//! (a label vector, the recorder's hash and map lookup: about 6,000 instructions per
//! request with the Prometheus recorder). A handle is kept only if it came from a
//! recorder that lives as long as the process (the global one), so a thread-local recorder
//! (`metrics::set_default_local_recorder`, tests) still gets every call through its own
//! registration. A zero-sized recorder (the facade's no-op, while none is installed) has
//! no identity to keep a handle by: it registers at each call, with a key built once. A
//! kept handle keeps its series: an exporter's idle timeout
//! (`PrometheusBuilder::idle_timeout`, off in `arbor_http::metrics::prometheus_builder`)
//! must not drop series still being updated, as for any handle held (the gauges' guards
//! hold theirs already).
//!
//! Invariant: a gauge changed here is changed back exactly once (the guards' `Drop`), so
//! every gauge returns to its start when what it counts has gone.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant};

use arbor_protocol::error::{ErrorCode, McpError};
use arbor_protocol::methods::{ClientRequest, MethodName};
use arbor_protocol::version::ProtocolVersion;

use crate::context::ConnectionInfo;
use metrics::{
    counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Counter, Gauge, Histogram, Key,
    Label, Recorder, SharedString, Unit,
};
use parking_lot::{Mutex, RwLock};

pub use arbor_bus::metrics as bus;
pub use arbor_otp::metrics as otp;

/// `mcp.server.operation.duration`: seconds from a request's arrival to its answer.
pub const OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// `mcp.server.session.duration`: seconds a session lived.
pub const SESSION_DURATION: &str = "mcp.server.session.duration";
/// Requests holding a tenant slot (gauge; `arbor.tenant`).
pub const REQUESTS_IN_FLIGHT: &str = "arbor.server.requests.in_flight";
/// Requests admitted to a task (counter; `arbor.tenant`).
pub const REQUESTS_ADMITTED: &str = "arbor.server.requests.admitted";
/// Requests refused at once (counter; `arbor.tenant`, `arbor.refusal.reason`).
pub const REQUESTS_REFUSED: &str = "arbor.server.requests.refused";
/// Handlers that panicked (counter; `mcp.method.name`).
pub const HANDLER_PANICS: &str = "arbor.server.handler.panics";
/// Requests stopped by their deadline (counter; `mcp.method.name`).
pub const HANDLER_TIMEOUTS: &str = "arbor.server.handler.timeouts";
/// Live connection actors (gauge; `arbor.tenant`, `network.transport`).
pub const CONNECTIONS: &str = "arbor.server.connections";
/// Live legacy (handshake-era) sessions (gauge; `arbor.tenant`, `network.transport`).
pub const LEGACY_SESSIONS: &str = "arbor.server.sessions";
/// Live subscription streams: listens, legacy resource subscriptions, list_changed
/// streams (gauge; `arbor.tenant`).
pub const SUBSCRIPTIONS: &str = "arbor.server.subscriptions";
/// Open SSE response bodies of the HTTP transport: POST streams, legacy GET streams,
/// 2026-07-28 listens (gauge; emitted by `arbor-http`).
pub const HTTP_STREAMS: &str = "arbor.http.streams";
/// Tasks of the tasks extension running (gauge).
pub const TASKS: &str = "arbor.server.tasks";
/// Tenants escalated past their restart budget (counter; `arbor.tenant`).
pub const TENANT_ESCALATIONS: &str = "arbor.server.tenant.escalations";
/// Whether a tenant is quarantined now: 1 from its escalation to the end of its
/// cool-down, then 0 (gauge; `arbor.tenant`; set when the quarantine starts and ends).
pub const TENANT_QUARANTINED: &str = "arbor.server.tenant.quarantined";

/// `mcp.method.name`.
pub const METHOD: &str = "mcp.method.name";
/// `mcp.protocol.version`.
pub const PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// `gen_ai.tool.name` (`tools/call` only).
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.prompt.name` (`prompts/get` only).
pub const PROMPT_NAME: &str = "gen_ai.prompt.name";
/// `error.type`: the JSON-RPC code of a server fault, or `tool_error`.
pub const ERROR_TYPE: &str = "error.type";
/// `rpc.response.status_code`: the JSON-RPC error code of any error answer.
pub const STATUS_CODE: &str = "rpc.response.status_code";
/// `network.transport`: `tcp` (HTTP) or `pipe` (stdio, an in-memory pair).
pub const TRANSPORT: &str = "network.transport";
/// `arbor.tenant`.
pub const TENANT: &str = "arbor.tenant";
/// `arbor.refusal.reason`: a [`Refusal`].
pub const REFUSAL_REASON: &str = "arbor.refusal.reason";

/// The conventions' bucket advice for every duration histogram, in seconds (the same as
/// the C# SDK's).
pub const DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// Describes every metric Arbor emits (help text and unit) to the installed recorder: call
/// it once after installing one (`arbor_http::metrics::install_prometheus` does), so the
/// exporter names the histograms in seconds.
pub fn describe() {
    describe_histogram!(OPERATION_DURATION, Unit::Seconds, "MCP request duration, received to answered (server)");
    describe_histogram!(
        SESSION_DURATION,
        Unit::Seconds,
        "MCP session duration (server): legacy session, stdio connection, listen"
    );
    describe_histogram!(CLIENT_OPERATION_DURATION, Unit::Seconds, "MCP request duration, sent to answered (client)");
    describe_histogram!(CLIENT_SESSION_DURATION, Unit::Seconds, "MCP session duration (client)");
    describe_gauge!(REQUESTS_IN_FLIGHT, "Requests holding a tenant slot");
    describe_counter!(REQUESTS_ADMITTED, "Requests admitted to a task");
    describe_counter!(REQUESTS_REFUSED, "Requests refused at once, by reason");
    describe_counter!(HANDLER_PANICS, "Request handlers that panicked");
    describe_counter!(HANDLER_TIMEOUTS, "Requests stopped by their deadline");
    describe_gauge!(CONNECTIONS, "Live connection actors");
    describe_gauge!(LEGACY_SESSIONS, "Live legacy (handshake-era) sessions");
    describe_gauge!(SUBSCRIPTIONS, "Live subscription streams");
    describe_gauge!(TASKS, "Running tasks of the tasks extension");
    describe_counter!(TENANT_ESCALATIONS, "Tenants escalated past their restart budget");
    describe_gauge!(TENANT_QUARANTINED, "1 while a tenant is quarantined, else 0");
    describe_gauge!(HTTP_STREAMS, "Open SSE response bodies (HTTP)");
    describe_counter!(otp::RESTARTS, "Children restarted by their supervisor");
    describe_counter!(otp::ESCALATIONS, "Supervisors that exceeded their restart intensity");
    describe_counter!(bus::PUBLISHES, "Bus messages published");
    describe_counter!(bus::GAPS, "Bus gap events delivered to subscribers");
    describe_counter!(bus::DROPS, "Bus messages dropped from full subscription queues");
    describe_counter!(bus::REDIS_RECONNECTS, "Redis bus subscriber reconnections");
    describe_histogram!(bus::QUEUE_DEPTH, "Messages queued behind the one a bus subscription yielded");
}

/// `mcp.client.operation.duration` (emitted by `arbor-client`; named here so this module
/// lists every name).
pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// `mcp.client.session.duration` (emitted by `arbor-client`).
pub const CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";

/// Why a request was refused before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A shared bound (the tenant's, a connection's, a session's, an endpoint's) was full.
    Overloaded,
    /// A tenant's or a principal's request rate was exceeded (`TenantQuota::rate`,
    /// `principal_rate`). A requester's full in-flight share is `Overloaded`.
    RateLimited,
    /// The tenant is quarantined after exceeding its restart budget.
    Quarantined,
    /// No valid credentials (the HTTP authenticator refused the request).
    Unauthorized,
}

impl Refusal {
    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Refusal::Overloaded => "overloaded",
            Refusal::RateLimited => "rate_limited",
            Refusal::Quarantined => "quarantined",
            Refusal::Unauthorized => "unauthorized",
        }
    }
}

/// Counts one refused request of `tenant` (a transport's refusal, e.g. the authenticator's,
/// when no tenant is known yet, passes [`UNKNOWN_TENANT`]).
pub fn refused(tenant: impl Into<SharedString>, reason: Refusal) {
    counter!(REQUESTS_REFUSED, TENANT => tenant.into(), REFUSAL_REASON => reason.as_str()).increment(1);
}

/// The tenant label of a refusal made before any tenant was known.
pub const UNKNOWN_TENANT: &str = "unknown";

/// The transport label of a connection.
pub(crate) fn transport(endpoint: bool) -> &'static str {
    if endpoint {
        "tcp"
    } else {
        "pipe"
    }
}

/// A tenant's label value, made once per tenant (an `Arc`, so each record clones a pointer).
pub(crate) fn tenant_label(name: &str) -> SharedString {
    SharedString::from(Arc::<str>::from(name))
}

/// One request of `tenant` got its task: its counter kept per tenant name.
pub(crate) fn admitted(tenant: &SharedString) {
    static ADMITTED: KeptMap<Box<str>, Counter> = LazyLock::new(Default::default);
    metrics::with_recorder(|recorder| {
        static KEYS: KeyMap<Box<str>> = LazyLock::new(Default::default);
        let make = || Key::from_parts(REQUESTS_ADMITTED, vec![Label::new(TENANT, tenant.clone())]);
        let register = || recorder.register_counter(&make(), &METADATA);
        let Some(id) = RecorderId::of(recorder) else {
            let counter = with_key(
                &KEYS,
                &**tenant,
                || Box::from(&**tenant),
                make,
                |key| recorder.register_counter(key, &METADATA),
            );
            return counter.increment(1);
        };
        if let Some((from, counter)) = ADMITTED.read().get(&**tenant) {
            if *from == id {
                return counter.increment(1);
            }
        }
        let counter = register();
        counter.increment(1);
        if lasting(id) {
            let mut kept = ADMITTED.write();
            if kept.len() < MAX_KEPT || kept.contains_key(&**tenant) {
                kept.insert(Box::from(&**tenant), (id, counter));
            }
        }
    })
}

/// `tenant` was escalated past its restart budget and is quarantined for `quarantine`:
/// counted, and its quarantine gauge held at 1 until the cool-down ends.
pub(crate) fn escalated(tenant: &SharedString, quarantine: std::time::Duration) {
    counter!(TENANT_ESCALATIONS, TENANT => tenant.clone()).increment(1);
    gauge!(TENANT_QUARANTINED, TENANT => tenant.clone()).set(1.0);
    let tenant = tenant.clone();
    // The gauge's end: a sleep per escalation, at most one per tenant per cool-down.
    tokio::spawn(async move {
        tokio::time::sleep(quarantine).await;
        gauge!(TENANT_QUARANTINED, TENANT => tenant).set(0.0);
    });
}

/// A tenant's in-flight gauge: its key made once per tenant (`gauge!` with a label builds
/// its key, a vector of labels, on every call) and its handle kept ([`Kept`]).
#[derive(Debug)]
pub(crate) struct InFlight {
    key: Key,
    gauge: Kept<Gauge>,
}

/// The in-flight gauge of `tenant`.
pub(crate) fn in_flight_key(tenant: &SharedString) -> InFlight {
    InFlight {
        key: Key::from_parts(REQUESTS_IN_FLIGHT, vec![Label::new(TENANT, tenant.clone())]),
        gauge: Kept::default(),
    }
}

/// The tenant's in-flight gauge moved by `delta` (a slot taken or given back), recorded as
/// `gauge!` would.
pub(crate) fn in_flight(gauge: &InFlight, delta: f64) {
    gauge.gauge.with(|recorder| recorder.register_gauge(&gauge.key, &METADATA), |g| g.increment(delta));
}

/// What `counter!`, `gauge!` and `histogram!` pass a recorder from this module.
static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// At most this many handles kept per map ([`admitted`], [`Operation::finish`]): their keys
/// are tenant, tool and prompt names the server knows (an unknown tool is an error, never
/// kept), but a server adding names for ever must not grow the map for ever; past it,
/// each call registers as the macros do.
const MAX_KEPT: usize = 4096;

/// A map of kept handles, hashed with FxHash (`rustc-hash`, already in the tree through
/// the HTTP stack): SipHash cost half the lookup on keys of a few short strings, and
/// flooding is no concern, as only names the server knows are ever inserted (a tool or
/// prompt that answered, a tenant admitted), at most [`MAX_KEPT`].
type FxMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

/// Handles kept by key, each with the recorder it came from.
type KeptMap<K, H> = LazyLock<RwLock<FxMap<K, (RecorderId, H)>>>;

/// Keys kept for a recorder that keeps no handle (a zero-sized one: the facade's no-op,
/// while none is installed), which is handed a key at each call as the macros do.
type KeyMap<K> = LazyLock<RwLock<FxMap<K, Key>>>;

/// Runs `register` with `map`'s key for `wanted`, made (`make`) and kept the first time,
/// at most [`MAX_KEPT`]: building a key's labels and hashing them at each call cost about
/// 1,000 instructions per request with no recorder installed.
fn with_key<K, Q, H>(
    map: &KeyMap<K>,
    wanted: &Q,
    owned: impl FnOnce() -> K,
    make: impl FnOnce() -> Key,
    register: impl FnOnce(&Key) -> H,
) -> H
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
{
    if let Some(key) = map.read().get(wanted) {
        return register(key);
    }
    let key = make();
    let handle = register(&key);
    let mut map = map.write();
    if map.len() < MAX_KEPT {
        map.insert(owned(), key);
    }
    handle
}

/// A recorder's identity: its address (compared, never dereferenced), so that a handle is
/// used only with the recorder it came from. Only a recorder with a size has one: two live
/// zero-sized values may share an address, so a zero-sized recorder (the facade's no-op)
/// registers at every call, as the macros do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RecorderId(usize);

impl RecorderId {
    fn of(recorder: &dyn Recorder) -> Option<RecorderId> {
        (std::mem::size_of_val(recorder) != 0).then(|| RecorderId(address(recorder)))
    }
}

/// A recorder's address, whatever its size (what a probe reports).
fn address(recorder: &dyn Recorder) -> usize {
    (recorder as *const dyn Recorder).cast::<()>() as usize
}

/// The global recorder, once a thread with no local recorder has seen it: it lives as long
/// as the process, so its handles can be kept.
static GLOBAL: OnceLock<RecorderId> = OnceLock::new();

/// When a probe last ran, so that a thread recording to a local recorder does not start a
/// probe per call.
static LAST_PROBE: Mutex<Option<Instant>> = Mutex::new(None);

/// Whether the recorder `id` is the global one, so that a handle it registered can be
/// kept. A recorder not seen yet is checked against what a fresh thread (no local
/// recorder) sees, at most every 100 ms: a local recorder, which may be gone by the next
/// call and another made at its address, never is the global one.
fn lasting(id: RecorderId) -> bool {
    if let Some(global) = GLOBAL.get() {
        return *global == id;
    }
    {
        let Some(mut last) = LAST_PROBE.try_lock() else { return false };
        if last.is_some_and(|at| at.elapsed() < Duration::from_millis(100)) {
            return false;
        }
        *last = Some(Instant::now());
    }
    let probed = std::thread::scope(|scope| {
        let probe = std::thread::Builder::new()
            .name("arbor-metrics-probe".to_owned())
            .spawn_scoped(scope, || metrics::with_recorder(|r| RecorderId::of(r).map(|_| address(r))));
        probe.ok()?.join().ok().flatten()
    });
    match probed {
        // The fresh thread saw a recorder with a size: no local one, so the global one,
        // which never changes once installed.
        Some(global) => *GLOBAL.get_or_init(|| RecorderId(global)) == id,
        None => false,
    }
}

/// A handle registered once and kept while the recorder it came from is the current one
/// (the global recorder, or the no-op while none is installed; see [`lasting`]).
#[derive(Debug)]
pub(crate) struct Kept<H>(RwLock<Option<(RecorderId, H)>>);

impl<H> Default for Kept<H> {
    fn default() -> Self {
        Kept(RwLock::new(None))
    }
}

impl<H> Kept<H> {
    /// Runs `record` on the kept handle, or on one `register` makes with the current
    /// recorder (kept if that recorder lasts).
    fn with(&self, register: impl FnOnce(&dyn Recorder) -> H, record: impl FnOnce(&H)) {
        metrics::with_recorder(|recorder| {
            let Some(id) = RecorderId::of(recorder) else { return record(&register(recorder)) };
            if let Some((from, handle)) = &*self.0.read() {
                if *from == id {
                    return record(handle);
                }
            }
            let handle = register(recorder);
            record(&handle);
            if lasting(id) {
                *self.0.write() = Some((id, handle));
            }
        })
    }
}

/// What a success's histogram is kept by: method, protocol version, transport and the
/// tool or prompt named. Enums where the label is one of a few, so hashing and comparing a
/// key reads the tool's name and no label text (about 150 instructions per request).
type OperationKey = (MethodName, ProtocolVersion, &'static str, Option<(Subject, Arc<str>)>);

/// What a request's subject names, for the label it goes under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Subject {
    Tool,
    Prompt,
}

impl Subject {
    fn label(self) -> &'static str {
        match self {
            Subject::Tool => TOOL_NAME,
            Subject::Prompt => PROMPT_NAME,
        }
    }
}

/// `key`'s labels, with room for `more`.
fn operation_labels((method, version, transport, target): &OperationKey, more: usize) -> Vec<Label> {
    let mut labels = Vec::with_capacity(4 + more);
    labels.push(Label::new(METHOD, method.as_str()));
    labels.push(Label::new(PROTOCOL_VERSION, version.as_str()));
    labels.push(Label::new(TRANSPORT, *transport));
    if let Some((subject, value)) = target {
        labels.push(Label::new(subject.label(), value.clone()));
    }
    labels
}

/// The histogram key of a success with `key`'s labels.
fn operation_key(key: &OperationKey) -> Key {
    Key::from_parts(OPERATION_DURATION, operation_labels(key, 0))
}

/// How a request ended, for `error.type` and `rpc.response.status_code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    /// A `CallToolResult` with `isError: true`.
    ToolError,
    /// An error answer with this JSON-RPC code.
    Error(i64),
}

impl Status {
    pub(crate) fn of(err: &McpError) -> Status {
        Status::Error(err.code().as_i64())
    }
}

/// One request between its arrival at the connection and its answer: made by `spawn`,
/// finished by the task's report (or at once when refused).
#[derive(Debug)]
pub(crate) struct Operation {
    start: Instant,
    method: MethodName,
    version: ProtocolVersion,
    target: Option<(Subject, Arc<str>)>,
    transport: &'static str,
}

impl Operation {
    /// The operation of `request`, arrived at `start`; `subject` is the tool or prompt it
    /// names ([`crate::request::subject_of`]), shared with its job rather than copied.
    pub(crate) fn start(
        request: &ClientRequest,
        subject: Option<Arc<str>>,
        version: ProtocolVersion,
        transport: &'static str,
        start: Instant,
    ) -> Operation {
        let target = match request {
            ClientRequest::CallTool(_) => subject.map(|name| (Subject::Tool, name)),
            ClientRequest::GetPrompt(_) => subject.map(|name| (Subject::Prompt, name)),
            _ => None,
        };
        Operation { start, method: request.method(), version, target, transport }
    }

    /// The handler panicked (its -32603 answer follows through [`Operation::finish`]).
    pub(crate) fn panicked(&self) {
        counter!(HANDLER_PANICS, METHOD => self.method.as_str()).increment(1);
    }

    /// The deadline stopped the request.
    pub(crate) fn timed_out(&self) {
        counter!(HANDLER_TIMEOUTS, METHOD => self.method.as_str()).increment(1);
    }

    /// The answer was handed to the transport. A success's histogram is kept per method,
    /// version, transport and target (errors, rare and with codes of any value, register
    /// each time).
    pub(crate) fn finish(self, status: Status) {
        static KEPT: KeptMap<OperationKey, Histogram> = LazyLock::new(Default::default);
        if status != Status::Ok {
            return self.register(status);
        }
        static KEYS: KeyMap<OperationKey> = LazyLock::new(Default::default);
        metrics::with_recorder(|recorder| {
            let seconds = self.start.elapsed().as_secs_f64();
            let key = (self.method, self.version, self.transport, self.target);
            let Some(id) = RecorderId::of(recorder) else {
                let histogram = with_key(
                    &KEYS,
                    &key,
                    || key.clone(),
                    || operation_key(&key),
                    |key| recorder.register_histogram(key, &METADATA),
                );
                return histogram.record(seconds);
            };
            if let Some((from, histogram)) = KEPT.read().get(&key) {
                if *from == id {
                    return histogram.record(seconds);
                }
            }
            let histogram = recorder.register_histogram(&operation_key(&key), &METADATA);
            histogram.record(seconds);
            if lasting(id) {
                let mut kept = KEPT.write();
                if kept.len() < MAX_KEPT || kept.contains_key(&key) {
                    kept.insert(key, (id, histogram));
                }
            }
        })
    }

    /// Records the operation as `histogram!` would, its labels built for this call.
    fn register(self, status: Status) {
        let mut labels = operation_labels(&(self.method, self.version, self.transport, self.target), 2);
        match status {
            Status::Ok => {}
            Status::ToolError => labels.push(Label::new(ERROR_TYPE, "tool_error")),
            Status::Error(code) => {
                let text = code_str(code);
                if ErrorCode::from_i64(code).is_server_fault() {
                    labels.push(Label::new(ERROR_TYPE, text.clone()));
                }
                labels.push(Label::new(STATUS_CODE, text));
            }
        }
        histogram!(OPERATION_DURATION, labels).record(self.start.elapsed().as_secs_f64());
    }
}

/// A code as its label text, without an allocation for the runtime's own codes.
fn code_str(code: i64) -> Cow<'static, str> {
    Cow::Borrowed(match code {
        -32700 => "-32700",
        -32600 => "-32600",
        -32601 => "-32601",
        -32602 => "-32602",
        -32603 => "-32603",
        -32002 => "-32002",
        -32000 => "-32000",
        other => return Cow::Owned(other.to_string()),
    })
}

/// A gauge raised while the guard lives: `+1` now, `-1` on drop.
#[derive(Debug)]
pub(crate) struct Live(Gauge);

impl Live {
    fn new(gauge: Gauge) -> Live {
        gauge.increment(1.0);
        Live(gauge)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// A subscription stream's life: the subscriptions gauge and, for a listen, its
/// `mcp.server.session.duration` (the natural session of the per-request era).
#[derive(Debug)]
pub(crate) struct StreamClock {
    start: Instant,
    listen: Option<&'static str>,
    transport: &'static str,
    _live: Live,
}

impl StreamClock {
    pub(crate) fn start(connection: &ConnectionInfo, listen: bool, endpoint: bool) -> StreamClock {
        let tenant = tenant_label(&connection.tenant);
        StreamClock {
            start: Instant::now(),
            listen: listen.then(|| connection.protocol_version.as_str()),
            transport: transport(endpoint),
            _live: Live::new(gauge!(SUBSCRIPTIONS, TENANT => tenant)),
        }
    }
}

impl Drop for StreamClock {
    fn drop(&mut self) {
        if let Some(version) = self.listen {
            session_ended(self.start, Some(version), self.transport);
        }
    }
}

/// A running task of the tasks extension.
pub(crate) fn task() -> Live {
    Live::new(gauge!(TASKS))
}

/// A connection actor's life, for the connections gauge and, when it is a session (a byte
/// stream, or an endpoint that became a legacy session), `mcp.server.session.duration`.
#[derive(Debug)]
pub(crate) struct ConnectionClock {
    start: Instant,
    tenant: SharedString,
    transport: &'static str,
    _live: Live,
    legacy: Option<Live>,
    /// The version of a session, once it has one.
    version: Option<&'static str>,
    stream: bool,
}

impl ConnectionClock {
    pub(crate) fn start(tenant: &SharedString, endpoint: bool) -> ConnectionClock {
        let transport = transport(endpoint);
        ConnectionClock {
            start: Instant::now(),
            _live: Live::new(gauge!(CONNECTIONS, TENANT => tenant.clone(), TRANSPORT => transport)),
            tenant: tenant.clone(),
            transport,
            legacy: None,
            version: None,
            stream: !endpoint,
        }
    }

    /// The connection became a legacy session of `version` (its `initialize`).
    pub(crate) fn legacy(&mut self, version: ProtocolVersion) {
        if self.legacy.is_none() {
            let g = gauge!(LEGACY_SESSIONS, TENANT => self.tenant.clone(), TRANSPORT => self.transport);
            self.legacy = Some(Live::new(g));
        }
        self.version = Some(version.as_str());
    }

    /// A byte stream served a request of `version` (a stdio connection of the per-request era).
    pub(crate) fn served(&mut self, version: ProtocolVersion) {
        if self.stream && self.version.is_none() {
            self.version = Some(version.as_str());
        }
    }
}

impl Drop for ConnectionClock {
    fn drop(&mut self) {
        // The shared 2026-07-28 endpoint is no session; a byte stream always is one.
        if self.legacy.is_some() || self.stream {
            session_ended(self.start, self.version, self.transport);
        }
    }
}

/// Records one session's duration.
pub(crate) fn session_ended(start: Instant, version: Option<&'static str>, transport: &'static str) {
    let seconds = start.elapsed().as_secs_f64();
    match version {
        Some(v) => histogram!(SESSION_DURATION, PROTOCOL_VERSION => v, TRANSPORT => transport).record(seconds),
        None => histogram!(SESSION_DURATION, TRANSPORT => transport).record(seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::{CounterFn, HistogramFn, KeyName, SharedString, Unit};

    /// What the zero-sized recorder below saw: each registration's key, and each value.
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

    /// A recorder with no size, as the facade's no-op is: it has no identity to keep
    /// handles by, so it must be handed a key at every call.
    struct Stateless;

    struct Values;

    impl CounterFn for Values {
        fn increment(&self, value: u64) {
            SEEN.lock().push(format!("+{value}"));
        }
        fn absolute(&self, _: u64) {}
    }

    impl HistogramFn for Values {
        fn record(&self, _: f64) {
            SEEN.lock().push("recorded".into());
        }
    }

    fn seen(key: &Key) {
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        SEEN.lock().push(format!("{} {}", key.name(), labels.join(",")));
    }

    impl Recorder for Stateless {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &metrics::Metadata<'_>) -> Counter {
            seen(key);
            Counter::from_arc(Arc::new(Values))
        }
        fn register_gauge(&self, _: &Key, _: &metrics::Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, key: &Key, _: &metrics::Metadata<'_>) -> Histogram {
            seen(key);
            Histogram::from_arc(Arc::new(Values))
        }
    }

    #[test]
    fn a_zero_sized_recorder_is_handed_the_whole_key_at_every_call() {
        assert_eq!(std::mem::size_of::<Stateless>(), 0);
        let tenant = tenant_label("acme");
        let call = ClientRequest::CallTool(Box::new(arbor_protocol::model::tools::CallToolRequestParams::new("add")));
        metrics::with_local_recorder(&Stateless, || {
            for _ in 0..2 {
                admitted(&tenant);
                let subject = crate::request::subject_of(&call);
                Operation::start(&call, subject, ProtocolVersion::V2025_06_18, "tcp", Instant::now())
                    .finish(Status::Ok);
            }
        });
        let admitted = format!("{REQUESTS_ADMITTED} {TENANT}=acme");
        let operation = format!(
            "{OPERATION_DURATION} {METHOD}=tools/call,{PROTOCOL_VERSION}=2025-06-18,{TRANSPORT}=tcp,{TOOL_NAME}=add"
        );
        let once = [admitted.as_str(), "+1", operation.as_str(), "recorded"];
        assert_eq!(*SEEN.lock(), [once, once].concat());
    }
}

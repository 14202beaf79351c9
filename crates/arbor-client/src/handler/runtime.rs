//! [`HandlerRuntime`]: one per connection (one server), owning everything that answers the
//! server: the task supervisor of legacy server requests, the notification worker, the
//! rate buckets and what the handler declared.
//!
//! It is a cheap, cloneable handle; the connection calls it and never awaits a callback
//! (legacy requests go to supervised tasks, notifications to the worker; only modern
//! `answer_inputs` runs in the caller's task, by design). With hosted tasks on, it also
//! owns their store (`hosted/`), whose runs and waits have supervisors of their own. Not here: the era paths
//! (`requests.rs`, `inputs.rs`, `notifications.rs`) and the checks (`safety/`).
//!
//! Invariant: when `shutdown` returns, or the last handle is dropped, no request task and
//! no notification worker of this runtime runs on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arbor_otp::{TaskRef, TaskSupervisor, TaskSupervisorSpec};
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::model::capabilities::{
    ClientCapabilities, ElicitationCapability, RootsCapability, SamplingCapability,
};
use arbor_protocol::model::elicitation::ElicitationMode;
use parking_lot::{Mutex, RwLock};
use serde_json::Map;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::dispatch::{InFlightProbe, Shared};
use super::error::HandlerStartError;
use super::hosted::{self, Store};
use super::notifications::{self, Queued};
use super::safety::rate::TokenBucket;
use super::{Assigns, ClientHandler, ClientLimits, DynClientHandler, Era};

/// The legacy requests running now, by the server's request id: a sequence number (so a
/// finished task removes only its own entry) and the task's address for cancelling.
pub(crate) type Running = Arc<Mutex<HashMap<RequestId, (u64, TaskRef)>>>;

/// Runs a [`ClientHandler`] for one server connection, with every limit and safety check.
/// Cheap to clone; all clones share one runtime.
#[derive(Clone)]
pub struct HandlerRuntime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for HandlerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRuntime")
            .field("server_id", &self.inner.shared.server_id)
            .field("declared", &self.inner.shared.declared)
            .field("in_flight", &self.inner.tasks.in_flight())
            .finish()
    }
}

pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) tasks: TaskSupervisor,
    pub(crate) running: Running,
    pub(crate) next_seq: AtomicU64,
    pub(crate) queue: mpsc::Sender<Queued>,
    /// Client-hosted tasks, when enabled and the handler serves sampling or elicitation.
    pub(crate) hosted: Option<Arc<Store>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    /// The last handle went away without `shutdown`: stop the tasks and the worker anyway.
    fn drop(&mut self) {
        if let Some(worker) = self.worker.lock().take() {
            worker.abort();
        }
        self.tasks.cell().stop(Some("shutdown".to_owned()));
        if let Some(hosted) = &self.hosted {
            hosted.stop();
        }
    }
}

impl HandlerRuntime {
    /// Starts the runtime for one server: `server_id` is the operator-assigned id of the
    /// server, `client_name` the client's name, `client_assigns` the client's own assigns
    /// (given to callbacks not tied to a call). Must run inside a tokio runtime.
    pub async fn new<H: ClientHandler>(
        handler: Arc<H>,
        limits: ClientLimits,
        server_id: String,
        client_name: String,
        client_assigns: Option<Assigns>,
    ) -> Result<HandlerRuntime, HandlerStartError> {
        HandlerRuntime::start(handler, limits, server_id, client_name, client_assigns).await
    }

    /// [`HandlerRuntime::new`] for a handler already erased (the client's options hold it so).
    pub(crate) async fn start(
        handler: Arc<dyn DynClientHandler>,
        limits: ClientLimits,
        server_id: String,
        client_name: String,
        client_assigns: Option<Assigns>,
    ) -> Result<HandlerRuntime, HandlerStartError> {
        let spec =
            TaskSupervisorSpec::new(format!("client-requests:{server_id}")).max_concurrency(limits.max_server_requests);
        let tasks = TaskSupervisor::start(spec).await.map_err(HandlerStartError::Supervisor)?;
        let declared = handler.declared();
        let hosted = match &limits.tasks {
            Some(config) if hosted::capability(&declared).is_some() => {
                Some(Arc::new(Store::start(config.clone(), &server_id).await?))
            }
            _ => None,
        };
        let now = tokio::time::Instant::now();
        let shared = Arc::new(Shared {
            declared,
            handler,
            client: client_name.into(),
            server_id: server_id.into(),
            client_assigns,
            origin: RwLock::new(None),
            era: RwLock::new(None),
            in_flight: RwLock::new(None),
            input_bucket: Mutex::new(TokenBucket::new(limits.input_rate, now)),
            log_bucket: Mutex::new(TokenBucket::new(limits.log_rate, now)),
            dropped_notifications: AtomicU64::new(0),
            dropped_logs: AtomicU64::new(0),
            limits,
        });
        let (queue, worker) = notifications::start(shared.clone());
        Ok(HandlerRuntime {
            inner: Arc::new(Inner {
                shared,
                tasks,
                running: Running::default(),
                next_seq: AtomicU64::new(0),
                queue,
                hosted,
                worker: Mutex::new(Some(worker)),
            }),
        })
    }

    /// The capabilities to advertise: exactly what the handler declared (see
    /// [`ClientHandler`]); `{}` when it declared nothing.
    pub fn capabilities(&self) -> ClientCapabilities {
        let shared = &self.inner.shared;
        let declared = &shared.declared;
        let present = |on: bool| on.then(Map::new);
        let mut caps = ClientCapabilities::default();
        caps.sampling = declared.sampling.then(|| {
            let mut sampling = SamplingCapability::default();
            sampling.context = present(shared.limits.sampling.allow_context);
            sampling.tools = present(declared.sampling_tools);
            sampling
        });
        caps.elicitation = declared.elicitation.as_ref().filter(|m| !m.is_empty()).map(|modes| {
            let mut elicitation = ElicitationCapability::default();
            elicitation.form = present(modes.contains(&ElicitationMode::Form));
            elicitation.url = present(modes.contains(&ElicitationMode::Url));
            elicitation
        });
        caps.roots = declared.roots.then(|| {
            let mut roots = RootsCapability::default();
            roots.list_changed = declared.roots_list_changed.then_some(true);
            roots
        });
        caps.tasks = self.inner.hosted.as_ref().and_then(|_| hosted::capability(declared));
        caps
    }

    /// The server's origin as the transport reports it (HTTP), for URL-mode origin checks;
    /// overrides `ClientLimits::elicitation.origin`.
    pub fn set_server_origin(&self, origin: Option<String>) {
        *self.inner.shared.origin.write() = origin;
    }

    /// The connection's era, once settled (notification contexts carry it).
    pub fn set_era(&self, era: Era) {
        *self.inner.shared.era.write() = Some(era);
    }

    /// How many client calls are in flight, for the idle-sampling check. Without a probe,
    /// a legacy sampling request is idle when it is tied to no call.
    pub fn set_in_flight_probe(&self, probe: Arc<dyn Fn() -> usize + Send + Sync>) {
        *self.inner.shared.in_flight.write() = Some(probe as InFlightProbe);
    }

    /// Notifications dropped because the queue was full.
    pub fn dropped_notifications(&self) -> u64 {
        self.inner.shared.dropped_notifications.load(Ordering::Relaxed)
    }

    /// Server log entries dropped by the log rate limit.
    pub fn dropped_logs(&self) -> u64 {
        self.inner.shared.dropped_logs.load(Ordering::Relaxed)
    }

    /// Legacy server requests running now.
    pub fn requests_in_flight(&self) -> usize {
        self.inner.tasks.in_flight()
    }

    /// Stops every request task (unanswered) and the notification worker (queued
    /// notifications are dropped); returns once none runs. Later requests are refused.
    pub async fn shutdown(&self) {
        self.inner.tasks.shutdown().await;
        if let Some(hosted) = &self.inner.hosted {
            hosted.shutdown().await;
        }
        let worker = self.inner.worker.lock().take();
        if let Some(worker) = worker {
            worker.abort();
            let _ = worker.await;
        }
    }
}

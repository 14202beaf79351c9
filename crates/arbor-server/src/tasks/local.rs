//! The node-local side of tasks: [`Tasks`], one per server, and the [`Entry`] of each run
//! going on this node.
//!
//! [`Tasks`] creates records in the server's [`TaskStore`] and starts their runs on the
//! `tasks` task supervisor (a root child, see `tree.rs`). An [`Entry`] holds what cannot
//! live in a store: the run's handle, the wakeup and the answers on their way to the
//! handler (extension input), and the session to tell of status changes (2025-11-25
//! `notifications/tasks/status`). Every status change goes through the store first; the
//! entry then publishes the record on the bus (`notify.rs`) and tells its session. An
//! entry leaves the table when its run ends. What this is not: the record (`store.rs`),
//! or the wire (`run.rs`, `core.rs`).
//!
//! Invariant: the table holds only runs still going, so it is bounded by
//! [`TaskConfig::max_running`]; a run is stopped before its record expires (one polling
//! interval, at most a tenth of the TTL, before), so its failure can still be read.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arbor_bus::{Bus, BusMessage};
use arbor_otp::{SpawnError, TaskOptions, TaskOutcome, TaskRef, TaskSupervisor};
use arbor_protocol::error::McpError;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::mrtr::{InputRequests, InputResponse, InputResponses};
use arbor_protocol::model::tasks::{Task, TaskStatus};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::core::legacy;
use super::notify::topic;
use super::store::{TaskChange, TaskOwner, TaskRecord, TaskStore};
use super::TaskConfig;
use crate::error::{tasks_overloaded, TaskBound};
use crate::input::needs::Kind;
use crate::observe::{ViewKind, ViewNode};
use crate::request::sink::TaskStatusSink;
use crate::tenant::TenantRegistry;

/// The runs of this node, and the store their records live in.
pub(crate) struct Tasks {
    pub(crate) config: TaskConfig,
    /// Whether the server advertises the extension: if not, no call becomes a task and no
    /// listen is told about one, whatever a handler's policy says.
    pub(crate) offered: bool,
    pub(crate) store: Arc<dyn TaskStore>,
    /// Where each change of a record is published, for `notifications/tasks`.
    bus: Arc<dyn Bus>,
    supervisor: Mutex<Option<TaskSupervisor>>,
    local: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
    /// The tenants' limits: each tenant's share of the runs, and its restart budget.
    tenants: Arc<TenantRegistry>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("config", &self.config).field("running", &self.local.lock().len()).finish()
    }
}

impl Tasks {
    pub(crate) fn new(
        config: TaskConfig,
        store: Arc<dyn TaskStore>,
        bus: Arc<dyn Bus>,
        offered: bool,
        tenants: Arc<TenantRegistry>,
    ) -> Tasks {
        Tasks { config, offered, store, bus, supervisor: Mutex::new(None), local: Arc::default(), tenants }
    }

    /// Gives the runs their supervisor (done when the tree starts).
    pub(crate) fn attach(&self, supervisor: TaskSupervisor) {
        *self.supervisor.lock() = Some(supervisor);
    }

    /// Creates a record for `owner`, kept for `ttl` (the caller has clamped it), and the
    /// entry its run will report to. `watcher`: the 2025-11-25 session to tell of changes.
    pub(crate) async fn create(
        &self,
        owner: TaskOwner,
        ttl: Duration,
        watcher: Option<TaskStatusSink>,
    ) -> Result<Arc<Entry>, McpError> {
        let id = crate::ids::random_id().map_err(|e| McpError::internal(format!("Internal error: {e}")))?;
        let record = TaskRecord::new(id.clone(), owner, ttl, self.config.poll_interval);
        self.store.create(record.clone()).await?;
        let margin = self.config.poll_interval.min(ttl / 10);
        Ok(Arc::new(Entry {
            id,
            store: self.store.clone(),
            bus: self.bus.clone(),
            deadline: Instant::now() + ttl.saturating_sub(margin),
            last: Mutex::new(record),
            input: Mutex::new(Input::default()),
            answered: Notify::new(),
            run: OnceLock::new(),
            watcher,
        }))
    }

    /// Starts `entry`'s run on the task supervisor, with its deadline. Refused (the
    /// record removed) when the supervisor is full or stopping.
    pub(crate) async fn spawn(&self, entry: &Arc<Entry>, work: BoxFuture<'static, ()>) -> Result<(), McpError> {
        let supervisor = self.supervisor.lock().clone();
        // The tenant's share of the runs (`TenantQuota::max_tasks`), held by the report.
        let tenant = self.tenants.get(&entry.last.lock().owner.tenant);
        let tenant_slot = tenant.as_ref().map(|t| (t.clone(), t.task_slot()));
        let refused = match (supervisor, tenant_slot) {
            (_, Err(refusal)) => McpError::from(refusal),
            (_, Ok((_, Err(max)))) => tasks_overloaded(TaskBound::TenantRunning, max, self.config.poll_interval),
            (None, _) => McpError::internal("Internal error: the task supervisor is not running"),
            (Some(supervisor), Ok((tenant, Ok(slot)))) => {
                let deadline = entry.deadline.saturating_duration_since(Instant::now());
                let report = {
                    let (entry, local) = (entry.clone(), self.local.clone());
                    move |outcome: TaskOutcome<(), std::convert::Infallible>| {
                        drop(slot);
                        if matches!(outcome, TaskOutcome::Panicked(_)) {
                            // A task's handler crashing is charged like a request's.
                            tenant.crashed();
                        }
                        local.lock().remove(&entry.id);
                        entry.settle(outcome);
                    }
                };
                let live = crate::metrics::task();
                let work = async move {
                    let _live = live;
                    work.await;
                    Ok(())
                };
                // In the table before the run can report, so its report removes it.
                self.local.lock().insert(entry.id.clone(), entry.clone());
                match supervisor.spawn_reporting(TaskOptions::deadline(deadline), work, report) {
                    Ok(task) => {
                        let _ = entry.run.set(task);
                        return Ok(());
                    }
                    Err(refused) => {
                        self.local.lock().remove(&entry.id);
                        match refused {
                            SpawnError::Overloaded { max } => {
                                tasks_overloaded(TaskBound::Running, max, self.config.poll_interval)
                            }
                            SpawnError::ShuttingDown => McpError::internal("Internal error: the server is stopping"),
                        }
                    }
                }
            }
        };
        if let Err(error) = self.store.remove(&entry.id).await {
            tracing::warn!(task = %entry.id, %error, "the task store kept a task refused before it ran");
        }
        Err(refused)
    }

    /// The record `id`, if `owner` may see it.
    pub(crate) async fn find(&self, owner: &TaskOwner, id: &str) -> Result<TaskRecord, McpError> {
        Ok(self.store.get(owner, id).await?)
    }

    /// This node's entry of the run of `id`, if it runs here.
    pub(crate) fn local(&self, id: &str) -> Option<Arc<Entry>> {
        self.local.lock().get(id).cloned()
    }

    /// `tasks/cancel` of `owner`'s task `id`: `Ok(Some)` the cancelled record (and the run
    /// stopped: here, or on its node when the store forwards the cancel there), `Ok(None)` with the record when it was already terminal.
    pub(crate) async fn cancel(&self, owner: &TaskOwner, id: &str) -> Result<Result<TaskRecord, TaskRecord>, McpError> {
        let record = self.find(owner, id).await?;
        let changed = match self.local(id) {
            Some(entry) => entry.apply(super::forward::cancelled()).await.inspect(|_| entry.stop_run()),
            // Run elsewhere: its node stops it (`forward.rs`).
            None => self.cancel_elsewhere(owner, &record).await?,
        };
        Ok(changed.ok_or(record))
    }

    /// Publishes a change this node made to a record whose run is not here.
    pub(crate) fn published(&self, record: &TaskRecord) {
        publish(&*self.bus, &record.id, &record.to_task());
    }

    /// The runs going on this node as tree-view nodes, newest last, at most
    /// [`MAX_OBSERVED`]: a task's id shortened (the full id lets its owner poll it), its
    /// status as this node last wrote it, age and tenant.
    pub(crate) fn observe(&self) -> Vec<ViewNode> {
        let now = std::time::SystemTime::now();
        let entries: Vec<Arc<Entry>> = self.local.lock().values().cloned().collect();
        let mut nodes: Vec<(u64, ViewNode)> = entries
            .iter()
            .map(|e| {
                let record = e.last.lock().clone();
                let age = now.duration_since(record.created_at).unwrap_or_default().as_millis() as u64;
                let state = serde_json::to_value(record.status).ok().and_then(|v| v.as_str().map(str::to_owned));
                let mut node = ViewNode::new(
                    format!("task {}", &e.id[..e.id.len().min(8)]),
                    ViewKind::Task,
                    state.unwrap_or_else(|| "unknown".into()),
                );
                node.age_ms = Some(age);
                node.detail = Some(format!("tenant {}", record.owner.tenant));
                (age, node)
            })
            .collect();
        // The newest `MAX_OBSERVED`, oldest first.
        nodes.sort_by_key(|(age, _)| *age);
        nodes.truncate(MAX_OBSERVED);
        nodes.into_iter().rev().map(|(_, node)| node).collect()
    }
}

/// The most tasks a tree view lists (the newest).
pub(crate) const MAX_OBSERVED: usize = 100;

/// Publishes task `id`, as `task` shows it, for the listens that named it. Never waits;
/// a topic nobody joined costs nothing.
fn publish(bus: &dyn Bus, id: &str, task: &Task) {
    if let Ok(payload) = serde_json::to_value(task) {
        let _ = bus.publish(BusMessage::new(topic(id), payload).with_key(id));
    }
}

/// Extension input of the round in progress.
#[derive(Default)]
struct Input {
    round: u32,
    /// Each request of the round, by the key the client sees: the handler's key, and
    /// what it asked (to check an answer's kind).
    asked: HashMap<String, (String, Kind)>,
    /// Answers gathered this round, by the handler's key.
    answers: InputResponses,
}

/// One run going on this node.
pub(crate) struct Entry {
    pub(crate) id: String,
    store: Arc<dyn TaskStore>,
    bus: Arc<dyn Bus>,
    /// When the run is stopped: shortly before the record expires.
    deadline: Instant,
    /// The record as this node last wrote it (the `CreateTaskResult`, the tree view).
    last: Mutex<TaskRecord>,
    input: Mutex<Input>,
    /// Woken (with a stored permit) when the last outstanding input request is answered.
    answered: Notify,
    run: OnceLock<TaskRef>,
    /// The 2025-11-25 session that created the task, told of each change.
    watcher: Option<TaskStatusSink>,
}

impl Entry {
    /// Who created the task.
    pub(crate) fn owner(&self) -> TaskOwner {
        self.last.lock().owner.clone()
    }

    /// When the run is stopped if still going.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The task as this node last wrote it.
    pub(crate) fn view(&self) -> Task {
        self.last.lock().to_task()
    }

    /// Applies `change` through the store; on success, remembers, publishes and tells
    /// the session. `None` when it did not apply (or the store failed: logged).
    pub(crate) async fn apply(&self, change: TaskChange) -> Option<TaskRecord> {
        match self.store.change(&self.id, change).await {
            Ok(Some(record)) => {
                *self.last.lock() = record.clone();
                // One view of the record for the bus and the session.
                let task = record.to_task();
                publish(&*self.bus, &record.id, &task);
                if let Some(watcher) = &self.watcher {
                    watcher.send(legacy(task));
                }
                Some(record)
            }
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(task = %self.id, %error, "the task store refused a status change");
                None
            }
        }
    }

    /// The tool answered: `completed` with its result.
    pub(crate) async fn complete(&self, result: JsonObject) {
        self.apply(TaskChange::Completed(result)).await;
    }

    /// A 2025-11-25 tool answered `isError: true`: `failed`, and `tasks/result` still
    /// returns the result.
    pub(crate) async fn fail_with_result(&self, result: JsonObject) {
        let message = Some("The tool reported an error".to_owned());
        self.apply(TaskChange::Failed { error: None, result: Some(result), message }).await;
    }

    /// A protocol error: `failed` with the JSON-RPC error.
    pub(crate) async fn fail(&self, error: &McpError) {
        self.apply(TaskChange::Failed { error: Some(error.to_error_object()), result: None, message: None }).await;
    }

    /// 2025-11-25 input (`legacy_input.rs`): `input_required` while the run waits for a
    /// server→client request tied to the task. False if the task already ended.
    pub(crate) async fn set_input_required(&self, message: Option<String>) -> bool {
        self.apply(TaskChange::InputRequired { requests: None, message }).await.is_some()
    }

    /// 2025-11-25 input answered: `working` again. False if the task was not waiting.
    pub(crate) async fn resume(&self) -> bool {
        self.apply(TaskChange::Resume).await.is_some()
    }

    pub(crate) fn stop_run(&self) {
        if let Some(run) = self.run.get() {
            let _ = run.cancel();
        }
    }

    /// The run's outcome, once it has ended: anything the run did not record itself,
    /// recorded on a task of its own (the report cannot wait on the store).
    fn settle(self: Arc<Self>, outcome: TaskOutcome<(), std::convert::Infallible>) {
        let error = |message: String| TaskChange::Failed {
            error: Some(McpError::internal(message).to_error_object()),
            result: None,
            message: None,
        };
        let change = match outcome {
            TaskOutcome::Completed(()) => return,
            TaskOutcome::Failed(never) => match never {},
            TaskOutcome::Cancelled => TaskChange::Cancelled(Some("Cancelled".into())),
            TaskOutcome::Panicked(message) => {
                tracing::error!(task = %self.id, %message, "task handler panicked");
                error("Internal error: the tool panicked".into())
            }
            TaskOutcome::TimedOut => {
                let ttl = self.last.lock().ttl.as_millis();
                error(format!("Internal error: the tool did not finish within the task's TTL of {ttl} ms"))
            }
            TaskOutcome::Shutdown => error("Internal error: the server stopped".into()),
        };
        tokio::spawn(async move {
            self.apply(change).await;
        });
    }

    /// Parks the task in `input_required` with the handler's `requests`. Keys the client
    /// sees are unique for the task's lifetime: the first round's are the handler's own,
    /// later rounds' carry a `#round` suffix. Returns false if the task already ended.
    pub(crate) async fn ask(&self, requests: InputRequests) -> bool {
        let wire: InputRequests = {
            let mut input = self.input.lock();
            input.round += 1;
            let round = input.round;
            input.asked.clear();
            input.answers.clear();
            let mut wire = InputRequests::new();
            for (key, request) in requests {
                let shown = if round == 1 { key.clone() } else { format!("{key}#{round}") };
                input.asked.insert(shown.clone(), (key, Kind::of_request(&request)));
                wire.insert(shown, request);
            }
            wire
        };
        self.apply(TaskChange::InputRequired { requests: Some(wire), message: None }).await.is_some()
    }

    /// `tasks/update`: records answers to outstanding requests (unknown and already
    /// answered keys are ignored, as the spec asks); once none is outstanding, the run
    /// resumes. An answer of the wrong kind for an outstanding key refuses the whole
    /// update with -32602 and records nothing.
    pub(crate) async fn update(&self, record: &TaskRecord, responses: JsonObject) -> Result<(), McpError> {
        let outstanding = match (&record.input_requests, record.status) {
            (Some(requests), TaskStatus::InputRequired) => requests,
            _ => return Ok(()),
        };
        let mut accepted = Vec::new();
        {
            let input = self.input.lock();
            for (key, raw) in responses {
                let Some((handler_key, asked)) = input.asked.get(&key) else { continue };
                if !outstanding.contains_key(&key) {
                    continue;
                }
                let response: InputResponse = serde_json::from_value(raw).map_err(|e| {
                    // serde's message quotes the offending value: reflected, so clamped.
                    let e = arbor_protocol::reflect::Clamped(&e.to_string()).to_string();
                    McpError::invalid_params(format!("inputResponses[{key}] is not a valid answer: {e}"))
                })?;
                let given = Kind::of_response(&response);
                if *asked != given {
                    return Err(McpError::invalid_params(format!(
                        "inputResponses[{key}] answers {}, but {} was asked",
                        given.method(),
                        asked.method()
                    )));
                }
                accepted.push((key, handler_key.clone(), response));
            }
        }
        if accepted.is_empty() {
            return Ok(());
        }
        let keys = accepted.iter().map(|(key, _, _)| key.clone()).collect();
        {
            let mut input = self.input.lock();
            for (_, handler_key, response) in accepted {
                input.answers.insert(handler_key, response);
            }
        }
        if let Some(record) = self.apply(TaskChange::Answered(keys)).await {
            if record.status == TaskStatus::Working {
                self.answered.notify_one();
            }
        }
        Ok(())
    }

    /// Waits until every request of the round is answered, and takes the answers.
    pub(crate) async fn answers(&self) -> InputResponses {
        loop {
            if self.last.lock().status == TaskStatus::Working {
                return std::mem::take(&mut self.input.lock().answers);
            }
            self.answered.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arbor_bus::LocalBus;
    use arbor_protocol::model::tasks::TaskStatus;

    use super::Tasks;
    use crate::requester::Requester;
    use crate::tasks::{MemoryTaskStore, TaskConfig, TaskOwner, TaskStore};

    #[tokio::test(start_paused = true)]
    async fn a_legacy_task_waits_for_input_and_resumes_through_the_store() {
        let config = TaskConfig::default();
        let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new(&config));
        let registry = crate::tenant::TenantRegistry::new(Default::default(), crate::tenant::TenantBounds::for_tests());
        let tasks = Tasks::new(config, store.clone(), Arc::new(LocalBus::new()), true, Arc::new(registry));
        let owner = TaskOwner { tenant: "t".into(), requester: Requester::Unknown };
        let entry = tasks.create(owner.clone(), std::time::Duration::from_secs(60), None).await.unwrap();
        let status = || async { store.get(&owner, &entry.id).await.unwrap().status };

        assert!(!entry.resume().await, "not waiting: nothing to resume");
        assert!(entry.set_input_required(Some("waiting for the user".into())).await);
        assert_eq!(status().await, TaskStatus::InputRequired);
        let shown = store.get(&owner, &entry.id).await.unwrap().to_task();
        assert_eq!(shown.input_requests, None, "2025-11-25: no inputRequests map");
        assert_eq!(shown.status_message.as_deref(), Some("waiting for the user"));
        assert!(entry.resume().await);
        assert_eq!(status().await, TaskStatus::Working);
        entry.complete(Default::default()).await;
        assert!(!entry.set_input_required(None).await, "a terminal task asks for nothing");
        assert_eq!(status().await, TaskStatus::Completed);
    }
}

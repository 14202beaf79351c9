//! The task store: one per server, holding every task's record and a handle on its run.
//!
//! A record is created before its `CreateTaskResult` is written (durable create), found
//! only by requests of the [`Owner`] that created it (its tenant and requester), and
//! dropped once its TTL has passed: lazily, when it is looked up, and in sweeps when the
//! store grows (each time it doubles) or reaches a bound ([`TaskConfig::max_tasks`] in
//! all, [`TaskConfig::max_tasks_per_owner`] for one owner, so one requester cannot fill
//! the store for everyone); a sweep also gives back the table a burst of records left
//! (`retain` keeps the capacity). Nothing sweeps on a timer: on a store that no request
//! touches, expired records stay in memory until the next creation or lookup. Runs are
//! tasks on the `tasks` task supervisor (a root child, see `tree.rs`), whose deadline is
//! the TTL, so no run outlives its record. This module does not call handlers; `run.rs`
//! does.
//!
//! Invariant: a record's status moves only forward: `working` ⇄ `input_required`, then
//! exactly one terminal status (`completed`, `failed`, `cancelled`), never changed after.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use arbor_bus::{Bus, BusMessage};
use arbor_otp::{SpawnError, TaskOptions, TaskOutcome, TaskRef, TaskSupervisor};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::mrtr::{InputRequest, InputRequests, InputResponse, InputResponses};
use arbor_protocol::model::tasks::{Task, TaskStatus};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::notify::topic;
use super::wire::iso8601;
use super::TaskConfig;
use crate::context::ConnectionInfo;
use crate::error::{tasks_overloaded, TaskBound};
use crate::input::needs::Kind;
use crate::observe::{ViewKind, ViewNode};
use crate::requester::Requester;

/// Who may see a task, and whose cap it counts against: the tenant and the requester of
/// the request that created it ([`Requester`]: the authenticated principal, else the
/// peer's address, else the one unknown requester). In 2026-07-28 a connection is not a
/// session, so the connection is not part of it: a client may poll from any connection.
/// Without authentication, two clients behind one address are one requester, which is
/// why task ids stay unguessable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Owner {
    pub(crate) tenant: String,
    pub(crate) requester: Requester,
}

impl Owner {
    /// The owner of what a request of `connection` creates or may see.
    pub(crate) fn of(connection: &ConnectionInfo) -> Owner {
        Owner { tenant: connection.tenant.clone(), requester: connection.requester.clone() }
    }
}

/// The server's tasks.
pub(crate) struct TaskStore {
    pub(crate) config: TaskConfig,
    /// Whether the server advertises the extension: if not, no call becomes a task and no
    /// listen is told about one, whatever a handler's policy says.
    pub(crate) offered: bool,
    /// Where each change of a record is published, for `notifications/tasks`.
    bus: Arc<dyn Bus>,
    supervisor: Mutex<Option<TaskSupervisor>>,
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore").field("config", &self.config).field("len", &self.len()).finish_non_exhaustive()
    }
}

struct Entries {
    map: HashMap<String, Arc<Entry>>,
    /// Live records per owner, so that one requester cannot fill the store for all.
    per_owner: HashMap<Owner, usize>,
    /// Sweep expired records when the map reaches this size.
    sweep_at: usize,
    /// The creation number of the next record: `tasks/list` pages in this order.
    next_seq: u64,
}

impl Entries {
    fn insert(&mut self, entry: Arc<Entry>) {
        *self.per_owner.entry(entry.owner.clone()).or_default() += 1;
        self.map.insert(entry.id.clone(), entry);
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Entry>> {
        let entry = self.map.remove(id)?;
        release(&mut self.per_owner, &entry.owner);
        Some(entry)
    }

    /// Drops every record expired at `now`, stopping any run still going.
    fn sweep(&mut self, now: Instant) {
        let Entries { map, per_owner, .. } = self;
        map.retain(|_, e| {
            let keep = e.expires_at > now;
            if !keep {
                e.stop_run();
                release(per_owner, &e.owner);
            }
            keep
        });
        // A map emptied by expiry gives its table back (`retain` keeps the capacity): the
        // memory of a burst of tasks returns once they have expired and been swept.
        if self.map.capacity() > 4 * self.map.len().max(64) {
            self.map.shrink_to_fit();
        }
        self.sweep_at = (self.map.len() * 2).max(64);
    }

    fn owned_by(&self, owner: &Owner) -> usize {
        self.per_owner.get(owner).copied().unwrap_or(0)
    }

    /// How long until the first record (of `owner`, or of anyone) expires and makes room:
    /// the retry hint of a refusal. A scan, made only when a task is refused, right after
    /// the sweep that already visited every record.
    fn first_expiry(&self, owner: Option<&Owner>, now: Instant) -> std::time::Duration {
        let records = self.map.values().filter(|e| owner.is_none_or(|o| &e.owner == o));
        records.map(|e| e.expires_at).min().map_or(std::time::Duration::ZERO, |at| at.saturating_duration_since(now))
    }
}

fn release(per_owner: &mut HashMap<Owner, usize>, owner: &Owner) {
    if let Some(n) = per_owner.get_mut(owner) {
        *n -= 1;
        if *n == 0 {
            per_owner.remove(owner);
        }
    }
}

/// The error for an id that is unknown, expired, or someone else's: the same for all
/// three, so a client learns nothing about tasks it may not see.
fn not_found(detail: &str) -> McpError {
    McpError::invalid_params(format!("Failed to retrieve task: {detail}"))
}

impl TaskStore {
    pub(crate) fn new(config: TaskConfig, bus: Arc<dyn Bus>, offered: bool) -> TaskStore {
        TaskStore {
            config,
            offered,
            bus,
            supervisor: Mutex::new(None),
            entries: Mutex::new(Entries { map: HashMap::new(), per_owner: HashMap::new(), sweep_at: 64, next_seq: 0 }),
        }
    }

    /// Gives the store the task supervisor its runs go under (done when the tree starts).
    pub(crate) fn attach(&self, supervisor: TaskSupervisor) {
        *self.supervisor.lock() = Some(supervisor);
    }

    /// How many records are held (running or finished, expired ones not yet swept).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map.len()
    }

    /// Creates a record for `owner`, `working`, visible to `find` from now on, kept for
    /// `ttl` (the caller has clamped it to the configured bound).
    pub(crate) fn create(&self, owner: Owner, ttl: std::time::Duration) -> Result<Arc<Entry>, McpError> {
        let now = Instant::now();
        let mut entries = self.entries.lock();
        let (max, per_owner) = (self.config.max_tasks, self.config.max_tasks_per_owner);
        let full = |e: &Entries| e.map.len() >= max || e.owned_by(&owner) >= per_owner;
        if entries.map.len() >= entries.sweep_at.min(max) || full(&entries) {
            entries.sweep(now);
        }
        if entries.map.len() >= max {
            return Err(tasks_overloaded(TaskBound::Held, max, entries.first_expiry(None, now)));
        }
        if entries.owned_by(&owner) >= per_owner {
            let retry = entries.first_expiry(Some(&owner), now);
            return Err(tasks_overloaded(TaskBound::PerRequester, per_owner, retry));
        }
        let id = new_task_id()?;
        let created = SystemTime::now();
        let seq = entries.next_seq;
        entries.next_seq += 1;
        let entry = Arc::new(Entry {
            id: id.clone(),
            owner,
            bus: self.bus.clone(),
            seq,
            created_at: created,
            expires_at: now + ttl,
            ttl_ms: ttl.as_millis() as i64,
            poll_ms: self.config.poll_interval.as_millis().max(1) as i64,
            state: Mutex::new(State {
                status: TaskStatus::Working,
                message: None,
                updated_at: created,
                result: None,
                error: None,
                pending: BTreeMap::new(),
                answers: InputResponses::new(),
                round: 0,
            }),
            answered: Notify::new(),
            settled: Notify::new(),
            run: OnceLock::new(),
        });
        entries.insert(entry.clone());
        Ok(entry)
    }

    /// Starts `entry`'s run on the task supervisor, with the TTL as its deadline.
    /// Refused (and the record dropped) when the supervisor is full or stopping.
    pub(crate) fn spawn(&self, entry: &Arc<Entry>, work: BoxFuture<'static, ()>) -> Result<(), McpError> {
        let supervisor = self.supervisor.lock().clone();
        let Some(supervisor) = supervisor else {
            self.remove(&entry.id);
            return Err(McpError::internal("Internal error: the task supervisor is not running"));
        };
        let deadline = entry.expires_at.saturating_duration_since(Instant::now());
        let report = {
            let entry = entry.clone();
            move |outcome: TaskOutcome<(), std::convert::Infallible>| entry.settle(outcome)
        };
        let live = crate::metrics::task();
        let work = async move {
            let _live = live;
            work.await;
            Ok(())
        };
        match supervisor.spawn_reporting(TaskOptions::deadline(deadline), work, report) {
            Ok(task) => {
                let _ = entry.run.set(task);
                Ok(())
            }
            Err(refused) => {
                self.remove(&entry.id);
                Err(match refused {
                    SpawnError::Overloaded { max } => {
                        tasks_overloaded(TaskBound::Running, max, self.config.poll_interval)
                    }
                    SpawnError::ShuttingDown => McpError::internal("Internal error: the server is stopping"),
                })
            }
        }
    }

    /// The record `id`, if `owner` may see it and it has not expired.
    pub(crate) fn find(&self, owner: &Owner, id: &str) -> Result<Arc<Entry>, McpError> {
        let mut entries = self.entries.lock();
        let entry =
            entries.map.get(id).filter(|e| &e.owner == owner).cloned().ok_or_else(|| not_found("Task not found"))?;
        if entry.expires_at <= Instant::now() {
            entries.remove(id);
            entry.stop_run();
            return Err(not_found("Task has expired"));
        }
        Ok(entry)
    }

    fn remove(&self, id: &str) {
        self.entries.lock().remove(id);
    }

    /// `owner`'s records not yet expired, in creation order, from just after the record
    /// numbered `after`: at most `limit`, and the number to continue after if more remain.
    /// A scan of the store, bounded by [`TaskConfig::max_tasks`].
    pub(crate) fn list(&self, owner: &Owner, after: Option<u64>, limit: usize) -> (Vec<Arc<Entry>>, Option<u64>) {
        let now = Instant::now();
        let mut mine: Vec<Arc<Entry>> = self
            .entries
            .lock()
            .map
            .values()
            .filter(|e| &e.owner == owner && e.expires_at > now && after.is_none_or(|a| e.seq > a))
            .cloned()
            .collect();
        mine.sort_by_key(|e| e.seq);
        let more = mine.len() > limit;
        mine.truncate(limit);
        let next = if more { mine.last().map(|e| e.seq) } else { None };
        (mine, next)
    }

    /// The records not yet expired as tree-view nodes, newest last, at most
    /// [`MAX_OBSERVED`]: a task's id shortened (the full id lets its owner poll it), its
    /// status, age and tenant.
    pub(crate) fn observe(&self) -> Vec<ViewNode> {
        let now = Instant::now();
        let entries: Vec<Arc<Entry>> =
            self.entries.lock().map.values().filter(|e| e.expires_at > now).cloned().collect();
        let mut nodes: Vec<(u64, ViewNode)> = entries
            .iter()
            .map(|e| {
                let left = e.expires_at.saturating_duration_since(now).as_millis() as u64;
                let age = (e.ttl_ms.max(0) as u64).saturating_sub(left);
                let status = e.state.lock().status;
                let state = serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_owned));
                let mut node = ViewNode::new(
                    format!("task {}", &e.id[..e.id.len().min(8)]),
                    ViewKind::Task,
                    state.unwrap_or_else(|| "unknown".into()),
                );
                node.age_ms = Some(age);
                node.detail = Some(format!("tenant {}", e.owner.tenant));
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

/// 128 random bits, hex (`crate::ids`): unguessable, as the spec requires of task ids.
/// Without randomness the task is refused with -32603 rather than given a guessable id.
fn new_task_id() -> Result<String, McpError> {
    crate::ids::random_id().map_err(|e| McpError::internal(format!("Internal error: {e}")))
}

/// One task's record.
pub(crate) struct Entry {
    pub(crate) id: String,
    owner: Owner,
    bus: Arc<dyn Bus>,
    /// Creation number, for `tasks/list` order and cursors.
    pub(crate) seq: u64,
    created_at: SystemTime,
    expires_at: Instant,
    ttl_ms: i64,
    poll_ms: i64,
    state: Mutex<State>,
    /// Woken (with a stored permit) when the last outstanding input request is answered.
    answered: Notify,
    /// Woken (every waiter) when the task reaches its terminal status: `tasks/result`.
    settled: Notify,
    run: OnceLock<TaskRef>,
}

struct State {
    status: TaskStatus,
    message: Option<String>,
    updated_at: SystemTime,
    result: Option<JsonObject>,
    error: Option<ErrorObject>,
    /// Outstanding input requests by the key the client sees, with the handler's key.
    pending: BTreeMap<String, (String, InputRequest)>,
    /// Answers gathered this round, by the handler's key.
    answers: InputResponses,
    round: u32,
}

fn terminal(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
}

impl Entry {
    /// When the task expires, and its run is stopped if still going.
    pub(crate) fn deadline(&self) -> Instant {
        self.expires_at
    }

    /// The task as `tasks/get` and `CreateTaskResult` show it.
    pub(crate) fn view(&self) -> Task {
        let state = self.state.lock();
        let input_requests = (state.status == TaskStatus::InputRequired)
            .then(|| state.pending.iter().map(|(k, (_, r))| (k.clone(), r.clone())).collect::<InputRequests>());
        let mut task = Task::new(self.id.clone(), state.status, iso8601(self.created_at), iso8601(state.updated_at))
            .with_ttl_ms(self.ttl_ms)
            .with_poll_interval_ms(self.poll_ms);
        task.status_message = state.message.clone();
        task.input_requests = input_requests;
        task.result = state.result.clone();
        task.error = state.error.clone();
        task
    }

    /// Moves to a terminal status with `apply`, unless already terminal.
    fn finish(&self, status: TaskStatus, apply: impl FnOnce(&mut State)) -> bool {
        {
            let mut state = self.state.lock();
            if terminal(state.status) {
                return false;
            }
            state.status = status;
            state.pending.clear();
            state.updated_at = SystemTime::now();
            apply(&mut state);
        }
        self.settled.notify_waiters();
        self.announce();
        true
    }

    /// The task's status now.
    pub(crate) fn status(&self) -> TaskStatus {
        self.state.lock().status
    }

    /// Waits until the task has its terminal status, and returns it with the result
    /// (completed) or the error (failed).
    pub(crate) async fn settled(&self) -> (TaskStatus, Option<JsonObject>, Option<ErrorObject>) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            // Registered before the status is read, so a finish in between still wakes us.
            notified.as_mut().enable();
            {
                let state = self.state.lock();
                if terminal(state.status) {
                    return (state.status, state.result.clone(), state.error.clone());
                }
            }
            notified.await;
        }
    }

    /// Publishes the task as it now is, for the listens that named it. Publishing never
    /// waits; a topic nobody joined costs nothing.
    fn announce(&self) {
        if let Ok(payload) = serde_json::to_value(self.view()) {
            let message = BusMessage::new(topic(&self.id), payload).with_key(self.id.as_str());
            let _ = self.bus.publish(message);
        }
    }

    /// The tool answered: `completed` with its result (a tool error included).
    pub(crate) fn complete(&self, result: JsonObject) {
        self.finish(TaskStatus::Completed, |s| s.result = Some(result));
    }

    /// A protocol error: `failed` with the JSON-RPC error.
    pub(crate) fn fail(&self, error: &McpError) {
        let object = error.to_error_object();
        self.finish(TaskStatus::Failed, |s| {
            s.message = Some(object.message.clone());
            s.error = Some(object);
        });
    }

    /// `tasks/cancel`: `cancelled` now (unless already terminal) and the run stopped.
    /// False when the task was already terminal (the cancel changed nothing).
    pub(crate) fn cancel(&self) -> bool {
        let cancelled = self.finish(TaskStatus::Cancelled, |s| s.message = Some("Cancelled by the client".into()));
        if cancelled {
            self.stop_run();
        }
        cancelled
    }

    fn stop_run(&self) {
        if let Some(run) = self.run.get() {
            let _ = run.cancel();
        }
    }

    /// The run's outcome, once it has ended: anything the run did not record itself.
    fn settle(&self, outcome: TaskOutcome<(), std::convert::Infallible>) {
        match outcome {
            TaskOutcome::Completed(()) => {}
            TaskOutcome::Failed(never) => match never {},
            TaskOutcome::Cancelled => {
                self.finish(TaskStatus::Cancelled, |s| s.message = Some("Cancelled".into()));
            }
            TaskOutcome::Panicked(message) => {
                tracing::error!(task = %self.id, %message, "task handler panicked");
                self.fail(&McpError::internal("Internal error: the tool panicked"));
            }
            TaskOutcome::TimedOut => self.fail(&McpError::internal("Internal error: the task outlived its ttlMs")),
            TaskOutcome::Shutdown => self.fail(&McpError::internal("Internal error: the server stopped")),
        }
    }

    /// Parks the task in `input_required` with the handler's `requests`. Keys the client
    /// sees are unique for the task's lifetime: the first round's are the handler's own,
    /// later rounds' carry a `#round` suffix. Returns false if the task already ended.
    pub(crate) fn ask(&self, requests: InputRequests) -> bool {
        let mut state = self.state.lock();
        if terminal(state.status) {
            return false;
        }
        state.round += 1;
        let round = state.round;
        state.pending = requests
            .into_iter()
            .map(|(key, request)| {
                let wire = if round == 1 { key.clone() } else { format!("{key}#{round}") };
                (wire, (key, request))
            })
            .collect();
        state.answers.clear();
        state.status = TaskStatus::InputRequired;
        state.updated_at = SystemTime::now();
        drop(state);
        self.announce();
        true
    }

    /// `tasks/update`: records answers to outstanding requests (unknown and already
    /// answered keys are ignored, as the spec asks); once none is outstanding, the run
    /// resumes. An answer of the wrong kind for an outstanding key refuses the whole
    /// update with -32602 and records nothing.
    pub(crate) fn update(&self, responses: JsonObject) -> Result<(), McpError> {
        let mut state = self.state.lock();
        if state.status != TaskStatus::InputRequired {
            return Ok(());
        }
        let mut accepted = Vec::new();
        for (key, raw) in responses {
            let Some((handler_key, request)) = state.pending.get(&key) else { continue };
            let response: InputResponse = serde_json::from_value(raw).map_err(|e| {
                // serde's message quotes the offending value: reflected, so clamped.
                let e = arbor_protocol::reflect::Clamped(&e.to_string()).to_string();
                McpError::invalid_params(format!("inputResponses[{key}] is not a valid answer: {e}"))
            })?;
            let (asked, given) = (Kind::of_request(request), Kind::of_response(&response));
            if asked != given {
                return Err(McpError::invalid_params(format!(
                    "inputResponses[{key}] answers {}, but {} was asked",
                    given.method(),
                    asked.method()
                )));
            }
            accepted.push((key, handler_key.clone(), response));
        }
        if accepted.is_empty() {
            return Ok(());
        }
        for (key, handler_key, response) in accepted {
            state.pending.remove(&key);
            state.answers.insert(handler_key, response);
        }
        state.updated_at = SystemTime::now();
        let resumed = state.pending.is_empty();
        if resumed {
            state.status = TaskStatus::Working;
        }
        drop(state);
        if resumed {
            self.answered.notify_one();
        }
        self.announce();
        Ok(())
    }

    /// Waits until every request of the round is answered, and takes the answers.
    pub(crate) async fn answers(&self) -> InputResponses {
        loop {
            {
                let mut state = self.state.lock();
                if state.status == TaskStatus::Working && state.pending.is_empty() {
                    return std::mem::take(&mut state.answers);
                }
            }
            self.answered.notified().await;
        }
    }
}

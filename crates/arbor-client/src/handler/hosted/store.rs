//! The client's own task store: the records of the sampling and elicitation requests a
//! 2025-11-25 server asked this client to run as tasks, and handles on their runs.
//!
//! A record is created before its `CreateTaskResult` is sent (so the server's first
//! `tasks/get` finds it), kept until its TTL has passed (then dropped: lazily when looked
//! up, and in a sweep when the store is full), and bounded in number
//! ([`HostedTasks::max_tasks`]). Runs go to a task supervisor of their own whose deadline
//! is the TTL, so no run outlives its record. Not here: decoding, checks and the handler
//! call (`dispatch.rs`), nor the wire of the `tasks/*` methods (`mod.rs`).
//!
//! Invariant: a record's status moves only forward: `working`, then exactly one terminal
//! status (`completed`, `failed`, `cancelled`), never changed after; every change is
//! announced (`notifications/tasks/status`) when announcing is on and a link is known.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use arbor_otp::{SpawnError, TaskOptions, TaskOutcome, TaskRef, TaskSupervisor, TaskSupervisorSpec};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::{Message, Notification};
use arbor_protocol::meta::relate_result;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::tasks::{Task, TaskStatus, TaskStatusNotificationParams};
use futures::future::BoxFuture;
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::HostedTasks;
use crate::handler::error::{Failure, HandlerStartError};
use arbor_protocol::model::timestamp::iso8601;

/// Where frames the client sends on its own (status notifications) go: set by the
/// connection, which owns the link.
pub(crate) type Outbound = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

/// Whether and where task changes are announced; shared by every record.
pub(crate) struct Announcer {
    on: bool,
    pub(crate) outbound: RwLock<Option<Outbound>>,
}

/// The hosted tasks of one runtime.
pub(crate) struct Store {
    pub(crate) config: HostedTasks,
    runs: TaskSupervisor,
    /// The blocking `tasks/result` requests waiting for a terminal status: apart from the
    /// runs so that waiting never takes a run's place, and apart from the runtime's
    /// request tasks so that waiting never makes the client busy for other requests.
    pub(crate) waiters: TaskSupervisor,
    entries: Mutex<Entries>,
    pub(crate) announcer: Arc<Announcer>,
}

struct Entries {
    map: HashMap<String, Arc<Entry>>,
    /// The creation number of the next record: `tasks/list` pages in this order.
    next_seq: u64,
}

/// The error for an id that is unknown or expired (the same for both: -32602).
fn not_found(detail: &str) -> McpError {
    McpError::invalid_params(format!("Failed to retrieve task: {detail}"))
}

/// The TTL a task gets for a requested `ttl` in milliseconds: absent or above `max` is
/// `max`, below [`HostedTasks::MIN_TTL`] (0, negative) is that.
pub(crate) fn clamp_ttl(requested: Option<i64>, max: Duration) -> Duration {
    let Some(ms) = requested else { return max };
    Duration::from_millis(ms.max(0) as u64).clamp(HostedTasks::MIN_TTL.min(max), max)
}

impl Store {
    pub(crate) async fn start(config: HostedTasks, server_id: &str) -> Result<Store, HandlerStartError> {
        let max = config.max_tasks.max(1);
        let runs =
            TaskSupervisor::start(TaskSupervisorSpec::new(format!("client-tasks:{server_id}")).max_concurrency(max))
                .await
                .map_err(HandlerStartError::Supervisor)?;
        // A server may wait on each task more than once; four waits per task is plenty.
        let spec = TaskSupervisorSpec::new(format!("client-task-results:{server_id}")).max_concurrency(max * 4);
        let waiters = TaskSupervisor::start(spec).await.map_err(HandlerStartError::Supervisor)?;
        let announcer = Arc::new(Announcer { on: config.notify_status, outbound: RwLock::new(None) });
        Ok(Store {
            config,
            runs,
            waiters,
            entries: Mutex::new(Entries { map: HashMap::new(), next_seq: 0 }),
            announcer,
        })
    }

    /// Creates a `working` record kept for `ttl` (clamped by the caller), or refuses with
    /// -32000 busy when [`HostedTasks::max_tasks`] records are held after a sweep.
    pub(crate) fn create(&self, ttl: Duration) -> Result<Arc<Entry>, McpError> {
        let now = Instant::now();
        let mut entries = self.entries.lock();
        let max = self.config.max_tasks;
        if entries.map.len() >= max {
            entries.map.retain(|_, e| {
                let keep = e.expires_at > now;
                if !keep {
                    e.stop_run();
                }
                keep
            });
        }
        if entries.map.len() >= max {
            return Err(McpError::Other {
                code: -32000,
                message: "Client busy: too many tasks".to_owned(),
                data: Some(json!({"reason": "busy", "limit": max})),
            });
        }
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| McpError::internal(format!("Internal error: no randomness: {e}")))?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let created = SystemTime::now();
        let seq = entries.next_seq;
        entries.next_seq += 1;
        let entry = Arc::new(Entry {
            id: id.clone(),
            seq,
            created_at: created,
            expires_at: now + ttl,
            ttl_ms: ttl.as_millis() as i64,
            poll_ms: self.config.poll_interval.as_millis().max(1) as i64,
            state: Mutex::new(State { status: TaskStatus::Working, message: None, updated_at: created, outcome: None }),
            settled: Notify::new(),
            run: OnceLock::new(),
            announcer: self.announcer.clone(),
        });
        entries.map.insert(id, entry.clone());
        Ok(entry)
    }

    /// Starts `entry`'s run with the TTL as its deadline; its outcome settles the record
    /// (`rejection_code` for policy refusals, as for a plain request). Refused (and the
    /// record dropped) when the runs' supervisor is full or stopping.
    pub(crate) fn spawn(
        &self,
        entry: &Arc<Entry>,
        work: BoxFuture<'static, Result<Value, Failure>>,
        rejection_code: i64,
    ) -> Result<(), McpError> {
        let deadline = entry.expires_at.saturating_duration_since(Instant::now());
        let report = {
            let entry = entry.clone();
            move |outcome: TaskOutcome<Value, Failure>| entry.settle(outcome, rejection_code)
        };
        match self.runs.spawn_reporting(TaskOptions::deadline(deadline), work, report) {
            Ok(run) => {
                let _ = entry.run.set(run);
                Ok(())
            }
            Err(refused) => {
                self.entries.lock().map.remove(&entry.id);
                Err(match refused {
                    SpawnError::Overloaded { max } => McpError::Other {
                        code: -32000,
                        message: "Client busy: too many tasks".to_owned(),
                        data: Some(json!({"reason": "busy", "limit": max})),
                    },
                    SpawnError::ShuttingDown => McpError::internal("Client is shutting down"),
                })
            }
        }
    }

    /// The record `id`, if it has not expired.
    pub(crate) fn find(&self, id: &str) -> Result<Arc<Entry>, McpError> {
        let mut entries = self.entries.lock();
        let entry = entries.map.get(id).cloned().ok_or_else(|| not_found("Task not found"))?;
        if entry.expires_at <= Instant::now() {
            entries.map.remove(id);
            entry.stop_run();
            return Err(not_found("Task has expired"));
        }
        Ok(entry)
    }

    /// Records not yet expired, in creation order, after the record numbered `after`: at
    /// most [`HostedTasks::page_size`], and the number to continue after if more remain.
    pub(crate) fn list(&self, after: Option<u64>) -> (Vec<Arc<Entry>>, Option<u64>) {
        let now = Instant::now();
        let limit = self.config.page_size.max(1);
        let mut live: Vec<Arc<Entry>> = self
            .entries
            .lock()
            .map
            .values()
            .filter(|e| e.expires_at > now && after.is_none_or(|a| e.seq > a))
            .cloned()
            .collect();
        live.sort_by_key(|e| e.seq);
        let more = live.len() > limit;
        live.truncate(limit);
        let next = if more { live.last().map(|e| e.seq) } else { None };
        (live, next)
    }

    /// Stops every run and every waiter; returns once none runs.
    pub(crate) async fn shutdown(&self) {
        self.runs.shutdown().await;
        self.waiters.shutdown().await;
    }

    /// The same without waiting (the runtime's last handle went away).
    pub(crate) fn stop(&self) {
        self.runs.cell().stop(Some("shutdown".to_owned()));
        self.waiters.cell().stop(Some("shutdown".to_owned()));
    }
}

/// One hosted task's record.
pub(crate) struct Entry {
    pub(crate) id: String,
    /// Creation number, for `tasks/list` order and cursors.
    pub(crate) seq: u64,
    created_at: SystemTime,
    expires_at: Instant,
    ttl_ms: i64,
    poll_ms: i64,
    state: Mutex<State>,
    /// Woken (every waiter) when the task reaches its terminal status: `tasks/result`.
    settled: Notify,
    run: OnceLock<TaskRef>,
    announcer: Arc<Announcer>,
}

struct State {
    status: TaskStatus,
    message: Option<String>,
    updated_at: SystemTime,
    /// The handler's answer (completed) or the JSON-RPC error (failed), once terminal.
    outcome: Option<Result<Value, McpError>>,
}

fn terminal(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
}

impl Entry {
    /// The task as 2025-11-25 shows it (`ttl`, `pollInterval`).
    pub(crate) fn view(&self) -> Task {
        let state = self.state.lock();
        let mut task = Task::new(self.id.clone(), state.status, iso8601(self.created_at), iso8601(state.updated_at))
            .with_ttl(self.ttl_ms)
            .with_poll_interval(self.poll_ms);
        task.status_message = state.message.clone();
        task
    }

    /// How long until the record expires.
    pub(crate) fn remaining(&self) -> Duration {
        self.expires_at.saturating_duration_since(Instant::now())
    }

    pub(crate) fn status(&self) -> TaskStatus {
        self.state.lock().status
    }

    /// Moves to `status` (terminal) unless already terminal; wakes the waiters and
    /// announces the change.
    fn finish(&self, status: TaskStatus, message: Option<String>, outcome: Option<Result<Value, McpError>>) -> bool {
        {
            let mut state = self.state.lock();
            if terminal(state.status) {
                return false;
            }
            state.status = status;
            state.message = message;
            state.updated_at = SystemTime::now();
            state.outcome = outcome;
        }
        self.settled.notify_waiters();
        self.announce();
        true
    }

    /// Sends `notifications/tasks/status` with the whole task, if announcing is on.
    fn announce(&self) {
        if !self.announcer.on {
            return;
        }
        let outbound = self.announcer.outbound.read().clone();
        if let Some(send) = outbound {
            let params = serde_json::to_value(TaskStatusNotificationParams::from_task(self.view())).ok();
            let method = MethodName::ExperimentalTaskStatus.as_str().into();
            send(Message::Notification(Notification { method, params }).to_vec());
        }
    }

    fn fail(&self, error: McpError) {
        let message = error.to_error_object().message;
        self.finish(TaskStatus::Failed, Some(message), Some(Err(error)));
    }

    /// `tasks/cancel`: `cancelled` now (unless already terminal) and the run stopped.
    /// False when the task was already terminal.
    pub(crate) fn cancel(&self) -> bool {
        let cancelled = self.finish(TaskStatus::Cancelled, Some("Cancelled by the server".into()), None);
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

    /// The run's outcome: the handler's answer, its error, or why it did not finish.
    fn settle(&self, outcome: TaskOutcome<Value, Failure>, code: i64) {
        match outcome {
            TaskOutcome::Completed(result) => {
                self.finish(TaskStatus::Completed, None, Some(Ok(result)));
            }
            TaskOutcome::Failed(failure) => self.fail(failure.to_mcp_error(code)),
            TaskOutcome::Panicked(message) => {
                tracing::error!(task = %self.id, %message, "client handler panicked in a task");
                self.fail(Failure::Panicked(message).to_mcp_error(code));
            }
            TaskOutcome::TimedOut => {
                self.fail(McpError::internal("Client handler did not finish within the task's ttl"))
            }
            TaskOutcome::Cancelled => {
                self.finish(TaskStatus::Cancelled, Some("Cancelled".into()), None);
            }
            TaskOutcome::Shutdown => self.fail(McpError::internal("Client is shutting down")),
        }
    }

    /// `tasks/result`: waits for the terminal status, then the handler's answer with the
    /// `related-task` `_meta`, or the task's error; -32602 for a cancelled task.
    pub(crate) async fn payload(self: Arc<Self>) -> Result<Value, McpError> {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            // Registered before the status is read, so a finish in between still wakes us.
            notified.as_mut().enable();
            {
                let state = self.state.lock();
                if terminal(state.status) {
                    return match state.outcome.clone() {
                        Some(Ok(mut result)) => {
                            if let Value::Object(result) = &mut result {
                                relate_result(result, &self.id);
                            }
                            Ok(result)
                        }
                        Some(Err(error)) => Err(error),
                        None => Err(McpError::invalid_params("Task was cancelled: it has no result")),
                    };
                }
            }
            notified.await;
        }
    }
}

//! Tasks from the client's side, in both eras: [`Client::call_tool_as_task`] asks for a
//! tool call to run as a task and returns a [`TaskHandle`] to follow it.
//!
//! 2025-11-25 asks with `params.task` (`ttl`), reads the nested `CreateTaskResult`, polls
//! `tasks/get`, fetches the result with the blocking `tasks/result` and lists with
//! `tasks/list`. 2026-07-28 declares the `io.modelcontextprotocol/tasks` extension in
//! that request's capabilities (the server decides), reads the flat `CreateTaskResult`,
//! polls `tasks/get` (whose terminal answer carries the result or the error) and answers
//! a task's `inputRequests` with the client's input handler (ConduitMcp's `await_task`
//! semantics), sent with `tasks/update`. A server may answer a task call inline (the
//! extension's immediate-result shortcut, or a legacy server without tasks): the handle
//! then holds the result and never polls.
//!
//! [`TaskHandle::statuses`] polls at the server's `pollInterval` (bounded below by
//! [`MIN_POLL`]) and also yields a status as soon as the server pushes it: in 2025-11-25
//! a `notifications/tasks/status` about its task, in 2026-07-28 a `notifications/tasks`
//! on a `subscriptions/listen` naming the task (opened by the stream, declaring the
//! extension; the polls alone if refused). The polls go on regardless, as the spec asks.
//! On a 2025-11-25 task's first `input_required` it opens `tasks/result` in the
//! background, as the spec says a requestor SHOULD, since a server may send the task's
//! requests only on that stream.
//! What this module is not: it does not answer a legacy server's requests tied to a task
//! differently from other requests: the handler answers them.
//! The tasks a server asks this client to run are elsewhere (`handler/hosted/`).
//!
//! Invariant: every request about a task carries the task's id and, in 2026-07-28, the
//! extension in its capabilities; a task's stream of statuses ends at its first terminal
//! status.

use std::time::Duration;

use arbor_protocol::meta;
use arbor_protocol::methods::MethodName;
use arbor_protocol::model::subscriptions::SubscriptionFilter;
use arbor_protocol::model::tasks::{ListTasksResult, Task, TaskStatus, TaskStatusNotificationParams};
use arbor_protocol::model::tools::CallToolResult;
use arbor_protocol::version::Era;
use futures::{Stream, StreamExt};
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use crate::error::{ClientError, ProtocolError};
use crate::shared::ServerNotice;
use crate::subscription::Subscription;
use crate::{CallOptions, Client};

/// The extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The shortest polling interval a handle uses, whatever the server suggests.
pub const MIN_POLL: Duration = Duration::from_millis(50);

/// A tool call running as a task on the server (or answered at once).
#[derive(Clone, Debug)]
pub struct TaskHandle {
    client: Client,
    era: Era,
    state: HandleState,
}

#[derive(Clone, Debug)]
enum HandleState {
    /// The server made a task: follow it by id.
    Task { task: Box<Task> },
    /// The server answered inline.
    Immediate(Box<CallToolResult>),
}

impl Client {
    /// `tools/call` as a task, kept by the server for `ttl` (its own bound applies; the
    /// TTL in force is in [`TaskHandle::created`]). 2026-07-28: the request declares the
    /// tasks extension and `ttl` is ignored (the server decides).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
    ) -> Result<TaskHandle, ClientError> {
        let arguments = match arguments {
            Value::Object(m) => Value::Object(m),
            Value::Null => Value::Object(Map::new()),
            _ => return Err(ClientError::ArgumentsNotAnObject),
        };
        let era = self.era().ok_or(ClientError::Disconnected)?;
        let mut params = json!({ "name": name, "arguments": arguments });
        match era {
            Era::Legacy => {
                let ttl = ttl.map(|t| t.as_millis().min(i64::MAX as u128) as i64);
                params["task"] = ttl.map_or_else(|| json!({}), |t| json!({ "ttl": t }));
            }
            Era::Modern => declare_extension(self, &mut params),
        }
        let answer = self.request_value(MethodName::CallTool, params, &CallOptions::default()).await?;
        let task = match era {
            Era::Legacy => answer.get("task").cloned(),
            Era::Modern => (answer.get("resultType").and_then(Value::as_str) == Some("task")).then(|| answer.clone()),
        };
        let state = match task {
            Some(task) => HandleState::Task { task: Box::new(decode(task)?) },
            None => HandleState::Immediate(Box::new(decode(answer)?)),
        };
        Ok(TaskHandle { client: self.clone(), era, state })
    }

    /// One page of the caller's tasks (`tasks/list`, 2025-11-25; the extension has none).
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<ListTasksResult, ClientError> {
        if self.era() == Some(Era::Modern) {
            return Err(ClientError::Unsupported { method: "tasks/list", era: "modern" });
        }
        let params = cursor.map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        decode(self.request_value(MethodName::ListTasks, params, &CallOptions::default()).await?)
    }
}

/// Adds the extension to this request's capabilities (kept by `call::shape_params`).
pub(crate) fn declare_extension(client: &Client, params: &mut Value) {
    let mut caps = client.shared_arc().client_capabilities.clone();
    if !caps.is_object() {
        caps = json!({});
    }
    let extensions = caps.as_object_mut().expect("an object").entry("extensions").or_insert_with(|| json!({}));
    if let Value::Object(e) = extensions {
        e.insert(TASKS_EXTENSION.into(), json!({}));
    }
    params["_meta"] = json!({ meta::CLIENT_CAPABILITIES: caps });
}

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|e| ClientError::Protocol(ProtocolError::Json(e)))
}

impl TaskHandle {
    /// The task's id; `None` when the server answered inline.
    pub fn id(&self) -> Option<&str> {
        match &self.state {
            HandleState::Task { task } => Some(&task.task_id),
            HandleState::Immediate(_) => None,
        }
    }

    /// The task as the server created it (its TTL and polling interval in force).
    pub fn created(&self) -> Option<&Task> {
        match &self.state {
            HandleState::Task { task } => Some(task),
            HandleState::Immediate(_) => None,
        }
    }

    async fn task_request(&self, method: MethodName, extra: Value) -> Result<Value, ClientError> {
        let id = self.id().ok_or(ClientError::Unsupported { method: method.as_str(), era: "an inline answer" })?;
        let mut params = json!({ "taskId": id });
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        if self.era == Era::Modern {
            declare_extension(&self.client, &mut params);
        }
        self.client.request_value(method, params, &CallOptions::default()).await
    }

    /// `tasks/get`: the task's status now.
    pub async fn status(&self) -> Result<TaskStatus, ClientError> {
        Ok(self.get().await?.status)
    }

    /// `tasks/get`, the whole task. An inline answer is a completed task without an id.
    pub async fn get(&self) -> Result<Task, ClientError> {
        match &self.state {
            HandleState::Immediate(_) => Ok(immediate_task()),
            HandleState::Task { .. } => decode(self.task_request(MethodName::GetTask, json!({})).await?),
        }
    }

    /// `tasks/cancel`. Cancellation is cooperative: the final status may still be
    /// `completed`. A 2025-11-25 server refuses to cancel a terminal task (-32602).
    pub async fn cancel(&self) -> Result<(), ClientError> {
        if matches!(self.state, HandleState::Immediate(_)) {
            return Ok(());
        }
        self.task_request(MethodName::CancelTask, json!({})).await.map(drop)
    }

    /// The tool's result once the task ends: 2025-11-25 by the blocking `tasks/result`;
    /// 2026-07-28 by polling `tasks/get`, answering input requests on the way. A failed
    /// task is its JSON-RPC error ([`ClientError::Rpc`]); a cancelled one too.
    pub async fn result(&self) -> Result<CallToolResult, ClientError> {
        if let HandleState::Immediate(result) = &self.state {
            return Ok((**result).clone());
        }
        if self.era == Era::Legacy {
            return decode(self.task_request(MethodName::GetTaskPayload, json!({})).await?);
        }
        loop {
            let task = self.get().await?;
            match task.status {
                TaskStatus::Completed => {
                    return decode(Value::Object(task.result.unwrap_or_default()));
                }
                TaskStatus::Failed => {
                    let error = task.error.map(arbor_protocol::error::McpError::from);
                    return Err(ClientError::Rpc(
                        error.unwrap_or_else(|| arbor_protocol::error::McpError::internal("the task failed")),
                    ));
                }
                TaskStatus::Cancelled => {
                    return Err(ClientError::Rpc(arbor_protocol::error::McpError::invalid_params(
                        "the task was cancelled",
                    )));
                }
                TaskStatus::InputRequired if task.input_requests.is_some() => {
                    self.answer(task.input_requests.unwrap_or_default()).await?;
                }
                _ => tokio::time::sleep(poll_of(&task)).await,
            }
        }
    }

    /// Answers a task's input requests with the client's handler, by `tasks/update`.
    async fn answer(&self, requests: arbor_protocol::model::mrtr::InputRequests) -> Result<(), ClientError> {
        let requests = serde_json::to_value(requests).map_err(ClientError::Encode)?;
        let Value::Object(requests) = requests else { return Ok(()) };
        let shared = self.client.shared_arc();
        let runtime = shared.runtime.as_ref().ok_or(ClientError::Protocol(ProtocolError::InputWithoutCapability))?;
        let answers = runtime.answer_inputs(&requests, None).await?;
        self.task_request(MethodName::UpdateTask, json!({ "inputResponses": answers })).await.map(drop)
    }

    /// The task's status each time it changes: by polling `tasks/get` at the server's
    /// `pollInterval`, and (2025-11-25) as soon as a `notifications/tasks/status` for this
    /// task says so. The notification is a shortcut, never relied upon (the spec says
    /// requestors MUST NOT): the polls go on at their interval whatever arrives. Ends after
    /// the first terminal status (or the first error). An inline answer is one `completed`.
    pub fn statuses(&self) -> impl Stream<Item = Result<TaskStatus, ClientError>> + Send + 'static {
        // Subscribed (2025-11-25) or listening (2026-07-28, opened by the first `next`)
        // before the first poll, so a change after it is not missed.
        let push = match (&self.state, self.era) {
            (HandleState::Task { .. }, Era::Legacy) => Push::Notices(self.client.shared_arc().notices.subscribe()),
            (HandleState::Task { .. }, Era::Modern) => Push::Unopened,
            (HandleState::Immediate(_), _) => Push::Nothing,
        };
        let follow =
            Follow { handle: self.clone(), last: None, ended: false, next_poll: None, push, result_wait: None };
        futures::stream::unfold(follow, |mut f| async move {
            if f.ended {
                return None;
            }
            let status = f.next().await;
            f.ended = !matches!(status, Ok(s) if !terminal(s));
            if let Ok(s) = &status {
                f.last = Some(*s);
                f.on_status(*s);
            }
            Some((status, f))
        })
    }
}

/// The state of one [`TaskHandle::statuses`] stream.
struct Follow {
    handle: TaskHandle,
    last: Option<TaskStatus>,
    ended: bool,
    /// When to poll next; `None`: now.
    next_poll: Option<tokio::time::Instant>,
    push: Push,
    /// 2025-11-25: the `tasks/result` opened on the first `input_required`, which the
    /// spec says a requestor SHOULD call then: a server may deliver the task's requests
    /// only on that stream (server-everything does), so following the statuses alone
    /// would wait in `input_required` until the TTL. Aborted with the stream.
    result_wait: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Follow {
    fn drop(&mut self) {
        if let Some(wait) = self.result_wait.take() {
            wait.abort();
        }
    }
}

/// Where pushed statuses come from.
enum Push {
    /// 2025-11-25: `notifications/tasks/status`, among the client's notices.
    Notices(broadcast::Receiver<ServerNotice>),
    /// 2026-07-28, before the first status: a listen naming the task is to be opened.
    Unopened,
    /// 2026-07-28: `notifications/tasks` on a listen naming the task.
    Listen(Subscription),
    /// None: the polls alone (an inline answer, or a listen refused or ended).
    Nothing,
}

impl Follow {
    /// On a 2025-11-25 task's first `input_required`, opens `tasks/result` in the
    /// background (its answer is dropped: [`TaskHandle::result`] asks again), so the
    /// server has a stream to send the task's requests on; the client's handler answers
    /// them as any other.
    fn on_status(&mut self, status: TaskStatus) {
        if status == TaskStatus::InputRequired && self.handle.era == Era::Legacy && self.result_wait.is_none() {
            let handle = self.handle.clone();
            self.result_wait = Some(tokio::spawn(async move {
                let _ = handle.result().await;
            }));
        }
    }

    /// The next status different from the last one yielded.
    async fn next(&mut self) -> Result<TaskStatus, ClientError> {
        if matches!(self.push, Push::Unopened) {
            self.push = self.open_listen().await;
        }
        loop {
            let due = self.next_poll.is_none_or(|at| at <= tokio::time::Instant::now());
            if due {
                let task = self.handle.get().await?;
                self.next_poll = Some(tokio::time::Instant::now() + poll_of(&task));
                if Some(task.status) != self.last {
                    return Ok(task.status);
                }
                continue;
            }
            let at = self.next_poll.unwrap_or_else(tokio::time::Instant::now);
            let id = self.handle.id().unwrap_or_default().to_owned();
            let pushed = match &mut self.push {
                Push::Notices(rx) => tokio::select! {
                    () = tokio::time::sleep_until(at) => None,
                    status = pushed_status(rx, &id) => status,
                },
                Push::Listen(sub) => tokio::select! {
                    () = tokio::time::sleep_until(at) => None,
                    status = listened_status(sub, &id) => match status {
                        Some(status) => Some(status),
                        None => {
                            // The listen ended: the polls go on alone.
                            self.push = Push::Nothing;
                            None
                        }
                    },
                },
                Push::Unopened | Push::Nothing => {
                    tokio::time::sleep_until(at).await;
                    None
                }
            };
            if let Some(status) = pushed.filter(|s| Some(*s) != self.last) {
                return Ok(status);
            }
        }
    }
}

impl Follow {
    /// A listen naming this task, declaring the extension; the polls alone when the
    /// server refuses it or does not honour the task.
    async fn open_listen(&self) -> Push {
        let Some(id) = self.handle.id() else { return Push::Nothing };
        let filter = SubscriptionFilter::default().with_task_ids(vec![id.to_owned()]);
        match self.handle.client.listen_declaring(filter, true).await {
            Ok(sub) if sub.acknowledged().task_ids.as_deref().unwrap_or_default().iter().any(|t| t == id) => {
                Push::Listen(sub)
            }
            Ok(_) => Push::Nothing,
            Err(e) => {
                tracing::debug!(target: "arbor_client", task = %id, "no listen for the task's statuses: {e}");
                Push::Nothing
            }
        }
    }
}

/// The status of the next `notifications/tasks` about task `id` on a listen; `None` when
/// the listen ends.
async fn listened_status(sub: &mut Subscription, id: &str) -> Option<TaskStatus> {
    while let Some(notice) = sub.next().await {
        if MethodName::parse(&notice.method) != Some(MethodName::TaskStatus) {
            continue;
        }
        let Some(params) = notice.params else { continue };
        let Ok(task) = serde_json::from_value::<TaskStatusNotificationParams>(params) else { continue };
        if task.task_id == id {
            return Some(task.status);
        }
    }
    None
}

/// The status of the next `notifications/tasks/status` about task `id`; never ready once
/// the notices end, so the polls alone go on.
async fn pushed_status(rx: &mut broadcast::Receiver<ServerNotice>, id: &str) -> Option<TaskStatus> {
    loop {
        match rx.recv().await {
            Ok(notice) if MethodName::parse(&notice.method) == Some(MethodName::ExperimentalTaskStatus) => {
                let Some(params) = notice.params else { continue };
                let Ok(task) = serde_json::from_value::<TaskStatusNotificationParams>(params) else { continue };
                if task.task_id == id {
                    return Some(task.status);
                }
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return futures::future::pending().await,
        }
    }
}

fn terminal(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
}

fn poll_of(task: &Task) -> Duration {
    let ms = task.poll_interval_ms.or(task.poll_interval).unwrap_or(500).max(0) as u64;
    Duration::from_millis(ms).max(MIN_POLL)
}

fn immediate_task() -> Task {
    Task::new(String::new(), TaskStatus::Completed, String::new(), String::new())
}

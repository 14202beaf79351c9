//! Server→client requests, and the client running them as tasks (2025-11-25
//! "client-hosted tasks", opt-in: [`ServerConfig::client_tasks`]).
//!
//! What the connection asks the client is an [`Ask`]: an input request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`), or a `tasks/get` / `tasks/result` about a task
//! the client runs for one. An input request is augmented with `params.task` only when
//! the server opted in, the session negotiated 2025-11-25 (core tasks) and the client
//! declared `capabilities.tasks.requests.sampling.createMessage` (or
//! `elicitation.create`) at `initialize`, as the spec asks of a requestor. Its answer is
//! then a `CreateTaskResult` ([`Answer::Task`]) or, from a client that ignored the
//! augmentation, the plain result; [`follow`] polls the client's `tasks/get` at the
//! `pollInterval` it suggests until the task is terminal or `input_required`, and fetches
//! the result with `tasks/result`. The handler only ever sees the answer, as for a plain
//! request. A task followed no longer (its waiter was cancelled or timed out) is
//! cancelled with `tasks/cancel` when the client declared `tasks.cancel`, unanswered.
//!
//! It is not the pending table (`pending.rs` files each ask and matches its answer) nor a
//! timer of its own: the request (or task run) that waits is dropped by its deadline, and
//! the request being polled is forgotten with it.
//!
//! Invariant: an answer is decoded by what was asked (never by guessing its shape), except
//! that the answer to an augmented request may be either a `CreateTaskResult` (it has a
//! `task` object) or the request's own result.
//!
//! [`ServerConfig::client_tasks`]: crate::ServerConfig::client_tasks

use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::method::{decode_result, encode_request};
use arbor_protocol::methods::{CancelTask, CreateMessage, Elicit, GetTask, GetTaskPayload, ListRoots, MethodName};
use arbor_protocol::model::elicitation::ElicitRequestParams;
use arbor_protocol::model::mrtr::{InputRequest, InputResponse};
use arbor_protocol::model::tasks::{TaskIdParams, TaskMetadata, TaskStatus};
use arbor_protocol::version::Feature;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::handle::ConnectionHandle;
use crate::context::ConnectionInfo;
use crate::input::needs::Kind;

/// What the server asks the client.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Boxed in `ConnMsg::Ask`; the input request is the common case.
pub(crate) enum Ask {
    /// An input request for a handler.
    Input(InputRequest),
    /// `tasks/get` of a task the client runs.
    GetTask(String),
    /// `tasks/result` of a task the client runs for an input request of `MethodName`.
    TaskResult(String, MethodName),
    /// `tasks/cancel` of a task the client runs whose answer nobody waits for any more;
    /// sent only to a client that declared `tasks.cancel`.
    CancelTask(String),
}

impl Ask {
    /// The method sent.
    pub(crate) fn method(&self) -> MethodName {
        match self {
            Ask::Input(request) => Kind::of_request(request).method_name(),
            Ask::GetTask(_) => MethodName::GetTask,
            Ask::TaskResult(..) => MethodName::GetTaskPayload,
            Ask::CancelTask(_) => MethodName::CancelTask,
        }
    }
}

/// What the client answered.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Moved once, through a oneshot; the answer is the common case.
pub(crate) enum Answer {
    /// The input request's result.
    Input(InputResponse),
    /// The state of a task the client runs for the request.
    Task(ClientTask),
}

/// A client-run task, as much of it as following it needs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClientTask {
    pub(crate) task_id: String,
    pub(crate) status: TaskStatus,
    #[serde(default)]
    pub(crate) poll_interval: Option<i64>,
}

/// How to read the answer to an ask.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expect {
    /// The result of the input request of this method.
    Input(MethodName),
    /// A `CreateTaskResult`, or the plain result of this method.
    Augmented(MethodName),
    /// A `tasks/get` result.
    Task,
}

/// The TTL to augment `request` with, if it should be: see the module's conditions.
pub(crate) fn augment_ttl(
    ttl: Option<Duration>,
    info: Option<&ConnectionInfo>,
    request: &InputRequest,
) -> Option<Duration> {
    let (ttl, info) = (ttl?, info?);
    if !info.protocol_version.supports(Feature::CoreTasks) {
        return None;
    }
    let (family, method) = match request {
        InputRequest::Elicit(_) => ("elicitation", "create"),
        InputRequest::CreateMessage(_) => ("sampling", "createMessage"),
        InputRequest::ListRoots(_) => return None,
    };
    let requests = info.client_capabilities.tasks.as_ref()?.requests.as_ref()?;
    requests.get(family)?.get(method).is_some().then_some(ttl)
}

/// Whether the client declared `tasks.cancel` (on a revision with core tasks).
pub(crate) fn cancels(info: Option<&ConnectionInfo>) -> bool {
    info.is_some_and(|i| {
        i.protocol_version.supports(Feature::CoreTasks)
            && i.client_capabilities.tasks.as_ref().is_some_and(|t| t.cancel.is_some())
    })
}

/// The frame of `ask` under `id` (with `params.task` when `ttl` is given), and how to read
/// its answer.
pub(crate) fn encode(id: &RequestId, ask: Ask, ttl: Option<Duration>) -> (Expect, Vec<u8>) {
    let task = ttl.map(|t| TaskMetadata::default().with_ttl(t.as_millis().min(i64::MAX as u128) as i64));
    let augmented = |m| if task.is_some() { Expect::Augmented(m) } else { Expect::Input(m) };
    match ask {
        Ask::Input(InputRequest::Elicit(mut r)) => {
            match &mut r.params {
                ElicitRequestParams::Form(p) => p.task = task.clone(),
                ElicitRequestParams::Url(p) => p.task = task.clone(),
            }
            (augmented(MethodName::Elicit), encode_request::<Elicit>(id, &r.params))
        }
        Ask::Input(InputRequest::CreateMessage(mut r)) => {
            r.params.task = task.clone();
            (augmented(MethodName::CreateMessage), encode_request::<CreateMessage>(id, &r.params))
        }
        Ask::Input(InputRequest::ListRoots(r)) => {
            (Expect::Input(MethodName::ListRoots), encode_request::<ListRoots>(id, &r.params.unwrap_or_default()))
        }
        Ask::GetTask(task_id) => (Expect::Task, encode_request::<GetTask>(id, &TaskIdParams::new(task_id))),
        Ask::TaskResult(task_id, method) => {
            (Expect::Input(method), encode_request::<GetTaskPayload>(id, &TaskIdParams::new(task_id)))
        }
        Ask::CancelTask(task_id) => (Expect::Task, encode_request::<CancelTask>(id, &TaskIdParams::new(task_id))),
    }
}

/// Reads the client's `result` as `expect` says.
pub(crate) fn decode(expect: Expect, result: &RawValue) -> Result<Answer, McpError> {
    let malformed = |e: &dyn std::fmt::Display| McpError::internal(format!("The client's answer was malformed: {e}"));
    let input = |method| {
        match method {
            MethodName::Elicit => decode_result::<Elicit>(result).map(InputResponse::Elicit),
            MethodName::CreateMessage => decode_result::<CreateMessage>(result).map(InputResponse::CreateMessage),
            _ => decode_result::<ListRoots>(result).map(InputResponse::ListRoots),
        }
        .map(Answer::Input)
        .map_err(|e| malformed(&e))
    };
    let task = |raw: &str| serde_json::from_str::<ClientTask>(raw).map(Answer::Task).map_err(|e| malformed(&e));
    match expect {
        Expect::Input(method) => input(method),
        Expect::Task => task(result.get()),
        Expect::Augmented(method) => {
            #[derive(Deserialize)]
            struct Created<'a> {
                #[serde(borrow)]
                task: Option<&'a RawValue>,
            }
            match serde_json::from_str::<Created>(result.get()) {
                Ok(Created { task: Some(created) }) => task(created.get()),
                _ => input(method),
            }
        }
    }
}

/// The shortest and longest wait between two polls of a client's task, whatever its
/// `pollInterval` says: a client cannot make the server spin, nor stall it for long.
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(10);
/// The wait when the client suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

fn interval(task: &ClientTask) -> Duration {
    task.poll_interval.map_or(DEFAULT_POLL, |ms| Duration::from_millis(ms.max(0) as u64)).clamp(MIN_POLL, MAX_POLL)
}

/// Follows the task the client created for an input request of `method` to its result:
/// polls `tasks/get` until the task is terminal or `input_required`, then `tasks/result`
/// (the client's error for a failed or cancelled task is the answer's error).
pub(crate) async fn follow(
    handle: &ConnectionHandle,
    mut task: ClientTask,
    method: MethodName,
) -> Result<InputResponse, McpError> {
    // Dropped before the result is in (the waiter was cancelled or timed out): the
    // client's task is cancelled too, rather than left running to its TTL.
    let mut abandon = CancelOnDrop { handle, task_id: Some(task.task_id.clone()) };
    while matches!(task.status, TaskStatus::Working) {
        tokio::time::sleep(interval(&task)).await;
        task = match handle.ask(Ask::GetTask(task.task_id.clone())).await? {
            Answer::Task(polled) if polled.task_id == task.task_id => polled,
            _ => {
                return Err(McpError::internal(format!(
                    "The client answered tasks/get of its task {} with another task's state or a result",
                    task.task_id
                )))
            }
        };
    }
    let answer = handle.ask(Ask::TaskResult(task.task_id, method)).await;
    abandon.task_id = None;
    match answer? {
        Answer::Input(answer) => Ok(answer),
        Answer::Task(_) => Err(McpError::internal("The client answered tasks/result with a task")),
    }
}

/// Cancels a client's task nobody follows any more, on drop (best effort, unanswered).
struct CancelOnDrop<'a> {
    handle: &'a ConnectionHandle,
    task_id: Option<String>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(task_id) = self.task_id.take() {
            self.handle.tell(Ask::CancelTask(task_id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_protocol::model::capabilities::ClientCapabilities;
    use arbor_protocol::version::ProtocolVersion;
    use serde_json::{json, Value};

    fn info(version: ProtocolVersion, capabilities: Value) -> ConnectionInfo {
        ConnectionInfo {
            tenant: "default".into(),
            auth: None,
            principal: None,
            requester: Default::default(),
            client_info: None,
            client_capabilities: serde_json::from_value::<ClientCapabilities>(capabilities).unwrap(),
            protocol_version: version,
        }
    }

    fn sampling() -> InputRequest {
        serde_json::from_value(json!({"method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 10}}))
        .unwrap()
    }

    fn elicit() -> InputRequest {
        serde_json::from_value(json!({"method": "elicitation/create",
            "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}}))
        .unwrap()
    }

    #[test]
    fn only_declared_methods_on_a_revision_with_core_tasks_are_augmented_and_only_when_opted_in() {
        let ttl = Some(Duration::from_secs(9));
        let caps =
            json!({"sampling": {}, "elicitation": {}, "tasks": {"requests": {"sampling": {"createMessage": {}}}}});
        let new = info(ProtocolVersion::V2025_11_25, caps.clone());
        assert_eq!(augment_ttl(ttl, Some(&new), &sampling()), ttl);
        assert_eq!(augment_ttl(ttl, Some(&new), &elicit()), None, "elicitation was not declared");
        assert_eq!(augment_ttl(None, Some(&new), &sampling()), None, "the server did not opt in");
        let old = info(ProtocolVersion::V2025_06_18, caps);
        assert_eq!(augment_ttl(ttl, Some(&old), &sampling()), None, "no core tasks before 2025-11-25");
        assert_eq!(augment_ttl(ttl, None, &sampling()), None);
        assert!(!cancels(Some(&new)));
        assert!(cancels(Some(&info(ProtocolVersion::V2025_11_25, json!({"tasks": {"cancel": {}}})))));
    }

    #[test]
    fn an_augmented_request_carries_its_ttl_and_either_answer_is_read() {
        let id = RequestId::from(7);
        let (expect, frame) = encode(&id, Ask::Input(sampling()), Some(Duration::from_millis(1500)));
        let frame: Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(frame["params"]["task"], json!({"ttl": 1500}), "{frame}");
        let raw = |v: Value| RawValue::from_string(v.to_string()).unwrap();
        let created = raw(json!({"task": {"taskId": "t", "status": "working", "createdAt": "x",
            "lastUpdatedAt": "x", "ttl": 1500, "pollInterval": 20}}));
        let Ok(Answer::Task(task)) = decode(expect, &created) else { panic!("not a task") };
        assert_eq!((task.task_id.as_str(), task.status, task.poll_interval), ("t", TaskStatus::Working, Some(20)));
        assert_eq!(interval(&task), MIN_POLL, "a client cannot make the server spin");
        let plain = raw(json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}));
        assert!(matches!(decode(expect, &plain), Ok(Answer::Input(InputResponse::CreateMessage(_)))));
        let (expect, frame) = encode(&id, Ask::Input(sampling()), None);
        let frame: Value = serde_json::from_slice(&frame).unwrap();
        assert!(frame["params"].get("task").is_none());
        assert!(decode(expect, &created).is_err(), "a task answer to a plain request is malformed");
    }
}

//! `client_e2e`'s task checks: `Client::call_tool_as_task` and its `TaskHandle` against
//! server-everything's `simulate-research-query` (a 2025-11-25 task whose ambiguous form
//! asks the user through an `elicitation/create` tied to the task, delivered while
//! `tasks/result` waits) and the demo server's `slow_square` / `build_report` (both eras).
//!
//! It is not a test of the servers' task stores: each check asserts what Arbor's client
//! sees from outside (a task id, the statuses its stream yields, the result text, the
//! handler answering the task's input, `tasks/list`, cancel). The texts are the
//! servers' own, fixed in their sources (server-everything's `generateResearchReport`,
//! the demo's tools).

use std::sync::atomic::Ordering;
use std::time::Duration;

use arbor_client::{Client, ClientError, TaskHandle};
use arbor_protocol::model::tasks::TaskStatus;
use arbor_protocol::version::Era;
use futures::StreamExt;
use serde_json::{json, Value};

use super::{text_of, Report, Seen};

/// The statuses a task's stream yields until its end (at most a minute).
async fn statuses(handle: &TaskHandle) -> Result<Vec<TaskStatus>, String> {
    let all = handle.statuses().collect::<Vec<_>>();
    let all = tokio::time::timeout(Duration::from_secs(60), all).await.map_err(|_| "no end within 60 s".to_owned())?;
    all.into_iter().collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
}

/// Runs `tool` as a task to its end; the handle, the statuses seen and the result text.
async fn run(client: &Client, tool: &str, args: Value) -> Result<(TaskHandle, Vec<TaskStatus>, String), String> {
    let handle =
        client.call_tool_as_task(tool, args, Some(Duration::from_secs(120))).await.map_err(|e| e.to_string())?;
    if handle.id().is_none() {
        return Err("the server answered inline, not with a task".into());
    }
    // Both at once: a 2025-11-25 server may hold the task's input requests until
    // `tasks/result` is called (server-everything does), so following the statuses alone
    // would wait in `input_required` for ever.
    let result = async {
        tokio::time::timeout(Duration::from_secs(60), handle.result())
            .await
            .map_err(|_| "tasks/result did not answer within 60 s".to_owned())?
            .map_err(|e| e.to_string())
    };
    let (seen, result) = tokio::join!(statuses(&handle), result);
    let (seen, result) = (seen?, result?);
    Ok((handle, seen, text_of(&result)))
}

/// Runs `tool` as a task and follows only its statuses (no `tasks/result` of ours).
async fn follow_alone(client: &Client, tool: &str, args: Value) -> Result<Vec<TaskStatus>, String> {
    let handle =
        client.call_tool_as_task(tool, args, Some(Duration::from_secs(120))).await.map_err(|e| e.to_string())?;
    statuses(&handle).await
}

fn ended_completed(seen: &[TaskStatus]) -> Result<(), String> {
    match seen.last() {
        Some(TaskStatus::Completed) => Ok(()),
        _ => Err(format!("statuses {seen:?} do not end completed")),
    }
}

/// server-everything's task tool, plain and with the clarification asked inside the task.
pub async fn everything(client: &Client, seen: &Seen, r: &mut Report) {
    let plain = run(client, "simulate-research-query", json!({"topic": "arbor", "ambiguous": false})).await;
    let id = plain.as_ref().ok().and_then(|(h, _, _)| h.id().map(str::to_owned));
    r.check(
        "simulate-research-query as a task: statuses end completed, tasks/result is the report",
        plain.and_then(|(_, seen, text)| {
            ended_completed(&seen)?;
            super::expect_contains(text, "# Research Report: arbor")
        }),
    );
    let before = seen.elicitations.load(Ordering::SeqCst);
    // The handler picks the first interpretation offered (`technical` for this topic).
    let ambiguous = run(client, "simulate-research-query", json!({"topic": "arbor", "ambiguous": true})).await;
    r.check(
        "simulate-research-query (ambiguous): the task's elicitation is answered by the handler",
        ambiguous.and_then(|(_, _, text)| {
            if seen.elicitations.load(Ordering::SeqCst) == before {
                return Err("the handler was not asked".into());
            }
            super::expect_contains(text, "Clarification**: technical")
        }),
    );
    // Following the statuses alone: server-everything sends the task's elicitation only
    // while a `tasks/result` waits, which the stream opens itself on `input_required`.
    let followed = follow_alone(client, "simulate-research-query", json!({"topic": "arbor", "ambiguous": true})).await;
    r.check(
        "simulate-research-query (ambiguous), statuses alone: input_required, then completed",
        followed.and_then(|seen| match seen.as_slice() {
            [.., TaskStatus::InputRequired, _, TaskStatus::Completed]
            | [.., TaskStatus::InputRequired, TaskStatus::Completed] => Ok(()),
            _ => Err(format!("statuses {seen:?}")),
        }),
    );
    // Client-hosted tasks: the server asks this client to run its elicitation and its
    // sampling as tasks, polls the client's tasks/get and fetches tasks/result.
    let hosted = client.call_tool("trigger-elicitation-request-async", json!({})).await.map_err(|e| e.to_string());
    r.check(
        "trigger-elicitation-request-async: the elicitation runs as a task on this client",
        hosted.and_then(|result| {
            let text = text_of(&result);
            super::expect_contains(text.clone(), "[COMPLETED] User provided the requested information!")?;
            super::expect_contains(text, "Favorite Color: Red")
        }),
    );
    let hosted =
        client.call_tool("trigger-sampling-request-async", json!({"prompt": "arbor"})).await.map_err(|e| e.to_string());
    r.check(
        "trigger-sampling-request-async: the sampling runs as a task on this client",
        hosted.and_then(|result| {
            let text = text_of(&result);
            super::expect_contains(text.clone(), "[COMPLETED] Async sampling completed!")?;
            super::expect_contains(text, super::MODEL_TEXT)
        }),
    );
    let listed = client.list_tasks(None).await.map_err(|e| e.to_string());
    r.check(
        "tasks/list shows the finished research task",
        listed.and_then(|page| match &id {
            Some(id) if page.tasks.iter().any(|t| &t.task_id == id && t.status == TaskStatus::Completed) => Ok(()),
            _ => Err(format!("{id:?} not among {:?}", page.tasks.iter().map(|t| &t.task_id).collect::<Vec<_>>())),
        }),
    );
}

/// The demo server's task tools, in the era the client speaks.
pub async fn arbor(client: &Client, r: &mut Report) {
    let square = run(client, "slow_square", json!({"n": 12, "delay_ms": 200})).await;
    let id = square.as_ref().ok().and_then(|(h, _, _)| h.id().map(str::to_owned));
    r.check(
        "slow_square as a task: statuses end completed, the result is 144",
        square.and_then(|(_, seen, text)| {
            ended_completed(&seen)?;
            super::expect_eq(text, "144")
        }),
    );
    r.check(
        "build_report (task support required) as a task",
        run(client, "build_report", json!({"items": 4}))
            .await
            .and_then(|(_, _, text)| super::expect_eq(text, "Report of 4 items")),
    );
    let cancel = async {
        let handle = client
            .call_tool_as_task("slow_square", json!({"n": 3, "delay_ms": 30000}), None)
            .await
            .map_err(|e| e.to_string())?;
        handle.cancel().await.map_err(|e| format!("cancel: {e}"))?;
        match handle.status().await.map_err(|e| e.to_string())? {
            TaskStatus::Cancelled => {}
            other => return Err(format!("status {other:?} after the cancel")),
        }
        match handle.result().await {
            Err(ClientError::Rpc(e)) if e.code().as_i64() == -32602 => Ok(()),
            other => Err(format!("result of a cancelled task: {other:?}")),
        }
    };
    r.check("a running task cancelled: cancelled, and its result is -32602", cancel.await);
    if client.era() == Some(Era::Legacy) {
        let listed = client.list_tasks(None).await.map_err(|e| e.to_string());
        r.check(
            "tasks/list shows the finished slow_square task",
            listed.and_then(|page| match &id {
                Some(id) if page.tasks.iter().any(|t| &t.task_id == id) => Ok(()),
                _ => Err(format!("{id:?} not listed")),
            }),
        );
    } else {
        r.skip("tasks/list", "the 2026-07-28 tasks extension has no tasks/list");
    }
}

//! Where a request's progress and log notifications go: its connection's output.
//!
//! One [`ConnectionSink`] per byte-stream connection, shared by all its requests (a clone
//! of an `Arc` per request, no allocation), whose notifications are encoded straight into
//! the writer's batch buffer; an endpoint makes one per submission, writing to that
//! submission's route. A 2025-11-25 task a request creates gets a [`TaskStatusSink`] for
//! its `notifications/tasks/status`: the connection's standalone output (the task outlives
//! the submission's route), held weakly so a task never keeps a closed session's stream
//! open. This module does not decide whether a notification may be sent (the
//! [`RequestContext`](crate::RequestContext) checks the token, the level and that the
//! request is still running); it only writes.
//!
//! Invariant: what it writes is a complete `notifications/progress`,
//! `notifications/message` or `notifications/tasks/status` frame, or nothing (a closed
//! writer drops it).

use arbor_protocol::method::{Notification, NotificationFrame};
use arbor_protocol::methods::{ExperimentalTaskStatus, LoggingMessage, Progress};
use arbor_protocol::model::common::ProgressToken;
use arbor_protocol::model::logging::{LoggingLevel, LoggingMessageNotificationParams};
use arbor_protocol::model::tasks::{Task, TaskStatusNotificationParams};
use arbor_protocol::model::utilities::ProgressNotificationParams;
use serde::Serialize;
use serde_json::{Number, Value};

use crate::connection::output::{DetachedOutput, Kind, Output};
use crate::context::RequestSink;

/// Writes a connection's request-scoped notifications.
#[derive(Debug)]
pub(crate) struct ConnectionSink {
    output: Output,
    /// What no submission caused goes here: the connection's own output (an endpoint's
    /// standalone route, the GET stream of a legacy HTTP session).
    standalone: Output,
}

impl ConnectionSink {
    pub(crate) fn new(output: Output) -> ConnectionSink {
        ConnectionSink { standalone: output.clone(), output }
    }

    /// A submission's sink: its route, and the connection's `standalone` output.
    pub(crate) fn with_standalone(output: Output, standalone: Output) -> ConnectionSink {
        ConnectionSink { output, standalone }
    }
}

/// Where a 2025-11-25 task sends `notifications/tasks/status`: the standalone output of
/// the connection whose request created it, held without keeping it open.
#[derive(Clone, Debug)]
pub(crate) struct TaskStatusSink(DetachedOutput);

impl TaskStatusSink {
    /// Sends `task` (already in the 2025-11-25 shape); nothing once the connection is gone.
    pub(crate) fn send(&self, task: Task) {
        if let Some(output) = self.0.attach() {
            notify::<ExperimentalTaskStatus>(&output, &TaskStatusNotificationParams::from_task(task));
        }
    }
}

/// Encodes one notification frame into the output.
pub(crate) fn notify<N: Notification>(output: &Output, params: &N::Params) {
    write_frame(output, Kind::Notification, &NotificationFrame { method: N::METHOD.as_str(), params });
}

/// Encodes any frame into the output; a closed output drops it.
pub(crate) fn write_frame<T: Serialize>(output: &Output, kind: Kind, frame: &T) {
    // Our model types serialise to compact JSON without raw newlines, so this cannot be
    // refused; a closed output means the peer is gone and the frame has nowhere to go.
    let _ = output.send_with(kind, |buf| {
        serde_json::to_writer(buf, frame).expect("a model type always serialises");
    });
}

/// A JSON number for a progress value: integral values stay integers (`50`, not `50.0`).
fn number(value: f64) -> Number {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Number::from(value as i64)
    } else {
        Number::from_f64(value).unwrap_or_else(|| Number::from(0))
    }
}

impl RequestSink for ConnectionSink {
    fn progress(&self, token: &ProgressToken, progress: f64, total: Option<f64>, message: Option<String>) {
        let mut params = ProgressNotificationParams::new(token.clone(), number(progress));
        params.total = total.map(number);
        params.message = message;
        notify::<Progress>(&self.output, &params);
    }

    fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        notify::<LoggingMessage>(&self.output, &params);
    }

    fn task_status_sink(&self) -> Option<TaskStatusSink> {
        self.standalone.detached().map(TaskStatusSink)
    }
}

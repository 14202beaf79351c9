//! Server-to-client requests waiting for the client's answer (legacy era only).
//!
//! When a legacy request task (or a 2025-11-25 task's run) needs input, the connection
//! sends `elicitation/create`, `sampling/createMessage` or `roots/list` (or `tasks/get`,
//! `tasks/result` of a task the client runs for one: `client_tasks.rs`) with a fresh id
//! and files the waiting task's reply channel here under that id. The client's response
//! is decoded by what was asked (`client_tasks::decode`, never by guessing its shape) and
//! sent back. On an endpoint the request goes out on the route of the submission whose
//! task asked, and the client's answer arrives later in another submission; it is matched
//! here by id all the same. It is not the request task's timer: the task's deadline drops
//! its receiver, and a dropped receiver makes the entry dead, swept on the next insert.
//!
//! Invariant: ids (handed out by the connection handle from one process-wide counter) are
//! never reused, so a late response can never be taken for the answer to a newer request;
//! a request whose waiter went away is forgotten and cancelled towards the client.

use std::collections::HashMap;
use std::time::Duration;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::{ErrorObject, RequestId};
use arbor_protocol::methods::Cancelled;
use arbor_protocol::model::utilities::CancelledNotificationParams;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::client_tasks::{self, Answer, Ask, Expect};
use super::output::{Kind, Output};

/// Where a request task waits for the client's answer.
pub(crate) type AnswerTx = oneshot::Sender<Result<Answer, McpError>>;

/// The table of server-to-client requests in flight.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// How to read the answer, the waiter, and where the request went (for its cancellation).
    waiting: HashMap<RequestId, (Expect, AnswerTx, Output)>,
    sweep_at: usize,
}

impl Pending {
    /// Sends `ask` to the client under `id` (augmented with a task kept for `ttl`, if
    /// given) and files `reply` there.
    pub(crate) fn ask(&mut self, output: Output, id: RequestId, ask: Ask, ttl: Option<Duration>, reply: AnswerTx) {
        let (expect, frame) = client_tasks::encode(&id, ask, ttl);
        if output.send_vec(Kind::Request, frame).is_err() {
            let _ = reply.send(Err(McpError::internal("the connection to the client is closed")));
            return;
        }
        if self.waiting.len() >= self.sweep_at {
            self.waiting.retain(|_, (_, tx, _)| !tx.is_closed());
            self.sweep_at = (self.waiting.len() * 2).max(16);
        }
        self.waiting.insert(id, (expect, reply, output));
    }

    /// The waiter of `id` went away: forget it, and tell the client it need not answer.
    pub(crate) fn forget(&mut self, id: &RequestId) {
        if let Some((_, _, output)) = self.waiting.remove(id) {
            let params = CancelledNotificationParams::new(id.clone())
                .with_reason("the request that needed this input was cancelled or timed out");
            crate::request::sink::notify::<Cancelled>(&output, &params);
        }
    }

    /// The client answered `id`. Unknown ids (late or made up) are ignored.
    pub(crate) fn answer(&mut self, id: &RequestId, result: &RawValue) {
        let Some((expect, reply, _)) = self.waiting.remove(id) else { return };
        let _ = reply.send(client_tasks::decode(expect, result));
    }

    /// The client answered `id` with an error.
    pub(crate) fn fail(&mut self, id: Option<&RequestId>, error: ErrorObject) {
        let Some(id) = id else { return };
        if let Some((_, reply, _)) = self.waiting.remove(id) {
            let _ = reply.send(Err(McpError::from(error)));
        }
    }
}

//! Modern era (2026-07-28, MRTR): the `inputRequests` of an `input_required` result,
//! answered in the calling task, with the same checks as a legacy request.
//!
//! Every input request is admitted and checked first; only when all pass do the callbacks
//! run, one after the other in key order, each bounded by its kind's timeout and with
//! panics caught. The first failure ends the whole answer with a typed
//! [`InputHandlerError`] (the call then fails; nothing partial is sent). Not here: the
//! retry with `requestState` and the bound on rounds (the client core's call loop).
//!
//! Invariant: the returned map has exactly the keys of `input_requests`, each an encoded
//! result that passed the answer checks.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Map, Value};

use super::dispatch::{decode, Prepared};
use super::error::{Failure, InputHandlerError, InputKind};
use super::{CallLink, Era, HandlerRuntime};

impl HandlerRuntime {
    /// Answers the `inputRequests` of an `input_required` result and returns the
    /// `inputResponses` to retry with. `call` is the call being retried: its deadline is
    /// paused while callbacks run and its assigns reach them.
    pub async fn answer_inputs(
        &self,
        input_requests: &Map<String, Value>,
        call: Option<Arc<dyn CallLink>>,
    ) -> Result<Map<String, Value>, InputHandlerError> {
        let shared = &self.inner.shared;
        let code = shared.limits.sampling.rejection_code;
        let mut prepared = Vec::with_capacity(input_requests.len());
        for (key, request) in input_requests {
            let checked = self.prepare_input(request).map_err(|f| f.into_input_error(key, code))?;
            prepared.push((key, checked));
        }
        let mut responses = Map::new();
        for (key, checked) in prepared {
            let kind = checked.kind();
            let timeout = shared.timeout_for(kind);
            let ctx = shared.context(Era::Modern, call.as_ref());
            let run = AssertUnwindSafe(shared.answer(checked, ctx, call.clone())).catch_unwind();
            let answer = match tokio::time::timeout(timeout, run).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(panic)) => {
                    let message = panic_message(panic.as_ref());
                    tracing::error!(server = %shared.server_id, %key, %message, "client input handler panicked");
                    Err(Failure::Panicked(message))
                }
                Err(_) => Err(Failure::TimedOut(timeout)),
            };
            responses.insert(key.clone(), answer.map_err(|f| f.into_input_error(key, code))?);
        }
        Ok(responses)
    }

    fn prepare_input(&self, request: &Value) -> Result<Prepared, Failure> {
        let shared = &self.inner.shared;
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
        let kind = InputKind::from_method(method).ok_or_else(|| Failure::UnknownMethod(method.to_owned()))?;
        shared.admit(kind)?;
        let input = decode(kind, request.get("params").cloned())?;
        shared.prepare(input, false)
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

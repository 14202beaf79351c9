//! The era-neutral path of one input request: admit (declared capability, then the input
//! budget), decode, check (`safety/`), call the handler, check the answer, encode.
//!
//! Both eras run exactly this; they differ only in where it runs (a supervised task for
//! legacy, the calling task for modern), how timeouts and panics are caught, and how a
//! [`Failure`] is reported. This module never answers the server itself.
//!
//! Invariant: no callback runs for a request that failed admission or a check, and no
//! answer leaves without passing the answer checks.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitationMode, RequestedSchema};
use arbor_protocol::model::sampling::CreateMessageRequestParams;
use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use super::context::{ElicitationContext, FieldInfo, RequestContext, UrlTarget};
use super::erased::DynClientHandler;
use super::error::{Failure, InputKind};
use super::safety::rate::TokenBucket;
use super::safety::{elicitation, form, roots, sampling, Refusal};
use super::traits::{ElicitationHandler, RootsHandler, SamplingHandler};
use super::{Assigns, CallLink, ClientHandler, ClientLimits, Era};

/// How many client calls are in flight, as the connection counts them.
pub(crate) type InFlightProbe = Arc<dyn Fn() -> usize + Send + Sync>;

/// What the handler declared, read once at start: the single source of both the
/// advertised capabilities and the admission check.
#[derive(Clone, Debug, Default)]
pub(crate) struct Declared {
    pub(crate) sampling: bool,
    pub(crate) sampling_tools: bool,
    pub(crate) elicitation: Option<Vec<ElicitationMode>>,
    pub(crate) roots: bool,
    pub(crate) roots_list_changed: bool,
}

impl Declared {
    pub(crate) fn read(handler: &impl ClientHandler) -> Declared {
        let sampling = handler.sampling();
        let roots = handler.roots();
        Declared {
            sampling: sampling.is_some(),
            sampling_tools: sampling.is_some_and(|s| s.supports_tools()),
            elicitation: handler.elicitation().map(|e| {
                let mut modes = e.elicitation_modes();
                modes.dedup();
                modes
            }),
            roots: roots.is_some(),
            roots_list_changed: roots.is_some_and(|r| r.list_changed()),
        }
    }

    fn has(&self, kind: InputKind) -> bool {
        match kind {
            InputKind::Sampling => self.sampling,
            InputKind::Elicitation => self.elicitation.as_ref().is_some_and(|m| !m.is_empty()),
            InputKind::Roots => self.roots,
        }
    }
}

/// One input request, decoded.
#[allow(clippy::large_enum_variant)] // One per request, short-lived: boxing would only add an allocation.
pub(crate) enum Input {
    Sampling(CreateMessageRequestParams),
    Elicitation(ElicitRequestParams),
    Roots,
}

/// One input request that passed every check before the callback.
#[allow(clippy::large_enum_variant)] // As `Input`.
pub(crate) enum Prepared {
    Sampling(CreateMessageRequestParams),
    Elicitation {
        params: ElicitRequestParams,
        mode: ElicitationMode,
        schema: Option<RequestedSchema>,
        url: Option<UrlTarget>,
        fields: BTreeMap<String, FieldInfo>,
    },
    Roots,
}

impl Prepared {
    pub(crate) fn kind(&self) -> InputKind {
        match self {
            Prepared::Sampling(_) => InputKind::Sampling,
            Prepared::Elicitation { .. } => InputKind::Elicitation,
            Prepared::Roots => InputKind::Roots,
        }
    }
}

/// State every path of one runtime shares (the notification worker too).
pub(crate) struct Shared {
    pub(crate) handler: Arc<dyn DynClientHandler>,
    pub(crate) limits: ClientLimits,
    pub(crate) declared: Declared,
    pub(crate) client: Arc<str>,
    pub(crate) server_id: Arc<str>,
    pub(crate) client_assigns: Option<Assigns>,
    pub(crate) origin: RwLock<Option<String>>,
    pub(crate) era: RwLock<Option<Era>>,
    pub(crate) in_flight: RwLock<Option<InFlightProbe>>,
    pub(crate) input_bucket: Mutex<TokenBucket>,
    pub(crate) log_bucket: Mutex<TokenBucket>,
    pub(crate) dropped_notifications: AtomicU64,
    pub(crate) dropped_logs: AtomicU64,
}

impl Shared {
    /// The capability must be declared (checked first, so an undeclared request never
    /// costs budget), then the input budget must allow it.
    pub(crate) fn admit(&self, kind: InputKind) -> Result<(), Failure> {
        if !self.declared.has(kind) {
            return Err(Failure::Undeclared(kind));
        }
        let admitted = self.input_bucket.lock().try_take(tokio::time::Instant::now());
        if admitted {
            Ok(())
        } else {
            Err(Failure::RateLimited)
        }
    }

    /// Whether no client call is in flight (legacy idle-sampling check).
    pub(crate) fn idle(&self, has_call: bool) -> bool {
        match self.in_flight.read().as_ref() {
            Some(probe) => !has_call && probe() == 0,
            None => !has_call,
        }
    }

    /// The checks before the callback. `idle` is only ever true for legacy requests.
    pub(crate) fn prepare(&self, input: Input, idle: bool) -> Result<Prepared, Failure> {
        match input {
            Input::Sampling(mut params) => {
                sampling::check_idle(idle, &self.limits.sampling).map_err(Failure::Refused)?;
                sampling::check_request(&mut params, &self.limits.sampling, self.declared.sampling_tools)
                    .map_err(Failure::Refused)?;
                Ok(Prepared::Sampling(params))
            }
            Input::Elicitation(params) => {
                let declared = self.declared.elicitation.as_deref().unwrap_or(&[]);
                match &params {
                    ElicitRequestParams::Form(form_params) => {
                        elicitation::check_mode(ElicitationMode::Form, declared).map_err(Failure::Refused)?;
                        let fields = form::check_schema(&form_params.requested_schema).map_err(Failure::Refused)?;
                        let schema = Some(form_params.requested_schema.clone());
                        Ok(Prepared::Elicitation { params, mode: ElicitationMode::Form, schema, url: None, fields })
                    }
                    ElicitRequestParams::Url(url_params) => {
                        elicitation::check_mode(ElicitationMode::Url, declared).map_err(Failure::Refused)?;
                        let origin = self.origin.read().clone();
                        let origin = origin.or_else(|| self.limits.elicitation.origin.clone());
                        let target =
                            elicitation::check_url(&url_params.url, origin.as_deref()).map_err(Failure::Refused)?;
                        Ok(Prepared::Elicitation {
                            params,
                            mode: ElicitationMode::Url,
                            schema: None,
                            url: Some(target),
                            fields: BTreeMap::new(),
                        })
                    }
                }
            }
            Input::Roots => Ok(Prepared::Roots),
        }
    }

    /// How long the callback may run.
    pub(crate) fn timeout_for(&self, kind: InputKind) -> Duration {
        match kind {
            InputKind::Elicitation => self.limits.elicitation_timeout,
            InputKind::Sampling | InputKind::Roots => self.limits.handler_timeout,
        }
    }

    /// The callback's context: the related call's assigns, else the client's.
    pub(crate) fn context(&self, era: Era, call: Option<&Arc<dyn CallLink>>) -> RequestContext {
        RequestContext {
            client: self.client.clone(),
            server_id: self.server_id.clone(),
            era,
            assigns: call.and_then(|c| c.assigns()).or_else(|| self.client_assigns.clone()),
            related_request_id: match era {
                Era::Legacy => call.and_then(|c| c.request_id()),
                Era::Modern => None,
            },
        }
    }

    /// Calls the handler with the related call's deadline paused, checks the answer and
    /// encodes it (without `resultType`: neither a legacy answer nor an MRTR input
    /// response carries one).
    pub(crate) async fn answer(
        &self,
        prepared: Prepared,
        ctx: RequestContext,
        call: Option<Arc<dyn CallLink>>,
    ) -> Result<Value, Failure> {
        let _paused = call.as_ref().map(|c| c.pause_deadline());
        let kind = prepared.kind();
        let undeclared = || Failure::Undeclared(kind);
        let encoded = match prepared {
            Prepared::Sampling(params) => {
                let answer = self.handler.sample(params, &ctx).ok_or_else(undeclared)?;
                let mut result = answer.await.map_err(Failure::Handler)?;
                result.result_type = None;
                serde_json::to_value(result)
            }
            Prepared::Elicitation { params, mode, schema, url, fields } => {
                let ctx = ElicitationContext { request: ctx, mode, url, fields };
                let answer = self.handler.elicit(params, &ctx).ok_or_else(undeclared)?;
                let mut result = answer.await.map_err(Failure::Handler)?;
                form::check_answer(&mut result, mode, schema.as_ref()).map_err(Failure::Refused)?;
                result.result_type = None;
                serde_json::to_value(result)
            }
            Prepared::Roots => {
                let answer = self.handler.list_roots(&ctx).ok_or_else(undeclared)?;
                let mut result = answer.await.map_err(Failure::Handler)?;
                roots::check_answer(&mut result);
                result.result_type = None;
                serde_json::to_value(result)
            }
        };
        encoded.map_err(|e| Failure::Refused(Refusal::InvalidAnswer(e.to_string())))
    }
}

/// Decodes a request's params into the kind's typed params (-32602 when they do not fit).
pub(crate) fn decode(kind: InputKind, params: Option<Value>) -> Result<Input, Failure> {
    let invalid =
        |e: serde_json::Error| Failure::Refused(Refusal::InvalidParams(format!("Invalid params for {kind}: {e}")));
    match kind {
        InputKind::Sampling => {
            serde_json::from_value(params.unwrap_or(Value::Null)).map(Input::Sampling).map_err(invalid)
        }
        InputKind::Elicitation => {
            serde_json::from_value(params.unwrap_or(Value::Null)).map(Input::Elicitation).map_err(invalid)
        }
        // roots/list has no params of its own; only `_meta`, which the handler does not need.
        InputKind::Roots => Ok(Input::Roots),
    }
}

//! A configurable test handler, a test `CallLink`, and a collector of response frames.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_client::handler::{
    Assigns, CallLink, ClientHandler, ClientLimits, ElicitationContext, ElicitationHandler, HandlerRuntime,
    NotificationContext, RequestContext, RootsHandler, SamplingHandler, UrlTarget,
};
use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitResult, ElicitationMode};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::roots::ListRootsResult;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, CreateMessageResult};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, Semaphore};

/// Where the test handler reports notifications and logs.
pub type Notes = mpsc::UnboundedSender<(String, Map<String, Value>)>;

/// What a callback does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behave {
    /// Answers at once.
    Answer,
    /// Waits for a permit of the gate, then answers.
    Gated,
    /// Never answers.
    Pend,
    /// Panics.
    Panic,
    /// Returns an error.
    Fail,
}

/// What a callback saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub kind: &'static str,
    pub params: Value,
    pub assigns: Option<Assigns>,
    pub related: Option<RequestId>,
    pub paused: usize,
    pub url: Option<UrlTarget>,
    pub sensitive: Vec<String>,
}

/// A handler whose declarations and behaviour the test sets.
pub struct TestHandler {
    pub sampling: bool,
    pub elicitation: Option<Vec<ElicitationMode>>,
    pub roots: bool,
    pub behave: Mutex<Behave>,
    pub gate: Arc<Semaphore>,
    pub calls: AtomicUsize,
    /// Callbacks whose future was dropped before finishing (stopped tasks).
    pub abandoned: Arc<AtomicUsize>,
    pub seen: Mutex<Vec<Seen>>,
    pub elicit_answer: Mutex<Value>,
    pub roots_answer: Mutex<Value>,
    /// The link whose pauses callbacks report.
    pub link: Mutex<Option<Arc<TestLink>>>,
    /// Notifications and logs, in the order the worker delivered them.
    pub notes: Notes,
}

impl TestHandler {
    pub fn new(notes: Notes) -> Self {
        TestHandler {
            sampling: false,
            elicitation: None,
            roots: false,
            behave: Mutex::new(Behave::Answer),
            gate: Arc::new(Semaphore::new(0)),
            calls: AtomicUsize::new(0),
            abandoned: Arc::new(AtomicUsize::new(0)),
            seen: Mutex::new(Vec::new()),
            elicit_answer: Mutex::new(json!({"action": "accept", "content": {"name": "octocat"}})),
            roots_answer: Mutex::new(json!({"roots": [{"uri": "file:///work/./repo", "name": "repo"}]})),
            link: Mutex::new(None),
            notes,
        }
    }

    pub fn all(notes: Notes) -> Self {
        TestHandler {
            sampling: true,
            elicitation: Some(vec![ElicitationMode::Form, ElicitationMode::Url]),
            roots: true,
            ..TestHandler::new(notes)
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    /// Records the call, then behaves as told. Returns normally when it should answer.
    async fn act(
        &self,
        kind: &'static str,
        params: Value,
        ctx: &RequestContext,
        url: Option<UrlTarget>,
        sensitive: Vec<String>,
    ) -> Result<(), McpError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let paused = self.link.lock().as_ref().map_or(0, |l| l.paused.load(Ordering::SeqCst));
        self.seen.lock().push(Seen {
            kind,
            params,
            assigns: ctx.assigns.clone(),
            related: ctx.related_request_id.clone(),
            paused,
            url,
            sensitive,
        });
        let behave = *self.behave.lock();
        let guard = Abandon(Some(self.abandoned.clone()));
        match behave {
            Behave::Answer => {}
            Behave::Gated => self.gate.acquire().await.expect("gate").forget(),
            Behave::Pend => futures::future::pending::<()>().await,
            Behave::Panic => panic!("handler blew up"),
            Behave::Fail => return Err(McpError::Other { code: -42, message: "user said no".into(), data: None }),
        }
        guard.finish();
        Ok(())
    }
}

/// Counts a callback future dropped before it finished.
struct Abandon(Option<Arc<AtomicUsize>>);

impl Abandon {
    fn finish(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(count) = self.0.take() {
            count.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl SamplingHandler for TestHandler {
    async fn handle_sampling(
        &self,
        params: CreateMessageRequestParams,
        ctx: &RequestContext,
    ) -> Result<CreateMessageResult, McpError> {
        self.act("sampling", serde_json::to_value(&params).unwrap(), ctx, None, vec![]).await?;
        Ok(serde_json::from_value(json!({
            "role": "assistant", "content": {"type": "text", "text": "The capital of France is Paris."},
            "model": "test-model", "stopReason": "endTurn", "resultType": "complete"
        }))
        .unwrap())
    }
}

impl ElicitationHandler for TestHandler {
    fn elicitation_modes(&self) -> Vec<ElicitationMode> {
        self.elicitation.clone().unwrap_or_default()
    }

    async fn handle_elicitation(
        &self,
        params: ElicitRequestParams,
        ctx: &ElicitationContext,
    ) -> Result<ElicitResult, McpError> {
        let sensitive = ctx.fields.iter().filter(|(_, f)| f.sensitive_suspected).map(|(n, _)| n.clone()).collect();
        self.act("elicitation", serde_json::to_value(&params).unwrap(), ctx, ctx.url.clone(), sensitive).await?;
        Ok(serde_json::from_value(self.elicit_answer.lock().clone()).unwrap())
    }
}

impl RootsHandler for TestHandler {
    async fn list_roots(&self, ctx: &RequestContext) -> Result<ListRootsResult, McpError> {
        self.act("roots", Value::Null, ctx, None, vec![]).await?;
        Ok(serde_json::from_value(self.roots_answer.lock().clone()).unwrap())
    }
}

impl ClientHandler for TestHandler {
    fn sampling(&self) -> Option<&impl SamplingHandler> {
        self.sampling.then_some(self)
    }

    fn elicitation(&self) -> Option<&impl ElicitationHandler> {
        self.elicitation.is_some().then_some(self)
    }

    fn roots(&self) -> Option<&impl RootsHandler> {
        self.roots.then_some(self)
    }

    async fn handle_notification(&self, method: &str, params: &Map<String, Value>, ctx: &NotificationContext) {
        if method == "test/ctx" {
            let seen = json!({"client": &*ctx.client, "server": &*ctx.server_id, "era": format!("{:?}", ctx.era)});
            let _ = self.notes.send((method.to_owned(), seen.as_object().unwrap().clone()));
            return;
        }
        if method == "test/boom" {
            panic!("notification handler blew up");
        }
        if method == "test/gated" {
            let _ = self.notes.send((method.to_owned(), params.clone()));
            self.gate.acquire().await.expect("gate").forget();
            return;
        }
        let _ = self.notes.send((method.to_owned(), params.clone()));
    }

    async fn handle_log(&self, level: LoggingLevel, params: &Map<String, Value>, _ctx: &NotificationContext) {
        let mut params = params.clone();
        params.insert("seenLevel".into(), serde_json::to_value(level).unwrap());
        let _ = self.notes.send(("log".to_owned(), params));
    }
}

/// A call link that counts active pauses.
pub struct TestLink {
    pub paused: Arc<AtomicUsize>,
    pub pauses: AtomicUsize,
    pub assigns: Assigns,
    pub id: RequestId,
}

impl TestLink {
    pub fn new(id: i64) -> Arc<TestLink> {
        let mut assigns = Map::new();
        assigns.insert("user".into(), json!("alice"));
        Arc::new(TestLink {
            paused: Arc::default(),
            pauses: AtomicUsize::new(0),
            assigns: Arc::new(assigns),
            id: id.into(),
        })
    }
}

struct Unpause(Arc<AtomicUsize>);

impl Drop for Unpause {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl CallLink for TestLink {
    fn pause_deadline(&self) -> Box<dyn std::any::Any + Send> {
        self.pauses.fetch_add(1, Ordering::SeqCst);
        self.paused.fetch_add(1, Ordering::SeqCst);
        Box::new(Unpause(self.paused.clone()))
    }

    fn assigns(&self) -> Option<Assigns> {
        Some(self.assigns.clone())
    }

    fn request_id(&self) -> Option<RequestId> {
        Some(self.id.clone())
    }
}

/// Response frames, parsed, in the order `respond` was called.
pub struct Frames {
    tx: mpsc::UnboundedSender<Value>,
    rx: mpsc::UnboundedReceiver<Value>,
}

impl Frames {
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Frames { tx, rx }
    }

    pub fn responder(&self) -> Box<dyn FnOnce(Vec<u8>) + Send> {
        let tx = self.tx.clone();
        Box::new(move |frame| {
            let _ = tx.send(serde_json::from_slice(&frame).expect("a JSON frame"));
        })
    }

    /// The next frame; the paused clock lets any pending deadline fire first.
    pub async fn next(&mut self) -> Value {
        self.rx.recv().await.expect("a frame")
    }

    /// A frame already sent, if any.
    pub fn try_next(&mut self) -> Option<Value> {
        self.rx.try_recv().ok()
    }
}

pub struct Rig {
    pub handler: Arc<TestHandler>,
    pub runtime: HandlerRuntime,
    pub frames: Frames,
    pub notes: mpsc::UnboundedReceiver<(String, Map<String, Value>)>,
}

/// A runtime over a handler built by `make`, with `limits`.
pub async fn rig(make: impl FnOnce(Notes) -> TestHandler, limits: ClientLimits) -> Rig {
    let (tx, notes) = mpsc::unbounded_channel();
    let handler = Arc::new(make(tx));
    let mut client_assigns = Map::new();
    client_assigns.insert("client".into(), json!(true));
    let runtime = HandlerRuntime::new(
        handler.clone(),
        limits,
        "srv-1".into(),
        "test-client".into(),
        Some(Arc::new(client_assigns)),
    )
    .await
    .expect("runtime starts");
    Rig { handler, runtime, frames: Frames::new(), notes }
}

/// Params of a small sampling request.
pub fn sampling_params() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}], "maxTokens": 100})
}

/// Params of a small form elicitation.
pub fn form_params() -> Value {
    json!({"mode": "form", "message": "Please provide your GitHub username",
           "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}})
}

/// The error code of an error frame for `id`.
pub fn error_code(frame: &Value, id: i64) -> i64 {
    assert_eq!(frame["id"], json!(id), "frame {frame}");
    frame["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {frame}"))
}

//! The Streamable HTTP link (reqwest): one POST per message, answered with JSON or an SSE
//! stream; the legacy session (`Mcp-Session-Id`, `MCP-Protocol-Version`, the standalone
//! GET stream, DELETE on close, 404 = session expired) and the modern headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`).
//!
//! Each request's POST runs in its own task, which feeds what arrives on its response
//! stream to `Shared::inbound` tagged with the request's id, so a legacy server request
//! on that stream is tied to the right call. Aborting the task closes the stream, which
//! is how a modern HTTP request is cancelled. It does not decide the era (it is told per
//! request) and does not retry a request; it does resume a legacy response stream that
//! ended before its answer (SEP-1699: after the server's `retry` delay, a GET with
//! `Last-Event-ID`), since that is the same response, not a new request.
//! Invariant: a request's task completes its pending entry one way or another (answer,
//! HTTP error, stream ended early), so no caller waits on a finished POST.

use std::sync::Arc;

use arbor_protocol::era::http::{
    encode_header_text, encode_header_value, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER,
};
use arbor_protocol::methods::MethodName;
use arbor_protocol::version::{Feature, ProtocolVersion};
use futures::StreamExt;
use parking_lot::Mutex;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode};

use crate::auth::flow::{Refusal, Retry, MAX_NONCE_RETRIES};
use crate::auth::Authorizer;
use serde_json::Value;
use tokio::task::AbortHandle;

use super::sse::SseParser;
use super::Origin;
use crate::connection::Event;
use crate::error::{ClientError, ConnectError, OpenError, TransportError};
use crate::shared::{Failure, Shared};
use crate::target::HttpTarget;

/// The header carrying the legacy session id.
const SESSION_HEADER: &str = "Mcp-Session-Id";

/// The SSE resumption header.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The reconnection delay when the server gave no `retry`.
const DEFAULT_RETRY: std::time::Duration = std::time::Duration::from_millis(500);
/// How long connecting waits for the server to answer the standalone GET.
const STANDALONE_READY: std::time::Duration = std::time::Duration::from_secs(5);

/// The bound on resumptions of one response stream.
const MAX_RESUMES: usize = 16;

/// Where to resume an SSE stream: after `last_id`, once `retry_ms` have passed.
#[derive(Debug)]
struct Resume {
    last_id: String,
    retry_ms: Option<u64>,
}

impl Resume {
    fn delay(&self) -> std::time::Duration {
        self.retry_ms.map_or(DEFAULT_RETRY, std::time::Duration::from_millis)
    }
}

#[derive(Debug)]
pub(crate) struct HttpLink {
    client: reqwest::Client,
    url: reqwest::Url,
    extra: HeaderMap,
    session_id: Mutex<Option<String>>,
    /// The negotiated legacy version, once `initialize` was answered.
    legacy_version: Mutex<Option<ProtocolVersion>>,
    standalone: Mutex<Option<AbortHandle>>,
    /// OAuth, when the target asked for it.
    auth: Option<Arc<Authorizer>>,
    pub(crate) generation: u64,
}

impl HttpLink {
    pub(crate) fn open(target: &HttpTarget, generation: u64) -> Result<Arc<HttpLink>, ConnectError> {
        let url = reqwest::Url::parse(&target.url).map_err(|e| ConnectError::Transport(OpenError::Url(e)))?;
        let mut extra = HeaderMap::new();
        for (name, value) in &target.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| header_error(name))?;
            let value = HeaderValue::from_str(value).map_err(|_| header_error(name.as_str()))?;
            extra.append(name, value);
        }
        let client =
            reqwest::Client::builder().build().map_err(|e| ConnectError::Transport(OpenError::HttpClient(e)))?;
        Ok(Arc::new(HttpLink {
            client,
            url,
            extra,
            session_id: Mutex::new(None),
            legacy_version: Mutex::new(None),
            standalone: Mutex::new(None),
            auth: target.oauth.clone().map(|o| Arc::new(Authorizer::new(*o, &target.url))),
            generation,
        }))
    }

    /// The server's origin (`scheme://host[:port]`), for elicitation URL checks.
    pub(crate) fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    pub(crate) fn set_legacy_version(&self, version: Option<ProtocolVersion>) {
        *self.legacy_version.lock() = version;
    }

    pub(crate) fn has_session(&self) -> bool {
        self.session_id.lock().is_some()
    }

    pub(crate) fn forget_session(&self) {
        *self.session_id.lock() = None;
        *self.legacy_version.lock() = None;
        if let Some(s) = self.standalone.lock().take() {
            s.abort();
        }
    }

    fn base_headers(&self, modern: bool) -> HeaderMap {
        let mut h = self.extra.clone();
        h.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if modern {
            h.insert(PROTOCOL_VERSION_HEADER, HeaderValue::from_static(ProtocolVersion::LATEST.as_str()));
            return h;
        }
        if let Some(id) = self.session_id.lock().as_deref() {
            if let Ok(v) = HeaderValue::from_str(id) {
                h.insert(SESSION_HEADER, v);
            }
        }
        if let Some(v) = *self.legacy_version.lock() {
            if v.supports(Feature::ProtocolVersionHeader) {
                h.insert(PROTOCOL_VERSION_HEADER, HeaderValue::from_static(v.as_str()));
            }
        }
        h
    }

    /// The modern per-request headers: method, name, annotated arguments.
    fn modern_headers(&self, shared: &Shared, h: &mut HeaderMap, method: MethodName, params: &Value) {
        h.insert(METHOD_HEADER, HeaderValue::from_static(method.as_str()));
        let name = match method {
            MethodName::CallTool | MethodName::GetPrompt => params.get("name"),
            MethodName::ReadResource => params.get("uri"),
            // The tasks extension (SEP-2663): the task a request names.
            MethodName::GetTask | MethodName::UpdateTask | MethodName::CancelTask => params.get("taskId"),
            _ => None,
        };
        if let Some(v) = name.and_then(Value::as_str).and_then(|n| HeaderValue::from_str(&encode_header_text(n)).ok()) {
            h.insert(NAME_HEADER, v);
        }
        if method != MethodName::CallTool {
            return;
        }
        let Some(tool) = params.get("name").and_then(Value::as_str) else { return };
        let Some(annotations) = shared.param_headers.lock().get(tool).cloned() else { return };
        let Some(arguments) = params.get("arguments") else { return };
        for a in annotations.iter() {
            let value = a.value_in(arguments).and_then(encode_header_value);
            if let (Some(value), Ok(name)) = (value, HeaderName::from_bytes(a.header_name().as_bytes())) {
                if let Ok(value) = HeaderValue::from_str(&value) {
                    h.insert(name, value);
                }
            }
        }
    }

    /// POSTs a request; its answer (and what comes before it) goes to `Shared::inbound`.
    pub(crate) fn start_request(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        id: i64,
        method: MethodName,
        params: &Value,
        modern: bool,
        frame: Vec<u8>,
    ) {
        let mut headers = self.base_headers(modern);
        if modern {
            self.modern_headers(shared, &mut headers, method, params);
        }
        let (link, shared2) = (self.clone(), shared.clone());
        let task = tokio::spawn(async move { link.run_request(&shared2, id, method, headers, frame).await });
        let abort = task.abort_handle();
        match shared.pending.lock().get_mut(&id) {
            Some(p) if modern => p.abort = Some(abort),
            // Legacy: a disconnect is not a cancel, and the task ends with its stream.
            _ => {}
        }
    }

    async fn run_request(&self, shared: &Arc<Shared>, id: i64, method: MethodName, headers: HeaderMap, frame: Vec<u8>) {
        let modern = headers.contains_key(METHOD_HEADER);
        let frame = bytes::Bytes::from(frame);
        let (mut authorizations, mut nonces) = (0, 0);
        let response = loop {
            let mut headers = headers.clone();
            let sent_token = self.authorize(&mut headers, "POST").await;
            let sent = self.client.post(self.url.clone()).headers(headers).body(frame.clone()).send().await;
            let response = match sent {
                Ok(r) => r,
                Err(e) => {
                    let failure = Failure::Transport(TransportError::Http(Arc::new(e)));
                    shared.complete(id, crate::shared::Reply::Failed(failure));
                    return;
                }
            };
            if let Some(auth) = &self.auth {
                auth.observe(response.headers());
            }
            let refused = matches!(response.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
            let Some(auth) = self.auth.as_ref().filter(|_| refused) else { break response };
            let failure = if nonces == MAX_NONCE_RETRIES {
                crate::auth::OAuthError::Dpop(format!("the server refused {nonces} DPoP nonces in a row"))
            } else if authorizations == auth.max_authorizations() {
                crate::auth::OAuthError::RetryLimit(authorizations)
            } else {
                let challenges = response
                    .headers()
                    .get_all(reqwest::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect();
                let nonce = crate::auth::flow::dpop_nonce(response.headers());
                let refusal = Refusal { status: response.status().as_u16(), challenges, sent: sent_token, nonce };
                match auth.answer(refusal).await {
                    Ok(Retry::Authorized) => {
                        authorizations += 1;
                        continue;
                    }
                    Ok(Retry::Nonce) => {
                        nonces += 1;
                        continue;
                    }
                    Err(e) => e,
                }
            };
            tracing::debug!(error = %failure, "authorization failed");
            shared.complete(id, crate::shared::Reply::Failed(Failure::Transport(TransportError::Auth(failure))));
            return;
        };
        let status = response.status();
        if method == MethodName::Initialize {
            if let Some(sid) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
                *self.session_id.lock() = Some(sid.to_owned());
            }
        }
        if status == StatusCode::NOT_FOUND && self.has_session() {
            shared.complete(id, crate::shared::Reply::Failed(Failure::SessionExpired));
            shared.event(Event::SessionExpired { generation: self.generation });
            return;
        }
        let mut resume = self.read_body(shared, response, Origin::Post(id), None).await;
        // SEP-1699 (legacy): a stream that ended gracefully after giving an event id may be
        // resumed with a GET carrying `Last-Event-ID`, after the server's `retry` delay.
        let mut attempts = 0;
        while let Some(at) = resume.take().filter(|_| status.is_success() && !modern && self.waiting(shared, id)) {
            if attempts == MAX_RESUMES {
                break;
            }
            attempts += 1;
            tokio::time::sleep(at.delay()).await;
            if !self.waiting(shared, id) {
                return;
            }
            let Some(response) = self.resume_stream(&at.last_id).await else { break };
            resume = self.read_body(shared, response, Origin::Post(id), Some(at)).await;
        }
        // Whatever the stream held, the request is over: a missing answer is an error.
        let why = if status.is_success() {
            TransportError::NoAnswer(status.as_u16())
        } else {
            TransportError::Status(status.as_u16())
        };
        shared.complete(id, crate::shared::Reply::Failed(Failure::Transport(why)));
    }

    /// Puts the credential for a `method` request into `headers` (OAuth on and a token
    /// held): the bearer, or the DPoP-bound token and its proof; says which token.
    async fn authorize(&self, headers: &mut HeaderMap, method: &str) -> Option<String> {
        let credential = self.auth.as_ref()?.credential(method).await?;
        headers.insert(reqwest::header::AUTHORIZATION, HeaderValue::from_str(&credential.authorization).ok()?);
        if let Some(proof) = credential.proof.and_then(|p| HeaderValue::from_str(&p).ok()) {
            headers.insert(HeaderName::from_static("dpop"), proof);
        }
        Some(credential.token)
    }

    /// Sends a request other than a call (a GET stream, a notification or response, the
    /// DELETE) with the credential for its method, once more when the server asks for a
    /// new DPoP nonce (RFC 9449 §9). A refusal otherwise is the caller's to read: only a
    /// call may set off an authorization.
    async fn send_authorized(
        &self,
        method: reqwest::Method,
        headers: HeaderMap,
        body: Option<bytes::Bytes>,
    ) -> reqwest::Result<Response> {
        let mut retried = false;
        loop {
            let mut h = headers.clone();
            self.authorize(&mut h, method.as_str()).await;
            let mut request = self.client.request(method.clone(), self.url.clone()).headers(h);
            if let Some(body) = &body {
                request = request.body(body.clone());
            }
            let response = request.send().await?;
            let Some(auth) = &self.auth else { return Ok(response) };
            auth.observe(response.headers());
            if !retried && crate::auth::flow::asks_nonce(response.status().as_u16(), response.headers()) {
                retried = true;
                continue;
            }
            return Ok(response);
        }
    }

    /// Whether request `id` still waits for its answer.
    fn waiting(&self, shared: &Shared, id: i64) -> bool {
        shared.pending.lock().contains_key(&id)
    }

    /// Feeds a response body (JSON or SSE) to the dispatcher. For an SSE stream, returns
    /// where to resume it (its last event id and retry delay, carried over from `before`
    /// when this stream gave none), if it gave an event id.
    async fn read_body(
        &self,
        shared: &Arc<Shared>,
        response: Response,
        origin: Origin,
        before: Option<Resume>,
    ) -> Option<Resume> {
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
        if sse {
            let mut parser = SseParser::default();
            let mut body = response.bytes_stream();
            while let Some(chunk) = body.next().await {
                let Ok(chunk) = chunk else { break };
                let events = parser.feed(&chunk);
                // Skipped events are counted before the chunk's events are handed on: an
                // oversized event ahead of an answer is counted before that answer ends
                // its call (counted after, a caller reading the count on its answer could
                // miss it).
                for _ in 0..parser.take_oversized() {
                    shared.count_malformed(
                        "event",
                        &format_args!("an SSE event over {MAX_FRAME_BYTES} bytes was skipped"),
                    );
                }
                for data in events {
                    shared.inbound(&data, origin);
                }
            }
            let retry_ms = parser.retry_ms().or(before.as_ref().and_then(|b| b.retry_ms));
            return match parser.last_event_id() {
                Some(last) => Some(Resume { last_id: last.to_owned(), retry_ms }),
                None => before.map(|b| Resume { retry_ms, ..b }),
            };
        } else if let Some(bytes) = capped_body(shared, response).await {
            if !bytes.iter().all(u8::is_ascii_whitespace) {
                shared.inbound(&bytes, origin);
            }
        }
        None
    }

    /// GETs the stream again from after `last_id`; `None` when the server will not.
    async fn resume_stream(&self, last_id: &str) -> Option<Response> {
        let mut headers = self.base_headers(false);
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.remove(CONTENT_TYPE);
        headers.insert(LAST_EVENT_ID, HeaderValue::from_str(last_id).ok()?);
        let response = self.send_authorized(reqwest::Method::GET, headers, None).await.ok()?;
        response.status().is_success().then_some(response)
    }

    /// POSTs a notification or a response; the server answers 202.
    pub(crate) async fn post_message(&self, shared: &Arc<Shared>, frame: Vec<u8>) -> Result<(), ClientError> {
        let modern = shared.era() == Some(arbor_protocol::version::Era::Modern);
        let mut headers = self.base_headers(modern);
        if modern {
            if let Ok(v) = serde_json::from_slice::<Value>(&frame) {
                if let Some(m) = v.get("method").and_then(Value::as_str).and_then(MethodName::parse) {
                    headers.insert(METHOD_HEADER, HeaderValue::from_static(m.as_str()));
                }
            }
        }
        let response = self
            .send_authorized(reqwest::Method::POST, headers, Some(frame.into()))
            .await
            .map_err(|e| ClientError::Transport(TransportError::Http(Arc::new(e))))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(ClientError::Transport(TransportError::Status(response.status().as_u16())))
        }
    }

    /// Opens the legacy standalone GET stream, for server messages not tied to a request,
    /// and returns once the server has answered the first GET (or `STANDALONE_READY` has
    /// passed): the stream is in place before the first call, so a server never mistakes
    /// it for the resumption of a call's stream, and nothing it sends early is missed.
    pub(crate) async fn open_standalone(self: &Arc<Self>, shared: &Arc<Shared>) {
        let (link, shared) = (self.clone(), shared.clone());
        let (ready_tx, ready) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut ready_tx = Some(ready_tx);
            let mut failures = 0;
            let mut resume: Option<Resume> = None;
            while failures < 3 {
                let mut headers = link.base_headers(false);
                headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
                headers.remove(CONTENT_TYPE);
                if let Some(v) = resume.as_ref().and_then(|r| HeaderValue::from_str(&r.last_id).ok()) {
                    headers.insert(LAST_EVENT_ID, v);
                }
                let sent = link.send_authorized(reqwest::Method::GET, headers, None).await;
                // Answered, one way or the other: the caller may go on.
                ready_tx.take().map(|tx| tx.send(()));
                let response = match sent {
                    Ok(r) => r,
                    Err(_) => {
                        failures += 1;
                        continue;
                    }
                };
                // 405: the server offers no standalone stream, which is allowed.
                if !response.status().is_success() {
                    return;
                }
                failures = 0;
                resume = link.read_body(&shared, response, Origin::Standalone, resume.take()).await;
                tokio::time::sleep(resume.as_ref().map_or(DEFAULT_RETRY, Resume::delay)).await;
                failures += 1;
            }
        });
        if let Some(old) = self.standalone.lock().replace(task.abort_handle()) {
            old.abort();
        }
        let _ = tokio::time::timeout(STANDALONE_READY, ready).await;
    }

    /// Ends the legacy session: stops the standalone stream and sends DELETE.
    pub(crate) async fn close(&self) {
        if let Some(s) = self.standalone.lock().take() {
            s.abort();
        }
        let sid = self.session_id.lock().take();
        if let Some(sid) = sid {
            let mut headers = self.extra.clone();
            if let Ok(v) = HeaderValue::from_str(&sid) {
                headers.insert(SESSION_HEADER, v);
            }
            let delete = self.send_authorized(reqwest::Method::DELETE, headers, None);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), delete).await;
        }
    }
}

/// A configured header that is not valid HTTP: named, its value never shown.
fn header_error(name: &str) -> ConnectError {
    ConnectError::Transport(OpenError::Header { name: name.to_owned() })
}

/// The most bytes one message may take over HTTP (a JSON body, an SSE event's data): the
/// transport's frame cap, as over stdio, so a server cannot make the client buffer more.
const MAX_FRAME_BYTES: usize = arbor_transport::DEFAULT_MAX_FRAME_BYTES;

/// A JSON body read up to [`MAX_FRAME_BYTES`]; past it the rest is not read (the
/// connection goes with the response), the message is counted as malformed and `None`
/// returned, as a frame over the cap is on stdio. `None` too when the body breaks off.
async fn capped_body(shared: &Shared, response: Response) -> Option<bytes::Bytes> {
    let mut body = response.bytes_stream();
    let mut bytes = bytes::BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.ok()?;
        if bytes.len() + chunk.len() > MAX_FRAME_BYTES {
            shared.count_malformed("body", &format_args!("a body over {MAX_FRAME_BYTES} bytes was skipped"));
            return None;
        }
        bytes.extend_from_slice(&chunk);
    }
    Some(bytes.freeze())
}

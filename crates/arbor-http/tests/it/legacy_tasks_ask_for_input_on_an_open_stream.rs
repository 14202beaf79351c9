//! Input during a 2025-11-25 task over Streamable HTTP, once the `tools/call` that created
//! the task has been answered: the server's `elicitation/create` (with the `related-task`
//! `_meta`) goes on the stream of a `tasks/result` blocked on the task when one is open,
//! else on the session's GET stream while one is read, else it waits (the task
//! `input_required`) for either; the answer, POSTed on its own, resumes the task.

use std::sync::Arc;

use arbor_http::{HttpConfig, HttpServer, ShutdownHandle};
use arbor_protocol::model::content::ContentBlock;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::tasks::TaskConfig;
use arbor_server::{InputRequired, Reply, RequestContext, Router, Server, ServerConfig, TaskSupport};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::support::{until_async, SseReader, PATIENCE};

const V: &str = "2025-11-25";
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// A server whose task-supporting `ask` asks for a name once `gate` lets it, then greets.
struct Served {
    url: String,
    client: reqwest::Client,
    gate: Arc<Semaphore>,
    stop: ShutdownHandle,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve() -> Served {
    let gate = Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let router = Router::new("legacy-task-input", "1").tool_route(
        ToolRoute::new("ask", move |_: NoArgs, cx: RequestContext| {
            let gate = held.clone();
            async move {
                if let Some(InputResponse::Elicit(reply)) = cx.input_responses().and_then(|r| r.get("name")) {
                    let name = reply.content.as_ref().and_then(|c| c.get("name")).and_then(|n| n.as_str());
                    let text = format!("hello {}", name.unwrap_or("?"));
                    return Reply::Complete(CallToolResult::new(vec![ContentBlock::text(text)]));
                }
                gate.acquire().await.expect("the gate stays open").forget();
                let params = serde_json::from_value(json!({"message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .unwrap();
                Reply::InputRequired(InputRequired::new().elicit("name", params))
            }
        })
        .task_support(TaskSupport::Optional),
    );
    let server = Server::with_config(router, ServerConfig::default().tasks(TaskConfig::default()));
    // A POST waiting longer than this answers with an SSE stream (primed, for 2025-11-25).
    let config = HttpConfig { json_wait: std::time::Duration::from_millis(200), ..HttpConfig::default() }
        .bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::with_config(server, config).bind().await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let stop = bound.shutdown_handle();
    let run = tokio::spawn(bound.run());
    let client = reqwest::Client::builder().timeout(PATIENCE).build().unwrap();
    Served { url, client, gate, stop, run }
}

impl Served {
    async fn post(&self, session: Option<&str>, body: Value) -> reqwest::Response {
        let mut request = tests::peer::http::post(&self.client, &self.url, &body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", V);
        }
        request.send().await.unwrap()
    }

    /// A session declaring elicitation; its id.
    async fn initialize(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": V, "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "it", "version": "1"}}});
        let response = self.post(None, init).await;
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&session), initialized).await.status(), 202);
        session
    }

    async fn call(&self, session: &str, id: i64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(Some(session), body).await;
        assert_eq!(response.status(), 200);
        if response.headers()["content-type"] == "application/json" {
            return response.json().await.unwrap();
        }
        let mut events = SseReader::new(response);
        loop {
            let message = events.next_data().await.json();
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    /// Starts `ask` as a task; its id.
    async fn start(&self, session: &str) -> String {
        let call = json!({"name": "ask", "arguments": {}, "task": {"ttl": 60_000}});
        let created = self.call(session, 2, "tools/call", call).await;
        created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task in {created}")).to_owned()
    }

    /// POSTs the client's answer to `question`: accepted with 202.
    async fn answer(&self, session: &str, question: &Value, name: &str) {
        let answer = json!({"jsonrpc": "2.0", "id": question["id"],
            "result": {"action": "accept", "content": {"name": name}}});
        assert_eq!(self.post(Some(session), answer).await.status(), 202);
    }

    async fn finish(self) {
        self.stop.shutdown();
        let ran = tokio::time::timeout(PATIENCE, self.run).await.expect("shutdown finished in time");
        ran.unwrap().unwrap();
    }
}

fn assert_asks_for(question: &Value, task: &str) {
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["_meta"][RELATED], json!({"taskId": task}), "{question}");
}

#[tokio::test]
async fn the_elicitation_goes_on_the_stream_of_the_blocked_tasks_result_and_its_answer_resumes_the_task() {
    let s = serve().await;
    let session = s.initialize().await;
    let task = s.start(&session).await;

    // No GET stream: the client blocks in tasks/result. Its POST turns into a primed SSE
    // stream after `json_wait`, by when the request is waiting; then the tool asks.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task}});
    let response = s.post(Some(&session), body).await;
    assert_eq!(response.status(), 200);
    let mut events = SseReader::new(response);
    s.gate.add_permits(1);
    let question = events.next_data().await.json();
    assert_asks_for(&question, &task);
    s.answer(&session, &question, "Ada").await;
    let result = events.next_data().await.json();
    assert_eq!(result["id"], 3, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "hello Ada", "{result}");
    assert_eq!(result["result"]["_meta"][RELATED], json!({"taskId": task}));
    s.finish().await;
}

/// The spec's flow: the client polls, sees `input_required`, and only then opens
/// `tasks/result`; with no GET stream read meanwhile, the request waited for that stream.
#[tokio::test]
async fn a_client_that_opens_tasks_result_on_seeing_input_required_gets_the_elicitation_there() {
    let s = serve().await;
    s.gate.add_permits(1);
    let session = s.initialize().await;
    let task = s.start(&session).await;
    let mut n = 2;
    until_async("the task waits for input", || {
        n += 1;
        let id = n;
        let (s, session, task) = (&s, &session, &task);
        async move {
            let got = s.call(session, id, "tasks/get", json!({"taskId": task})).await;
            (got["result"]["status"] == "input_required").then_some(())
        }
    })
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 100, "method": "tasks/result", "params": {"taskId": task}});
    let response = s.post(Some(&session), body).await;
    assert_eq!(response.status(), 200);
    let mut events = SseReader::new(response);
    let question = events.next_data().await.json();
    assert_asks_for(&question, &task);
    s.answer(&session, &question, "Cy").await;
    let result = events.next_data().await.json();
    assert_eq!(result["id"], 100, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "hello Cy", "{result}");
    s.finish().await;
}

#[tokio::test]
async fn without_a_blocked_tasks_result_the_elicitation_goes_on_the_get_stream() {
    let s = serve().await;
    let session = s.initialize().await;
    let get = s
        .client
        .get(&s.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", V)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut standalone = SseReader::new(get);
    s.gate.add_permits(1);
    let task = s.start(&session).await;

    // The GET stream also carries the task's `notifications/tasks/status`: the request is
    // the first message with an id, and `input_required` was announced before it.
    let mut statuses = Vec::new();
    let question = loop {
        let message = standalone.next_data().await.json();
        if message.get("id").is_some() {
            break message;
        }
        assert_eq!(message["method"], "notifications/tasks/status", "{message}");
        statuses.push(message["params"]["status"].clone());
    };
    assert_asks_for(&question, &task);
    assert_eq!(statuses.last(), Some(&json!("input_required")), "{statuses:?}");
    let got = s.call(&session, 3, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(got["result"]["status"], "input_required", "{got}");
    s.answer(&session, &question, "Bo").await;
    let mut n = 4;
    until_async("the task completed", || {
        n += 1;
        let id = n;
        let (s, session, task) = (&s, &session, &task);
        async move {
            let got = s.call(session, id, "tasks/get", json!({"taskId": task})).await;
            (got["result"]["status"] == "completed").then_some(())
        }
    })
    .await;
    let result = s.call(&session, 100, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["result"]["content"][0]["text"], "hello Bo", "{result}");
    drop(standalone);
    s.finish().await;
}

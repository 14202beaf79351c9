//! The conformance client: `arbor_client` driven through the official MCP conformance
//! suite's client scenarios (`@modelcontextprotocol/conformance`, 0.1.16 and the
//! 0.2.0 alpha line with `--requirements 2026-07-28`).
//!
//! The harness starts a mock server per scenario and runs
//! `conformance_client <server-url>` with `MCP_CONFORMANCE_SCENARIO` set (and, for some
//! scenarios, `MCP_CONFORMANCE_CONTEXT`, a JSON object). This program dispatches on the
//! scenario and does what it expects, through the public client API only: era detection
//! is the client's own (no scenario forces an era), and every input request is answered
//! by [`ConformanceHandler`] through the handler runtime with its safety checks.
//!
//! ```sh
//! conformance/run-conformance.sh --client -- target/debug/examples/conformance_client
//! ```
//!
//! The skills extension's scenarios (`sep-2640-client-*`) list the skills and load
//! `pdf-processing` through `arbor_client::skills`, whose verification refuses the
//! tampered `SKILL.md` the mock serves: the error (which file, which check) is printed and
//! the exit status is 1, with no further read.
//!
//! `auth/*` scenarios get an HTTP target with OAuth (`arbor_client::auth`): the headless
//! user agent (the mock authorization endpoint answers at once with a redirect the agent
//! reads without following it to the redirect URI), plain http on loopback allowed (the
//! mocks are `http://localhost`), the suite's client ID metadata document URL, and the
//! context's pre-registered or client-credentials secrets. Invariant: the exit status is 0
//! only when every call the scenario needs succeeded, so a client failure shows as a failed
//! scenario even when the mock server's checks could not see it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use arbor_client::auth::{ClientCredentials, HeadlessUserAgent, OAuth};
use arbor_client::handler::{
    ClientHandler, ElicitationContext, ElicitationHandler, RequestContext, RootsHandler, SamplingHandler,
};
use arbor_client::skills::LoadOptions;
use arbor_client::{Client, ClientOptions, HttpTarget};
use arbor_protocol::error::McpError;
use arbor_protocol::model::elicitation::{ElicitRequestParams, ElicitResult};
use arbor_protocol::model::roots::ListRootsResult;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, CreateMessageResult};
use arbor_protocol::model::tools::{CallToolResult, Tool};
use serde_json::{json, Map, Value};

type Failure = Box<dyn std::error::Error + Send + Sync>;
type Outcome = Result<(), Failure>;

/// The client, once connected: the MRTR scenario's handler calls another tool with it
/// while an input round is open.
static CLIENT: OnceLock<Client> = OnceLock::new();

/// Answers every kind of input request the scenarios send, as a user who accepts would.
struct ConformanceHandler {
    /// Set for the MRTR scenario: on the first elicitation, call `test_mrtr_unrelated`
    /// from inside the open round (SEP-2322 parallel isolation).
    call_unrelated: AtomicBool,
}

impl ConformanceHandler {
    fn new(scenario: &str) -> Self {
        ConformanceHandler { call_unrelated: AtomicBool::new(scenario == "sep-2322-client-request-state") }
    }
}

impl ClientHandler for ConformanceHandler {
    fn sampling(&self) -> Option<&impl SamplingHandler> {
        Some(self)
    }
    fn elicitation(&self) -> Option<&impl ElicitationHandler> {
        Some(self)
    }
    fn roots(&self) -> Option<&impl RootsHandler> {
        Some(self)
    }
}

impl SamplingHandler for ConformanceHandler {
    async fn handle_sampling(
        &self,
        params: CreateMessageRequestParams,
        _ctx: &RequestContext,
    ) -> Result<CreateMessageResult, McpError> {
        let asked = serde_json::to_value(&params).unwrap_or_default();
        let text = format!("conformance client saw {} message(s)", asked["messages"].as_array().map_or(0, Vec::len));
        serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": "arbor-conformance",
            "stopReason": "endTurn"
        }))
        .map_err(|e| McpError::internal(e.to_string()))
    }
}

impl ElicitationHandler for ConformanceHandler {
    async fn handle_elicitation(
        &self,
        params: ElicitRequestParams,
        _ctx: &ElicitationContext,
    ) -> Result<ElicitResult, McpError> {
        if self.call_unrelated.swap(false, Ordering::SeqCst) {
            if let Some(client) = CLIENT.get() {
                client
                    .call_tool("test_mrtr_unrelated", json!({}))
                    .await
                    .map_err(|e| McpError::internal(e.to_string()))?;
            }
        }
        let asked = serde_json::to_value(&params).unwrap_or_default();
        let content = fill_form(&asked["requestedSchema"]);
        serde_json::from_value(json!({"action": "accept", "content": content}))
            .map_err(|e| McpError::internal(e.to_string()))
    }
}

impl RootsHandler for ConformanceHandler {
    async fn list_roots(&self, _ctx: &RequestContext) -> Result<ListRootsResult, McpError> {
        serde_json::from_value(json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]}))
            .map_err(|e| McpError::internal(e.to_string()))
    }
}

/// A form filled the way a user who accepts the proposed values would: each field's
/// `default` when the schema gives one (SEP-1034), else a plain value of its type.
fn fill_form(schema: &Value) -> Value {
    let mut content = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, field) in properties {
            let value = match field.get("default") {
                Some(d) => d.clone(),
                None => sample_value(field),
            };
            content.insert(name.clone(), value);
        }
    }
    Value::Object(content)
}

/// A value that fits a primitive schema (the first enum member, a number within bounds).
fn sample_value(field: &Value) -> Value {
    if let Some(first) = field.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) = field.get("oneOf").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.get("const").cloned().unwrap_or(Value::Null);
    }
    match field.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(true),
        Some("integer") => json!(field.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        Some("number") => json!(field.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("conformance"),
    }
}

/// Arguments for a tool from its input schema: every required property gets a value.
fn arguments_for(tool: &Tool) -> Value {
    let schema = serde_json::to_value(&tool.input_schema).unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |r| r.iter().filter_map(Value::as_str).collect());
    let mut args = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, field) in properties {
            if required.contains(&name.as_str()) {
                let value = match field.get("type").and_then(Value::as_str) {
                    Some("number" | "integer") => json!(args.len() as i64 + 2),
                    _ => sample_value(field),
                };
                args.insert(name.clone(), value);
            }
        }
    }
    Value::Object(args)
}

fn ensure_ok(tool: &str, result: &CallToolResult) -> Outcome {
    if result.is_error == Some(true) {
        return Err(format!("{tool} answered isError: {:?}", result.content).into());
    }
    eprintln!("conformance_client: {tool} -> {}", serde_json::to_string(&result.content).unwrap_or_default());
    Ok(())
}

/// The suite's client ID metadata document URL (`auth/basic-cimd`).
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Nothing listens there: the headless agent stops at this `Location`.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The OAuth settings of an `auth/*` scenario, from its name and context.
fn oauth_for(scenario: &str, context: &Value) -> OAuth {
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let credentials = text("client_id").map(|client_id| ClientCredentials {
        client_id,
        client_secret: text("client_secret"),
        issuer: None,
    });
    let oauth = match (scenario.starts_with("auth/client-credentials"), credentials.clone()) {
        // Workload identity: the context's valid workload token, and nothing else tried.
        _ if scenario == "auth/wif-jwt-bearer" => {
            OAuth::jwt_bearer(text("client_id").unwrap_or_default(), text("valid_jwt").unwrap_or_default())
        }
        // SEP-990: the context's ID token exchanged at its identity provider first.
        _ if scenario == "auth/enterprise-managed-authorization"
            || scenario == "auth/cross-app-access-complete-flow" =>
        {
            let credentials = credentials.clone().unwrap_or(ClientCredentials {
                client_id: String::new(),
                client_secret: None,
                issuer: None,
            });
            OAuth::enterprise_managed(
                credentials,
                text("idp_token_endpoint").unwrap_or_default(),
                text("idp_client_id").unwrap_or_default(),
                text("idp_id_token").unwrap_or_default(),
            )
        }
        // private_key_jwt: the context's ES256 key signs the client's assertions.
        _ if scenario == "auth/client-credentials-jwt" => {
            match OAuth::client_credentials_jwt(
                text("client_id").unwrap_or_default(),
                &text("private_key_pem").unwrap_or_default(),
            ) {
                Ok(oauth) => oauth,
                Err(e) => {
                    eprintln!("conformance_client: {scenario}: {e}");
                    OAuth::client_credentials(ClientCredentials {
                        client_id: String::new(),
                        client_secret: None,
                        issuer: None,
                    })
                }
            }
        }
        (true, Some(credentials)) => OAuth::client_credentials(credentials),
        _ => {
            let oauth = OAuth::authorization_code("arbor-conformance-client", REDIRECT_URI, HeadlessUserAgent::new())
                .client_metadata_url(CIMD_URL);
            match credentials {
                Some(credentials) => oauth.preregistered(credentials),
                None => oauth,
            }
        }
    };
    // The 2025-03-26 back-compat scenarios need the old discovery; it only applies when a
    // server publishes no resource metadata at all.
    oauth.allow_http_loopback().legacy_discovery()
}

async fn connect(url: &str, scenario: &str, context: &Value) -> Result<Client, Failure> {
    let options = ClientOptions::new("arbor-conformance-client", env!("CARGO_PKG_VERSION"))
        .server_id(scenario.to_owned())
        .handler(ConformanceHandler::new(scenario));
    let mut target = HttpTarget::new(url);
    if scenario.starts_with("auth/") {
        target = target.oauth(oauth_for(scenario, context));
    }
    let client = Client::connect_http(target, options).await?;
    eprintln!(
        "conformance_client: connected, era {:?}, version {:?}",
        client.era(),
        client.protocol_version().map(|v| v.as_str())
    );
    let _ = CLIENT.set(client.clone());
    Ok(client)
}

/// `initialize`, `tools_call` and the like: connect, list the tools, call the first one.
async fn basic(client: &Client, call_first: bool) -> Outcome {
    let tools = client.list_all_tools().await?;
    eprintln!("conformance_client: {} tool(s)", tools.len());
    if call_first {
        if let Some(tool) = tools.first() {
            let result = client.call_tool(&tool.name, arguments_for(tool)).await?;
            ensure_ok(&tool.name, &result)?;
        }
    }
    Ok(())
}

async fn call_named(client: &Client, tools: &[Tool], name: &str) -> Outcome {
    let tool = tools.iter().find(|t| t.name == name).ok_or_else(|| format!("the server lists no tool {name}"))?;
    let result = client.call_tool(name, arguments_for(tool)).await?;
    ensure_ok(name, &result)
}

/// SEP-2243 standard headers: every method that carries `Mcp-Method` and `Mcp-Name`.
async fn standard_headers(client: &Client) -> Outcome {
    let tools = client.list_all_tools().await?;
    for tool in &tools {
        ensure_ok(&tool.name, &client.call_tool(&tool.name, arguments_for(tool)).await?)?;
    }
    for resource in client.list_all_resources().await? {
        client.read_resource(&resource.uri).await?;
    }
    for prompt in client.list_all_prompts().await? {
        client.get_prompt(&prompt.name, Default::default()).await?;
    }
    Ok(())
}

/// SEP-2243 custom headers: the calls the context names, with its arguments.
async fn custom_headers(client: &Client, context: &Value) -> Outcome {
    client.list_all_tools().await?;
    let calls = context.get("toolCalls").and_then(Value::as_array).ok_or("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    for call in calls {
        let name = call.get("name").and_then(Value::as_str).ok_or("a toolCall without a name")?;
        let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
        ensure_ok(name, &client.call_tool(name, arguments).await?)?;
    }
    Ok(())
}

/// SEP-2322: the MRTR rounds are the client's own; the handler answers the elicitations
/// (and calls `test_mrtr_unrelated` while the first round is open).
async fn mrtr(client: &Client) -> Outcome {
    let tools = client.list_all_tools().await?;
    for name in ["test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"] {
        call_named(client, &tools, name).await?;
    }
    Ok(())
}

/// SEP-2106 preservation: echo the focal tool's input schema back as the client saw it.
async fn schema_preservation(client: &Client) -> Outcome {
    let tools = client.list_all_tools().await?;
    let focal = tools.iter().find(|t| t.name == "json_schema_2020_12_tool").ok_or("no json_schema_2020_12_tool")?;
    let schema = serde_json::to_value(&focal.input_schema)?;
    ensure_ok("json_schema_echo", &client.call_tool("json_schema_echo", json!({"schema": schema})).await?)
}

async fn run(scenario: &str, url: &str, context: Value) -> Outcome {
    let client = connect(url, scenario, &context).await?;
    let outcome = match scenario {
        // Authorized, the scenario wants the ordinary calls: list, call the first tool.
        auth if auth.starts_with("auth/") => basic(&client, true).await,
        "initialize" => basic(&client, false).await,
        "tools_call" | "tools-call" => basic(&client, true).await,
        "elicitation-sep1034-client-defaults" | "elicitation-defaults" => {
            let tools = client.list_all_tools().await?;
            call_named(&client, &tools, "test_client_elicitation_defaults").await
        }
        "sse-retry" => {
            let tools = client.list_all_tools().await?;
            call_named(&client, &tools, "test_reconnection").await
        }
        "request-metadata" => basic(&client, true).await,
        "sep-2322-client-request-state" => mrtr(&client).await,
        "http-standard-headers" => standard_headers(&client).await,
        "http-custom-headers" => custom_headers(&client, &context).await,
        // Every tool the client kept is called: the invalid ones must have been dropped.
        "http-invalid-tool-headers" => basic_all(&client).await,
        "json-schema-ref-no-deref" => basic(&client, false).await,
        "json-schema-2020-12-preservation" => schema_preservation(&client).await,
        "sep-2640-client-no-prefetch" => skills_listed(&client).await,
        "sep-2640-client-verify-digest" | "sep-2640-client-verify-size" | "sep-2640-client-verify-frontmatter" => {
            skill_loaded(&client, "pdf-processing").await
        }
        other => Err(format!("unknown scenario {other}").into()),
    };
    client.close().await;
    outcome
}

/// SEP-2640 no-prefetch: connect and list the skills, as a host building its registry
/// does; nothing is read (the client reads a skill's files only when it is loaded).
async fn skills_listed(client: &Client) -> Outcome {
    let skills = client.list_skills().await?;
    for entry in &skills {
        eprintln!("conformance_client: skill {} ({})", entry.uri, entry.frontmatter["description"]);
    }
    Ok(())
}

/// SEP-2640 verification: list, then load `name` (its SKILL.md read, size, digest and
/// front matter checked) and, only when that holds, its other files, each verified. The
/// scenarios serve a tampered SKILL.md: the load fails, the error names the file and the
/// check, and nothing else is read.
async fn skill_loaded(client: &Client, name: &str) -> Outcome {
    let entries = client.list_skills().await?;
    let entry = entries
        .into_iter()
        .find(|e| e.frontmatter.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| format!("the server lists no skill {name}"))?;
    let skill = client.load_skill_entry(entry, LoadOptions::default()).await?;
    eprintln!("conformance_client: loaded {} ({} bytes of body)", skill.uri(), skill.body().len());
    for file in client.skill_files(&skill).await? {
        eprintln!("conformance_client: read {} ({} bytes, verified)", file.uri, file.bytes.len());
    }
    Ok(())
}

async fn basic_all(client: &Client) -> Outcome {
    for tool in client.list_all_tools().await? {
        ensure_ok(&tool.name, &client.call_tool(&tool.name, arguments_for(&tool)).await?)?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=<scenario> conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_else(|| json!({}));
    match run(&scenario, &url, context).await {
        Ok(()) => {
            eprintln!("conformance_client: {scenario}: done");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance_client: {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

//! The demo server: a small MCP server built with Arbor's declarative `Router`, served
//! over Streamable HTTP (or stdio) to any client of any protocol revision.
//!
//! ```sh
//! cargo run --example demo_server                  # http://127.0.0.1:3000/mcp, both eras
//! cargo run --example demo_server -- --port 8080   # http://127.0.0.1:8080/mcp (0: a free port)
//! cargo run --example demo_server -- --stdio       # stdin/stdout
//! ```
//!
//! Over HTTP the endpoint is `arbor_http` with its defaults: loopback bind, `Host` and
//! `Origin` checked against loopback names (DNS rebinding), no CORS, body and nesting
//! caps, legacy sessions reaped when idle; beside `/mcp` it serves the live supervision
//! tree at `/observer` (`arbor_http::Observer`: loopback peers only, behind OAuth when
//! that is on). Prometheus text at `/metrics`
//! (`--no-metrics`: none). The bound URL is printed on stderr
//! (`demo_server: listening on http://…`), so a test that asked for port 0 can find it.
//! `/healthz` and `/readyz` are served beside `/mcp`, and SIGTERM or Ctrl-C drains: readiness
//! turns 503, new calls get 503, calls in flight get `--drain-timeout-ms` to finish (then
//! the drain's error), and the process exits 0.
//!
//! It shows the handler surface end to end: typed tools whose `inputSchema` comes from
//! the argument type (`echo`, `add`), a tool that asks the user for confirmation through
//! elicitation with the same code in both protocol eras (`confirm_delete`), one that asks
//! the client's model through sampling (`summarize`), one that reports progress and stops
//! when cancelled (`slow_count`), a static resource, a resource template with completions,
//! and a prompt with completions.
//!
//! It serves a skill too (the skills extension, `io.modelcontextprotocol/skills`): the
//! folder `examples/skills` (`release-notes`), through `Router::skills_dir`, so clients
//! find it with `skills/list` and read its files as `skill://release-notes/...` resources.
//!
//! Two tools run as tasks: `slow_square` may (`TaskSupport::Optional`: a task when the
//! client asks for one, inline otherwise) and `build_report` must (`Required`). Their
//! routes opting in is all it takes: the server then advertises the 2025-11-25 `tasks`
//! capability and the tasks extension (2026-07-28), and the handlers are ordinary tool code.
//!
//! It also has a live feed: the `demo/feed` bus topic gets a tick every 10 seconds and
//! whatever the `publish_feed` tool is given. A client that subscribes to `demo://feed`
//! (a 2026-07-28 `subscriptions/listen` with it in `resourceSubscriptions`, or a legacy
//! `resources/subscribe`) gets `notifications/resources/updated` for it on each item, from
//! the [`FeedHandler`] subscription handler, and reads the latest item from the resource.
//! With `--redis URL` the bus is Redis, so a feed item published on one server process
//! reaches the subscribers of every process sharing that Redis.
//!
//! With `--tenants FILE` (`examples/tenants.toml`) the server runs a tenant policy: each
//! tenant's rates, quotas and restart budget, and its own tool set (`[tools]`), re-read on
//! SIGHUP (`demo_tenants.rs`). A request's tenant is the `x-arbor-tenant` header when
//! OAuth is off (development only: any client can claim any tenant), the token's
//! `tenant` claim when it is on.
//!
//! The end-to-end tests (`tests/e2e/`) drive this server with the official Python and
//! TypeScript SDKs and assert exact values, so the names, argument shapes and texts of
//! every tool, resource and prompt here are fixed by `tests/e2e/README.md` ("What the demo
//! server must serve"): change both together.
//!
//! On stdio, stdout is the protocol channel: nothing but JSON-RPC frames may be written
//! there, so every log line goes to stderr in both modes (`RUST_LOG` chooses the level,
//! `info` by default).

/// With `--features mimalloc`, this binary allocates through mimalloc (see the feature's
/// note in `examples/Cargo.toml`); the libraries it links never pick an allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use arbor_protocol::methods::ServerNotification;
use arbor_protocol::model::content::SamplingContent;
use arbor_protocol::model::elicitation::{
    BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitRequestParams, RequestedSchema,
};
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::model::mrtr::InputResponse;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, SamplingMessage, SamplingMessageContent};
use arbor_protocol::model::subscriptions::{ResourceUpdatedNotificationParams, SubscriptionFilter};
use arbor_protocol::model::tools::CallToolResult;
use arbor_server::bus::{Bus, BusEvent, BusMessage, LocalBus, RedisBus, RedisBusOptions, SubscribeOptions};
use arbor_server::router::{completion, PromptRoute, Router, TemplateRoute, ToolError, ToolRoute};
use arbor_server::{
    Channel, Flow, InputRequired, Reply, RequestContext, Server, Subscribe, SubscriptionCapabilities,
    SubscriptionHandler, TaskSupport,
};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

#[path = "common/http.rs"]
mod http;
#[path = "common/malloc.rs"]
mod malloc;
#[path = "demo_tenants.rs"]
mod tenants;

const USAGE: &str =
    "usage: demo_server [--port N | --bind ADDR | --stdio] [--redis URL] [--feed-interval-ms N] [--page-size N]\n\
    Serves the Arbor demo MCP server over Streamable HTTP at http://127.0.0.1:3000/mcp (the default).\n\
    --port N             listen on 127.0.0.1:N instead (0: a free port; the URL is printed on stderr)\n\
    --bind ADDR          listen on ADDR (IP:PORT); off loopback, Host names are not restricted\n\
    --stdio              serve one client on stdin/stdout instead of HTTP\n\
    --redis URL          publish and follow the live feed through Redis (several processes share it)\n\
    --cluster            with --redis: tasks, the requestState keys and legacy sessions shared through it\n\
    \x20                    too, so any node behind a load balancer serves any request (arbor-cluster)\n\
    --lease-ms N         with --cluster: how long a task outlives its node's last lease renewal (default 5000)\n\
    --feed-interval-ms N a feed tick every N ms (default 10000; 0 for none)\n\
    --page-size N        list pages of N entries (default 100), to exercise pagination\n\
    --drain-timeout-ms N how long calls in flight may finish once stdin ends (--stdio) or on SIGTERM/Ctrl-C\n\
    \x20                    (HTTP: /readyz turns 503, new requests get 503, the rest is cancelled after it; default 5000)\n\
    --max-connections N  HTTP connections served at once (default: the descriptor limit less a reserve)\n\
    --max-sessions-per-peer N  legacy sessions one client IP may hold (default 1000)\n\
    --header-timeout-ms N  how long an HTTP request's head may take to arrive (default 30000)\n\
    --max-in-flight-per-requester N  requests one client (IP address) may have in flight (default 256)\n\
    --max-listens-per-requester N  listens and subscriptions one client may hold open (default 64)\n\
    --max-in-flight-per-tenant N  requests in flight in all (default 16384)\n\
    --auth-issuer URL    OAuth: accept only access tokens (RFC 9068 JWTs) of this authorization server,\n\
                         checked against its JWKS (found in its metadata); serves the protected resource metadata\n\
    --auth-resource URL  OAuth: this server's resource identifier, the tokens' audience (default http://ADDR/mcp)\n\
    --auth-scopes \"A B\"  OAuth: the scopes every request needs (default \"mcp:tools\")\n\
    --auth-jwks URL      OAuth: the issuer's JWKS, when its metadata does not name it\n\
    --no-metrics         HTTP: no Prometheus text at /metrics (served by default)\n\
    --tenants FILE       a tenant policy (TOML: [defaults], [tenants.NAME]) and each tenant's tools ([tools]);\n\
    \x20                    the tenant is the x-arbor-tenant header (development only), or with OAuth the token's\n\
    \x20                    `tenant` claim; SIGHUP re-reads [tools] (changed limits need a restart)";

// ===== tools =====

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back, unchanged.
    message: String,
}

async fn echo(args: EchoArgs) -> String {
    args.message
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

async fn add(args: AddArgs) -> Result<String, ToolError> {
    let sum = args.a + args.b;
    // Two finite numbers can still overflow to infinity, which JSON cannot carry.
    if !sum.is_finite() {
        return Err(ToolError::failed("the sum is too large to represent"));
    }
    // `f64`'s `Display` writes 5.0 as `5` and never uses an exponent, so the text parses
    // back as the same number in any client.
    Ok(sum.to_string())
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The path of the file to delete.
    path: String,
}

/// The key under which `confirm_delete` asks its question; the answer comes back under it.
const CONFIRM: &str = "confirm";

/// Asks the user before "deleting" a file. The handler never learns the protocol era: it
/// answers "input required" on its first call and is called again with the answer, which
/// the runtime collected either with a server-to-client `elicitation/create` (legacy) or
/// through the client's retry with `inputResponses` (2026-07-28).
async fn confirm_delete(args: DeleteArgs, cx: RequestContext) -> Reply<CallToolResult> {
    // A confirmation counts only for the path it was asked about. The runtime binds the
    // sealed state to this tool and its arguments, so a replay with another path never
    // reaches this handler; the path kept in the state is a second fence (and the legacy
    // era's driver calls again with the same arguments anyway).
    let asked_about = cx.input_state().and_then(|state| state.get("path")).and_then(Value::as_str);
    let answer = cx
        .input_responses()
        .and_then(|answers| answers.get(CONFIRM))
        .filter(|_| asked_about == Some(args.path.as_str()));
    let Some(answer) = answer else {
        let ask = InputRequired::new().elicit(CONFIRM, confirm_form(&args.path)).state(json!({ "path": args.path }));
        return Reply::InputRequired(ask);
    };
    let confirmed = match answer {
        InputResponse::Elicit(result) => {
            result.action == ElicitAction::Accept
                && result.content.as_ref().and_then(|c| c.get("confirm")).and_then(|v| v.as_bool()) == Some(true)
        }
        // The runtime only hands back answers of the kind that was asked for.
        _ => false,
    };
    // Declining is an answer, not a failure: the model learns the file was kept.
    let text = if confirmed { format!("Deleted {}", args.path) } else { format!("Kept {}", args.path) };
    Reply::Complete(CallToolResult::from_text(text))
}

/// The form `confirm_delete` shows: one required yes/no field.
fn confirm_form(path: &str) -> ElicitRequestParams {
    let confirm =
        BooleanSchema::default().with_title("Delete the file").with_description(format!("Delete {path} permanently?"));
    let form = RequestedSchema::new().with_required_property("confirm", confirm);
    ElicitRequestParams::Form(ElicitRequestFormParams::new(format!("Delete {path}? This cannot be undone."), form))
}

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarise.
    text: String,
}

/// Asks the client's model for a summary (sampling), in both eras alike.
async fn summarize(args: SummarizeArgs, cx: RequestContext) -> Result<Reply<CallToolResult>, ToolError> {
    const SUMMARY: &str = "summary";
    let Some(answer) = cx.input_responses().and_then(|answers| answers.get(SUMMARY)) else {
        let message =
            SamplingMessage::user(format!("Summarise the following text in at most three sentences:\n\n{}", args.text));
        let params = CreateMessageRequestParams::new(vec![message], 300)
            .with_system_prompt("You write short, faithful summaries.");
        return Ok(Reply::InputRequired(InputRequired::new().sample(SUMMARY, params)));
    };
    let InputResponse::CreateMessage(result) = answer else {
        return Err(ToolError::failed("the client did not answer with a model reply"));
    };
    let blocks = match &result.content {
        SamplingMessageContent::One(block) => std::slice::from_ref(block),
        SamplingMessageContent::Many(blocks) => blocks.as_slice(),
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            SamplingContent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    if text.is_empty() {
        return Err(ToolError::failed("the model's reply had no text"));
    }
    Ok(Reply::Complete(CallToolResult::from_text(text.join("\n"))))
}

fn default_count() -> u32 {
    10
}

fn default_interval() -> u64 {
    200
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How far to count (1 to 100).
    #[serde(default = "default_count")]
    #[schemars(range(min = 1, max = 100))]
    to: u32,
    /// Milliseconds between two numbers (at most 2000).
    #[serde(default = "default_interval")]
    #[schemars(range(max = 2000))]
    interval_ms: u64,
}

/// Counts slowly, reporting each step as progress. Cancellation needs no code here: the
/// runtime drops this future when the client cancels or the deadline passes, and the
/// `RequestContext` sends nothing for a stopped request.
async fn slow_count(args: CountArgs, cx: RequestContext) -> String {
    let interval = Duration::from_millis(args.interval_ms);
    for n in 1..=args.to {
        tokio::time::sleep(interval).await;
        cx.progress(f64::from(n), Some(f64::from(args.to)), Some(format!("Counted {n} of {}", args.to)));
        cx.log(LoggingLevel::Debug, Some("slow_count"), json!(format!("counted {n}")));
    }
    format!("Counted to {}", args.to)
}

// ===== task tools =====

fn default_delay() -> u64 {
    100
}

#[derive(Deserialize, JsonSchema)]
struct SquareArgs {
    /// The number to square.
    n: i32,
    /// How long to take, in milliseconds (at most 60000).
    #[serde(default = "default_delay")]
    #[schemars(range(max = 60000))]
    delay_ms: u64,
}

/// Squares `n` after `delay_ms`: long enough to poll, cancel or list as a task.
async fn slow_square(args: SquareArgs) -> Result<String, ToolError> {
    if args.delay_ms > 60_000 {
        return Err(ToolError::invalid_arguments("delay_ms must be at most 60000"));
    }
    tokio::time::sleep(Duration::from_millis(args.delay_ms)).await;
    Ok((i64::from(args.n) * i64::from(args.n)).to_string())
}

#[derive(Deserialize, JsonSchema)]
struct ReportArgs {
    /// How many items the report covers (1 to 1000).
    #[schemars(range(min = 1, max = 1000))]
    items: u32,
}

/// A job that only runs as a task (its route says `Required`): a direct call is refused.
async fn build_report(args: ReportArgs) -> Result<String, ToolError> {
    if !(1..=1000).contains(&args.items) {
        return Err(ToolError::invalid_arguments("items must be between 1 and 1000"));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(format!("Report of {} items", args.items))
}

// ===== the live feed =====

/// The bus topic of the feed, and the resource that shows its latest item.
const FEED_TOPIC: &str = "demo/feed";
const FEED_URI: &str = "demo://feed";

/// The latest feed item, as this process last heard it from the bus.
type Latest = Arc<Mutex<String>>;

#[derive(Deserialize, JsonSchema)]
struct PublishArgs {
    /// The text of the feed item.
    text: String,
}

/// Publishes one feed item: every subscriber of `demo://feed`, on every process sharing
/// the bus, is told it changed.
fn publish_feed(bus: &Arc<dyn Bus>, text: String) -> Result<(), String> {
    bus.publish(BusMessage::new(FEED_TOPIC, json!({ "text": text })).with_key(FEED_URI)).map_err(|e| e.to_string())
}

/// Streams the feed to the listens and legacy subscriptions that include `demo://feed`.
struct FeedHandler;

impl SubscriptionHandler for FeedHandler {
    type State = u64;

    async fn subscribe(&self, filter: &SubscriptionFilter, channel: &Channel) -> Subscribe<u64> {
        let wants_feed = filter.resource_subscriptions.iter().flatten().any(|uri| uri == FEED_URI);
        if wants_feed {
            // A client that falls behind hears "the feed changed" once, not every item.
            let _ = channel.join(FEED_TOPIC, SubscribeOptions::coalesce().with_capacity(16));
        }
        Subscribe::Accept(0)
    }

    async fn handle_message(&self, _message: Arc<BusMessage>, channel: &Channel, sent: &mut u64) -> Flow {
        let params = ResourceUpdatedNotificationParams::new(FEED_URI);
        if channel.send(ServerNotification::ResourceUpdated(params)).is_ok() {
            *sent += 1;
        }
        Flow::Stream
    }

    fn subscription_capabilities(&self) -> SubscriptionCapabilities {
        SubscriptionCapabilities { resources_updated: true, ..Default::default() }
    }
}

/// Keeps `latest` up to date with the feed, whoever published it.
async fn follow_feed(bus: Arc<dyn Bus>, latest: Latest) {
    let mut feed = bus.subscribe(FEED_TOPIC, SubscribeOptions::coalesce().with_capacity(1));
    while let Some(event) = feed.recv().await {
        if let BusEvent::Message(message) = event {
            if let Some(text) = message.payload.get("text").and_then(Value::as_str) {
                *latest.lock() = text.to_owned();
            }
        }
    }
}

// ===== resources =====

const README: &str = "# Arbor demo server\n\n\
This server is an example of the Arbor MCP runtime.\n\n\
- Tools: `echo`, `add`, `confirm_delete` (asks you first), `summarize` (asks the model), `slow_count` (reports progress), `publish_feed` (live feed), `slow_square` and `build_report` (run as tasks).\n\
- Resources: this readme, notes at `demo://notes/{id}`, and the live feed at `demo://feed` (subscribe to it).\n\
- Prompts: `greet`.\n";

/// Ids that `demo://notes/{id}` suggests through completion; any id can be read.
const NOTE_IDS: [&str; 4] = ["1", "7", "42", "128"];

#[derive(Deserialize)]
struct NoteVars {
    id: String,
}

async fn note(vars: NoteVars) -> String {
    format!("# Note {id}\n\nThis is demo note {id}. Notes are generated on the fly from their id.\n", id = vars.id)
}

// ===== prompts =====

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
    /// The tone of the greeting: formal or casual (default casual).
    style: Option<String>,
}

/// The prompt's text alone becomes one user message.
async fn greet(args: GreetArgs) -> String {
    let tone = match args.style.as_deref() {
        Some("formal") => "a formal",
        _ => "a warm, casual",
    };
    format!("Write {tone} greeting for {}, in one or two sentences.", args.name)
}

/// The demo's skills folder (the skills extension): `examples/skills`.
const SKILLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");

fn router(bus: Arc<dyn Bus>, latest: Latest) -> Router {
    let router = base_router(bus, latest);
    // A binary moved away from its source tree has no skills folder; it serves the rest.
    match router.clone().try_skills_dir(SKILLS) {
        Ok(router) => router,
        Err(e) => {
            eprintln!("demo_server: serving no skills: {e}");
            router
        }
    }
}

fn base_router(bus: Arc<dyn Bus>, latest: Latest) -> Router {
    Router::new("arbor-demo", env!("CARGO_PKG_VERSION"))
        // `resources/subscribe` (and listen URIs) for the registered resources.
        .subscriptions()
        .instructions(
            "A demo of the Arbor runtime: echo and add numbers, confirm a (pretend) deletion, \
             summarise text with your model, count with progress, read notes, and get a greeting prompt.",
        )
        .tool_route(
            ToolRoute::new("echo", echo)
                .title("Echo")
                .description("Returns the message exactly as given.")
                .read_only_hint(true)
                .open_world_hint(false),
        )
        .tool_route(
            ToolRoute::new("add", add)
                .title("Add")
                .description("Adds two numbers and returns the sum as text.")
                .read_only_hint(true)
                .idempotent_hint(true)
                .open_world_hint(false),
        )
        .tool_route(
            ToolRoute::new("confirm_delete", confirm_delete)
                .title("Delete a file (with confirmation)")
                .description(
                    "Asks the user to confirm deleting a file, then reports `Deleted <path>` or `Kept <path>`. \
                     A demo of asking the user for input: nothing on disk is touched.",
                )
                .destructive_hint(true)
                .open_world_hint(false),
        )
        .tool_route(
            ToolRoute::new("summarize", summarize)
                .title("Summarise")
                .description("Summarises a text in at most three sentences, using the client's model (sampling).")
                .read_only_hint(true),
        )
        .tool_route(
            ToolRoute::new("slow_count", slow_count)
                .title("Count slowly")
                .description(
                    "Counts from 1 to `to`, one number every `interval_ms`, reporting progress; \
                     stops as soon as the call is cancelled.",
                )
                .read_only_hint(true)
                .open_world_hint(false)
                // Longest legitimate run: 100 numbers, 2 s apart.
                .deadline(Duration::from_secs(210)),
        )
        .tool_route(
            ToolRoute::new("publish_feed", move |args: PublishArgs| {
                let bus = bus.clone();
                async move { publish_feed(&bus, args.text).map(|()| "Published".to_owned()).map_err(ToolError::failed) }
            })
            .title("Publish to the live feed")
            .description(
                "Publishes a feed item: subscribers of demo://feed are notified, on every server sharing the bus.",
            )
            .open_world_hint(false),
        )
        .tool_route(
            ToolRoute::new("slow_square", slow_square)
                .title("Square slowly")
                .description(
                    "Returns n squared after `delay_ms` milliseconds; runs as a task when the client asks for one.",
                )
                .read_only_hint(true)
                .open_world_hint(false)
                .task_support(TaskSupport::Optional),
        )
        .tool_route(
            ToolRoute::new("build_report", build_report)
                .title("Build a report")
                .description("Returns `Report of <items> items`; only as a task (a direct call is refused).")
                .read_only_hint(true)
                .open_world_hint(false)
                .task_support(TaskSupport::Required),
        )
        .resource("demo://readme", "readme", "What this demo server offers.", "text/markdown", || async { README })
        .resource(
            "demo://feed",
            "feed",
            "The latest item of the live feed; subscribe to hear of new ones.",
            "text/plain",
            move || {
                let latest = latest.clone();
                async move { latest.lock().clone() }
            },
        )
        .template_route(
            TemplateRoute::new("demo://notes/{id}", "note", note)
                .title("Demo note")
                .description("A demo note by id; any id can be read.")
                .mime_type("text/markdown")
                .complete("id", completion::starting_with(NOTE_IDS)),
        )
        .prompt_route(
            PromptRoute::new("greet", greet)
                .title("Greet someone")
                .description("Asks the model to greet a person by name.")
                .complete("name", completion::starting_with(["Ada Lovelace", "Alan Turing", "Grace Hopper"]))
                .complete("style", completion::starting_with(["casual", "formal"])),
        )
}

/// What the command line asks for.
enum Mode {
    Http(SocketAddr),
    Stdio,
    Help,
}

/// Where the demo listens unless told otherwise: the README's first command.
const DEFAULT_BIND: ([u8; 4], u16) = ([127, 0, 0, 1], 3000);

/// Options besides the mode.
struct Options {
    redis: Option<String>,
    feed_interval: Duration,
    page_size: usize,
    drain_timeout: Option<Duration>,
    /// `HttpConfig::max_connections` (`None`: derived from the descriptor limit).
    max_connections: Option<usize>,
    /// `HttpConfig::max_sessions_per_peer` (`None`: its default).
    max_sessions_per_peer: Option<usize>,
    /// `HttpConfig::header_read_timeout` (`None`: its default).
    header_timeout: Option<Duration>,
    /// `ServerConfig::max_in_flight_per_requester`, `max_subscriptions_per_requester` and
    /// `max_in_flight_per_tenant` (`None`: their defaults).
    per_requester: Option<usize>,
    listens_per_requester: Option<usize>,
    per_tenant: Option<usize>,
    /// OAuth (`--auth-*`): on when an issuer is given.
    auth_issuer: Option<String>,
    auth_resource: Option<String>,
    auth_scopes: Vec<String>,
    auth_jwks: Option<String>,
    /// `--no-metrics`: no Prometheus recorder, no `/metrics`.
    no_metrics: bool,
    /// `--tenants FILE`: the tenant policy and tool sets (`demo_tenants.rs`).
    tenants: Option<std::path::PathBuf>,
    /// `--cluster`: tasks and the requestState keyring on the `--redis` URL.
    cluster: bool,
    /// `--lease-ms`: `RedisTaskStoreOptions::lease` (`None`: its default, 5 s). Tests of a
    /// killed node shorten it so its tasks fail within seconds.
    lease: Option<Duration>,
}

/// What `--cluster` shares through Redis.
struct Cluster {
    tasks: arbor_cluster::RedisTaskStore,
    keyring: arbor_cluster::RedisKeyring,
    sessions: arbor_cluster::RedisSessionStore,
}

/// `--cluster`: the task store, the requestState keyring and the legacy sessions on
/// Redis. The first node writes a fresh random key; the others adopt it (and any rotation
/// after).
async fn cluster(
    url: &str,
    state_key: arbor_server::StateKey,
    tasks: &arbor_server::TaskConfig,
    lease: Option<Duration>,
) -> Result<Cluster, Box<dyn std::error::Error>> {
    let mut options = arbor_cluster::RedisTaskStoreOptions::default().caps_of(tasks);
    if let Some(lease) = lease {
        options = options.lease(lease);
    }
    let store = arbor_cluster::RedisTaskStore::connect(url, options).await?;
    let node = format!("demo-{}-{}", std::process::id(), arbor_server::ids::random_id()?);
    let keyring = arbor_cluster::RedisKeyring::attach(url, "arbor:", &node, state_key, Duration::from_secs(1)).await?;
    keyring.initialize(&arbor_server::ids::random_bytes::<32>()?).await?;
    let options = arbor_cluster::RedisSessionStoreOptions { node: Some(node), ..Default::default() };
    let sessions = arbor_cluster::RedisSessionStore::connect(url, options).await?;
    Ok(Cluster { tasks: store, keyring, sessions })
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<(Mode, Options), String> {
    let mut mode = Mode::Http(SocketAddr::from(DEFAULT_BIND));
    let mut help = false;
    let mut options = Options {
        redis: None,
        feed_interval: Duration::from_secs(10),
        page_size: arbor_server::router::DEFAULT_PAGE_SIZE,
        drain_timeout: None,
        max_connections: None,
        max_sessions_per_peer: None,
        header_timeout: None,
        per_requester: None,
        listens_per_requester: None,
        per_tenant: None,
        auth_issuer: None,
        auth_resource: None,
        auth_scopes: vec!["mcp:tools".to_owned()],
        auth_jwks: None,
        no_metrics: false,
        tenants: None,
        cluster: false,
        lease: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => mode = Mode::Stdio,
            "--no-metrics" => options.no_metrics = true,
            "--cluster" => options.cluster = true,
            "--port" => {
                let port = args.next().ok_or("--port needs a number")?;
                let port: u16 = port.parse().map_err(|_| format!("--port: `{port}` is not a port number"))?;
                mode = Mode::Http(SocketAddr::from((DEFAULT_BIND.0, port)));
            }
            "--bind" => {
                let addr = args.next().ok_or("--bind needs an address")?;
                let addr: SocketAddr =
                    addr.parse().map_err(|_| format!("--bind: `{addr}` is not an IP:PORT address"))?;
                mode = Mode::Http(addr);
            }
            "--redis" => options.redis = Some(args.next().ok_or("--redis needs a URL")?),
            "--feed-interval-ms" => {
                let ms = args.next().ok_or("--feed-interval-ms needs a number")?;
                let ms: u64 = ms.parse().map_err(|_| format!("--feed-interval-ms: `{ms}` is not a number"))?;
                options.feed_interval = Duration::from_millis(ms);
            }
            "--max-connections" => {
                let n = args.next().ok_or("--max-connections needs a number")?;
                options.max_connections = Some(
                    n.parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("--max-connections: `{n}` is not a positive number"))?,
                );
            }
            "--max-sessions-per-peer" => {
                let n = args.next().ok_or("--max-sessions-per-peer needs a number")?;
                options.max_sessions_per_peer = Some(
                    n.parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("--max-sessions-per-peer: `{n}` is not a positive number"))?,
                );
            }
            "--page-size" => {
                let n = args.next().ok_or("--page-size needs a number")?;
                options.page_size =
                    n.parse().ok().filter(|&n| n > 0).ok_or(format!("--page-size: `{n}` is not a positive number"))?;
            }
            flag @ ("--max-in-flight-per-requester" | "--max-listens-per-requester" | "--max-in-flight-per-tenant") => {
                let n = args.next().ok_or(format!("{flag} needs a number"))?;
                let n = n.parse().ok().filter(|&n| n > 0).ok_or(format!("{flag}: `{n}` is not a positive number"))?;
                match flag {
                    "--max-in-flight-per-requester" => options.per_requester = Some(n),
                    "--max-listens-per-requester" => options.listens_per_requester = Some(n),
                    _ => options.per_tenant = Some(n),
                }
            }
            "--header-timeout-ms" => {
                let ms = args.next().ok_or("--header-timeout-ms needs a number")?;
                let ms: u64 = ms
                    .parse()
                    .ok()
                    .filter(|&ms| ms > 0)
                    .ok_or(format!("--header-timeout-ms: `{ms}` is not a positive number"))?;
                options.header_timeout = Some(Duration::from_millis(ms));
            }
            "--lease-ms" => {
                let ms = args.next().ok_or("--lease-ms needs a number")?;
                let ms: u64 = ms
                    .parse()
                    .ok()
                    .filter(|&ms| ms > 0)
                    .ok_or(format!("--lease-ms: `{ms}` is not a positive number"))?;
                options.lease = Some(Duration::from_millis(ms));
            }
            "--drain-timeout-ms" => {
                let ms = args.next().ok_or("--drain-timeout-ms needs a number")?;
                let ms: u64 = ms.parse().map_err(|_| format!("--drain-timeout-ms: `{ms}` is not a number"))?;
                options.drain_timeout = Some(Duration::from_millis(ms));
            }
            "--auth-issuer" => options.auth_issuer = Some(args.next().ok_or("--auth-issuer needs a URL")?),
            "--auth-resource" => options.auth_resource = Some(args.next().ok_or("--auth-resource needs a URL")?),
            "--auth-jwks" => options.auth_jwks = Some(args.next().ok_or("--auth-jwks needs a URL")?),
            "--tenants" => options.tenants = Some(args.next().ok_or("--tenants needs a file")?.into()),
            "--auth-scopes" => {
                let scopes = args.next().ok_or("--auth-scopes needs a space-separated list")?;
                options.auth_scopes = scopes.split_whitespace().map(str::to_owned).collect();
            }
            "-h" | "--help" => help = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if options.auth_issuer.is_none() && (options.auth_resource.is_some() || options.auth_jwks.is_some()) {
        return Err("--auth-resource and --auth-jwks need --auth-issuer".into());
    }
    if options.lease.is_some() && !options.cluster {
        return Err("--lease-ms is for --cluster (the tasks' leases on Redis)".into());
    }
    if options.auth_issuer.is_some() && matches!(mode, Mode::Stdio) {
        // The spec: stdio servers take credentials from their environment, not OAuth.
        return Err("--auth-issuer is for HTTP; a stdio server takes no OAuth".into());
    }
    Ok((if help { Mode::Help } else { mode }, options))
}

/// OAuth for the endpoint at `addr` (`--auth-*`): a JWT verifier for the issuer (its JWKS
/// found in its metadata unless `--auth-jwks` names it), the resource identifier as
/// given or `http://ADDR/mcp`, the required scopes; with `--tenants`, each request's
/// tenant from the token's `tenant` claim (a token without it is refused).
async fn auth(options: &Options, addr: SocketAddr) -> Result<Option<arbor_http::auth::AuthConfig>, String> {
    use arbor_http::auth::{AuthConfig, JwtConfig, JwtVerifier};
    let Some(issuer) = &options.auth_issuer else { return Ok(None) };
    let resource = options.auth_resource.clone().unwrap_or_else(|| format!("http://{addr}/mcp"));
    let mut jwt = JwtConfig::new(issuer.clone(), resource.clone());
    if let Some(jwks) = &options.auth_jwks {
        jwt = jwt.jwks_uri(jwks.clone());
    }
    let verifier = JwtVerifier::start(jwt).await.map_err(|e| format!("--auth-issuer: {e}"))?;
    tracing::info!(issuer, resource, scopes = ?options.auth_scopes, "demo_server: OAuth on");
    let scopes = options.auth_scopes.clone();
    let mut auth = AuthConfig::new(resource, issuer.clone(), verifier).required_scopes(scopes);
    if options.tenants.is_some() {
        auth = auth.tenant(arbor_http::auth::TenantSource::Claim(tenants::TENANT_CLAIM.to_owned()));
    }
    Ok(Some(auth))
}

fn main() -> ExitCode {
    // Before the runtime's threads exist (see `common/malloc.rs`).
    malloc::one_arena();
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("demo_server: cannot start the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    let (mode, options) = match parse_args(std::env::args().skip(1)) {
        Ok((Mode::Help, _)) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("demo_server: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Logs go to stderr: stdout carries the protocol and must hold nothing else.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let bus: Arc<dyn Bus> = match &options.redis {
        None => Arc::new(LocalBus::new()),
        Some(url) => match RedisBus::connect(url, RedisBusOptions::default()).await {
            Ok(bus) => Arc::new(bus),
            Err(e) => {
                tracing::error!(error = %e, url, "demo_server: cannot reach Redis");
                return ExitCode::FAILURE;
            }
        },
    };
    let latest: Latest = Arc::new(Mutex::new("(nothing published yet)".to_owned()));
    tokio::spawn(follow_feed(bus.clone(), latest.clone()));
    if !options.feed_interval.is_zero() {
        let (bus, every) = (bus.clone(), options.feed_interval);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            for n in 1u64.. {
                ticks.tick().await;
                let _ = publish_feed(&bus, format!("tick {n}"));
            }
        });
    }
    let mut config = arbor_server::ServerConfig::default();
    if let Some(n) = options.per_requester {
        config = config.max_in_flight_per_requester(n);
    }
    if let Some(n) = options.listens_per_requester {
        config = config.max_subscriptions_per_requester(n);
    }
    if let Some(n) = options.per_tenant {
        config = config.max_in_flight_per_tenant(n);
    }
    if let Some(timeout) = options.drain_timeout {
        config = config.drain_timeout(timeout);
    }
    // A tenant's router is the demo's, forked: its own lists, from which the tools the
    // tenant does not see are removed.
    let served = router(bus.clone(), latest).page_size(options.page_size);
    let fork = {
        let served = served.clone();
        move || served.fork()
    };
    let tenant_file = match &options.tenants {
        None => None,
        Some(path) => match tenants::read(path, &tenants::tool_names(&fork)) {
            Ok((policy, sets)) => {
                config = config.tenant_policy(policy.clone());
                Some((path.clone(), policy, sets))
            }
            Err(why) => {
                eprintln!("demo_server: --tenants: {why}");
                return ExitCode::from(2);
            }
        },
    };
    let state_key = config.state_key.clone();
    let task_config = config.tasks.clone();
    let mut server = Server::with_config(served, config).with_bus(bus).subscription_handler(FeedHandler);
    // Held for the process's life: it keeps this node's requestState keys in step.
    let mut _keyring = None;
    let mut session_store: Option<Arc<dyn arbor_http::cluster::SessionStore>> = None;
    if options.cluster {
        let Some(url) = options.redis.as_deref() else {
            eprintln!("demo_server: --cluster needs --redis URL");
            return ExitCode::from(2);
        };
        match cluster(url, state_key, &task_config, options.lease).await {
            Ok(shared) => {
                server = server.with_task_store(Arc::new(shared.tasks));
                _keyring = Some(shared.keyring);
                session_store = Some(Arc::new(shared.sessions));
            }
            Err(e) => {
                tracing::error!(error = %e, url, "demo_server: cannot share tasks and keys through Redis");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some((path, policy, sets)) = tenant_file {
        tenants::apply_tool_sets(&server, &tenants::ToolSets::new(), &sets, &fork);
        #[cfg(unix)]
        if let Err(e) = tenants::reload_on_sighup(server.clone(), path, policy, sets, Box::new(fork)) {
            tracing::error!(error = %e, "demo_server: cannot watch for SIGHUP");
            return ExitCode::FAILURE;
        }
        #[cfg(not(unix))]
        let _ = (path, policy);
    }
    if let Mode::Http(mut addr) = mode {
        if options.auth_issuer.is_some() && options.auth_resource.is_none() && addr.port() == 0 {
            // The default resource identifier names the port, so it is chosen here.
            match std::net::TcpListener::bind(addr).and_then(|l| l.local_addr()) {
                Ok(free) => addr = free,
                Err(e) => {
                    tracing::error!(error = %e, "demo_server: cannot find a free port");
                    return ExitCode::FAILURE;
                }
            }
        }
        tracing::info!(redis = options.redis.is_some(), %addr, "demo_server: serving MCP over Streamable HTTP");
        let mut config = arbor_http::HttpConfig {
            max_connections: options.max_connections,
            // `--cluster`: legacy sessions too, so a balancer needs no stickiness.
            session_store: session_store.clone(),
            ..Default::default()
        };
        if let Some(n) = options.max_sessions_per_peer {
            config.max_sessions_per_peer = n;
        }
        if let Some(timeout) = options.header_timeout {
            config.header_read_timeout = timeout;
        }
        // `/healthz` and `/readyz` beside `/mcp`, and a drain on SIGTERM or Ctrl-C.
        let drain = options.drain_timeout.unwrap_or(Duration::from_secs(5));
        config = config.health(arbor_http::HealthConfig::default()).drain_on_signal(drain);
        // The live supervision tree at /observer, for loopback peers.
        config.observer = Some(arbor_http::Observer::new());
        match auth(&options, addr).await {
            Ok(auth) => config.auth = auth,
            Err(why) => {
                eprintln!("demo_server: {why}");
                return ExitCode::from(2);
            }
        }
        if options.tenants.is_some() && config.auth.is_none() {
            // Without OAuth a request names its own tenant: fine on a developer's machine,
            // never where clients are not trusted (the token's claim is the real source).
            tracing::warn!(
                header = tenants::TENANT_HEADER,
                "demo_server: tenants from a request header: development only, any client can claim any tenant"
            );
            config = config.tenant_header(tenants::TENANT_HEADER);
        }
        // Prometheus text at /metrics, beside /mcp (the library records; the demo installs).
        if !options.no_metrics {
            match arbor_http::metrics::install_prometheus() {
                Ok(handle) => config.metrics = Some(handle),
                Err(e) => tracing::warn!(error = %e, "demo_server: no /metrics"),
            }
        }
        return http::serve("demo_server", server, config.bind(addr)).await;
    }
    tracing::info!(redis = options.redis.is_some(), "demo_server: serving MCP on stdio");
    match server.serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "demo_server stopped");
            ExitCode::FAILURE
        }
    }
}
